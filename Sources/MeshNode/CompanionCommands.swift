import MeshAir
import MeshCompanion

/// The firmware's command switch (`MyMesh::handleCmdFrame`): frames are decoded by MeshCompanion's
/// `CompanionCommand` (the firmware's length guards), then handled one case per command.
extension CompanionNode {
    public static let firmwareVersion = "v1.17.1"
    public static let buildDate = "14 Aug 2026"
    public static let model = "PocketMesh simulator"

    func err(_ e: RadioErrorCode) { emit(ResponseFrame.error(e)) }
    func ok() { emit(ResponseFrame.ok()) }

    /// Handles one app → radio frame (payload only, no `<` header). Longer frames are cut to 176
    /// bytes and still handled, as the firmware does.
    public func receive(frame: [UInt8]) {
        guard powered, !frame.isEmpty else { return }
        guard remote != nil else { return decodeAndHandle(frame) }
        if !heldFrames.isEmpty {
            // Commands are answered in order: this one waits behind a held one.
            guard heldFrames.count < Self.maxHeldFrames else { return err(.tableFull) }
            heldFrames.append(frame); return
        }
        handleOrHold(frame)
    }

    /// With a remote identity: a command that needs a shared secret the modem has not given yet
    /// is held, its replies unsent (the secret is asked for before a command changes anything),
    /// and handled again when the secret comes.
    func handleOrHold(_ frame: [UInt8]) {
        collected = []
        secretPending = false
        decodeAndHandle(frame)
        let out = collected ?? []
        collected = nil
        if secretPending && !secretsAsked.isEmpty { heldFrames.insert(frame, at: 0); return }
        for f in out { onFrame?(f) }
    }

    private func decodeAndHandle(_ frame: [UInt8]) {
        Array(frame.prefix(CompanionLimits.maxFrameSize)).withUnsafeBytes { raw in
            switch Result(catching: { () throws(CompanionDecodeError) -> CompanionCommand in try CompanionCommand.decode(raw) }) {
            case let .success(command): handle(command)
            case let .failure(error): err(CompanionCommand.radioError(for: error))
            }
        }
    }

    /// The views inside `command` are only valid during this call.
    func handle(_ command: CompanionCommand) {
        switch command {
        case let .deviceQuery(version):
            appTargetVersion = version
            if let f = try? ResponseFrame.deviceInfo(firmwareVersionCode: config.protocolVersion, maxContacts: config.maxContacts, maxChannels: UInt8(config.maxChannels), blePin: blePin,
                                                     buildDate: Self.buildDate, model: board, version: Self.firmwareVersion,
                                                     clientRepeat: clientRepeat, pathHashMode: UInt8(pathHashSize - 1)) { emit(f) }
        case .appStart:
            iterating = false; iterationToken &+= 1
            emitSelfInfo()
        case let .sendTextMessage(t):
            sendText(type: t.textType.rawValue, attempt: t.attempt, timestamp: t.timestamp, prefix: t.recipientPrefix, text: Array(t.textBytes))
        case let .sendChannelTextMessage(c):
            sendChannelText(type: c.textType.rawValue, index: Int(c.channelIndex), timestamp: c.timestamp, message: Array(c.textBytes))
        case let .getContacts(since):
            if iterating { return err(.badState) }
            startContactListing(since: since)
        case .getDeviceTime:
            emit(ResponseFrame.currentTime(epochNow))
        case let .setDeviceTime(t):
            if t < epochNow { return err(.illegalArgument) }
            setClock(t); ok()
        case let .sendSelfAdvert(flood):
            advertise(flood: flood) ? ok() : err(.tableFull)
        case let .setAdvertName(raw):
            name = String(decoding: utf8Cut(Array(raw), max: 31), as: UTF8.self); ok()
        case let .addUpdateContact(record):
            var c = record.contact
            if record.lastModified == nil { c.lastModified = epochNow }
            if !c.outPathLength.isUnknown && !c.outPathLength.isValid { c.resetPath() }
            addOrUpdate(c) ? ok() : err(.tableFull)
        case .syncNextMessage:
            if let f = queue.popFirst(), let e = try? EncodedFrame(f) { emit(e) } else { emit(ResponseFrame.noMoreMessages()) }
        case let .setRadioParams(p, repeatOn):
            guard (150_000...2_500_000).contains(p.frequencyKHz), (7_000...500_000).contains(p.bandwidthHz),
                  (5...12).contains(p.spreadingFactor), (5...8).contains(p.codingRate) else { return err(.illegalArgument) }
            if repeatOn == true && ![433_000, 869_495, 918_000].contains(p.frequencyKHz) { return err(.illegalArgument) }
            radio.params.freqKHz = p.frequencyKHz; radio.params.bwHz = p.bandwidthHz
            radio.params.sf = p.spreadingFactor; radio.params.cr = p.codingRate
            clientRepeat = repeatOn ?? false
            ok()
        case let .setRadioTxPower(p):
            guard p >= -9 && p <= maxTxPower else { return err(.illegalArgument) }
            radio.params.txPowerDbm = p; ok()
        case let .resetPath(k):
            guard anyContact(key: k) != nil else { return err(.notFound) }
            updateContact(k) { $0.resetPath(); $0.lastModified = epochNow }
            ok()
        case let .setAdvertLatLon(lat, lon, _):
            guard abs(Int64(lat)) <= 90_000_000, abs(Int64(lon)) <= 180_000_000 else { return err(.illegalArgument) }
            advertLatitude = lat; advertLongitude = lon; ok()
        case let .removeContact(k):
            guard let i = contacts.firstIndex(where: { $0.publicKey == k }) else { return err(.notFound) }
            removeContact(at: i); ok()
        case let .shareContact(k):
            guard let raw = advertPackets[k], let pkt = try? Packet(bytes: raw) else { return err(.notFound) }
            sendZeroHop(.advert, payload: pkt.payload, transportCodes: TransportCodes.none) ? ok() : err(.tableFull)
        case let .exportContact(k):
            if let k {
                guard let raw = advertPackets[k], let f = try? ResponseFrame.exportContact(advertPacket: raw) else { return err(.notFound) }
                emit(f)
            } else {
                let made = withAdvertPayload(appdata: selfAppData()) { [unowned self] payload in
                    if let p = try? Packet(routeType: .flood, payloadType: .advert, payload: payload),
                       let f = try? ResponseFrame.exportContact(advertPacket: p.bytes) { self.emit(f) } else { self.err(.tableFull) }
                }
                if !made { err(.tableFull) }
            }
        case let .importContact(raw):
            guard let pkt = try? Packet(bytes: Array(raw)), pkt.payloadType == .advert,
                  let adv = try? Advert(payload: pkt.payload), adv.isValid, let data = try? adv.data() else { return err(.illegalArgument) }
            if adv.publicKey != publicKey { onAdvert(adv, data: data, arrival: Arrival(packet: pkt, snr: 0, rssi: 0)) }
            ok()
        case .reboot:
            reboot()
        case .getBatteryAndStorage:
            emit(ResponseFrame.batteryAndStorage(BatteryAndStorage(millivolts: readings.millivolts, usedKB: UInt32(contacts.count * 152 / 1024 + 4), totalKB: 1024)))
        case let .setTuningParams(t):
            radio.rxDelayBase = Double(t.rxDelayBaseMilli) / 1000; radio.airtimeFactor = Double(t.airtimeFactorMilli) / 1000; ok()
        case .getTuningParams:
            emit(ResponseFrame.tuningParams(TuningParams(rxDelayBaseMilli: UInt32(radio.rxDelayBase * 1000), airtimeFactorMilli: UInt32(radio.airtimeFactor * 1000))))
        case .exportPrivateKey:
            // The firmware answers DISABLED where the key cannot leave the device.
            guard let identity else { return emit(ResponseFrame.disabled()) }
            if let f = try? ResponseFrame.privateKey(identity.privateKey) { emit(f) }
        case let .importPrivateKey(raw):
            guard remote == nil else { return err(.illegalArgument) }
            guard let id = try? LocalIdentity(privateKey: Array(raw)), !id.publicKey.hasReservedPrefix else { return err(.illegalArgument) }
            identity = id; forgetSecrets(); ok()
        case let .sendRawData(r):
            if speaksCLIProtocol {
                // The dev line: the length byte is an encoded path length (multi-byte hashes).
                guard r.pathLength.isValid else { return err(.unsupportedCommand) }
                guard let path = r.encodedPath else { return err(.illegalArgument) }
                sendDirect(.rawCustom, payload: Array(r.encodedPayload), path: Array(path), hashSize: r.pathLength.hashSize) ? ok() : err(.tableFull)
            } else {
                guard r.legacyIsValid else { return err(.unsupportedCommand) }
                sendDirect(.rawCustom, payload: Array(r.payload), path: Array(r.path)) ? ok() : err(.tableFull)
            }
        case let .sendLogin(k):
            login(key: k.publicKey, password: Array(k.text.utf8.prefix(15)))
        case let .sendStatusRequest(k):
            guard let c = anyContact(key: k) else { return err(.notFound) }
            let tag = uniqueTime()
            var pt: [UInt8] = []; put32(tag, &pt); pt += [0x01, 0, 0, 0, 0] + rng.bytes(4)
            sendRequest(to: c, plaintext: pt, kind: .status, tag: tag)
        case let .hasConnection(k):
            // No keep-alive connections: current servers never start one.
            _ = k; err(.notFound)
        case .logout:
            ok()
        case let .getContactByKey(k):
            guard let c = anyContact(key: k), let f = try? ResponseFrame.contact(c) else { return err(.notFound) }
            emit(f)
        case let .getChannel(i):
            guard Int(i) < channels.count else { return err(.notFound) }
            let s = channels[Int(i)]
            if let f = try? ResponseFrame.channelInfo(index: i, name: s.name, secret: s.secret) { emit(f) }
        case let .setChannel(c):
            guard Int(c.index) < channels.count else { return err(.notFound) }
            channels[Int(c.index)] = ChannelSlot(name: truncatedName(c.name), secret: Array(c.secret))
            ok()
        case .signStart:
            signBuffer = []
            emit(ResponseFrame.signStart(maxLength: UInt32(Self.maxSignLength)))
        case let .signData(chunk):
            guard var b = signBuffer else { return err(.badState) }
            b += chunk
            if b.count > Self.maxSignLength { return err(.tableFull) }
            signBuffer = b; ok()
        case .signFinish:
            guard let b = signBuffer else { return err(.badState) }
            signBuffer = nil
            sign(b) { [unowned self] sig in
                if let sig, let f = try? ResponseFrame.signature(sig) { self.emit(f) } else { self.err(.badState) }
            }
        case let .sendTracePath(t):
            guard t.isValid else { return err(.illegalArgument) }
            trace(tag: t.tag, auth: t.authCode, flags: t.flags, hashes: Array(t.hashes))
        case let .setDevicePin(pin):
            guard pin == 0 || (100_000...999_999).contains(pin) else { return err(.illegalArgument) }
            blePin = pin; ok()
        case let .setOtherParams(p):
            manualAddContacts = p.manualAddContacts
            if let t = p.telemetryModes { telemetryModes = t.packed }
            if let l = p.advertLocationPolicy { advertLocationPolicy = l }
            if let m = p.multiAcks { multiAcks = m }
            ok()
        case let .sendTelemetryRequest(k):
            guard let k else {
                let lpp = readings.lpp(permissions: 0xFF)
                if let f = try? PushFrame.telemetryResponse(publicKey.prefix(6), lpp: lpp) { emit(f) }
                return
            }
            guard let c = anyContact(key: k) else { return err(.notFound) }
            let tag = uniqueTime()
            var pt: [UInt8] = []; put32(tag, &pt); pt += [0x03, 0x00, 0, 0, 0] + rng.bytes(4)
            sendRequest(to: c, plaintext: pt, kind: .telemetry, tag: tag)
        case .getCustomVars:
            if let f = try? ResponseFrame.customVars(customVars.map { "\($0.0):\($0.1)" }.joined(separator: ",")) { emit(f) }
        case let .setCustomVar(raw):
            let s = String(decoding: raw, as: UTF8.self)
            guard let colon = s.firstIndex(of: ":") else { return err(.illegalArgument) }
            let k = String(s[..<colon]), v = String(s[s.index(after: colon)...])
            guard let i = customVars.firstIndex(where: { $0.0 == k }) else { return err(.illegalArgument) }
            customVars[i].1 = v; ok()
        case let .getAdvertPath(k):
            let pfx = Array(k.bytes.prefix(7))
            guard let e = advertPaths.last(where: { Array($0.key.bytes.prefix(7)) == pfx }),
                  let f = try? ResponseFrame.advertPath(receivedTimestamp: e.receivedAt, pathLength: PathLength(rawValue: e.pathLength), path: e.path)
            else { return err(.notFound) }
            emit(f)
        case let .sendBinaryRequest(k):
            guard let c = anyContact(key: k.publicKey) else { return err(.notFound) }
            let tag = uniqueTime()
            var pt: [UInt8] = []; put32(tag, &pt); pt += k.data
            sendRequest(to: c, plaintext: pt, kind: .binary, tag: tag)
        case .factoryReset:
            ok()
            factoryReset()
            reboot()
        case let .sendPathDiscoveryRequest(k):
            guard let c = anyContact(key: k), let ak = Optional(k), let s = secret(for: ak) else { return err(.notFound) }
            let tag = uniqueTime()
            var pt: [UInt8] = []; put32(tag, &pt); pt += [0x03, ~UInt8(0x01), 0, 0, 0] + rng.bytes(4)
            pending = Pending(kind: .pathDiscovery, key: c.publicKey, tag: tag)
            let payload = datagram(to: ak, secret: s, plaintext: pt)
            sendFlood(.req, payload: payload, scope: effectiveScope())
            emit(ResponseFrame.sent(SentInfo(isFlood: true, tag: tag, estimatedTimeoutMs: floodTimeout(payload.count + 2))))
        case let .setFloodScopeKey(scope):
            switch scope {
            case .clear: sessionScope = nil
            case .unscoped: sessionScope = .some(nil)
            case let .key(raw) where raw.allSatisfy({ $0 == 0 }): sessionScope = nil // a null key resets to the default
            case let .key(raw): sessionScope = (try? RegionKey(Array(raw))).map { .some($0) } ?? nil
            }
            ok()
        case let .sendControlData(payload):
            sendZeroHop(.control, payload: Array(payload)) ? ok() : err(.tableFull)
        case let .getStats(type):
            switch type {
            case 0: emit(ResponseFrame.stats(.core(CoreStats(batteryMillivolts: readings.millivolts, uptimeSeconds: uptimeSeconds, errorFlags: radio.errEvents > 0 ? 1 : 0,
                                                              queueLength: UInt8(clamping: radio.queueLength)))))
            case 1: emit(ResponseFrame.stats(.radio(RadioStats(noiseFloor: -120, lastRSSI: Int8(clamping: radio.lastRSSI), lastSNRQuarterDb: snrQ(radio.lastSNR),
                                                                txAirSeconds: UInt32(radio.txAirMs / 1000), rxAirSeconds: UInt32(radio.rxAirMs / 1000)))))
            case 2: emit(ResponseFrame.stats(.packets(PacketStats(received: radio.nRecv, sent: radio.nSent, sentFlood: radio.sentFlood, sentDirect: radio.sentDirect,
                                                                  receivedFlood: radio.recvFlood, receivedDirect: radio.recvDirect, receiveErrors: UInt32(radio.errEvents)))))
            default: err(.illegalArgument)
            }
        case let .sendAnonRequest(k):
            anonRequest(key: k.publicKey, data: Array(k.data))
        case let .setAutoAddConfig(flags, maxHops):
            autoAddFlags = flags
            if let h = maxHops { autoAddMaxHops = min(h, 64) }
            ok()
        case .getAutoAddConfig:
            emit(ResponseFrame.autoAddConfig(AutoAddConfig(flags: autoAddFlags, maxHops: autoAddMaxHops)))
        case .getAllowedRepeatFrequencies:
            if let f = try? ResponseFrame.allowedRepeatFrequencies([433_000...433_000, 869_495...869_495, 918_000...918_000]) { emit(f) }
        case let .setPathHashMode(mode):
            guard mode <= 2 else { return err(.illegalArgument) }
            pathHashSize = Int(mode) + 1; ok()
        case let .sendChannelData(c):
            channelData(index: Int(c.channelIndex), pathLength: c.pathLength, path: Array(c.path), dataType: c.dataType, data: Array(c.payload))
        case let .setDefaultFloodScope(s):
            if let s {
                guard s.isValid else { return err(.illegalArgument) }
                defaultScopeName = s.name; defaultScopeKey = Array(s.key)
            } else { defaultScopeName = nil; defaultScopeKey = [] }
            ok()
        case .getDefaultFloodScope:
            if let f = try? ResponseFrame.defaultFloodScope(name: defaultScopeName, key: defaultScopeKey) { emit(f) }
        case let .sendRawPacket(priority, raw):
            guard let pkt = try? Packet(bytes: Array(raw)) else { return err(.illegalArgument) }
            send(pkt, priority: priority, delay: 0) ? ok() : err(.tableFull)
        case let .runCLICommand(text):
            guard speaksCLIProtocol else { return err(.unsupportedCommand) }
            let reply = cliCommand(String(decoding: text, as: UTF8.self), senderTimestamp: 0)
            if powered, let f = try? ResponseFrame.cliReply(utf8Cut(Array(reply.utf8), max: CompanionLimits.maxFrameSize - 1)) { emit(f) }
        case .unknown:
            err(.unsupportedCommand)
        }
    }

    func emitSelfInfo() {
        let rp = MeshCompanion.RadioParams(frequencyKHz: radio.params.freqKHz, bandwidthHz: radio.params.bwHz,
                                          spreadingFactor: radio.params.sf, codingRate: radio.params.cr)
        if let f = try? ResponseFrame.selfInfo(txPowerDbm: radio.params.txPowerDbm, maxTxPowerDbm: maxTxPower, publicKey: publicKey,
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

    func sendText(type txtType: UInt8, attempt: UInt8, timestamp ts0: UInt32, prefix: KeyPrefix, text: [UInt8]) {
        let cli = txtType == TextType.cliData.rawValue || (txtType == TextType.cliCommand.rawValue && speaksCLIProtocol)
        guard txtType == TextType.plain.rawValue || cli else { return err(.unsupportedCommand) }
        guard let i = contacts.firstIndex(where: { $0.publicKey.prefix(6) == prefix }) else { return err(.notFound) }
        let c = contacts[i]
        guard text.count <= (attempt > 3 ? 158 : 160), let ak = Optional(c.publicKey), let s = secret(for: ak) else { return err(.tableFull) }
        let ts = cli ? uniqueTime() : ts0
        var pt: [UInt8] = []
        put32(ts, &pt)
        pt.append(txtType << 2 | attempt & 3)
        pt += text
        if attempt > 3 { pt += [0, attempt] }
        let payload = datagram(to: ak, secret: s, plaintext: pt)
        let ack = txtType == TextType.plain.rawValue ? TextAck.code(timestamp: ts, txtType: TextType.plain.rawValue, attempt: attempt & 3, text: text, sender: publicKey).value : 0
        guard let (flood, est) = sendToContact(c, type: .txtMsg, payload: payload) else { return err(.tableFull) }
        if txtType == TextType.plain.rawValue { expectAck(ack, from: c.publicKey) }
        emit(ResponseFrame.sent(SentInfo(isFlood: flood, tag: ack, estimatedTimeoutMs: est)))
    }

    func sendChannelText(type txtType: UInt8, index idx: Int, timestamp ts: UInt32, message msg: [UInt8]) {
        guard txtType == TextType.plain.rawValue else { return err(.unsupportedCommand) }
        guard idx < channels.count else { return err(.notFound) }
        let text = utf8Cut(Array(name.utf8) + Array(": ".utf8) + msg, max: 160)
        var pt: [UInt8] = []
        put32(ts, &pt); pt.append(0); pt += text
        let ch = channels[idx].channel
        let payload = [ch.hash] + ch.sharedSecret.encrypt(pt)
        sendFlood(.grpTxt, payload: payload, scope: effectiveScope()) ? ok() : err(.notFound)
    }

    func channelData(index idx: Int, pathLength: PathLength, path: [UInt8], dataType: UInt16, data: [UInt8]) {
        guard idx < channels.count else { return err(.notFound) }
        guard pathLength.isUnknown || pathLength.isValid, dataType != 0 else { return err(.illegalArgument) }
        guard data.count <= CompanionLimits.maxChannelDataLength else { return err(.tableFull) }
        var pt: [UInt8] = []
        put16(dataType, &pt); pt.append(UInt8(data.count)); pt += data
        let ch = channels[idx].channel
        let payload = [ch.hash] + ch.sharedSecret.encrypt(pt)
        let sent = pathLength.isUnknown ? sendFlood(.grpData, payload: payload, scope: effectiveScope())
            : sendDirect(.grpData, payload: payload, path: path, hashSize: pathLength.hashSize)
        sent ? ok() : err(.tableFull)
    }

    func sendRequest(to c: Contact, plaintext: [UInt8], kind: RequestKind, tag: UInt32) {
        guard let ak = Optional(c.publicKey), let s = secret(for: ak) else { return err(.notFound) }
        pending = Pending(kind: kind, key: c.publicKey, tag: tag)
        guard let (flood, est) = sendToContact(c, type: .req, payload: datagram(to: ak, secret: s, plaintext: plaintext)) else { return err(.tableFull) }
        emit(ResponseFrame.sent(SentInfo(isFlood: flood, tag: tag, estimatedTimeoutMs: est)))
    }

    func login(key k: PublicKey, password pw: [UInt8]) {
        guard let c = anyContact(key: k), let ak = Optional(k), let s = secret(for: ak) else { return err(.notFound) }
        var pt: [UInt8] = []
        put32(uniqueTime(), &pt)
        if c.type.rawValue == 3 { put32(0, &pt) } // room: sync_since
        pt += pw
        let payload = [ak.hashByte] + publicKey.bytes + s.encrypt(pt)
        pending = Pending(kind: .login, key: k, tag: get32(k.bytes, 0))
        guard let (flood, est) = sendToContact(c, type: .anonReq, payload: payload) else { return err(.tableFull) }
        emit(ResponseFrame.sent(SentInfo(isFlood: flood, tag: get32(k.bytes, 0), estimatedTimeoutMs: est)))
    }

    func anonRequest(key k: PublicKey, data: [UInt8]) {
        guard let ak = Optional(k), let s = secret(for: ak) else { return err(.notFound) }
        guard data.count <= CompanionLimits.maxAnonRequestData else { return err(.tableFull) }
        var c = anyContact(key: k)
        if c == nil {
            // v13: a transient contact, zero-hop direct.
            var t = Contact(publicKey: k, type: ContactType(rawValue: 0), name: "")
            try? t.setOutPath(PathLength(rawValue: 0), [UInt8]())
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

    func trace(tag: UInt32, auth: UInt32, flags: UInt8, hashes: [UInt8]) {
        var payload: [UInt8] = []
        put32(tag, &payload); put32(auth, &payload); payload.append(flags); payload += hashes
        guard sendDirect(.trace, payload: payload, path: [], priority: 5) else { return err(.tableFull) }
        let est = directTimeout(2 + payload.count, hops: hashes.count >> Int(flags & 3))
        emit(ResponseFrame.sent(SentInfo(isFlood: false, tag: tag, estimatedTimeoutMs: est)))
    }
}
