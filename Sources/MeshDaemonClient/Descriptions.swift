// Release builds carry no reflection metadata (-disable-reflection-metadata): a value printed
// without a description would print its type's name alone. This spells out what reflection printed.

extension DaemonRequest.ParseFailure: CustomStringConvertible {
    /// `ParseFailure(id: 3, error: ...)`, as reflection printed it.
    public var description: String { "ParseFailure(id: \(id), error: \(error))" }
}
