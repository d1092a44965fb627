import Glibc
import MeshCompanion
import MeshLink
import Testing
import MeshDaemonClient
@testable import MeshDaemon
@testable import MeshHub
@testable import MeshNode
@testable import MeshSim

/// A raw companion client of the hub, read without blocking between the daemon's loop turns.
final class HubTestClient {
    let fd: Int32
    var buffer: [UInt8] = []
    var frames: [[UInt8]] = []

    init(port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | SocketFlags.closeOnExec, 0)
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = port.bigEndian
        a.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let rc = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard rc == 0 else { close(fd); throw SystemError("connect") }
        UnixSocket.setNonBlocking(fd)
    }

    deinit { close(fd) }

    func send(_ payload: [UInt8]) {
        let f = [0x3C, UInt8(payload.count & 0xFF), UInt8(payload.count >> 8)] + payload
        _ = f.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, SocketFlags.noSignal) }
    }

    /// Takes what arrived; the response frames (pushes dropped) go to `frames`.
    func poll() {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, SocketFlags.dontWait) }
            if n <= 0 { break }
            buffer += chunk[0..<n]
        }
        while buffer.count >= 3 {
            let n = Int(buffer[1]) | Int(buffer[2]) << 8
            guard buffer.count >= 3 + n else { break }
            let f = Array(buffer[3..<(3 + n)])
            buffer.removeFirst(3 + n)
            if let code = f.first, code < 0x80 { frames.append(f) }
        }
    }

    func count(_ code: ResponseCode) -> Int { frames.filter { $0.first == code.rawValue }.count }
}

/// The hub and contacts listings in the daemon's loop, against a simulated radio whose time the
/// test holds still or moves on: a listing at the radio reaches its client frame by frame, and
/// listings from the daemon's copy need no radio at all.
@Suite(.serialized) struct HubContactsTests {
    static func freePort() -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        _ = withUnsafeMutablePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        return UInt16(bigEndian: a.sin_port)
    }

    static func key(_ i: Int) -> PublicKey { PublicKey([0xC0, UInt8(i & 0xFF), UInt8(i >> 8)] + [UInt8](repeating: 0x33, count: 29))! }

    @Test func listingsStreamFromTheRadioAndComeFromTheCopyWithoutIt() throws {
        let dir = temporaryDirectory("pm-hubc")
        defer { removeTree(dir) }
        var o = SimWorld.Options()
        o.companion.maxContacts = 300
        o.epochBase = UInt32(truncatingIfNeeded: time(nil)) - 86_400
        let w = try SimWorld(topology: Topology(nodes: [NodeSpec(name: "a", role: .companion)], links: []), options: o)
        let node = w.companions[0]
        for i in 0..<151 {
            node.addOrUpdate(Contact(publicKey: Self.key(i), name: "c\(i)", lastAdvertTimestamp: 1_700_000_000 + UInt32(i),
                                     lastModified: 1_767_000_000 + UInt32(i % 30)))
        }
        let r = try RadioPort(world: w, node: node)
        let port = Self.freePort()
        var c = Daemon.Config(link: r.link)
        c.stateDir = dir + "/state"
        c.environment = ["XDG_RUNTIME_DIR": dir]
        c.companionListeners = [try HubListener(parsing: "127.0.0.1:\(port)")]
        let d = try Daemon(config: c)
        defer { d.shutdown() }
        var log: [String] = []
        d.log = { log.append($0) }
        // The daemon's own sync lists the whole table (a hub is configured): its copy is current.
        #expect(drive(d, r) { d.phase == .ready && d.hubPart.contacts.current }, "\(log)")
        #expect(d.hubPart.contacts.records.count == 151)

        // The radio's time held still: it answers no listing, so what a client gets is the copy.
        var frozen = false
        func turn() {
            if frozen { r.lastTick = monotonicMilliseconds() + 3_600_000 }
            step(d, r)
        }
        func until(_ clients: [HubTestClient], _ done: () -> Bool) -> Bool {
            let end = monotonicMilliseconds() + 15_000
            while monotonicMilliseconds() < end {
                for x in clients { x.poll() }
                if done() { return true }
                turn()
            }
            return false
        }
        func radioAnswer(since: UInt32?) -> [[UInt8]] {
            let listed = node.contacts.filter { since == nil || $0.lastModified > since! }
            return [ResponseFrame.contactsStart(count: UInt32(node.contacts.count)).bytes] + listed.map { try! ResponseFrame.contact($0).bytes }
                + [ResponseFrame.endOfContacts(lastModified: listed.map(\.lastModified).max() ?? 0).bytes]
        }
        let clients = try (0..<8).map { _ in try HubTestClient(port: port) }
        frozen = true
        for x in clients { x.send([CommandCode.deviceQuery.rawValue, 3]) }
        #expect(until(clients) { clients.allSatisfy { $0.count(.deviceInfo) == 1 } })
        // Eight clients list at once, with and without `since`: all answered, none by the radio.
        for (i, x) in clients.enumerated() { x.send(CommandFrame.getContacts(since: i % 2 == 0 ? nil : 1_767_000_020).bytes) }
        #expect(until(clients) { clients.allSatisfy { $0.count(.endOfContacts) == 1 } }, "\(log)")
        #expect(!node.iterating)
        for (i, x) in clients.enumerated() {
            #expect(Array(x.frames.dropFirst()) == radioAnswer(since: i % 2 == 0 ? nil : 1_767_000_020))
        }

        // A contact added through the hub: the copy is dropped, the next listing goes to the radio.
        let a = clients[0]
        a.frames = []
        frozen = false
        let added = Contact(publicKey: Self.key(500), name: "new", lastModified: 1_767_000_099)
        a.send(try CommandFrame.addUpdateContact(added, includeLastModified: true).bytes)
        #expect(until([a]) { a.count(.ok) == 1 })
        #expect(!d.hubPart.contacts.current)
        // The daemon's own resync after that change (a listing since its watermark) is done first.
        #expect(until([a]) { d.sync.contactsResyncAt == nil && d.sync.contactsTicket == nil && !node.iterating })
        #expect(!d.hubPart.contacts.current)
        // With the radio's time still, the radio has sent CONTACTS_START only: the client has it.
        frozen = true
        a.send(CommandFrame.getContacts().bytes)
        #expect(until([a]) { a.count(.contactsStart) == 1 }, "CONTACTS_START held back: \(log)")
        #expect(node.iterating && a.count(.contact) == 0)
        // Ten records later, the client has ten, before the radio's END_OF_CONTACTS.
        w.mesh.run(for: 10)
        #expect(until([a]) { a.count(.contact) >= 10 })
        #expect(node.iterating && a.count(.endOfContacts) == 0)
        frozen = false
        #expect(until([a]) { a.count(.endOfContacts) == 1 })
        #expect(Array(a.frames.dropFirst()) == radioAnswer(since: nil))
        // That listing taught the copy again.
        #expect(d.hubPart.contacts.current && d.hubPart.contacts.records.count == 152)

        // The copy dropped again, eight clients list at once: one listing goes to the radio, the
        // others are answered from the copy it taught, not one after another at the radio.
        a.frames = []
        a.send(try CommandFrame.addUpdateContact(Contact(publicKey: Self.key(501), name: "newer", lastModified: 1_767_000_100),
                                                 includeLastModified: true).bytes)
        #expect(until([a]) { a.count(.ok) == 1 && d.sync.contactsResyncAt == nil && d.sync.contactsTicket == nil && !node.iterating })
        #expect(!d.hubPart.contacts.current)
        func wholeListings() -> Int { r.connections.last?.filter { $0 == [CommandCode.getContacts.rawValue] }.count ?? 0 }
        let asked = wholeListings()
        for x in clients { x.frames = []; x.send(CommandFrame.getContacts().bytes) }
        #expect(until(clients) { clients.allSatisfy { $0.count(.endOfContacts) == 1 } }, "\(log)")
        for x in clients { #expect(x.frames == radioAnswer(since: nil)) }
        #expect(wholeListings() == asked + 1)
    }
}
