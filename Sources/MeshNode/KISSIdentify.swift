import MeshCompanion

/// What answers on a serial port given as a KISS modem, found out before the node uses it, without
/// I/O: the port is sent GetVersion, again every `retryMs` for `kissWindowMs` (a board that the
/// port's opening reset is still booting), then, if no KISS frame came back, one companion
/// DEVICE_QUERY, answered within `companionWindowMs` by MeshCore's companion firmware. The shell
/// writes what `poll` gives, feeds what it reads, and stops at `verdict` (at the latest
/// `boundMs` after the start).
public struct KISSIdentify {
    public enum Verdict: Equatable, Sendable {
        /// A KISS modem answered (its GetVersion answer's firmware version; 0 when it answered
        /// something else first).
        case modem(version: UInt8)
        /// MeshCore's companion firmware answered the DEVICE_QUERY.
        case companion
        /// Bytes came, but no KISS frame and no companion frame (another firmware, a console, the
        /// wrong baud rate).
        case other(bytes: Int)
        /// Nothing came at all.
        case silent
    }

    public static let kissWindowMs: UInt64 = 5_000
    public static let retryMs: UInt64 = 1_000
    public static let companionWindowMs: UInt64 = 1_000
    /// The longest the whole identification takes.
    public static var boundMs: UInt64 { kissWindowMs + companionWindowMs }

    private let start: UInt64
    private var nextSend: UInt64
    private var companionSent = false
    private var kiss = KISS.Decoder()
    private let companion = FrameDecoder(side: .client)
    private var received = 0
    public private(set) var verdict: Verdict?

    public init(now: UInt64) {
        start = now
        nextSend = now
    }

    /// What to write to the port now (nil: nothing) and when to call again (nil: a verdict is in).
    public mutating func poll(now: UInt64) -> (write: [UInt8]?, wakeAt: UInt64?) {
        guard verdict == nil else { return (nil, nil) }
        let kissEnd = start &+ Self.kissWindowMs, end = kissEnd &+ Self.companionWindowMs
        if now >= end {
            verdict = received > 0 ? .other(bytes: received) : .silent
            return (nil, nil)
        }
        if now < kissEnd {
            var out: [UInt8]? = nil
            if now >= nextSend {
                out = KISSModem.frame(KISSModem.Request.getVersion.rawValue)
                nextSend = now &+ Self.retryMs
            }
            return (out, min(nextSend, kissEnd))
        }
        if !companionSent {
            companionSent = true
            return (CommandFrame.deviceQuery().wireBytes(.toRadio), end)
        }
        return (nil, end)
    }

    /// Bytes read from the port.
    public mutating func feed<C: Collection<UInt8>>(_ bytes: C) {
        guard verdict == nil else { return }
        received += bytes.count
        var found: Verdict? = nil
        kiss.feed(bytes) { type, data in
            guard found == nil, type == KISS.Command.setHardware.rawValue, let sub = data.first, sub >= 0x80 else { return }
            found = .modem(version: sub == KISSModem.response(.getVersion) && data.count >= 2 ? data[1] : 0)
        }
        if let found { verdict = found; return }
        _ = companion.append(Array(bytes))
        if companion.nextFrame() != nil { verdict = .companion }
    }

    /// The sentence for a port that is not a KISS modem (nil for a modem).
    public static func refusal(_ v: Verdict, port: String) -> String? {
        let seconds = boundMs / 1000
        switch v {
        case .modem: return nil
        case .companion:
            return "\(port) runs MeshCore's companion firmware, not the KISS modem firmware: flash the KISS modem firmware for `pocketmesh node`, or use the radio as it is with `pocketmesh --serial \(port)`"
        case .other(let n):
            return "\(port) sent \(n) bytes in \(seconds) s but no KISS frame and no companion frame: another firmware, a console or the wrong baud rate; check the device and its speed (kiss:PATH@BAUD)"
        case .silent:
            return "nothing answered on \(port) in \(seconds) s (no reply to GetVersion or to a companion query); check that the device runs MeshCore's KISS modem firmware, its cable and its speed (kiss:PATH@BAUD)"
        }
    }
}
