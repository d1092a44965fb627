import Glibc
import MeshAir
import MeshBridge
import struct MeshCompanion.PublicKey
import MeshDaemonClient
import MeshLink
import MeshNode
import MeshSession
import MeshSim
import MeshOps

/// `--radio`: which radio the node runs on.
enum NodeRadioSpec: Equatable {
    /// The simulator's air socket (`pocketmesh sim --air-port`), as the topology's external node NAME.
    case air(host: String, port: UInt16, name: String)
    /// MeshCore's KISS modem firmware on a serial port.
    case kiss(path: String, speed: SerialSpeed)
    /// An SX1262 on a spidev bus (nil: the --hat preset's), its pins on a GPIO chip.
    case sx1262(spidev: String?)

    init(parsing text: String) throws {
        if text.hasPrefix("kiss:") {
            var path = String(text.dropFirst(5))
            var speed = SerialSpeed.default
            if let at = path.lastIndex(of: "@") {
                guard let baud = Int(path[path.index(after: at)...]), let s = SerialSpeed(baud: baud) else {
                    throw ClientError.usage("--radio \(text): the baud rate must be one of \(SerialSpeed.supportedBauds.map(String.init).joined(separator: ", ")).")
                }
                speed = s
                path = String(path[..<at])
            }
            guard !path.isEmpty else { throw ClientError.usage("--radio \(text): give the modem's serial port, kiss:PATH[@BAUD].") }
            self = .kiss(path: path, speed: speed)
            return
        }
        if text.hasPrefix("air:") {
            let rest = text.dropFirst(4)
            guard let slash = rest.lastIndex(of: "/"), let colon = rest[..<slash].lastIndex(of: ":"),
                  let port = UInt16(rest[rest.index(after: colon)..<slash]), port > 0 else {
                throw ClientError.usage("--radio \(text): the air socket is air:HOST:PORT/NAME (NAME: the topology's external node).")
            }
            let name = String(rest[rest.index(after: slash)...])
            guard !name.isEmpty, name.utf8.count <= 31 else { throw ClientError.usage("--radio \(text): NAME must be 1 to 31 bytes.") }
            self = .air(host: String(rest[..<colon]), port: port, name: name)
            return
        }
        if text.hasPrefix("sx1262:"), text.count > 7 {
            self = .sx1262(spidev: String(text.dropFirst(7)))
            return
        }
        if text == "sx1262" {
            self = .sx1262(spidev: nil)
            return
        }
        throw ClientError.usage("--radio \(text): give kiss:PATH[@BAUD], sx1262[:SPIDEV] or air:HOST:PORT/NAME.")
    }
}

/// A radio under a node: packets to and from the node's air, from descriptors on the poll loop.
protocol NodeRadio: AnyObject {
    var description: String { get }
    /// Puts the radio's descriptors on `loop` and sets it up; `pump` runs the node's clock,
    /// `fail` stops the node with an error.
    func attach(to loop: PollLoop, air: RadioAir, params: RadioParams, pump: @escaping () -> Void, fail: @escaping (Error) -> Void) throws
    /// Starts sending one packet.
    func send(_ packet: [UInt8])
    func close()
    /// What the radio's driver recovered from (nil: a radio with nothing to recover, the air socket).
    var recoveries: RadioRecoveries? { get }
    /// Each recovery, once, with a sentence (set by the host: it logs and reports them).
    var onRecovery: ((RadioRecovery, String) -> Void)? { get set }
    /// When the radio last showed that it works (the node's clock), if it did.
    var lastAlive: UInt64? { get }
    /// Asks the radio to show that it works (a health check); the answer moves `lastAlive`.
    func probe()
}

/// A radio reached over a byte link (serial, TCP).
protocol LinkRadio: NodeRadio {
    var link: ByteLink { get }
    /// The link is up: say hello, set the radio's parameters; `fail` stops the node later.
    func start(params: RadioParams, fail: @escaping (Error) -> Void) throws
    /// Bytes from the link. Throws when the other side refuses us (the node then stops).
    func received(_ bytes: UnsafeRawBufferPointer) throws
}

extension LinkRadio {
    func attach(to loop: PollLoop, air: RadioAir, params: RadioParams, pump: @escaping () -> Void, fail: @escaping (Error) -> Void) throws {
        loop.attach(link, onReceive: { [unowned self] bytes in
            air.run(until: monotonicMilliseconds())
            do { try self.received(bytes) } catch { fail(error) }
            pump()
        }, onError: { [unowned self] e in fail(ClientError.link("\(self.description): \(e).")) })
        try start(params: params, fail: fail)
    }

    func close() { link.close() }
}

/// The simulator's air socket: `AirFrame`s over TCP; the simulator's external node does the
/// queueing, timing and listen-before-talk of the air it is on.
final class AirSocketRadio: LinkRadio {
    let link: ByteLink
    let name: String
    let air: RadioAir
    private var inBuffer: [UInt8] = []
    var description: String { "air \(link) as \(name)" }
    var recoveries: RadioRecoveries? { nil }
    var onRecovery: ((RadioRecovery, String) -> Void)?
    /// The simulator's air is there while its socket is (a closed one stops the node).
    var lastAlive: UInt64? { monotonicMilliseconds() }
    func probe() {}

    init(host: String, port: UInt16, name: String, air: RadioAir) throws {
        do { link = try TCPLink(connectingTo: TCPAddress(host: host, port: port)) } catch {
            throw ClientError.link("cannot reach the air socket at \(host):\(port): \(error)")
        }
        self.name = name
        self.air = air
    }

    func start(params: RadioParams, fail: @escaping (Error) -> Void) throws { try link.write(AirFrame.hello(name).encoded) }

    func received(_ bytes: UnsafeRawBufferPointer) throws {
        inBuffer += bytes
        guard let frames = AirFrame.take(&inBuffer) else { throw ClientError.link("the air socket sent a malformed frame.") }
        for f in frames {
            switch f {
            case let .heard(snr, rssi, packet): air.heard(packet, snr: Double(snr) / 4, rssi: Int(rssi))
            case let .error(text): throw ClientError.link("the air socket refused us: \(text).")
            case .hello, .send: throw ClientError.link("the air socket sent an unexpected frame.")
            }
        }
    }

    func send(_ packet: [UInt8]) { try? link.write(AirFrame.send(packet).encoded) }
}

/// MeshCore's KISS modem firmware over serial (the protocol is MeshNode's `KISSHost`). At start
/// the port is asked what it is (`KISSIdentify`): anything but a KISS modem stops the node.
final class KISSRadio: LinkRadio {
    let link: ByteLink
    let host: KISSHost
    let path: String
    private var failed: ((Error) -> Void)?
    var description: String { "kiss \(link)" }
    var recoveries: RadioRecoveries? { host.recoveries }
    var onRecovery: ((RadioRecovery, String) -> Void)? {
        get { host.onRecovery }
        set { host.onRecovery = newValue }
    }
    var lastAlive: UInt64? { host.lastHeard }
    func probe() { host.probe("the watchdog's check") }

    init(path: String, speed: SerialSpeed, air: RadioAir) throws {
        do { link = try SerialLink(path: path, speed: speed) } catch {
            throw ClientError.link("cannot open the KISS modem at \(path): \(error)")
        }
        self.path = path
        host = KISSHost(air: air)
        host.write = { [unowned self] bytes in
            do { try self.link.write(bytes) } catch { self.failed?(ClientError.link("cannot write to the KISS modem at \(path): \(error).")) }
        }
        // What answers on the port, before anything else is sent: anything but a KISS modem
        // stops the node (exit 3) within `KISSIdentify.boundMs`.
        let v = try Self.identify(link, path: path)
        guard case .modem = v else { throw ClientError.link(KISSIdentify.refusal(v, port: path)! + ".") }
    }

    /// What answers on `link` (`KISSIdentify`, its writes and reads done here, before the loop runs).
    static func identify(_ link: ByteLink, path: String) throws -> KISSIdentify.Verdict {
        var id = KISSIdentify(now: monotonicMilliseconds())
        var buf = [UInt8](repeating: 0, count: 512)
        while true {
            let (out, wake) = id.poll(now: monotonicMilliseconds())
            if let out {
                do { try link.write(out) } catch { throw ClientError.link("cannot write to \(path): \(error).") }
            }
            guard let wake else { break }
            let now = monotonicMilliseconds()
            // Not ready (the time passed, or a signal ended the wait early): poll again.
            guard wake > now, (try? FileDescriptor(rawValue: link.fd).poll(Int16(POLLIN), timeout: Int32(wake - now))) == true else { continue }
            let n: Int
            do { n = try buf.withUnsafeMutableBytes { try link.read(into: $0) } } catch {
                throw ClientError.link("cannot read \(path): \(error).")
            }
            if n > 0 { id.feed(buf[0..<n]) }
        }
        return id.verdict ?? .silent
    }

    func start(params: RadioParams, fail: @escaping (Error) -> Void) throws {
        failed = fail
        host.onDead = { [unowned self] text in fail(ClientError.link("\(self.description): \(text).")) }
        host.start(params: params)
    }
    func received(_ bytes: UnsafeRawBufferPointer) throws { host.receive(bytes) }
    func send(_ packet: [UInt8]) { host.send(packet) }

    /// The modem's identity (GetIdentity), asked for at start-up before the loop runs: waits up to
    /// `timeoutMs` for the answer.
    func modemIdentity(timeoutMs: UInt64 = 5000) throws -> KISSModemIdentity {
        var answer: PublicKey?? = nil
        host.identity { answer = .some($0) }
        let end = monotonicMilliseconds() &+ timeoutMs
        var buf = [UInt8](repeating: 0, count: 512)
        while answer == nil {
            let now = monotonicMilliseconds()
            guard now < end else { throw ClientError.link("the KISS modem at \(link) did not answer GetIdentity; check that it runs MeshCore's KISS modem firmware.") }
            // Not ready (the time passed, or a signal ended the wait early): the deadline is looked at again.
            guard (try? FileDescriptor(rawValue: link.fd).poll(Int16(POLLIN), timeout: Int32(end - now))) == true else { continue }
            let n: Int
            do { n = try buf.withUnsafeMutableBytes { try link.read(into: $0) } } catch {
                throw ClientError.link("cannot read the KISS modem at \(link): \(error)")
            }
            if n > 0 { host.receive(buf[0..<n]) }
        }
        guard let key = answer! else {
            throw ClientError.link("the KISS modem at \(link) has no identity to give (GetIdentity refused); run it with --identity host.")
        }
        return KISSModemIdentity(publicKey: key, host: host)
    }
}
