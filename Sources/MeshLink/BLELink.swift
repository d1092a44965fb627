import CBluetooth
import Glibc

/// A Bluetooth LE device address: `AA:BB:CC:DD:EE:FF`, optionally `/random` or `/public` (default).
public struct BLEAddress: Hashable, Sendable, CustomStringConvertible {
    public enum AddressType: String, Sendable {
        case publicAddress = "public"
        case randomAddress = "random"
    }

    /// Six bytes in display order (most significant first).
    public let bytes: [UInt8]
    public let type: AddressType

    public init(bytes: [UInt8], type: AddressType = .publicAddress) {
        precondition(bytes.count == 6)
        self.bytes = bytes
        self.type = type
    }

    /// Parses `AA:BB:CC:DD:EE:FF`, `AA:BB:CC:DD:EE:FF/random` or `.../public`.
    public init(parsing text: String) throws(LinkError) {
        var addressPart = Substring(text)
        var type = AddressType.publicAddress
        if let slash = text.firstIndex(of: "/") {
            addressPart = text[..<slash]
            guard let parsed = AddressType(rawValue: text[text.index(after: slash)...].lowercased()) else {
                throw .invalidAddress(text, reason: "the address type after / must be public or random")
            }
            type = parsed
        }
        let parts = addressPart.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 6, parts.allSatisfy({ $0.count == 2 }) else {
            throw .invalidAddress(text, reason: "a Bluetooth address looks like AA:BB:CC:DD:EE:FF (optionally /random)")
        }
        var bytes: [UInt8] = []
        for part in parts {
            guard let value = UInt8(part, radix: 16) else {
                throw .invalidAddress(text, reason: "\(part) is not a hex byte")
            }
            bytes.append(value)
        }
        self.init(bytes: bytes, type: type)
    }

    /// `AA:BB:CC:DD:EE:FF` (without the type).
    public var text: String { bytes.map { hex($0).uppercased() }.joined(separator: ":") }

    public var description: String { type == .randomAddress ? "\(text)/random" : text }

    var bdaddr: bdaddr_t {
        var value = bdaddr_t()
        withUnsafeMutableBytes(of: &value.b) { raw in
            for index in 0..<6 { raw[index] = bytes[5 - index] }  // little-endian on the wire
        }
        return value
    }
}

/// Link-layer security asked of the kernel before the ATT channel opens (BT_SECURITY).
public enum BLESecurity: String, Sendable {
    /// Encrypted link (uses the stored bond's key). Default.
    case medium
    /// Encrypted with an authenticated (MITM-protected) key.
    case high

    var level: UInt8 { self == .medium ? UInt8(BT_SECURITY_MEDIUM) : UInt8(BT_SECURITY_HIGH) }
}

/// A BLE link to a companion radio: an L2CAP LE socket on the ATT channel (CID 4) driving an
/// `ATTClient` over the Nordic UART service. `.datagram` framing: one whole frame per read/write.
public final class BLELink: ByteLink {
    public let name: String
    public private(set) var lastReceiveMs: UInt64
    public var framing: LinkFraming { .datagram }
    public var fd: Int32 { descriptor.rawValue }
    public var hasPendingOutput: Bool { !pendingPDUs.isEmpty }
    public var description: String { "ble \(name)" }
    /// Discovery and subscription are complete.
    public var isReady: Bool { client.phase == .ready }
    public var mtu: Int { client.mtu }
    public var handles: NordicUARTHandles? { client.handles }
    /// Deadline of the ATT request in flight (pass to `checkTimeout`).
    public var nextDeadline: UInt64? { client.nextDeadline }

    private let descriptor: FileDescriptor
    private var client: ATTClient
    private var pendingPDUs: [[UInt8]] = []
    private let pdu: UnsafeMutableRawBufferPointer
    private var closed = false

    /// Connects to `address` (needs a Bluetooth adapter and a kernel with Bluetooth), sets the
    /// security level, then runs MTU exchange, discovery and subscription; blocks until the link is
    /// ready or `timeoutMilliseconds` have passed.
    public convenience init(connectingTo address: BLEAddress, security: BLESecurity = .medium,
                            timeoutMilliseconds: Int = 15_000,
                            configuration: ATTClient.Configuration = ATTClient.Configuration()) throws(LinkError) {
        let deadline = monotonicMilliseconds() + UInt64(max(0, timeoutMilliseconds))
        let descriptor = try Self.connect(address, security: security, deadline: deadline, timeoutMilliseconds: timeoutMilliseconds)
        self.init(adopting: descriptor, name: address.description, configuration: configuration)
        do {
            try waitUntilReady(deadline: deadline, timeoutMilliseconds: timeoutMilliseconds)
        } catch {
            close()
            throw error
        }
    }

    /// Wraps a connected ATT channel (an L2CAP socket, or one end of a SOCK_SEQPACKET socketpair in
    /// tests) and starts the GATT setup; drive it with a poll loop (frames written before it is
    /// ready wait in the client's queue) or call `waitUntilReady`.
    public init(adopting descriptor: FileDescriptor, name: String,
                configuration: ATTClient.Configuration = ATTClient.Configuration()) {
        self.descriptor = descriptor
        self.name = name
        self.client = ATTClient(configuration: configuration)
        self.pdu = UnsafeMutableRawBufferPointer.allocate(byteCount: 1024, alignment: 8)
        self.lastReceiveMs = monotonicMilliseconds()
        client.start(now: lastReceiveMs)
        try? pump()
    }

    deinit {
        close()
        pdu.deallocate()
    }

    static func connect(_ address: BLEAddress, security: BLESecurity, deadline: UInt64,
                        timeoutMilliseconds: Int) throws(LinkError) -> FileDescriptor {
        let what = "Bluetooth device \(address)"
        let (descriptor, connecting) = try startConnect(address, security: security)
        if connecting {
            while true {
                let now = monotonicMilliseconds()
                if now >= deadline {
                    descriptor.close()
                    throw .timeout("\(what) (is it powered, in range and advertising?)", milliseconds: timeoutMilliseconds)
                }
                // A failed poll ends the wait too: the socket's pending error says what happened.
                if (try? descriptor.poll(Int16(POLLOUT), timeout: Int32(clamping: deadline - now))) != false { break }
            }
            try finishConnect(descriptor, address, timeoutMilliseconds: timeoutMilliseconds)
        }
        return descriptor
    }

    /// Opens the L2CAP socket and starts its non-blocking connect: the descriptor, and whether the
    /// connect goes on in the background (poll it for `POLLOUT`, then `finishConnect`).
    static func startConnect(_ address: BLEAddress, security: BLESecurity) throws(LinkError) -> (FileDescriptor, Bool) {
        let what = "Bluetooth device \(address)"
        let descriptor: FileDescriptor
        do {
            descriptor = try FileDescriptor.socket(AF_BLUETOOTH, Int32(SOCK_SEQPACKET.rawValue), BTPROTO_L2CAP)
        } catch {
            if error == .addressFamilyNotSupported || error == .protocolNotSupported || error == .notSupported {
                throw .unsupported("Bluetooth", reason: "this system's kernel has no Bluetooth support (\(error.name)); connect the radio with --serial or --tcp instead")
            }
            if error == .permissionDenied || error == .notPermitted {
                throw .permission("Bluetooth sockets", hint: "run as a user allowed to use Bluetooth")
            }
            throw .cannotOpen("a Bluetooth socket", error)
        }
        var local = sockaddr_l2()
        local.l2_family = sa_family_t(AF_BLUETOOTH)
        local.l2_cid = 4  // ATT fixed channel (htobs is the identity on little-endian hosts)
        local.l2_bdaddr_type = UInt8(BDADDR_LE_PUBLIC)
        let status = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor.rawValue, $0, socklen_t(MemoryLayout<sockaddr_l2>.size)) }
        }
        if status != 0 {
            let error = Errno.current
            descriptor.close()
            throw noAdapterOr(error, what: what)
        }
        var level = bt_security(level: security.level, key_size: 0)
        if setsockopt(descriptor.rawValue, SOL_BLUETOOTH, BT_SECURITY, &level, socklen_t(MemoryLayout<bt_security>.size)) != 0 {
            let error = Errno.current
            descriptor.close()
            throw .cannotOpen("\(what) with security level \(security.rawValue)", error)
        }
        var remote = sockaddr_l2()
        remote.l2_family = sa_family_t(AF_BLUETOOTH)
        remote.l2_cid = 4
        remote.l2_bdaddr = address.bdaddr
        remote.l2_bdaddr_type = UInt8(address.type == .randomAddress ? BDADDR_LE_RANDOM : BDADDR_LE_PUBLIC)
        do throws(Errno) {
            let connecting = try !descriptor.connect(to: remote, length: socklen_t(MemoryLayout<sockaddr_l2>.size))
            return (descriptor, connecting)
        } catch {
            descriptor.close()
            throw connectError(error, address: address, timeoutMilliseconds: 0)
        }
    }

    /// After poll reported the connecting socket writable: throws (and closes it) if the connect failed.
    static func finishConnect(_ descriptor: FileDescriptor, _ address: BLEAddress, timeoutMilliseconds: Int) throws(LinkError) {
        if let error = descriptor.pendingSocketError() {
            descriptor.close()
            throw connectError(error, address: address, timeoutMilliseconds: timeoutMilliseconds)
        }
    }

    static func connectError(_ error: Errno, address: BLEAddress, timeoutMilliseconds: Int) -> LinkError {
        let what = "Bluetooth device \(address)"
        switch error {
        case .timedOut, .hostDown:
            return .timeout("\(what) (is it powered, in range and advertising?)", milliseconds: timeoutMilliseconds)
        case .connectionRefused:
            return .refused(what)
        default:
            return noAdapterOr(error, what: what)
        }
    }

    static func noAdapterOr(_ error: Errno, what: String) -> LinkError {
        switch error {
        case .noSuchDevice, .addressNotAvailable, .hostUnreachable, .networkDown:
            return .unsupported("Bluetooth", reason: "no Bluetooth adapter is present and powered (check `bluetoothctl show`, then `bluetoothctl power on`)")
        case .permissionDenied, .notPermitted:
            return .permission(what, hint: "the Bluetooth adapter refused this user")
        default:
            return .cannotOpen(what, error)
        }
    }

    /// Drives the GATT setup on this descriptor until ready.
    public func waitUntilReady(timeoutMilliseconds: Int) throws(LinkError) {
        try waitUntilReady(deadline: monotonicMilliseconds() + UInt64(max(0, timeoutMilliseconds)),
                           timeoutMilliseconds: timeoutMilliseconds)
    }

    private func waitUntilReady(deadline: UInt64, timeoutMilliseconds: Int) throws(LinkError) {
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 256, alignment: 8)
        defer { scratch.deallocate() }
        while !isReady {
            let now = monotonicMilliseconds()
            if now >= deadline {
                throw .timeout("\(description) GATT setup (\(client.phase))", milliseconds: timeoutMilliseconds)
            }
            var p = pollfd(fd: fd, events: Int16(POLLIN) | (hasPendingOutput ? Int16(POLLOUT) : 0), revents: 0)
            let ready = poll(&p, 1, Int32(clamping: deadline - now))
            if ready <= 0 { continue }
            if p.revents & Int16(POLLOUT) != 0 { try flush() }
            if p.revents & (Int16(POLLIN) | Int16(POLLHUP) | Int16(POLLERR)) != 0 {
                // Frames that arrive before ready (rare) are dropped, as the firmware's own queue is.
                _ = try read(into: scratch)
            }
        }
    }

    public var deadline: UInt64? { client.nextDeadline }

    public func handleDeadline(now: UInt64) throws(LinkError) {
        try checkTimeout(now: now)
    }

    /// Fails the link when an ATT request is overdue; call at `nextDeadline`.
    public func checkTimeout(now: UInt64) throws(LinkError) {
        do {
            try client.checkTimeout(now: now)
        } catch {
            throw mapped(error)
        }
    }

    /// Receives one ATT PDU. Returns the length of the frame it carried (copied to `buffer`), or 0.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(LinkError) -> Int {
        guard !closed else { throw .lost(name, reason: "the link is closed") }
        let received = retryingOnInterrupt { recv(descriptor.rawValue, pdu.baseAddress, pdu.count, SocketFlags.dontWait) }
        let n: Int
        switch received {
        case .success(let count): n = count
        case .failure(.wouldBlock): return 0
        case .failure(let error): throw lostError(error.message.lowercased())
        }
        if n == 0 { throw lostError("the radio disconnected") }
        lastReceiveMs = monotonicMilliseconds()
        let event: ATTClient.Event
        do {
            event = try client.receive(UnsafeRawBufferPointer(rebasing: pdu[0..<n]), now: lastReceiveMs)
        } catch {
            throw mapped(error)
        }
        var length = 0
        if case .frame(let frame) = event {
            length = min(frame.count, buffer.count)
            if let source = frame.baseAddress, let target = buffer.baseAddress {
                target.copyMemory(from: source, byteCount: length)
            }
        }
        try pump()
        return length
    }

    /// Queues one whole companion frame (written with a Write Request when its turn comes).
    public func write(_ bytes: UnsafeRawBufferPointer) throws(LinkError) {
        guard !closed else { throw .lost(name, reason: "the link is closed") }
        do {
            try client.send(frame: bytes, now: monotonicMilliseconds())
        } catch {
            throw mapped(error)
        }
        try pump()
    }

    public func flush() throws(LinkError) {
        try pump()
    }

    public func hangupError() -> LinkError {
        if let error = descriptor.pendingSocketError() { return lostError(error.message.lowercased()) }
        return lostError("the radio disconnected")
    }

    public func close() {
        guard !closed else { return }
        closed = true
        descriptor.close()
    }

    /// Moves the client's PDUs to the socket; each is one SEQPACKET message, sent whole or not at all.
    private func pump() throws(LinkError) {
        while let next = client.takeOutgoing() { pendingPDUs.append(next) }
        while let next = pendingPDUs.first {
            let sent = next.withUnsafeBytes { raw in
                retryingOnInterrupt { Glibc.send(descriptor.rawValue, raw.baseAddress, raw.count, (SocketFlags.noSignal | SocketFlags.dontWait)) }
            }
            if case .failure(let error) = sent {
                if error == .wouldBlock { return }
                throw lostError(error.message.lowercased())
            }
            pendingPDUs.removeFirst()
        }
    }

    private func lostError(_ cause: String) -> LinkError {
        let unacknowledged = client.unacknowledgedFrames
        if unacknowledged > 0 {
            return .lost(name, reason: "\(cause), with \(unacknowledged) frame(s) not acknowledged")
        }
        return .lost(name, reason: cause)
    }

    private func mapped(_ error: ATTClientError) -> LinkError {
        if case .queueFull = error { return .stalled(name) }
        return .bluetooth("BLE radio \(name)", reason: error.description(address: name.split(separator: "/").first.map(String.init) ?? name))
    }
}

/// A BLE link being made without blocking the caller's loop: the L2CAP connect, then the GATT setup
/// (MTU exchange, discovery, subscription), each step when poll reports the socket ready. The
/// caller polls `fd` for `pollEvents`, calls `ready(now:)` when poll reports it and `tick(now:)`
/// at `deadline`; `timeoutMilliseconds` bounds the whole setup, as `BLELink(connectingTo:)` does.
/// The outcome is a ready `BLELink` (frames written to it go out at once) or the error
/// `BLELink(connectingTo:)` would throw.
public final class BLEConnector {
    public enum State {
        case connecting
        case connected(BLELink)
        case failed(LinkError)
    }

    public let address: BLEAddress
    public let timeoutMilliseconds: Int
    public private(set) var state: State = .connecting
    /// When the whole setup gives up (monotonic ms).
    public let overallDeadline: UInt64
    private let configuration: ATTClient.Configuration
    private var socket: FileDescriptor? = nil
    private var setup: BLELink? = nil
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 256, alignment: 8)

    public init(address: BLEAddress, security: BLESecurity = .medium, timeoutMilliseconds: Int, now: UInt64,
                configuration: ATTClient.Configuration = ATTClient.Configuration()) {
        self.address = address
        self.timeoutMilliseconds = timeoutMilliseconds
        self.configuration = configuration
        overallDeadline = now + UInt64(max(0, timeoutMilliseconds))
        do throws(LinkError) {
            let (d, connecting) = try BLELink.startConnect(address, security: security)
            if connecting { socket = d } else { startSetup(d) }
        } catch {
            state = .failed(error)
        }
    }

    /// The GATT setup alone, on an ATT channel already connected (an L2CAP socket, or one end of
    /// a SOCK_SEQPACKET socketpair in tests).
    init(settingUp descriptor: FileDescriptor, address: BLEAddress, timeoutMilliseconds: Int, now: UInt64,
         configuration: ATTClient.Configuration = ATTClient.Configuration()) {
        self.address = address
        self.timeoutMilliseconds = timeoutMilliseconds
        self.configuration = configuration
        overallDeadline = now + UInt64(max(0, timeoutMilliseconds))
        startSetup(descriptor)
    }

    deinit {
        cancel()
        scratch.deallocate()
    }

    /// The descriptor to poll, while connecting or setting up.
    public var fd: Int32? { socket?.rawValue ?? setup?.fd }

    /// What to poll `fd` for.
    public var pollEvents: Int16 {
        if socket != nil { return Int16(POLLOUT) }
        return Int16(POLLIN) | (setup?.hasPendingOutput == true ? Int16(POLLOUT) : 0)
    }

    /// The next time `tick` is needed.
    public var deadline: UInt64 { min(overallDeadline, setup?.deadline ?? overallDeadline) }

    public func cancel() {
        socket?.close()
        socket = nil
        setup?.close()
        setup = nil
        if case .connecting = state { state = .failed(.timeout("Bluetooth device \(address)", milliseconds: timeoutMilliseconds)) }
    }

    public func ready(revents: Int16, now: UInt64) {
        guard case .connecting = state else { return }
        if let d = socket {
            socket = nil
            do throws(LinkError) {
                try BLELink.finishConnect(d, address, timeoutMilliseconds: timeoutMilliseconds)
                startSetup(d)
            } catch {
                state = .failed(error)
            }
            return
        }
        guard let link = setup else { return }
        do throws(LinkError) {
            if revents & Int16(POLLOUT) != 0 { try link.flush() }
            if revents & (Int16(POLLIN) | Int16(POLLHUP) | Int16(POLLERR)) != 0 {
                // One PDU per wake-up (poll reports the next one again); a frame that arrives
                // before ready (rare) is dropped, as the firmware's own queue is.
                _ = try link.read(into: scratch)
            }
            finishIfReady()
        } catch {
            fail(error)
        }
    }

    public func tick(now: UInt64) {
        guard case .connecting = state else { return }
        if let link = setup, let d = link.deadline, now >= d {
            do throws(LinkError) { try link.handleDeadline(now: now) } catch { fail(error); return }
        }
        guard now >= overallDeadline else { return }
        if socket != nil {
            socket?.close()
            socket = nil
            state = .failed(.timeout("Bluetooth device \(address) (is it powered, in range and advertising?)", milliseconds: timeoutMilliseconds))
        } else if let link = setup {
            fail(.timeout("\(link.description) GATT setup", milliseconds: timeoutMilliseconds))
        }
    }

    private func startSetup(_ d: FileDescriptor) {
        let link = BLELink(adopting: d, name: address.description, configuration: configuration)
        setup = link
        finishIfReady()
    }

    private func finishIfReady() {
        guard let link = setup, link.isReady else { return }
        setup = nil
        state = .connected(link)
    }

    private func fail(_ error: LinkError) {
        setup?.close()
        setup = nil
        state = .failed(error)
    }
}
