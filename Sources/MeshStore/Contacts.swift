import Glibc
import MeshCompanion

/// A contact as the radio describes it (the 148-byte contact record, §2.6), plus local fields.
public struct StoredContact: Equatable, Sendable {
    public var publicKey: [UInt8]         // 32
    public var type: UInt8                // 0 none, 1 chat, 2 repeater, 3 room, 4 sensor
    public var flags: UInt8
    public var outPathLength: UInt8       // encoded; 0xFF = unknown (flood)
    public var outPath: [UInt8]           // 64
    public var nameBytes: [UInt8]         // 32, NUL-padded
    public var lastAdvert: UInt32
    public var latitude: Int32
    public var longitude: Int32
    public var lastModified: UInt32
    /// Local: the contact was removed from the radio (kept so its history keeps a name).
    public var removed: Bool
    /// Local: when this host last wrote the record, epoch seconds.
    public var updatedAt: UInt32

    public init(publicKey: [UInt8], type: UInt8 = 1, flags: UInt8 = 0, outPathLength: UInt8 = 0xFF,
                outPath: [UInt8] = [], name: String, lastAdvert: UInt32 = 0, latitude: Int32 = 0,
                longitude: Int32 = 0, lastModified: UInt32 = 0, removed: Bool = false, updatedAt: UInt32 = 0) {
        self.publicKey = Array((publicKey + [UInt8](repeating: 0, count: 32)).prefix(32))
        self.type = type; self.flags = flags; self.outPathLength = outPathLength
        self.outPath = Array((outPath + [UInt8](repeating: 0, count: 64)).prefix(64))
        self.nameBytes = Array((Array(name.utf8.prefix(31)) + [UInt8](repeating: 0, count: 32)).prefix(32))
        self.lastAdvert = lastAdvert; self.latitude = latitude; self.longitude = longitude
        self.lastModified = lastModified; self.removed = removed; self.updatedAt = updatedAt
    }

    /// From a contact frame (code byte first: CONTACT or NEW_ADVERT), decoded by MeshCompanion.
    public init(frame p: UnsafeRawBufferPointer) throws {
        let record: ContactRecord
        switch try? CompanionFrame.decode(p) {
        case .contact(let r)?, .newAdvert(let r)?: record = r
        default: throw StoreError.invalidArgument("not a contact frame of 148 bytes (\(p.count) bytes)")
        }
        guard let modified = record.lastModified else {
            throw StoreError.invalidArgument("contact record of \(p.count) bytes (148 expected)")
        }
        self.init(record, lastModified: modified)
    }

    /// From a decoded contact record.
    public init(_ r: ContactRecord, lastModified: UInt32) {
        publicKey = r.publicKey.bytes
        type = r.type.rawValue
        flags = r.flags
        outPathLength = r.outPathLength.rawValue
        outPath = Array(r.outPathField)
        nameBytes = Array(r.nameField)
        lastAdvert = r.lastAdvertTimestamp
        latitude = r.latitude
        longitude = r.longitude
        self.lastModified = lastModified
        removed = false
        updatedAt = 0
    }

    public init(frame: [UInt8]) throws {
        self = try frame.withUnsafeBytes { try StoredContact(frame: $0) }
    }

    /// The 148-byte contact frame with `code` first (0x09 = ADD_UPDATE_CONTACT's layout).
    public func frame(code: UInt8 = 0x03) -> [UInt8] {
        var b: [UInt8] = [code]
        b.reserveCapacity(148)
        b.putFixed(publicKey, 32)
        b.putU8(type); b.putU8(flags); b.putU8(outPathLength)
        b.putFixed(outPath, 64)
        b.putFixed(nameBytes, 32)
        b.putU32(lastAdvert)
        b.putU32(UInt32(bitPattern: latitude))
        b.putU32(UInt32(bitPattern: longitude))
        b.putU32(lastModified)
        return b
    }

    public var name: String { String(decoding: untilNul(nameBytes), as: UTF8.self) }
    public var prefix: KeyPrefix { KeyPrefix(sixOf: publicKey) }
    public var publicKeyHex: String { hexString(publicKey) }
}

/// `contacts`: fixed 256-byte records, updated in place (pwrite + fsync).
///
///     0 u8 state (0 free, 1 live, 2 removed)   1..<148 the contact frame after its code byte
///   148 u32 updated at   152..<252 reserved   252 u32 CRC-32 of 0..<252
///
/// 256 divides the 4 KiB page, so a record never straddles a sector and a torn write damages at most
/// the one record being written (its CRC then fails and it reads as free, with a damage report).
final class ContactFile {
    static let recordSize = 256
    let files: Files
    let path: String
    let readOnly: Bool
    var fd: Int32 = -1
    var slots: [StoredContact?] = []
    var slotByKey: [[UInt8]: Int] = [:]
    var damage: [DamageReport] = []

    init(files: Files, path: String, readOnly: Bool) throws {
        self.files = files
        self.path = path
        self.readOnly = readOnly
        if readOnly && !files.ops.exists(path) { return }
        fd = try files.open(path, readOnly ? O_RDONLY : O_RDWR | O_CREAT, 0o600)
        let size = Int(try files.size(fd, path))
        var buf = [UInt8](repeating: 0, count: size)
        let got = try buf.withUnsafeMutableBytes { try files.read(fd, path, into: $0, at: 0) }
        let n = got / Self.recordSize
        slots.reserveCapacity(n)
        buf.withUnsafeBytes { all in
            for i in 0..<n {
                let r = UnsafeRawBufferPointer(rebasing: all[i * Self.recordSize ..< (i + 1) * Self.recordSize])
                if r[0] == 0 { slots.append(nil); continue }
                guard r[0] <= 2, CRC32.checksum(UnsafeRawBufferPointer(rebasing: r[0..<252])) == r.u32(252) else {
                    damage.append(DamageReport(file: fileName(path), offset: UInt64(i * Self.recordSize),
                                               length: UInt64(Self.recordSize), detail: "contact record checksum"))
                    slots.append(nil)
                    continue
                }
                var frame: [UInt8] = [0x03]
                frame.append(contentsOf: r[1..<148])
                var c = try! StoredContact(frame: frame) // 148 bytes: cannot fail
                c.removed = r[0] == 2
                c.updatedAt = r.u32(148)
                slotByKey[c.publicKey] = slots.count
                slots.append(c)
            }
        }
        if got % Self.recordSize != 0 {
            damage.append(DamageReport(file: fileName(path), offset: UInt64(n * Self.recordSize),
                                       length: UInt64(got % Self.recordSize), detail: "partial record"))
        }
    }

    static func encode(_ c: StoredContact) -> [UInt8] {
        var r: [UInt8] = [c.removed ? 2 : 1]
        r.reserveCapacity(recordSize)
        r.append(contentsOf: c.frame()[1...])
        r.putU32(c.updatedAt)
        r.append(contentsOf: repeatElement(0, count: 252 - r.count))
        r.putU32(CRC32.checksum(r))
        return r
    }

    var contacts: [StoredContact] { slots.compactMap { $0 } }

    /// Writes each contact into its slot (existing slot for its key, else a free one), then one fsync.
    func upsert(_ cs: [StoredContact]) throws {
        guard !readOnly else { throw StoreError.readOnly }
        guard !cs.isEmpty else { return }
        var planned: [(Int, StoredContact)] = []
        var used = Set<Int>()
        var nextFree = 0
        for c in cs {
            let slot: Int
            if let s = slotByKey[c.publicKey] { slot = s }
            else if let s = planned.first(where: { $0.1.publicKey == c.publicKey })?.0 { slot = s }
            else {
                while nextFree < slots.count && (slots[nextFree] != nil || used.contains(nextFree)) { nextFree += 1 }
                slot = nextFree
                nextFree += 1
            }
            used.insert(slot)
            planned.append((slot, c))
        }
        for (slot, c) in planned {
            try files.write(fd, path, Self.encode(c), at: UInt64(slot * Self.recordSize))
        }
        try files.sync(fd, path)
        for (slot, c) in planned {
            while slots.count <= slot { slots.append(nil) }
            slots[slot] = c
            slotByKey[c.publicKey] = slot
        }
    }

    /// Frees the slot of `publicKey` (a zeroed record), then one fsync.
    func free(publicKey: [UInt8]) throws {
        guard !readOnly else { throw StoreError.readOnly }
        guard let slot = slotByKey[publicKey] else { return }
        try files.write(fd, path, [UInt8](repeating: 0, count: Self.recordSize), at: UInt64(slot * Self.recordSize))
        try files.sync(fd, path)
        slots[slot] = nil
        slotByKey[publicKey] = nil
    }

    func close() { if fd >= 0 { files.ops.close(fd); fd = -1 } }
}

/// A channel slot (§2.10).
public struct StoredChannel: Equatable, Sendable {
    public var index: UInt8
    public var name: String
    public var secret: [UInt8]   // 16
    public init(index: UInt8, name: String, secret: [UInt8]) {
        self.index = index
        self.name = String(decoding: untilNul(Array(name.utf8.prefix(31))), as: UTF8.self)
        self.secret = Array((secret + [UInt8](repeating: 0, count: 16)).prefix(16))
    }
    /// From a CHANNEL_INFO frame, decoded by MeshCompanion (bytes after the name's NUL are garbage).
    public init(frame p: UnsafeRawBufferPointer) throws {
        guard case .channelInfo(let c)? = try? CompanionFrame.decode(p) else {
            throw StoreError.invalidArgument("not a channel info frame of 50 bytes (\(p.count) bytes)")
        }
        self.init(c)
    }

    public init(frame: [UInt8]) throws {
        self = try frame.withUnsafeBytes { try StoredChannel(frame: $0) }
    }

    /// From a decoded CHANNEL_INFO.
    public init(_ c: ChannelInfo) {
        self.init(index: c.index, name: c.name, secret: Array(c.secret))
    }
    public var isEmpty: Bool { name.isEmpty && secret.allSatisfy { $0 == 0 } }
}

/// `channels`: 64-byte records at slot = index; mode 0600 because it holds the channel secrets.
///
///     0 u8 state (0 free, 1 set)   1 u8 index   2..<34 name (NUL-padded)   34..<50 secret
///    50..<60 reserved   60 u32 CRC-32 of 0..<60
final class ChannelFile {
    static let recordSize = 64
    let files: Files
    let path: String
    let readOnly: Bool
    var fd: Int32 = -1
    var channels: [UInt8: StoredChannel] = [:]
    var damage: [DamageReport] = []

    init(files: Files, path: String, readOnly: Bool) throws {
        self.files = files
        self.path = path
        self.readOnly = readOnly
        if readOnly && !files.ops.exists(path) { return }
        fd = try files.open(path, readOnly ? O_RDONLY : O_RDWR | O_CREAT, 0o600)
        if !readOnly { do { try files.ops.setMode(fd, 0o600) } catch { throw StoreError.io(operation: "chmod", path: path, errno: error) } }
        let size = Int(try files.size(fd, path))
        var buf = [UInt8](repeating: 0, count: size)
        let got = try buf.withUnsafeMutableBytes { try files.read(fd, path, into: $0, at: 0) }
        buf.withUnsafeBytes { all in
            for i in 0 ..< got / Self.recordSize {
                let r = UnsafeRawBufferPointer(rebasing: all[i * Self.recordSize ..< (i + 1) * Self.recordSize])
                if r[0] == 0 { continue }
                guard r[0] == 1, r[1] == UInt8(truncatingIfNeeded: i),
                      CRC32.checksum(UnsafeRawBufferPointer(rebasing: r[0..<60])) == r.u32(60) else {
                    damage.append(DamageReport(file: fileName(path), offset: UInt64(i * Self.recordSize),
                                               length: UInt64(Self.recordSize), detail: "channel record checksum"))
                    continue
                }
                channels[r[1]] = StoredChannel(index: r[1], name: String(decoding: untilNul(r.bytes(2, 32)), as: UTF8.self),
                                               secret: r.bytes(34, 16))
            }
        }
    }

    func set(_ chs: [StoredChannel]) throws {
        guard !readOnly else { throw StoreError.readOnly }
        guard !chs.isEmpty else { return }
        for ch in chs {
            var r: [UInt8] = [ch.isEmpty ? 0 : 1, ch.index]
            r.putFixed(Array(ch.name.utf8), 32)
            r.putFixed(ch.secret, 16)
            r.append(contentsOf: repeatElement(0, count: 10))
            r.putU32(CRC32.checksum(r))
            if ch.isEmpty { r = [UInt8](repeating: 0, count: Self.recordSize) }
            try files.write(fd, path, r, at: UInt64(Int(ch.index) * Self.recordSize))
        }
        try files.sync(fd, path)
        for ch in chs { channels[ch.index] = ch.isEmpty ? nil : ch }
    }

    func close() { if fd >= 0 { files.ops.close(fd); fd = -1 } }
}
