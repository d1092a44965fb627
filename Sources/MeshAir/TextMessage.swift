/// `txt_type` in the flags byte of a TXT_MSG plaintext (`TxtDataHelpers.h`).
public enum TextType: UInt8, Sendable, CaseIterable {
    case plain = 0
    case cliData = 1
    case signedPlain = 2
}
