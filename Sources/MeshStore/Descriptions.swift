// Release builds carry no reflection metadata (-disable-reflection-metadata): a value printed
// without a description would print its type's name alone. This spells out what reflection printed.

extension FileErrno: CustomStringConvertible {
    /// `FileErrno(code: 28)`, as reflection printed it (StoreError's description names the error).
    public var description: String { "FileErrno(code: \(code))" }
}
