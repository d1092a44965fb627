/// Attribute Protocol (Bluetooth Core Vol 3 Part F) constants used by the GATT client and the
/// simulated GATT server.
public enum ATTOpcode: UInt8, Sendable {
    case errorResponse = 0x01
    case exchangeMTURequest = 0x02
    case exchangeMTUResponse = 0x03
    case findInformationRequest = 0x04
    case findInformationResponse = 0x05
    case findByTypeValueRequest = 0x06
    case findByTypeValueResponse = 0x07
    case readByTypeRequest = 0x08
    case readByTypeResponse = 0x09
    case readRequest = 0x0A
    case readResponse = 0x0B
    case readByGroupTypeRequest = 0x10
    case readByGroupTypeResponse = 0x11
    case writeRequest = 0x12
    case writeResponse = 0x13
    case handleValueNotification = 0x1B
    case handleValueIndication = 0x1D
    case handleValueConfirmation = 0x1E
    case writeCommand = 0x52

    /// Requests the peer must answer (commands have bit 6 set and are never answered).
    var isRequest: Bool {
        switch self {
        case .exchangeMTURequest, .findInformationRequest, .findByTypeValueRequest, .readByTypeRequest,
             .readRequest, .readByGroupTypeRequest, .writeRequest:
            return true
        default:
            return false
        }
    }
}

/// ATT error codes (Error Response, 4th byte).
public struct ATTErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let invalidHandle = ATTErrorCode(rawValue: 0x01)
    public static let readNotPermitted = ATTErrorCode(rawValue: 0x02)
    public static let writeNotPermitted = ATTErrorCode(rawValue: 0x03)
    public static let invalidPDU = ATTErrorCode(rawValue: 0x04)
    public static let insufficientAuthentication = ATTErrorCode(rawValue: 0x05)
    public static let requestNotSupported = ATTErrorCode(rawValue: 0x06)
    public static let invalidOffset = ATTErrorCode(rawValue: 0x07)
    public static let insufficientAuthorization = ATTErrorCode(rawValue: 0x08)
    public static let prepareQueueFull = ATTErrorCode(rawValue: 0x09)
    public static let attributeNotFound = ATTErrorCode(rawValue: 0x0A)
    public static let attributeNotLong = ATTErrorCode(rawValue: 0x0B)
    public static let insufficientEncryptionKeySize = ATTErrorCode(rawValue: 0x0C)
    public static let invalidAttributeValueLength = ATTErrorCode(rawValue: 0x0D)
    public static let unlikelyError = ATTErrorCode(rawValue: 0x0E)
    public static let insufficientEncryption = ATTErrorCode(rawValue: 0x0F)
    public static let unsupportedGroupType = ATTErrorCode(rawValue: 0x10)
    public static let insufficientResources = ATTErrorCode(rawValue: 0x11)

    /// The link must be paired/encrypted before this attribute can be used.
    public var needsPairing: Bool {
        self == .insufficientAuthentication || self == .insufficientEncryption
            || self == .insufficientEncryptionKeySize || self == .insufficientAuthorization
    }

    public var description: String {
        let name: String
        switch self {
        case .invalidHandle: name = "invalid handle"
        case .readNotPermitted: name = "read not permitted"
        case .writeNotPermitted: name = "write not permitted"
        case .invalidPDU: name = "invalid PDU"
        case .insufficientAuthentication: name = "insufficient authentication"
        case .requestNotSupported: name = "request not supported"
        case .invalidOffset: name = "invalid offset"
        case .insufficientAuthorization: name = "insufficient authorization"
        case .prepareQueueFull: name = "prepare queue full"
        case .attributeNotFound: name = "attribute not found"
        case .attributeNotLong: name = "attribute not long"
        case .insufficientEncryptionKeySize: name = "insufficient encryption key size"
        case .invalidAttributeValueLength: name = "invalid attribute value length"
        case .unlikelyError: name = "unlikely error"
        case .insufficientEncryption: name = "insufficient encryption"
        case .unsupportedGroupType: name = "unsupported group type"
        case .insufficientResources: name = "insufficient resources"
        default: name = rawValue >= 0x80 ? "application error" : "error"
        }
        return "\(name) (0x\(hex(rawValue)))"
    }
}

/// A Bluetooth UUID, stored big-endian (as written); ATT carries it little-endian.
public struct BluetoothUUID: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]  // 16 bytes, big-endian

    public init?(_ text: String) {
        let digits = text.utf8.filter { $0 != UInt8(ascii: "-") }
        guard digits.count == 32 else { return nil }
        var bytes: [UInt8] = []
        var index = digits.startIndex
        while index < digits.endIndex {
            guard let high = hexValue(digits[index]), let low = hexValue(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        self.bytes = bytes
    }

    init(bigEndian bytes: [UInt8]) { self.bytes = bytes }

    /// A 16-bit SIG UUID on the Bluetooth base UUID.
    public init(short: UInt16) {
        bytes = [0, 0, UInt8(short >> 8), UInt8(short & 0xFF),
                 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0x80, 0x5F, 0x9B, 0x34, 0xFB]
    }

    /// From ATT wire order: 2 or 16 bytes little-endian.
    public init?(littleEndian raw: UnsafeRawBufferPointer) {
        if raw.count == 2 {
            self.init(short: UInt16(raw[0]) | UInt16(raw[1]) << 8)
        } else if raw.count == 16 {
            self.init(bigEndian: raw.reversed())
        } else {
            return nil
        }
    }

    public var littleEndianBytes: [UInt8] { bytes.reversed() }

    /// The 16-bit value if this UUID is on the base UUID.
    public var short: UInt16? {
        guard bytes[0] == 0, bytes[1] == 0, Array(bytes[4...]) == Array(BluetoothUUID(short: 0).bytes[4...]) else { return nil }
        return UInt16(bytes[2]) << 8 | UInt16(bytes[3])
    }

    public var description: String {
        var text = ""
        for (index, byte) in bytes.enumerated() {
            if [4, 6, 8, 10].contains(index) { text += "-" }
            text += hex(byte).uppercased()
        }
        return text
    }

    public static let primaryService = BluetoothUUID(short: 0x2800)
    public static let characteristic = BluetoothUUID(short: 0x2803)
    public static let clientCharacteristicConfiguration = BluetoothUUID(short: 0x2902)
    /// Nordic UART service and its characteristics (MeshCore companion BLE).
    public static let nordicUARTService = BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!
    public static let nordicUARTRX = BluetoothUUID("6E400002-B5A3-F393-E0A9-E50E24DCCA9E")!
    public static let nordicUARTTX = BluetoothUUID("6E400003-B5A3-F393-E0A9-E50E24DCCA9E")!
}

/// Characteristic properties (the byte in a characteristic declaration).
public struct GATTProperties: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let read = GATTProperties(rawValue: 0x02)
    public static let writeWithoutResponse = GATTProperties(rawValue: 0x04)
    public static let write = GATTProperties(rawValue: 0x08)
    public static let notify = GATTProperties(rawValue: 0x10)
    public static let indicate = GATTProperties(rawValue: 0x20)
}

func hex(_ byte: UInt8) -> String {
    let digits = Array("0123456789abcdef")
    return String([digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
}

func hexValue(_ c: UInt8) -> UInt8? {
    switch c {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
    default: return nil
    }
}

extension UnsafeRawBufferPointer {
    @inline(__always)
    func u16(at offset: Int) -> UInt16 { UInt16(self[offset]) | UInt16(self[offset + 1]) << 8 }
}

extension Array where Element == UInt8 {
    @inline(__always)
    mutating func appendU16(_ value: UInt16) {
        append(UInt8(value & 0xFF))
        append(UInt8(value >> 8))
    }
}
