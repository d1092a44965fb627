import Glibc
import MeshLink
import MeshNet
import MeshOps

/// A `ByteLink` to a radio that a daemon owns: companion frames through the daemon's API socket
/// (`{"op":"tunnel"}`, then '<'/'>' framed frames, the same framing as serial and TCP).
///
/// The command line uses it instead of opening the serial port or TCP connection the daemon holds,
/// so every command keeps working unchanged. The daemon answers the handshake from its own,
/// serializes the commands with its own, and answers SYNC_NEXT_MESSAGE from its store: the
/// messages received since the last sync that reached NO_MORE_MESSAGES (see `TunnelQueue`), with
/// MSG_WAITING pushed as each new one is stored.
public final class DaemonTunnelLink: ByteLink {
    public let fd: Int32
    public let framing: LinkFraming = .stream
    public let socketPath: String
    public private(set) var lastReceiveMs: UInt64
    /// The radio's public key (hex) as the daemon reported it.
    public let radio: String?
    /// The operation classes the daemon lets this user use, when fewer than every class (a
    /// member of its `--api-group`); nil: every class.
    public let allowed: AllowedClasses?
    private var pending: [UInt8] = []
    private var closed = false

    public var description: String { "the daemon at \(socketPath)" }

    /// Connects and switches the connection to frames; `timeoutMS` bounds the wait for the daemon's answer.
    public init(socketPath: String, timeoutMS: Int = 5_000) throws(DaemonError) {
        self.socketPath = socketPath
        let fd: Int32
        do { fd = try UnixSocket.connect(path: socketPath) } catch {
            throw DaemonError(.link, "cannot reach the daemon at \(socketPath): \(error).")
        }
        self.fd = fd
        lastReceiveMs = monotonicMilliseconds()
        let request = Array((DaemonRequest(id: 1, op: .tunnel).line + "\n").utf8)
        var off = 0
        while off < request.count {
            let r = request.withUnsafeBytes { raw in retryingOnInterrupt { send(fd, raw.baseAddress! + off, request.count - off, SocketFlags.noSignal) } }
            guard case .success(let n) = r, n > 0 else { Glibc.close(fd); throw DaemonError(.link, "lost the connection to the daemon at \(socketPath).") }
            off += n
        }
        // The answer line, byte by byte so no frame byte after it is consumed here.
        var line: [UInt8] = []
        let deadline = monotonicMilliseconds() + UInt64(timeoutMS)
        while true {
            let now = monotonicMilliseconds()
            if now >= deadline {
                Glibc.close(fd)
                throw DaemonError(.timeout, "the daemon at \(socketPath) did not open its radio for this command within \(timeoutMS / 1000) s (it may still be reaching the radio: `pocketmesh` commands wait up to --timeout).")
            }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&p, 1, Int32(clamping: deadline - now)) <= 0 { continue }
            var b: UInt8 = 0
            guard case .success(let n) = retryingOnInterrupt({ Glibc.read(fd, &b, 1) }), n > 0 else {
                Glibc.close(fd)
                throw DaemonError(.link, "the daemon at \(socketPath) closed the connection.")
            }
            if b == 0x0A { break }
            line.append(b)
            if line.count > 65536 { Glibc.close(fd); throw DaemonError(.internal, "the daemon sent an over-long line.") }
        }
        let parsed: JSON
        do { parsed = try line.withUnsafeBytes { raw throws(JSONError) in try JSONParser.parse(raw) } } catch {
            Glibc.close(fd)
            throw DaemonError(.internal, "the daemon's answer is not JSON: \(error).")
        }
        guard let response = DaemonResponse(json: parsed) else {
            Glibc.close(fd)
            throw DaemonError(.internal, "the daemon's answer is not a response.")
        }
        if case .failure(let e) = response.result {
            Glibc.close(fd)
            throw e
        }
        radio = response["radio"]?.string
        allowed = response["allows"]?.string.flatMap { try? AllowedClasses(parsing: $0) }
        UnixSocket.setNonBlocking(fd)
    }

    deinit { close() }

    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(LinkError) -> Int {
        switch retryingOnInterrupt({ Glibc.read(fd, buffer.baseAddress, buffer.count) }) {
        case .success(0): throw .lost(description, reason: "the daemon closed the connection")
        case .success(let n):
            lastReceiveMs = monotonicMilliseconds()
            return n
        case .failure(.wouldBlock): return 0
        case .failure(let e): throw .lost(description, reason: e.message)
        }
    }

    public func write(_ bytes: UnsafeRawBufferPointer) throws(LinkError) {
        pending.append(contentsOf: bytes)
        try flush()
    }

    public var hasPendingOutput: Bool { !pending.isEmpty }

    public func flush() throws(LinkError) {
        while !pending.isEmpty {
            let r = pending.withUnsafeBytes { raw in retryingOnInterrupt { send(fd, raw.baseAddress, raw.count, SocketFlags.noSignal) } }
            guard case .success(let n) = r else {
                if case .failure(.wouldBlock) = r { break }
                if case .failure(let e) = r { throw .lost(description, reason: e.message) }
                break
            }
            pending.removeFirst(n)
        }
        if pending.count > 64 * 1024 { throw .stalled(description) }
    }

    public func hangupError() -> LinkError { .lost(description, reason: "the daemon closed the connection") }

    public func close() {
        if closed { return }
        closed = true
        Glibc.close(fd)
    }
}
