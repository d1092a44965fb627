/// How long to wait before connecting to a broker again: `minMS` after the first failure, doubling
/// to `maxMS`. The delay goes back to `minMS` only once a connection has stayed up for `stableMS`:
/// a broker that accepts a connection (CONNACK) and closes it at once, again and again, is retried
/// ever more slowly, not every second. Sans-I/O: the caller passes the time and adds any jitter.
public struct ReconnectBackoff: Sendable, Equatable {
    public var minMS: UInt64
    public var maxMS: UInt64
    public var stableMS: UInt64
    /// The last delay given (0 before any failure, or after a stable connection).
    public private(set) var currentMS: UInt64 = 0
    /// When the connection now up was accepted.
    public private(set) var upSince: UInt64? = nil

    public init(minMS: UInt64 = 1_000, maxMS: UInt64 = 60_000, stableMS: UInt64 = 60_000) {
        self.minMS = minMS
        self.maxMS = max(minMS, maxMS)
        self.stableMS = stableMS
    }

    /// The broker accepted the connection.
    public mutating func connected(now: UInt64) { upSince = now }

    /// The connection, or an attempt, ended: the delay before the next attempt.
    public mutating func failed(now: UInt64) -> UInt64 {
        if let t = upSince, now >= t, now - t >= stableMS { currentMS = 0 }
        upSince = nil
        currentMS = currentMS == 0 ? minMS : min(maxMS, currentMS * 2)
        return currentMS
    }
}
