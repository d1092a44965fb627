import Glibc
import MeshCompanion
import MeshLink
import MeshStore
import Testing
import MeshDaemonClient
@testable import MeshDaemon
@testable import MeshNode
@testable import MeshSim
import MeshOps

/// The system's file operations, whose writes to the files whose path ends with `suffix` fail
/// with `error` while `failing` is set (from `fromOffset` on: a full disk for the message log, an
/// I/O error past the header of a samples file); everything else works.
final class FailingWrites: FileOps {
    let real = SystemFileOps()
    let suffix: String, error: FileErrno, fromOffset: UInt64
    var failing = false
    private var chosen: Set<Int32> = []

    init(suffix: String, error: FileErrno, fromOffset: UInt64 = 0) {
        self.suffix = suffix
        self.error = error
        self.fromOffset = fromOffset
    }

    func open(_ path: String, flags: Int32, mode: UInt32) throws(FileErrno) -> Int32 {
        let fd = try real.open(path, flags: flags, mode: mode)
        if path.hasSuffix(suffix) { chosen.insert(fd) } else { chosen.remove(fd) }
        return fd
    }
    func close(_ fd: Int32) { chosen.remove(fd); real.close(fd) }
    func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws(FileErrno) -> Int {
        try real.read(fd, into: buffer, at: offset)
    }
    func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws(FileErrno) {
        if failing && chosen.contains(fd) && offset >= fromOffset { throw error }
        try real.write(fd, bytes, at: offset)
    }
    func sync(_ fd: Int32, dataOnly: Bool) throws(FileErrno) { try real.sync(fd, dataOnly: dataOnly) }
    func truncate(_ fd: Int32, to length: UInt64) throws(FileErrno) { try real.truncate(fd, to: length) }
    func size(_ fd: Int32) throws(FileErrno) -> UInt64 { try real.size(fd) }
    func rename(_ from: String, _ to: String) throws(FileErrno) { try real.rename(from, to) }
    func unlink(_ path: String) throws(FileErrno) { try real.unlink(path) }
    func makeDirectory(_ path: String, mode: UInt32) throws(FileErrno) { try real.makeDirectory(path, mode: mode) }
    func setMode(_ fd: Int32, _ mode: UInt32) throws(FileErrno) { try real.setMode(fd, mode) }
    func lockExclusive(_ fd: Int32) throws(FileErrno) -> Bool { try real.lockExclusive(fd) }
    func exists(_ path: String) -> Bool { real.exists(path) }
}

/// The daemon takes no message off the radio that it has no place on disk for: while the log
/// cannot be written, the message taken meanwhile waits in the store's inbox and the rest stay
/// on the radio, so a stop loses nothing.
@Suite(.serialized) struct NothingLostTests {
    final class LogBox { var lines: [String] = [] }

    @Test func aStopWhileTheLogCannotBeWrittenLosesNothing() throws {
        let dir = temporaryDirectory("pm-nl")
        defer { removeTree(dir) }
        var o = SimWorld.Options()
        o.seed = 7
        o.companion.offlineQueueSize = 64
        o.epochBase = UInt32(truncatingIfNeeded: time(nil)) - 86_400
        let w = try SimWorld(topology: .builtIn(.line, companions: 2, repeaters: 0, rooms: 0), options: o)
        let b = w.companions[1]
        func queue(_ text: String) throws {
            b.receive(frame: try CommandFrame.sendChannelTextMessage(channel: 0, text: text, timestamp: b.epochNow).bytes)
            w.mesh.run(for: 4_000)
        }
        for i in 0..<2 { try queue("before-\(i)") }
        let r = try RadioPort(world: w, node: w.companions[0])
        let ops = FailingWrites(suffix: "/messages.log", error: .noSpace)
        func daemon() throws -> (Daemon, LogBox) {
            var c = Daemon.Config(link: r.link)
            c.stateDir = dir + "/state"
            c.environment = ["XDG_RUNTIME_DIR": dir]
            c.storeOptions = StoreOptions(fileOps: ops)
            let d = try Daemon(config: c)
            let box = LogBox()
            d.log = { box.lines.append($0) }
            return (d, box)
        }
        func texts(_ d: Daemon) -> [String] {
            ((try? d.store?.messages(after: 0, limit: 1000, incomingOnly: true)) ?? []).map(\.textString)
        }
        var syncs = 0
        r.onCommand = { _, f in
            if f.first == CommandCode.syncNextMessage.rawValue { syncs += 1 }
            return true
        }
        var (d, log) = try daemon()
        #expect(drive(d, r) { texts(d).count == 2 && d.phase == .ready }, "\(log.lines)")

        // The disk fills up; four more messages wait on the radio.
        ops.failing = true
        for i in 0..<4 { try queue("during-\(i)") }
        #expect(drive(d, r) { d.store?.heldMessages.count == 1 }, "\(log.lines)")
        let syncsWhenFull = syncs
        #expect(drive(d, r, limitMS: 1_500) { false } == false)
        #expect(syncs == syncsWhenFull, "the radio was asked for more while the log could not be written")
        #expect(log.lines.contains { $0.contains("waits in the store's inbox (on disk)") }, "\(log.lines)")
        // SIGTERM: the daemon stops; nothing is in memory only.
        #expect(d.storage.unsaved.isEmpty)
        d.settle(.stop, now: monotonicMilliseconds())
        #expect(drive(d, r) { d.stopping })
        d.shutdown()

        // Room again: the held message and the three the radio kept are all stored, once each.
        ops.failing = false
        (d, log) = try daemon()
        defer { d.shutdown() }
        #expect(drive(d, r) { texts(d).count == 6 }, "\(texts(d)) \(log.lines)")
        #expect(texts(d).allSatisfy { t in texts(d).filter { $0 == t }.count == 1 })
        #expect((0..<4).allSatisfy { i in texts(d).contains { $0.hasSuffix("during-\(i)") } }, "\(texts(d))")
    }
}
