import MeshCompanion

/// Hex text <-> bytes, for tests, captures and logs: MeshCompanion's codec (the project's one).
public enum AirHex {
    /// Lower-case hex of `bytes`.
    public static func encode<S: Sequence>(_ bytes: S) -> String where S.Element == UInt8 { HexCodec.encode(Array(bytes)) }

    /// Bytes of a hex string (either case; spaces ignored). Nil on odd length or a non-hex digit.
    public static func decode(_ text: String) -> [UInt8]? { HexCodec.decode(text) }
}
