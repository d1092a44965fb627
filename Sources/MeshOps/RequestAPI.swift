import MeshSession

/// Each operation of the command line in the local API: its row's API name, with its arguments as
/// named fields (`set name x` is `{"op": "set", "setting": "name", "value": "x"}`), made into the request by the function
/// its row points at. Used by the daemon to run any command-line operation for an API client,
/// with the result fields of `--json`.
extension Request {
    /// Every operation reachable this way: the rows of `OperationTable` with an API name that the
    /// daemon does not answer itself. (`info`, `contacts`, `send` (through its outbox, kept across
    /// restarts), `sync` and the daemon's `status` are answered by the daemon itself, with the same
    /// fields.)
    public static let apiOps: Set<String> = Set(OperationTable.rows.filter { !$0.daemon }.compactMap(\.api))

    /// The request an API op names, from the request's fields (`OperationValues(api:fields:)`).
    public init(apiOp op: String, fields: [String: Value]) throws(ClientError) {
        self = try Request(OperationValues(api: op, fields: fields))
    }

    /// The request of an operation with its arguments' values: the one place both doors (the
    /// command line after parsing, the API after decoding its fields) turn an operation into a
    /// request, by the function its row points at (`Operation.request`). Values are by the row's
    /// names, typed and range-checked by the row; what the row cannot say (one argument or
    /// another) is checked there.
    public init(_ v: OperationValues) throws(ClientError) {
        guard let make = v.operation.request else { throw .usage("\(v.subject) is not an operation that runs as a request.") }
        do { self = try make(v) } catch let e as ClientError { throw e } catch { throw ClientError(.internal, "\(error)") }
    }

    /// A contact type by name (`contacts add --type`); nil keeps what the radio has.
    public static func contactType(_ name: String?) throws(ClientError) -> UInt8? {
        switch name {
        case nil: return nil
        case "chat": return 1
        case "repeater": return 2
        case "room": return 3
        case "sensor": return 4
        default: throw .usage("the contact type must be chat, repeater, room or sensor.")
        }
    }
}
