// Decoding of app → radio frames (what a simulated radio receives), following the firmware's
// length guards (`MyMesh::handleCmdFrame`). A frame that fails a guard is a typed error; the
// firmware answers those with `radioError(for:)` (mostly ERR_CODE_UNSUPPORTED_CMD).
// Value checks the firmware answers with ERR_CODE_ILLEGAL_ARG (ranges, paths) are left to the
// handler; the views offer helpers for them.

/// `CMD_SEND_TXT_MSG` view.
public struct TextMessageCommand {
    public let bytes: UnsafeRawBufferPointer
    public var textType: TextType { TextType(rawValue: bytes[1]) }
    public var attempt: UInt8 { bytes[2] }
    public var timestamp: UInt32 { bytes.u32(3) }
    public var recipientPrefix: KeyPrefix { bytes.prefix(7, 6) }
    /// Text bytes up to the end (or a NUL).
    public var textBytes: UnsafeRawBufferPointer { bytes.cField(13, bytes.count - 13) }
    public var text: String { String(utf8Bytes: textBytes) }
}

/// `CMD_SEND_CHANNEL_TXT_MSG` view.
public struct ChannelTextCommand {
    public let bytes: UnsafeRawBufferPointer
    public var textType: TextType { TextType(rawValue: bytes[1]) }
    public var channelIndex: UInt8 { bytes[2] }
    public var timestamp: UInt32 { bytes.u32(3) }
    public var textBytes: UnsafeRawBufferPointer { bytes.cField(7, bytes.count - 7) }
    public var text: String { String(utf8Bytes: textBytes) }
}

/// `CMD_SEND_CHANNEL_DATA` view. Check `pathLength` validity (0xFF = flood), `dataType` ≠ 0 and
/// `payload.count` ≤ 163 before sending (the firmware answers ERR 6 otherwise).
public struct ChannelDataCommand {
    public let bytes: UnsafeRawBufferPointer
    public var channelIndex: UInt8 { bytes[1] }
    public var pathLength: PathLength { PathLength(rawValue: bytes[2]) }
    @inline(__always) var pathBytes: Int { pathLength.isUnknown ? 0 : pathLength.byteCount }
    public var path: UnsafeRawBufferPointer { bytes.slice(3, pathBytes) }
    public var dataType: UInt16 { bytes.u16(3 + pathBytes) }
    public var payload: UnsafeRawBufferPointer { bytes.tail(5 + pathBytes) }
}

/// A command with a public key and trailing data (login password, binary/anon request data).
public struct KeyedDataCommand {
    public let bytes: UnsafeRawBufferPointer
    public var publicKey: PublicKey { bytes.key(1) }
    public var data: UnsafeRawBufferPointer { bytes.tail(33) }
    /// `data` as text up to the first NUL (passwords).
    public var text: String { String(utf8Bytes: bytes.cField(33, bytes.count - 33)) }
}

/// `CMD_SEND_RAW_DATA` view.
public struct RawDataCommand {
    public let bytes: UnsafeRawBufferPointer
    /// The length byte: a byte count (as an int8) up to protocol 13, an encoded `PathLength` from 14 on.
    public var pathByte: UInt8 { bytes[1] }

    /// Protocol 13 (v1.17.1): the path is `pathByte` bytes, which must leave a 4-byte payload.
    public var legacyIsValid: Bool { bytes[1] < 0x80 && 2 + Int(bytes[1]) + 4 <= bytes.count }
    /// The protocol 13 path and payload (empty when not `legacyIsValid`).
    public var path: UnsafeRawBufferPointer { legacyIsValid ? bytes.slice(2, Int(bytes[1])) : bytes.tail(bytes.count) }
    public var payload: UnsafeRawBufferPointer { legacyIsValid ? bytes.tail(2 + Int(bytes[1])) : bytes.tail(bytes.count) }

    /// Protocol 14 (the firmware's dev line): the length byte is an encoded path length.
    public var pathLength: PathLength { PathLength(rawValue: bytes[1]) }
    /// The path under protocol 14: nil when the length is not a valid path length (ERR 1), or the
    /// frame leaves no 4-byte payload after it (ERR 6).
    public var encodedPath: UnsafeRawBufferPointer? {
        let p = pathLength
        guard p.isValid, 2 + p.byteCount + 4 <= bytes.count else { return nil }
        return bytes.slice(2, p.byteCount)
    }
    public var encodedPayload: UnsafeRawBufferPointer { bytes.tail(min(bytes.count, 2 + pathLength.byteCount)) }
}

/// `CMD_SEND_TRACE_PATH` view.
public struct TracePathCommand {
    public let bytes: UnsafeRawBufferPointer
    public var tag: UInt32 { bytes.u32(1) }
    public var authCode: UInt32 { bytes.u32(5) }
    public var flags: UInt8 { bytes[9] }
    public var hashSize: Int { 1 << Int(flags & 3) }
    public var hashes: UnsafeRawBufferPointer { bytes.tail(10) }
    /// The firmware's check: whole hashes, at most 64 of them (ERR 6 otherwise).
    public var isValid: Bool {
        let n = hashes.count, s = Int(flags & 3)
        return (n >> s) <= CompanionLimits.maxPathSize && n % (1 << s) == 0
    }
}

/// `CMD_SET_CHANNEL` view.
public struct SetChannelCommand {
    public let bytes: UnsafeRawBufferPointer
    public var index: UInt8 { bytes[1] }
    public var nameBytes: UnsafeRawBufferPointer { bytes.cField(2, 31) }
    public var name: String { String(utf8Bytes: nameBytes) }
    public var secret: UnsafeRawBufferPointer { bytes.slice(34, 16) }
}

/// `CMD_SET_DEFAULT_FLOOD_SCOPE` view (set form, ≥ 48 bytes).
public struct DefaultFloodScopeCommand {
    public let bytes: UnsafeRawBufferPointer
    /// Name up to the NUL; the firmware wants 1...30 bytes (ERR 6 otherwise).
    public var nameBytes: UnsafeRawBufferPointer { bytes.cField(1, 31) }
    public var name: String { String(utf8Bytes: nameBytes) }
    public var key: UnsafeRawBufferPointer { bytes.slice(32, 16) }
    public var isValid: Bool { (1...30).contains(nameBytes.count) }
}

/// `CMD_SET_OTHER_PARAMS` fields (later ones absent on older apps).
public struct OtherParams: Hashable, Sendable {
    public var manualAddContacts: UInt8
    public var telemetryModes: TelemetryModes?
    public var advertLocationPolicy: UInt8?
    public var multiAcks: UInt8?
    public init(manualAddContacts: UInt8, telemetryModes: TelemetryModes? = nil,
                advertLocationPolicy: UInt8? = nil, multiAcks: UInt8? = nil) {
        self.manualAddContacts = manualAddContacts
        self.telemetryModes = telemetryModes
        self.advertLocationPolicy = advertLocationPolicy
        self.multiAcks = multiAcks
    }
}

/// One command from the app, decoded in place (views valid as long as the bytes are).
public enum CompanionCommand {
    /// App name bytes (after 7 reserved bytes).
    case appStart(appName: UnsafeRawBufferPointer)
    case sendTextMessage(TextMessageCommand)
    case sendChannelTextMessage(ChannelTextCommand)
    case getContacts(since: UInt32?)
    case getDeviceTime
    case setDeviceTime(UInt32)
    case sendSelfAdvert(flood: Bool)
    /// Name bytes, already cut to 31 like the firmware does.
    case setAdvertName(UnsafeRawBufferPointer)
    case addUpdateContact(ContactRecord)
    case syncNextMessage
    /// Check ranges (ERR 6); `clientRepeat` nil when the v9 byte is absent.
    case setRadioParams(RadioParams, clientRepeat: Bool?)
    case setRadioTxPower(Int8)
    case resetPath(PublicKey)
    case setAdvertLatLon(latitude: Int32, longitude: Int32, altitude: Int32?)
    case removeContact(PublicKey)
    case shareContact(PublicKey)
    /// nil: export this radio's own advert.
    case exportContact(PublicKey?)
    /// The raw advert packet.
    case importContact(advertPacket: UnsafeRawBufferPointer)
    case reboot
    case getBatteryAndStorage
    case setTuningParams(TuningParams)
    case deviceQuery(appTargetVersion: UInt8)
    case exportPrivateKey
    /// The 64-byte key.
    case importPrivateKey(UnsafeRawBufferPointer)
    case sendRawData(RawDataCommand)
    case sendLogin(KeyedDataCommand)
    case sendStatusRequest(PublicKey)
    case hasConnection(PublicKey)
    case logout(PublicKey)
    case getContactByKey(PublicKey)
    case getChannel(UInt8)
    case setChannel(SetChannelCommand)
    case signStart
    /// The chunk.
    case signData(UnsafeRawBufferPointer)
    case signFinish
    case sendTracePath(TracePathCommand)
    case setDevicePin(UInt32)
    case setOtherParams(OtherParams)
    /// nil: this radio's own telemetry (answered with push 0x8B).
    case sendTelemetryRequest(PublicKey?)
    case getCustomVars
    /// `"name:value"` bytes (up to a NUL).
    case setCustomVar(UnsafeRawBufferPointer)
    case getAdvertPath(PublicKey)
    case getTuningParams
    case sendBinaryRequest(KeyedDataCommand)
    case factoryReset
    case sendPathDiscoveryRequest(PublicKey)
    case setFloodScopeKey(FloodScopeCommand)
    /// The control payload (bit 7 of byte 0 set).
    case sendControlData(UnsafeRawBufferPointer)
    /// Raw stats type; unknown types get ERR 6.
    case getStats(type: UInt8)
    case sendAnonRequest(KeyedDataCommand)
    case setAutoAddConfig(flags: UInt8, maxHops: UInt8?)
    case getAutoAddConfig
    case getAllowedRepeatFrequencies
    /// Mode ≥ 3 gets ERR 6.
    case setPathHashMode(UInt8)
    case sendChannelData(ChannelDataCommand)
    /// nil clears the default scope.
    case setDefaultFloodScope(DefaultFloodScopeCommand?)
    case getDefaultFloodScope
    case sendRawPacket(priority: UInt8, packet: UnsafeRawBufferPointer)
    /// Protocol 14: a line for the radio's own CLI (at least 2 bytes; the firmware cuts it at a NUL).
    case runCLICommand(UnsafeRawBufferPointer)
    /// A code this module does not know (the firmware answers ERR 1).
    case unknown(RawFrame)

    /// Flood scope override from `CMD_SET_FLOOD_SCOPE_KEY`.
    public enum FloodScopeCommand {
        case clear
        /// 16-byte key view.
        case key(UnsafeRawBufferPointer)
        case unscoped
    }

    /// Byte 0 of the frame.
    public var code: UInt8 {
        switch self {
        case .appStart: return 0x01
        case .sendTextMessage: return 0x02
        case .sendChannelTextMessage: return 0x03
        case .getContacts: return 0x04
        case .getDeviceTime: return 0x05
        case .setDeviceTime: return 0x06
        case .sendSelfAdvert: return 0x07
        case .setAdvertName: return 0x08
        case .addUpdateContact: return 0x09
        case .syncNextMessage: return 0x0A
        case .setRadioParams: return 0x0B
        case .setRadioTxPower: return 0x0C
        case .resetPath: return 0x0D
        case .setAdvertLatLon: return 0x0E
        case .removeContact: return 0x0F
        case .shareContact: return 0x10
        case .exportContact: return 0x11
        case .importContact: return 0x12
        case .reboot: return 0x13
        case .getBatteryAndStorage: return 0x14
        case .setTuningParams: return 0x15
        case .deviceQuery: return 0x16
        case .exportPrivateKey: return 0x17
        case .importPrivateKey: return 0x18
        case .sendRawData: return 0x19
        case .sendLogin: return 0x1A
        case .sendStatusRequest: return 0x1B
        case .hasConnection: return 0x1C
        case .logout: return 0x1D
        case .getContactByKey: return 0x1E
        case .getChannel: return 0x1F
        case .setChannel: return 0x20
        case .signStart: return 0x21
        case .signData: return 0x22
        case .signFinish: return 0x23
        case .sendTracePath: return 0x24
        case .setDevicePin: return 0x25
        case .setOtherParams: return 0x26
        case .sendTelemetryRequest: return 0x27
        case .getCustomVars: return 0x28
        case .setCustomVar: return 0x29
        case .getAdvertPath: return 0x2A
        case .getTuningParams: return 0x2B
        case .sendBinaryRequest: return 0x32
        case .factoryReset: return 0x33
        case .sendPathDiscoveryRequest: return 0x34
        case .setFloodScopeKey: return 0x36
        case .sendControlData: return 0x37
        case .getStats: return 0x38
        case .sendAnonRequest: return 0x39
        case .setAutoAddConfig: return 0x3A
        case .getAutoAddConfig: return 0x3B
        case .getAllowedRepeatFrequencies: return 0x3C
        case .setPathHashMode: return 0x3D
        case .sendChannelData: return 0x3E
        case .setDefaultFloodScope: return 0x3F
        case .getDefaultFloodScope: return 0x40
        case .sendRawPacket: return 0x41
        case .runCLICommand: return 0x42
        case .unknown(let r): return r.code
        }
    }

    /// The error the firmware answers a frame with when it fails `decode`.
    public static func radioError(for error: CompanionDecodeError) -> RadioErrorCode {
        switch error {
        case .truncated(code: CommandCode.sendChannelData.rawValue, _, _): return .illegalArgument
        case .malformed(_, field: .pathLength): return .illegalArgument
        default: return .unsupportedCommand
        }
    }

    /// Decodes one command payload (no transport header; ≤ 176 bytes, as the device-side
    /// `FrameDecoder` delivers).
    public static func decode(_ b: UnsafeRawBufferPointer) throws(CompanionDecodeError) -> CompanionCommand {
        guard let c = b.first else { throw .empty }
        if b.count > CompanionLimits.maxFrameSize { throw .tooLong(length: b.count) }
        let n = b.count
        @inline(__always) func need(_ m: Int) throws(CompanionDecodeError) {
            if n < m { throw .truncated(code: c, length: n, minimum: m) }
        }
        @inline(__always) func key() throws(CompanionDecodeError) -> PublicKey {
            try need(33)
            return b.key(1)
        }
        guard let code = CommandCode(rawValue: c) else { return .unknown(RawFrame(b)) }
        switch code {
        case .appStart: try need(8); return .appStart(appName: b.cField(8, n - 8))
        case .sendTextMessage: try need(14); return .sendTextMessage(TextMessageCommand(bytes: b))
        case .sendChannelTextMessage: try need(7); return .sendChannelTextMessage(ChannelTextCommand(bytes: b))
        case .getContacts: return .getContacts(since: n >= 5 ? b.u32(1) : nil)
        case .getDeviceTime: return .getDeviceTime
        case .setDeviceTime: try need(5); return .setDeviceTime(b.u32(1))
        case .sendSelfAdvert: return .sendSelfAdvert(flood: n >= 2 && b[1] == 1)
        case .setAdvertName:
            try need(2)
            return .setAdvertName(b.cField(1, min(n - 1, CompanionLimits.maxNameLength)))
        case .addUpdateContact: return .addUpdateContact(try CompanionFrame.decodeContact(b))
        case .syncNextMessage: return .syncNextMessage
        case .setRadioParams:
            try need(11)
            return .setRadioParams(RadioParams(frequencyKHz: b.u32(1), bandwidthHz: b.u32(5), spreadingFactor: b[9], codingRate: b[10]),
                                   clientRepeat: n > 11 ? b[11] != 0 : nil)
        case .setRadioTxPower: try need(2); return .setRadioTxPower(b.i8(1))
        case .resetPath: return .resetPath(try key())
        case .setAdvertLatLon:
            try need(9)
            return .setAdvertLatLon(latitude: b.i32(1), longitude: b.i32(5), altitude: n >= 13 ? b.i32(9) : nil)
        case .removeContact: return .removeContact(try key())
        case .shareContact: return .shareContact(try key())
        case .exportContact: return .exportContact(n >= 33 ? b.key(1) : nil)
        case .importContact:
            if n <= 98 { throw .truncated(code: c, length: n, minimum: 99) }
            return .importContact(advertPacket: b.tail(1))
        case .reboot:
            guard n >= 7, b.slice(1, 6).elementsEqual("reboot".utf8) else { throw .malformed(code: c, field: .data) }
            return .reboot
        case .getBatteryAndStorage: return .getBatteryAndStorage
        case .setTuningParams:
            try need(9)
            return .setTuningParams(TuningParams(rxDelayBaseMilli: b.u32(1), airtimeFactorMilli: b.u32(5)))
        case .deviceQuery: try need(2); return .deviceQuery(appTargetVersion: b[1])
        case .exportPrivateKey: return .exportPrivateKey
        case .importPrivateKey: try need(65); return .importPrivateKey(b.slice(1, 64))
        case .sendRawData:
            // The path length byte means a byte count up to protocol 13 and an encoded path length
            // from 14 on: the radio checks it with `legacyIsValid` or `encodedPath`.
            try need(6)
            return .sendRawData(RawDataCommand(bytes: b))
        case .sendLogin: try need(33); return .sendLogin(KeyedDataCommand(bytes: b))
        case .sendStatusRequest: return .sendStatusRequest(try key())
        case .hasConnection: return .hasConnection(try key())
        case .logout: return .logout(try key())
        case .getContactByKey: return .getContactByKey(try key())
        case .getChannel: try need(2); return .getChannel(b[1])
        case .setChannel:
            try need(50)
            if n >= 66 { throw .malformed(code: c, field: .channelSecret) }
            return .setChannel(SetChannelCommand(bytes: b))
        case .signStart: return .signStart
        case .signData: try need(2); return .signData(b.tail(1))
        case .signFinish: return .signFinish
        case .sendTracePath:
            try need(11)
            if n - 10 >= CompanionLimits.maxPacketPayload - 5 { throw .malformed(code: c, field: .traceHashes) }
            return .sendTracePath(TracePathCommand(bytes: b))
        case .setDevicePin: try need(5); return .setDevicePin(b.u32(1))
        case .setOtherParams:
            try need(2)
            return .setOtherParams(OtherParams(manualAddContacts: b[1],
                                               telemetryModes: n >= 3 ? TelemetryModes(packed: b[2]) : nil,
                                               advertLocationPolicy: n >= 4 ? b[3] : nil,
                                               multiAcks: n >= 5 ? b[4] : nil))
        case .sendTelemetryRequest:
            if n >= 36 { return .sendTelemetryRequest(b.key(4)) }
            if n == 4 { return .sendTelemetryRequest(nil) }
            throw .truncated(code: c, length: n, minimum: 36)
        case .getCustomVars: return .getCustomVars
        case .setCustomVar: try need(4); return .setCustomVar(b.cField(1, n - 1))
        case .getAdvertPath: try need(34); return .getAdvertPath(b.key(2))
        case .getTuningParams: return .getTuningParams
        case .sendBinaryRequest: try need(34); return .sendBinaryRequest(KeyedDataCommand(bytes: b))
        case .factoryReset:
            guard n >= 6, b.slice(1, 5).elementsEqual("reset".utf8) else { throw .malformed(code: c, field: .data) }
            return .factoryReset
        case .sendPathDiscoveryRequest:
            try need(34)
            if b[1] != 0 { throw .malformed(code: c, field: .data) }
            return .sendPathDiscoveryRequest(b.key(2))
        case .setFloodScopeKey:
            try need(2)
            switch b[1] {
            case 0: return .setFloodScopeKey(n >= 18 ? .key(b.slice(2, 16)) : .clear)
            case 1: return .setFloodScopeKey(.unscoped)
            default: throw .malformed(code: c, field: .data)
            }
        case .sendControlData:
            try need(2)
            if b[1] & 0x80 == 0 { throw .malformed(code: c, field: .payload) }
            return .sendControlData(b.tail(1))
        case .getStats: try need(2); return .getStats(type: b[1])
        case .sendAnonRequest: try need(34); return .sendAnonRequest(KeyedDataCommand(bytes: b))
        case .setAutoAddConfig: try need(2); return .setAutoAddConfig(flags: b[1], maxHops: n >= 3 ? min(b[2], 64) : nil)
        case .getAutoAddConfig: return .getAutoAddConfig
        case .getAllowedRepeatFrequencies: return .getAllowedRepeatFrequencies
        case .setPathHashMode:
            try need(3)
            if b[1] != 0 { throw .malformed(code: c, field: .data) }
            return .setPathHashMode(b[2])
        case .sendChannelData:
            try need(4)
            let p = PathLength(rawValue: b[2])
            if !p.isUnknown && !p.isValid { throw .malformed(code: c, field: .pathLength) }
            try need(5 + (p.isUnknown ? 0 : p.byteCount))
            return .sendChannelData(ChannelDataCommand(bytes: b))
        case .setDefaultFloodScope:
            return .setDefaultFloodScope(n >= 48 ? DefaultFloodScopeCommand(bytes: b) : nil)
        case .getDefaultFloodScope: return .getDefaultFloodScope
        case .sendRawPacket:
            try need(4)
            return .sendRawPacket(priority: b[1], packet: b.tail(2))
        case .runCLICommand:
            try need(3)
            return .runCLICommand(b.cField(1, n - 1))
        }
    }
}
