import Glibc
import MeshDaemon
import MeshLink
import MeshNode

/// The node's systemd side (`Type=notify`, `WatchdogSec=`): READY=1 once the radio is up, STATUS=
/// with the radio's recoveries, and WATCHDOG=1 only while the radio shows that it works. At each
/// watchdog interval (half of WatchdogSec) the radio is asked to show it (a KISS modem's GetRadio,
/// an SX1262's health check) and the watchdog is fed when it did since the interval before: a TX
/// done, a packet heard, an answer, a good health check. A radio that is dead without the driver
/// noticing leaves the watchdog unfed, and systemd restarts the node within WatchdogSec and one
/// interval. Without NOTIFY_SOCKET nothing is sent and no timer runs.
final class NodeLiveness {
    let notify: SystemdNotify
    unowned let radio: NodeRadio
    private var lastCheck: UInt64 = 0
    private var starved = false

    init(radio: NodeRadio, environment: [String: String] = NodeLiveness.systemdEnvironment()) {
        self.radio = radio
        notify = SystemdNotify(environment: environment)
    }

    /// The variables of sd_notify(3) this process was given.
    static func systemdEnvironment() -> [String: String] {
        var env: [String: String] = [:]
        for k in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"] { if let v = getenv(k) { env[k] = String(cString: v) } }
        return env
    }

    /// The radio is up: READY=1, and the watchdog's checks start; `clock` brings the node's
    /// clock to now (and gives it), `pump` runs what the check scheduled.
    func start(loop: PollLoop, clock: @escaping () -> UInt64, pump: @escaping () -> Void) {
        notify.ready(status: statusLine)
        guard let interval = notify.watchdogIntervalMS else { return }
        lastCheck = clock()
        notify.notify("WATCHDOG=1")
        func next() {
            loop.addTimer(after: interval) { [unowned self] in
                if self.tick(now: clock()) { self.notify.notify("WATCHDOG=1") }
                pump()
                next()
            }
        }
        next()
    }

    /// One watchdog interval: whether the radio showed that it works since the last one (then
    /// the watchdog is fed); and the radio is asked again for the next.
    func tick(now: UInt64) -> Bool {
        let alive = (radio.lastAlive ?? 0) >= lastCheck
        if !alive && !starved {
            writeError("pocketmesh node: \(radio.description) showed no sign of working for \((now &- lastCheck) / 1000) s (no TX done, packet or answer); the systemd watchdog is no longer fed.")
            notify.status("radio not answering; " + recoveriesText)
        } else if alive && starved {
            notify.status(statusLine)
        }
        starved = !alive
        lastCheck = now
        radio.probe()
        return alive
    }

    /// A recovery happened: the status line says how many of each.
    func recovered() { notify.status(statusLine) }

    var statusLine: String { "radio \(radio.description) working; " + recoveriesText }

    private var recoveriesText: String { radio.recoveries.map { "recoveries: " + $0.summary } ?? "no recoveries to count" }
}
