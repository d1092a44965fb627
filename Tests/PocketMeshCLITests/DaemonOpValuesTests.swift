@testable import MeshDaemon
import MeshDaemonClient
import MeshNet
import MeshOps
import MeshSession
import Testing
import MeshLink

/// The ops the daemon answers itself (`send`, `history`, `hooks_retry`, its `status` ...) read
/// their fields through their rows of the operation table, as every other op does: the same
/// names, types, defaults and usage errors.
@Suite struct DaemonOpValuesTests {
    static func request(_ op: DaemonOp, _ fields: [String: Value]) -> DaemonRequest {
        DaemonRequest(id: 9, op: op, args: .object(fields.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }))
    }

    static func failure(_ op: DaemonOp, _ fields: [String: Value]) -> String {
        do throws(DaemonError) {
            _ = try request(op, fields).values()
            return ""
        } catch {
            return error.kind == .usage ? error.message : "\(error.kind): \(error.message)"
        }
    }

    /// Every op the daemon answers has a row (a command's marked `daemon`, or one of the API's
    /// own), its class is the row's, and it decodes from fields made from its own arguments.
    @Test func everyDaemonOpDecodesFromItsOwnArguments() throws {
        var checked = 0
        for op in DaemonOp.allCases where op != .operation {
            guard let row = OperationTable.daemonRow(api: op.name) else { Issue.record("no row for \(op.name)"); continue }
            #expect(row.daemon, "\(op.name)")
            #expect(row.opClass != nil && row.opClass == op.operationClass, "\(op.name)")
            var fields: [String: Value] = ["id": .integer(9), "op": .string(op.name)]
            for a in row.apiArguments { fields[a.apiField] = CommandLineParsing.OperationValuesTests.sample(a).field }
            let v = try Self.request(op, fields).values()
            #expect(v.operation.api == op.name)
            for a in row.apiArguments {
                #expect(v[a.name] != nil, "\(op.name): \(a.apiField)")
            }
            // And with only what is required.
            var least: [String: Value] = [:]
            for a in row.apiArguments where a.required { least[a.apiField] = CommandLineParsing.OperationValuesTests.sample(a).field }
            _ = try Self.request(op, least).values()
            checked += 1
        }
        #expect(checked == DaemonOp.allCases.count - 1)
        // Every row marked as the daemon's is an op the daemon answers.
        for row in OperationTable.rows + OperationTable.apiOnly where row.daemon {
            #expect(row.daemonOp != nil && DaemonOp(name: row.api ?? "") == row.daemonOp, "\(row.cli) \(row.api ?? "")")
        }
        for row in OperationTable.apiOnly { #expect(row.path.isEmpty && row.daemon, "\(row.api ?? "")") }
    }

    /// The fields as the daemon reads them: the API's names (`message` for a hook's message,
    /// `wait`, `log_rx`), typed, with the row's defaults.
    @Test func theFieldsAsTheDaemonReadsThem() throws {
        let send = try Self.request(.send, ["to": .string("alice"), "text": .string("hi there"), "wait": .bool(true)]).values()
        #expect(send.string("to") == "alice")
        #expect(send.words("text") == "hi there")
        #expect(send.flag("wait"))
        let queued = try Self.request(.send, ["to": .string("alice"), "text": .string("hi")]).values()
        #expect(!queued.flag("wait"))
        let history = try Self.request(.history, ["thread": .string("Public")]).values()
        #expect(history["limit"] == .integer(50))
        #expect(history["before"] == nil)
        let paged = try Self.request(.history, ["thread": .string("0"), "limit": .integer(10), "before": .integer(42)]).values()
        #expect(paged["limit"] == .integer(10))
        #expect(paged["before"] == .integer(42))
        let retry = try Self.request(.hooksRetry, ["id": .integer(4), "message": .integer(3)]).values()
        let id: UInt64? = retry.integer("id")
        #expect(id == 3)
        let rx = try Self.request(.subscribe, ["log_rx": .bool(true)]).values()
        #expect(rx.flag("log-rx"))
        let plain = try Self.request(.subscribe, [:]).values()
        #expect(!plain.flag("log-rx"))
        let add = try Self.request(.contactsAddPending, ["prefix": .string("ab12")]).values()
        #expect(add.string("prefix") == "ab12")
        // The daemon's status takes no field; `status` with a node's name is the command's.
        let status = try Self.request(.status, [:]).values()
        #expect(status.values.isEmpty)
    }

    @Test func badFieldsAreUsageErrorsNamingTheOpAndTheField() {
        #expect(Self.failure(.send, ["to": .string("a"), "text": .string("b"), "wiat": .bool(true)])
                == "send: unknown field \"wiat\"; it takes \"to\", \"text\" and \"wait\".")
        #expect(Self.failure(.send, ["to": .string("a"), "text": .string("b"), "no_wait": .bool(true)]).hasPrefix("send: unknown field \"no_wait\""))
        #expect(Self.failure(.send, ["text": .string("b")]) == "send: missing \"to\".")
        #expect(Self.failure(.send, ["to": .string("a")]) == "send: missing \"text\".")
        #expect(Self.failure(.send, ["to": .string("a"), "text": .string("b"), "wait": .string("maybe")])
                == "send: \"wait\" must be true or false, not \"maybe\".")
        #expect(Self.failure(.history, [:]) == "history: missing \"thread\".")
        #expect(Self.failure(.history, ["thread": .string("x"), "limit": .string("ten")])
                == "history: \"limit\" must be a whole number, not \"ten\".")
        #expect(Self.failure(.history, ["thread": .string("x"), "state_dir": .string("/tmp")]).hasPrefix("history: unknown field \"state_dir\""))
        #expect(Self.failure(.hooksRetry, [:]) == "hooks_retry: missing \"message\".")
        #expect(Self.failure(.hooksDrop, ["message": .string("three")]) == "hooks_drop: \"message\" must be a whole number, not \"three\".")
        #expect(Self.failure(.ping, ["now": .bool(true)]) == "ping: unknown field \"now\"; it takes none.")
        #expect(Self.failure(.status, ["verbose": .bool(true)]) == "status: unknown field \"verbose\"; it takes none.")
        #expect(Self.failure(.contacts, ["geojson": .bool(true)]) == "contacts: unknown field \"geojson\"; it takes none.")
        #expect(Self.failure(.contactsPending, ["clear": .bool(true)]) == "contacts_pending: unknown field \"clear\"; it takes none.")
        #expect(Self.failure(.contactsAddPending, [:]) == "contacts_add_pending: missing \"prefix\".")
        #expect(Self.failure(.subscribe, ["log_rx": .string("maybe")]) == "subscribe: \"log_rx\" must be true or false, not \"maybe\".")
        #expect(Self.failure(.tunnel, ["frames": .integer(1)]) == "tunnel: unknown field \"frames\"; it takes none.")
        // They stay out of the command-line ops' requests.
        #expect(CommandLineParsing.OperationValuesTests.apiError("history", ["thread": .string("x")]) == "unknown operation \"history\".")
    }

    /// A hook's message id must be positive: the row's range, checked with the fields.
    @Test func aHookMessageIdIsPositive() {
        #expect(Self.failure(.hooksRetry, ["message": .integer(0)]) == "hooks_retry: \"message\" must be at least 1, not 0.")
    }
}
