import MeshAir

/// A server's regions (`RegionMap` in the firmware): a tree of named regions under the wildcard
/// `*`, each allowing or denying floods. A TRANSPORT_FLOOD is relayed only when its transport code
/// matches a region that allows floods; a plain FLOOD only while `*` allows floods.
///
/// Names are stored as given; `#` is ignored when matching by name and when printing. A region's
/// key is SHA-256 of `#name` (a hashtag region); `$` names are private regions, which have no key
/// here (the firmware's key store is not implemented either), so they never match.
public struct RegionMap: Sendable {
    public struct Entry: Sendable, Equatable {
        public var id: UInt16
        public var parent: UInt16
        public var flags: UInt8
        public var name: String
        var key: RegionKey?

        public var allowsFlood: Bool { flags & RegionMap.denyFlood == 0 }
    }

    public static let denyFlood: UInt8 = 0x01
    public static let maxEntries = 32

    public private(set) var entries: [Entry] = []
    public internal(set) var wildcard = Entry(id: 0, parent: 0, flags: 0, name: "*", key: nil)
    var nextID: UInt16 = 1
    var homeID: UInt16 = 0
    var defaultID: UInt16 = 0

    public init() {}

    /// Letters, digits, `-`, `$`, `#` and anything from `A` up (accented letters).
    public static func isNameByte(_ c: UInt8) -> Bool {
        c == 0x2D || c == 0x24 || c == 0x23 || (c >= 0x30 && c <= 0x39) || c >= 0x41
    }

    static func bare(_ name: String) -> Substring { name.hasPrefix("#") ? name.dropFirst() : Substring(name) }

    static func key(for name: String) -> RegionKey? { name.hasPrefix("$") ? nil : RegionKey(name: name) }

    // MARK: lookup

    public func entry(id: UInt16) -> Entry? { id == 0 ? wildcard : entries.first { $0.id == id } }

    /// Exact name (`#` ignored), or `*`.
    public func find(name: String) -> Entry? {
        if name == "*" { return wildcard }
        let n = Self.bare(name)
        return entries.first { Self.bare($0.name) == n }
    }

    /// Exact name preferred, else the last region whose name starts with `prefix`.
    public func find(prefix: String) -> Entry? {
        if prefix == "*" { return wildcard }
        let p = Self.bare(prefix)
        var partial: Entry? = nil
        for e in entries {
            let n = Self.bare(e.name)
            if n == p { return e }
            if n.utf8.starts(with: p.utf8) { partial = e }
        }
        return partial
    }

    /// The region a TRANSPORT_FLOOD belongs to: the first region not denied by `mask` whose key gives
    /// the packet's first transport code.
    public func match(_ packet: Packet, mask: UInt8) -> Entry? {
        let code = packet.transportCodes.code1
        let payload = packet.payload
        for e in entries where e.flags & mask == 0 {
            if let k = e.key, k.transportCode(payloadType: packet.payloadType, payload: payload) == code { return e }
        }
        return nil
    }

    public var home: Entry? { entry(id: homeID) }
    public var defaultRegion: Entry? { defaultID == 0 ? nil : entry(id: defaultID) }

    // MARK: changes

    mutating func update(_ e: Entry) {
        if e.id == 0 { wildcard.flags = e.flags; return }
        if let i = entries.firstIndex(where: { $0.id == e.id }) { entries[i] = e }
    }

    /// Adds a region (denying floods) or moves an existing one under `parent`. Nil on a bad name, a
    /// full table, or a region made its own parent.
    @discardableResult
    mutating func put(name: String, parent: UInt16, id: UInt16 = 0) -> Entry? {
        guard name.utf8.allSatisfy(Self.isNameByte) else { return nil }
        if var e = find(name: name), e.id != 0 {
            if e.id == parent { return nil }
            e.parent = parent
            update(e)
            return e
        }
        if id == 0 && entries.count >= Self.maxEntries { return nil }
        let stored = String(decoding: Array(name.utf8.prefix(30)), as: UTF8.self)
        let e = Entry(id: id == 0 ? nextID : id, parent: parent, flags: Self.denyFlood, name: stored, key: Self.key(for: stored))
        if id == 0 { nextID &+= 1 } else if id >= nextID { nextID = id &+ 1 }
        entries.append(e)
        return e
    }

    /// Removes a region without children.
    mutating func remove(id: UInt16) -> Bool {
        guard id != 0, !entries.contains(where: { $0.parent == id }), let i = entries.firstIndex(where: { $0.id == id }) else { return false }
        entries.remove(at: i)
        return true
    }

    mutating func setHome(_ id: UInt16) { homeID = id }
    mutating func setDefault(_ id: UInt16) { defaultID = id }

    // MARK: text

    /// The tree, one region a line, indented one space a level, `^` on the home region, ` F` where
    /// floods are allowed (`region` with no arguments), cut to `max - 1` bytes.
    public func exportTree(max: Int = 160) -> String {
        var out = ""
        func walk(_ e: Entry, _ depth: Int) {
            out += String(repeating: " ", count: depth) + Self.bare(e.name) + (e.id == homeID ? "^" : "")
            out += e.allowsFlood ? " F\n" : "\n"
            for c in entries where c.parent == e.id && c.id != 0 { walk(c, depth + 1) }
        }
        walk(wildcard, 0)
        return String(decoding: Array(out.utf8.prefix(max - 1)), as: UTF8.self)
    }

    /// Comma-separated names (without `#`) of `*` and the regions whose `flags & mask` is clear (or
    /// set, with `invert`); a name is left out when it does not fit in `max` bytes.
    public func exportNames(max: Int, mask: UInt8, invert: Bool = false) -> String {
        func matches(_ e: Entry) -> Bool { invert ? e.flags & mask != 0 : e.flags & mask == 0 }
        var names: [Substring] = []
        var len = 0
        if matches(wildcard) { names.append("*"); len = 2 }
        for e in entries where matches(e) {
            let n = Self.bare(e.name)
            if len + n.utf8.count + 2 < max { names.append(n); len += n.utf8.count + 1 }
        }
        return names.joined(separator: ",")
    }
}
