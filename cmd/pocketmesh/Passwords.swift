import Glibc
import MeshLink
import MeshCompanion
import MeshSession
import MeshStore
import MeshDaemonClient
import MeshOps

/// Passwords of repeaters and room servers that worked, by the node's public key:
/// `$XDG_STATE_HOME/pocketmesh/passwords`, mode 0600 in a 0700 folder, one line per node:
/// `<64 hex key> <password as hex>`. Never printed or logged.
enum SavedPasswords {
    static func path() throws(ClientError) -> String {
        do { return try StoreLocation.stateRoot() + "/passwords" } catch {
            throw .usage("cannot tell where to keep passwords: \(error); set XDG_STATE_HOME or HOME.")
        }
    }

    /// The saved passwords; none from a file that is not this user's or is open to others'
    /// writes (someone else's passwords would be sent to the node).
    static func load() -> [String: String] {
        guard let p = try? path(), FileTrust.problem(p) == nil, let text = StateFile.readString(p) else { return [:] }
        var out: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, parts[0].count == 64, let pw = HexCodec.decode(parts[1]) else { continue }
            out[String(parts[0])] = String(decoding: pw, as: UTF8.self)
        }
        return out
    }

    static func store(_ all: [String: String]) throws(ClientError) {
        let p = try path()
        let dir = String(p[..<(p.lastIndex(of: "/") ?? p.endIndex)])
        mkdirs(dir)
        let text = all.keys.sorted().map { "\($0) \(HexCodec.encode(Array(all[$0]!.utf8)))\n" }.joined()
        do { try StateFile.write(p, text, mode: 0o600) } catch { throw .link("cannot save the password (\(error)).") }
    }

    static func save(key: String, password: String) throws(ClientError) {
        var all = load()
        all[key] = password
        try store(all)
    }

    /// True when there was one.
    @discardableResult
    static func forget(key: String) throws(ClientError) -> Bool {
        var all = load()
        guard all.removeValue(forKey: key) != nil else { return false }
        try store(all)
        return true
    }

    private static func mkdirs(_ dir: String) {
        var path = ""
        for part in dir.split(separator: "/") {
            path += "/" + part
            _ = mkdir(path, 0o700)
        }
    }
}
