// Zero-copy views over received frames. Each view holds the whole frame (byte 0 = code), so
// offsets match the protocol tables; lengths were checked when the frame was decoded.
// A view is valid as long as the bytes it was decoded from.

/// Raw bytes of a frame, kept for unknown codes and opaque payloads.
public struct RawFrame {
    /// The bytes, including the code at byte 0.
    public let bytes: UnsafeRawBufferPointer
    public init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }
    public var code: UInt8 { bytes.isEmpty ? 0 : bytes[0] }
    /// Everything after the code byte.
    public var body: UnsafeRawBufferPointer { bytes.tail(1) }
}

/// The error of a `RESP_CODE_ERR` frame.
public struct RadioError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The raw error byte (0 if the frame had none).
    public let rawCode: UInt8
    public init(rawCode: UInt8) { self.rawCode = rawCode }
    public init(_ code: RadioErrorCode) { rawCode = code.rawValue }
    /// The known error, or nil for a code this module does not know.
    public var code: RadioErrorCode? { RadioErrorCode(rawValue: rawCode) }
    public var description: String { code?.description ?? "radio error \(rawCode)" }
}

/// 148-byte contact record (`RESP_CODE_CONTACT`, `PUSH_CODE_NEW_ADVERT`, `CMD_ADD_UPDATE_CONTACT`).
/// Records of 136..<148 bytes (no location/lastmod) read those fields as 0 / nil.
public struct ContactRecord {
    public let bytes: UnsafeRawBufferPointer
    public var publicKey: PublicKey { bytes.key(1) }
    public var type: ContactType { ContactType(rawValue: bytes[33]) }
    /// bit0 favourite; bits1..3 telemetry permissions granted to this contact.
    public var flags: UInt8 { bytes[34] }
    /// Encoded out path length, or `.unknown` (send flood).
    public var outPathLength: PathLength { PathLength(rawValue: bytes[35]) }
    /// The valid path bytes (hops × hash size).
    public var outPath: UnsafeRawBufferPointer { bytes.slice(36, outPathLength.isValid ? outPathLength.byteCount : 0) }
    /// The whole 64-byte out-path field as the radio keeps it (bytes past the path included).
    public var outPathField: UnsafeRawBufferPointer { bytes.slice(36, 64) }
    /// The whole 32-byte name field (bytes past the NUL included).
    public var nameField: UnsafeRawBufferPointer { bytes.slice(100, 32) }
    /// Name bytes up to the NUL.
    public var nameBytes: UnsafeRawBufferPointer { bytes.cField(100, 32) }
    /// Name (allocates only for long names).
    public var name: String { String(utf8Bytes: nameBytes) }
    /// Advert timestamp (sender's clock).
    public var lastAdvertTimestamp: UInt32 { bytes.u32(132) }
    /// Latitude in micro-degrees (0 if absent).
    public var latitude: Int32 { bytes.count >= 144 ? bytes.i32(136) : 0 }
    /// Longitude in micro-degrees (0 if absent).
    public var longitude: Int32 { bytes.count >= 144 ? bytes.i32(140) : 0 }
    /// Last modification on the device clock (nil if absent, as in a short ADD_UPDATE_CONTACT).
    public var lastModified: UInt32? { bytes.count >= 148 ? bytes.u32(144) : nil }
    /// An owned copy.
    public var contact: Contact {
        var c = Contact(publicKey: publicKey, type: type, flags: flags, name: name,
                        lastAdvertTimestamp: lastAdvertTimestamp, latitude: latitude, longitude: longitude,
                        lastModified: lastModified ?? 0)
        c.setOutPath(unchecked: outPathLength, outPath)
        return c
    }
}

/// `RESP_CODE_SELF_INFO`: this radio's identity and settings.
public struct SelfInfo {
    public let bytes: UnsafeRawBufferPointer
    public var advertType: ContactType { ContactType(rawValue: bytes[1]) }
    public var txPowerDbm: Int8 { bytes.i8(2) }
    public var maxTxPowerDbm: Int8 { bytes.i8(3) }
    public var publicKey: PublicKey { bytes.key(4) }
    public var latitude: Int32 { bytes.i32(36) }
    public var longitude: Int32 { bytes.i32(40) }
    public var multiAcks: UInt8 { bytes[44] }
    public var advertLocationPolicy: UInt8 { bytes[45] }
    public var telemetryModes: TelemetryModes { TelemetryModes(packed: bytes[46]) }
    public var manualAddContacts: UInt8 { bytes[47] }
    public var radio: RadioParams {
        RadioParams(frequencyKHz: bytes.u32(48), bandwidthHz: bytes.u32(52), spreadingFactor: bytes[56], codingRate: bytes[57])
    }
    public var nameBytes: UnsafeRawBufferPointer { bytes.tail(58) }
    public var name: String { String(utf8Bytes: nameBytes) }
}

/// `RESP_CODE_DEVICE_INFO`: firmware and limits. Older firmware sends fewer bytes; absent
/// fields are nil.
public struct DeviceInfo {
    public let bytes: UnsafeRawBufferPointer
    /// `FIRMWARE_VER_CODE` (13 for v1.17.1).
    public var firmwareVersionCode: UInt8 { bytes[1] }
    public var maxContacts: Int? { bytes.count > 2 ? Int(bytes[2]) * 2 : nil }
    public var maxChannels: Int? { bytes.count > 3 ? Int(bytes[3]) : nil }
    /// Configured BLE PIN (0 = default or random).
    public var blePin: UInt32? { bytes.count >= 8 ? bytes.u32(4) : nil }
    public var buildDateBytes: UnsafeRawBufferPointer? { bytes.count >= 20 ? bytes.cField(8, 12) : nil }
    public var buildDate: String? { buildDateBytes.map(String.init(utf8Bytes:)) }
    public var modelBytes: UnsafeRawBufferPointer? { bytes.count >= 60 ? bytes.cField(20, 40) : nil }
    public var model: String? { modelBytes.map(String.init(utf8Bytes:)) }
    public var versionBytes: UnsafeRawBufferPointer? { bytes.count >= 80 ? bytes.cField(60, 20) : nil }
    public var version: String? { versionBytes.map(String.init(utf8Bytes:)) }
    /// Client repeat enabled (v9+).
    public var clientRepeat: Bool? { bytes.count > 80 ? bytes[80] != 0 : nil }
    /// Path hash mode 0...2 (v10+).
    public var pathHashMode: UInt8? { bytes.count > 81 ? bytes[81] : nil }
}

/// `RESP_CODE_SENT`.
public struct SentInfo: Hashable, Sendable {
    public var isFlood: Bool
    /// Expected ACK (direct text) or request tag; 4 bytes read as LE u32.
    public var tag: UInt32
    /// The radio's own timeout estimate.
    public var estimatedTimeoutMs: UInt32
    public init(isFlood: Bool, tag: UInt32, estimatedTimeoutMs: UInt32) {
        self.isFlood = isFlood
        self.tag = tag
        self.estimatedTimeoutMs = estimatedTimeoutMs
    }
}

/// `PUSH_CODE_SEND_CONFIRMED`.
public struct SendConfirmed: Hashable, Sendable {
    /// Equals the `tag` of the earlier SENT.
    public var ack: UInt32
    public var roundTripMs: UInt32
    public init(ack: UInt32, roundTripMs: UInt32) {
        self.ack = ack
        self.roundTripMs = roundTripMs
    }
}

/// A direct message: `RESP_CODE_CONTACT_MSG_RECV_V3` (0x10) or legacy 0x07.
public struct ContactMessage {
    public let bytes: UnsafeRawBufferPointer
    /// True for 0x10 (carries SNR), false for legacy 0x07.
    public var isV3: Bool { bytes[0] == ResponseCode.contactMessage.rawValue }
    @inline(__always) var base: Int { isV3 ? 4 : 1 }
    /// SNR ×4 (nil for legacy frames).
    public var snrQuarterDb: Int8? { isV3 ? bytes.i8(1) : nil }
    public var snr: Double? { snrQuarterDb.map { Double($0) / 4 } }
    public var senderPrefix: KeyPrefix { bytes.prefix(base, 6) }
    /// Encoded path length if it came flood; `.unknown` (0xFF) if it came direct.
    public var pathLength: PathLength { PathLength(rawValue: bytes[base + 6]) }
    public var textType: TextType { TextType(rawValue: bytes[base + 7]) }
    public var senderTimestamp: UInt32 { bytes.u32(base + 8) }
    /// Room post author (signed text only).
    public var authorPrefix: KeyPrefix? { textType == .signedPlain ? bytes.prefix(base + 12, 4) : nil }
    /// Text bytes (no NUL; may be cut mid-codepoint at 176).
    public var textBytes: UnsafeRawBufferPointer { bytes.tail(base + 12 + (textType == .signedPlain ? 4 : 0)) }
    public var text: String { String(utf8Bytes: textBytes) }
}

/// A channel message: `RESP_CODE_CHANNEL_MSG_RECV_V3` (0x11) or legacy 0x08.
public struct ChannelMessage {
    public let bytes: UnsafeRawBufferPointer
    public var isV3: Bool { bytes[0] == ResponseCode.channelMessage.rawValue }
    @inline(__always) var base: Int { isV3 ? 4 : 1 }
    public var snrQuarterDb: Int8? { isV3 ? bytes.i8(1) : nil }
    public var snr: Double? { snrQuarterDb.map { Double($0) / 4 } }
    public var channelIndex: UInt8 { bytes[base] }
    /// Encoded path length if it came flood; `.unknown` (0xFF) if it came direct.
    public var pathLength: PathLength { PathLength(rawValue: bytes[base + 1]) }
    public var textType: TextType { TextType(rawValue: bytes[base + 2]) }
    public var timestamp: UInt32 { bytes.u32(base + 3) }
    /// `"<sender>: <text>"` bytes.
    public var textBytes: UnsafeRawBufferPointer { bytes.tail(base + 7) }
    public var text: String { String(utf8Bytes: textBytes) }
    /// Sender name and message split at the first `": "` (nil sender if absent).
    public var senderBytes: UnsafeRawBufferPointer? {
        let t = textBytes
        guard t.count >= 2 else { return nil }
        for i in 0 ..< t.count - 1 where t[i] == 0x3A && t[i + 1] == 0x20 { return t.slice(0, i) }
        return nil
    }
    public var sender: String? { senderBytes.map(String.init(utf8Bytes:)) }
    public var messageBytes: UnsafeRawBufferPointer {
        guard let s = senderBytes else { return textBytes }
        return textBytes.tail(s.count + 2)
    }
    public var message: String { String(utf8Bytes: messageBytes) }
}

/// `RESP_CODE_CHANNEL_DATA_RECV` (0x1B): a channel datagram.
public struct ChannelData {
    public let bytes: UnsafeRawBufferPointer
    public var snrQuarterDb: Int8 { bytes.i8(1) }
    public var snr: Double { Double(snrQuarterDb) / 4 }
    public var channelIndex: UInt8 { bytes[4] }
    /// Encoded path length if flood; `.unknown` if it came direct.
    public var pathLength: PathLength { PathLength(rawValue: bytes[5]) }
    public var dataType: UInt16 { bytes.u16(6) }
    public var data: UnsafeRawBufferPointer { bytes.slice(9, Int(bytes[8])) }
}

/// `RESP_CODE_CHANNEL_INFO` (50 bytes).
public struct ChannelInfo {
    public let bytes: UnsafeRawBufferPointer
    public var index: UInt8 { bytes[1] }
    /// Name up to the NUL (bytes after it are stale garbage on real radios).
    public var nameBytes: UnsafeRawBufferPointer { bytes.cField(2, 32) }
    public var name: String { String(utf8Bytes: nameBytes) }
    public var secret: UnsafeRawBufferPointer { bytes.slice(34, 16) }
    /// Empty slot: empty name and all-zero secret.
    public var isEmpty: Bool { nameBytes.isEmpty && !secret.contains { $0 != 0 } }
}

/// `RESP_CODE_BATT_AND_STORAGE` (storage fields from v6).
public struct BatteryAndStorage: Hashable, Sendable {
    public var millivolts: UInt16
    public var usedKB: UInt32?
    public var totalKB: UInt32?
    public init(millivolts: UInt16, usedKB: UInt32?, totalKB: UInt32?) {
        self.millivolts = millivolts
        self.usedKB = usedKB
        self.totalKB = totalKB
    }
}

/// `RESP_CODE_ADVERT_PATH`.
public struct AdvertPath {
    public let bytes: UnsafeRawBufferPointer
    public var receivedTimestamp: UInt32 { bytes.u32(1) }
    public var pathLength: PathLength { PathLength(rawValue: bytes[5]) }
    public var path: UnsafeRawBufferPointer { bytes.slice(6, pathLength.byteCount) }
}

/// `RESP_CODE_TUNING_PARAMS` and SET_TUNING_PARAMS values, ×1000 as on the wire.
public struct TuningParams: Hashable, Sendable {
    public var rxDelayBaseMilli: UInt32
    public var airtimeFactorMilli: UInt32
    public init(rxDelayBaseMilli: UInt32, airtimeFactorMilli: UInt32) {
        self.rxDelayBaseMilli = rxDelayBaseMilli
        self.airtimeFactorMilli = airtimeFactorMilli
    }
}

/// `RESP_CODE_AUTOADD_CONFIG`.
public struct AutoAddConfig: Hashable, Sendable {
    /// 0x01 overwrite oldest; 0x02/0x04/0x08/0x10 auto-add chat/repeater/room/sensor.
    public var flags: UInt8
    /// 0 no limit, 1 direct neighbours only, N fewer than N hops.
    public var maxHops: UInt8
    public init(flags: UInt8, maxHops: UInt8) {
        self.flags = flags
        self.maxHops = maxHops
    }
}

/// `RESP_CODE_STATS` type 0.
public struct CoreStats: Hashable, Sendable {
    public var batteryMillivolts: UInt16
    public var uptimeSeconds: UInt32
    public var errorFlags: UInt16
    public var queueLength: UInt8
    public init(batteryMillivolts: UInt16, uptimeSeconds: UInt32, errorFlags: UInt16, queueLength: UInt8) {
        self.batteryMillivolts = batteryMillivolts
        self.uptimeSeconds = uptimeSeconds
        self.errorFlags = errorFlags
        self.queueLength = queueLength
    }
}

/// `RESP_CODE_STATS` type 1.
public struct RadioStats: Hashable, Sendable {
    public var noiseFloor: Int16
    public var lastRSSI: Int8
    public var lastSNRQuarterDb: Int8
    public var txAirSeconds: UInt32
    public var rxAirSeconds: UInt32
    public init(noiseFloor: Int16, lastRSSI: Int8, lastSNRQuarterDb: Int8, txAirSeconds: UInt32, rxAirSeconds: UInt32) {
        self.noiseFloor = noiseFloor
        self.lastRSSI = lastRSSI
        self.lastSNRQuarterDb = lastSNRQuarterDb
        self.txAirSeconds = txAirSeconds
        self.rxAirSeconds = rxAirSeconds
    }
}

/// `RESP_CODE_STATS` type 2 (30 bytes; 26 on older firmware, without `receiveErrors`).
public struct PacketStats: Hashable, Sendable {
    public var received: UInt32
    public var sent: UInt32
    public var sentFlood: UInt32
    public var sentDirect: UInt32
    public var receivedFlood: UInt32
    public var receivedDirect: UInt32
    public var receiveErrors: UInt32?
    public init(received: UInt32, sent: UInt32, sentFlood: UInt32, sentDirect: UInt32,
                receivedFlood: UInt32, receivedDirect: UInt32, receiveErrors: UInt32?) {
        self.received = received
        self.sent = sent
        self.sentFlood = sentFlood
        self.sentDirect = sentDirect
        self.receivedFlood = receivedFlood
        self.receivedDirect = receivedDirect
        self.receiveErrors = receiveErrors
    }
}

/// `RESP_CODE_STATS`.
public enum DeviceStats: Hashable, Sendable {
    case core(CoreStats)
    case radio(RadioStats)
    case packets(PacketStats)
    /// A stats type this module does not know: type byte and the bytes after it.
    case unknown(type: UInt8)
}

/// `RESP_CODE_DEFAULT_FLOOD_SCOPE` with a scope set.
public struct DefaultFloodScope {
    public let bytes: UnsafeRawBufferPointer
    public var nameBytes: UnsafeRawBufferPointer { bytes.cField(1, 31) }
    public var name: String { String(utf8Bytes: nameBytes) }
    public var key: UnsafeRawBufferPointer { bytes.slice(32, 16) }
}

/// `RESP_CODE_ALLOWED_REPEAT_FREQ`: (low, high) kHz pairs.
public struct FrequencyRanges: RandomAccessCollection {
    public let bytes: UnsafeRawBufferPointer
    public var startIndex: Int { 0 }
    public var endIndex: Int { (bytes.count - 1) / 8 }
    public subscript(i: Int) -> ClosedRange<UInt32> {
        let lo = bytes.u32(1 + 8 * i), hi = bytes.u32(5 + 8 * i)
        return Swift.min(lo, hi)...Swift.max(lo, hi)
    }
}

/// `PUSH_CODE_RAW_DATA` (0x84).
public struct RawDataPush {
    public let bytes: UnsafeRawBufferPointer
    public var snrQuarterDb: Int8 { bytes.i8(1) }
    public var rssi: Int8 { bytes.i8(2) }
    public var payload: UnsafeRawBufferPointer { bytes.tail(4) }
}

/// `PUSH_CODE_LOG_RX_DATA` (0x88): every packet the radio heard.
public struct LogRxData {
    public let bytes: UnsafeRawBufferPointer
    public var snrQuarterDb: Int8 { bytes.i8(1) }
    public var snr: Double { Double(snrQuarterDb) / 4 }
    public var rssi: Int8 { bytes.i8(2) }
    /// The raw on-air packet.
    public var packet: UnsafeRawBufferPointer { bytes.tail(3) }
}

/// `PUSH_CODE_CONTROL_DATA` (0x8E).
public struct ControlData {
    public let bytes: UnsafeRawBufferPointer
    public var snrQuarterDb: Int8 { bytes.i8(1) }
    public var rssi: Int8 { bytes.i8(2) }
    public var pathLength: PathLength { PathLength(rawValue: bytes[3]) }
    public var payload: UnsafeRawBufferPointer { bytes.tail(4) }
}

/// `PUSH_CODE_LOGIN_SUCCESS`: new layout (14 bytes) or legacy (8 bytes).
public struct LoginSuccess: Hashable, Sendable {
    /// Permission byte from the server (1 = admin on repeaters).
    public var permissions: UInt8
    public var prefix: KeyPrefix
    /// Server clock (new layout only).
    public var serverTimestamp: UInt32?
    /// ACL permissions (new layout only).
    public var aclPermissions: UInt8?
    /// Server firmware level (new layout only).
    public var firmwareLevel: UInt8?
    public var isAdmin: Bool { permissions & 1 != 0 }
    public init(permissions: UInt8, prefix: KeyPrefix, serverTimestamp: UInt32? = nil,
                aclPermissions: UInt8? = nil, firmwareLevel: UInt8? = nil) {
        self.permissions = permissions
        self.prefix = prefix
        self.serverTimestamp = serverTimestamp
        self.aclPermissions = aclPermissions
        self.firmwareLevel = firmwareLevel
    }
}

/// Repeater `RepeaterStats` (56 bytes) and room server `ServerStats` (52 bytes).
public struct ServerStats: Hashable, Sendable {
    public var batteryMillivolts: UInt16
    public var txQueueLength: UInt16
    public var noiseFloor: Int16
    public var lastRSSI: Int16
    public var packetsReceived: UInt32
    public var packetsSent: UInt32
    public var airTimeSeconds: UInt32
    public var uptimeSeconds: UInt32
    public var sentFlood: UInt32
    public var sentDirect: UInt32
    public var receivedFlood: UInt32
    public var receivedDirect: UInt32
    public var errorEvents: UInt16
    public var lastSNRQuarterDb: Int16
    public var directDuplicates: UInt16
    public var floodDuplicates: UInt16
    /// Repeater only.
    public var rxAirTimeSeconds: UInt32?
    /// Repeater only.
    public var receiveErrors: UInt32?
    /// Room server only.
    public var postedCount: UInt16?
    /// Room server only.
    public var postPushCount: UInt16?

    public static let repeaterSize = 56
    public static let roomSize = 52

    public init(batteryMillivolts: UInt16 = 0, txQueueLength: UInt16 = 0, noiseFloor: Int16 = 0, lastRSSI: Int16 = 0,
                packetsReceived: UInt32 = 0, packetsSent: UInt32 = 0, airTimeSeconds: UInt32 = 0,
                uptimeSeconds: UInt32 = 0, sentFlood: UInt32 = 0, sentDirect: UInt32 = 0,
                receivedFlood: UInt32 = 0, receivedDirect: UInt32 = 0, errorEvents: UInt16 = 0,
                lastSNRQuarterDb: Int16 = 0, directDuplicates: UInt16 = 0, floodDuplicates: UInt16 = 0,
                rxAirTimeSeconds: UInt32? = nil, receiveErrors: UInt32? = nil,
                postedCount: UInt16? = nil, postPushCount: UInt16? = nil) {
        self.batteryMillivolts = batteryMillivolts
        self.txQueueLength = txQueueLength
        self.noiseFloor = noiseFloor
        self.lastRSSI = lastRSSI
        self.packetsReceived = packetsReceived
        self.packetsSent = packetsSent
        self.airTimeSeconds = airTimeSeconds
        self.uptimeSeconds = uptimeSeconds
        self.sentFlood = sentFlood
        self.sentDirect = sentDirect
        self.receivedFlood = receivedFlood
        self.receivedDirect = receivedDirect
        self.errorEvents = errorEvents
        self.lastSNRQuarterDb = lastSNRQuarterDb
        self.directDuplicates = directDuplicates
        self.floodDuplicates = floodDuplicates
        self.rxAirTimeSeconds = rxAirTimeSeconds
        self.receiveErrors = receiveErrors
        self.postedCount = postedCount
        self.postPushCount = postPushCount
    }

    /// Reads a 56-byte repeater or 52-byte room block; nil for other sizes.
    public init?(_ b: UnsafeRawBufferPointer) {
        guard b.count == ServerStats.repeaterSize || b.count == ServerStats.roomSize else { return nil }
        self.init(batteryMillivolts: b.u16(0), txQueueLength: b.u16(2), noiseFloor: b.i16(4), lastRSSI: b.i16(6),
                  packetsReceived: b.u32(8), packetsSent: b.u32(12), airTimeSeconds: b.u32(16), uptimeSeconds: b.u32(20),
                  sentFlood: b.u32(24), sentDirect: b.u32(28), receivedFlood: b.u32(32), receivedDirect: b.u32(36),
                  errorEvents: b.u16(40), lastSNRQuarterDb: b.i16(42), directDuplicates: b.u16(44), floodDuplicates: b.u16(46))
        if b.count == ServerStats.repeaterSize {
            rxAirTimeSeconds = b.u32(48)
            receiveErrors = b.u32(52)
        } else {
            postedCount = b.u16(48)
            postPushCount = b.u16(50)
        }
    }

    /// True for the room server layout.
    public var isRoom: Bool { postedCount != nil }
}

/// `PUSH_CODE_STATUS_RESPONSE` (0x87).
public struct StatusResponse {
    public let bytes: UnsafeRawBufferPointer
    public var prefix: KeyPrefix { bytes.prefix(2, 6) }
    /// The raw stats block.
    public var statsBytes: UnsafeRawBufferPointer { bytes.tail(8) }
    /// Repeater (56) or room (52) stats; nil for other sizes.
    public var stats: ServerStats? { ServerStats(statsBytes) }
}

/// `PUSH_CODE_TRACE_DATA` (0x89).
public struct TraceData {
    public let bytes: UnsafeRawBufferPointer
    /// Bytes of hop hashes.
    public var pathByteCount: Int { Int(bytes[2]) }
    public var flags: UInt8 { bytes[3] }
    /// Bytes per hop hash: 1 << (flags & 3).
    public var hashSize: Int { 1 << Int(flags & 3) }
    public var tag: UInt32 { bytes.u32(4) }
    public var authCode: UInt32 { bytes.u32(8) }
    public var pathHashes: UnsafeRawBufferPointer { bytes.slice(12, pathByteCount) }
    /// SNR ×4 per hop.
    public var pathSNRs: UnsafeRawBufferPointer { bytes.slice(12 + pathByteCount, pathByteCount >> Int(flags & 3)) }
    /// SNR ×4 of the last hop to this radio.
    public var finalSNRQuarterDb: Int8 { bytes.i8(12 + pathByteCount + (pathByteCount >> Int(flags & 3))) }
}

/// `PUSH_CODE_TELEMETRY_RESPONSE` (0x8B).
public struct TelemetryResponse {
    public let bytes: UnsafeRawBufferPointer
    public var prefix: KeyPrefix { bytes.prefix(2, 6) }
    /// CayenneLPP bytes.
    public var lppBytes: UnsafeRawBufferPointer { bytes.tail(8) }
    /// A reader over the LPP records.
    public var lpp: LPPReader { LPPReader(lppBytes) }
}

/// `PUSH_CODE_BINARY_RESPONSE` (0x8C).
public struct BinaryResponse {
    public let bytes: UnsafeRawBufferPointer
    /// Matches the SENT tag.
    public var tag: UInt32 { bytes.u32(2) }
    public var data: UnsafeRawBufferPointer { bytes.tail(6) }
}

/// `PUSH_CODE_PATH_DISCOVERY_RESPONSE` (0x8D).
public struct PathDiscoveryResponse {
    public let bytes: UnsafeRawBufferPointer
    public var prefix: KeyPrefix { bytes.prefix(2, 6) }
    /// Route to the target.
    public var outPathLength: PathLength { PathLength(rawValue: bytes[8]) }
    public var outPath: UnsafeRawBufferPointer { bytes.slice(9, outPathLength.byteCount) }
    /// Route the reply took.
    public var inPathLength: PathLength { PathLength(rawValue: bytes[9 + outPathLength.byteCount]) }
    public var inPath: UnsafeRawBufferPointer { bytes.slice(10 + outPathLength.byteCount, inPathLength.byteCount) }
}
