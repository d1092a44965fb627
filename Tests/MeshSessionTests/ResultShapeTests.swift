import MeshOps
import Testing

/// The operation table's result descriptions and the JSON Schema made from them (`ops --schema`).
/// Tests/interop/test_json_schema.py runs every operation and validates its output against it.
@Suite struct ResultShapeTests {
    /// A row prints JSON exactly when it takes --json (`chat` takes the link options but is interactive).
    @Test func jsonResultIffJSONFlag() {
        for row in OperationTable.rows {
            let takesJSON = row.args.contains { $0.name == "json" }
            if row.cli == "chat" { #expect(row.result == .none); continue }
            #expect(takesJSON == (row.result != .none), "\(row.cli)")
        }
        #expect(OperationTable.row(["listen"])?.result.format == "json-lines")
        #expect(OperationTable.row(["info"])?.result.format == "json")
    }

    /// Every shared shape a result names exists, and the schema has one definition per JSON row.
    @Test func definitionsComplete() {
        guard case .object(let top)? = Optional(OperationTable.jsonSchema),
              case .object(let defs)? = top.first(where: { $0.key == "$defs" })?.value else {
            Issue.record("no $defs")
            return
        }
        let names = defs.map(\.key)
        #expect(Set(names).count == names.count)
        for s in SharedShape.allCases { #expect(names.contains(s.rawValue), "\(s)") }
        for row in OperationTable.rows {
            var refs: [String] = []
            row.result.shape?.refs(into: &refs)
            for r in refs { #expect(SharedShape(rawValue: r) != nil, "\(row.cli): \(r)") }
            #expect(names.contains(OperationTable.schemaName(row)) == (row.result != .none), "\(row.cli)")
        }
        #expect(OperationTable.schemaName(OperationTable.row(["contacts", "reset-path"])!) == "op.contacts-reset-path")
    }

    /// The schema of each kind of shape, byte for byte.
    @Test func schemaVectors() {
        let shape: ResultShape = .object(
            ResultField("name", .string), .optional("key", .hex), ResultField("hops", .nullable(.integer)),
            ResultField("kind", .oneOf(["a", "b"])), .optional("tags", .map(.string)), ResultField("c", .shared(.channel)))
        #expect(shape.schema.json == ##"{"type":"object","properties":{"name":{"type":"string"},"key":{"type":"string","pattern":"^[0-9a-f]*$"},"hops":{"anyOf":[{"type":"integer"},{"type":"null"}]},"kind":{"type":"string","enum":["a","b"]},"tags":{"type":"object","additionalProperties":{"type":"string"}},"c":{"$ref":"#/$defs/channel"}},"required":["name","hops","kind","c"],"additionalProperties":false}"##)
        #expect(ResultShape.array(.number).schema.json == #"{"type":"array","items":{"type":"number"}}"#)
        #expect(ResultShape.object([ResultField("x", .any)], closed: false).schema.json
            == #"{"type":"object","properties":{"x":{}},"required":["x"]}"#)
        #expect(ResultShape.object(ResultField("x", .integer, about: "X."), .optional("r", .shared(.ok), about: "R.")).schema.json
            == ##"{"type":"object","properties":{"x":{"description":"X.","type":"integer"},"r":{"description":"R.","$ref":"#/$defs/ok"}},"required":["x"],"additionalProperties":false}"##)
        #expect(ResultShape.contactType.schema.json == #"{"type":"string","pattern":"^(none|chat|repeater|room|sensor|type[0-9]+)$"}"#)
    }

    /// No result's schema takes `{}`: every object with fields requires some, or at least one
    /// (`get` and `stats` print what was asked for, all of it optional). Walks the whole schema.
    @Test func noObjectSchemaAcceptsAnEmptyObject() {
        var loose: [String] = []
        func walk(_ v: Value, _ path: String) {
            switch v {
            case .object(let fields):
                if v["type"] == .string("object"), case .object(let props)? = v["properties"], !props.isEmpty,
                   v["required"] == nil, v["minProperties"] == nil {
                    loose.append(path)
                }
                for f in fields { walk(f.value, path + "/" + f.key) }
            case .array(let items):
                for (i, x) in items.enumerated() { walk(x, path + "/\(i)") }
            default: break
            }
        }
        walk(OperationTable.jsonSchema, "")
        #expect(loose.isEmpty, "objects that accept {}: \(loose)")
        #expect(OperationTable.row(["get"])?.result.shape?.schema["minProperties"] == .int(1))
        #expect(OperationTable.row(["stats"])?.result.shape?.schema["minProperties"] == .int(1))
        #expect(ResultShape.object(.optional("a", .integer), .optional("b", .string)).schema.json
            == #"{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"minProperties":1,"additionalProperties":false}"#)
    }

    @Test func prettyJSON() {
        let v: Value = .object([("a", .array([.int(1), .int(2)])), ("b", .object([("c", .null)])),
                                ("d", .array([])), ("e", .object([Value.Field]())),
                                ("f", .array([.object([("g", .bool(true))])]))])
        #expect(v.prettyJSON == """
            {
              "a": [1, 2],
              "b": {
                "c": null
              },
              "d": [],
              "e": {},
              "f": [
                {
                  "g": true
                }
              ]
            }

            """)
    }

    /// `ops --json` names each row's result, after the fields it always had.
    @Test func opsJSONHasTheResult() {
        let send = OperationTable.row(["send"])!.value
        #expect(send["result"] == .object([("format", .string("json")), ("schema", .string("op.send"))]))
        #expect(OperationTable.row(["completions"])!.value["result"] == .object([("format", .string("none"))]))
        guard case .object(let fields) = send else { return }
        #expect(fields.map(\.key) == ["cli", "api", "class", "daemon", "help", "discussion", "args", "result"])
    }
}
