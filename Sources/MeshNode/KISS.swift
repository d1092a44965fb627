/// KISS framing (KA9Q/K3MC) as MeshCore's KISS modem firmware speaks it over USB serial: `FEND`,
/// a type byte (port in the high nibble, command in the low one), the data with `FEND` and `FESC`
/// escaped, `FEND`. Unescaped frames are at most 512 bytes; data frames carry one raw packet.
public enum KISS {
    public static let fend: UInt8 = 0xC0
    public static let fesc: UInt8 = 0xDB
    public static let tfend: UInt8 = 0xDC
    public static let tfesc: UInt8 = 0xDD
    /// The longest unescaped frame (type byte and data).
    public static let maxFrame = 512

    /// Type bytes (port 0).
    public enum Command: UInt8, Sendable {
        case data = 0x00, txDelay = 0x01, persistence = 0x02, slotTime = 0x03, txTail = 0x04, fullDuplex = 0x05, setHardware = 0x06
    }

    /// One frame on the wire: `FEND type escaped-data FEND`.
    public static func frame(type: UInt8, _ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [fend]
        out.reserveCapacity(data.count + 4)
        for b in [type] + data {
            switch b {
            case fend: out += [fesc, tfend]
            case fesc: out += [fesc, tfesc]
            default: out.append(b)
            }
        }
        out.append(fend)
        return out
    }

    /// Frames out of a byte stream. Bytes before the first `FEND`, empty frames, frames over
    /// `maxFrame` and frames with a bad escape are dropped, as a KISS TNC drops them.
    public struct Decoder {
        private var buffer: [UInt8] = []
        private var inFrame = false
        private var escaped = false
        private var broken = false
        public private(set) var dropped = 0

        public init() {}

        /// Feeds bytes; calls `frame` with each complete frame's type byte and data.
        public mutating func feed<C: Collection<UInt8>>(_ bytes: C, _ frame: (UInt8, [UInt8]) -> Void) {
            for b in bytes {
                if b == KISS.fend {
                    if inFrame && !buffer.isEmpty {
                        if broken || escaped { dropped += 1 } else { frame(buffer[0], Array(buffer[1...])) }
                    }
                    buffer.removeAll(keepingCapacity: true)
                    inFrame = true; escaped = false; broken = false
                    continue
                }
                guard inFrame, !broken else { continue }
                var v = b
                if escaped {
                    escaped = false
                    switch b {
                    case KISS.tfend: v = KISS.fend
                    case KISS.tfesc: v = KISS.fesc
                    default: broken = true; continue
                    }
                } else if b == KISS.fesc {
                    escaped = true; continue
                }
                if buffer.count >= KISS.maxFrame { broken = true; continue }
                buffer.append(v)
            }
        }
    }
}

/// The SetHardware (0x06) extensions of MeshCore's KISS modem firmware: the first data byte is a
/// sub-command; responses are the request's code with the high bit set, generic and unsolicited
/// ones are 0xF0 and up.
public enum KISSModem {
    public enum Request: UInt8, Sendable {
        case getIdentity = 0x01, getRandom = 0x02, verifySignature = 0x03, signData = 0x04, encryptData = 0x05
        case decryptData = 0x06, keyExchange = 0x07, hash = 0x08, setRadio = 0x09, setTxPower = 0x0A
        case getRadio = 0x0B, getTxPower = 0x0C, getCurrentRssi = 0x0D, isChannelBusy = 0x0E, getAirtime = 0x0F
        case getNoiseFloor = 0x10, getVersion = 0x11, getStats = 0x12, getBattery = 0x13, getMCUTemp = 0x14
        case getSensors = 0x15, getDeviceName = 0x16, ping = 0x17, reboot = 0x18, setSignalReport = 0x19
        case getSignalReport = 0x1A, getCapabilities = 0x1B
    }

    /// Generic and unsolicited responses.
    public static let ok: UInt8 = 0xF0
    public static let error: UInt8 = 0xF1
    public static let txDone: UInt8 = 0xF8
    public static let rxMeta: UInt8 = 0xF9

    public enum ErrorCode: UInt8, Sendable {
        case invalidLength = 0x01, invalidParam = 0x02, noCallback = 0x03, macFailed = 0x04, unknownCmd = 0x05
        case encryptFailed = 0x06, txBusy = 0x07, unsupported = 0x08
    }

    /// The response code of a request.
    public static func response(_ r: Request) -> UInt8 { r.rawValue | 0x80 }

    /// A SetHardware frame on the wire.
    public static func frame(_ sub: UInt8, _ data: [UInt8] = []) -> [UInt8] {
        KISS.frame(type: KISS.Command.setHardware.rawValue, [sub] + data)
    }

    /// A data frame (one raw packet) on the wire.
    public static func dataFrame(_ packet: [UInt8]) -> [UInt8] { KISS.frame(type: KISS.Command.data.rawValue, packet) }

    /// SetRadio / Radio data: frequency in Hz (u32 LE), bandwidth in Hz (u32 LE), SF, CR.
    public static func radioData(_ p: RadioParams) -> [UInt8] {
        var out: [UInt8] = []
        put32(p.freqKHz &* 1000, &out)
        put32(p.bwHz, &out)
        out += [p.sf, p.cr]
        return out
    }

    /// Radio parameters from SetRadio / Radio data (nil when short or out of range).
    public static func radioParams(_ d: [UInt8], txPowerDbm: Int8 = 20) -> RadioParams? {
        guard d.count >= 10 else { return nil }
        let hz = get32(d, 0), bw = get32(d, 4), sf = d[8], cr = d[9]
        // Rounded to the kHz in 64 bits (a frequency within 500 Hz of 2^32 must not overflow); one
        // that rounds to 0 kHz is no frequency (it would not survive being sent back).
        let kHz = UInt32((UInt64(hz) + 500) / 1000)
        guard (5...12).contains(sf), (5...8).contains(cr), bw > 0, kHz > 0 else { return nil }
        return RadioParams(freqKHz: kHz, bwHz: bw, sf: sf, cr: cr, txPowerDbm: txPowerDbm)
    }

    /// RxMeta data: SNR × 4 (i8), RSSI in dBm (i8).
    public static func rxMetaData(snr: Double, rssi: Int) -> [UInt8] {
        [UInt8(bitPattern: Int8(clamping: Int((snr * 4).rounded()))), UInt8(bitPattern: Int8(clamping: rssi))]
    }
}
