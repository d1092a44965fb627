import Glibc
import MeshNet
import Testing
import MeshDaemonClient
@testable import MeshDaemon
import MeshLink
import MeshOps

@Suite struct APIServerTests {
    func makeServer(_ limits: APIServer.Limits = APIServer.Limits()) throws -> (APIServer, String) {
        let dir = temporaryDirectory("pm-api")
        let server = try APIServer(path: dir + "/r.sock", limits: limits)
        server.onRequest = { req, _ in
            switch req.op {
            case .ping: return DaemonResponse(id: req.id, ok: [("pong", true)])
            case .send:
                do throws(DaemonError) {
                    let to = try req.values().required("to")
                    return DaemonResponse(id: req.id, ok: [("to", .string(to))])
                } catch { return DaemonResponse(id: req.id, error: error) }
            default: return DaemonResponse(id: req.id, error: DaemonError(.unsupported, "nope"))
            }
        }
        return (server, dir)
    }

    @Test func socketIsPrivateAndAnswers() throws {
        let (server, dir) = try makeServer()
        defer { server.shutdown(); removeTree(dir) }
        var st = stat()
        #expect(stat(server.path, &st) == 0)
        #expect(st.st_mode & 0o777 == 0o600)
        let c = try LineClient(server.path)
        c.send("{\"id\":1,\"op\":\"ping\"}\n")
        #expect(c.line(server) == #"{"id":1,"ok":true,"pong":true}"#)
    }

    @Test func malformedRequestsGetErrorsAndTheServerKeepsGoing() throws {
        let (server, dir) = try makeServer()
        defer { server.shutdown(); removeTree(dir) }
        let c = try LineClient(server.path)
        c.send("this is not json\n")
        let e1 = c.json(server)
        #expect(e1?["ok"] == false)
        #expect(e1?["error"]?["code"]?.string == "usage")
        c.send("{\"id\":2,\"op\":\"send\"}\n")
        let e2 = c.json(server)
        #expect(e2?["id"]?.int == 2)
        #expect(e2?["error"]?["message"]?.string?.contains("\"to\"") == true)
        c.send("{\"id\":3,\"op\":\"warp\"}\r\n\n")
        #expect(c.json(server)?["error"]?["code"]?.string == "unsupported")
        c.send("[1,2,3]\n{\"id\":5,\"op\":\"ping\"}\n")
        #expect(c.json(server)?["ok"] == false)
        #expect(c.json(server)?["id"]?.int == 5)
        // A second client is unaffected.
        let d = try LineClient(server.path)
        d.send("{\"id\":6,\"op\":\"ping\"}\n")
        #expect(d.json(server)?["ok"] == true)
    }

    @Test func overlongLinesAreSkipped() throws {
        var limits = APIServer.Limits()
        limits.maxLine = 256
        let (server, dir) = try makeServer(limits)
        defer { server.shutdown(); removeTree(dir) }
        let c = try LineClient(server.path)
        c.send("{\"id\":1,\"op\":\"ping\",\"pad\":\"" + String(repeating: "x", count: 2000))
        service(server)
        c.send("\"}\n{\"id\":2,\"op\":\"ping\"}\n")
        #expect(c.json(server)?["error"]?["code"]?.string == "too_long")
        #expect(c.json(server)?["id"]?.int == 2)
    }

    @Test func subscribersGetEventsAndSlowOnesAreDropped() throws {
        var limits = APIServer.Limits()
        limits.maxSubscriberBacklog = 4096
        let (server, dir) = try makeServer(limits)
        defer { server.shutdown(); removeTree(dir) }
        let fast = try LineClient(server.path)
        let slow = try LineClient(server.path)
        fast.send("{\"id\":1,\"op\":\"subscribe\"}\n")
        slow.send("{\"id\":1,\"op\":\"subscribe\"}\n")
        #expect(fast.json(server)?["subscribed"] == true)
        #expect(slow.json(server)?["subscribed"] == true)
        #expect(server.subscriberCount == 2)
        server.publish(["event": "message", "text": "hello"])
        #expect(fast.json(server)?["text"]?.string == "hello")
        // The slow one never reads; the kernel buffer fills, then the backlog limit trips.
        let big = JSON.object([("event", "message"), ("text", .string(String(repeating: "y", count: 1000)))])
        var dropped = false
        for _ in 0..<2000 {
            server.publish(big)
            _ = fast.line(server, rounds: 1)
            if server.subscriberCount == 1 { dropped = true; break }
        }
        #expect(dropped)
        #expect(slow.isClosed(server))
    }

    /// Connections that never send a request cannot lock the API: when it is full, a new client
    /// evicts the one idle the longest, and idle ones are closed after the idle timeout anyway.
    @Test func idleClientsNeverLockNewCommandsOut() throws {
        var limits = APIServer.Limits()
        limits.maxClients = 4
        let (server, dir) = try makeServer(limits)
        defer { server.shutdown(); removeTree(dir) }
        var t: UInt64 = 1_000
        server.clock = { t }
        var logs: [String] = []
        server.log = { logs.append($0) }
        var idle: [LineClient] = []
        for _ in 0..<4 {
            idle.append(try LineClient(server.path))
            service(server)
            t += 10
        }
        #expect(server.clientCount == 4)
        let c = try LineClient(server.path)
        c.send("{\"id\":1,\"op\":\"ping\"}\n")
        #expect(c.json(server)?["ok"] == true)
        #expect(idle[0].line(server, rounds: 5) == nil)  // the longest idle one went
        #expect(logs.contains { $0.contains("evicted to make room") })
        // Subscribers stay; idle request clients are closed after the timeout.
        let sub = try LineClient(server.path)
        sub.send("{\"id\":2,\"op\":\"subscribe\"}\n")
        #expect(sub.json(server)?["ok"] == true)
        #expect(server.tick(now: t) != nil)
        t += limits.idleTimeoutMS + 1
        _ = server.tick(now: t)
        #expect(server.clientCount == 1)
        server.publish(.obj(("event", "x")))
        #expect(sub.json(server)?["event"]?.string == "x")
        #expect(idle[1].line(server, rounds: 5) == nil)
    }

    @Test func halfClosedClientStillGetsItsReply() throws {
        let (server, dir) = try makeServer()
        defer { server.shutdown(); removeTree(dir) }
        let c = try LineClient(server.path)
        c.send("{\"id\":8,\"op\":\"ping\"}\n")
        shutdown(c.fd, Int32(SHUT_WR))
        #expect(c.json(server)?["id"]?.int == 8)
        #expect(c.isClosed(server))
    }

    @Test func deferredRepliesAndDisconnects() throws {
        let (server, dir) = try makeServer()
        defer { server.shutdown(); removeTree(dir) }
        var held: [(Int64, APIServer.ClientID)] = []
        var gone: [APIServer.ClientID] = []
        server.onRequest = { req, client in held.append((req.id, client)); return nil }
        server.onDisconnect = { gone.append($0) }
        let c = try LineClient(server.path)
        c.send("{\"id\":11,\"op\":\"send\",\"to\":\"x\",\"text\":\"y\",\"wait\":true}\n")
        service(server)
        #expect(held.count == 1)
        server.reply(DaemonResponse(id: 11, ok: [("status", "delivered")]), to: held[0].1)
        #expect(c.json(server)?["status"]?.string == "delivered")
        // A reply to a client that went away is dropped quietly.
        let d = try LineClient(server.path)
        d.send("{\"id\":12,\"op\":\"ping\"}\n")
        service(server)
        let dc = held[1].1
        d.close()
        service(server)
        #expect(gone.contains(dc))
        server.reply(DaemonResponse(id: 12), to: dc)
    }

    @Test func staleSocketFileIsReplacedButALiveOneIsNot() throws {
        let (server, dir) = try makeServer()
        defer { server.shutdown(); removeTree(dir) }
        #expect(throws: SystemError.self) { _ = try APIServer(path: server.path) }
        // A socket file left by a killed daemon (nobody listening) is taken over. The file is made
        // by a socket that is bound but never listens: a program another test spawns may hold a
        // copy of the descriptor until its exec, and a listening copy would answer as if alive.
        let stale = dir + "/stale.sock"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { p in
            for (i, b) in stale.utf8.enumerated() where i < p.count - 1 { p[i] = b }
        }
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        close(fd)
        let again = try APIServer(path: stale)
        again.shutdown()
    }
}
