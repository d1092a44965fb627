/// Everything that can be wrong with on-air bytes or keys. Parsers and builders throw these,
/// they never trap on outside input.
public enum AirError: Error, Equatable, Sendable {
    /// Fewer bytes than the layout needs.
    case truncated
    /// More bytes than the layout allows.
    case tooLong
    /// Header version bits other than 0 (only v1 packets are accepted).
    case unsupportedVersion(UInt8)
    /// Encoded path_len with hash-size bits 0b11 (reserved).
    case reservedHashSize
    /// Path bytes above 64, hop count above 63, or a hash size outside 1...3.
    case invalidPath
    /// Payload above 184 bytes.
    case payloadTooLong
    /// Whole packet above 255 bytes.
    case packetTooLong
    /// A field holds a value the layout does not allow.
    case invalidField
    /// A key has the wrong length or is not a valid curve point.
    case invalidKey
    /// A public key starting with 0x00 or 0xFF (the firmware never uses those).
    case reservedKeyPrefix
    /// The 2-byte MAC does not verify with the given secret.
    case macMismatch
    /// The Ed25519 signature does not verify.
    case badSignature
    /// No candidate secret decrypted the datagram.
    case noMatchingSecret
    /// A primitive failed (key agreement produced a low-order point, ...).
    case cryptoFailure
}
