// Descriptions for the types whose values are printed (log lines, errors, output). Release builds
// carry no reflection metadata (-disable-reflection-metadata), so a value printed without a
// description would print its type's name instead of its case: these spell out what reflection
// printed, byte for byte (Tests check every case).

extension RouteType: CustomStringConvertible {
    /// The case's name.
    public var description: String {
        switch self {
        case .transportFlood: return "transportFlood"
        case .flood: return "flood"
        case .direct: return "direct"
        case .transportDirect: return "transportDirect"
        }
    }
}

extension PayloadType: CustomStringConvertible {
    /// The case's name.
    public var description: String {
        switch self {
        case .req: return "req"
        case .response: return "response"
        case .txtMsg: return "txtMsg"
        case .ack: return "ack"
        case .advert: return "advert"
        case .grpTxt: return "grpTxt"
        case .grpData: return "grpData"
        case .anonReq: return "anonReq"
        case .path: return "path"
        case .trace: return "trace"
        case .multipart: return "multipart"
        case .control: return "control"
        case .reserved0C: return "reserved0C"
        case .reserved0D: return "reserved0D"
        case .reserved0E: return "reserved0E"
        case .rawCustom: return "rawCustom"
        }
    }
}

extension AirError: CustomStringConvertible {
    /// The case's name, and the version of `unsupportedVersion`.
    public var description: String {
        switch self {
        case .unsupportedVersion(let v): return "unsupportedVersion(\(v))"
        case .truncated: return "truncated"
        case .tooLong: return "tooLong"
        case .reservedHashSize: return "reservedHashSize"
        case .invalidPath: return "invalidPath"
        case .payloadTooLong: return "payloadTooLong"
        case .packetTooLong: return "packetTooLong"
        case .invalidField: return "invalidField"
        case .invalidKey: return "invalidKey"
        case .reservedKeyPrefix: return "reservedKeyPrefix"
        case .macMismatch: return "macMismatch"
        case .badSignature: return "badSignature"
        case .noMatchingSecret: return "noMatchingSecret"
        case .cryptoFailure: return "cryptoFailure"
        }
    }
}
