import MeshDaemonClient
import MeshNet
import Testing
@testable import MeshDaemon
import MeshLink
import MeshOps

/// The daemon's own answers read their fields through the operation table before anything else:
/// a bad field is the usage error every op gives, whether or not the radio is there (this daemon
/// never reaches one), and a good request gets as far as the radio or the store.
@Suite struct DaemonFieldsTests {
    static func answer(_ d: Daemon, _ line: String) -> (code: String, message: String) {
        let req: DaemonRequest
        switch Array(line.utf8).withUnsafeBytes({ DaemonRequest.parse(line: $0) }) {
        case .success(let r): req = r
        case .failure(let f): return (f.error.kind.rawValue, f.error.message)
        }
        guard let r = d.handle(req, .api(1)) else { return ("", "no answer yet") }
        switch r.result {
        case .success: return ("ok", "")
        case .failure(let e): return (e.kind.rawValue, e.message)
        }
    }

    @Test func badFieldsAreRefusedFirst() throws {
        let dir = temporaryDirectory("pm-fields")
        defer { removeTree(dir) }
        var c = Daemon.Config(link: "tcp:127.0.0.1:1")
        c.environment = ["XDG_RUNTIME_DIR": dir]
        c.stateDir = dir + "/state"
        let d = try Daemon(config: c)
        defer { d.shutdown() }
        let unknown = Self.answer(d, #"{"id":1,"op":"send","to":"a","text":"b","wiat":true}"#)
        #expect(unknown.code == "usage")
        #expect(unknown.message == "send: unknown field \"wiat\"; it takes \"to\", \"text\" and \"wait\".")
        #expect(Self.answer(d, #"{"id":2,"op":"history","thread":"x","limit":"ten"}"#).message
                == "history: \"limit\" must be a whole number, not \"ten\".")
        #expect(Self.answer(d, #"{"id":3,"op":"hooks_drop"}"#).message == "hooks_drop: missing \"message\".")
        #expect(Self.answer(d, #"{"id":4,"op":"outbox","all":true}"#).message == "outbox: unknown field \"all\"; it takes none.")
        #expect(Self.answer(d, #"{"id":5,"op":"contacts_add_pending"}"#).message == "contacts_add_pending: missing \"prefix\".")
        // Good fields: on to the store, which this daemon has not opened (no radio reached).
        #expect(Self.answer(d, #"{"id":6,"op":"history","thread":"x","limit":10,"before":3}"#).code == "link")
        #expect(Self.answer(d, #"{"id":7,"op":"send","to":"a","text":["two","words"],"wait":true}"#).code == "link")
        #expect(Self.answer(d, #"{"id":8,"op":"ping"}"#).code == "ok")
        #expect(Self.answer(d, #"{"id":9,"op":"status"}"#).code == "ok")
    }
}
