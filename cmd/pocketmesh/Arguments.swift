import MeshOps
import MeshSession

// The command line's commands, without a parsing library: each is a type with a configuration
// (its name, its subcommands) and a run that takes its arguments' values, which the parser
// (CommandParser.swift) reads, types, checks and defaults from the command's row in the operation
// table (MeshOps' OperationTable). A radio command reads them by name from those values; a local
// command may also hold them in property wrappers that name their row argument
// (`@Option("hook-concurrency")`): the wrappers only hold values, bound by that name (a test
// checks every command's wrappers against its row).

/// A command's arguments, or a group of them shared by several commands (`LinkOptions`).
protocol ParsableArguments {
    init()
    mutating func validate() throws
}

extension ParsableArguments {
    mutating func validate() throws {}
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

// MARK: what the declarations may say (the rest is the table's)

/// How a repeatable positional argument takes its values: the remaining ones, or (`daemon
/// hook-exec`) everything after it as it is, including what looks like options.
enum ArgumentArrayParsingStrategy { case remaining, captureForPassthrough }

// MARK: values

/// A type an argument's text converts to.
protocol ExpressibleByArgument {
    init?(argument: String)
}

extension String: ExpressibleByArgument { init?(argument: String) { self = argument } }
extension Int: ExpressibleByArgument { init?(argument: String) { self.init(argument) } }
extension UInt8: ExpressibleByArgument { init?(argument: String) { self.init(argument) } }
extension UInt16: ExpressibleByArgument { init?(argument: String) { self.init(argument) } }
extension UInt32: ExpressibleByArgument { init?(argument: String) { self.init(argument) } }
extension UInt64: ExpressibleByArgument { init?(argument: String) { self.init(argument) } }
extension Double: ExpressibleByArgument { init?(argument: String) { self.init(argument) } }

/// What the parser gives a wrapper: the texts given for its argument (none: its default).
protocol ArgumentSlot: AnyObject {
    /// The row's name of its argument (`hook-concurrency`, `<contact>`'s `contact`): the parser
    /// binds it by name, whatever the property is called or where it is declared.
    var name: String { get }
    var slotKind: OperationArgument.Kind { get }
    /// Sets the value from the texts given (one per occurrence; a flag's count is their number).
    /// Throws the text that does not convert.
    func assign(_ texts: [String]) throws(SlotError)
    /// Whether a value is needed (no default and not optional).
    var needsValue: Bool { get }
}

enum SlotError: Error { case invalid(String) }

/// Values that may be absent or repeated.
protocol ArgumentValueShape {
    associatedtype Element: ExpressibleByArgument
    static func make(_ texts: [String]) throws(SlotError) -> Self?
    static var isOptional: Bool { get }
}

private func convert<E: ExpressibleByArgument>(_ t: String, _: E.Type) throws(SlotError) -> E {
    guard let v = E(argument: t) else { throw .invalid(t) }
    return v
}

@propertyWrapper
final class Option<Value>: ArgumentSlot {
    var wrappedValue: Value {
        get { value! }
        set { value = newValue }
    }
    private var value: Value?
    private let parse: ([String]) throws(SlotError) -> Value?
    let needsValue: Bool
    let name: String

    var slotKind: OperationArgument.Kind { .option }

    func assign(_ texts: [String]) throws(SlotError) {
        if let v = try parse(texts) { value = v }
    }

    /// `@Option var timeout: Double = 5`
    init(wrappedValue: Value, _ name: String)
    where Value: ExpressibleByArgument {
        self.name = name
        value = wrappedValue
        needsValue = false
        parse = { (texts: [String]) throws(SlotError) -> Value? in
            guard let last = texts.last else { return nil }
            return try convert(last, Value.self)
        }
        SlotRegistry.created(self)
    }

    /// `@Option var count: Int` (required)
    init(_ name: String)
    where Value: ExpressibleByArgument {
        self.name = name
        value = nil
        needsValue = true
        parse = { (texts: [String]) throws(SlotError) -> Value? in
            guard let last = texts.last else { return nil }
            return try convert(last, Value.self)
        }
        SlotRegistry.created(self)
    }

    /// `@Option var secret: String?` (an optional property starts as nil)
    init<T: ExpressibleByArgument>(wrappedValue: T?, _ name: String) where Value == T? {
        self.name = name
        value = .some(wrappedValue)
        needsValue = false
        parse = { (texts: [String]) throws(SlotError) -> Value? in
            guard let last = texts.last else { return nil }
            return .some(try convert(last, T.self))
        }
        SlotRegistry.created(self)
    }

    init<T: ExpressibleByArgument>(_ name: String) where Value == T? {
        self.name = name
        value = .some(nil)
        needsValue = false
        parse = { (texts: [String]) throws(SlotError) -> Value? in
            guard let last = texts.last else { return nil }
            return .some(try convert(last, T.self))
        }
        SlotRegistry.created(self)
    }

    /// `@Option var mqtt: [String] = []` (repeatable)
    init<T: ExpressibleByArgument>(wrappedValue: [T], _ name: String) where Value == [T] {
        self.name = name
        value = wrappedValue
        needsValue = false
        parse = { (texts: [String]) throws(SlotError) -> Value? in
            if texts.isEmpty { return nil }
            var out: [T] = []
            for t in texts { out.append(try convert(t, T.self)) }
            return out
        }
        SlotRegistry.created(self)
    }

    /// `@Option var members: [String]` (repeatable, at least once)
    init<T: ExpressibleByArgument>(_ name: String) where Value == [T] {
        self.name = name
        value = nil
        needsValue = true
        parse = { (texts: [String]) throws(SlotError) -> Value? in
            if texts.isEmpty { return nil }
            var out: [T] = []
            for t in texts { out.append(try convert(t, T.self)) }
            return out
        }
        SlotRegistry.created(self)
    }
}

@propertyWrapper
final class Argument<Value>: ArgumentSlot {
    var wrappedValue: Value {
        get { value! }
        set { value = newValue }
    }
    private var value: Value?
    private let parse: ([String]) throws(SlotError) -> Value?
    let needsValue: Bool
    let name: String

    var slotKind: OperationArgument.Kind { .positional }

    func assign(_ texts: [String]) throws(SlotError) {
        if let v = try parse(texts) { value = v }
    }

    init(wrappedValue: Value, _ name: String) where Value: ExpressibleByArgument {
        self.name = name
        value = wrappedValue
        needsValue = false
        parse = { (texts: [String]) throws(SlotError) -> Value? in
            guard let first = texts.first else { return nil }
            return try convert(first, Value.self)
        }
        SlotRegistry.created(self)
    }

    init(_ name: String) where Value: ExpressibleByArgument {
        self.name = name
        value = nil
        needsValue = true
        parse = { (texts: [String]) throws(SlotError) -> Value? in
            guard let first = texts.first else { return nil }
            return try convert(first, Value.self)
        }
        SlotRegistry.created(self)
    }

    init<T: ExpressibleByArgument>(wrappedValue: T?, _ name: String) where Value == T? {
        self.name = name
        value = .some(wrappedValue)
        needsValue = false
        parse = { (texts: [String]) throws(SlotError) -> Value? in
            guard let first = texts.first else { return nil }
            return .some(try convert(first, T.self))
        }
        SlotRegistry.created(self)
    }

    init<T: ExpressibleByArgument>(_ name: String) where Value == T? {
        self.name = name
        value = .some(nil)
        needsValue = false
        parse = { (texts: [String]) throws(SlotError) -> Value? in
            guard let first = texts.first else { return nil }
            return .some(try convert(first, T.self))
        }
        SlotRegistry.created(self)
    }

    init<T: ExpressibleByArgument>(wrappedValue: [T], _ name: String, parsing: ArgumentArrayParsingStrategy = .remaining)
    where Value == [T] {
        self.name = name
        value = wrappedValue
        needsValue = false
        parse = { (texts: [String]) throws(SlotError) -> Value? in
            if texts.isEmpty { return nil }
            var out: [T] = []
            for t in texts { out.append(try convert(t, T.self)) }
            return out
        }
        SlotRegistry.created(self)
    }

    init<T: ExpressibleByArgument>(_ name: String, parsing: ArgumentArrayParsingStrategy = .remaining) where Value == [T] {
        self.name = name
        value = nil
        needsValue = parsing != .captureForPassthrough
        if parsing == .captureForPassthrough { value = [] }
        parse = { (texts: [String]) throws(SlotError) -> Value? in
            if texts.isEmpty { return nil }
            var out: [T] = []
            for t in texts { out.append(try convert(t, T.self)) }
            return out
        }
        SlotRegistry.created(self)
    }
}

@propertyWrapper
final class Flag: ArgumentSlot {
    var wrappedValue: Bool
    let name: String

    var slotKind: OperationArgument.Kind { .flag }
    var needsValue: Bool { false }

    func assign(_ texts: [String]) throws(SlotError) {
        if !texts.isEmpty { wrappedValue = true }
    }

    init(wrappedValue: Bool = false, _ name: String) {
        self.wrappedValue = wrappedValue
        self.name = name
        SlotRegistry.created(self)
    }
}

@propertyWrapper
struct OptionGroup<Value: ParsableArguments> {
    var wrappedValue: Value
    init() {
        wrappedValue = Value()
        SlotRegistry.created(group: wrappedValue)
    }
}

/// The wrappers of a command (and of its groups, inline), in declaration order: a command's stored
/// properties are initialised in that order, and each wrapper notes itself while
/// `CommandParser.instantiate` makes the command. (No reflection: the binary carries none.)
enum SlotRegistry {
    nonisolated(unsafe) static var slots: [ArgumentSlot]? = nil
    nonisolated(unsafe) static var groups: [ParsableArguments] = []

    static func created(_ slot: ArgumentSlot) { slots?.append(slot) }
    /// A group is noted after its own wrappers (and groups): innermost first.
    static func created(group: ParsableArguments) { if slots != nil { groups.append(group) } }
}
