import MeshOps
import MeshLink
import Glibc
import MeshSession
import MeshNode
import MeshSim

/// `pocketmesh sim`: a simulated mesh in real time, each companion node served like a radio.
struct SimCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "sim")
    let args: OperationValues
    init(_ args: OperationValues) { self.args = args }

    var nodes: Int { args.whole("nodes") ?? 0 }
    var repeaters: Int { args.whole("repeaters") ?? 0 }
    var rooms: Int { args.whole("rooms") ?? 0 }
    var topology: String { args.string("topology") ?? "" }
    var seed: UInt64 { args.whole("seed") ?? 0 }
    var tcpBase: UInt16 { args.whole("tcp-base") ?? 0 }
    var pty: String? { args.string("pty") }
    var capture: String? { args.string("capture") }
    var seconds: Double? { args.number("for") }
    var password: String { args.string("password") ?? "" }
    var guestPassword: String { args.string("guest-password") ?? "" }
    var loss: Double { args.number("loss") ?? 0 }
    var snr: Double { args.number("snr") ?? 0 }
    var offlineQueue: Int { args.whole("offline-queue") ?? 0 }
    var maxContacts: Int { args.whole("max-contacts") ?? 0 }
    var protocolVersion: UInt8 { args.whole("protocol") ?? 0 }
    var collisions: Bool { args.flag("collisions") }
    var airPort: UInt16? { args.whole("air-port") }

    func run(_ args: OperationValues) throws {
        let topo: Topology
        if let shape = Topology.Shape(rawValue: topology) {
            topo = Topology.builtIn(shape, companions: nodes, repeaters: repeaters, rooms: rooms, snr: snr, loss: loss)
        } else {
            do { topo = try Topology.decode(json: try readFile(topology)) } catch let e as Topology.TopologyError {
                throw ClientError.usage(sentence("\(topology): \(e)"))
            }
        }
        // Companion i listens on tcpBase + i: every one of those ports must exist.
        let companions = topo.nodes.filter { $0.role == .companion }.count
        if companions > 0 && Int(tcpBase) + companions - 1 > Int(UInt16.max) {
            writeError("pocketmesh sim: --tcp-base \(tcpBase) with \(companions) companion nodes needs ports up to \(Int(tcpBase) + companions - 1), past 65535; use a lower --tcp-base.")
            throw ExitCode(2)
        }
        var options = SimWorld.Options()
        options.seed = seed
        options.collisions = collisions
        options.epochBase = UInt32(truncatingIfNeeded: time(nil))
        options.adminPassword = password
        options.guestPassword = guestPassword
        options.companion.offlineQueueSize = offlineQueue
        options.companion.maxContacts = maxContacts
        options.companion.protocolVersion = protocolVersion
        let world: SimWorld
        do { world = try SimWorld(topology: topo, options: options) } catch let e as Topology.TopologyError {
            throw ClientError.usage(sentence("\(e)"))
        }
        if airPort == nil, !world.externals.isEmpty {
            writeError("pocketmesh sim: the topology has external nodes (\(world.externals.map(\.name).joined(separator: ", "))): give --air-port PORT so that they can attach.")
            throw ExitCode(2)
        }
        let host = try SimHost(world: world, tcpBase: tcpBase, ptyDir: pty, capturePath: capture, airPort: airPort)
        host.log = { writeError("pocketmesh sim: \($0)") }
        for line in host.announcement { print(line) }
        fflush(stdout)
        try host.run(seconds: seconds)
    }
}

func readFile(_ path: String) throws -> [UInt8] {
    guard let f = fopen(path, "rb") else { throw ValidationError("cannot read \(path): \(String(cString: strerror(errno)))") }
    defer { fclose(f) }
    var out: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = fread(&buf, 1, buf.count, f)
        if n <= 0 { break }
        out += buf[0 ..< n]
    }
    return out
}

/// `pocketmesh sim-bench` (hidden): the simulator scale benchmark.
struct SimBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "sim-bench", shouldDisplay: false)
    let args: OperationValues
    init(_ args: OperationValues) { self.args = args }

    var nodes: Int { args.whole("nodes") ?? 0 }
    var companions: Int { args.whole("companions") ?? 0 }
    var seconds: UInt64 { args.whole("seconds") ?? 0 }
    var messages: Int { args.whole("messages") ?? 0 }
    var seed: UInt64 { args.whole("seed") ?? 0 }
    var protocolVersion: UInt8 { args.whole("protocol") ?? 0 }
    var collisions: Bool { args.flag("collisions") }

    func run(_ args: OperationValues) throws {
        var b = SimBenchmark()
        b.nodes = nodes; b.companions = companions; b.virtualSeconds = seconds; b.messages = messages
        b.seed = seed; b.collisions = collisions
        let t0 = monotonicMilliseconds()
        let r = try b.run()
        let wall = monotonicMilliseconds() - t0
        var ru = rusage()
        getrusage(Int32(RUSAGE_SELF.rawValue), &ru)
        print("nodes=\(nodes) companions=\(companions) virtual_s=\(r.virtualSeconds) messages=\(r.sent) refused=\(r.refused) acked=\(r.acked) " +
              "first_flood=\(r.flood) direct=\(r.direct) packets_on_air=\(r.transmissions) receptions=\(r.receptions) " +
              "events=\(r.events) wall_ms=\(wall) max_rss_kb=\(ru.ru_maxrss)")
    }
}
