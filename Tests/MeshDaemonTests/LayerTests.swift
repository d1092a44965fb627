import Glibc
import Testing

/// The package's source tree, read as text: its root, its targets' folders and files.
enum SourceTree {
    static let root = "/" + #filePath.split(separator: "/").dropLast(3).joined(separator: "/")

    static func read(_ path: String) -> String {
        guard let f = fopen(path, "r") else { return "" }
        defer { fclose(f) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = fread(&chunk, 1, chunk.count, f)
            if n <= 0 { break }
            out += chunk[0..<n]
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The names in a folder (no dot files), sorted.
    static func list(_ dir: String) -> [String] {
        guard let d = opendir(dir) else { return [] }
        defer { closedir(d) }
        var names: [String] = []
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if !name.hasPrefix(".") { names.append(name) }
        }
        return names.sorted()
    }

    /// Every Swift file under `dir`, recursively.
    static func swiftFiles(_ dir: String) -> [String] {
        var out: [String] = []
        for name in list(dir) {
            let path = dir + "/" + name
            if name.hasSuffix(".swift") { out.append(path) } else if opendir(path).map({ closedir($0); return true }) ?? false {
                out += swiftFiles(path)
            }
        }
        return out
    }

    /// Package.swift's targets and the targets each names in `dependencies:`.
    static func targetDependencies() -> [String: [String]] {
        let text = read(root + "/Package.swift")
        var deps: [String: [String]] = [:]
        var rest = Substring(text)
        while let start = find("arget(name: \"", in: rest) ?? find("arget(\n            name: \"", in: rest) {
            rest = rest[start.upperBound...]
            guard let q = rest.firstIndex(of: "\"") else { break }
            let name = String(rest[..<q])
            // The target's call ends before the next target's; its dependencies are quoted names in
            // the `dependencies: [...]` list.
            let end = find("arget(", in: rest)?.lowerBound ?? rest.endIndex
            let call = rest[q..<end]
            var list: [String] = []
            if let d = find("dependencies: [", in: call) {
                let inner = call[d.upperBound...].prefix { $0 != "]" }
                list = inner.split(separator: "\"", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
            }
            deps[name] = list
        }
        return deps
    }

    /// Where `needle` first occurs in `text` (the standard library has no substring search).
    static func find(_ needle: String, in text: Substring) -> Range<Substring.Index>? {
        let n = Array(needle.utf8)
        let u = text.utf8
        var i = u.startIndex
        while i != u.endIndex {
            var j = i
            var k = 0
            while k < n.count, j != u.endIndex, u[j] == n[k] { j = u.index(after: j); k += 1 }
            if k == n.count { return i..<j }
            i = u.index(after: i)
        }
        return nil
    }

    /// The modules `target` depends on, directly or through others.
    static func closure(_ target: String, _ deps: [String: [String]]) -> Set<String> {
        var seen: Set<String> = []
        var todo = deps[target] ?? []
        while let t = todo.popLast() {
            if seen.insert(t).inserted { todo += deps[t] ?? [] }
        }
        return seen
    }

    /// The modules a source file imports.
    static func imports(_ path: String) -> [String] {
        read(path).split(separator: "\n").compactMap { line in
            var l = line.drop { $0 == " " }
            if l.hasPrefix("@_exported ") { l = l.dropFirst("@_exported ".count) }
            guard l.hasPrefix("import ") else { return nil }
            var rest = l.dropFirst("import ".count)
            // `import struct Module.Name` and the like: the module is after the kind.
            for kind in ["struct ", "class ", "enum ", "protocol ", "func ", "var ", "let ", "typealias "] where rest.hasPrefix(kind) {
                rest = rest.dropFirst(kind.count)
            }
            return String(rest.prefix { $0 != " " && $0 != "." })
        }
    }
}

/// The layers of docs/design.md's module map, held: dependencies point down only.
@Suite struct LayerTests {
    /// Module -> modules it must not reach, directly or through another.
    static let forbidden: [(String, String, String)] = [
        ("MeshStore", "MeshLink", "the store's system calls go through MeshErrno"),
        ("MeshHub", "MeshDaemonClient", "the hub's shared types are MeshOps' and MeshLink's"),
        ("MeshBridge", "MeshDaemonClient", "the bridges' shared types are MeshOps' and MeshLink's"),
        ("MeshSession", "MeshLink", "the session is sans-I/O; the command line's blocking `Radio` is MeshDaemonClient's"),
        ("MeshNet", "MeshLink", "network codecs without I/O"),
        ("MeshCompanion", "MeshLink", "companion frames without I/O"),
    ]

    @Test func packageDependenciesPointDown() {
        let deps = SourceTree.targetDependencies()
        #expect(deps.count > 15, "Package.swift's targets were not read (\(deps.count))")
        for (from, to, why) in Self.forbidden {
            #expect(deps[from] != nil, "no target \(from) in Package.swift")
            let reach = SourceTree.closure(from, deps)
            #expect(!reach.contains(to), "\(from) depends on \(to) in Package.swift: \(why)")
        }
    }

    @Test func importsPointDown() {
        for (from, to, why) in Self.forbidden {
            let files = SourceTree.swiftFiles(SourceTree.root + "/Sources/" + from)
            #expect(!files.isEmpty, "no sources of \(from)")
            for f in files where SourceTree.imports(f).contains(to) {
                Issue.record("\(f.dropFirst(SourceTree.root.count + 1)) imports \(to): \(why)")
            }
        }
    }

    /// A source file imports only modules its target lists (or what those list), so the map in
    /// Package.swift is the whole truth.
    @Test func importsAreDeclared() {
        let deps = SourceTree.targetDependencies()
        let system: Set<String> = ["Glibc", "Testing", "PackageDescription", "Synchronization", "_Concurrency"]
        for target in SourceTree.list(SourceTree.root + "/Sources") where deps[target] != nil {
            let reach = SourceTree.closure(target, deps)
            for f in SourceTree.swiftFiles(SourceTree.root + "/Sources/" + target) {
                for m in SourceTree.imports(f) where !system.contains(m) && !reach.contains(m) {
                    Issue.record("\(f.dropFirst(SourceTree.root.count + 1)) imports \(m), which \(target) does not depend on")
                }
            }
        }
    }

    /// The checks can fail: a made-up edge is found.
    @Test func aForbiddenEdgeIsFound() {
        let deps = ["A": ["B"], "B": ["C"], "C": []]
        #expect(SourceTree.closure("A", deps).contains("C"))
        #expect(!SourceTree.closure("C", deps).contains("A"))
    }
}
