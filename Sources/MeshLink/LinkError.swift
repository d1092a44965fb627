/// Why a link could not be opened or stopped working. Every case reads as one sentence that says
/// what failed and what to do; the command line maps all of them to exit code 3 except
/// `isUsageError` ones (a bad address or speed given on the command line), which are exit code 2.
public enum LinkError: Error, Equatable, CustomStringConvertible, Sendable {
    /// The device or host could not be opened for a reason not listed below.
    case cannotOpen(String, Errno)
    /// The serial device does not exist.
    case notFound(String)
    /// Another program holds the serial port (TIOCEXCL / lock).
    case busy(String)
    /// The process may not open the device or socket.
    case permission(String, hint: String)
    /// The TCP peer actively refused the connection (nothing listens on that port).
    case refused(String)
    /// No route to the host or network (ENETUNREACH, EHOSTUNREACH, ...).
    case unreachable(String, Errno)
    /// The host name did not resolve.
    case unresolved(String, reason: String)
    /// Connecting (or waiting for the peer) took longer than allowed.
    case timeout(String, milliseconds: Int)
    /// The link worked and then went away (unplugged, peer closed, reset, keepalive expired).
    case lost(String, reason: String)
    /// The peer stopped reading: the bounded output buffer is full.
    case stalled(String)
    /// The kernel has no support for this kind of link (EAFNOSUPPORT), e.g. no Bluetooth.
    case unsupported(String, reason: String)
    /// The address or option given cannot be used (bad host:port, unsupported baud rate).
    case invalidAddress(String, reason: String)
    /// A Bluetooth/ATT level failure, with what to do about it.
    case bluetooth(String, reason: String)
    /// `--serial auto` found no USB serial device.
    case noRadio(String)
    /// `--serial auto` found several devices and cannot tell which is the radio (a usage error).
    case severalRadios(String)

    /// True for errors caused by what the user typed (exit code 2), not by the link (exit code 3).
    public var isUsageError: Bool {
        switch self {
        case .invalidAddress, .severalRadios: return true
        default: return false
        }
    }

    public var description: String {
        switch self {
        case .cannotOpen(let what, let errno):
            return "cannot open \(what): \(errno.message.lowercased())."
        case .notFound(let path):
            return "\(path) does not exist: check the cable, or run `pocketmesh scan` to list radios."
        case .busy(let path):
            return "\(path) is in use by another program: close the other pocketmesh, meshcore-cli or serial monitor and try again."
        case .permission(let what, let hint):
            return "permission denied for \(what): \(hint)."
        case .refused(let peer):
            return "connection to \(peer) refused: nothing is listening there; check the address and that the radio's WiFi companion is on."
        case .unreachable(let peer, let errno):
            return "cannot reach \(peer): \(errno.message.lowercased()); check the network and the address."
        case .unresolved(let host, let reason):
            return "cannot resolve host \(host): \(reason)."
        case .timeout(let peer, let ms):
            return "\(peer) did not answer within \(Self.seconds(ms)): check that it is powered and reachable."
        case .lost(let what, let reason):
            return "lost the link to \(what): \(reason)."
        case .stalled(let what):
            return "\(what) stopped accepting data: the output buffer is full."
        case .unsupported(let what, let reason):
            return "\(what) is not available: \(reason)."
        case .invalidAddress(let given, let reason):
            return "invalid address \(given): \(reason)."
        case .bluetooth(let what, let reason):
            return "\(what): \(reason)."
        case .noRadio(let reason), .severalRadios(let reason):
            return "\(reason)."
        }
    }

    private static func seconds(_ ms: Int) -> String {
        if ms % 1000 == 0 { return "\(ms / 1000) s" }
        let tenths = (ms + 50) / 100
        return "\(tenths / 10).\(tenths % 10) s"
    }
}
