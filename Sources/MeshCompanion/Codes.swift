// Companion protocol codes and limits (firmware v1.17.1, protocol version 13, and protocol 14 of the
// firmware's dev line: RUN_CLI_COMMAND, CLI_REPLY, text type 3, contact flag 0x10).

/// Command codes (app → radio), byte 0 of a command frame.
///
/// 0x2C–0x31 are parked for WiFi settings and 0x35 is unused; the firmware answers
/// them with `ERR_CODE_UNSUPPORTED_CMD`.
public enum CommandCode: UInt8, Sendable, CaseIterable {
    case appStart = 0x01
    case sendTextMessage = 0x02
    case sendChannelTextMessage = 0x03
    case getContacts = 0x04
    case getDeviceTime = 0x05
    case setDeviceTime = 0x06
    case sendSelfAdvert = 0x07
    case setAdvertName = 0x08
    case addUpdateContact = 0x09
    case syncNextMessage = 0x0A
    case setRadioParams = 0x0B
    case setRadioTxPower = 0x0C
    case resetPath = 0x0D
    case setAdvertLatLon = 0x0E
    case removeContact = 0x0F
    case shareContact = 0x10
    case exportContact = 0x11
    case importContact = 0x12
    case reboot = 0x13
    case getBatteryAndStorage = 0x14
    case setTuningParams = 0x15
    case deviceQuery = 0x16
    case exportPrivateKey = 0x17
    case importPrivateKey = 0x18
    case sendRawData = 0x19
    case sendLogin = 0x1A
    case sendStatusRequest = 0x1B
    case hasConnection = 0x1C
    case logout = 0x1D
    case getContactByKey = 0x1E
    case getChannel = 0x1F
    case setChannel = 0x20
    case signStart = 0x21
    case signData = 0x22
    case signFinish = 0x23
    case sendTracePath = 0x24
    case setDevicePin = 0x25
    case setOtherParams = 0x26
    case sendTelemetryRequest = 0x27
    case getCustomVars = 0x28
    case setCustomVar = 0x29
    case getAdvertPath = 0x2A
    case getTuningParams = 0x2B
    case sendBinaryRequest = 0x32
    case factoryReset = 0x33
    case sendPathDiscoveryRequest = 0x34
    case setFloodScopeKey = 0x36
    case sendControlData = 0x37
    case getStats = 0x38
    case sendAnonRequest = 0x39
    case setAutoAddConfig = 0x3A
    case getAutoAddConfig = 0x3B
    case getAllowedRepeatFrequencies = 0x3C
    case setPathHashMode = 0x3D
    case sendChannelData = 0x3E
    case setDefaultFloodScope = 0x3F
    case getDefaultFloodScope = 0x40
    case sendRawPacket = 0x41
    /// Protocol 14: runs the radio's own CLI; answered with `CLI_REPLY` (older firmware: ERR 1).
    case runCLICommand = 0x42
}

/// Response codes (radio → app, below 0x80): the one reply to a command.
public enum ResponseCode: UInt8, Sendable, CaseIterable {
    case ok = 0x00
    case error = 0x01
    case contactsStart = 0x02
    case contact = 0x03
    case endOfContacts = 0x04
    case selfInfo = 0x05
    case sent = 0x06
    /// Legacy contact message, queued before the app announced version 3.
    case contactMessageLegacy = 0x07
    /// Legacy channel message, queued before the app announced version 3.
    case channelMessageLegacy = 0x08
    case currentTime = 0x09
    case noMoreMessages = 0x0A
    case exportContact = 0x0B
    case batteryAndStorage = 0x0C
    case deviceInfo = 0x0D
    case privateKey = 0x0E
    case disabled = 0x0F
    case contactMessage = 0x10
    case channelMessage = 0x11
    case channelInfo = 0x12
    case signStart = 0x13
    case signature = 0x14
    case customVars = 0x15
    case advertPath = 0x16
    case tuningParams = 0x17
    case stats = 0x18
    case autoAddConfig = 0x19
    case allowedRepeatFrequencies = 0x1A
    case channelData = 0x1B
    case defaultFloodScope = 0x1C
    /// Protocol 14: the reply text of `RUN_CLI_COMMAND`.
    case cliReply = 0x1D
}

/// Push codes (radio → app, 0x80 and above): unsolicited, may arrive between any two frames.
public enum PushCode: UInt8, Sendable, CaseIterable {
    /// Whether a frame code is a push (the high bit set), known to this version or not.
    @inlinable public static func isPush(_ code: UInt8) -> Bool { code & 0x80 != 0 }

    case advert = 0x80
    case pathUpdated = 0x81
    case sendConfirmed = 0x82
    case messageWaiting = 0x83
    case rawData = 0x84
    case loginSuccess = 0x85
    case loginFail = 0x86
    case statusResponse = 0x87
    case logRxData = 0x88
    case traceData = 0x89
    case newAdvert = 0x8A
    case telemetryResponse = 0x8B
    case binaryResponse = 0x8C
    case pathDiscoveryResponse = 0x8D
    case controlData = 0x8E
    case contactDeleted = 0x8F
    case contactsFull = 0x90
}

extension PushCode {
    /// The push's name in output and events (the firmware's constant in lower case).
    public var name: String {
        switch self {
        case .advert: return "advert"
        case .pathUpdated: return "path_updated"
        case .sendConfirmed: return "send_confirmed"
        case .messageWaiting: return "message_waiting"
        case .rawData: return "raw_data"
        case .loginSuccess: return "login_success"
        case .loginFail: return "login_fail"
        case .statusResponse: return "status_response"
        case .logRxData: return "log_rx_data"
        case .traceData: return "trace_data"
        case .newAdvert: return "new_advert"
        case .telemetryResponse: return "telemetry_response"
        case .binaryResponse: return "binary_response"
        case .pathDiscoveryResponse: return "path_discovery_response"
        case .controlData: return "control_data"
        case .contactDeleted: return "contact_deleted"
        case .contactsFull: return "contacts_full"
        }
    }
}

/// The error byte of a `RESP_CODE_ERR` frame (`[0x01, err]`).
public enum RadioErrorCode: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case unsupportedCommand = 1
    case notFound = 2
    case tableFull = 3
    case badState = 4
    case fileIOError = 5
    case illegalArgument = 6

    /// The firmware's constant name, e.g. `ERR_CODE_NOT_FOUND`.
    public var name: String {
        switch self {
        case .unsupportedCommand: return "ERR_CODE_UNSUPPORTED_CMD"
        case .notFound: return "ERR_CODE_NOT_FOUND"
        case .tableFull: return "ERR_CODE_TABLE_FULL"
        case .badState: return "ERR_CODE_BAD_STATE"
        case .fileIOError: return "ERR_CODE_FILE_IO_ERROR"
        case .illegalArgument: return "ERR_CODE_ILLEGAL_ARG"
        }
    }

    /// What the radio means by it, in words a person can act on.
    public var meaning: String {
        switch self {
        case .unsupportedCommand: return "unsupported command or bad length (the firmware may be too old)"
        case .notFound: return "not found (unknown contact, bad channel index or no advert path)"
        case .tableFull: return "table full (packet pool, queue or contacts full, or text too long)"
        case .badState: return "bad state (a listing is already running, or signing was not started)"
        case .fileIOError: return "file I/O error on the radio"
        case .illegalArgument: return "illegal argument (value out of range or clock going backwards)"
        }
    }

    public var description: String { "\(name) (\(rawValue)): \(meaning)" }
}

/// Protocol limits and constants, in the firmware's units.
public enum CompanionLimits {
    /// Companion protocol version this module implements (`FIRMWARE_VER_CODE`).
    public static let protocolVersion: UInt8 = 13
    /// The protocol version of the firmware's dev line ("Companion CLI"): RUN_CLI_COMMAND and
    /// CLI_REPLY, text type 3 (a CLI command to a companion), contact flag 0x10 (remote CLI
    /// permission), and SEND_RAW_DATA's path length encoded like every other path length.
    public static let protocolVersionCLI: UInt8 = 14
    /// Largest companion frame payload (`MAX_FRAME_SIZE`).
    public static let maxFrameSize = 176
    /// The most contacts a client takes from a radio's listing, whatever it says it holds:
    /// DEVICE_INFO gives max-contacts as half its value in one byte (at most 510).
    public static let contactsCeiling = 512
    /// Transport header: marker byte plus u16 LE length.
    public static let transportHeaderSize = 3
    /// Longest direct or channel text in bytes (`MAX_TEXT_LEN`).
    public static let maxTextLength = 160
    /// Longest direct text when attempt > 3 (two hidden bytes follow the text).
    public static let maxTextLengthHighAttempt = 158
    /// Longest node or contact name in bytes (32-byte field with NUL).
    public static let maxNameLength = 31
    /// Longest channel name in bytes.
    public static let maxChannelNameLength = 31
    /// Longest login password in bytes.
    public static let maxPasswordLength = 15
    /// Public key size.
    public static let publicKeySize = 32
    /// Private key size (expanded orlp key).
    public static let privateKeySize = 64
    /// Signature size.
    public static let signatureSize = 64
    /// Channel secret size (only 128-bit secrets are supported).
    public static let channelSecretSize = 16
    /// Largest path in bytes (`MAX_PATH_SIZE`).
    public static let maxPathSize = 64
    /// Largest hop count encodable in a path length.
    public static let maxHopCount = 63
    /// Size of a contact record frame (incl. code).
    public static let contactRecordSize = 148
    /// Minimum ADD_UPDATE_CONTACT size that the firmware reads completely.
    public static let contactRecordMinimumSize = 136
    /// Largest anon request data.
    public static let maxAnonRequestData = 132
    /// Largest binary request data (limited by the frame size).
    public static let maxBinaryRequestData = 143
    /// Largest channel datagram payload via the companion (`MAX_FRAME_SIZE - 9`).
    public static let maxChannelDataLength = 163
    /// Largest on-air packet (`MAX_TRANS_UNIT`).
    public static let maxPacketSize = 255
    /// Largest on-air payload (`MAX_PACKET_PAYLOAD`).
    public static let maxPacketPayload = 184
    /// Sign buffer of the radio.
    public static let maxSignDataLength = 8192
    /// Radio parameter ranges accepted by SET_RADIO_PARAMS.
    public static let frequencyRangeKHz: ClosedRange<UInt32> = 150_000...2_500_000
    public static let bandwidthRangeHz: ClosedRange<UInt32> = 7_000...500_000
    public static let spreadingFactorRange: ClosedRange<UInt8> = 5...12
    public static let codingRateRange: ClosedRange<UInt8> = 5...8
    /// Lowest TX power accepted; the highest is the radio's `max_tx_power` from SELF_INFO.
    public static let minTxPowerDbm: Int8 = -9
    /// Device PIN: 0 (default) or a 6-digit number.
    public static let pinRange: ClosedRange<UInt32> = 100_000...999_999
    /// Latitude and longitude in micro-degrees.
    public static let latitudeRange: ClosedRange<Int32> = -90_000_000...90_000_000
    public static let longitudeRange: ClosedRange<Int32> = -180_000_000...180_000_000
    /// Longest default flood scope name (NUL-terminated in a 31-byte field).
    public static let maxFloodScopeNameLength = 30
}
