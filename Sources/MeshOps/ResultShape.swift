/// What a command prints with `--json`, described as data: the `result` of an operation table row.
/// `OperationTable.jsonSchema` turns the descriptions into JSON Schema (draft 2020-12), which
/// `pocketmesh ops --schema` prints and docs/json-schema.json ships; a test runs every operation
/// and validates its output against it.

/// The shape of a JSON value.
public indirect enum ResultShape: Sendable, Equatable {
    case string
    /// Lower-case hex digits (possibly none).
    case hex
    case integer
    /// Any number; whole numbers print without a fraction (`5`, not `5.0`).
    case number
    case bool
    case null
    /// One of a fixed few strings.
    case oneOf([String])
    /// A string matching this regular expression (ECMA-262, as JSON Schema's `pattern`).
    case matching(String)
    case array(ResultShape)
    /// An object with these fields; `closed`: no other field appears. One whose fields are all
    /// optional has at least one of them.
    case object([ResultField], closed: Bool)
    /// An object whose field names vary, every value of this shape (a config section, custom variables).
    case map(ResultShape)
    /// Any one of these shapes.
    case anyOf([ResultShape])
    /// A shared shape by name (`ResultShape.shared`): `$defs/NAME` of the schema.
    case ref(String)
    /// Anything (only where the value is passed through unchanged, e.g. a config file's settings).
    case any

    /// A closed object: exactly these fields (the optional ones may be missing).
    public static func object(_ fields: ResultField...) -> ResultShape { .object(fields, closed: true) }
    /// This shape or null.
    public static func nullable(_ s: ResultShape) -> ResultShape { .anyOf([s, .null]) }
    /// A shared shape.
    public static func shared(_ name: SharedShape) -> ResultShape { .ref(name.rawValue) }
    /// An array of a shared shape.
    public static func arrayOf(_ name: SharedShape) -> ResultShape { .array(.ref(name.rawValue)) }

    /// An object with `fields` before the fields of `shape` (an object shape, a shared one, or
    /// any one of several: then each gets them).
    public static func object(_ fields: [ResultField], then shape: ResultShape) -> ResultShape {
        var s = shape
        if case .ref(let name) = s, let shared = SharedShape(rawValue: name) { s = shared.shape }
        switch s {
        case .object(let more, let closed): return .object(fields + more, closed: closed)
        case .anyOf(let shapes): return .anyOf(shapes.map { .object(fields, then: $0) })
        default: return .object(fields, closed: true)
        }
    }

    /// The same object with every field optional (the parts of a result that may be cut short).
    public var allOptional: ResultShape {
        var s = self
        if case .ref(let name) = s, let shared = SharedShape(rawValue: name) { s = shared.shape }
        guard case .object(let fields, let closed) = s else { return self }
        return .object(fields.map { ResultField($0.name, $0.shape, required: false) }, closed: closed)
    }
}

/// One field of an object shape.
public struct ResultField: Sendable, Equatable {
    public var name: String
    public var shape: ResultShape
    /// Always present (it may still be null when its shape allows it).
    public var required: Bool
    /// What it means, where its name does not say (the schema's `description`).
    public var about: String?

    public init(_ name: String, _ shape: ResultShape, required: Bool = true, about: String? = nil) {
        self.name = name
        self.shape = shape
        self.required = required
        self.about = about
    }

    /// A field that is sometimes left out.
    public static func optional(_ name: String, _ shape: ResultShape, about: String? = nil) -> ResultField {
        ResultField(name, shape, required: false, about: about)
    }

    /// The field's schema: its shape's, with its description first.
    var schema: Value {
        guard let about, case .object(let fields) = shape.schema else { return shape.schema }
        return .object([("description", .string(about))] + fields)
    }
}

/// What an operation prints on stdout with `--json` when it succeeds.
public enum OperationResult: Sendable, Equatable {
    /// One JSON document.
    case json(ResultShape)
    /// JSON Lines: one document of this shape per line.
    case jsonLines(ResultShape)
    /// No JSON output (the command has no --json; what it prints is for people or shells).
    case none

    public var format: String {
        switch self {
        case .json: return "json"
        case .jsonLines: return "json-lines"
        case .none: return "none"
        }
    }

    public var shape: ResultShape? {
        switch self {
        case .json(let s), .jsonLines(let s): return s
        case .none: return nil
        }
    }
}

// MARK: JSON Schema

extension ResultShape {
    /// JSON Schema (draft 2020-12) of the shape; shared shapes are `{"$ref": "#/$defs/NAME"}`.
    public var schema: Value {
        switch self {
        case .string: return .object(["type": .string("string")])
        case .hex: return .object(["type": .string("string"), "pattern": .string("^[0-9a-f]*$")])
        case .integer: return .object(["type": .string("integer")])
        case .number: return .object(["type": .string("number")])
        case .bool: return .object(["type": .string("boolean")])
        case .null: return .object(["type": .string("null")])
        case .oneOf(let values): return .object(["type": .string("string"), "enum": .array(values.map { .string($0) })])
        case .matching(let p): return .object(["type": .string("string"), "pattern": .string(p)])
        case .array(let item): return .object(["type": .string("array"), "items": item.schema])
        case .object(let fields, let closed):
            var out: [Value.Field] = [("type", .string("object"))]
            out.append(("properties", .object(fields.map { ($0.name, $0.schema) })))
            let required = fields.filter(\.required).map { Value.string($0.name) }
            if !required.isEmpty { out.append(("required", .array(required))) }
            // Fields all optional (`get`, `stats`: what was asked for): still never `{}`.
            else if !fields.isEmpty { out.append(("minProperties", .int(1))) }
            if closed { out.append(("additionalProperties", .bool(false))) }
            return .object(out)
        case .map(let value): return .object(["type": .string("object"), "additionalProperties": value.schema])
        case .anyOf(let shapes): return .object(["anyOf": .array(shapes.map(\.schema))])
        case .ref(let name): return .object(["$ref": .string("#/$defs/\(name)")])
        case .any: return .object([Value.Field]())
        }
    }

    /// The shared shapes it names, directly or through other shared shapes.
    public func refs(into out: inout [String]) {
        switch self {
        case .array(let s), .map(let s): s.refs(into: &out)
        case .object(let fields, _): for f in fields { f.shape.refs(into: &out) }
        case .anyOf(let shapes): for s in shapes { s.refs(into: &out) }
        case .ref(let name):
            if out.contains(name) { return }
            out.append(name)
            SharedShape(rawValue: name)?.shape.refs(into: &out)
        default: break
        }
    }
}

extension OperationTable {
    /// The schema's identifier (docs/json-schema.json; a name, not a place to fetch it from).
    public static let schemaID = "urn:pocketmesh:json-output"

    /// The `$defs` name of an operation's result: `op.` and its command path, words joined by
    /// dashes (`op.contacts-list`, `op.factory-reset`).
    public static func schemaName(_ op: Operation) -> String { "op." + op.path.joined(separator: "-") }

    /// Every result as one JSON Schema document (draft 2020-12): the shared shapes and one schema
    /// per operation with JSON output under `$defs` (the error output is plain text on stderr,
    /// so it has none). What `pocketmesh ops --schema` prints and docs/json-schema.json holds.
    public static var jsonSchema: Value {
        var defs: [Value.Field] = SharedShape.allCases.map { ($0.rawValue, $0.shape.schema) }
        for op in rows {
            guard let shape = op.result.shape else { continue }
            var s: [Value.Field] = [
                ("title", .string("pocketmesh \(op.cli) --json")),
                ("description", .string(op.result.format == "json-lines"
                    ? "JSON Lines: every line of the output is one value of this schema. \(op.help)" : op.help)),
            ]
            if case .object(let fields) = shape.schema { s += fields }
            defs.append((schemaName(op), .object(s)))
        }
        return .object([
            ("$schema", .string("https://json-schema.org/draft/2020-12/schema")),
            ("$id", .string(schemaID)),
            ("title", .string("pocketmesh --json output")),
            ("description", .string("What each pocketmesh command prints on stdout with --json when it succeeds: $defs/op.COMMAND (the command's words joined by dashes), built from the operation table (`pocketmesh ops --schema`). The other $defs are shapes the commands share. A failed command prints one sentence on stderr and exits with the code of its kind of failure (see pocketmesh --help); on stdout it prints nothing, except the commands whose result tells what failed (send not acknowledged, a login rejected, cmd without a reply, a --split part, channel rekey, scan finding no radio), which print that result, of their schema, first.")),
            ("$defs", .object(defs)),
        ])
    }
}

// MARK: pretty JSON

extension Value {
    /// JSON with two-space indentation, one field or item per line (empty objects and arrays,
    /// and arrays of scalars, stay on one line); ends with a newline.
    public var prettyJSON: String {
        var out = ""
        writePretty(into: &out, indent: "")
        return out + "\n"
    }

    func writePretty(into out: inout String, indent: String) {
        switch self {
        case .array(let items) where !items.isEmpty && items.contains(where: \.isContainer):
            out += "[\n"
            for (i, v) in items.enumerated() {
                out += indent + "  "
                v.writePretty(into: &out, indent: indent + "  ")
                out += i + 1 < items.count ? ",\n" : "\n"
            }
            out += indent + "]"
        case .object(let fields) where !fields.isEmpty:
            out += "{\n"
            for (i, f) in fields.enumerated() {
                out += indent + "  "
                out += Value.quoted(f.key)
                out += ": "
                f.value.writePretty(into: &out, indent: indent + "  ")
                out += i + 1 < fields.count ? ",\n" : "\n"
            }
            out += indent + "}"
        case .array(let items) where !items.isEmpty:
            out += "["
            for (i, v) in items.enumerated() {
                if i > 0 { out += ", " }
                out += v.text
            }
            out += "]"
        default:
            out += text
        }
    }

    var isContainer: Bool {
        switch self {
        case .array, .object: return true
        default: return false
        }
    }
}
