import Glibc
import MeshLink
@testable import MeshDaemon
import MeshNet
import MeshDaemonClient
import MeshOps

/// A fresh temporary folder for one test.
func temporaryDirectory(_ tag: String = "pm") -> String {
    var template = Array("/tmp/\(tag)-XXXXXX".utf8CString)
    let p = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
    return String(cString: p!)
}

func removeTree(_ path: String) {
    guard let d = opendir(path) else { unlink(path); return }
    while let e = readdir(d) {
        let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        if name == "." || name == ".." { continue }
        let full = path + "/" + name
        var st = stat()
        if lstat(full, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR { removeTree(full) } else { unlink(full) }
    }
    closedir(d)
    rmdir(path)
}

func readFile(_ path: String) -> String { StateFile.readString(path) ?? "" }

/// Polls the server's descriptors once (no waiting) and dispatches what is ready.
func service(_ server: APIServer, rounds: Int = 3) {
    for _ in 0..<rounds {
        var fds: [pollfd] = []
        server.pollDescriptors(into: &fds)
        let n = fds.withUnsafeMutableBufferPointer { poll($0.baseAddress, nfds_t($0.count), 5) }
        if n <= 0 { continue }
        for p in fds where p.revents != 0 { server.handle(p) }
    }
}

/// A blocking test client on the API socket.
final class LineClient {
    private(set) var fd: Int32
    var buffer: [UInt8] = []
    init(_ path: String) throws { fd = try UnixSocket.connect(path: path) }
    deinit { close() }

    /// Closes the connection once. (Tests run in parallel in one process: a second close(2) of the
    /// same number would close whatever another test opened under it since.)
    func close() {
        if fd >= 0 { Glibc.close(fd); fd = -1 }
    }

    func send(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, SocketFlags.noSignal) }
    }

    /// Reads one line, servicing the server between reads; nil after `rounds` tries or on EOF.
    func line(_ server: APIServer?, rounds: Int = 200) -> String? {
        for _ in 0..<rounds {
            if let nl = buffer.firstIndex(of: 0x0A) {
                let l = String(decoding: buffer[..<nl], as: UTF8.self)
                buffer.removeSubrange(...nl)
                return l
            }
            if let server { service(server, rounds: 1) }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&p, 1, server == nil ? 100 : 2) > 0 {
                var chunk = [UInt8](repeating: 0, count: 4096)
                let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n <= 0 { return nil }
                buffer.append(contentsOf: chunk[0..<n])
            }
        }
        return nil
    }

    func json(_ server: APIServer?) -> JSON? {
        guard let l = line(server) else { return nil }
        return try? JSONParser.parse(l)
    }

    /// True once the server closed the connection.
    func isClosed(_ server: APIServer) -> Bool {
        for _ in 0..<100 {
            service(server, rounds: 1)
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&p, 1, 2) > 0 {
                var chunk = [UInt8](repeating: 0, count: 65536)
                let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n == 0 || (n < 0 && errno == ECONNRESET) { return true }
            }
        }
        return false
    }
}
