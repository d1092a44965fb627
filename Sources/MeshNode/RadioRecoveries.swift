/// One kind of trouble a radio driver (`KISSHost`, `SX1262`) met and got past on its own.
public enum RadioRecovery: String, CaseIterable, Sendable {
    /// No TxDone within the packet's deadline (its airtime × 1.5 and a margin, as the firmware's
    /// Dispatcher gives up on an outbound packet): the packet is given up and the next one goes.
    case txTimeout = "tx_timeouts"
    /// The radio said a send failed (a KISS TxDone with result 0, an SX1262 TX timeout IRQ or a
    /// command that failed mid-send): counted, and the next packet goes.
    case txFailure = "tx_failures"
    /// A reception, or an interrupt, found without the signal it should have come with: DIO1
    /// still high after the IRQ status was cleared (an IRQ raised between read and clear), an
    /// edge the health check found missing, a received packet whose RxMeta never came.
    case rxRecovery = "rx_recoveries"
    /// A KISS modem that came back without its settings (it rebooted): set up again.
    case modemReset = "modem_resets"
    /// An SX1262 out of the mode it was left in, or not answering a command: reset and set up again.
    case chipReset = "chip_resets"
    /// A transmit held back while the chip was receiving a preamble or header (listen before talk).
    case lbtDeferral = "lbt_deferrals"
}

/// What a radio driver counted of its recoveries since the node started: the admin CLI's
/// `stats-recovery`, the node's status line and its log (one line per recovery) show them.
public struct RadioRecoveries: Equatable, Sendable {
    private var counts = [UInt32](repeating: 0, count: RadioRecovery.allCases.count)

    public init() {}

    public subscript(_ r: RadioRecovery) -> UInt32 {
        get { counts[RadioRecovery.allCases.firstIndex(of: r)!] }
        set { counts[RadioRecovery.allCases.firstIndex(of: r)!] = newValue }
    }

    /// Every recovery but listen-before-talk's deferrals (those are the channel being busy, not trouble).
    public var troubles: UInt32 { RadioRecovery.allCases.filter { $0 != .lbtDeferral }.reduce(0) { $0 &+ self[$1] } }

    /// `{"tx_timeouts":0,...}`, in the firmware's `stats-*` style.
    public var json: String {
        "{" + RadioRecovery.allCases.map { "\"\($0.rawValue)\":\(self[$0])" }.joined(separator: ",") + "}"
    }

    /// `tx_timeouts=0 tx_failures=0 ...` for a status line.
    public var summary: String { RadioRecovery.allCases.map { "\($0.rawValue)=\(self[$0])" }.joined(separator: " ") }
}
