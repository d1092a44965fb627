import MeshAir
import MeshCompanion

/// What a server keeps across restarts besides its prefs, as the firmware keeps it in its file
/// system: the region map as `region save` (and `region default`) left it, and the access
/// control list (`ClientACL::save`: every client with permissions, i.e. not the guests, with its
/// room `sync_since` and its known path; the last timestamps are not kept, as there). Text, one
/// record a line, so that a host writes it whole through a temporary file and a person can read
/// it; loading skips what it cannot read and says which lines.
extension RegionMap {
    /// `region ID PARENT FLAGS NAME` per region (the wildcard first, as `*`), then `home ID`,
    /// `default ID` and `next ID`. Names never hold a space or a line break (`isNameByte`).
    public var savedText: String {
        var out = "region 0 0 \(wildcard.flags) *\n"
        for e in entries { out += "region \(e.id) \(e.parent) \(e.flags) \(e.name)\n" }
        out += "home \(homeID)\ndefault \(defaultID)\nnext \(nextID)\n"
        return out
    }

    /// The map `savedText` wrote, and the lines that did not load.
    public static func loading(_ text: String) -> (map: RegionMap, refused: [String]) {
        var map = RegionMap()
        var refused: [String] = []
        var home: UInt16 = 0, def: UInt16 = 0, next: UInt16 = 1
        for raw in text.split(separator: "\n") {
            let f = raw.split(separator: " ", omittingEmptySubsequences: false)
            switch f.first {
            case "region" where f.count == 5:
                guard let id = UInt16(f[1]), let parent = UInt16(f[2]), let flags = UInt8(f[3]) else { refused.append(String(raw)); continue }
                let name = String(f[4])
                if id == 0 {
                    guard name == "*" else { refused.append(String(raw)); continue }
                    map.wildcard.flags = flags
                    continue
                }
                guard map.entries.count < RegionMap.maxEntries, map.entry(id: id) == nil, map.find(name: name) == nil,
                      parent == 0 || map.entry(id: parent) != nil, var e = map.put(name: name, parent: parent, id: id) else {
                    refused.append(String(raw)); continue
                }
                e.flags = flags
                map.update(e)
            case "home" where f.count == 2: if let v = UInt16(f[1]) { home = v } else { refused.append(String(raw)) }
            case "default" where f.count == 2: if let v = UInt16(f[1]) { def = v } else { refused.append(String(raw)) }
            case "next" where f.count == 2: if let v = UInt16(f[1]) { next = v } else { refused.append(String(raw)) }
            default: refused.append(String(raw))
            }
        }
        if home != 0 && map.entry(id: home) != nil { map.setHome(home) }
        if def != 0 && map.entry(id: def) != nil { map.setDefault(def) }
        map.nextID = max(map.nextID, next)
        return (map, refused)
    }
}

extension ServerNode {
    /// The regions as last saved (what a restart starts from).
    public func regionsText() -> String { savedRegions.savedText }

    /// Loads what `regionsText` wrote as the saved regions and the regions in use. Returns the
    /// lines that did not load.
    @discardableResult
    public func loadRegions(_ text: String) -> [String] {
        let (map, refused) = RegionMap.loading(text)
        savedRegions = map
        regions = map
        return refused
    }

    /// `KEY PERMISSIONS SYNC_SINCE PATH` per client with permissions (admins, read/write and
    /// read-only members; guests are not kept): the key in hex, the room's `sync_since`, and
    /// the path to it as `HASH_SIZE:HEX` (`-` when unknown, nothing after the colon for zero hops).
    public func aclText() -> String {
        var out = ""
        for c in clients where c.permissions != 0 {
            let path = c.outPath.map { "\(c.outHashSize):" + AirHex.encode($0) } ?? "-"
            out += "\(c.key.hex) \(c.permissions) \(c.syncSince) \(path)\n"
        }
        return out
    }

    /// Loads what `aclText` wrote (up to `maxClients`), replacing the clients. Returns the lines
    /// that did not load.
    @discardableResult
    public func loadACL(_ text: String) -> [String] {
        var loaded: [ServerClient] = []
        var refused: [String] = []
        for raw in text.split(separator: "\n") {
            let f = raw.split(separator: " ")
            guard f.count == 4, let keyBytes = AirHex.decode(String(f[0])), keyBytes.count == 32, let key = PublicKey(keyBytes),
                  let perms = UInt8(f[1]), perms & 3 != 0, let since = UInt32(f[2]),
                  loaded.count < Self.maxClients, !loaded.contains(where: { $0.key == key }) else {
                refused.append(String(raw)); continue
            }
            var c = ServerClient(key: key, permissions: perms)
            c.syncSince = since
            if f[3] != "-" {
                let p = f[3].split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
                guard p.count == 2, let size = Int(p[0]), (1...3).contains(size), let bytes = p[1].isEmpty ? [] : AirHex.decode(String(p[1])),
                      bytes.count % size == 0, bytes.count <= 64 else {
                    refused.append(String(raw)); continue
                }
                c.outPath = bytes
                c.outHashSize = size
            }
            loaded.append(c)
        }
        clients = loaded
        return refused
    }
}
