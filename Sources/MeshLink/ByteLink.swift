import Glibc

/// How a link delimits companion frames.
public enum LinkFraming: Sendable {
    /// A byte stream: frames carry the `<`/`>` + u16 length header (serial, TCP).
    case stream
    /// One whole companion frame per `read` and per `write`, no header (BLE).
    case datagram
}

/// A non-blocking byte link to a radio, driven by a `PollLoop`.
///
/// - `read(into:)` returns the number of bytes read, 0 when nothing is available now; it throws
///   `LinkError.lost` when the peer went away (EOF, hangup, reset).
/// - `write(_:)` sends what the kernel takes now and keeps the rest in a small bounded buffer that
///   `flush()` drains when the descriptor becomes writable; a full buffer throws `.stalled`.
/// - For `.datagram` links each read returns one whole frame and each write sends one whole frame.
public protocol ByteLink: AnyObject, CustomStringConvertible {
    /// The descriptor to poll for readability (and writability while `hasPendingOutput`).
    var fd: Int32 { get }
    var framing: LinkFraming { get }
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(LinkError) -> Int
    func write(_ bytes: UnsafeRawBufferPointer) throws(LinkError)
    /// True while bytes wait in the out-buffer (poll for `.writable` and call `flush()`).
    var hasPendingOutput: Bool { get }
    /// Writes buffered bytes; call when the descriptor is writable.
    func flush() throws(LinkError)
    /// Monotonic ms of the last successful read (or of opening), for inactivity checks.
    var lastReceiveMs: UInt64 { get }
    /// Called by the poll loop when it reports hangup or error on `fd`; returns the error to report.
    func hangupError() -> LinkError
    /// Monotonic ms at which the link needs `handleDeadline` (a protocol timeout), if any.
    var deadline: UInt64? { get }
    /// Called by the poll loop at `deadline`; throws when the link must be given up.
    func handleDeadline(now: UInt64) throws(LinkError)
    func close()
}

extension ByteLink {
    public var deadline: UInt64? { nil }
    public func handleDeadline(now: UInt64) throws(LinkError) {}

    public func write(_ bytes: [UInt8]) throws(LinkError) {
        var failure: LinkError? = nil
        bytes.withUnsafeBytes { raw in
            do throws(LinkError) { try write(raw) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    /// Milliseconds since the last byte arrived.
    public func idleMilliseconds(now: UInt64) -> UInt64 {
        now >= lastReceiveMs ? now - lastReceiveMs : 0
    }
}

/// A fixed-capacity FIFO of bytes waiting to be written. Allocated once; never grows.
struct OutBuffer {
    private var storage: [UInt8]
    private var head = 0
    private(set) var count = 0

    init(capacity: Int) { storage = [UInt8](repeating: 0, count: capacity) }

    var capacity: Int { storage.count }
    var isEmpty: Bool { count == 0 }
    var freeSpace: Int { storage.count - count }

    mutating func append(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count <= freeSpace else { return false }
        var tail = (head + count) % storage.count
        for byte in bytes {
            storage[tail] = byte
            tail += 1
            if tail == storage.count { tail = 0 }
        }
        count += bytes.count
        return true
    }

    /// Calls `send` with the longest contiguous run of pending bytes; drops what it reports sent.
    /// Repeats until empty or `send` returns less than offered. Returns the bytes sent.
    mutating func drain(_ send: (UnsafeRawBufferPointer) throws(Errno) -> Int) throws(Errno) -> Int {
        var total = 0
        while count > 0 {
            let run = min(count, storage.count - head)
            let start = head
            let result = storage.withUnsafeBytes { raw in
                Result { () throws(Errno) -> Int in try send(UnsafeRawBufferPointer(rebasing: raw[start..<(start + run)])) }
            }
            let sent = try result.get()
            total += sent
            head = (head + sent) % storage.count
            count -= sent
            if count == 0 { head = 0 }
            if sent < run { break }
        }
        return total
    }
}

/// Shared write path for stream links: direct write when idle, buffer the remainder.
struct StreamWriter {
    var out: OutBuffer

    init(capacity: Int) { out = OutBuffer(capacity: capacity) }

    /// `send` returns bytes accepted; throws `Errno.wouldBlock` when none are.
    mutating func write(_ bytes: UnsafeRawBufferPointer, name: String,
                        send: (UnsafeRawBufferPointer) throws(Errno) -> Int) throws(LinkError) {
        var remaining = bytes
        if out.isEmpty {
            while !remaining.isEmpty {
                do {
                    let sent = try send(remaining)
                    remaining = UnsafeRawBufferPointer(rebasing: remaining[sent...])
                } catch .wouldBlock {
                    break
                } catch {
                    throw Self.writeError(error, name: name)
                }
            }
        }
        if remaining.isEmpty { return }
        if !out.append(remaining) { throw .stalled(name) }
    }

    mutating func flush(name: String, send: (UnsafeRawBufferPointer) throws(Errno) -> Int) throws(LinkError) {
        do {
            _ = try out.drain(send)
        } catch .wouldBlock {
            return
        } catch {
            throw Self.writeError(error, name: name)
        }
    }

    static func writeError(_ error: Errno, name: String) -> LinkError {
        switch error {
        case .brokenPipe, .connectionReset, .ioError, .noSuchDevice, .noSuchDeviceOrAddress, .notConnected:
            return .lost(name, reason: "write failed: \(error.message.lowercased())")
        case .timedOut:
            return .lost(name, reason: "the peer stopped acknowledging data")
        default:
            return .lost(name, reason: "write failed: \(error)")
        }
    }
}
