// What a companion asks remote nodes inside SEND_BINARY_REQ (the request data), and the owned
// decodings of their answers (BINARY_RESPONSE data) and of TRACE_DATA: one place for the layouts
// of the firmware's `handleRequest` (simple_repeater, simple_room_server).

/// The first byte of a binary request's data: `REQ_TYPE_*`.
public enum RemoteRequestType: UInt8, Sendable, CaseIterable {
    case getStatus = 0x01
    case keepAlive = 0x02
    case getTelemetry = 0x03
    case getMinMaxAvg = 0x04
    case getAccessList = 0x05
    case getNeighbours = 0x06
}

/// Data of binary requests to repeaters and room servers.
public enum RemoteRequestData {
    /// REQ_TYPE_GET_NEIGHBOURS, request version 0: count, offset u16, order (0: newest first), key
    /// prefix length, then 4 random bytes that make each request packet unique.
    public static func neighbours(offset: Int, count: UInt8 = 255, order: UInt8 = 0, prefixLength: Int,
                                  nonce: UInt32) -> [UInt8] {
        var d: [UInt8] = [RemoteRequestType.getNeighbours.rawValue, 0x00, count]
        d.putU16(UInt16(truncatingIfNeeded: offset))
        d.append(order)
        d.append(UInt8(truncatingIfNeeded: prefixLength))
        d.putU32(nonce)
        return d
    }

    /// REQ_TYPE_GET_ACCESS_LIST: the type and one reserved byte.
    public static func accessList() -> [UInt8] { [RemoteRequestType.getAccessList.rawValue, 0x00] }

    /// Min/max/avg of a sensor's readings between `from` and `to` seconds ago (u32 LE each, then
    /// two reserved bytes), as meshcore_py's `req_mma` sends it.
    public static func minMaxAvg(fromSecondsAgo from: UInt32, toSecondsAgo to: UInt32) -> [UInt8] {
        var d: [UInt8] = [RemoteRequestType.getMinMaxAvg.rawValue]
        d.putU32(from)
        d.putU32(to)
        return d + [0, 0]
    }
}

/// One neighbour of a repeater: the start of its key, when it was last heard, and its SNR.
public struct NeighbourEntry: Hashable, Sendable {
    public var prefix: [UInt8]
    public var secondsAgo: UInt32
    public var snrQuarterDb: Int8
}

/// One page of a repeater's neighbour table (the data of a BINARY_RESPONSE): total u16, count u16,
/// then count × (key prefix, heard_secs_ago u32, SNR×4 i8).
public struct NeighbourPage: Hashable, Sendable {
    /// Neighbours the repeater has in all.
    public var total: Int
    public var entries: [NeighbourEntry]

    /// nil when the data is shorter than its count says.
    public init?(data d: UnsafeRawBufferPointer, prefixLength: Int) {
        guard d.count >= 4, prefixLength > 0 else { return nil }
        total = Int(d.u16(0))
        let count = Int(d.u16(2))
        let size = prefixLength + 5
        guard d.count >= 4 + count * size else { return nil }
        entries = []
        entries.reserveCapacity(count)
        for i in 0..<count {
            let o = 4 + i * size
            entries.append(NeighbourEntry(prefix: Array(d.slice(o, prefixLength)), secondsAgo: d.u32(o + prefixLength),
                                          snrQuarterDb: d.i8(o + prefixLength + 4)))
        }
    }

    /// Decodes a whole BINARY_RESPONSE frame (code byte first); nil for anything else.
    public init?(frame: [UInt8], prefixLength: Int) {
        guard let p = CompanionFrame.owned(frame, { f -> NeighbourPage? in
            if case .binaryResponse(let r) = f { return NeighbourPage(data: r.data, prefixLength: prefixLength) }
            return nil
        }) else { return nil }
        self = p
    }
}

/// One entry of a server's access list: the start of a client's key and its permissions.
public struct AccessListEntry: Hashable, Sendable {
    public var prefix: [UInt8]
    public var permissions: UInt8

    /// The data of the answer to REQ_TYPE_GET_ACCESS_LIST: 6-byte prefix + permissions, repeated
    /// (a trailing partial entry is ignored).
    public static func list(data d: UnsafeRawBufferPointer) -> [AccessListEntry] {
        var out: [AccessListEntry] = []
        var o = 0
        while o + 7 <= d.count {
            out.append(AccessListEntry(prefix: Array(d.slice(o, 6)), permissions: d[o + 6]))
            o += 7
        }
        return out
    }

    /// Decodes a whole BINARY_RESPONSE frame (code byte first); nil for anything else.
    public static func list(frame: [UInt8]) -> [AccessListEntry]? {
        CompanionFrame.owned(frame) { f -> [AccessListEntry]? in
            if case .binaryResponse(let r) = f { return list(data: r.data) }
            return nil
        }
    }
}

/// TRACE_DATA, owned: the tag, and each hop's hash with the SNR it heard the trace at.
public struct TraceResult: Hashable, Sendable {
    public struct Hop: Hashable, Sendable {
        public var hash: [UInt8]
        public var snrQuarterDb: Int8
    }
    public var tag: UInt32
    public var authCode: UInt32
    /// Bytes per hop hash.
    public var hashSize: Int
    public var hops: [Hop]
    /// SNR×4 of the last hop to this radio.
    public var finalSNRQuarterDb: Int8

    public init(_ t: TraceData) {
        tag = t.tag
        authCode = t.authCode
        hashSize = t.hashSize
        let hashes = t.pathHashes, snrs = t.pathSNRs
        hops = []
        for i in 0..<snrs.count {
            let start = min(i * hashSize, max(0, hashes.count - hashSize))
            hops.append(Hop(hash: Array(hashes.slice(start, min(hashSize, hashes.count - start))),
                            snrQuarterDb: Int8(bitPattern: snrs[i])))
        }
        finalSNRQuarterDb = t.finalSNRQuarterDb
    }

    /// Decodes a TRACE_DATA frame (code byte first); nil for anything else.
    public init?(frame: [UInt8]) {
        guard let v = CompanionFrame.owned(frame, { if case .traceData(let t) = $0 { return TraceResult(t) }; return nil }) else { return nil }
        self = v
    }
}

/// Anonymous requests a repeater answers without a login (SEND_ANON_REQ), on a direct route only.
public enum AnonRequestType: UInt8, Sendable, CaseIterable {
    /// The region names it lets floods through for.
    case regions = 1
    /// Its name and owner information.
    case owner = 2
    /// Its clock and a feature byte (0x80: not repeating).
    case basic = 3
}

extension RemoteRequestData {
    /// SEND_ANON_REQ data: the request type, then the path the reply should take (path length
    /// byte and hashes; zero hops: the repeater answers zero-hop).
    public static func anon(_ type: AnonRequestType, replyPathLength: PathLength, replyPath: [UInt8]) -> [UInt8] {
        [type.rawValue, replyPathLength.rawValue] + replyPath.prefix(replyPathLength.byteCount)
    }
}

/// A repeater's answer to an anonymous request (BINARY_RESPONSE data): its clock, then the body.
public struct AnonReply: Hashable, Sendable {
    public var clock: UInt32
    public var body: [UInt8]

    public init?(data d: UnsafeRawBufferPointer) {
        guard d.count >= 4 else { return nil }
        clock = d.u32(0)
        body = Array(d.tail(4))
    }

    /// Decodes a whole BINARY_RESPONSE frame (code byte first); nil for anything else.
    public init?(frame: [UInt8]) {
        guard let r = CompanionFrame.owned(frame, { f -> AnonReply? in
            if case .binaryResponse(let b) = f { return AnonReply(data: b.data) }
            return nil
        }) else { return nil }
        self = r
    }

    /// The body as text (UTF-8 up to the first NUL).
    public var text: String { String(decoding: body.prefix { $0 != 0 }, as: UTF8.self) }
}

/// Bits of a contact's flags byte.
public enum ContactFlags {
    public static let favourite: UInt8 = 1 << 0
    /// Telemetry granted to the contact when the radio's telemetry modes are "flags".
    public static let telemetryBase: UInt8 = 1 << 1
    public static let telemetryLocation: UInt8 = 1 << 2
    public static let telemetryEnvironment: UInt8 = 1 << 3
    public static let telemetry: UInt8 = telemetryBase | telemetryLocation | telemetryEnvironment
    /// Protocol 14: the contact may run CLI commands on this radio (text type 3).
    public static let remoteCLI: UInt8 = 1 << 4
}
