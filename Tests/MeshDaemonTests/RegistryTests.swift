import Glibc
import Testing
@testable import MeshDaemon

@Suite struct RegistryTests {
    @Test func linkSpecsAreCanonical() {
        #expect(DaemonRegistry.canonicalLink("tcp:Radio.local") == "tcp:radio.local:5000")
        #expect(DaemonRegistry.canonicalLink("tcp:localhost:5001") == "tcp:127.0.0.1:5001")
        #expect(DaemonRegistry.canonicalLink("serial:/nonexistent/tty") == "serial:/nonexistent/tty")
        #expect(DaemonRegistry.slug(forLink: "tcp:127.0.0.1:5000") == "tcp-127.0.0.1-5000")
        #expect(DaemonRegistry.slug(forLink: "serial:/dev/ttyUSB0") == "ttyUSB0")
        #expect(DaemonRegistry.runtimeDirectory(environment: [:]) == "/tmp/pocketmesh-\(getuid())")
    }

    @Test func findsOnlyLiveDaemons() throws {
        let dir = temporaryDirectory("pm-reg")
        defer { removeTree(dir) }
        let server = try APIServer(path: dir + "/a.sock")
        defer { server.shutdown() }
        try UnixSocket.makeDirectory(dir + "/pocketmesh")
        let live = DaemonRegistry.Entry(pid: getpid(), link: "tcp:127.0.0.1:5000", socket: server.path, radio: "abcdef")
        try StateFile.write(dir + "/pocketmesh/a.json", live.json.text)
        let dead = DaemonRegistry.Entry(pid: getpid(), link: "tcp:127.0.0.1:6000", socket: dir + "/gone.sock")
        try StateFile.write(dir + "/pocketmesh/b.json", dead.json.text)
        let env = ["XDG_RUNTIME_DIR": dir]
        #expect(DaemonRegistry.find(link: "tcp:localhost:5000", environment: env) == live)
        #expect(DaemonRegistry.find(link: "tcp:127.0.0.1:6000", environment: env) == nil)
        #expect(DaemonRegistry.find(radio: "abc", environment: env) == live)
    }

    @Test func deframerSkipsNoiseAndOversizedFrames() {
        var d = StreamDeframer(marker: UInt8(ascii: ">"))
        var frames: [[UInt8]] = []
        let bytes: [UInt8] = [0x00, 0x41] + StreamDeframer.frame([0x05, 1, 2], marker: 0x3E)
            + [0x3E, 0xFF, 0x00] + [UInt8](repeating: 7, count: 255)  // 255 > 176: dropped
            + StreamDeframer.frame([0x0A], marker: 0x3E)
        // Fed one byte at a time, as a slow serial port delivers it.
        for b in bytes { [b].withUnsafeBytes { d.feed($0) { frames.append(Array($0)) } } }
        #expect(frames == [[0x05, 1, 2], [0x0A]])
        // 2 noise bytes, then the rejected frame: its 3 header bytes and 255 payload bytes.
        #expect(d.skippedBytes == 2 + 3 + 255)
    }
}
