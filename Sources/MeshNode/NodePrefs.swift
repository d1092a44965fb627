/// The `KEY VALUE` lines of a prefs file, each handed to `load` (false: refused); returns the
/// refused lines. Lines without a value are skipped.
func loadPrefsLines(_ text: String, _ load: (Substring, Substring) -> Bool) -> [String] {
    var refused: [String] = []
    for raw in text.split(separator: "\n") {
        let line = raw.drop { $0 == " " }
        guard let sp = line.firstIndex(of: " ") else { continue }
        if !load(line[..<sp], line[line.index(after: sp)...]) { refused.append(String(line)) }
    }
    return refused
}

/// A server's settings as a host keeps them across restarts (the firmware keeps them in its prefs
/// file): one `KEY VALUE` line per setting, in the admin CLI's words, so that the file reads like
/// the `get` replies and loads through the same `set` commands.
extension ServerNode {
    /// The settings kept, in the order they load (`advert.interval` last: setting anything by hand
    /// switches a short local advert interval off, as the firmware's `savePrefs` does).
    static let keptSettings = [
        "name", "lat", "lon", "radio", "tx", "af", "repeat", "txdelay", "direct.txdelay", "rxdelay",
        "guest.password", "owner.info", "path.hash.mode", "loop.detect", "flood.max", "flood.max.unscoped",
        "flood.max.advert", "allow.read.only", "multi.acks", "int.thresh", "cad", "agc.reset.interval", "radio.rxgain",
        "rssi.lbt", "rssi.lbt.params", "flood.advert.interval", "advert.interval",
    ]

    /// The kept settings, one `KEY VALUE` line each, and the admin password as `password VALUE`.
    public func prefsText() -> String {
        var out = "password " + adminPassword + "\n"
        for key in Self.keptSettings {
            let reply = getSetting(Substring(key), senderTimestamp: 0)
            guard reply.hasPrefix("> ") else { continue }
            out += key + " " + reply.dropFirst(2) + "\n"
        }
        return out
    }

    /// Loads settings written by `prefsText` (unknown keys and refused values are skipped, so an
    /// older or newer file still loads what it can). Returns the lines that did not load.
    @discardableResult
    public func loadPrefs(_ text: String) -> [String] {
        let hook = onSavePrefs
        onSavePrefs = nil
        defer { onSavePrefs = hook }
        let refused = loadPrefsLines(text) { key, value in
            switch key {
            case "password":
                adminPassword = String(decoding: utf8Cut(Array(value.utf8), max: 15), as: UTF8.self)
            case "radio":
                guard let r = parseRadioParams(value, into: radio.params) else { return false }
                radio.params = r
                savedRadio = nil
            case "advert.interval":
                advertInterval = UInt64(cDigits(value) / 2) * 120_000
            case "flood.advert.interval":
                floodAdvertInterval = UInt64(UInt8(truncatingIfNeeded: cDigits(value))) * 3_600_000
            default:
                guard Self.keptSettings.contains(String(key)) else { return false }
                return setSetting(Substring(key + " " + value), senderTimestamp: 0).hasPrefix("OK")
            }
            return true
        }
        scheduleAdverts(first: true)
        return refused
    }
}

/// A companion's settings as a host keeps them: its name, position and radio (contacts, channels
/// and messages live in the app and the store).
extension CompanionNode {
    public func prefsText() -> String {
        let r = configuredRadio
        return "name \(name)\nradio \(firmwareFtoa(Double(r.freqKHz) / 1000)),\(firmwareFtoa3(Double(r.bwHz) / 1000)),\(r.sf),\(r.cr)\n"
            + "tx \(radio.params.txPowerDbm)\nlat \(Double(advertLatitude) / 1_000_000)\nlon \(Double(advertLongitude) / 1_000_000)\n"
    }

    @discardableResult
    public func loadPrefs(_ text: String) -> [String] {
        loadPrefsLines(text) { key, value in
            switch key {
            case "name": name = truncatedName(String(value))
            case "radio":
                guard let r = parseRadioParams(value, into: radio.params) else { return false }
                radio.params = r
                savedRadio = nil
            case "tx": radio.params.txPowerDbm = Int8(truncatingIfNeeded: cInt(value))
            case "lat": advertLatitude = Int32(cDouble(value) * 1_000_000)
            case "lon": advertLongitude = Int32(cDouble(value) * 1_000_000)
            default: return false
            }
            return true
        }
    }
}
