import MeshLink
import Glibc
import MeshDaemonClient
import MeshOps

/// The systemd notification protocol (`sd_notify(3)`), by hand: one datagram of `KEY=value` lines
/// to the `AF_UNIX` socket named by `$NOTIFY_SOCKET` (a leading "@" means the abstract namespace).
/// Without `$NOTIFY_SOCKET` every call is a no-op.
///
/// A notification never blocks the daemon: the socket is non-blocking, so a receiver whose queue
/// is full (a service manager that is stuck, or a test that does not read) costs the notification,
/// never the loop. A READY=1 that could not be sent is sent again with the next status.
public final class SystemdNotify {
    public let socketPath: String?
    /// Half of `$WATCHDOG_USEC`, in milliseconds, when the service has a watchdog for this process.
    public let watchdogIntervalMS: UInt64?
    private var fd: Int32 = -1
    private var nextWatchdog: UInt64 = 0
    public private(set) var sentReady = false
    private var pendingReady: String?

    public init(environment: [String: String]) {
        let path = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        socketPath = path
        var interval: UInt64? = nil
        if let usec = environment["WATCHDOG_USEC"].flatMap({ UInt64($0) }), usec > 0 {
            // WATCHDOG_PID, when set, names the process the watchdog is meant for.
            if let pid = environment["WATCHDOG_PID"].flatMap({ Int32($0) }), pid != getpid() {
                interval = nil
            } else {
                interval = max(1, usec / 2000)
            }
        }
        watchdogIntervalMS = path == nil ? nil : interval
        if path != nil {
            fd = socket(AF_UNIX, SocketType.datagram | SocketFlags.closeOnExec | SocketFlags.nonBlocking, 0)
        }
    }

    deinit { if fd >= 0 { close(fd) } }

    public var enabled: Bool { socketPath != nil && fd >= 0 }

    /// Sends one notification, e.g. "READY=1\nSTATUS=connected". Returns false if it could not be sent.
    @discardableResult
    public func notify(_ state: String) -> Bool {
        guard enabled, let path = socketPath, case (var addr, let len)? = UnixSocket.address(path) else { return false }
        let bytes = Array(state.utf8)
        let n = bytes.withUnsafeBytes { buf in
            withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, buf.baseAddress, buf.count, SocketFlags.noSignal | SocketFlags.dontWait, $0, len)
                }
            }
        }
        return n == bytes.count
    }

    /// READY=1 with the status; until it could be sent, each later status and watchdog tick tries
    /// it again (with the newest status).
    public func ready(status: String) {
        if !sentReady {
            pendingReady = status
            if notify("READY=1\nSTATUS=\(status)") { sentReady = true; pendingReady = nil }
        } else {
            notify("STATUS=\(status)")
        }
    }

    public func status(_ text: String) {
        if pendingReady != nil { ready(status: text) } else { notify("STATUS=\(text)") }
    }

    public func stopping() { notify("STOPPING=1") }

    /// Sends WATCHDOG=1 when it is due; returns the next deadline (monotonic ms), or nil without a watchdog.
    public func tick(now: UInt64) -> UInt64? {
        guard let interval = watchdogIntervalMS, enabled else { return nil }
        if now >= nextWatchdog {
            if let status = pendingReady { ready(status: status) }
            notify("WATCHDOG=1")
            nextWatchdog = now + interval
        }
        return nextWatchdog
    }
}
