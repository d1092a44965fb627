// Typed errors for encoding and decoding companion frames.

/// A parameter or field of a companion frame, named in errors.
public enum CompanionField: String, Sendable {
    case frame, code, text, name, appName, password, frequency, bandwidth, spreadingFactor, codingRate
    case txPower, pin, latitude, longitude, channelSecret, channelName, channelIndex, path, pathLength
    case payload, data, dataType, hashSize, traceHashes, privateKey, advertPacket, rawPacket, key
    case customVarName, customVarValue, statsType, contact, maxHops, pathHashMode, floodScopeName
    case telemetry, textType, attempt, prefix, frequencyRange
}

/// A command, response or push could not be encoded: a firmware limit would be broken.
/// Nothing was sent.
public enum CompanionEncodeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// `field` is `length` bytes; at most `limit` are allowed.
    case tooLong(CompanionField, length: Int, limit: Int)
    /// `field` is `length` bytes; at least `minimum` are needed.
    case tooShort(CompanionField, length: Int, minimum: Int)
    /// `field` must be exactly `expected` bytes.
    case wrongLength(CompanionField, length: Int, expected: Int)
    /// `field` is `value`, outside `allowed`.
    case outOfRange(CompanionField, value: Int64, allowed: ClosedRange<Int64>)
    /// `field` has a value the firmware rejects (e.g. a reserved path hash size).
    case invalid(CompanionField)
    /// The frame would exceed 176 bytes.
    case frameTooLarge(length: Int)

    public var description: String {
        switch self {
        case let .tooLong(f, length, limit):
            return "\(f.rawValue) is \(length) bytes; the radio accepts at most \(limit), shorten it"
        case let .tooShort(f, length, minimum):
            return "\(f.rawValue) is \(length) bytes; the radio needs at least \(minimum)"
        case let .wrongLength(f, length, expected):
            return "\(f.rawValue) is \(length) bytes; it must be exactly \(expected)"
        case let .outOfRange(f, value, allowed):
            return "\(f.rawValue) \(value) is out of range; use \(allowed.lowerBound)...\(allowed.upperBound)"
        case let .invalid(f):
            return "\(f.rawValue) has a value the radio rejects"
        case let .frameTooLarge(length):
            return "the frame would be \(length) bytes; the limit is \(CompanionLimits.maxFrameSize)"
        }
    }
}

/// A received frame could not be decoded. Never a trap: every outside byte is checked.
public enum CompanionDecodeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A zero-length frame.
    case empty
    /// The frame with `code` is `length` bytes; its layout needs at least `minimum`.
    case truncated(code: UInt8, length: Int, minimum: Int)
    /// A field of the frame with `code` is inconsistent (e.g. a length byte pointing past the end).
    case malformed(code: UInt8, field: CompanionField)
    /// More than 176 bytes.
    case tooLong(length: Int)

    public var description: String {
        switch self {
        case .empty: return "empty frame"
        case let .truncated(code, length, minimum):
            return "frame 0x\(HexCodec.encode([code])) is \(length) bytes, needs at least \(minimum)"
        case let .malformed(code, field):
            return "frame 0x\(HexCodec.encode([code])) has a bad \(field.rawValue)"
        case let .tooLong(length):
            return "frame is \(length) bytes; the limit is \(CompanionLimits.maxFrameSize)"
        }
    }
}

/// A LPP telemetry payload could not be read further.
public enum LPPError: Error, Equatable, Sendable {
    /// A type the reader does not know; the rest of the payload cannot be sized.
    case unknownType(type: UInt8, offset: Int)
    /// The value for `type` needs more bytes than remain.
    case truncated(type: UInt8, offset: Int)
}
