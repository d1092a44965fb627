import MeshAir

/// `get` / `set` and `region` of the admin CLI (`CommonCLI::handleGetCmd`, `handleSetCmd`,
/// `handleRegionCmd`), matched by prefix in the firmware's order, with its replies.
extension ServerNode {
    func getSetting(_ c: Substring, senderTimestamp ts: UInt32) -> String {
        func has(_ p: String) -> Bool { c.hasPrefix(p) }
        func onOff(_ b: Bool) -> String { b ? "> on" : "> off" }
        let af = Float(radio.airtimeFactor)
        if has("dutycycle") {
            let dc = 100 / (af + 1)
            return "> \(Int(dc)).\(Int((dc - Float(Int(dc))) * 10 + 0.5))%"
        }
        if has("af") { return "> " + firmwareFtoa(radio.airtimeFactor) }
        if let r = prefs.radio.get(c) { return r }  // int.thresh, cad, agc.reset.interval, radio.rxgain, rssi.lbt
        if has("multi.acks") { return "> \(prefs.multiAcks)" }
        if has("allow.read.only") { return onOff(allowReadOnly) }
        if has("flood.advert.interval") { return "> \(floodAdvertInterval / 3_600_000)" }
        if has("advert.interval") { return "> \(advertInterval / 120_000 * 2)" }
        if has("guest.password") { return "> " + guestPassword }
        if ts == 0 && has("prv.key") {
            guard let identity else { return "Error: the key is the modem's" }
            return "> " + AirHex.encode(identity.privateKey).uppercased()
        }
        if has("name") { return "> " + name }
        if has("repeat") { return onOff(!disableForward) }
        if has("lat") { return "> " + firmwareFtoa(prefs.latitude) }
        if has("lon") { return "> " + firmwareFtoa(prefs.longitude) }
        if has("radio.fem.rxgain") || has("radio.fem.txgain") { return "Error: unsupported" }
        if has("radio") {
            let r = configuredRadio
            return "> \(firmwareFtoa(Double(r.freqKHz) / 1000)),\(firmwareFtoa3(Double(r.bwHz) / 1000)),\(r.sf),\(r.cr)"
        }
        if has("rxdelay") { return "> " + firmwareFtoa(radio.rxDelayBase) }
        if has("txdelay") { return "> " + firmwareFtoa(floodDelayFactor) }
        if has("flood.max.advert") { return "> \(floodMaxAdvert)" }
        if has("flood.max.unscoped") { return "> \(floodMaxUnscoped)" }
        if has("flood.max") { return "> \(floodMax)" }
        if has("direct.txdelay") { return "> " + firmwareFtoa(directDelayFactor) }
        if has("owner.info") {
            return String(decoding: Array(("> " + ownerInfo.replacingNewlines(with: "|")).utf8.prefix(159)), as: UTF8.self)
        }
        if has("path.hash.mode") { return "> \(pathHashSize - 1)" }
        if has("loop.detect") { return ["> off", "> minimal", "> moderate", "> strict"][Int(min(loopDetect, 3))] }
        if has("tx") && (c.count == 2 || c.dropFirst(2).first == " ") { return "> \(radio.params.txPowerDbm)" }
        if has("freq") { return "> " + firmwareFtoa(Double(configuredRadio.freqKHz) / 1000) }
        if has("public.key") { return "> " + AirHex.encode(publicKey.bytes).uppercased() }
        if has("role") { return role == .room ? "> room_server" : "> repeater" }
        if has("bridge.type") { return "> none" }
        if has("bootloader.ver") || has("adc.multiplier") { return "Error: unsupported" }
        if has("pwrmgt.support") { return "> unsupported" }
        if has("pwrmgt.source") || has("pwrmgt.bootmv") { return "ERROR: Power management not supported" }
        if has("pwrmgt.bootreason") { return "> Reset: Not available; Shutdown: Not available" }
        if has("extra.sf") { return "No extra SF configured" }
        return "??: " + c
    }

    func setSetting(_ c: Substring, senderTimestamp ts: UInt32) -> String {
        func value(_ p: String) -> Substring? { c.hasPrefix(p) ? c.dropFirst(p.count) : nil }
        func ok() -> String { savePrefs(); return "OK" }
        if let v = value("dutycycle ") {
            let dc = Float(cDouble(v))
            guard dc >= 1 && dc <= 100 else { return "ERROR: dutycycle must be 1-100" }
            let af = 100 / dc - 1
            radio.airtimeFactor = Double(af)
            savePrefs()
            let actual = 100 / (af + 1)
            return "OK - \(Int(actual)).\(Int((actual - Float(Int(actual))) * 10 + 0.5))%"
        }
        if let v = value("af ") { radio.airtimeFactor = Double(Float(cDouble(v))); return ok() }
        if let r = prefs.radio.set(c) {  // int.thresh, cad, agc.reset.interval, radio.rxgain, rssi.lbt
            if r.hasPrefix("OK") { savePrefs() }
            return r
        }
        if let v = value("multi.acks ") { prefs.multiAcks = UInt8(truncatingIfNeeded: cInt(v)); return ok() }
        if let v = value("allow.read.only ") { allowReadOnly = v.hasPrefix("on"); return ok() }
        if let v = value("flood.advert.interval ") {
            let hours = cDigits(v)
            if (hours > 0 && hours < 3) || hours > 168 { return "Error: interval range is 3-168 hours" }
            floodAdvertInterval = UInt64(UInt8(truncatingIfNeeded: hours)) * 3_600_000
            scheduleAdverts(first: false)
            return ok()
        }
        if let v = value("advert.interval ") {
            let mins = cDigits(v)
            if (mins > 0 && mins < 60) || mins > 240 { return "Error: interval range is 60-240 minutes" }
            advertInterval = UInt64(mins / 2) * 120_000
            scheduleAdverts(first: false)
            return ok()
        }
        if let v = value("guest.password ") {
            guestPassword = String(decoding: utf8Cut(Array(v.utf8), max: 15), as: UTF8.self)
            return ok()
        }
        if let v = value("prv.key ") {
            guard remote == nil else { return "Error: the key is the modem's" }
            guard let bytes = hexBytes(v, max: 64), bytes.count == 64, let id = try? LocalIdentity(privateKey: bytes) else { return "Error, bad key" }
            pendingIdentity = id
            return "OK, reboot to apply! New pubkey: " + AirHex.encode(id.publicKey.bytes).uppercased()
        }
        if let v = value("name ") {
            guard !v.contains(where: { "[]\\:,?*".contains($0) }) else { return "Error, bad chars" }
            name = truncatedName(String(v))
            return ok()
        }
        if let v = value("repeat ") {
            disableForward = v.hasPrefix("off")
            savePrefs()
            return disableForward ? "OK - repeat is now OFF" : "OK - repeat is now ON"
        }
        if value("radio.fem.rxgain ") != nil || value("radio.fem.txgain ") != nil { return "Error: unsupported" }
        if let v = value("radio ") {
            // `set radio FREQ,BW,SF,CR`: comma-separated, as the firmware's parseTextParts splits.
            guard let r = parseRadioParams(v, into: configuredRadio) else { return "Error, invalid radio params" }
            savedRadio = r
            return "OK - reboot to apply"
        }
        if let v = value("lat ") { prefs.latitude = cDouble(v); latitudeE6 = Int32(prefs.latitude * 1_000_000); return ok() }
        if let v = value("lon ") { prefs.longitude = cDouble(v); longitudeE6 = Int32(prefs.longitude * 1_000_000); return ok() }
        if let v = value("rxdelay ") {
            let d = Float(cDouble(v))
            guard d >= 0 && d <= 20 else { return "Error, must be 0-20" }
            radio.rxDelayBase = Double(d); return ok()
        }
        if let v = value("txdelay ") {
            let f = Float(cDouble(v))
            guard f >= 0 && f <= 2 else { return "Error, must be 0-2" }
            floodDelayFactor = Double(f); return ok()
        }
        for (key, path) in [("flood.max.unscoped ", \ServerNode.floodMaxUnscoped), ("flood.max.advert ", \.floodMaxAdvert), ("flood.max ", \.floodMax)] {
            guard let v = value(key) else { continue }
            let m = Int(UInt8(truncatingIfNeeded: cInt(v)))
            guard m <= 64 else { return "Error, max 64" }
            self[keyPath: path] = m
            return ok()
        }
        if let v = value("direct.txdelay ") {
            let f = Float(cDouble(v))
            guard f >= 0 && f <= 2 else { return "Error, must be 0-2" }
            directDelayFactor = Double(f); return ok()
        }
        if let v = value("owner.info ") {
            ownerInfo = String(decoding: utf8Cut(Array(v.utf8), max: 119), as: UTF8.self).replacingBars()
            return ok()
        }
        if let v = value("path.hash.mode ") {
            let m = UInt8(truncatingIfNeeded: cInt(v))
            guard m < 3 else { return "Error, must be 0,1, or 2" }
            pathHashSize = Int(m) + 1
            return ok()
        }
        if let v = value("loop.detect ") {
            guard let m = ["off", "minimal", "moderate", "strict"].firstIndex(where: { v.hasPrefix($0) }) else {
                return "Error, must be: off, minimal, moderate, or strict"
            }
            loopDetect = UInt8(m)
            return ok()
        }
        if let v = value("tx ") {
            let p = Int8(truncatingIfNeeded: cInt(v))
            radio.params.txPowerDbm = p
            if savedRadio != nil { savedRadio!.txPowerDbm = p }
            return ok()
        }
        if ts == 0, let v = value("freq ") {
            var r = configuredRadio
            r.freqKHz = UInt32((Float(cDouble(v)) * 1000).rounded())
            savedRadio = r
            savePrefs()
            return "OK - reboot to apply"
        }
        if value("adc.multiplier ") != nil { return "Error: unsupported" }
        return "unknown config: " + String(decoding: Array(c.utf8.prefix(143)), as: UTF8.self)
    }

    // MARK: regions

    func regionCommand(_ c: Substring) -> String {
        if c.hasPrefix("region def") && (c.count == 10 || c.dropFirst(10).first == " ") {
            let def = c.dropFirst(10).trimmingSpaces()
            if def.isEmpty { return "Err - empty def" }
            var cursor: UInt16 = 0
            for token in def.split(separator: " ") {
                var name = token, jump: Substring? = nil
                if let i = token.firstIndex(where: { $0 == "|" || $0 == "," }) {
                    name = token[..<i]; jump = token[token.index(after: i)...].trimmingSpaces()
                }
                name = name.drop { $0 == " " }
                if name.isEmpty { return "Err - empty name" }
                if let j = jump, j.isEmpty { return "Err - empty jump" }
                guard var r = regions.put(name: String(name), parent: cursor) else { return "Err - put failed: \(name)" }
                r.flags = 0
                regions.update(r)
                if let j = jump {
                    guard let target = regions.find(prefix: String(j)) else { return "Err - unknown jump: \(j)" }
                    cursor = target.id
                } else {
                    cursor = r.id
                }
            }
            return regions.exportTree()
        }
        let parts = textParts(c, max: 4)
        let n = parts.count
        let sub = n >= 2 ? String(parts[1]) : ""
        let arg = n >= 3 ? String(parts[2]) : ""
        if n == 1 { return regions.exportTree() }
        switch sub {
        case "load":
            var fresh = RegionMap()
            fresh.nextID = regions.nextID
            regionLoad = (fresh, [0] + Array(repeating: nil, count: 7))
            return ""
        case "save":
            prefs.discoveryModified = epochNow
            savePrefs()
            savedRegions = regions
            return "OK"
        case "allowf" where n >= 3, "denyf" where n >= 3:
            guard var r = regions.find(prefix: arg) else { return "Err - unknown region" }
            if sub == "allowf" { r.flags &= ~RegionMap.denyFlood } else { r.flags |= RegionMap.denyFlood }
            regions.update(r)
            return "OK"
        case "get" where n >= 3:
            guard let r = regions.find(prefix: arg) else { return "Err - unknown region" }
            let f = r.allowsFlood ? "F" : ""
            if let p = regions.entry(id: r.parent), p.id != 0 { return " \(r.name) (\(p.name)) \(f)" }
            return " \(r.name) \(f)"
        case "home":
            if n == 2 { return " home is \(regions.home?.name ?? "*")" }
            guard let r = regions.find(prefix: arg) else { return "Err - unknown region" }
            regions.setHome(r.id)
            return " home is now \(r.name)"
        case "default":
            if n == 2 { return " default scope is \(regions.defaultRegion?.name ?? "<null>")" }
            if arg == "<null>" { regions.setDefault(0); savedRegions = regions; onSavePrefs?(); return " default scope is now <null>" }
            guard var r = regions.find(prefix: arg) ?? regions.put(name: arg, parent: 0) else { return "Err - region table full" }
            r.flags = 0
            regions.update(r)
            regions.setDefault(r.id)
            savedRegions = regions
            onSavePrefs?()  // the region map is saved: a host keeps it (`regionsText`)
            return " default scope is now \(r.name)"
        case "put" where n >= 3:
            guard let parent = n >= 4 ? regions.find(prefix: String(parts[3])) : regions.wildcard else { return "Err - unknown parent" }
            guard var r = regions.put(name: arg, parent: parent.id) else { return "Err - unable to put" }
            r.flags = 0
            regions.update(r)
            return "OK - (flood allowed)"
        case "remove" where n >= 3:
            guard let r = regions.find(name: arg) else { return "Err - not found" }
            return regions.remove(id: r.id) ? "OK" : "Err - not empty"
        case "list" where n >= 3:
            guard arg == "allowed" || arg == "denied" else { return "Err - use 'allowed' or 'denied'" }
            let names = regions.exportNames(max: 160, mask: RegionMap.denyFlood, invert: arg == "denied")
            return names.isEmpty ? "-none-" : names
        default:
            return "Err - ??"
        }
    }

    /// A line of `region load`: `{indent}name [F]`, one space of indent a level below `*`; a blank
    /// line ends the load and puts the new tree in place.
    func regionLoadLine(_ line: String) -> String {
        guard var load = regionLoad else { return "" }
        if line.allSatisfy({ $0 == " " }) {
            regions = load.map
            regionLoad = nil
            return "OK - loaded \(regions.entries.count) regions"
        }
        let u = Array(line.utf8)
        let indent = u.prefix { $0 == 0x20 }.count
        let nameBytes = u[indent...].prefix { RegionMap.isNameByte($0) }
        let rest = u[(indent + nameBytes.count)...].dropFirst()
        let allow = rest.contains(0x46)
        let name = String(decoding: nameBytes, as: UTF8.self)
        if indent > 0 && indent < 8 && !name.isEmpty, let parent = load.stack[indent - 1] {
            let old = regions.find(name: name)
            if var r = load.map.put(name: name, parent: parent, id: old?.id ?? 0) {
                r.flags = old?.flags ?? (allow ? 0 : RegionMap.denyFlood)
                load.map.update(r)
                load.stack[indent] = r.id
            }
        }
        regionLoad = load
        return ""
    }
}

extension StringProtocol {
    func trimmingSpaces() -> Substring {
        let s = Substring(self).drop { $0 == " " }
        var e = s.endIndex
        while e > s.startIndex && s[s.index(before: e)] == " " { e = s.index(before: e) }
        return s[..<e]
    }
    func replacingNewlines(with r: String) -> String { split(separator: "\n", omittingEmptySubsequences: false).joined(separator: r) }
    func replacingBars() -> String { split(separator: "|", omittingEmptySubsequences: false).joined(separator: "\n") }
}
