import MeshCompanion

/// What is secret, in one table, for every door (the API socket, the hub, MQTT): the command
/// frames whose class is `secret`, the bytes of reply frames and the fields of results that hold a
/// secret (with what an operation's row declares, `Operation.secret`), and the settings whose value
/// is one. A door that does not allow `secret` (every MQTT
/// bridge, a hub listener without `allow=secret`) never receives them: a secret command is refused
/// (`OperationClass`), a reply frame has its secret bytes zeroed (`redacted(reply:)`, the layout
/// the firmware uses for an empty slot), a result has its secret fields left out
/// (`isSecretField`), and an op whose result is nothing but a secret is refused (`answersWithSecret`).
/// The local API socket (mode 0600, the daemon's own user) gets everything.
public enum Secrets {
    /// Command frames of class `secret`: the private key (export, import) and signing with it.
    /// `OperationClass(command:)` gives these `secret` (a test checks that the two agree).
    public static let commands: Set<CommandCode> = [.exportPrivateKey, .importPrivateKey, .signStart, .signData, .signFinish]

    /// A run of secret bytes in a reply frame (offsets from the response code at 0).
    public struct FrameField: Sendable, Equatable {
        public var code: ResponseCode
        public var bytes: Range<Int>
        /// The field's name in results (`get`, `channel_list`, ...).
        public var name: String
    }

    /// Reply frames with secret bytes: DEVICE_INFO's BLE PIN, PRIVATE_KEY's key, CHANNEL_INFO's
    /// channel secret, SIGNATURE's signature (made with the node's key).
    public static let replyFields: [FrameField] = [
        FrameField(code: .deviceInfo, bytes: 4..<8, name: "ble_pin"),
        FrameField(code: .privateKey, bytes: 1..<65, name: "private_key"),
        FrameField(code: .channelInfo, bytes: 34..<50, name: "secret"),
        FrameField(code: .signature, bytes: 1..<65, name: "signature"),
    ]

    /// Result fields that hold a secret in every op's result, at any depth: channel secrets, the
    /// BLE PIN (`get pin`, `get`), keys, passwords, signatures by the node's key.
    public static let resultFields: Set<String> = ["secret", "pin", "ble_pin", "private_key", "password", "signature"]

    /// Settings whose value is a secret: `set` does not echo it, `get` gives it only where secrets go.
    public static let settings: Set<String> = ["pin"]

    /// Whether `name` is a secret field of `op`'s result.
    public static func isSecretField(_ name: String, op: String?) -> Bool {
        if resultFields.contains(name) { return true }
        switch op.flatMap({ OperationTable.row(api: $0)?.secret }) {
        case .fields(let f)?, .answer(let f)?: return f.contains(name)
        default: return false
        }
    }

    /// Whether `name` is a field of `op`'s result that holds a reply frame as hex.
    public static func isFrameField(_ name: String, op: String?) -> Bool {
        if case .frames(let f)? = op.flatMap({ OperationTable.row(api: $0)?.secret }) { return f.contains(name) }
        return false
    }

    /// Whether `op`'s answer is a secret and nothing else: refused at a door without `secret`.
    public static func answersWithSecret(_ op: String) -> Bool {
        if case .answer? = OperationTable.row(api: op)?.secret { return true }
        return false
    }

    /// A reply frame with its secret bytes zeroed (the same frame when it has none).
    public static func redacted(reply frame: [UInt8]) -> [UInt8] {
        guard let code = frame.first, !replyFields.isEmpty else { return frame }
        var out = frame
        for f in replyFields where f.code.rawValue == code && f.bytes.lowerBound < out.count {
            for i in f.bytes.lowerBound..<min(f.bytes.upperBound, out.count) { out[i] = 0 }
        }
        return out
    }

    /// Whether a reply frame holds secret bytes (that are not all zero already).
    public static func holdsSecret(reply frame: [UInt8]) -> Bool {
        guard let code = frame.first else { return false }
        return replyFields.contains { f in
            f.code.rawValue == code && f.bytes.lowerBound < frame.count
                && frame[f.bytes.lowerBound..<min(f.bytes.upperBound, frame.count)].contains { $0 != 0 }
        }
    }
}

/// What of an operation's result is secret besides the fields secret in every result
/// (`Secrets.resultFields`), as its row declares it (`Operation.secret`).
public enum ResultSecret: Sendable {
    case none
    /// These fields of its result hold a secret (a channel's link carries the channel's; a
    /// contact's does not).
    case fields([String])
    /// Its answer is a secret and nothing else (these fields): refused at a door without `secret`.
    case answer([String])
    /// These fields hold a reply frame as hex: given with the frame's secret bytes zeroed.
    case frames([String])
}
