import MeshSession

/// The values of one operation's arguments, by the names its row gives them (`contact`,
/// `repeats-wait`), each typed as the row says: `.string`, `.integer` (a whole number), `.double`
/// (a number), `.bool` (a flag, or on/off), or an array of them for a repeatable argument; an
/// argument not given and without a default is absent. Both doors make one, with the row's types,
/// choices, defaults and required arguments checked the same way: the command line from the
/// words it parsed for each argument (`init(commandLine:texts:)`), the local API (and MQTT
/// commands) from a request's fields (`init(api:fields:)`). `Request(_:)` turns it into the request.
public struct OperationValues: Sendable {
    /// Which door the values came through: what the messages call an argument.
    public enum Door: Sendable { case commandLine, api }

    public let operation: Operation
    public let door: Door
    public private(set) var values: [String: Value]

    /// The values of an API request: its fields (all but `id` and `op`) are the operation's
    /// arguments by their API names (`OperationArgument.apiField`); an unknown field, a value of
    /// the wrong type or out of the choices, and a missing required one are usage errors naming
    /// the op and the field.
    public init(api op: String, fields: [String: Value]) throws(ClientError) {
        guard let row = OperationTable.row(api: op), !row.daemon else { throw .usage("unknown operation \"\(op)\".") }
        try self.init(row, op, fields: fields)
    }

    /// The values of a request for an op the daemon answers itself (`OperationTable.daemonRow(api:)`:
    /// `send`, `history`, `hooks_retry`, the daemon's `status` ...), checked the same way.
    public init(daemonAPI op: String, fields: [String: Value]) throws(ClientError) {
        guard let row = OperationTable.daemonRow(api: op) else { throw .usage("unknown operation \"\(op)\".") }
        try self.init(row, op, fields: fields)
    }

    private init(_ row: Operation, _ op: String, fields: [String: Value]) throws(ClientError) {
        operation = row
        door = .api
        values = [:]
        let args = row.apiArguments
        var given: [String: String] = [:]  // argument name → the field that gave it
        for key in fields.keys.sorted() where key != "id" && key != "op" {
            guard let a = args.first(where: { $0.isNamed(apiField: key) }) else {
                let known = args.map { "\"\($0.apiField)\"" }
                throw .usage("\(op): unknown field \"\(key)\"; " + (known.isEmpty ? "it takes none." : "it takes \(Self.list(known, "and")).") )
            }
            guard let v = fields[key], v != .null else { continue }
            if let other = given[a.name] { throw .usage("\(op): \"\(other)\" and \"\(key)\" are the same argument: give one.") }
            given[a.name] = key
            values[a.name] = try typed(v, a, field: key)
        }
        try complete(args, defaults: { $0.apiDefault ?? $0.defaultValue })
    }

    /// The values of a command line: the words given for each argument (by name; a flag's are its
    /// occurrences), as the parser read them. An option given more than once keeps its last value.
    public init(commandLine row: Operation, texts: [String: [String]]) throws(ClientError) {
        operation = row
        door = .commandLine
        values = [:]
        for a in row.args {
            guard let t = texts[a.name], !t.isEmpty else { continue }
            if a.kind == .flag { values[a.name] = .bool(true); continue }
            values[a.name] = try Self.commandLine(a, t, as: "--" + a.name)
        }
        try complete(row.args, defaults: \.defaultValue)
    }

    /// The value of the words given for `a` on a command line (`shown`: the option as typed, for
    /// messages): its last (an option) or first (a positional), or all of them (repeatable).
    public static func commandLine(_ a: OperationArgument, _ t: [String], as shown: String) throws(ClientError) -> Value {
        let given: Value = a.repeatable ? .array(t.map { .string($0) }) : .string(a.kind == .option ? t[t.count - 1] : t[0])
        return try typed(given, a, door: .commandLine, subject: "", shown: shown)
    }

    /// Defaults for what was not given, then the required arguments.
    private mutating func complete(_ args: [OperationArgument], defaults: (OperationArgument) -> String?) throws(ClientError) {
        for a in args where values[a.name] == nil {
            if let d = defaults(a) {
                values[a.name] = try typed(.string(d), a, field: door == .api ? a.apiField : "--" + a.name)
            } else if a.required || (door == .api && a.apiRequired) {
                throw .usage(door == .api ? "\(subject): missing \"\(a.apiField)\"." : "missing \(label(a.name)).")
            }
        }
    }

    // MARK: reading them (by the table's names)

    /// The op as messages name it: its API name, or its command path.
    public var subject: String { door == .api ? (operation.api ?? operation.cli) : operation.cli }

    /// An argument as messages name it: `"public_key"` (API), `<public-key>` or `--repeats-wait`.
    public func label(_ name: String) -> String {
        guard let a = operation.args.first(where: { $0.name == name }) ?? operation.apiOnly.first(where: { $0.name == name }) else { return name }
        if door == .api { return "\"\(a.apiField)\"" }
        return a.kind == .positional ? "<\(a.name)>" : "--\(a.name)"
    }

    /// A usage error about one argument: `channel_send: "repeats_wait" must be …` or `--repeats-wait must be …`.
    public func usage(_ name: String, _ text: String) -> ClientError {
        .usage(door == .api ? "\(subject): \(label(name)) \(text)" : "\(label(name)) \(text)")
    }

    public subscript(_ name: String) -> Value? { values[name] }

    /// A string argument (a required one is always there once the values are made).
    public func string(_ name: String) -> String? { values[name]?.stringValue }

    public func required(_ name: String) throws(ClientError) -> String {
        guard let s = string(name) else { throw usage(name, "is missing.") }
        return s
    }

    /// A repeatable argument's values joined by spaces (the words of a text or a command).
    public func words(_ name: String) -> String? { strings(name).map { $0.joined(separator: " ") } }

    public func strings(_ name: String) -> [String]? {
        guard case .array(let items)? = values[name] else { return string(name).map { [$0] } }
        return items.compactMap(\.stringValue)
    }

    public func flag(_ name: String) -> Bool { values[name] == .bool(true) }

    public func number(_ name: String) -> Double? { values[name]?.doubleValue }

    /// A whole number (the row's range is checked: it fits the type the row's range fits).
    public func integer<T: FixedWidthInteger>(_ name: String) -> T? { values[name]?.intValue.flatMap { T(exactly: $0) } }

    // MARK: typing

    /// A value as the argument's type: what a field or a word may be for each.
    private func typed(_ v: Value, _ a: OperationArgument, field: String) throws(ClientError) -> Value {
        try Self.typed(v, a, door: door, subject: subject, shown: field)
    }

    /// A value given for `a` (a command line's words: `shown` is the option as typed, `-t` or
    /// `--tcp`; the API's field: `shown` is the field), typed and checked as its row says: the one
    /// check of every argument's type, choices and range, for both doors.
    public static func typed(_ v: Value, _ a: OperationArgument, door: Door, subject: String, shown: String) throws(ClientError) -> Value {
        if a.repeatable, a.kind != .flag {
            guard case .array(let items) = v else { return .array([try scalar(v, a, door, subject, shown)]) }
            var out: [Value] = []
            for item in items { out.append(try scalar(item, a, door, subject, shown)) }
            return .array(out)
        }
        return try scalar(v, a, door, subject, shown)
    }

    private static func scalar(_ v: Value, _ a: OperationArgument, _ door: Door, _ subject: String, _ field: String) throws(ClientError) -> Value {
        let name = a.kind == .positional ? "<\(a.name)>" : field
        func wrong(_ text: String) -> ClientError {
            door == .api ? .usage("\(subject): \"\(field)\" \(text)") : .usage("\(name) \(text)")
        }
        /// The command line's words that are no number, as ArgumentParser said it.
        func invalid() -> ClientError {
            let s = v.stringValue ?? ""
            return .usage("The value '\(s)' is invalid for '\(a.kind == .option ? "\(field) <\(a.valueName ?? "value")>" : name + (a.repeatable ? " ..." : ""))'")
        }
        func inRange(_ d: Double, _ out: Value) throws(ClientError) -> Value {
            guard let r = a.range, !r.contains(d) else { return out }
            let lo = Value.formatDouble(r.lowerBound)
            let hi = Value.formatDouble(r.upperBound)
            // Two whole numbers side by side are a choice: "must be 13 or 14".
            let pair = a.type == .integer && r.upperBound == r.lowerBound + 1
            throw wrong((r.upperBound.isInfinite ? "must be at least \(lo)" : pair ? "must be \(lo) or \(hi)" : "must be \(lo) to \(hi)")
                        + ", not \(Value.formatDouble(d)).")
        }
        let shown: String
        switch v {
        case .string(let s): shown = "\"\(s)\""
        case .integer(let i): shown = String(i)
        case .double(let d): shown = Value.formatDouble(d)
        case .bool(let b): shown = b ? "true" : "false"
        default: shown = door == .api ? "a list or an object" : "that"
        }
        switch a.type {
        case .string:
            let s: String
            switch v {
            case .string(let t): s = t
            case .integer(let i): s = String(i)
            case .double(let d): s = Value.formatDouble(d)
            case .bool(let b): s = b ? "on" : "off"
            default: throw wrong("must be a string" + (a.repeatable ? " or a list of strings." : "."))
            }
            if !a.choices.isEmpty, !a.choices.contains(s), !a.hiddenChoices.contains(s) {
                throw wrong("takes \(Self.list(a.choices, "or")), not \"\(s)\".")
            }
            return .string(s)
        case .integer:
            switch v {
            case .integer(let i): return try inRange(Double(i), v)
            case .double(let d) where d.isFinite && d.rounded() == d && abs(d) < 9e18: return try inRange(d, .integer(Int64(d)))
            case .string(let s): if let i = Int64(s) { return try inRange(Double(i), .integer(i)) }
            default: break
            }
            if door == .commandLine { throw invalid() }
            throw wrong("must be a whole number, not \(shown).")
        case .number:
            var d: Double? = nil
            switch v {
            case .integer(let i): d = Double(i)
            case .double(let x): d = x
            case .string(let s): d = Double(s)
            default: break
            }
            guard let d else { throw door == .commandLine ? invalid() : wrong("must be a number, not \(shown).") }
            guard d.isFinite, abs(d) <= 1e9 else {
                if door == .commandLine {
                    throw .usage("\(a.kind == .positional ? "" : field + ": ")\(d) is not a usable number here: give a finite number no larger than 1000000000.")
                }
                throw wrong("must be a finite number no larger than 1000000000, not \(Value.formatDouble(d)).")
            }
            return try inRange(d, .double(d))
        case .bool:
            switch v {
            case .bool: return v
            case .integer(0): return .bool(false)
            case .integer(1): return .bool(true)
            case .string(let s):
                switch s.lowercased() {
                case "on", "yes", "true", "1": return .bool(true)
                case "off", "no", "false", "0": return .bool(false)
                default: break
                }
            default: break
            }
            throw wrong(a.kind == .flag ? "must be true or false, not \(shown)." : "must be on or off (true or false), not \(shown).")
        }
    }

    /// `a, b or c`.
    static func list(_ items: [String], _ last: String) -> String {
        items.count <= 1 ? items.joined() : items.dropLast().joined(separator: ", ") + " \(last) " + items[items.count - 1]
    }
}
