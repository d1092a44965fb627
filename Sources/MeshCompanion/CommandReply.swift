// What the firmware answers each command with (`MyMesh::handleCmdFrame`), so that anything that
// forwards frames it did not build (the daemon's tunnel, a hub) knows when a command is done.

/// The answer a command frame gets from the radio.
public enum CommandReply: Equatable, Sendable {
    /// Exactly one response frame (code below 0x80; ERR and DISABLED included).
    case response
    /// CONTACTS_START, CONTACT…, END_OF_CONTACTS (or ERR).
    case contactListing
    /// A push-coded frame stands in for the response (self telemetry: TELEMETRY_RESPONSE).
    case push(PushCode)
    /// Nothing (REBOOT; FACTORY_RESET usually reboots before its OK is seen).
    case none

    /// The answer to `frame` (code byte first), following the firmware's length rules.
    public static func answering(_ frame: UnsafeRawBufferPointer) -> CommandReply {
        guard let first = frame.first, let code = CommandCode(rawValue: first) else { return .response }
        switch code {
        case .getContacts: return .contactListing
        case .reboot: return .none
        // `27 00 00 00` (len < 36): the radio's own telemetry, sent as a push-coded frame.
        case .sendTelemetryRequest where frame.count < 4 + CompanionLimits.publicKeySize: return .push(.telemetryResponse)
        default: return .response
        }
    }

    public static func answering(_ frame: [UInt8]) -> CommandReply {
        frame.withUnsafeBytes { answering($0) }
    }
}

extension CommandCode {
    /// Commands whose OK changes what SELF_INFO reports (name, position, radio, TX power, the
    /// SET_OTHER_PARAMS fields, the identity).
    public var changesSelfInfo: Bool {
        switch self {
        case .setAdvertName, .setAdvertLatLon, .setRadioParams, .setRadioTxPower, .setOtherParams, .importPrivateKey:
            return true
        default:
            return false
        }
    }

    /// Commands whose OK changes what DEVICE_INFO reports (BLE PIN, client repeat, path hash mode).
    public var changesDeviceInfo: Bool {
        switch self {
        case .setDevicePin, .setRadioParams, .setPathHashMode: return true
        default: return false
        }
    }
}
