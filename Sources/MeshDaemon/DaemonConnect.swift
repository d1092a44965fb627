import Glibc
import MeshLink
import MeshNet
import MeshBridge
import MeshDaemonClient
import MeshOps

/// The radio link being made, without blocking the daemon's loop (the API, the hub, MQTT, hooks
/// and the watchdog go on meanwhile): a TCP radio's host is found (an IP literal, /etc/hosts, else
/// DNS over UDP to the servers of /etc/resolv.conf through MeshNet's `DNSLookup`, as the MQTT
/// connections do: no blocking `getaddrinfo`), then connected without blocking (`TCPConnector`,
/// every address in turn within the connect timeout); a BLE radio's L2CAP connect and GATT setup
/// run on the loop too (`BLEConnector`). A serial port's open does not wait (O_NONBLOCK, a lock
/// taken with LOCK_NB), so it is made at once and never comes here.
///
/// The radio owner (`RadioPart`) polls the connector's descriptors and runs its tick; when it has
/// an `outcome`, the daemon takes the link or schedules the next attempt.
final class RadioConnector {
    enum Outcome {
        case link(ByteLink)
        case failed(String)
    }

    private enum Step {
        case resolving(TCPAddress)
        case tcp(TCPConnector)
        case ble(BLEConnector)
        case done
    }

    private(set) var outcome: Outcome? = nil
    private var step: Step = .done
    private let timeoutMS: Int
    private var lookup: DNSQuery? = nil
    var hostsPath = "/etc/hosts"
    var resolvConfPath = "/etc/resolv.conf"
    var dnsPort: UInt16 = 53

    /// Starts connecting to a TCP radio.
    init(tcp address: TCPAddress, timeoutMS: Int, now: UInt64) {
        self.timeoutMS = timeoutMS
        if let literal = TCPLink.literalCandidates(address) {
            connect(address, literal, now: now)
            return
        }
        step = .resolving(address)
    }

    /// Starts connecting to a BLE radio.
    init(ble address: BLEAddress, timeoutMS: Int, configuration: ATTClient.Configuration, now: UInt64) {
        self.timeoutMS = timeoutMS
        let c = BLEConnector(address: address, timeoutMilliseconds: timeoutMS, now: now, configuration: configuration)
        step = .ble(c)
        check()
    }

    deinit { cancel() }

    /// Gives up on whatever is under way (a SIGHUP, the daemon stopping).
    func cancel() {
        closeDNS()
        switch step {
        case .tcp(let c): c.cancel()
        case .ble(let c): c.cancel()
        default: break
        }
        step = .done
    }

    /// What is being done, for the log and `status`.
    var activity: String {
        switch step {
        case .resolving(let a): return "resolving \(a.host)"
        case .tcp(let c): return "connecting to \(c.address)"
        case .ble(let c): return "connecting to Bluetooth device \(c.address)"
        case .done: return "done"
        }
    }

    // MARK: poll loop

    func pollDescriptors(into fds: inout [pollfd]) {
        switch step {
        case .resolving:
            for f in lookup?.descriptors ?? [] { fds.append(pollfd(fd: f, events: Int16(POLLIN), revents: 0)) }
        case .tcp(let c):
            if let f = c.fd { fds.append(pollfd(fd: f, events: Int16(POLLOUT), revents: 0)) }
        case .ble(let c):
            if let f = c.fd { fds.append(pollfd(fd: f, events: c.pollEvents, revents: 0)) }
        case .done:
            break
        }
    }

    func handle(_ p: pollfd, now: UInt64) -> Bool {
        switch step {
        case .resolving:
            guard let l = lookup, l.readable(p.fd, now: now) else { return false }
            dnsProgress(now: now)
        case .tcp(let c):
            guard p.fd == c.fd else { return false }
            c.ready(now: now)
            check()
        case .ble(let c):
            guard p.fd == c.fd else { return false }
            c.ready(revents: p.revents, now: now)
            check()
        case .done:
            return false
        }
        return true
    }

    /// Runs what is due; returns the next deadline.
    func tick(now: UInt64) -> UInt64? {
        switch step {
        case .resolving(let address):
            if lookup == nil { startLookup(address, now: now) }
            lookup?.tick(now: now)
            dnsProgress(now: now)
            if case .resolving = step { return lookup?.deadline }
            return tick(now: now)
        case .tcp(let c):
            c.tick(now: now)
            check()
            if case .tcp = step { return c.deadline }
            return nil
        case .ble(let c):
            c.tick(now: now)
            check()
            if case .ble = step { return c.deadline }
            return nil
        case .done:
            return nil
        }
    }

    // MARK: steps

    private func connect(_ address: TCPAddress, _ candidates: [TCPLink.Candidate], now: UInt64) {
        let c = TCPConnector(address: address, candidates: candidates, timeoutMilliseconds: timeoutMS, now: now)
        step = .tcp(c)
        check()
    }

    private func check() {
        switch step {
        case .tcp(let c):
            switch c.state {
            case .connecting: return
            case .connected(let l): finish(.link(l))
            case .failed(let e): finish(.failed(e.description))
            }
        case .ble(let c):
            switch c.state {
            case .connecting: return
            case .connected(let l): finish(.link(l))
            case .failed(let e): finish(.failed(e.description))
            }
        default:
            return
        }
    }

    private func finish(_ o: Outcome) {
        step = .done
        closeDNS()
        outcome = o
    }

    private func startLookup(_ address: TCPAddress, now: UInt64) {
        if let known = BrokerAddress.known(address.host, hostsPath: hostsPath) {
            connect(address, known.compactMap { TCPLink.Candidate(ip: $0.bytes, port: address.port) }, now: now)
            return
        }
        let config = ResolverConfig(parsing: StateFile.readString(resolvConfPath) ?? "")
        let l = DNSQuery(name: address.host, config: config, port: dnsPort, now: now)
        if case .failed(let why)? = l.outcome {
            finish(.failed(Self.sentence(why)))
            return
        }
        lookup = l
        dnsProgress(now: now)
    }

    /// When the lookup has an outcome: connects to what it found, or fails.
    private func dnsProgress(now: UInt64) {
        guard case .resolving(let address) = step, let outcome = lookup?.outcome else { return }
        closeDNS()
        switch outcome {
        case .failed(let why):
            finish(.failed(Self.sentence(why)))
        case .found(let raw):
            connect(address, raw.compactMap { TCPLink.Candidate(ip: $0, port: address.port) }, now: now)
        }
    }

    /// DNSLookup's reason ("cannot resolve NAME: ...") as a sentence.
    static func sentence(_ why: String) -> String { why.hasSuffix(".") ? why : why + "." }

    private func closeDNS() {
        lookup?.close()
        lookup = nil
    }
}
