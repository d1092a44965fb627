import MeshAir
import MeshCompanion

/// The companion's own CLI of companion protocol 14 (the firmware's dev line, "Companion CLI"):
/// the app runs it with `RUN_CLI_COMMAND` (sender timestamp 0), and a contact with the remote CLI
/// permission (flag 0x10) with a text message of type 3. Replies are the firmware's; a command it
/// does not know answers "Unknown command", as `reboot` does on the dev line of v1.17.1 (its
/// companion CLI has no reboot; the app reboots with CMD_REBOOT). Only the settings the simulated
/// radio has are here.
extension CompanionNode {
    /// Runs one CLI line; returns the reply.
    public func cliCommand(_ line: String, senderTimestamp ts: UInt32 = 0) -> String {
        var cmd = Substring(line.drop { $0 == " " })
        var prefix = ""
        let u = Array(cmd.utf8)
        if u.count > 4 && u[2] == 0x7C { // "xx|": a correlation prefix, reflected back
            prefix = String(decoding: u[0 ..< 3], as: UTF8.self)
            cmd = Substring(String(decoding: u[3...], as: UTF8.self))
        }
        return prefix + (companionCommand(cmd, senderTimestamp: ts) ?? "Unknown command")
    }

    func companionCommand(_ c: Substring, senderTimestamp ts: UInt32) -> String? {
        func value(_ p: String) -> Substring? { c.hasPrefix(p) ? c.dropFirst(p.count) : nil }
        let af = Float(radio.airtimeFactor)
        switch c {
        case "ver": return "\(Self.firmwareVersion) (Build: \(Self.buildDate))"
        case "board": return board
        case "get name": return "> " + name
        case "get af": return "> " + firmwareFtoa(radio.airtimeFactor)
        case "get dutycycle":
            let dc = 100 / (af + 1)
            return "> \(Int(dc)).\(Int((dc - Float(Int(dc))) * 10 + 0.5))%"
        case "get rxdelay": return "> " + firmwareFtoa(radio.rxDelayBase)
        case "get txdelay": return "> " + firmwareFtoa(floodDelayFactor)
        case "get direct.txdelay": return "> " + firmwareFtoa(directDelayFactor)
        case "get path.hash.mode": return "> \(pathHashSize - 1)"
        case "get multi.acks": return "> \(multiAcks)"
        case "get tx": return "> \(radio.params.txPowerDbm)"
        case "get tz.offset": return "> \(tzOffset)"
        case "get radio":
            let r = configuredRadio
            return "> \(firmwareFtoa(Double(r.freqKHz) / 1000)),\(firmwareFtoa3(Double(r.bwHz) / 1000)),\(r.sf),\(r.cr)"
        case "get freq": return "> " + firmwareFtoa(Double(configuredRadio.freqKHz) / 1000)
        case "stats-recovery" where ts == 0: return (radio.driverRecoveries?() ?? RadioRecoveries()).json  // a real radio's driver (`pocketmesh node cli`)
        default: break
        }
        // int.thresh, cad, agc.reset.interval, radio.rxgain, rssi.lbt: CommonCLI's, as the admin CLI's.
        if c.hasPrefix("get "), let r = radioPrefs.get(c.dropFirst(4)) { return r }
        if c.hasPrefix("set "), let r = radioPrefs.set(c.dropFirst(4)) { return r }
        if let v = value("set name ") {
            guard !v.contains(where: { "[]\\:,?*".contains($0) }) else { return "Error, bad chars" }
            name = String(decoding: utf8Cut(Array(v.utf8), max: 31), as: UTF8.self)
            return "OK"
        }
        if let v = value("set pin ") {
            blePin = UInt32(truncatingIfNeeded: cInt(v))
            let n = Int(Int32(bitPattern: blePin))
            let digits = String(abs(n))
            return "> pin is now " + (n < 0 ? "-" : "") + String(repeating: "0", count: max(0, (n < 0 ? 5 : 6) - digits.count)) + digits
        }
        if let v = value("set tz.offset ") {
            let tz = Int(cDouble(v))
            guard (-12...14).contains(tz) else { return "Error, must be from -12 to +14" }
            tzOffset = Int8(tz)
            return "OK"
        }
        if let v = value("set af ") {
            let f = Float(cDouble(v))
            guard v.drop(while: { $0 == " " }).first.map({ $0.isNumber || $0 == "." || $0 == "+" || $0 == "-" }) == true, f >= 0, f <= 9 else {
                return "ERROR: af must be 0-9"
            }
            radio.airtimeFactor = Double(f)
            return "OK"
        }
        if let v = value("set dutycycle ") {
            let dc = Float(cDouble(v))
            guard dc >= 1 && dc <= 100 else { return "ERROR: dutycycle must be 1-100" }
            let a = 100 / dc - 1
            radio.airtimeFactor = Double(a)
            let actual = 100 / (a + 1)
            return "OK - \(Int(actual)).\(Int((actual - Float(Int(actual))) * 10 + 0.5))%"
        }
        if let v = value("set rxdelay ") {
            let d = Float(cDouble(v))
            guard d >= 0 && d <= 20 else { return "Error, must be 0-20" }
            radio.rxDelayBase = Double(d)
            return "OK"
        }
        if let v = value("set txdelay ") {
            let f = Float(cDouble(v))
            guard f >= 0 && f <= 2 else { return "Error, must be 0-2" }
            floodDelayFactor = Double(f)
            return "OK"
        }
        if let v = value("set direct.txdelay ") {
            let f = Float(cDouble(v))
            guard f >= 0 && f <= 2 else { return "Error, must be 0-2" }
            directDelayFactor = Double(f)
            return "OK"
        }
        if let v = value("set path.hash.mode ") {
            let m = UInt8(truncatingIfNeeded: cInt(v))
            guard m < 3 else { return "Error, must be 0,1, or 2" }
            pathHashSize = Int(m) + 1
            return "OK"
        }
        if let v = value("set multi.acks ") {
            multiAcks = UInt8(truncatingIfNeeded: cInt(v))
            return "OK"
        }
        if let v = value("set tx ") {
            let p = Int8(truncatingIfNeeded: cInt(v))
            guard p >= -9 && p <= maxTxPower else { return "Error, invalid power" }
            radio.params.txPowerDbm = p
            if savedRadio != nil { savedRadio!.txPowerDbm = p }
            return "OK"
        }
        if let v = value("set radio ") {
            guard let r = parseRadioParams(v, into: configuredRadio) else { return "Error, invalid radio params" }
            savedRadio = r
            return "OK - reboot to apply"
        }
        return nil
    }

    /// The radio settings as saved: what `get radio` shows and the next boot uses.
    var configuredRadio: RadioParams { savedRadio ?? radio.params }
}

/// `FREQ,BW,SF,CR` as the firmware's CLI parses it (`parseTextParts` splits at commas; `strtof`,
/// `atoi`), checked against its ranges; nil for "Error, invalid radio params".
func parseRadioParams(_ v: Substring, into base: RadioParams) -> RadioParams? {
    let p = textParts(v, max: 4, separator: ",")
    let freq = p.count > 0 ? Float(cDouble(p[0])) : 0, bw = p.count > 1 ? Float(cDouble(p[1])) : 0
    let sf = p.count > 2 ? Int(UInt8(truncatingIfNeeded: cInt(p[2]))) : 0, cr = p.count > 3 ? Int(UInt8(truncatingIfNeeded: cInt(p[3]))) : 0
    guard freq >= 150, freq <= 2500, (5...12).contains(sf), (5...8).contains(cr), bw >= 7, bw <= 500 else { return nil }
    var r = base
    r.freqKHz = UInt32((freq * 1000).rounded()); r.bwHz = UInt32((bw * 1000).rounded())
    r.sf = UInt8(sf); r.cr = UInt8(cr)
    return r
}
