/// LoRa time on air (Semtech formula, as RadioLib `getTimeOnAir` computes it for the firmware's
/// `getEstAirtimeFor`): explicit header, CRC on, preamble 32 symbols for SF <= 8 and 16 for SF >= 9,
/// low-data-rate optimisation when a symbol lasts 16 ms or more.
public struct LoRaSettings: Hashable, Sendable {
    /// Spreading factor 5...12.
    public var spreadingFactor: Int
    /// Bandwidth in Hz (e.g. 62_500, 125_000, 250_000).
    public var bandwidthHz: Int
    /// Coding rate denominator 5...8 (4/5 ... 4/8).
    public var codingRate: Int

    public init(spreadingFactor: Int, bandwidthHz: Int, codingRate: Int) {
        self.spreadingFactor = spreadingFactor
        self.bandwidthHz = bandwidthHz
        self.codingRate = codingRate
    }

    /// The firmware default radio settings: SF8, 62.5 kHz, CR 4/5.
    public static let meshCoreDefault = LoRaSettings(spreadingFactor: 8, bandwidthHz: 62_500, codingRate: 5)

    /// Preamble symbols the firmware configures for this SF.
    public var preambleSymbols: Int { spreadingFactor <= 8 ? 32 : 16 }

    /// Symbol time in milliseconds.
    public var symbolMilliseconds: Double { Double(1 << spreadingFactor) * 1000.0 / Double(bandwidthHz) }

    /// Time on air in milliseconds (fractional) for a raw packet of `length` bytes.
    public func airtime(length: Int) -> Double {
        let sf = spreadingFactor
        let tsym = symbolMilliseconds
        let ldro = tsym >= 16.0 ? 1 : 0
        let cr = min(max(codingRate, 5), 8)
        let numerator = 8 * length - 4 * sf + 28 + 16
        let denominator = 4 * (sf - 2 * ldro)
        var blocks = 0
        if numerator > 0 && denominator > 0 { blocks = (numerator + denominator - 1) / denominator }
        let payloadSymbols = 8 + blocks * cr
        let preamble = Double(preambleSymbols) + 4.25
        return (preamble + Double(payloadSymbols)) * tsym
    }

    /// Time on air in whole milliseconds, truncated like `getEstAirtimeFor` (microseconds / 1000).
    public func airtimeMilliseconds(length: Int) -> UInt32 {
        UInt32(airtime(length: length))
    }
}
