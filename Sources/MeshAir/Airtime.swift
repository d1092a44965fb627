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

    /// Time on air in milliseconds (fractional) for a raw packet of `length` bytes:
    /// `(Npre + 4.25 + 8 + ceil((8·PL − 4·SF + 44) / (4·(SF − 2·LDRO)))·CR) × Tsym`
    /// (SF5/6: 6.25 symbols of sync and no +8 bits, as the SX126x datasheet gives).
    public func airtime(length: Int) -> Double {
        let tsym = symbolMilliseconds
        return Double(symbolsX4(length: length, ldro: tsym >= 16.0)) / 4 * tsym
    }

    /// Time on air in whole microseconds computed in integers like RadioLib's `getTimeOnAir`
    /// (symbol time truncated to microseconds).
    public func airtimeMicroseconds(length: Int) -> UInt64 {
        guard bandwidthHz > 0, (5...12).contains(spreadingFactor) else { return 0 }
        let symbolMicros = (UInt64(1) << UInt64(spreadingFactor)) * 1_000_000 / UInt64(bandwidthHz)
        let x4 = symbolsX4(length: length, ldro: symbolMicros >= 16_000)
        return symbolMicros * UInt64(x4) / 4
    }

    /// Whole milliseconds, as the firmware's `getEstAirtimeFor` (microseconds / 1000).
    public func airtimeMilliseconds(length: Int) -> UInt32 {
        UInt32(truncatingIfNeeded: airtimeMicroseconds(length: length) / 1000)
    }

    /// Four times the number of symbols on air.
    private func symbolsX4(length: Int, ldro: Bool) -> Int {
        let sf = spreadingFactor
        let shortSF = sf == 5 || sf == 6
        let coeff1X4 = shortSF ? 25 : 17
        let coeff2 = shortSF ? 0 : 8
        let divisor = 4 * (ldro ? sf - 2 : sf)
        let bits = max(8 * length + 16 - 4 * sf + coeff2 + 20, 0)
        let blocks = divisor > 0 ? (bits + divisor - 1) / divisor : 0
        let cr = min(max(codingRate, 5), 8)
        return (preambleSymbols + 8) * 4 + coeff1X4 + blocks * cr * 4
    }
}
