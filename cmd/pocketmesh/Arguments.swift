import MeshOps
import MeshSession

// The command line's commands, without a parsing library: each is a type with a configuration
// (its name, the subcommands that are types) and a run that takes its arguments' values, which
// the parser (CommandParser.swift) reads, types, checks and defaults from the command's row in the
// operation table (MeshOps' OperationTable). A command reads them by the row's names
// (`var seconds: Double? { args.number("for") }`); a row that only runs its request needs no type
// at all (`RequestCommand`).

/// A command's arguments, or a group of them shared by several commands (`LinkOptions`): made
/// from the values the parser read by the command's row (read by the row's names).
protocol ParsableArguments {
    init(_ args: OperationValues)
    mutating func validate() throws
}

extension ParsableArguments {
    mutating func validate() throws {}
}

/// A command or group that holds none of its values (a radio command reads them in `run`).
protocol Stateless {
    init()
}

extension ParsableArguments where Self: Stateless {
    init(_ args: OperationValues) { self.init() }
}

/// A command of the tree.
protocol ParsableCommand: ParsableArguments {
    static var configuration: CommandConfiguration { get }
    /// Runs the command with its arguments' values (by the row's names, typed and checked by it).
    mutating func run(_ args: OperationValues) throws
}

extension ParsableCommand {
    static var configuration: CommandConfiguration { CommandConfiguration() }
    /// A group run without a subcommand (and without a default one) prints its help.
    mutating func run(_ args: OperationValues) throws { throw CleanExit.helpRequest(CommandType(type: Self.self)) }
    static var _commandName: String { configuration.commandName ?? "" }
}

/// A command's place in the tree (its help and arguments are its row of the operation table).
struct CommandConfiguration {
    var commandName: String?
    var version: String
    var shouldDisplay: Bool
    var subcommands: [ParsableCommand.Type]
    var aliases: [String]

    init(commandName: String? = nil, version: String = "",
         shouldDisplay: Bool = true, subcommands: [ParsableCommand.Type] = [],
         aliases: [String] = []) {
        self.commandName = commandName
        self.version = version
        self.shouldDisplay = shouldDisplay
        self.subcommands = subcommands
        self.aliases = aliases
    }
}

/// A usage error of a command's own checks (`validate()`): exit 2, "See --help".
struct ValidationError: Error, CustomStringConvertible {
    var message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}

/// Ends the program with this status, printing nothing more.
struct ExitCode: Error, Equatable {
    var rawValue: Int32
    init(_ code: Int32) { rawValue = code }
    init(rawValue: Int32) { self.rawValue = rawValue }
    static let success = ExitCode(0)
    static let failure = ExitCode(1)
    static let validationFailure = ExitCode(2)
}

/// Help or the version was asked for: printed, exit 0.
enum CleanExit: Error {
    case helpRequest(CommandType)
    case message(String)
}

/// A command's type in an error (errors are Sendable; a metatype is never mutated).
struct CommandType: @unchecked Sendable {
    let type: ParsableCommand.Type
}

extension OperationValues {
    /// A whole number as the property's type (the row's range fits it).
    func whole<T: FixedWidthInteger>(_ name: String) -> T? {
        self[name]?.intValue.map { T(clamping: $0) }
    }

    /// A repeatable whole number's values.
    func wholes(_ name: String) -> [Int] {
        guard case .array(let items)? = self[name] else { return whole(name).map { [$0] } ?? [] }
        return items.compactMap { $0.intValue.map { Int(clamping: $0) } }
    }
}
