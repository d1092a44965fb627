import Glibc
import MeshCompanion
import MeshLink
import MeshNet
import MeshStore
import Testing
import MeshDaemonClient
@testable import MeshDaemon
@testable import MeshNode
@testable import MeshSim
import MeshOps

/// The daemon keeps a signal sample of what its radio hears and a battery sample of each reading,
/// in the radio's folder, and answers `samples_signal` / `samples_battery` from them.
@Suite(.serialized) struct SamplesTests {
    func ask(_ d: Daemon, _ line: String) -> [(String, JSON)]? {
        guard case .success(let req) = Array(line.utf8).withUnsafeBytes({ DaemonRequest.parse(line: $0) }),
              let r = d.handle(req, .api(1)), case .success(let fields) = r.result else { return nil }
        return fields
    }

    func samples(_ d: Daemon, _ line: String) -> [JSON] {
        guard case .array(let list)? = ask(d, line)?.first(where: { $0.0 == "samples" })?.1 else { return [] }
        return list
    }

    @Test func heardPacketsMessagesAndBatteryReadingsAreKept() throws {
        let dir = temporaryDirectory("pm-samples")
        defer { removeTree(dir) }
        var o = SimWorld.Options()
        o.seed = 11
        o.epochBase = UInt32(truncatingIfNeeded: time(nil)) - 86_400
        let w = try SimWorld(topology: .builtIn(.line, companions: 2, repeaters: 0, rooms: 0), options: o)
        let a = w.companions[0], b = w.companions[1]
        let r = try RadioPort(world: w, node: a)
        var c = Daemon.Config(link: r.link)
        c.stateDir = dir + "/state"
        c.environment = ["XDG_RUNTIME_DIR": dir]
        let d = try Daemon(config: c)
        defer { d.shutdown() }
        var log: [String] = []
        d.log = { log.append($0) }
        let start = UInt32(truncatingIfNeeded: time(nil))

        // Ready: the battery was read once already (readings start with the link).
        #expect(drive(d, r) { d.phase == .ready && d.storage.samples.batterySampledAt != nil }, "\(log)")
        let battery = samples(d, #"{"id":1,"op":"samples_battery"}"#)
        #expect(battery.count == 1, "\(battery)")
        #expect(battery.first?["millivolts"]?.int == Int64(a.readings.millivolts))
        #expect(battery.first?["storage_total_kb"]?.int == 1024)
        // The next reading comes within the interval: not kept (at most one a minute).
        d.sync.batteryCheckAt = 0
        #expect(drive(d, r) { d.sync.batteryTicket == nil && d.sync.batteryCheckAt > monotonicMilliseconds() + 1_000 })
        for _ in 0..<20 { step(d, r, maxWaitMS: 2) }
        #expect(samples(d, #"{"id":2,"op":"samples_battery"}"#).count == 1)

        // sim1 advertises (flood) and posts on the public channel: sim0 hears two packets and
        // gets one message.
        b.receive(frame: CommandFrame.sendSelfAdvert(flood: true).bytes)
        b.receive(frame: try CommandFrame.sendChannelTextMessage(channel: 0, text: "hello", timestamp: b.epochNow).bytes)
        #expect(drive(d, r) { samples(d, #"{"id":3,"op":"samples_signal"}"#).count >= 3 }, "\(log)")
        let signal = samples(d, #"{"id":4,"op":"samples_signal"}"#)
        let packets = signal.filter { $0["kind"]?.string == "packet" }
        let advert = try #require(packets.first { $0["payload_type"]?.int == 4 }, "\(signal)")
        #expect(advert["route"]?.string == "flood" && advert["hops"]?.int == 0)
        #expect(advert["from"]?.string == HexCodec.encode(Array(b.publicKey.bytes.prefix(4))))
        #expect(advert["rssi"]?.int != nil && advert["snr"]?.doubleValue != nil)
        #expect(packets.contains { $0["payload_type"]?.int == 5 }, "\(signal)")
        let message = try #require(signal.first { $0["kind"]?.string == "message" }, "\(signal)")
        #expect(message["rssi"] == .null && message["from"] == nil)
        #expect(signal.allSatisfy { ($0["time"]?.int ?? 0) >= Int64(start) })

        // since and limit.
        #expect(samples(d, #"{"id":5,"op":"samples_signal","limit":1}"#).count == 1)
        #expect(samples(d, #"{"id":6,"op":"samples_signal","since":4000000000}"#).isEmpty)
        #expect(ask(d, #"{"id":7,"op":"samples_signal"}"#)?.first { $0.0 == "capacity" }?.1.int == 4096)

        // On disk in the radio's folder, for a reader without the daemon.
        let folder = try #require(d.store?.directory)
        d.shutdown()
        let ring = try SampleRing(directory: folder, kind: .signal, readOnly: true)
        #expect(try ring.records().count == signal.count)
    }

    /// A sample file with a damaged header is started anew, one that cannot be written is logged
    /// once: the daemon's messages go on either way.
    @Test func aBadSampleFileCostsNoMessage() throws {
        let dir = temporaryDirectory("pm-samples")
        defer { removeTree(dir) }
        var o = SimWorld.Options()
        o.seed = 12
        o.epochBase = UInt32(truncatingIfNeeded: time(nil)) - 86_400
        let w = try SimWorld(topology: .builtIn(.line, companions: 2, repeaters: 0, rooms: 0), options: o)
        let b = w.companions[1]
        let r = try RadioPort(world: w, node: w.companions[0])
        let ops = FailingWrites(suffix: "/battery", error: .io, fromOffset: 1)
        var c = Daemon.Config(link: r.link)
        c.stateDir = dir + "/state"
        c.environment = ["XDG_RUNTIME_DIR": dir]
        c.storeOptions = StoreOptions(fileOps: ops)
        var log: [String] = []
        var folder = ""
        do {
            let d = try Daemon(config: c)
            defer { d.shutdown() }
            d.log = { log.append($0) }
            #expect(drive(d, r) { d.phase == .ready && d.storage.samples.batterySampledAt != nil }, "\(log)")
            folder = d.store?.directory ?? ""
        }
        // The signal file's header is overwritten; the battery file cannot be written any more.
        let fd = open(folder + "/signal", O_WRONLY)
        #expect(fd >= 0)
        _ = "garbage!".withCString { write(fd, $0, 8) }
        close(fd)
        ops.failing = true

        log = []
        let d = try Daemon(config: c)
        defer { d.shutdown() }
        d.log = { log.append($0) }
        #expect(drive(d, r) { d.phase == .ready && d.storage.samples.batterySampledAt != nil }, "\(log)")
        // (Said in the daemon's log as it opened the store it knew, before this test's log was set.)
        #expect(d.storage.samples.signal?.problem == "\(folder)/signal: it is not a sample file (no PMSR header); started anew (the samples in it are lost, nothing else)")
        // Two more readings: the failure is logged once.
        d.storage.samples.batteryIntervalMS = 0
        for _ in 0..<2 {
            d.sync.batteryCheckAt = 0
            #expect(drive(d, r) { d.sync.batteryTicket != nil })
            #expect(drive(d, r) { d.sync.batteryTicket == nil })
        }
        let failures = log.filter { $0.hasPrefix("samples: writing \(folder)/battery failed") }
        #expect(failures.count == 1, "\(log)")
        // A message arrives: stored, and its signal kept in the new file.
        b.receive(frame: try CommandFrame.sendChannelTextMessage(channel: 0, text: "still here", timestamp: b.epochNow).bytes)
        #expect(drive(d, r) { ((try? d.store?.messages(after: 0, limit: 10)) ?? []).contains { $0.textString.hasSuffix("still here") } }, "\(log)")
        #expect(drive(d, r) { !samples(d, #"{"id":1,"op":"samples_signal"}"#).isEmpty })
    }
}
