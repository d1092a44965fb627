import ArgumentParser
import Glibc
import MeshSession
import MeshSim

/// `pocketmesh sim`: a simulated mesh in real time, each companion node served like a radio.
struct SimCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sim",
        abstract: "Run a simulated MeshCore mesh and serve each companion node over TCP (and a pty).",
        discussion: """
        Companion nodes speak the real companion protocol with the real on-air format and crypto, so \
        any client (pocketmesh, meshcore-cli, meshcore_py) can connect to them. Node i listens on \
        127.0.0.1:(tcp-base + i); one client per node, a new connection evicts the old one. \
        At start one line per companion node is printed:
          node NAME pubkey=HEX tcp=127.0.0.1:PORT [pty=PATH]
        followed by one line per repeater and room server.
        """)

    @Option(help: "Number of companion nodes (sim0, sim1, ...).")
    var nodes: Int = 2
    @Option(help: "Number of repeaters (rpt0, ...).")
    var repeaters: Int = 0
    @Option(help: "Number of room servers (room0, ...).")
    var rooms: Int = 0
    @Option(help: "line, star, grid, or a JSON topology file (see the README).")
    var topology: String = "line"
    @Option(help: "Seed for identities and every random choice.")
    var seed: UInt64 = 1
    @Option(name: .customLong("tcp-base"), help: "TCP port of the first companion node (node i uses base + i).")
    var tcpBase: UInt16 = 5001
    @Option(help: "Also serve each companion on a pseudo-terminal, linked as DIR/NAME.")
    var pty: String?
    @Option(help: "Write every transmitted on-air packet to FILE, one hex line each.")
    var capture: String?
    @Option(name: .customLong("for"), help: "Stop after this many seconds (default: run until interrupted).")
    var seconds: Double?
    @Option(help: "Admin password of repeaters and room servers.")
    var password: String = "password"
    @Option(name: .customLong("guest-password"), help: "Guest password of repeaters and room servers.")
    var guestPassword: String = "hello"
    @Option(help: "Loss probability (0...1) of every link of a built-in topology.")
    var loss: Double = 0
    @Option(help: "SNR in dB of every link of a built-in topology.")
    var snr: Double = 8
    @Option(name: .customLong("offline-queue"), help: "Offline message queue size of each companion.")
    var offlineQueue: Int = 16
    @Option(name: .customLong("max-contacts"), help: "Contact table size of each companion.")
    var maxContacts: Int = 100
    @Option(name: .customLong("protocol"), help: ArgumentHelp("Companion protocol version of the simulated radios: 13 (firmware v1.17.1) or 14 (the firmware's dev line: RUN_CLI_COMMAND, CLI commands to companions, remote CLI permission).", valueName: "version"))
    var protocolVersion: UInt8 = 13
    @Flag(help: "Simulate collisions (half-duplex radios, overlapping receptions destroy each other).")
    var collisions = false
    @Option(name: .customLong("air-port"), help: ArgumentHelp("Serve the air on 127.0.0.1:PORT for the topology's external nodes (other implementations; see the README).", valueName: "port"))
    var airPort: UInt16?

    func validate() throws {
        guard (0...64).contains(nodes), (0...256).contains(repeaters), (0...64).contains(rooms) else {
            throw ValidationError("--nodes, --rooms ≤ 64 and --repeaters ≤ 256")
        }
        guard (0...1).contains(loss) else { throw ValidationError("--loss must be within 0...1") }
        guard tcpBase >= 1 else { throw ValidationError("--tcp-base must be a port from 1 to 65535.") }
        guard offlineQueue >= 1, maxContacts >= 1 else { throw ValidationError("--offline-queue and --max-contacts must be at least 1") }
        guard protocolVersion == 13 || protocolVersion == 14 else { throw ValidationError("--protocol must be 13 or 14") }
    }

    func run() throws {
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
    static let configuration = CommandConfiguration(
        commandName: "sim-bench", abstract: "Simulator scale benchmark (virtual time).", shouldDisplay: false)

    @Option(help: "Total nodes (repeaters in a grid plus companions).")
    var nodes: Int = 100
    @Option(help: "How many of the nodes are companions.")
    var companions: Int = 20
    @Option(help: "Virtual seconds to simulate.")
    var seconds: UInt64 = 3600
    @Option(help: "Direct messages to send between random companions.")
    var messages: Int = 1000
    @Option(help: "Seed.")
    var seed: UInt64 = 1
    @Option(name: .customLong("protocol"), help: ArgumentHelp("Companion protocol version of the simulated radios: 13 (firmware v1.17.1) or 14 (the firmware's dev line: RUN_CLI_COMMAND, CLI commands to companions, remote CLI permission).", valueName: "version"))
    var protocolVersion: UInt8 = 13
    @Flag(help: "Simulate collisions.")
    var collisions = false

    func run() throws {
        var b = SimBenchmark()
        b.nodes = nodes; b.companions = companions; b.virtualSeconds = seconds; b.messages = messages
        b.seed = seed; b.collisions = collisions
        let t0 = monotonicNow()
        let r = try b.run()
        let wall = monotonicNow() - t0
        var ru = rusage()
        getrusage(Int32(RUSAGE_SELF.rawValue), &ru)
        print("nodes=\(nodes) companions=\(companions) virtual_s=\(r.virtualSeconds) messages=\(r.sent) refused=\(r.refused) acked=\(r.acked) " +
              "first_flood=\(r.flood) direct=\(r.direct) packets_on_air=\(r.transmissions) receptions=\(r.receptions) " +
              "events=\(r.events) wall_ms=\(wall) max_rss_kb=\(ru.ru_maxrss)")
    }
}
