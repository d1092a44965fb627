import Glibc
import MeshLink
import Testing
import MeshDaemonClient
@testable import MeshDaemon
import MeshOps
import MeshBridge

/// The daemon's loop runs parts, and nothing else by name: a part it has never heard of gets its
/// descriptor polled, its readiness handled and its deadline honoured, like the radio owner, the
/// API server, the hub or an MQTT connection.
@Suite(.serialized) struct LoopPartsTests {
    final class FakePart: PollPart {
        let readFD: Int32
        let writeFD: Int32
        var due: UInt64? = nil
        var ticks = 0
        var ticksPastDue = 0
        var handled = 0
        var foreignFDs = 0
        /// Called when it is due, and when its descriptor was read.
        var onEvent: () -> Void = {}

        init() throws {
            let fds = try FileDescriptor.pipe()
            readFD = fds.read.rawValue
            writeFD = fds.write.rawValue
        }
        deinit { close(readFD); close(writeFD) }

        func pollDescriptors(into fds: inout [pollfd]) {
            fds.append(pollfd(fd: readFD, events: Int16(POLLIN), revents: 0))
        }

        func handle(_ p: pollfd, now: UInt64) -> Bool {
            guard p.fd == readFD else { foreignFDs += 1; return false }
            var b = [UInt8](repeating: 0, count: 16)
            _ = b.withUnsafeMutableBytes { read(readFD, $0.baseAddress, $0.count) }
            handled += 1
            onEvent()
            return true
        }

        func tick(now: UInt64) -> UInt64? {
            ticks += 1
            guard let d = due else { return nil }
            if now >= d {
                ticksPastDue += 1
                due = nil
                onEvent()
                return nil
            }
            return d
        }
    }

    func daemon(_ dir: String) throws -> Daemon {
        // Nothing listens on port 1: the link fails and waits out a long backoff, so that the only
        // deadline near is the fake part's.
        var c = Daemon.Config(link: "tcp:127.0.0.1:1")
        c.stateDir = dir + "/state"
        c.environment = ["XDG_RUNTIME_DIR": dir]
        c.reconnectMinMS = 600_000
        c.reconnectMaxMS = 600_000
        c.connectTimeoutMS = 1_000
        let d = try Daemon(config: c)
        d.log = { _ in }
        return d
    }

    @Test func aPartsDeadlineAndDescriptorAreHonoured() throws {
        let dir = temporaryDirectory("pm-parts")
        defer { removeTree(dir) }
        let d = try daemon(dir)
        defer { d.shutdown() }
        // Let the radio owner try its link and fall back to its backoff.
        for _ in 0..<5 { _ = d.loop.turn(until: monotonicMilliseconds() + 20) }

        let part = try FakePart()
        d.loop.add(part)
        #expect(d.loop.allParts.contains { $0 === part })
        // Its deadline: the loop wakes for it (within the minute given here: nothing else is due)
        // and ticks it once past it; the part stops the loop then.
        part.onEvent = { d.loop.stop() }
        part.due = monotonicMilliseconds() + 30
        #expect(d.loop.run(until: monotonicMilliseconds() + 60_000) == .stopped)
        #expect(part.ticksPastDue == 1)
        #expect(part.ticks >= 2)
        #expect(part.handled == 0)

        // Its descriptor: a byte in its pipe ends the wait, and its handler alone gets it.
        var b: UInt8 = 1
        _ = write(part.writeFD, &b, 1)
        #expect(d.loop.run(until: monotonicMilliseconds() + 60_000) == .stopped)
        #expect(part.handled == 1)
        #expect(part.foreignFDs == 0)
        #expect(part.ticksPastDue == 1)

        // Removed, it is asked nothing more.
        d.loop.remove(part)
        let ticks = part.ticks
        _ = write(part.writeFD, &b, 1)
        _ = d.loop.turn(until: monotonicMilliseconds() + 5)
        #expect(part.ticks == ticks && part.handled == 1)
    }

    @Test func theDaemonsOwnWorkIsParts() throws {
        let dir = temporaryDirectory("pm-parts")
        defer { removeTree(dir) }
        let d = try daemon(dir)
        defer { d.shutdown() }
        let parts = d.loop.allParts
        #expect(parts.first === d.radio)
        for p in [d.hotplug, d.storage, d.outboxPart, d.ops, d.api, d.notify] as [PollPart] {
            #expect(parts.contains { $0 === p })
        }
    }

    /// Callers are told apart by their door, not by a range of numbers: two MQTT bridges that
    /// number their commands alike (every bridge counts from the same start) are two callers,
    /// each checked with its own bridge's classes, queuing in its own outbox share; an API client
    /// whose number falls where a bridge's once did is still an API client.
    @Test func callersOfTwoBridgesWithTheSameNumberAreTwoCallers() throws {
        let dir = temporaryDirectory("pm-callers")
        defer { removeTree(dir) }
        var c = Daemon.Config(link: "tcp:127.0.0.1:1")
        c.stateDir = dir + "/state"
        c.environment = ["XDG_RUNTIME_DIR": dir]
        c.reconnectMinMS = 600_000
        c.reconnectMaxMS = 600_000
        var one = MQTTSettings(url: "mqtt://127.0.0.1:1")
        one.prefix = "one"
        var two = MQTTSettings(url: "mqtt://127.0.0.1:2")
        two.prefix = "two"
        two.allowed.insert(.config)
        c.mqtt = [one, two]
        let d = try Daemon(config: c)
        d.log = { _ in }
        defer { d.shutdown() }
        #expect(d.mqtt.bridges.count == 2)
        let number = MQTTBridge.firstClientID
        let first = Caller.bridge(ObjectIdentifier(d.mqtt.bridges[0]), number)
        let second = Caller.bridge(ObjectIdentifier(d.mqtt.bridges[1]), number)
        #expect(first != second)
        #expect(d.frontEnd(of: first).name.contains("(one/command)") && !d.frontEnd(of: first).allowed.allows(.config))
        #expect(d.frontEnd(of: second).name.contains("(two/command)") && d.frontEnd(of: second).allowed.allows(.config))
        #expect(d.outboxOrigin(of: first) == 1 && d.outboxOrigin(of: second) == 2)
        #expect(d.isRemoteDoor(second) && !d.isRemoteDoor(.api(number)))
        #expect(d.frontEnd(of: .api(number)).name.hasPrefix("api client"))
    }
}
