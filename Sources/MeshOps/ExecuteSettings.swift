import MeshAir
import MeshCompanion
import MeshSession

/// Device information, settings and statistics of the radio itself.
extension Executor {
    func info() async throws(ClientError) -> Value {
        guard let v = RadioInfo.value(selfInfo: selfInfo, deviceInfo: deviceInfo) else {
            throw .link("the radio sent a malformed SELF_INFO frame: check its firmware.")
        }
        return v
    }

    func cString(_ b: ArraySlice<UInt8>) -> String { String(decoding: b.prefix { $0 != 0 }, as: UTF8.self) }

    func telemetryModesValue(_ packed: UInt8) -> Value { RadioInfo.telemetryModes(packed) }

    public static let settingNames = ["name", "coords", "radio", "tx", "tuning", "manual-add", "telemetry", "advert-loc-policy",
                                      "multi-acks", "pin", "auto-add", "path-hash-mode", "flood-scope", "custom",
                                      "public-key", "firmware", "model", "max-contacts", "max-channels", "client-repeat", "repeat-freqs"]
    /// The settings `set` takes (and completes): all but the read-only ones.
    public static let settableSettingNames = settingNames.filter {
        !["public-key", "firmware", "model", "max-contacts", "max-channels", "repeat-freqs"].contains($0)
    }

    func getSetting(_ key: String?) async throws(ClientError) -> Value {
        guard let key else {
            var fields: [Value.Field] = []
            for k in Executor.settingNames {
                if let v = try? await getSetting(k) { fields.append((k, v[k] ?? v)) }
            }
            return .object(fields)
        }
        guard let s = radio.session.radioSelf else { throw .link("the radio sent a malformed SELF_INFO frame: check its firmware.") }
        let d = radio.session.radioDevice
        func one(_ v: Value) -> Value { .object([(key, v)]) }
        func optional<T>(_ v: T?, _ f: (T) -> Value) -> Value { v.map(f) ?? .null }
        switch key {
        case "name": return one(.string(s.name))
        case "coords":
            return one(.object([("latitude", .double(Double(s.latitude) / 1e6)),
                                ("longitude", .double(Double(s.longitude) / 1e6))]))
        case "radio":
            return one(.object([("frequency_mhz", .double(Double(s.radio.frequencyKHz) / 1000)),
                                ("bandwidth_khz", .double(Double(s.radio.bandwidthHz) / 1000)),
                                ("spreading_factor", .int(s.radio.spreadingFactor)), ("coding_rate", .int(s.radio.codingRate))]))
        case "tx": return one(.int(s.txPowerDbm))
        case "tuning":
            let f = try await call(CommandFrame.getTuningParams(), expecting: .tuningParams, what: "GET_TUNING_PARAMS")
            guard let t = CompanionFrame.owned(f, { if case .tuningParams(let t) = $0 { return t }; return nil }) else {
                throw .link("the radio sent a malformed tuning frame: try again.")
            }
            return one(.object([("rx_delay_base", .double(Double(t.rxDelayBaseMilli) / 1000)),
                                ("airtime_factor", .double(Double(t.airtimeFactorMilli) / 1000))]))
        case "manual-add": return one(.bool(s.manualAddContacts & 1 != 0))
        case "telemetry": return one(telemetryModesValue(s.telemetryModes.packed))
        case "advert-loc-policy": return one(.int(s.advertLocationPolicy))
        case "multi-acks": return one(.int(s.multiAcks))
        case "pin": return one(optional(d?.blePin) { .int($0) })
        case "auto-add":
            let f = try await call(CommandFrame.getAutoAddConfig(), expecting: .autoAddConfig, what: "GET_AUTOADD_CONFIG")
            let c = CompanionFrame.owned(f, { if case .autoAddConfig(let c) = $0 { return c }; return nil })
            return one(.object([("flags", .int(c?.flags ?? 0)), ("max_hops", .int(c?.maxHops ?? 0))]))
        case "path-hash-mode": return one(optional(d?.pathHashMode) { .int($0) })
        case "flood-scope":
            let f = try await call(CommandFrame.getDefaultFloodScope(), expecting: .defaultFloodScope, what: "GET_DEFAULT_FLOOD_SCOPE")
            let name = CompanionFrame.owned(f, { if case .defaultFloodScope(let sc?) = $0 { return sc.name }; return nil })
            return one(name.map { .string($0) } ?? .null)
        case "custom":
            let f = try await call(CommandFrame.getCustomVars(), expecting: .customVars, what: "GET_CUSTOM_VARS")
            let text = CompanionFrame.owned(f, { if case .customVars(let b) = $0 { return String(decoding: b, as: UTF8.self) }; return nil }) ?? ""
            var fields: [Value.Field] = []
            for pair in text.split(separator: ",") {
                let kv = pair.split(separator: ":", maxSplits: 1)
                if kv.count == 2 { fields.append((String(kv[0]), .string(String(kv[1])))) }
            }
            return one(.object(fields))
        case "public-key": return one(.string(s.publicKey.hex))
        case "firmware": return one(optional(d?.version) { .string($0) })
        case "model": return one(optional(d?.model) { .string($0) })
        case "max-contacts": return one(optional(d?.maxContacts) { .int($0) })
        case "max-channels": return one(optional(d?.maxChannels) { .int($0) })
        case "client-repeat": return one(optional(d?.clientRepeat) { .bool($0) })
        case "repeat-freqs": return one(try await repeatFrequencies())
        default:
            throw .usage("unknown setting \"\(key)\": use one of \(Executor.settingNames.joined(separator: ", ")).")
        }
    }

    func parseDouble(_ s: String, _ what: String) throws(ClientError) -> Double {
        guard let v = Double(s), v.isFinite else { throw .usage("\(what) must be a finite number, not \"\(s)\".") }
        return v
    }

    func parseInt(_ s: String, _ what: String) throws(ClientError) -> Int {
        guard let v = Int(s) else { throw .usage("\(what) must be a whole number, not \"\(s)\".") }
        return v
    }

    func parseBool(_ s: String, _ what: String) throws(ClientError) -> Bool {
        switch s.lowercased() {
        case "1", "on", "yes", "true": return true
        case "0", "off", "no", "false": return false
        default: throw .usage("\(what) must be on or off, not \"\(s)\".")
        }
    }

    /// A whole number, decimal or hex (`0x1e`).
    func parseIntOrHex(_ s: String, _ what: String) throws(ClientError) -> Int {
        let l = s.lowercased()
        if l.hasPrefix("0x"), let v = Int(l.dropFirst(2), radix: 16) { return v }
        guard let v = Int(s) else { throw .usage("\(what) must be a whole number (decimal, or hex as 0x1e), not \"\(s)\".") }
        return v
    }

    /// `ADVERT_LOC_NONE` (0), `ADVERT_LOC_SHARE` (1), `ADVERT_LOC_PREFS` (2, the servers' CLI name),
    /// or the number.
    func advertLocationPolicy(_ s: String) throws(ClientError) -> UInt8 {
        switch s.lowercased() {
        case "none": return 0
        case "share": return 1
        case "prefs": return 2
        default:
            guard let n = try? parseIntOrHex(s, "the policy"), n >= 0, n < 256 else {
                throw .usage("the advert location policy must be none, share, prefs or a number 0–255, not \"\(s)\".")
            }
            return UInt8(n)
        }
    }

    /// The auto-add flags: a number (decimal or 0x hex), or the firmware's bits by name, comma-separated:
    /// overwrite (0x01, overwrite the oldest non-favourite when full), chat (0x02), repeater (0x04),
    /// room (0x08), sensor (0x10); none is 0.
    func autoAddFlags(_ s: String) throws(ClientError) -> Int {
        if let n = try? parseIntOrHex(s, "the auto-add flags") { return n }
        var bits = 0
        for part in s.lowercased().split(separator: ",") {
            switch part {
            case "overwrite", "overwrite-oldest": bits |= 0x01
            case "chat", "companion": bits |= 0x02
            case "repeater": bits |= 0x04
            case "room", "room-server": bits |= 0x08
            case "sensor": bits |= 0x10
            case "none": break
            default:
                throw .usage("the auto-add flags must be a number (0–255, or hex as 0x1e) or names from overwrite, chat, repeater, room, sensor (comma-separated), not \"\(s)\".")
            }
        }
        return bits
    }

    func telemetryMode(_ s: String) throws(ClientError) -> UInt8 {
        switch s.lowercased() {
        case "deny", "0": return 0
        case "flags", "1": return 1
        case "allow", "2": return 2
        default: throw .usage("a telemetry mode must be deny, flags or allow, not \"\(s)\".")
        }
    }

    func needs(_ values: [String], _ n: Int, _ usage: String) throws(ClientError) {
        guard values.count == n else { throw .usage("usage: pocketmesh set \(usage).") }
    }

    func setOther(manual: UInt8? = nil, telemetry: UInt8? = nil, policy: UInt8? = nil, multiAcks: UInt8? = nil) async throws(ClientError) {
        let s = selfInfo
        let modes = TelemetryModes(packed: telemetry ?? s[46])
        let frame = CommandFrame.setOtherParams(manualAddContacts: manual ?? s[47], telemetryModes: modes,
                                                advertLocationPolicy: policy ?? s[45], multiAcks: multiAcks ?? s[44])
        _ = try await call(frame, expecting: .ok, what: "SET_OTHER_PARAMS")
    }

    func setSetting(_ key: String, _ v: [String]) async throws(ClientError) -> Value {
        switch key {
        case "name":
            try needs(v, 1, "name NAME")
            let frame = try encode { () throws(CompanionEncodeError) in try CommandFrame.setAdvertName(v[0]) }
            _ = try await call(frame, expecting: .ok, what: "the name")
        case "coords":
            try needs(v, 2, "coords LATITUDE LONGITUDE")
            let lat = try parseDouble(v[0], "the latitude"), lon = try parseDouble(v[1], "the longitude")
            guard abs(lat) <= 90, abs(lon) <= 180 else { throw .usage("the latitude must be within ±90 and the longitude within ±180 degrees.") }
            let frame = try encode { () throws(CompanionEncodeError) in
                try CommandFrame.setAdvertLatLon(latitude: Int32((lat * 1e6).rounded()), longitude: Int32((lon * 1e6).rounded()))
            }
            _ = try await call(frame, expecting: .ok, what: "the coordinates")
        case "radio":
            guard v.count == 4 || v.count == 5 else { throw .usage("usage: pocketmesh set radio FREQ_MHZ BW_KHZ SF CR [REPEAT].") }
            let freq = try parseDouble(v[0], "the frequency (MHz)"), bw = try parseDouble(v[1], "the bandwidth (kHz)")
            let sf = try parseInt(v[2], "the spreading factor"), cr = try parseInt(v[3], "the coding rate")
            // The firmware's own limits (CMD_SET_RADIO_PARAMS): 300–2500 MHz, 7–500 kHz, SF 5–12, CR 5–8.
            guard (300...2500).contains(freq), (7...500).contains(bw), (5...12).contains(sf), (5...8).contains(cr) else {
                throw .usage("the radio parameters are out of range: frequency 300–2500 MHz, bandwidth 7–500 kHz, spreading factor 5–12, coding rate 5–8.")
            }
            let p = RadioParams(frequencyKHz: UInt32((freq * 1000).rounded()), bandwidthHz: UInt32((bw * 1000).rounded()),
                                spreadingFactor: UInt8(sf), codingRate: UInt8(cr))
            let repeatOn: Bool? = v.count == 5 ? try parseBool(v[4], "repeat") : nil
            let frame = try encode { () throws(CompanionEncodeError) in try CommandFrame.setRadioParams(p, clientRepeat: repeatOn) }
            _ = try await call(frame, expecting: .ok, what: "the radio parameters")
        case "tx":
            try needs(v, 1, "tx DBM")
            let dbm = try parseInt(v[0], "the TX power")
            let maxDbm = selfInfo.count > 3 ? Int8(bitPattern: selfInfo[3]) : 30
            guard dbm >= -9, dbm <= 127 else { throw .usage("the TX power must be between -9 and \(maxDbm) dBm.") }
            let frame = try encode { () throws(CompanionEncodeError) in try CommandFrame.setRadioTxPower(Int8(dbm), maxDbm: maxDbm) }
            _ = try await call(frame, expecting: .ok, what: "the TX power")
        case "tuning":
            try needs(v, 2, "tuning RX_DELAY_BASE AIRTIME_FACTOR")
            let rx = try parseDouble(v[0], "rx_delay_base"), af = try parseDouble(v[1], "airtime_factor")
            guard rx >= 0, af >= 0, rx < 4_000_000, af < 4_000_000 else { throw .usage("the tuning values must be positive.") }
            let p = TuningParams(rxDelayBaseMilli: UInt32((rx * 1000).rounded()), airtimeFactorMilli: UInt32((af * 1000).rounded()))
            _ = try await call(CommandFrame.setTuningParams(p), expecting: .ok, what: "the tuning parameters")
        case "manual-add":
            try needs(v, 1, "manual-add on|off")
            try await setOther(manual: try parseBool(v[0], "manual-add") ? 1 : 0)
        case "telemetry":
            try needs(v, 3, "telemetry BASE LOCATION ENVIRONMENT (each deny, flags or allow)")
            let packed = try telemetryMode(v[2]) << 4 | telemetryMode(v[1]) << 2 | telemetryMode(v[0])
            try await setOther(telemetry: packed)
        case "advert-loc-policy":
            try needs(v, 1, "advert-loc-policy none|share|prefs (or 0–255)")
            try await setOther(policy: try advertLocationPolicy(v[0]))
        case "multi-acks":
            try needs(v, 1, "multi-acks N")
            let n = try parseInt(v[0], "multi-acks")
            guard n >= 0, n < 256 else { throw .usage("multi-acks must be 0–255.") }
            try await setOther(multiAcks: UInt8(n))
        case "pin":
            try needs(v, 1, "pin PIN (6 digits, or 0 for the default)")
            let n = try parseInt(v[0], "the PIN")
            guard n == 0 || (100_000...999_999).contains(n) else { throw .usage("the PIN must be 6 digits (100000–999999), or 0.") }
            let frame = try encode { () throws(CompanionEncodeError) in try CommandFrame.setDevicePin(UInt32(n)) }
            _ = try await call(frame, expecting: .ok, what: "the PIN")
        case "auto-add":
            guard v.count == 1 || v.count == 2 else { throw .usage("usage: pocketmesh set auto-add FLAGS [MAX_HOPS].") }
            let flags = try autoAddFlags(v[0])
            let hops: Int? = v.count == 2 ? try parseInt(v[1], "max hops") : nil
            guard flags >= 0, flags < 256, (hops ?? 0) >= 0, (hops ?? 0) <= 64 else { throw .usage("the flags must be 0–255 (0x00–0xFF) and max hops 0–64.") }
            let frame = try encode { () throws(CompanionEncodeError) in try CommandFrame.setAutoAddConfig(flags: UInt8(flags), maxHops: hops.map(UInt8.init)) }
            _ = try await call(frame, expecting: .ok, what: "the auto-add configuration")
        case "path-hash-mode":
            try needs(v, 1, "path-hash-mode 0|1|2")
            let n = try parseInt(v[0], "the path hash mode")
            guard (0...2).contains(n) else { throw .usage("the path hash mode must be 0, 1 or 2 (1-, 2- or 3-byte hashes).") }
            let frame = try encode { () throws(CompanionEncodeError) in try CommandFrame.setPathHashMode(UInt8(n)) }
            _ = try await call(frame, expecting: .ok, what: "the path hash mode")
        case "flood-scope":
            guard v.count <= 1 else { throw .usage("usage: pocketmesh set flood-scope [#REGION] (none clears it).") }
            let name = v.first ?? ""
            let frame: EncodedFrame
            if name.isEmpty || name == "none" {
                frame = try encode { () throws(CompanionEncodeError) in try CommandFrame.setDefaultFloodScope(name: nil) }
            } else {
                let key = RegionKey(name: name).key
                frame = try encode { () throws(CompanionEncodeError) in try CommandFrame.setDefaultFloodScope(name: name, key: key) }
            }
            _ = try await call(frame, expecting: .ok, what: "the default flood scope")
        case "custom":
            try needs(v, 2, "custom NAME VALUE")
            let frame = try encode { () throws(CompanionEncodeError) in try CommandFrame.setCustomVar(name: v[0], value: v[1]) }
            _ = try await call(frame, expecting: .ok, what: "the custom variable")
        case "client-repeat":
            try needs(v, 1, "client-repeat on|off")
            try await setClientRepeat(try parseBool(v[0], "client repeat"))
        case "public-key", "firmware", "model", "max-contacts", "max-channels", "repeat-freqs":
            throw .usage("\(key) is read-only: use `pocketmesh get \(key)`.")
        default:
            throw .usage("unknown setting \"\(key)\": use one of \(Executor.settingNames.joined(separator: ", ")).")
        }
        // A secret setting's new value is not echoed: the answer may go to a log, a broker or a hub app.
        let echoed = Secrets.settings.contains(key) ? [] : v
        return .object([("status", .string("ok")), ("setting", .string(key)), ("value", .array(echoed.map { .string($0) }))])
    }

    func stats(_ which: String?) async throws(ClientError) -> Value {
        let types: [StatsType]
        switch which {
        case nil: types = [.core, .radio, .packets]
        case "core": types = [.core]
        case "radio": types = [.radio]
        case "packets": types = [.packets]
        default: throw .usage("stats type must be core, radio or packets.")
        }
        var fields: [Value.Field] = []
        for t in types {
            let f = try await call(CommandFrame.getStats(t), expecting: .stats, what: "GET_STATS")
            switch CompanionFrame.owned(f, { if case .stats(let st) = $0 { return st }; return nil }) {
            case .core(let c)?:
                fields.append(("core", .object([
                    ("battery_mv", .int(c.batteryMillivolts)), ("uptime_s", .int(c.uptimeSeconds)),
                    ("error_flags", .int(c.errorFlags)), ("queue_length", .int(c.queueLength))])))
            case .radio(let r)?:
                fields.append(("radio", .object([
                    ("noise_floor", .int(r.noiseFloor)),
                    ("last_rssi", .int(r.lastRSSI)), ("last_snr", .double(Double(r.lastSNRQuarterDb) / 4)),
                    ("tx_air_s", .int(r.txAirSeconds)), ("rx_air_s", .int(r.rxAirSeconds))])))
            case .packets(let p)?:
                fields.append(("packets", .object([
                    ("received", .int(p.received)), ("sent", .int(p.sent)), ("sent_flood", .int(p.sentFlood)),
                    ("sent_direct", .int(p.sentDirect)), ("received_flood", .int(p.receivedFlood)),
                    ("received_direct", .int(p.receivedDirect)), ("receive_errors", p.receiveErrors.map { .int($0) } ?? .null)])))
            default:
                fields.append((["core", "radio", "packets"][Int(t.rawValue)], .hex(f)))
            }
        }
        return .object(fields)
    }
}
