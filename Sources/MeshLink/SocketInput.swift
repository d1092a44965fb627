import Glibc

/// What one non-blocking read from a client's stream socket (or a pty) gave a server: the input
/// side of `SocketOutput`. The daemon's API server, the hub, the simulator's sockets and
/// `pocketmesh node`'s companion server read their clients through it.
public enum SocketInput: Equatable {
    /// This many bytes, at the front of the buffer.
    case bytes(Int)
    /// Nothing is waiting (EAGAIN): the poll loop says when there is.
    case wouldBlock
    /// The peer closed its side (`read` returned 0).
    case endOfStream
    /// The socket failed (e.g. ECONNRESET, or EIO from a pty nobody holds open).
    case failed(Errno)

    /// `read(2)` of `fd` into `buffer`, EINTR retried (`retryingOnInterrupt`).
    public static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> SocketInput {
        switch retryingOnInterrupt({ Glibc.read(fd, buffer.baseAddress, buffer.count) }) {
        case .success(0): return .endOfStream
        case .success(let n): return .bytes(n)
        case .failure(.wouldBlock): return .wouldBlock
        case .failure(let error): return .failed(error)
        }
    }

    /// The same into the whole of `buffer`.
    public static func read(_ fd: Int32, into buffer: inout [UInt8]) -> SocketInput {
        buffer.withUnsafeMutableBytes { read(fd, into: $0) }
    }
}
