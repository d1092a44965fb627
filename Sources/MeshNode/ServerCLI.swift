import MeshAir
import MeshCompanion

/// Settings of a server that only the admin CLI reads or changes.
struct ServerPrefs {
    var radio = RadioCLIPrefs()
    var multiAcks: UInt8 = 0
    var powerSaving = false
    var logging = false
    var latitude: Double = 0
    var longitude: Double = 0
    /// RTC time of the last `region save` (discovery requests carry a `since`).
    var discoveryModified: UInt32 = 0
}

/// The channel-access settings of `CommonCLI` that the admin CLI and the companion's protocol 14 CLI
/// share: `int.thresh`, `cad`, `agc.reset.interval`, `radio.rxgain` and listen-before-talk by RSSI
/// (`rssi.lbt`, `rssi.lbt.params THR_DBM,SENSE_MS,MAXWAIT_MS,TXMAX_MS,PAUSE_MS`), with the firmware's replies.
struct RadioCLIPrefs {
    var interferenceThreshold: UInt8 = 0
    var cad = false
    var agcResetInterval: UInt8 = 0 // seconds / 4
    var rxBoostedGain = true
    var rssiLBT = false
    var rssiLBTParams = [-80, 5, 0, 4000, 50]

    /// The reply to `get KEY` (`c` is KEY, matched by prefix as the firmware does), nil when KEY is none of these.
    func get(_ c: Substring) -> String? {
        func onOff(_ b: Bool) -> String { b ? "> on" : "> off" }
        if c.hasPrefix("int.thresh") { return "> \(interferenceThreshold)" }
        if c.hasPrefix("cad") { return onOff(cad) }
        if c.hasPrefix("agc.reset.interval") { return "> \(Int(agcResetInterval) * 4)" }
        if c.hasPrefix("radio.rxgain") { return onOff(rxBoostedGain) }
        if c.hasPrefix("rssi.lbt.params") { return "> " + rssiLBTParams.map(String.init).joined(separator: ",") }
        if c.hasPrefix("rssi.lbt") { return onOff(rssiLBT) }
        return nil
    }

    /// The reply to `set KEY VALUE` (`c` is `KEY VALUE`), nil when KEY is none of these.
    mutating func set(_ c: Substring) -> String? {
        func value(_ p: String) -> Substring? { c.hasPrefix(p) ? c.dropFirst(p.count) : nil }
        if let v = value("int.thresh ") { interferenceThreshold = UInt8(truncatingIfNeeded: cInt(v)); return "OK" }
        if let v = value("cad ") { cad = v.hasPrefix("on"); return "OK" }
        if let v = value("agc.reset.interval ") {
            agcResetInterval = UInt8(truncatingIfNeeded: cInt(v) / 4)
            return "OK - interval rounded to \(Int(agcResetInterval) * 4)"
        }
        if let v = value("radio.rxgain ") { rxBoostedGain = v.hasPrefix("on"); return "OK" }
        if let v = value("rssi.lbt.params ") {
            let p = textParts(v, max: 5, separator: ",").map { cInt($0) }
            // The five values, times not negative (the pull request that adds the setting gives no
            // narrower ranges its reply text could be checked against).
            guard p.count == 5, p[1...].allSatisfy({ $0 >= 0 }) else {
                return "Error, invalid params"
            }
            rssiLBTParams = p
            return "OK"
        }
        if let v = value("rssi.lbt ") { rssiLBT = v.hasPrefix("on"); return "OK" }
        return nil
    }
}

/// The admin CLI of repeaters and room servers (`CommonCLI` plus each role's own commands), with
/// the firmware's replies. Commands match by prefix, in the firmware's order; `senderTimestamp` 0
/// is the serial console, which alone may run `stats-*`, `erase`, `log`, `set freq` and `get prv.key`.
extension ServerNode {
    /// The simulated board, as `board` names it.
    public static let boardName = "PocketMesh simulator"

    /// Runs one admin CLI command and returns the reply text ("" for none).
    public func command(_ line: String, senderTimestamp: UInt32 = 1) -> String {
        if regionLoad != nil { return regionLoadLine(line) }
        var cmd = Substring(line.drop { $0 == " " })
        var prefix = ""
        let u = Array(cmd.utf8)
        if u.count > 4 && u[2] == 0x7C { // "xx|": a companion's CLI prefix, reflected back
            prefix = String(decoding: u[0 ..< 3], as: UTF8.self)
            cmd = Substring(String(decoding: u[3...], as: UTF8.self))
        }
        return prefix + roleCommand(cmd, senderTimestamp: senderTimestamp)
    }

    func roleCommand(_ c: Substring, senderTimestamp ts: UInt32) -> String {
        if c.hasPrefix("setperm ") { return setPermissions(c.dropFirst(8)) }
        if ts == 0 && c == "get acl" { return "" }
        if role == .repeater && c.hasPrefix("discover.neighbors") {
            if !c.dropFirst(18).allSatisfy({ $0 == " " }) { return "Err - discover.neighbors has no options" }
            discoverNeighbours()
            return "OK - Discover sent"
        }
        if role == .room && c.hasPrefix("room.post") {
            let msg = c.dropFirst(9).drop { $0 == " " }
            if msg.isEmpty { return "ERR empty message" }
            (self as? RoomNode)?.addPost(author: publicKey, text: Array(msg.utf8))
            return "OK"
        }
        return commonCommand(c, senderTimestamp: ts)
    }

    func commonCommand(_ c: Substring, senderTimestamp ts: UInt32) -> String {
        func word(_ w: String) -> Bool { c.hasPrefix(w) && (c.count == w.count || c.dropFirst(w.count).first == " ") }
        if c.hasPrefix("poweroff") || c.hasPrefix("shutdown") { powerOff(); return "" }
        if c.hasPrefix("reboot") { reboot(); return "" }
        if c.hasPrefix("clkreboot") { setClock(Self.volatileClockStart); reboot(); return "" }
        if word("advert.zerohop") { advertise(flood: false, delay: 1500); return "OK - zerohop advert sent" }
        if c.hasPrefix("advert") { advertise(flood: true, delay: 1500); return "OK - Advert sent" }
        if c.hasPrefix("clock sync") {
            guard ts > epochNow else { return "ERR: clock cannot go backwards" }
            setClock(ts &+ 1)
            return "OK - clock set: " + clockText()
        }
        if c.hasPrefix("start ota") { return "Error" }
        if c.hasPrefix("clock") { return clockText() }
        if c.hasPrefix("time ") {
            let secs = UInt32(truncatingIfNeeded: cDigits(c.dropFirst(5)))
            guard secs > epochNow else { return "(ERR: clock cannot go backwards)" }
            setClock(secs)
            return "OK - clock set: " + clockText()
        }
        if c.hasPrefix("neighbors") { return formatNeighbours() }
        if c.hasPrefix("neighbor.remove ") {
            guard let key = hexBytes(c.dropFirst(16), max: 32) else { return "ERR: bad pubkey" }
            removeNeighbours(prefix: key)
            return "OK"
        }
        if c.hasPrefix("tempradio ") { return tempRadio(c.dropFirst(10)) }
        if c.hasPrefix("password ") {
            adminPassword = String(decoding: utf8Cut(Array(c.dropFirst(9).utf8), max: 15), as: UTF8.self)
            savePrefs()
            return "password now: " + adminPassword
        }
        if c.hasPrefix("clear stats") { radio.clearStats(); return "(OK - stats reset)" }
        if c.hasPrefix("get ") { return getSetting(c.dropFirst(4), senderTimestamp: ts) }
        if c.hasPrefix("set ") { return setSetting(c.dropFirst(4), senderTimestamp: ts) }
        if ts == 0 && c == "erase" { return "File system erase: OK" }
        if c.hasPrefix("ver") { return "\(CompanionNode.firmwareVersion) (Build: \(CompanionNode.buildDate))" }
        if c.hasPrefix("board") { return board }
        if c.hasPrefix("sensor get ") { return "null" }
        if c.hasPrefix("sensor set ") { return "can't find custom var" }
        if c.hasPrefix("sensor list") { return "no custom var" }
        if c.hasPrefix("region") { return regionCommand(c) }
        if c.hasPrefix("powersaving on") { prefs.powerSaving = true; savePrefs(); return "on - After 2 minutes" }
        if c.hasPrefix("powersaving off") { prefs.powerSaving = false; savePrefs(); return "off" }
        if c.hasPrefix("powersaving") { return prefs.powerSaving ? "on" : "off" }
        if c.hasPrefix("log start") { prefs.logging = true; return "   logging on" }
        if c.hasPrefix("log stop") { prefs.logging = false; return "   logging off" }
        if c.hasPrefix("log erase") { return "   log erased" }
        if ts == 0 && c.hasPrefix("log") { return "   EOF" }
        if ts == 0 && word("stats-packets") {
            return "{\"recv\":\(radio.nRecv),\"sent\":\(radio.nSent),\"flood_tx\":\(radio.sentFlood),\"direct_tx\":\(radio.sentDirect),"
                + "\"flood_rx\":\(radio.recvFlood),\"direct_rx\":\(radio.recvDirect),\"recv_errors\":\(radio.errEvents)}"
        }
        if ts == 0 && word("stats-radio") {
            let v = Int((abs(radio.lastSNR) * 100).rounded())
            return "{\"noise_floor\":-120,\"last_rssi\":\(radio.lastRSSI),\"last_snr\":\(radio.lastSNR < 0 && v > 0 ? "-" : "")\(v / 100).\(twoDigits(v % 100)),"
                + "\"tx_air_secs\":\(radio.txAirMs / 1000),\"rx_air_secs\":\(radio.rxAirMs / 1000)}"
        }
        if ts == 0 && word("stats-recovery") { return (radio.driverRecoveries?() ?? RadioRecoveries()).json }
        if ts == 0 && word("stats-core") {
            return "{\"battery_mv\":\(readings.millivolts),\"uptime_secs\":\(uptimeSeconds),\"errors\":\(radio.errEvents),\"queue_len\":\(radio.queueLength)}"
        }
        return "Unknown command"
    }

    /// `CommonCLI::savePrefs`: a local advert interval under an hour is switched off once the node
    /// has been configured by hand.
    func savePrefs() {
        if advertInterval > 0 && advertInterval < 60 * 60_000 { advertInterval = 0 }
        onSavePrefs?()
    }

    // MARK: ACL

    /// `setperm {pubkey-hex} {permissions}`: a guest role removes the client (a key prefix will do),
    /// any other role needs the whole key and adds or changes the client.
    func setPermissions(_ args: Substring) -> String {
        guard let sp = args.firstIndex(of: " ") else { return "Err - bad params" }
        let hex = args[..<sp]
        guard hex.utf8.count <= 64, let key = hexBytes(hex, max: 32) else { return "Err - bad pubkey" }
        let perms = UInt8(truncatingIfNeeded: cInt(args[args.index(after: sp)...]))
        if perms & 3 == 0 {
            guard let i = clients.firstIndex(where: { $0.key.bytes.starts(with: key) }) else { return "Err - invalid params" }
            clients.remove(at: i)
            return "OK"
        }
        guard key.count == 32, let k = PublicKey(key) else { return "Err - invalid params" }
        let i = putClient(k)
        clients[i].permissions = perms
        return "OK"
    }

    // MARK: radio

    /// `tempradio FREQ,BW,SF,CR,MINUTES`: new radio settings 2 s from now (after the reply has gone),
    /// back to the saved ones after `minutes`. Comma-separated, as the firmware's parseTextParts splits.
    func tempRadio(_ args: Substring) -> String {
        let p = textParts(args, max: 5, separator: ",")
        let freq = p.count > 0 ? cDouble(p[0]) : 0, bw = p.count > 1 ? cDouble(p[1]) : 0
        let sf = p.count > 2 ? Int(UInt8(truncatingIfNeeded: cInt(p[2]))) : 0, cr = p.count > 3 ? Int(UInt8(truncatingIfNeeded: cInt(p[3]))) : 0
        let mins = p.count > 4 ? cInt(p[4]) : 0
        guard (150...2500).contains(freq), (5...12).contains(sf), (5...8).contains(cr), (7...500).contains(bw), mins > 0 else {
            return "Error, invalid params"
        }
        tempRadioGeneration &+= 1
        let gen = tempRadioGeneration
        var temp = radio.params
        temp.freqKHz = UInt32((Float(freq) * 1000).rounded()); temp.bwHz = UInt32((Float(bw) * 1000).rounded())
        temp.sf = UInt8(sf); temp.cr = UInt8(cr)
        let original = radio.params
        mesh.scheduler.after(2000) { [unowned self] in
            guard self.tempRadioGeneration == gen, self.powered else { return }
            self.radio.params = temp
            self.mesh.scheduler.after(UInt64(mins) * 60_000) { [unowned self] in
                guard self.tempRadioGeneration == gen, self.powered else { return }
                var back = self.savedRadio ?? original
                back.txPowerDbm = self.radio.params.txPowerDbm
                self.radio.params = back
            }
        }
        return "OK - temp params for \(mins) mins"
    }

    /// The radio settings as saved (what `get radio` shows and the next boot uses).
    var configuredRadio: RadioParams { savedRadio ?? radio.params }

    // MARK: time

    /// `HH:MM - D/M/YYYY UTC` of the RTC.
    func clockText() -> String {
        let t = Int(epochNow)
        let days = t / 86400, secs = t % 86400
        // civil-from-days (Howard Hinnant), UTC
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        return "\(twoDigits(secs / 3600)):\(twoDigits(secs / 60 % 60)) - \(d)/\(m)/\(y) UTC"
    }

}

// MARK: C-style text helpers

func twoDigits(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }

/// Leading decimal digits only (the firmware's `_atoi`).
func cDigits<S: StringProtocol>(_ s: S) -> Int {
    var n = 0
    for c in s.utf8 { guard c >= 0x30 && c <= 0x39 else { break }; n = n &* 10 &+ Int(c - 0x30) }
    return n
}

/// C `atoi`: leading spaces, an optional sign, digits.
func cInt<S: StringProtocol>(_ s: S) -> Int {
    var u = Substring(s).drop { $0 == " " }
    var sign = 1
    if u.first == "-" { sign = -1; u = u.dropFirst() } else if u.first == "+" { u = u.dropFirst() }
    return sign * cDigits(u)
}

/// C `atof` (as far as the CLI needs it): leading spaces, sign, digits, a fraction.
func cDouble<S: StringProtocol>(_ s: S) -> Double {
    var u = Substring(s).drop { $0 == " " }
    var sign = 1.0
    if u.first == "-" { sign = -1; u = u.dropFirst() } else if u.first == "+" { u = u.dropFirst() }
    var v = 0.0, scale = 0.0
    for c in u.utf8 {
        if c == 0x2E && scale == 0 { scale = 1; continue }
        guard c >= 0x30 && c <= 0x39 else { break }
        if scale == 0 { v = v * 10 + Double(c - 0x30) } else { scale /= 10; v += Double(c - 0x30) * scale }
    }
    return sign * v
}

/// `parseTextParts`: split at `separator` (the firmware's default is a comma; callers that split at
/// spaces say so) into at most `max` parts (empty parts kept), the last one cut at its next separator.
func textParts(_ s: Substring, max: Int, separator: Character = " ") -> [Substring] {
    var parts: [Substring] = []
    var rest = s
    while !rest.isEmpty && parts.count < max {
        if let i = rest.firstIndex(of: separator) {
            parts.append(rest[..<i]); rest = rest[rest.index(after: i)...]
        } else {
            parts.append(rest); rest = rest[rest.endIndex...]
        }
    }
    return parts
}

/// An even number of hex digits (at most `max` bytes) as bytes, or nil.
func hexBytes<S: StringProtocol>(_ s: S, max: Int) -> [UInt8]? {
    let u = Array(s.utf8)
    guard u.count % 2 == 0, u.count <= max * 2 else { return nil }
    func val(_ c: UInt8) -> UInt8 {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x41...0x46: return c - 0x37
        case 0x61...0x66: return c - 0x57
        default: return 0
        }
    }
    return stride(from: 0, to: u.count, by: 2).map { val(u[$0]) << 4 | val(u[$0 + 1]) }
}

/// The firmware's `StrHelper::ftoa`: a float32's decimal expansion cut (not rounded) to 7 places,
/// trailing zeros dropped but one digit kept after the point.
func firmwareFtoa(_ value: Double) -> String {
    let f = Float(value)
    if f == 0 { return "0.0" }
    let bits = f.bitPattern
    let exp2 = Int((bits >> 23) & 0xFF) - 127
    let mantissa = UInt32(bits & 0x7F_FFFF) | 0x80_0000
    guard exp2 < 31, exp2 >= -23 else { return "0" }
    var intPart: UInt32 = 0, frac: UInt32 = 0
    if exp2 >= 23 { intPart = mantissa << UInt32(exp2 - 23) }
    else if exp2 >= 0 { intPart = mantissa >> UInt32(23 - exp2); frac = (mantissa << UInt32(exp2 + 1)) & 0xFF_FFFF }
    else { frac = (mantissa & 0xFF_FFFF) >> UInt32(-(exp2 + 1)) }
    var out = (f < 0 ? "-" : "") + String(intPart) + "."
    if frac == 0 { return out + "0" }
    var digits: [Character] = []
    for _ in 0 ..< 7 {
        frac = frac &* 10
        digits.append(Character(UnicodeScalar(UInt8(0x30 + (frac >> 24)))))
        frac &= 0xFF_FFFF
    }
    while digits.count > 1 && digits.last == "0" { digits.removeLast() }
    out += String(digits)
    return out
}

/// `StrHelper::ftoa3`: rounded to 3 places, trailing zeros (and a bare point) dropped.
func firmwareFtoa3(_ value: Double) -> String {
    let f = Float(value)
    let v = Int(f * 1000 + (f >= 0 ? 0.5 : -0.5))
    var s = "\(v / 1000)." + String(String(abs(v % 1000) + 1000).dropFirst())
    while s.count > 1 && s.last == "0" { s.removeLast() }
    if s.last == "." { s.removeLast() }
    return s
}
