import Glibc

/// What a server has to write to one client of a non-blocking stream socket: the bytes queued and
/// how far they are sent. `flush` writes what the socket takes now and keeps the rest; the buffer
/// is compacted once its sent part passes 16 KiB, and emptied (its storage kept when small) when
/// all is sent. The daemon's API server and the hub keep one per client.
public struct SocketOutput {
    /// The queued bytes; those before `start` are sent. Append to it directly.
    public var bytes: [UInt8] = []
    public private(set) var start = 0

    public init() {}

    /// Bytes queued and not yet sent.
    public var unsent: Int { bytes.count - start }

    public mutating func append(contentsOf more: some Sequence<UInt8>) { bytes.append(contentsOf: more) }

    /// Sends what the socket takes without blocking. False when the peer is gone or the socket
    /// failed (anything but would-block): the caller drops the client.
    public mutating func flush(to fd: Int32) -> Bool {
        while unsent > 0 {
            let (from, count) = (start, unsent)
            let r = bytes.withUnsafeBytes { raw in
                retryingOnInterrupt { send(fd, raw.baseAddress! + from, count, SocketFlags.noSignal) }
            }
            guard case .success(let n) = r else {
                if case .failure(.wouldBlock) = r { break }
                return false
            }
            start += n
        }
        if unsent == 0 {
            bytes.removeAll(keepingCapacity: bytes.capacity <= 4096)
            start = 0
        } else if start > 16 * 1024 {
            bytes.removeFirst(start)
            start = 0
        }
        return true
    }
}
