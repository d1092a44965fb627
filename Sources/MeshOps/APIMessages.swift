import MeshNet
import MeshSession

// The local API's messages: one JSON object per line, in both directions.
//
//   request   {"id":1,"op":"send","to":"alice","text":"hi"}
//   response  {"id":1,"ok":true,"message":{...}}
//             {"id":1,"ok":false,"error":{"code":"timeout","exit":4,"message":"no ACK from alice after 3 attempts"}}
//   event     {"event":"message","message":{...}}       (only after {"op":"subscribe"})

/// Why a request failed: the command line's error kinds and exit codes (MeshSession.ErrorKind),
/// so a command routed through the daemon exits exactly as it would on a directly opened link.
public typealias DaemonErrorCode = ErrorKind

/// The daemon's errors are the project's one error type.
public typealias DaemonError = ClientError

extension ClientError {
    public var json: JSON {
        .obj(("code", .string(kind.rawValue)), ("exit", .int(Int64(kind.exitCode))), ("message", .string(message)))
    }

    public init?(json: JSON) {
        guard let c = json["code"]?.string else { return nil }
        self.init(ErrorKind(rawValue: c) ?? .internal, json["message"]?.string ?? c)
    }
}

/// The operations the daemon answers. Arguments are named fields of the request object; each op's
/// fields and class are its row of the operation table (`OperationTable.daemonRow(api:)`: a command's
/// row marked `daemon`, or one of `OperationTable.apiOnly`), read with `DaemonRequest.values()`.
public enum DaemonOp: String, Sendable, CaseIterable {
    case ping          // -> {"pid":N,"version":"..."}
    case status        // -> link state, radio, outbox size, hook cursor
    case info          // -> the radio's self info
    case contacts      // -> {"contacts":[...]}
    case channels      // -> {"channels":[...]}
    case send          // to, text, [wait] -> {"message":{...}} (queued in the outbox; with wait, after ACK)
    case sync          // drain the radio's message queue now
    case chats         // -> {"chats":[...]}
    case history       // thread, [limit], [before] -> {"messages":[...]}
    case outbox        // -> {"outbox":[...]}
    case hooksFailed = "hooks_failed"  // -> {"failed":[{"id","attempts","reason","retrying","message"}...]}
    case hooksRetry = "hooks_retry"    // message: run a given-up message's hook again -> {"message":N,"retrying":true}
    case hooksDrop = "hooks_drop"      // message: forget a given-up message (its hook does not run again) -> {"message":N,"dropped":true}
    case contactsPending = "contacts_pending"         // -> {"result":[...]}: adverts of nodes that are not contacts
    case contactsAddPending = "contacts_add_pending"  // prefix: add one as a contact with its advert's data
    case contactsFlushPending = "contacts_flush_pending"  // forget every pending advert -> {"dropped": N}
    case samplesSignal = "samples_signal"    // [since], [limit] -> {"samples":[{"time","kind","snr","rssi",...}],"capacity":N}
    case samplesBattery = "samples_battery"  // [since], [limit] -> {"samples":[{"time","millivolts",...}],"capacity":N}
    case subscribe     // [log_rx] -> {"subscribed":true}, then event lines
    case tunnel        // -> {"tunnel":true,...}; then the connection carries companion frames (see APIServer)
    /// Any operation of the command line (`Request.apiOps`, e.g. `contacts_remove`, `set`, `login`):
    /// run by a worker through the daemon's own tunnel; the result has the fields of `--json`.
    case operation
}

/// A parsed request. `id` is echoed in the response; `args` is the whole request object.
public struct DaemonRequest: Sendable {
    public var id: Int64
    public var op: DaemonOp
    public var args: JSON
    /// The op as the client named it (for `.operation`, the command path, e.g. `contacts_remove`).
    public var name: String { args["op"]?.string ?? op.rawValue }

    public init(id: Int64, op: DaemonOp, args: JSON = .object([])) {
        self.id = id
        self.op = op
        let name = op == .operation ? (args["op"]?.string ?? op.rawValue) : op.rawValue
        var pairs: [(String, JSON)] = [("id", .int(id)), ("op", .string(name))]
        if case .object(let extra) = args {
            for (k, v) in extra where k != "id" && k != "op" { pairs.append((k, v)) }
        }
        self.args = .object(pairs)
    }

    /// Parses one request line. Errors carry the request id when it could be read (else 0).
    /// A request that could not be parsed: the id when it could be read (else 0) and why.
    public struct ParseFailure: Error {
        public var id: Int64
        public var error: DaemonError
        init(_ id: Int64, _ error: DaemonError) {
            self.id = id
            self.error = error
        }
    }

    public static func parse(line: UnsafeRawBufferPointer) -> Result<DaemonRequest, ParseFailure> {
        let value: JSON
        do {
            value = try JSONParser.parse(line)
        } catch {
            return .failure(ParseFailure(0, DaemonError(.usage, "request is not valid JSON: \(error)")))
        }
        guard case .object = value else {
            return .failure(ParseFailure(0, DaemonError(.usage, "request must be a JSON object like {\"id\":1,\"op\":\"ping\"}")))
        }
        let id: Int64
        switch value["id"] {
        case nil, .null?: id = 0
        case let v?:
            guard let i = v.int else { return .failure(ParseFailure(0, DaemonError(.usage, "\"id\" must be an integer"))) }
            id = i
        }
        guard let opName = value["op"]?.string else {
            return .failure(ParseFailure(id, DaemonError(.usage, "request has no \"op\" string")))
        }
        // `status` with a node's name is the command line's `status NAME`, not the daemon's status.
        let asCommand = opName == "status" && value["name"] != nil
        let native = asCommand ? nil : DaemonOp(rawValue: opName)
        guard let op = native ?? (Request.apiOps.contains(opName) || asCommand ? .operation : nil), op != .operation || opName != "operation" else {
            let known = (DaemonOp.allCases.filter { $0 != .operation }.map(\.rawValue) + Request.apiOps.sorted()).joined(separator: ", ")
            return .failure(ParseFailure(id, DaemonError(.unsupported, "unknown op \"\(opName)\" (known: \(known))")))
        }
        return .success(DaemonRequest(id: id, op: op, args: value))
    }

    /// The fields of an op the daemon answers itself, typed and checked by its row of the
    /// operation table (`OperationValues(daemonAPI:fields:)`): an unknown field, a value of the
    /// wrong type and a missing one are usage errors naming the op and the field, as for every op.
    public func values() throws(DaemonError) -> OperationValues {
        try OperationValues(daemonAPI: op.rawValue, fields: fields)
    }

    /// The request's fields as values (`id` and `op` too).
    public var fields: [String: Value] {
        var out: [String: Value] = [:]
        if case .object(let pairs) = args { for (k, v) in pairs { out[k] = v } }
        return out
    }

    public var line: String { args.text }
}

/// A response line.
public struct DaemonResponse: Sendable {
    public var id: Int64
    public var result: Result<[(String, JSON)], DaemonError>

    public init(id: Int64, ok fields: [(String, JSON)] = []) {
        self.id = id
        self.result = .success(fields)
    }

    public init(id: Int64, error: DaemonError) {
        self.id = id
        self.result = .failure(error)
    }

    public var json: JSON {
        switch result {
        case .success(let fields):
            return .object([("id", .int(id)), ("ok", .bool(true))] + fields)
        case .failure(let e):
            return .object([("id", .int(id)), ("ok", .bool(false)), ("error", e.json)])
        }
    }

    /// Reads a response object (as parsed from a line); nil if the line is an event, not a response.
    public init?(json: JSON) {
        guard let ok = json["ok"]?.bool else { return nil }
        id = json["id"]?.int ?? 0
        if ok {
            guard case .object(let pairs) = json else { return nil }
            result = .success(pairs.filter { $0.0 != "id" && $0.0 != "ok" })
        } else {
            result = .failure(json["error"].flatMap(DaemonError.init(json:)) ?? DaemonError(.internal, "error without details"))
        }
    }

    public subscript(key: String) -> JSON? {
        guard case .success(let fields) = result else { return nil }
        for (k, v) in fields where k == key { return v }
        return nil
    }
}

// Release builds carry no reflection metadata (-disable-reflection-metadata): a value printed
// without a description would print its type's name alone. This spells out what reflection printed.
extension DaemonRequest.ParseFailure: CustomStringConvertible {
    /// `ParseFailure(id: 3, error: ...)`, as reflection printed it.
    public var description: String { "ParseFailure(id: \(id), error: \(error))" }
}
