import CMeshLink
import Glibc

/// What to do with the DTR and RTS modem lines after opening a serial port.
public enum ModemLinePolicy: String, Sendable, CaseIterable {
    /// Keep whatever the kernel did on open (Linux raises both).
    case leave
    /// Drop DTR and RTS right after open, so ESP32 auto-reset circuits do not reboot the board. Default.
    case deassert
    /// Raise DTR and RTS (some adapters need DTR to send).
    case assert
    /// Reset an ESP32 board through its auto-reset circuit (RTS pulses EN low for 100 ms), then release.
    case pulseReset = "pulse-reset"
}

/// A serial port speed that termios supports.
public struct SerialSpeed: Hashable, Sendable, CustomStringConvertible {
    public let baud: Int
    let termiosValue: speed_t

    /// Nil when termios has no constant for `baud`. 1200 is refused: nRF52 boards enter their
    /// bootloader on a 1200-baud open ("1200-baud touch").
    public init?(baud: Int) {
        guard baud != 1200, let value = Self.table.first(where: { $0.0 == baud })?.1 else { return nil }
        self.baud = baud
        self.termiosValue = speed_t(value)
    }

    public static let `default` = SerialSpeed(baud: 115_200)!

    /// Every baud rate accepted by `init?(baud:)`.
    public static var supportedBauds: [Int] { table.map(\.0).filter { $0 != 1200 } }

    public var description: String { "\(baud)" }

    private static let table: [(Int, Int32)] = [
        (50, B50), (75, B75), (110, B110), (134, B134), (150, B150), (200, B200), (300, B300),
        (600, B600), (1200, B1200), (1800, B1800), (2400, B2400), (4800, B4800), (9600, B9600),
        (19200, B19200), (38400, B38400), (57600, B57600), (115_200, B115200), (230_400, B230400),
        (460_800, B460800), (500_000, B500000), (576_000, B576000), (921_600, B921600),
        (1_000_000, B1000000), (1_152_000, B1152000), (1_500_000, B1500000), (2_000_000, B2000000),
        (2_500_000, B2500000), (3_000_000, B3000000), (3_500_000, B3500000), (4_000_000, B4000000),
    ]
}

/// A USB serial or UART link: raw 8N1, exclusive open, non-blocking.
public final class SerialLink: ByteLink {
    public let path: String
    public let speed: SerialSpeed
    /// False when the device has no modem lines (a pty, some UARTs): modem ioctls gave ENOTTY/EINVAL.
    public private(set) var hasModemLines: Bool
    public private(set) var lastReceiveMs: UInt64
    public var framing: LinkFraming { .stream }
    public var fd: Int32 { descriptor.rawValue }
    public var hasPendingOutput: Bool { !writer.out.isEmpty }
    public var description: String { "serial \(path) at \(speed.baud) baud" }

    private let descriptor: FileDescriptor
    private var writer: StreamWriter
    private var closed = false
    /// This link put the port in exclusive mode (TIOCEXCL), so it takes it out again on close.
    private var exclusiveHere = false

    /// Opens `path` with `O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC`, takes it exclusively
    /// (TIOCEXCL and a `flock`, which also holds against root), sets raw 8N1 at `speed`, applies
    /// `modemLines`, and discards stale input. `close` gives exclusive mode up (TIOCNXCL): the
    /// flag belongs to the tty, not to this descriptor, and a pty (`sim --pty`) outlives its
    /// users, so a flag left set would make every later open by a non-root user EBUSY.
    public init(path: String, speed: SerialSpeed = .default, modemLines: ModemLinePolicy = .deassert,
                outBufferCapacity: Int = 4096) throws(LinkError) {
        self.path = path
        self.speed = speed
        let descriptor: FileDescriptor
        do {
            descriptor = try FileDescriptor.open(path, O_RDWR | O_NOCTTY | O_NONBLOCK)
        } catch {
            throw Self.openError(error, path: path)
        }
        self.descriptor = descriptor
        self.writer = StreamWriter(capacity: outBufferCapacity)
        self.hasModemLines = true
        self.lastReceiveMs = monotonicMilliseconds()
        do {
            try configure(modemLines: modemLines)
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    /// `TIOCGEXCL`: whether the tty is in exclusive mode (nil: the kernel cannot say).
    public static func isExclusive(_ fd: Int32) -> Bool? {
        var value: Int32 = 0
        do { try FileDescriptor(rawValue: fd).ioctl(tiocgexcl, &value) } catch { return nil }
        return value != 0
    }

    /// `_IOR('T', 0x40, int)`, which Glibc's module does not export.
    static let tiocgexcl: UInt = 0x8004_5440

    // The descriptors of open links that set exclusive mode are listed in C (`cml_exclusive_add`,
    // under a lock: links open and close on several threads in a test process). A command that
    // ends with `exit()` runs no deinit and the kernel's close does not clear the flag of a pty,
    // whose tty outlives the descriptor: they are cleared at exit too (`atexit`).
    private func configure(modemLines: ModemLinePolicy) throws(LinkError) {
        // Advisory lock first: it fails even for root, which TIOCEXCL does not stop.
        if flock(descriptor.rawValue, LOCK_EX | LOCK_NB) != 0 {
            let error = Errno.current
            if error == .wouldBlock { throw .busy(path) }
        }
        // Already exclusive (another holder that root got past): left as it is on close.
        let wasExclusive = Self.isExclusive(descriptor.rawValue) ?? false
        do {
            try descriptor.ioctl(UInt(TIOCEXCL))
            exclusiveHere = !wasExclusive
            if exclusiveHere {
                cml_exclusive_add(descriptor.rawValue)
            }
        } catch {
            // Other failures (ENOTTY from emulated ports) leave only the flock: not fatal.
            if error == .busy { throw .busy(path) }
        }
        var t = termios()
        guard tcgetattr(descriptor.rawValue, &t) == 0 else {
            throw .cannotOpen("\(path) (not a serial port)", .current)
        }
        cfmakeraw(&t)
        cfsetispeed(&t, speed.termiosValue)
        cfsetospeed(&t, speed.termiosValue)
        t.c_cflag |= tcflag_t(CLOCAL | CREAD | CS8)
        t.c_cflag &= ~(tcflag_t(CRTSCTS) | tcflag_t(CSTOPB) | tcflag_t(PARENB))
        if modemLines != .leave {
            // Do not drop DTR on close: dropping it resets some boards as well.
            t.c_cflag &= ~tcflag_t(HUPCL)
        }
        // VMIN 1 (not 0): with O_NONBLOCK an empty tty then fails with EAGAIN, so read() == 0
        // means only hangup. With VMIN 0 and VTIME 0 Linux returns 0 for "no data" as well.
        withUnsafeMutableBytes(of: &t.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        guard tcsetattr(descriptor.rawValue, TCSANOW, &t) == 0 else {
            throw .cannotOpen("\(path) at \(speed.baud) baud", .current)
        }
        try applyModemLines(modemLines)
        _ = tcflush(descriptor.rawValue, TCIOFLUSH)
    }

    /// Sets or clears modem lines (`TIOCM_DTR`, `TIOCM_RTS`). No-op without modem lines.
    public func setModemLines(set: Int32, clear: Int32) throws(LinkError) {
        guard hasModemLines else { return }
        do {
            var bits = set
            if bits != 0 { try descriptor.ioctl(UInt(TIOCMBIS), &bits) }
            bits = clear
            if bits != 0 { try descriptor.ioctl(UInt(TIOCMBIC), &bits) }
        } catch {
            if error == .notTerminal || error == .invalidArgument || error == .notSupported {
                hasModemLines = false  // pty or UART without modem control
                return
            }
            throw .cannotOpen("modem lines of \(path)", error)
        }
    }

    private func applyModemLines(_ policy: ModemLinePolicy) throws(LinkError) {
        // Probe: TIOCMGET on a pty fails with ENOTTY, which means "no modem lines".
        var bits: Int32 = 0
        do {
            try descriptor.ioctl(UInt(TIOCMGET), &bits)
        } catch {
            hasModemLines = false
            return
        }
        let dtr = Int32(TIOCM_DTR), rts = Int32(TIOCM_RTS)
        switch policy {
        case .leave:
            return
        case .deassert:
            try setModemLines(set: 0, clear: dtr | rts)
        case .assert:
            try setModemLines(set: dtr | rts, clear: 0)
        case .pulseReset:
            // ESP32 auto-reset: RTS drives EN (active low), DTR drives GPIO0 (boot mode).
            try setModemLines(set: rts, clear: dtr)
            usleep(100_000)
            try setModemLines(set: 0, clear: dtr | rts)
        }
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(LinkError) -> Int {
        guard !closed else { throw .lost(path, reason: "the link is closed") }
        let n: Int
        do {
            n = try descriptor.read(into: buffer)
        } catch {
            if error == .wouldBlock { return 0 }
            throw Self.readError(error, path: path)
        }
        if n == 0 && buffer.count > 0 {
            throw .lost(path, reason: "the device hung up (unplugged or reset)")
        }
        lastReceiveMs = monotonicMilliseconds()
        return n
    }

    public func write(_ bytes: UnsafeRawBufferPointer) throws(LinkError) {
        guard !closed else { throw .lost(path, reason: "the link is closed") }
        let d = descriptor
        try writer.write(bytes, name: path) { (chunk) throws(Errno) -> Int in try d.write(chunk) }
    }

    public func flush() throws(LinkError) {
        let d = descriptor
        try writer.flush(name: path) { (chunk) throws(Errno) -> Int in try d.write(chunk) }
    }

    public func hangupError() -> LinkError {
        .lost(path, reason: "the device hung up (unplugged or reset)")
    }

    public func close() {
        guard !closed else { return }
        closed = true
        if exclusiveHere {
            try? descriptor.ioctl(UInt(TIOCNXCL))
            cml_exclusive_remove(descriptor.rawValue)
        }
        exclusiveHere = false
        descriptor.close()
    }

    static func readError(_ error: Errno, path: String) -> LinkError {
        switch error {
        case .ioError, .noSuchDevice, .noSuchDeviceOrAddress:
            return .lost(path, reason: "the device was unplugged or reset (\(error.name))")
        default:
            return .lost(path, reason: "read failed: \(error)")
        }
    }

    static func openError(_ error: Errno, path: String) -> LinkError {
        switch error {
        case .noSuchFile, .noSuchDevice, .noSuchDeviceOrAddress:
            return .notFound(path)
        case .busy:
            return .busy(path)
        case .permissionDenied, .notPermitted:
            return .permission(path, hint: "add your user to the dialout group (sudo usermod -aG dialout $USER, then log in again)")
        default:
            return .cannotOpen(path, error)
        }
    }
}
