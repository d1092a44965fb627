import MeshNet
import Testing
@testable import MeshNode
@testable import MeshSim

/// A bare node that records what it hears.
final class ListenerNode: SimNode {
    var heard: [(at: UInt64, bytes: [UInt8])] = []
    init(_ mesh: SimMesh, _ name: String) { super.init(mesh: mesh, name: name, role: .companion, poolSize: 16) }
    override func radioReceived(_ bytes: [UInt8], snr: Double, rssi: Int) { heard.append((mesh.now, bytes)) }
}

@Suite struct SchedulerTests {
    @Test func eventsRunInTimeThenInsertionOrder() {
        let s = Scheduler()
        var log: [String] = []
        s.schedule(at: 20) { log.append("b") }
        s.schedule(at: 10) { log.append("a") }
        s.schedule(at: 20) { log.append("c") }
        s.schedule(at: 5) { s.after(100) { log.append("d") } }
        s.run(until: 50)
        #expect(log == ["a", "b", "c"])
        #expect(s.now == 50)
        s.run(for: 100)
        #expect(log == ["a", "b", "c", "d"])
    }

    /// A timer target runs in time and insertion order like a closure; `runNext` runs before
    /// everything already scheduled for the same time, as one step of its own.
    @Test func timerTargetsAndRunNext() {
        final class Logger: TimerTarget {
            var log: [String] = []
            override func timerFired(_ token: UInt64) { log.append("t\(token)") }
        }
        let s = Scheduler()
        let t = Logger()
        s.schedule(at: 10, t, token: 1)
        s.schedule(at: 10) {
            t.log.append("x")
            s.runNext(t, token: 2)
            s.schedule(at: 10) { t.log.append("late") }
        }
        s.schedule(at: 10) { t.log.append("y") }
        s.schedule(at: 5, t, token: 0)
        var steps = 0
        while let d = s.nextDeadline, d <= 10 {
            if t.log.last == "x" { #expect(s.pending == 3 && s.nextDeadline == 10) }
            s.step(); steps += 1
        }
        #expect(t.log == ["t0", "t1", "x", "t2", "y", "late"])
        #expect(steps == 6 && s.pending == 0 && s.now == 10)
    }

    /// Timers 120, 240 or 360 ms ahead skip the heap (a FIFO per delay): mixed with other delays,
    /// closures and timers set from running events, everything still runs in (time, scheduling
    /// order), as a sort of what was scheduled says, and the queue grows past its first size.
    @Test func fixedDelayTimersKeepTimeThenInsertionOrder() {
        final class Recorder: TimerTarget {
            var ran: [UInt64] = []
            var s: Scheduler?
            var rng = SimRandom(seed: 5)
            var expected: [(at: UInt64, n: UInt64)] = []
            var n: UInt64 = 0
            func add(_ delay: UInt64) {
                guard let s else { return }
                n += 1
                expected.append((s.now + delay, n))
                s.schedule(at: s.now + delay, self, token: n)
            }
            override func timerFired(_ token: UInt64) {
                ran.append(token)
                if n < 3000 {
                    for _ in 0 ..< 2 {
                        let delays: [UInt64] = [0, 1, 120, 240, 360, 480, 119, rng.between(0, 400)]
                        add(delays[Int(rng.below(8))])
                    }
                }
            }
        }
        let s = Scheduler()
        let r = Recorder()
        r.s = s
        r.add(120); r.add(7); r.add(360)
        #expect(s.pending == 3 && s.nextDeadline == 7)
        while s.step() {}
        #expect(r.ran.count == r.expected.count && r.ran.count > 3000)
        let order = r.expected.sorted { $0.at != $1.at ? $0.at < $1.at : $0.n < $1.n }.map(\.n)
        let firstOutOfOrder = order.indices.first { $0 >= r.ran.count || r.ran[$0] != order[$0] }
        #expect(firstOutOfOrder == nil)
        #expect(s.pending == 0 && s.nextDeadline == nil)
    }

    @Test func runUntilCondition() {
        let s = Scheduler()
        var n = 0
        for i in 1...10 { s.schedule(at: UInt64(i * 100)) { n += 1 } }
        #expect(s.run(until: { n == 3 }, limit: 10_000))
        #expect(s.now == 300)
        #expect(!s.run(until: { n == 100 }, limit: 500))
        #expect(s.now == 800)
    }

    @Test func randomIsSeeded() {
        var a = SimRandom(seed: 42), b = SimRandom(seed: 42), c = SimRandom(seed: 43)
        let xs = (0..<8).map { _ in a.next() }
        #expect(xs == (0..<8).map { _ in b.next() })
        #expect(xs != (0..<8).map { _ in c.next() })
        for _ in 0..<1000 { let v = a.between(1, 3); #expect(v >= 1 && v <= 3) }
    }
}

@Suite struct TopologyTests {
    @Test func lineAttachesEndsToEndRepeaters() throws {
        let t = Topology.builtIn(.line, companions: 2, repeaters: 3, rooms: 1)
        try t.validate()
        #expect(t.nodes.map(\.name) == ["sim0", "sim1", "rpt0", "rpt1", "rpt2", "room0"])
        let pairs = Set(t.links.map { "\($0.a)-\($0.b)" })
        #expect(pairs == ["rpt0-rpt1", "rpt1-rpt2", "sim0-rpt0", "sim1-rpt2", "room0-rpt1"])
    }

    @Test func noRepeatersMeansEveryoneHearsEveryone() {
        let t = Topology.builtIn(.star, companions: 3, repeaters: 0, rooms: 0)
        #expect(t.links.count == 3)
    }

    @Test func jsonFile() throws {
        let json = #"{"nodes":[{"name":"a","role":"companion"},{"name":"r","role":"repeater","password":"pw"}],"links":[{"a":"a","b":"r","snr":5.5,"loss":0.25}]}"#
        let t = try Topology.decode(json: Array(json.utf8))
        #expect(t.nodes[1].password == "pw")
        #expect(t.links[0].snr == 5.5 && t.links[0].loss == 0.25 && !t.links[0].oneway)
        let bad = #"{"nodes":[{"name":"a","role":"companion"}],"links":[{"a":"a","b":"x"}]}"#
        #expect(throws: Topology.TopologyError.self) { try Topology.decode(json: Array(bad.utf8)) }
    }

    /// A hostile topology file (nesting 200,000 deep where a list or an object goes): an error
    /// that says the file is not valid, never a stack overflow.
    @Test(arguments: [
        "{\"nodes\":" + String(repeating: "[", count: 200_000),
        "{\"nodes\":[{\"name\":\"a\",\"role\":\"companion\",\"telemetry\":" + String(repeating: "{\"x\":", count: 200_000)
            + "1" + String(repeating: "}", count: 200_000) + "}],\"links\":[]}",
        String(repeating: "[", count: 200_000) + String(repeating: "]", count: 200_000),
    ])
    func hostileNestingIsAnError(_ json: String) {
        #expect(throws: Topology.TopologyError.self) { try Topology.decode(json: Array(json.utf8)) }
    }

    @Test func jsonFileErrorsSayWhere() {
        func message(_ json: String) -> String {
            do { _ = try Topology.decode(json: Array(json.utf8)); return "decoded" } catch { return "\(error)" }
        }
        let links = #""links":[]"#
        #expect(message(#"{"nodes":[{"name":"a","role":"companion"},{"name":"b","role":"router"}],\#(links)}"#)
            == #"topology file is not valid: nodes[1].role "router" is not one of companion, repeater, room, external, kiss"#)
        #expect(message(#"{"nodes":[{"role":"companion"}],\#(links)}"#) == #"topology file is not valid: nodes[0] has no "name""#)
        #expect(message(#"{"nodes":[]}"#) == #"topology file is not valid: the topology has no "links""#)
        #expect(message(#"{"nodes":[{"name":"a","role":"room","seed":-1}],\#(links)}"#)
            == "topology file is not valid: nodes[0].seed must be a whole number from 0 to 2^64 - 1")
        #expect(message(#"{"nodes":[{"name":"a","role":"room","telemetry":{"sensors":[{"type":"humidity","value":"wet"}]}}],\#(links)}"#)
            == "topology file is not valid: nodes[0].telemetry.sensors[0].value must be a number")
        #expect(message(#"{"nodes":[{"name":"a","role":"companion"}],"links":[{"a":"a","b":"a","oneway":1}]}"#)
            == "topology file is not valid: links[0].oneway must be true or false")
        #expect(message("[1, 2") == "topology file is not valid: unexpected end of JSON")
        #expect(message("[]") == "topology file is not valid: the topology must be an object")
    }

    @Test func jsonFileNullsUnknownKeysAndRoundTrip() throws {
        // Unknown keys are ignored and a null counts as absent.
        let json = #"{"comment":"two nodes","nodes":[{"name":"a","role":"companion","password":null,"x":{"y":[1]}},"#
            + ##"{"name":"r","role":"repeater","seed":18446744073709549568,"regions":["#north"],"volatile_clock":true,"##
            + #""telemetry":{"voltage":3.9,"location":[51.5,-0.12],"sensors":[{"type":"temperature","value":18.25}]}}],"#
            + #""links":[{"a":"a","b":"r","snr":-3,"loss":null,"oneway":true}]}"#
        let t = try Topology.decode(json: Array(json.utf8))
        #expect(t.nodes[0].password == nil && t.nodes[1].seed == 18_446_744_073_709_549_568 && t.nodes[1].volatileClock == true)
        #expect(t.nodes[1].telemetry == Sensors(voltage: 3.9, location: [51.5, -0.12], sensors: [.init(type: "temperature", value: 18.25)]))
        #expect(t.links == [LinkSpec(a: "a", b: "r", snr: -3, loss: 0, oneway: true)])
        // The file form written back reads the same.
        #expect(try Topology.decode(json: Array(t.json.text.utf8)) == t)
        let built = Topology.builtIn(.grid, companions: 3, repeaters: 4, rooms: 1, snr: 6.5, loss: 0.125)
        #expect(try Topology.decode(json: Array(built.json.text.utf8)) == built)
    }
}

@Suite struct AirTests {
    @Test func airtimeMatchesSemtechFormula() {
        // SF8 / 62.5 kHz / CR 4/5, 100 bytes ≈ 0.71 s (reference §4.1), truncated to whole ms like the firmware.
        #expect(LoRa.airtimeMs(bytes: 100, params: RadioParams()) == 713)
    }

    @Test func deliveryTakesAirtimeAndFollowsLinks() {
        let mesh = SimMesh(seed: 1)
        let a = ListenerNode(mesh, "a"), b = ListenerNode(mesh, "b"), c = ListenerNode(mesh, "c")
        mesh.link(a, b)
        mesh.link(b, c)
        a.enqueue([0x11, 0x00, 1, 2, 3], priority: 1)
        mesh.run(for: 5000)
        let air = UInt64(a.radio.airtime(5))
        #expect(b.heard.count == 1 && b.heard[0].at == air)
        #expect(c.heard.isEmpty)
        #expect(a.radio.nSent == 1)
    }

    @Test func priorityOrderAndListenBeforeTalk() {
        let mesh = SimMesh(seed: 2)
        let a = ListenerNode(mesh, "a"), b = ListenerNode(mesh, "b")
        mesh.link(a, b)
        a.enqueue([0x11, 0x00, 9], priority: 3, delay: 10)
        a.enqueue([0x11, 0x00, 1], priority: 1, delay: 10)
        // b starts talking first; a must wait until b's packet is over.
        b.enqueue([0x11, 0x00, 7, 7, 7, 7, 7, 7, 7, 7], priority: 1)
        mesh.run(for: 10_000)
        #expect(b.heard.map { $0.bytes.last! } == [1, 9])
        let bAir = UInt64(b.radio.airtime(10))
        #expect(b.heard[0].at > bAir)
    }

    @Test func lossIsDeterministicPerSeed() {
        func run(_ seed: UInt64) -> Int {
            let mesh = SimMesh(seed: seed)
            let a = ListenerNode(mesh, "a"), b = ListenerNode(mesh, "b")
            mesh.link(a, b, loss: 0.5)
            for i in 0..<10 { a.enqueue([0x11, 0x00, UInt8(i)], priority: 1, delay: UInt64(i) * 1000) }
            mesh.run(for: 60_000)
            return b.heard.count
        }
        #expect(run(7) == run(7))
        let n = run(7)
        #expect(n > 0 && n < 10)
    }

    @Test func collisionsDestroyOverlappingReceptions() {
        let mesh = SimMesh(seed: 3, collisions: true)
        let a = ListenerNode(mesh, "a"), b = ListenerNode(mesh, "b"), c = ListenerNode(mesh, "c")
        mesh.link(a, b); mesh.link(c, b) // a and c cannot hear each other: hidden terminals
        a.enqueue([0x11, 0x00, 1, 1, 1, 1], priority: 1)
        c.enqueue([0x11, 0x00, 2, 2, 2, 2], priority: 1)
        mesh.run(for: 5000)
        #expect(b.heard.isEmpty)
        #expect(mesh.collided == 2)
    }

    @Test func seenTableForgetsAfter160() {
        var t = SeenTable()
        let first = t.checkAndInsert(1)
        let second = t.checkAndInsert(1)
        #expect(!first && second)
        for h in 2...161 { t.insert(UInt64(h)) }
        #expect(!t.contains(1))
        #expect(t.contains(161))
    }

    /// The set beside the ring answers exactly as a scan of the firmware's ring would, with
    /// repeated hashes, hashes that share a probe run, and the oldest entries leaving.
    @Test func seenTableMatchesTheRingScan() {
        var t = SeenTable()
        var ring: [UInt64] = []
        var rng = SimRandom(seed: 9)
        for step in 0..<20_000 {
            // Few distinct values (so repeats and removals of repeated values happen) with the
            // same low bits (so they collide in the set).
            var h = UInt64(rng.between(0, 400)) << 40 | UInt64(step % 3)
            if step % 97 == 0 { h = .max }  // the one value stored apart
            if rng.between(0, 3) == 0 {
                t.insert(h)
                ring.append(h)
            } else {
                let was = ring.suffix(SeenTable.capacity).contains(h)
                #expect(t.checkAndInsert(h) == was)
                if !was { ring.append(h) }
            }
            let probe = UInt64(rng.between(0, 400)) << 40 | UInt64(rng.between(0, 3))
            #expect(t.contains(probe) == ring.suffix(SeenTable.capacity).contains(probe))
        }
    }

    @Test func dutyCycleBudgetThrottles() {
        let mesh = SimMesh(seed: 4)
        let a = ListenerNode(mesh, "a"), b = ListenerNode(mesh, "b")
        mesh.link(a, b)
        a.radio.budget = 0 // spent
        a.enqueue([0x11, 0x00, 1], priority: 1)
        mesh.run(for: 100)
        #expect(b.heard.isEmpty)
        mesh.run(for: 10_000)
        #expect(b.heard.count == 1)
    }
}

@Suite struct CaptureEffectTests {
    @Test func strongerOverlappingPacketSurvives() {
        let mesh = SimMesh(seed: 3, collisions: true)
        let a = ListenerNode(mesh, "a"), b = ListenerNode(mesh, "b"), c = ListenerNode(mesh, "c")
        mesh.link(a, b, snr: 12); mesh.link(c, b, snr: 2)
        a.enqueue([0x11, 0x00, 1, 1, 1, 1], priority: 1)
        c.enqueue([0x11, 0x00, 2, 2, 2, 2], priority: 1)
        mesh.run(for: 5000)
        #expect(b.heard.map { $0.bytes.last! } == [1])
        #expect(mesh.collided == 1)
    }
}
