// Release builds carry no reflection metadata (-disable-reflection-metadata): a value printed
// without a description would print its type's name alone. These spell out what reflection printed.

extension ExitCode: CustomStringConvertible {
    var description: String { "ExitCode(rawValue: \(rawValue))" }
}

extension CleanExit: CustomStringConvertible {
    var description: String {
        switch self {
        case .helpRequest(let command): return "helpRequest(\(_typeName(command.type, qualified: true)))"
        case .message(let text): return "message(\(String(reflecting: text)))"
        }
    }
}

