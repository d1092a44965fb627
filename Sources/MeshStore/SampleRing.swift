import Glibc
import MeshCompanion

// `signal` and `battery`: what the daemon heard and read, for plots. Each is a ring of fixed
// 24-byte records behind a 24-byte header; the oldest record is overwritten once it is full.
//
//   header   0 "PMSR"   4 u8 version (1)   5 u8 kind (1 signal, 2 battery)   6 u16 record size (24)
//            8 u32 capacity (records)   12..<20 reserved (0)   20 u32 CRC-32 of 0..<20
//   record   at 24 + 24 * slot:
//            0 u32 sequence number (1, 2, ...; record n is in slot (n - 1) % capacity; 0: never written)
//            4 u32 time (epoch seconds)   8 u8[12] body   20 u32 CRC-32 of 0..<20
//
// The head is not stored: it is the slot after the record with the highest sequence number, found
// when the file is opened. So a sample is one pwrite of its own 24 bytes, the header is written
// only when the file is made, and a torn write damages one record, whose CRC then fails and which
// is skipped. Samples are not precious: they are synced every `syncEvery` records and on close, not
// one by one. A header that is not this layout (damaged, another version or capacity) starts the
// file anew, said in `problem`; nothing else in the store is touched.
//
// Bodies (little-endian):
//   signal   0 i16 SNR in quarter dB   2 i16 RSSI in dBm (-32768: not known)   4 u8 kind (SignalSample.Kind)
//            5 u8 packet header (packets; else 0)   6 u8 path length as encoded (0xFF: not known)
//            7 u8 bytes of `from` (0...4)   8 u8[4] from: the hash of the hop it was heard from, an
//            advert's key prefix, or a message sender's key prefix
//   battery  0 u16 millivolts   2 u16 flags (bit 0: storage known)   4 u32 storage used KB   8 u32 storage total KB

/// One record of a sample ring: its sequence number, time and 12-byte body.
public struct SampleRecord: Equatable, Sendable {
    public var sequence: UInt32
    public var time: UInt32
    public var body: [UInt8]
    public init(sequence: UInt32, time: UInt32, body: [UInt8]) {
        self.sequence = sequence; self.time = time; self.body = body
    }
}

/// A signal sample: the SNR (and RSSI when the radio gave it) of something heard.
public struct SignalSample: Equatable, Sendable {
    public enum Kind: UInt8, Sendable {
        /// A packet the radio heard (LOG_RX_DATA).
        case packet = 1
        /// A message received (the SNR the radio gave with it; no RSSI).
        case message = 2
        /// RAW_DATA.
        case raw = 3
        /// CONTROL_DATA (e.g. a discovery response).
        case control = 4

        public var name: String {
            switch self {
            case .packet: return "packet"
            case .message: return "message"
            case .raw: return "raw"
            case .control: return "control"
            }
        }
    }

    public var time: UInt32
    public var kind: Kind
    public var snrQuarterDb: Int16
    /// dBm, nil when not known.
    public var rssi: Int16?
    /// The packet's header byte (route type, payload type), 0 when it is not a packet.
    public var header: UInt8
    /// The path length as encoded (`PathLength`), 0xFF when not known.
    public var pathLength: UInt8
    /// Up to 4 bytes: the hop it was heard from, an advert's or a sender's key prefix.
    public var from: [UInt8]

    public init(time: UInt32, kind: Kind, snrQuarterDb: Int16, rssi: Int16? = nil, header: UInt8 = 0,
                pathLength: UInt8 = 0xFF, from: [UInt8] = []) {
        self.time = time; self.kind = kind; self.snrQuarterDb = snrQuarterDb; self.rssi = rssi
        self.header = header; self.pathLength = pathLength; self.from = Array(from.prefix(4))
    }

    /// A packet heard (LOG_RX_DATA's SNR, RSSI and raw packet): its header, path length and the
    /// hop it came from (the last hash of a flood path; an advert with no hops: its key prefix).
    public init(time: UInt32, packet p: [UInt8], snrQuarterDb: Int8, rssi: Int8) {
        var header: UInt8 = 0, pathLength: UInt8 = 0xFF, from: [UInt8] = []
        if let h = p.first {
            header = h
            let route = h & 3
            let at = route == 0 || route == 3 ? 5 : 1  // transport codes before the path length
            if at < p.count {
                let pl = PathLength(rawValue: p[at])
                if pl.isValid && at + 1 + pl.byteCount <= p.count {
                    pathLength = pl.rawValue
                    let payload = at + 1 + pl.byteCount
                    if pl.hopCount > 0 && (route == 0 || route == 1) {
                        from = Array(p[payload - pl.hashSize ..< payload])
                    } else if pl.hopCount == 0 && (h >> 2) & 0x0F == 4 && payload + 4 <= p.count {
                        from = Array(p[payload ..< payload + 4])
                    }
                }
            }
        }
        self.init(time: time, kind: .packet, snrQuarterDb: Int16(snrQuarterDb), rssi: Int16(rssi), header: header,
                  pathLength: pathLength, from: from)
    }

    public var body: [UInt8] {
        var b: [UInt8] = []
        b.reserveCapacity(12)
        b.putU16(UInt16(bitPattern: snrQuarterDb))
        b.putU16(UInt16(bitPattern: rssi ?? Int16.min))
        b.append(kind.rawValue)
        b.append(header)
        b.append(pathLength)
        b.append(UInt8(from.count))
        b.putFixed(from, 4)
        return b
    }

    /// From a record; nil for a body this version does not know.
    public init?(_ r: SampleRecord) {
        guard r.body.count == 12, let kind = Kind(rawValue: r.body[4]), r.body[7] <= 4 else { return nil }
        let (snr, rssi) = r.body.withUnsafeBytes { ($0.i16(0), $0.i16(2)) }
        self.init(time: r.time, kind: kind, snrQuarterDb: snr, rssi: rssi == Int16.min ? nil : rssi, header: r.body[5],
                  pathLength: r.body[6], from: Array(r.body[8 ..< 8 + Int(r.body[7])]))
    }
}

/// A battery sample: the radio's voltage, and its storage when the firmware reports it.
public struct BatterySample: Equatable, Sendable {
    public var time: UInt32
    public var millivolts: UInt16
    public var usedKB: UInt32?
    public var totalKB: UInt32?

    public init(time: UInt32, millivolts: UInt16, usedKB: UInt32? = nil, totalKB: UInt32? = nil) {
        self.time = time; self.millivolts = millivolts; self.usedKB = usedKB; self.totalKB = totalKB
    }

    public var body: [UInt8] {
        var b: [UInt8] = []
        b.reserveCapacity(12)
        b.putU16(millivolts)
        let known = usedKB != nil && totalKB != nil
        b.putU16(known ? 1 : 0)
        b.putU32(known ? usedKB! : 0)
        b.putU32(known ? totalKB! : 0)
        return b
    }

    public init?(_ r: SampleRecord) {
        guard r.body.count == 12 else { return nil }
        let (mv, flags, used, total) = r.body.withUnsafeBytes { ($0.u16(0), $0.u16(2), $0.u32(4), $0.u32(8)) }
        self.init(time: r.time, millivolts: mv, usedKB: flags & 1 != 0 ? used : nil, totalKB: flags & 1 != 0 ? total : nil)
    }
}

/// A ring file of samples (the layout above). Not thread-safe: one owner (the daemon's loop, or
/// one command reading it).
public final class SampleRing {
    public enum Kind: UInt8, Sendable {
        case signal = 1, battery = 2
        /// The file's name in the radio's folder.
        public var fileName: String { self == .signal ? "signal" : "battery" }
        /// Records kept: 4,096 signal samples (96 KiB), 2,048 battery samples (48 KiB).
        public var capacity: Int { self == .signal ? 4096 : 2048 }
    }

    public static let magic: [UInt8] = Array("PMSR".utf8)
    public static let version: UInt8 = 1
    public static let recordSize = 24
    public static let headerSize = 24
    public static let bodySize = 12
    /// Records written between syncs.
    public static let syncEvery = 64

    public let path: String
    public let kind: Kind
    public let capacity: Int
    public let readOnly: Bool
    let files: Files
    var fd: Int32 = -1
    /// The next record's sequence number.
    public private(set) var nextSequence: UInt32 = 1
    var unsynced = 0
    /// What opening found wrong, and what it did about it (nil: nothing).
    public private(set) var problem: String? = nil
    /// Records skipped as damaged when the file was last read.
    public private(set) var damaged = 0

    /// Opens (creating if needed) `kind`'s file in `directory`. Read-only, a missing file is an
    /// empty ring and a damaged header an error; otherwise a damaged header starts it anew.
    public init(directory: String, kind: Kind, capacity: Int? = nil, readOnly: Bool = false,
                fileOps: FileOps = SystemFileOps()) throws {
        self.kind = kind
        self.capacity = capacity ?? kind.capacity
        self.readOnly = readOnly
        path = directory + "/" + kind.fileName
        files = Files(ops: fileOps)
        if readOnly && !files.ops.exists(path) { return }
        fd = try files.open(path, readOnly ? O_RDONLY : O_RDWR | O_CREAT, 0o600)
        do {
            var head = [UInt8](repeating: 0, count: Self.headerSize)
            let got = try head.withUnsafeMutableBytes { try files.read(fd, path, into: $0, at: 0) }
            if got == 0 {
                // New (or just made by its writer, which writes the header next).
                if readOnly { close(); return }
                try start()
                try files.syncDirectory(directory)
                return
            }
            if let why = Self.headerProblem(got == Self.headerSize ? head : Array(head[..<got]), kind: kind, capacity: self.capacity) {
                if readOnly { throw StoreError.corrupt(path: path, detail: why) }
                problem = "\(path): \(why); started anew (the samples in it are lost, nothing else)"
                try start()
                return
            }
            let s = Self.scan(try readRecords(), capacity: self.capacity)
            nextSequence = s.nextSequence
            damaged = s.damaged
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    /// A new file: the header alone, synced.
    func start() throws {
        try files.truncate(fd, path, to: 0)
        try files.write(fd, path, Self.header(kind: kind, capacity: capacity), at: 0)
        try files.sync(fd, path)
        nextSequence = 1
        unsynced = 0
    }

    /// The header's bytes.
    public static func header(kind: Kind, capacity: Int) -> [UInt8] {
        var b = magic
        b.append(version)
        b.append(kind.rawValue)
        b.putU16(UInt16(recordSize))
        b.putU32(UInt32(capacity))
        b.putU32(0)
        b.putU32(0)
        b.putU32(CRC32.checksum(b))
        return b
    }

    /// Why `b` is not the header of a `kind` ring of `capacity` records; nil when it is.
    public static func headerProblem(_ b: [UInt8], kind: Kind, capacity: Int) -> String? {
        guard b.count == headerSize else { return "its header is cut short (\(b.count) of \(headerSize) bytes)" }
        guard Array(b[0..<4]) == magic else { return "it is not a sample file (no PMSR header)" }
        guard CRC32.checksum(Array(b[0..<20])) == b.withUnsafeBytes({ $0.u32(20) }) else { return "its header is damaged (checksum)" }
        let (size, cap) = b.withUnsafeBytes { ($0.u16(6), $0.u32(8)) }
        guard b[4] == version, size == recordSize else { return "it has version \(b[4]) with \(size)-byte records, not \(version) with \(recordSize)" }
        guard b[5] == kind.rawValue else { return "it holds another kind of samples (\(b[5]))" }
        guard cap == capacity else { return "it holds \(cap) records, not \(capacity)" }
        return nil
    }

    /// A record's bytes.
    public static func record(sequence: UInt32, time: UInt32, body: [UInt8]) -> [UInt8] {
        var b: [UInt8] = []
        b.reserveCapacity(recordSize)
        b.putU32(sequence)
        b.putU32(time)
        b.putFixed(body, bodySize)
        b.putU32(CRC32.checksum(b))
        return b
    }

    /// What the records' bytes (slot 0 first) hold: the valid records, oldest first, the next
    /// sequence number, and how many were damaged (a bad checksum, or in the wrong slot).
    public static func scan(_ bytes: [UInt8], capacity: Int) -> (records: [SampleRecord], nextSequence: UInt32, damaged: Int) {
        var out: [SampleRecord] = []
        var damaged = 0
        bytes.withUnsafeBytes { all in
            let n = min(capacity, all.count / recordSize)
            for slot in 0..<n {
                let r = UnsafeRawBufferPointer(rebasing: all[slot * recordSize ..< (slot + 1) * recordSize])
                let seq = r.u32(0)
                if seq == 0 && r.allSatisfy({ $0 == 0 }) { continue }
                guard CRC32.checksum(UnsafeRawBufferPointer(rebasing: r[0..<20])) == r.u32(20), seq != 0,
                      Int((seq - 1) % UInt32(capacity)) == slot else {
                    damaged += 1
                    continue
                }
                out.append(SampleRecord(sequence: seq, time: r.u32(4), body: r.bytes(8, bodySize)))
            }
            if all.count % recordSize != 0 && n < capacity { damaged += 1 }  // a torn record at the end
        }
        out.sort { $0.sequence < $1.sequence }
        // Only the newest lap counts: a record older than one capacity behind the newest is stale.
        if let last = out.last?.sequence, last > UInt32(capacity) {
            out.removeAll { $0.sequence <= last - UInt32(capacity) }
        }
        return (out, (out.last?.sequence ?? 0) &+ 1, damaged)
    }

    func readRecords() throws -> [UInt8] {
        guard fd >= 0 else { return [] }
        let size = Int(min(try files.size(fd, path), UInt64(Self.headerSize + capacity * Self.recordSize)))
        guard size > Self.headerSize else { return [] }
        var b = [UInt8](repeating: 0, count: size - Self.headerSize)
        let got = try b.withUnsafeMutableBytes { try files.read(fd, path, into: $0, at: UInt64(Self.headerSize)) }
        if got < b.count { b.removeLast(b.count - got) }
        return b
    }

    /// Writes one sample over the oldest when the ring is full.
    public func append(time: UInt32, body: [UInt8]) throws {
        guard !readOnly else { throw StoreError.readOnly }
        guard fd >= 0 else { throw StoreError.closed }
        let seq = nextSequence
        let slot = Int((seq - 1) % UInt32(capacity))
        try files.write(fd, path, Self.record(sequence: seq, time: time, body: body),
                        at: UInt64(Self.headerSize + slot * Self.recordSize))
        nextSequence = seq == UInt32.max ? 1 : seq + 1
        unsynced += 1
        if unsynced >= Self.syncEvery { try sync() }
    }

    /// Syncs what was written since the last sync.
    public func sync() throws {
        guard fd >= 0, unsynced > 0, !readOnly else { return }
        unsynced = 0
        try files.sync(fd, path)
    }

    /// The samples with a time at or after `since`, the newest `limit` of them, oldest first.
    public func records(since: UInt32 = 0, limit: Int = Int.max) throws -> [SampleRecord] {
        let s = Self.scan(try readRecords(), capacity: capacity)
        damaged = s.damaged
        let kept = s.records.filter { $0.time >= since }
        return Array(kept.suffix(max(0, limit)))
    }

    public func close() {
        guard fd >= 0 else { return }
        try? sync()
        files.ops.close(fd)
        fd = -1
    }
}
