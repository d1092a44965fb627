import MeshAir
import MeshCompanion

/// The firmware's command switch (`MyMesh::handleCmdFrame`), one case per command code.
extension CompanionNode {
    public static let firmwareVersion = "v1.17.1"
    public static let buildDate = "14 Aug 2026"
    public static let model = "PocketMesh simulator"

    func err(_ e: RadioErrorCode) { emit(ResponseFrame.error(e)) }
    func ok() { emit(ResponseFrame.ok()) }

    /// Handles one app → radio frame (payload only, no `<` header).
    public func receive(frame cmd: [UInt8]) {
        guard powered, let code = cmd.first else { return }
        var r = CommandReader(Array(cmd.prefix(CompanionLimits.maxFrameSize)))
        switch code {
        case 0x16: // DEVICE_QUERY
            guard cmd.count >= 2 else { return err(.unsupportedCommand) }
            appTargetVersion = cmd[1]
            if let f = try? ResponseFrame.deviceInfo(maxContacts: config.maxContacts, maxChannels: UInt8(config.maxChannels), blePin: blePin,
                                                     buildDate: Self.buildDate, model: Self.model, version: Self.firmwareVersion,
                                                     clientRepeat: clientRepeat, pathHashMode: UInt8(pathHashSize - 1)) { emit(f) }
        case 0x01: // APP_START
            guard cmd.count >= 8 else { return err(.unsupportedCommand) }
            iterating = false; iterationToken &+= 1
            emitSelfInfo()
        case 0x02: sendTextCommand(&r)
        case 0x03: sendChannelTextCommand(&r)
        case 0x04: // GET_CONTACTS
            if iterating { return err(.badState) }
            let since: UInt32? = cmd.count >= 5 ? r.u32() : nil
            startContactListing(since: since)
        case 0x05: emit(ResponseFrame.currentTime(epochNow))
        case 0x06: // SET_DEVICE_TIME
            let t = r.u32()
            if r.short { return err(.unsupportedCommand) }
            if t < epochNow { return err(.illegalArgument) }
            setClock(t); ok()
        case 0x07: // SEND_SELF_ADVERT
            advertise(flood: cmd.count >= 2 && cmd[1] == 1) ? ok() : err(.tableFull)
        case 0x08: // SET_ADVERT_NAME
            let raw = Array(cmd[1...].prefix { $0 != 0 })
            name = String(decoding: utf8Cut(raw, max: 31), as: UTF8.self); ok()
        case 0x09: addUpdateContactCommand(cmd)
        case 0x0A: // SYNC_NEXT_MESSAGE
            if let f = queue.popFirst(), let e = try? EncodedFrame(f) { emit(e) } else { emit(ResponseFrame.noMoreMessages()) }
        case 0x0B: // SET_RADIO_PARAMS
            let freq = r.u32(), bw = r.u32(), sf = r.u8(), cr = r.u8()
            if r.short { return err(.unsupportedCommand) }
            guard (150_000...2_500_000).contains(freq), (7_000...500_000).contains(bw), (5...12).contains(sf), (5...8).contains(cr) else {
                return err(.illegalArgument)
            }
            var repeatOn = false
            if r.remaining > 0 {
                repeatOn = r.u8() != 0
                if repeatOn && ![433_000, 869_495, 918_000].contains(freq) { return err(.illegalArgument) }
            }
            radio.params.freqKHz = freq; radio.params.bwHz = bw; radio.params.sf = sf; radio.params.cr = cr
            clientRepeat = repeatOn
            ok()
        case 0x0C: // SET_RADIO_TX_POWER
            guard cmd.count >= 2 else { return err(.unsupportedCommand) }
            let p = Int8(bitPattern: cmd[1])
            guard p >= -9 && p <= maxTxPower else { return err(.illegalArgument) }
            radio.params.txPowerDbm = p; ok()
        case 0x0D: // RESET_PATH
            guard let k = keyArg(&r), anyContact(key: k) != nil else { return err(.notFound) }
            updateContact(k) { $0.resetPath(); $0.lastModified = epochNow }
            ok()
        case 0x0E: // SET_ADVERT_LATLON
            let lat = r.i32(), lon = r.i32()
            if r.short { return err(.unsupportedCommand) }
            guard abs(Int64(lat)) <= 90_000_000, abs(Int64(lon)) <= 180_000_000 else { return err(.illegalArgument) }
            advertLatitude = lat; advertLongitude = lon; ok()
        case 0x0F: // REMOVE_CONTACT
            guard let k = keyArg(&r), let i = contacts.firstIndex(where: { $0.publicKey == k }) else { return err(.notFound) }
            removeContact(at: i); ok()
        case 0x10: // SHARE_CONTACT
            guard let k = keyArg(&r), let raw = advertPackets[k], let pkt = try? Packet(bytes: raw) else { return err(.notFound) }
            sendZeroHop(.advert, payload: pkt.payload, transportCodes: TransportCodes.none) ? ok() : err(.tableFull)
        case 0x11: // EXPORT_CONTACT
            if cmd.count < 33 {
                if let p = try? Packet(routeType: .flood, payloadType: .advert, payload: advertPayload(appdata: selfAppData())),
                   let f = try? ResponseFrame.exportContact(advertPacket: p.bytes) { emit(f) } else { err(.tableFull) }
            } else {
                guard let k = keyArg(&r), let raw = advertPackets[k], let f = try? ResponseFrame.exportContact(advertPacket: raw) else { return err(.notFound) }
                emit(f)
            }
        case 0x12: // IMPORT_CONTACT
            guard cmd.count > 98, let pkt = try? Packet(bytes: Array(cmd[1...])), pkt.payloadType == .advert,
                  let adv = try? Advert(payload: pkt.payload), adv.isValid, let data = try? adv.data() else { return err(.illegalArgument) }
            if adv.publicKey != publicKey { onAdvert(adv, data: data, arrival: Arrival(packet: pkt, snr: 0, rssi: 0)) }
            ok()
        case 0x13: // REBOOT
            if cmd.count >= 7 && Array(cmd[1..<7]) == Array("reboot".utf8) { reboot() }
        case 0x14: emit(ResponseFrame.batteryAndStorage(BatteryAndStorage(millivolts: 4150, usedKB: UInt32(contacts.count * 152 / 1024 + 4), totalKB: 1024)))
        case 0x15: // SET_TUNING_PARAMS
            let rx = r.u32(), af = r.u32()
            radio.rxDelayBase = Double(rx) / 1000; radio.airtimeFactor = Double(af) / 1000; ok()
        case 0x2B: emit(ResponseFrame.tuningParams(TuningParams(rxDelayBaseMilli: UInt32(radio.rxDelayBase * 1000), airtimeFactorMilli: UInt32(radio.airtimeFactor * 1000))))
        case 0x17: // EXPORT_PRIVATE_KEY
            if let f = try? ResponseFrame.privateKey(identity.privateKey) { emit(f) }
        case 0x18: // IMPORT_PRIVATE_KEY
            guard cmd.count >= 65 else { return err(.illegalArgument) }
            guard let id = try? LocalIdentity(privateKey: cmd[1 ..< 65]), !id.publicKey.hasReservedPrefix else { return err(.illegalArgument) }
            identity = id; forgetSecrets(); ok()
        case 0x19: // SEND_RAW_DATA
            let n = Int(Int8(bitPattern: r.u8()))
            guard n >= 0 else { return err(.unsupportedCommand) }
            let path = r.take(n), payload = r.rest()
            guard !r.short, payload.count >= 4 else { return err(.unsupportedCommand) }
            sendDirect(.rawCustom, payload: payload, path: path) ? ok() : err(.tableFull)
        case 0x1A: loginCommand(&r)
        case 0x1B: // SEND_STATUS_REQ
            guard let k = keyArg(&r), let c = anyContact(key: k) else { return err(.notFound) }
            let tag = uniqueTime()
            var pt: [UInt8] = []; put32(tag, &pt); pt += [0x01, 0, 0, 0, 0] + rng.bytes(4)
            sendRequest(to: c, plaintext: pt, kind: .status, tag: tag)
        case 0x1C: // HAS_CONNECTION
            guard let k = keyArg(&r), anyContact(key: k) != nil else { return err(.notFound) }
            err(.notFound) // no keep-alive connections: current servers never start one
        case 0x1D: ok() // LOGOUT
        case 0x1E: // GET_CONTACT_BY_KEY
            guard let k = keyArg(&r), let c = anyContact(key: k), let f = try? ResponseFrame.contact(c) else { return err(.notFound) }
            emit(f)
        case 0x1F: // GET_CHANNEL
            guard cmd.count >= 2, Int(cmd[1]) < channels.count else { return err(.notFound) }
            let s = channels[Int(cmd[1])]
            if let f = try? ResponseFrame.channelInfo(index: cmd[1], name: s.name, secret: s.secret) { emit(f) }
        case 0x20: // SET_CHANNEL
            guard cmd.count >= 50 else { return err(.unsupportedCommand) }
            if cmd.count >= 66 { return err(.unsupportedCommand) }
            let idx = Int(cmd[1])
            guard idx < channels.count else { return err(.notFound) }
            var rr = CommandReader(cmd, at: 2)
            let nm = rr.cString(32)
            channels[idx] = ChannelSlot(name: truncatedName(nm), secret: Array(cmd[34 ..< 50]))
            ok()
        case 0x21: signBuffer = []; emit(ResponseFrame.signStart(maxLength: UInt32(Self.maxSignLength)))
        case 0x22:
            guard var b = signBuffer else { return err(.badState) }
            b += cmd[1...]
            if b.count > Self.maxSignLength { return err(.tableFull) }
            signBuffer = b; ok()
        case 0x23:
            guard let b = signBuffer else { return err(.badState) }
            signBuffer = nil
            if let f = try? ResponseFrame.signature(identity.sign(b)) { emit(f) }
        case 0x24: traceCommand(cmd)
        case 0x25: // SET_DEVICE_PIN
            let pin = r.u32()
            guard !r.short, pin == 0 || (100_000...999_999).contains(pin) else { return err(.illegalArgument) }
            blePin = pin; ok()
        case 0x26: // SET_OTHER_PARAMS
            guard cmd.count >= 2 else { return err(.unsupportedCommand) }
            manualAddContacts = cmd[1]
            if cmd.count >= 3 { telemetryModes = cmd[2] }
            if cmd.count >= 4 { advertLocationPolicy = cmd[3] }
            if cmd.count >= 5 { multiAcks = cmd[4] }
            ok()
        case 0x27: // SEND_TELEMETRY_REQ
            if cmd.count == 4 {
                var lpp: [UInt8] = [1, 116]; put16(UInt16(415).byteSwapped, &lpp)
                if let f = try? PushFrame.telemetryResponse(publicKey.frameKey.prefix(6), lpp: lpp) { emit(f) }
                return
            }
            guard cmd.count >= 36, let k = FrameKey(cmd[4 ..< 36]), let c = anyContact(key: k) else { return err(.notFound) }
            let tag = uniqueTime()
            var pt: [UInt8] = []; put32(tag, &pt); pt += [0x03, 0x00, 0, 0, 0] + rng.bytes(4)
            sendRequest(to: c, plaintext: pt, kind: .telemetry, tag: tag)
        case 0x28: // GET_CUSTOM_VARS
            if let f = try? ResponseFrame.customVars(customVars.map { "\($0.0):\($0.1)" }.joined(separator: ",")) { emit(f) }
        case 0x29: // SET_CUSTOM_VAR
            let s = String(decoding: cmd[1...].prefix { $0 != 0 }, as: UTF8.self)
            guard let colon = s.firstIndex(of: ":") else { return err(.illegalArgument) }
            let k = String(s[..<colon]), v = String(s[s.index(after: colon)...])
            guard let i = customVars.firstIndex(where: { $0.0 == k }) else { return err(.illegalArgument) }
            customVars[i].1 = v; ok()
        case 0x2A: // GET_ADVERT_PATH
            guard cmd.count >= 9 else { return err(.unsupportedCommand) }
            let pfx = Array(cmd[2 ..< 9])
            guard let e = advertPaths.last(where: { $0.key.withUnsafeBytes { k in pfx.indices.allSatisfy { k[$0] == pfx[$0] } } }),
                  let f = try? ResponseFrame.advertPath(receivedTimestamp: e.receivedAt, pathLength: FramePathLength(rawValue: e.pathLength), path: e.path)
            else { return err(.notFound) }
            emit(f)
        case 0x32: // SEND_BINARY_REQ
            guard cmd.count >= 34, let k = keyArg(&r), let c = anyContact(key: k) else { return err(.notFound) }
            let tag = uniqueTime()
            var pt: [UInt8] = []; put32(tag, &pt); pt += cmd[33...]
            sendRequest(to: c, plaintext: pt, kind: .binary, tag: tag)
        case 0x33: // FACTORY_RESET
            guard cmd.count >= 6, Array(cmd[1..<6]) == Array("reset".utf8) else { return err(.unsupportedCommand) }
            ok()
            factoryReset()
            reboot()
        case 0x34: // SEND_PATH_DISCOVERY_REQ
            guard cmd.count >= 34, let k = FrameKey(cmd[2 ..< 34]), let c = anyContact(key: k), let ak = k.airKey, let s = secret(for: ak) else { return err(.notFound) }
            let tag = uniqueTime()
            var pt: [UInt8] = []; put32(tag, &pt); pt += [0x03, ~UInt8(0x01), 0, 0, 0] + rng.bytes(4)
            pending = Pending(kind: .pathDiscovery, key: c.publicKey, tag: tag)
            let payload = datagram(to: ak, secret: s, plaintext: pt)
            sendFlood(.req, payload: payload, scope: effectiveScope())
            emit(ResponseFrame.sent(SentInfo(isFlood: true, tag: tag, estimatedTimeoutMs: floodTimeout(payload.count + 2))))
        case 0x36: // SET_FLOOD_SCOPE_KEY
            if cmd.count >= 2 && cmd[1] == 1 { sessionScope = .some(nil) }
            else if cmd.count >= 18, let k = try? RegionKey(cmd[2 ..< 18]) { sessionScope = .some(k) }
            else { sessionScope = nil }
            ok()
        case 0x37: // SEND_CONTROL_DATA
            guard cmd.count >= 2, cmd[1] & 0x80 != 0 else { return err(.illegalArgument) }
            sendZeroHop(.control, payload: Array(cmd[1...])) ? ok() : err(.tableFull)
        case 0x38: // GET_STATS
            guard cmd.count >= 2 else { return err(.unsupportedCommand) }
            switch cmd[1] {
            case 0: emit(ResponseFrame.stats(.core(CoreStats(batteryMillivolts: 4150, uptimeSeconds: uptimeSeconds, errorFlags: radio.errEvents > 0 ? 1 : 0, queueLength: UInt8(clamping: radio.queueLength)))))
            case 1: emit(ResponseFrame.stats(.radio(RadioStats(noiseFloor: -120, lastRSSI: Int8(clamping: radio.lastRSSI), lastSNRQuarterDb: snrQ(radio.lastSNR),
                                                                txAirSeconds: UInt32(radio.txAirMs / 1000), rxAirSeconds: UInt32(radio.rxAirMs / 1000)))))
            case 2: emit(ResponseFrame.stats(.packets(PacketStats(received: radio.nRecv, sent: radio.nSent, sentFlood: radio.sentFlood, sentDirect: radio.sentDirect,
                                                                  receivedFlood: radio.recvFlood, receivedDirect: radio.recvDirect, receiveErrors: UInt32(radio.errEvents)))))
            default: err(.illegalArgument)
            }
        case 0x39: anonCommand(cmd)
        case 0x3A: // SET_AUTOADD_CONFIG
            guard cmd.count >= 2 else { return err(.unsupportedCommand) }
            autoAddFlags = cmd[1]
            if cmd.count >= 3 { autoAddMaxHops = min(cmd[2], 64) }
            ok()
        case 0x3B: emit(ResponseFrame.autoAddConfig(AutoAddConfig(flags: autoAddFlags, maxHops: autoAddMaxHops)))
        case 0x3C:
            if let f = try? ResponseFrame.allowedRepeatFrequencies([433_000...433_000, 869_495...869_495, 918_000...918_000]) { emit(f) }
        case 0x3D: // SET_PATH_HASH_MODE
            guard cmd.count >= 3 else { return err(.unsupportedCommand) }
            guard cmd[2] <= 2 else { return err(.illegalArgument) }
            pathHashSize = Int(cmd[2]) + 1; ok()
        case 0x3E: channelDataCommand(cmd)
        case 0x3F: // SET_DEFAULT_FLOOD_SCOPE
            if cmd.count >= 48 {
                var rr = CommandReader(cmd, at: 1)
                let nm = rr.cString(31)
                guard (1...30).contains(nm.utf8.count) else { return err(.illegalArgument) }
                defaultScopeName = nm; defaultScopeKey = Array(cmd[32 ..< 48])
            } else { defaultScopeName = nil; defaultScopeKey = [] }
            ok()
        case 0x40:
            if let f = try? ResponseFrame.defaultFloodScope(name: defaultScopeName, key: defaultScopeKey) { emit(f) }
        case 0x41: // SEND_RAW_PACKET
            guard cmd.count >= 4, let pkt = try? Packet(bytes: Array(cmd[2...])) else { return err(.illegalArgument) }
            send(pkt, priority: cmd[1], delay: 0) ? ok() : err(.tableFull)
        default:
            err(.unsupportedCommand)
        }
    }

    func keyArg(_ r: inout CommandReader) -> FrameKey? {
        let b = r.take(32)
        return r.short ? nil : FrameKey(b)
    }

    func emitSelfInfo() {
        let rp = MeshCompanion.RadioParams(frequencyKHz: radio.params.freqKHz, bandwidthHz: radio.params.bwHz,
                                          spreadingFactor: radio.params.sf, codingRate: radio.params.cr)
        if let f = try? ResponseFrame.selfInfo(txPowerDbm: radio.params.txPowerDbm, maxTxPowerDbm: maxTxPower, publicKey: publicKey.frameKey,
                                               latitude: advertLatitude, longitude: advertLongitude, multiAcks: multiAcks,
                                               advertLocationPolicy: advertLocationPolicy, telemetryModes: TelemetryModes(packed: telemetryModes),
                                               manualAddContacts: manualAddContacts, radio: rp, name: name) { emit(f) }
    }

    func removeContact(at i: Int) {
        let c = contacts.remove(at: i)
        advertPackets[c.publicKey] = nil
    }

    /// `CONTACTS_START`, then one `CONTACT` per later loop pass, then `END_OF_CONTACTS`.
    func startContactListing(since: UInt32?) {
        emit(ResponseFrame.contactsStart(count: UInt32(contacts.count)))
        let snapshot = contacts.filter { since == nil || $0.lastModified > since! }
        iterating = true
        iterationToken &+= 1
        let token = iterationToken
        var i = 0
        var most: UInt32 = 0
        func step() {
            guard iterating, iterationToken == token else { return }
            if i < snapshot.count {
                if let f = try? ResponseFrame.contact(snapshot[i]) { emit(f) }
                most = max(most, snapshot[i].lastModified)
                i += 1
                mesh.scheduler.after(1) { step() }
            } else {
                iterating = false
                emit(ResponseFrame.endOfContacts(lastModified: most))
            }
        }
        mesh.scheduler.after(1) { step() }
    }

    func addUpdateContactCommand(_ cmd: [UInt8]) {
        guard cmd.count >= 36 else { return err(.unsupportedCommand) }
        var b = cmd
        if b.count < 136 { b += [UInt8](repeating: 0, count: 136 - b.count) }
        var r = CommandReader(b)
        guard let key = FrameKey(r.take(32)) else { return err(.illegalArgument) }
        let type = ContactType(rawValue: r.u8())
        let flags = r.u8()
        let pl = FramePathLength(rawValue: r.u8())
        let path = r.take(64)
        let nm = r.cString(32)
        let lastAdvert = r.u32()
        var c = Contact(publicKey: key, type: type, flags: flags, name: truncatedName(nm), lastAdvertTimestamp: lastAdvert)
        if pl.isUnknown || !pl.isValid { c.resetPath() } else { try? c.setOutPath(pl, path.prefix(pl.byteCount)) }
        if b.count >= 144 { c.latitude = r.i32(); c.longitude = r.i32() }
        c.lastModified = b.count >= 148 ? r.u32() : epochNow
        addOrUpdate(c) ? ok() : err(.tableFull)
    }

    func floodTimeout(_ rawLen: Int) -> UInt32 { 500 + 16 * radio.airtime(rawLen) }
    func directTimeout(_ rawLen: Int, hops: Int) -> UInt32 { 500 + (6 * radio.airtime(rawLen) + 250) * UInt32(hops + 1) }

    /// Sends a datagram to a contact: DIRECT along its out path, or flood. Returns (isFlood, est timeout).
    func sendToContact(_ c: Contact, type: PayloadType, payload: [UInt8]) -> (Bool, UInt32)? {
        if c.outPathLength.isUnknown {
            guard sendFlood(type, payload: payload, scope: effectiveScope()) else { return nil }
            return (true, floodTimeout(2 + payload.count))
        }
        let path = c.outPath
        guard sendDirect(type, payload: payload, path: path, hashSize: c.outPathLength.hashSize) else { return nil }
        return (false, directTimeout(2 + path.count + payload.count, hops: c.outPathLength.hopCount))
    }

    func sendTextCommand(_ r: inout CommandReader) {
        let txtType = r.u8(), attempt = r.u8(), ts0 = r.u32()
        let pfx = r.take(6)
        if r.short { return err(.unsupportedCommand) }
        let text = Array(r.rest().prefix { $0 != 0 })
        guard txtType == 0 || txtType == 1 else { return err(.unsupportedCommand) }
        guard let i = contactIndex(prefix: pfx) else { return err(.notFound) }
        let c = contacts[i]
        guard text.count <= (attempt > 3 ? 158 : 160), let ak = c.publicKey.airKey, let s = secret(for: ak) else { return err(.tableFull) }
        let ts = txtType == 1 ? uniqueTime() : ts0
        var pt: [UInt8] = []
        put32(ts, &pt)
        pt.append(txtType << 2 | attempt & 3)
        pt += text
        if attempt > 3 { pt += [0, attempt] }
        let payload = datagram(to: ak, secret: s, plaintext: pt)
        let ack = txtType == 0 ? TextAck.code(timestamp: ts, txtType: 0, attempt: attempt & 3, text: text, sender: publicKey).value : 0
        guard let (flood, est) = sendToContact(c, type: .txtMsg, payload: payload) else { return err(.tableFull) }
        if txtType == 0 { expectAck(ack) }
        emit(ResponseFrame.sent(SentInfo(isFlood: flood, tag: ack, estimatedTimeoutMs: est)))
    }

    func sendChannelTextCommand(_ r: inout CommandReader) {
        let txtType = r.u8(), idx = Int(r.u8()), ts = r.u32()
        if r.short { return err(.unsupportedCommand) }
        guard txtType == 0 else { return err(.unsupportedCommand) }
        guard idx < channels.count else { return err(.notFound) }
        let msg = Array(r.rest().prefix { $0 != 0 })
        let text = utf8Cut(Array(name.utf8) + Array(": ".utf8) + msg, max: 160)
        var pt: [UInt8] = []
        put32(ts, &pt); pt.append(0); pt += text
        let ch = channels[idx].channel
        let payload = [ch.hash] + ch.sharedSecret.encrypt(pt)
        sendFlood(.grpTxt, payload: payload, scope: effectiveScope()) ? ok() : err(.notFound)
    }

    func channelDataCommand(_ cmd: [UInt8]) {
        var r = CommandReader(cmd)
        let idx = Int(r.u8())
        let plRaw = r.u8()
        var path: [UInt8] = []
        var pl: AirPathLength? = nil
        if plRaw != 0xFF {
            guard let p = try? AirPathLength(encoded: plRaw) else { return err(.illegalArgument) }
            pl = p; path = r.take(p.byteCount)
        }
        let lo = r.u8(), hi = r.u8()
        let dataType = UInt16(lo) | UInt16(hi) << 8
        let data = r.rest()
        if r.short { return err(.unsupportedCommand) }
        guard idx < channels.count else { return err(.notFound) }
        guard dataType != 0 else { return err(.illegalArgument) }
        guard data.count <= CompanionLimits.maxChannelDataLength else { return err(.tableFull) }
        var pt: [UInt8] = []
        put16(dataType, &pt); pt.append(UInt8(data.count)); pt += data
        let ch = channels[idx].channel
        let payload = [ch.hash] + ch.sharedSecret.encrypt(pt)
        let sent = pl == nil ? sendFlood(.grpData, payload: payload, scope: effectiveScope())
            : sendDirect(.grpData, payload: payload, path: path, hashSize: pl!.hashSize)
        sent ? ok() : err(.tableFull)
    }

    func sendRequest(to c: Contact, plaintext: [UInt8], kind: RequestKind, tag: UInt32) {
        guard let ak = c.publicKey.airKey, let s = secret(for: ak) else { return err(.notFound) }
        pending = Pending(kind: kind, key: c.publicKey, tag: tag)
        guard let (flood, est) = sendToContact(c, type: .req, payload: datagram(to: ak, secret: s, plaintext: plaintext)) else { return err(.tableFull) }
        emit(ResponseFrame.sent(SentInfo(isFlood: flood, tag: tag, estimatedTimeoutMs: est)))
    }

    func loginCommand(_ r: inout CommandReader) {
        guard let k = keyArg(&r), let c = anyContact(key: k), let ak = k.airKey, let s = secret(for: ak) else { return err(.notFound) }
        let pw = Array(r.rest().prefix { $0 != 0 }.prefix(15))
        var pt: [UInt8] = []
        put32(uniqueTime(), &pt)
        if c.type.rawValue == 3 { put32(0, &pt) } // room: sync_since
        pt += pw
        let payload = [ak.hashByte] + publicKey.bytes + s.encrypt(pt)
        pending = Pending(kind: .login, key: k, tag: get32(k.bytes, 0))
        guard let (flood, est) = sendToContact(c, type: .anonReq, payload: payload) else { return err(.tableFull) }
        emit(ResponseFrame.sent(SentInfo(isFlood: flood, tag: get32(k.bytes, 0), estimatedTimeoutMs: est)))
    }

    func anonCommand(_ cmd: [UInt8]) {
        guard cmd.count >= 34, let k = FrameKey(cmd[1 ..< 33]), let ak = k.airKey, let s = secret(for: ak) else { return err(.notFound) }
        let data = Array(cmd[33...])
        guard data.count <= CompanionLimits.maxAnonRequestData else { return err(.tableFull) }
        var c = anyContact(key: k)
        if c == nil {
            var t = Contact(publicKey: k, type: ContactType(rawValue: 0), name: "")
            try? t.setOutPath(FramePathLength(rawValue: 0), [UInt8]()) // zero-hop direct
            if transients.count >= 8 { transients.removeFirst() }
            transients.append(t); c = t
        }
        let tag = uniqueTime()
        var pt: [UInt8] = []; put32(tag, &pt); pt += data
        pending = Pending(kind: .anon, key: k, tag: tag)
        let payload = [ak.hashByte] + publicKey.bytes + s.encrypt(pt)
        guard let (flood, est) = sendToContact(c!, type: .anonReq, payload: payload) else { return err(.tableFull) }
        emit(ResponseFrame.sent(SentInfo(isFlood: flood, tag: tag, estimatedTimeoutMs: est)))
    }

    func traceCommand(_ cmd: [UInt8]) {
        guard cmd.count > 10, cmd.count - 10 < 179 else { return err(.unsupportedCommand) }
        var r = CommandReader(cmd)
        let tag = r.u32(), auth = r.u32(), flags = r.u8()
        let hashes = r.rest()
        let width = 1 << Int(flags & 3)
        guard hashes.count % width == 0, hashes.count / width <= 64 else { return err(.illegalArgument) }
        var payload: [UInt8] = []
        put32(tag, &payload); put32(auth, &payload); payload.append(flags); payload += hashes
        guard sendDirect(.trace, payload: payload, path: [], priority: 5) else { return err(.tableFull) }
        let est = directTimeout(2 + payload.count, hops: hashes.count / width)
        emit(ResponseFrame.sent(SentInfo(isFlood: false, tag: tag, estimatedTimeoutMs: est)))
    }
}
