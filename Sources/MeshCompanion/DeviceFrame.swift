// Encoders for radio → app frames: what a simulated radio writes. Layouts mirror the decoders.

/// Response frame encoders (radio → app, code < 0x80).
public enum ResponseFrame {
    static func simple(_ c: ResponseCode) -> EncodedFrame {
        var f = EncodedFrame()
        try? f.append(c)
        return f
    }

    /// `RESP_CODE_OK` `[00]`.
    public static func ok() -> EncodedFrame { simple(.ok) }

    /// `RESP_CODE_ERR` `[01, err]`.
    public static func error(_ code: RadioErrorCode) -> EncodedFrame { error(rawCode: code.rawValue) }

    /// `RESP_CODE_ERR` with any error byte.
    public static func error(rawCode: UInt8) -> EncodedFrame {
        var f = simple(.error)
        try? f.append(rawCode)
        return f
    }

    /// `RESP_CODE_CONTACTS_START` `[02, total u32]`.
    public static func contactsStart(count: UInt32) -> EncodedFrame {
        var f = simple(.contactsStart)
        try? f.append(u32: count)
        return f
    }

    /// `RESP_CODE_CONTACT`: 148-byte record.
    public static func contact(_ c: Contact) throws(CompanionEncodeError) -> EncodedFrame {
        var f = simple(.contact)
        try f.append(contact: c)
        return f
    }

    /// `RESP_CODE_END_OF_CONTACTS` `[04, most_recent_lastmod u32]`.
    public static func endOfContacts(lastModified: UInt32) -> EncodedFrame {
        var f = simple(.endOfContacts)
        try? f.append(u32: lastModified)
        return f
    }

    /// `RESP_CODE_SELF_INFO`.
    public static func selfInfo(advertType: ContactType = .chat, txPowerDbm: Int8, maxTxPowerDbm: Int8,
                                publicKey: PublicKey, latitude: Int32 = 0, longitude: Int32 = 0,
                                multiAcks: UInt8 = 0, advertLocationPolicy: UInt8 = 0,
                                telemetryModes: TelemetryModes = TelemetryModes(), manualAddContacts: UInt8 = 0,
                                radio: RadioParams, name: String) throws(CompanionEncodeError) -> EncodedFrame {
        var f = simple(.selfInfo)
        try f.append(advertType.rawValue)
        try f.append(i8: txPowerDbm)
        try f.append(i8: maxTxPowerDbm)
        try f.append(key: publicKey)
        try f.append(i32: latitude)
        try f.append(i32: longitude)
        try f.append(multiAcks)
        try f.append(advertLocationPolicy)
        try f.append(telemetryModes.packed)
        try f.append(manualAddContacts)
        try f.append(u32: radio.frequencyKHz)
        try f.append(u32: radio.bandwidthHz)
        try f.append(radio.spreadingFactor)
        try f.append(radio.codingRate)
        if name.utf8.count > CompanionLimits.maxNameLength {
            throw .tooLong(.name, length: name.utf8.count, limit: CompanionLimits.maxNameLength)
        }
        try f.append(text: name)
        return f
    }

    /// `RESP_CODE_SENT` `[06, is_flood, tag u32, est_timeout u32]`.
    public static func sent(_ s: SentInfo) -> EncodedFrame {
        var f = simple(.sent)
        try? f.append(s.isFlood ? 1 : 0)
        try? f.append(u32: s.tag)
        try? f.append(u32: s.estimatedTimeoutMs)
        return f
    }

    /// A direct message frame: V3 (0x10, with SNR) or legacy (0x07). `authorPrefix` is written
    /// for signed text only. Text is cut to fit 176 bytes, as the firmware does.
    public static func contactMessage(v3: Bool = true, snrQuarterDb: Int8 = 0, senderPrefix: KeyPrefix,
                                      pathLength: PathLength, textType: TextType = .plain, senderTimestamp: UInt32,
                                      authorPrefix: KeyPrefix? = nil, text: some Collection<UInt8>) throws(CompanionEncodeError) -> EncodedFrame {
        if senderPrefix.count < 6 { throw .tooShort(.prefix, length: senderPrefix.count, minimum: 6) }
        var f = simple(v3 ? .contactMessage : .contactMessageLegacy)
        if v3 {
            try f.append(i8: snrQuarterDb)
            try f.append(zeros: 2)
        }
        try f.append(prefix: senderPrefix.truncated(to: 6))
        try f.append(pathLength.rawValue)
        try f.append(textType.rawValue)
        try f.append(u32: senderTimestamp)
        if textType == .signedPlain {
            guard let a = authorPrefix, a.count >= 4 else { throw .invalid(.prefix) }
            try f.append(prefix: a.truncated(to: 4))
        }
        try f.appendTruncated(text)
        return f
    }

    /// A channel message frame: V3 (0x11) or legacy (0x08). `text` is `"<sender>: <msg>"`.
    public static func channelMessage(v3: Bool = true, snrQuarterDb: Int8 = 0, channelIndex: UInt8,
                                      pathLength: PathLength, timestamp: UInt32, text: some Collection<UInt8>) -> EncodedFrame {
        var f = simple(v3 ? .channelMessage : .channelMessageLegacy)
        if v3 {
            try? f.append(i8: snrQuarterDb)
            try? f.append(zeros: 2)
        }
        try? f.append(channelIndex)
        try? f.append(pathLength.rawValue)
        try? f.append(TextType.plain.rawValue)
        try? f.append(u32: timestamp)
        try? f.appendTruncated(text)
        return f
    }

    /// `RESP_CODE_CURR_TIME`.
    public static func currentTime(_ epoch: UInt32) -> EncodedFrame {
        var f = simple(.currentTime)
        try? f.append(u32: epoch)
        return f
    }

    /// `RESP_CODE_NO_MORE_MESSAGES`.
    public static func noMoreMessages() -> EncodedFrame { simple(.noMoreMessages) }

    /// `RESP_CODE_EXPORT_CONTACT` with a raw advert packet.
    public static func exportContact(advertPacket: some Collection<UInt8>) throws(CompanionEncodeError) -> EncodedFrame {
        var f = simple(.exportContact)
        try f.append(contentsOf: advertPacket)
        return f
    }

    /// `RESP_CODE_BATT_AND_STORAGE` (11 bytes; storage omitted when nil, as pre-v6 firmware).
    public static func batteryAndStorage(_ b: BatteryAndStorage) -> EncodedFrame {
        var f = simple(.batteryAndStorage)
        try? f.append(u16: b.millivolts)
        if let u = b.usedKB, let t = b.totalKB {
            try? f.append(u32: u)
            try? f.append(u32: t)
        }
        return f
    }

    /// `RESP_CODE_DEVICE_INFO`, the 82-byte v13 layout.
    public static func deviceInfo(firmwareVersionCode: UInt8 = CompanionLimits.protocolVersion, maxContacts: Int,
                                  maxChannels: UInt8, blePin: UInt32 = 0, buildDate: String, model: String,
                                  version: String, clientRepeat: Bool = false, pathHashMode: UInt8 = 0) throws(CompanionEncodeError) -> EncodedFrame {
        if buildDate.utf8.count > 11 { throw .tooLong(.text, length: buildDate.utf8.count, limit: 11) }
        if model.utf8.count > 39 { throw .tooLong(.text, length: model.utf8.count, limit: 39) }
        if version.utf8.count > 19 { throw .tooLong(.text, length: version.utf8.count, limit: 19) }
        var f = simple(.deviceInfo)
        try f.append(firmwareVersionCode)
        try f.append(UInt8(clamping: maxContacts / 2))
        try f.append(maxChannels)
        try f.append(u32: blePin)
        try f.append(text: buildDate, width: 12)
        try f.append(text: model, width: 40)
        try f.append(text: version, width: 20)
        try f.append(clientRepeat ? 1 : 0)
        try f.append(pathHashMode)
        return f
    }

    /// `RESP_CODE_PRIVATE_KEY` `[0E, prv64]`.
    public static func privateKey(_ key: some Collection<UInt8>) throws(CompanionEncodeError) -> EncodedFrame {
        if key.count != 64 { throw .wrongLength(.privateKey, length: key.count, expected: 64) }
        var f = simple(.privateKey)
        try f.append(contentsOf: key)
        return f
    }

    /// `RESP_CODE_DISABLED`.
    public static func disabled() -> EncodedFrame { simple(.disabled) }

    /// `RESP_CODE_CHANNEL_INFO` (50 bytes).
    public static func channelInfo(index: UInt8, name: String, secret: some Collection<UInt8>) throws(CompanionEncodeError) -> EncodedFrame {
        if name.utf8.count > 31 { throw .tooLong(.channelName, length: name.utf8.count, limit: 31) }
        if secret.count != 16 { throw .wrongLength(.channelSecret, length: secret.count, expected: 16) }
        var f = simple(.channelInfo)
        try f.append(index)
        try f.append(text: name, width: 32)
        try f.append(contentsOf: secret)
        return f
    }

    /// `RESP_CODE_SIGN_START` `[13, 0, max_len u32]`.
    public static func signStart(maxLength: UInt32 = UInt32(CompanionLimits.maxSignDataLength)) -> EncodedFrame {
        var f = simple(.signStart)
        try? f.append(0)
        try? f.append(u32: maxLength)
        return f
    }

    /// `RESP_CODE_SIGNATURE` `[14, sig64]`.
    public static func signature(_ sig: some Collection<UInt8>) throws(CompanionEncodeError) -> EncodedFrame {
        if sig.count != 64 { throw .wrongLength(.data, length: sig.count, expected: 64) }
        var f = simple(.signature)
        try f.append(contentsOf: sig)
        return f
    }

    /// `RESP_CODE_CUSTOM_VARS` `[15, "name:value,..."]`.
    public static func customVars(_ text: String) throws(CompanionEncodeError) -> EncodedFrame {
        var f = simple(.customVars)
        try f.append(text: text)
        return f
    }

    /// `RESP_CODE_ADVERT_PATH` `[16, recv_ts u32, path_len, path]`.
    public static func advertPath(receivedTimestamp: UInt32, pathLength: PathLength, path: some Collection<UInt8>) throws(CompanionEncodeError) -> EncodedFrame {
        if !pathLength.isValid { throw .invalid(.pathLength) }
        if path.count != pathLength.byteCount { throw .wrongLength(.path, length: path.count, expected: pathLength.byteCount) }
        var f = simple(.advertPath)
        try f.append(u32: receivedTimestamp)
        try f.append(pathLength.rawValue)
        try f.append(contentsOf: path)
        return f
    }

    /// `RESP_CODE_TUNING_PARAMS`.
    public static func tuningParams(_ p: TuningParams) -> EncodedFrame {
        var f = simple(.tuningParams)
        try? f.append(u32: p.rxDelayBaseMilli)
        try? f.append(u32: p.airtimeFactorMilli)
        return f
    }

    /// `RESP_CODE_STATS` (type 0, 1 or 2; packets written in the 30-byte layout unless
    /// `receiveErrors` is nil, which gives the older 26-byte one).
    public static func stats(_ s: DeviceStats) -> EncodedFrame {
        var f = simple(.stats)
        switch s {
        case .core(let c):
            try? f.append(StatsType.core.rawValue)
            try? f.append(u16: c.batteryMillivolts)
            try? f.append(u32: c.uptimeSeconds)
            try? f.append(u16: c.errorFlags)
            try? f.append(c.queueLength)
        case .radio(let r):
            try? f.append(StatsType.radio.rawValue)
            try? f.append(i16: r.noiseFloor)
            try? f.append(i8: r.lastRSSI)
            try? f.append(i8: r.lastSNRQuarterDb)
            try? f.append(u32: r.txAirSeconds)
            try? f.append(u32: r.rxAirSeconds)
        case .packets(let p):
            try? f.append(StatsType.packets.rawValue)
            for v in [p.received, p.sent, p.sentFlood, p.sentDirect, p.receivedFlood, p.receivedDirect] { try? f.append(u32: v) }
            if let e = p.receiveErrors { try? f.append(u32: e) }
        case .unknown(let t):
            try? f.append(t)
        }
        return f
    }

    /// `RESP_CODE_AUTOADD_CONFIG`.
    public static func autoAddConfig(_ c: AutoAddConfig) -> EncodedFrame {
        var f = simple(.autoAddConfig)
        try? f.append(c.flags)
        try? f.append(c.maxHops)
        return f
    }

    /// `RESP_CODE_ALLOWED_REPEAT_FREQ`: up to 21 (low, high) kHz pairs.
    public static func allowedRepeatFrequencies(_ ranges: [ClosedRange<UInt32>]) throws(CompanionEncodeError) -> EncodedFrame {
        var f = simple(.allowedRepeatFrequencies)
        for r in ranges {
            try f.append(u32: r.lowerBound)
            try f.append(u32: r.upperBound)
        }
        return f
    }

    /// `RESP_CODE_CHANNEL_DATA_RECV` (0x1B); data ≤ 163 bytes.
    public static func channelData(snrQuarterDb: Int8 = 0, channelIndex: UInt8, pathLength: PathLength,
                                   dataType: UInt16, data: some Collection<UInt8>) throws(CompanionEncodeError) -> EncodedFrame {
        if data.count > CompanionLimits.maxChannelDataLength {
            throw .tooLong(.data, length: data.count, limit: CompanionLimits.maxChannelDataLength)
        }
        var f = simple(.channelData)
        try f.append(i8: snrQuarterDb)
        try f.append(zeros: 2)
        try f.append(channelIndex)
        try f.append(pathLength.rawValue)
        try f.append(u16: dataType)
        try f.append(UInt8(data.count))
        try f.append(contentsOf: data)
        return f
    }

    /// `RESP_CODE_DEFAULT_FLOOD_SCOPE`: `[1C]` when unset, else `[1C, name[31], key16]`.
    public static func defaultFloodScope(name: String?, key: some Collection<UInt8> = [UInt8]()) throws(CompanionEncodeError) -> EncodedFrame {
        var f = simple(.defaultFloodScope)
        guard let name, !name.isEmpty else { return f }
        if name.utf8.count > 30 { throw .tooLong(.floodScopeName, length: name.utf8.count, limit: 30) }
        if key.count != 16 { throw .wrongLength(.key, length: key.count, expected: 16) }
        try f.append(text: name, width: 31)
        try f.append(contentsOf: key)
        return f
    }

    /// `RESP_CODE_CLI_REPLY` (0x1D, protocol 14): the reply text of `RUN_CLI_COMMAND`.
    public static func cliReply(_ text: some Collection<UInt8>) throws(CompanionEncodeError) -> EncodedFrame {
        if text.count > CompanionLimits.maxFrameSize - 1 { throw .tooLong(.text, length: text.count, limit: CompanionLimits.maxFrameSize - 1) }
        var f = simple(.cliReply)
        try f.append(contentsOf: text)
        return f
    }
}

/// Push frame encoders (radio → app, code ≥ 0x80).
public enum PushFrame {
    static func simple(_ c: PushCode) -> EncodedFrame {
        var f = EncodedFrame()
        try? f.append(c)
        return f
    }
    static func withKey(_ c: PushCode, _ key: PublicKey) -> EncodedFrame {
        var f = simple(c)
        try? f.append(key: key)
        return f
    }

    /// `PUSH_CODE_ADVERT` `[80, pk32]`.
    public static func advert(_ key: PublicKey) -> EncodedFrame { withKey(.advert, key) }
    /// `PUSH_CODE_PATH_UPDATED` `[81, pk32]`.
    public static func pathUpdated(_ key: PublicKey) -> EncodedFrame { withKey(.pathUpdated, key) }

    /// `PUSH_CODE_SEND_CONFIRMED` `[82, ack u32, round_trip_ms u32]`.
    public static func sendConfirmed(_ s: SendConfirmed) -> EncodedFrame {
        var f = simple(.sendConfirmed)
        try? f.append(u32: s.ack)
        try? f.append(u32: s.roundTripMs)
        return f
    }

    /// `PUSH_CODE_MSG_WAITING` `[83]`.
    public static func messageWaiting() -> EncodedFrame { simple(.messageWaiting) }

    /// `PUSH_CODE_RAW_DATA` `[84, snr, rssi, 0xFF, payload]`.
    public static func rawData(snrQuarterDb: Int8, rssi: Int8, payload: some Collection<UInt8>) throws(CompanionEncodeError) -> EncodedFrame {
        var f = simple(.rawData)
        try f.append(i8: snrQuarterDb)
        try f.append(i8: rssi)
        try f.append(0xFF)
        try f.append(contentsOf: payload)
        return f
    }

    /// `PUSH_CODE_LOGIN_SUCCESS`: new 14-byte layout when `serverTimestamp` is given, else legacy 8 bytes.
    public static func loginSuccess(_ l: LoginSuccess) throws(CompanionEncodeError) -> EncodedFrame {
        if l.prefix.count < 6 { throw .tooShort(.prefix, length: l.prefix.count, minimum: 6) }
        var f = simple(.loginSuccess)
        try f.append(l.permissions)
        try f.append(prefix: l.prefix.truncated(to: 6))
        if let ts = l.serverTimestamp {
            try f.append(u32: ts)
            try f.append(l.aclPermissions ?? 0)
            try f.append(l.firmwareLevel ?? 0)
        }
        return f
    }

    /// `PUSH_CODE_LOGIN_FAIL` `[86, 0, pfx6]`.
    public static func loginFail(_ prefix: KeyPrefix) throws(CompanionEncodeError) -> EncodedFrame {
        if prefix.count < 6 { throw .tooShort(.prefix, length: prefix.count, minimum: 6) }
        var f = simple(.loginFail)
        try f.append(0)
        try f.append(prefix: prefix.truncated(to: 6))
        return f
    }

    /// `PUSH_CODE_STATUS_RESPONSE` `[87, 0, pfx6, stats]` from raw stats bytes.
    public static func statusResponse(_ prefix: KeyPrefix, statsBytes: some Collection<UInt8>) throws(CompanionEncodeError) -> EncodedFrame {
        if prefix.count < 6 { throw .tooShort(.prefix, length: prefix.count, minimum: 6) }
        var f = simple(.statusResponse)
        try f.append(0)
        try f.append(prefix: prefix.truncated(to: 6))
        try f.append(contentsOf: statsBytes)
        return f
    }

    /// `PUSH_CODE_STATUS_RESPONSE` with repeater (56-byte) or room (52-byte, `postedCount` set) stats.
    public static func statusResponse(_ prefix: KeyPrefix, stats: ServerStats) throws(CompanionEncodeError) -> EncodedFrame {
        try statusResponse(prefix, statsBytes: stats.encoded)
    }

    /// `PUSH_CODE_LOG_RX_DATA` `[88, snr, rssi, raw]`; raw ≤ 173 bytes.
    public static func logRxData(snrQuarterDb: Int8, rssi: Int8, packet: some Collection<UInt8>) throws(CompanionEncodeError) -> EncodedFrame {
        var f = simple(.logRxData)
        try f.append(i8: snrQuarterDb)
        try f.append(i8: rssi)
        try f.append(contentsOf: packet)
        return f
    }

    /// `PUSH_CODE_TRACE_DATA`. `pathHashes` bytes with `1 << (flags & 3)` bytes per hop; one SNR per hop.
    public static func traceData(tag: UInt32, authCode: UInt32, flags: UInt8, pathHashes: some Collection<UInt8>,
                                 pathSNRs: some Collection<UInt8>, finalSNRQuarterDb: Int8) throws(CompanionEncodeError) -> EncodedFrame {
        let shift = Int(flags & 3)
        if pathHashes.count > 255 { throw .tooLong(.traceHashes, length: pathHashes.count, limit: 255) }
        if pathSNRs.count != pathHashes.count >> shift {
            throw .wrongLength(.data, length: pathSNRs.count, expected: pathHashes.count >> shift)
        }
        var f = simple(.traceData)
        try f.append(0)
        try f.append(UInt8(pathHashes.count))
        try f.append(flags)
        try f.append(u32: tag)
        try f.append(u32: authCode)
        try f.append(contentsOf: pathHashes)
        try f.append(contentsOf: pathSNRs)
        try f.append(i8: finalSNRQuarterDb)
        return f
    }

    /// `PUSH_CODE_NEW_ADVERT`: 148-byte record of a contact not in the table.
    public static func newAdvert(_ c: Contact) throws(CompanionEncodeError) -> EncodedFrame {
        var f = simple(.newAdvert)
        try f.append(contact: c)
        return f
    }

    /// `PUSH_CODE_TELEMETRY_RESPONSE` `[8B, 0, pfx6, lpp]`.
    public static func telemetryResponse(_ prefix: KeyPrefix, lpp: some Collection<UInt8>) throws(CompanionEncodeError) -> EncodedFrame {
        if prefix.count < 6 { throw .tooShort(.prefix, length: prefix.count, minimum: 6) }
        var f = simple(.telemetryResponse)
        try f.append(0)
        try f.append(prefix: prefix.truncated(to: 6))
        try f.append(contentsOf: lpp)
        return f
    }

    /// `PUSH_CODE_BINARY_RESPONSE` `[8C, 0, tag u32, data]`.
    public static func binaryResponse(tag: UInt32, data: some Collection<UInt8>) throws(CompanionEncodeError) -> EncodedFrame {
        var f = simple(.binaryResponse)
        try f.append(0)
        try f.append(u32: tag)
        try f.append(contentsOf: data)
        return f
    }

    /// `PUSH_CODE_PATH_DISCOVERY_RESPONSE` `[8D, 0, pfx6, out_len, out, in_len, in]`.
    public static func pathDiscoveryResponse(_ prefix: KeyPrefix, outPathLength: PathLength, outPath: some Collection<UInt8>,
                                             inPathLength: PathLength, inPath: some Collection<UInt8>) throws(CompanionEncodeError) -> EncodedFrame {
        if prefix.count < 6 { throw .tooShort(.prefix, length: prefix.count, minimum: 6) }
        for (l, p) in [(outPathLength, outPath.count), (inPathLength, inPath.count)] {
            if !l.isValid { throw .invalid(.pathLength) }
            if p != l.byteCount { throw .wrongLength(.path, length: p, expected: l.byteCount) }
        }
        var f = simple(.pathDiscoveryResponse)
        try f.append(0)
        try f.append(prefix: prefix.truncated(to: 6))
        try f.append(outPathLength.rawValue)
        try f.append(contentsOf: outPath)
        try f.append(inPathLength.rawValue)
        try f.append(contentsOf: inPath)
        return f
    }

    /// `PUSH_CODE_CONTROL_DATA` `[8E, snr, rssi, path_len, payload]`.
    public static func controlData(snrQuarterDb: Int8, rssi: Int8, pathLength: PathLength, payload: some Collection<UInt8>) throws(CompanionEncodeError) -> EncodedFrame {
        var f = simple(.controlData)
        try f.append(i8: snrQuarterDb)
        try f.append(i8: rssi)
        try f.append(pathLength.rawValue)
        try f.append(contentsOf: payload)
        return f
    }

    /// `PUSH_CODE_CONTACT_DELETED` `[8F, pk32]`.
    public static func contactDeleted(_ key: PublicKey) -> EncodedFrame { withKey(.contactDeleted, key) }
    /// `PUSH_CODE_CONTACTS_FULL` `[90]`.
    public static func contactsFull() -> EncodedFrame { simple(.contactsFull) }
}

extension ServerStats {
    /// The packed LE block: 56 bytes (repeater) or 52 (room, when `postedCount` is set).
    public var encoded: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(56)
        func u16(_ v: UInt16) { out.putU16(v) }
        func u32(_ v: UInt32) { out.putU32(v) }
        u16(batteryMillivolts); u16(txQueueLength); u16(UInt16(bitPattern: noiseFloor)); u16(UInt16(bitPattern: lastRSSI))
        u32(packetsReceived); u32(packetsSent); u32(airTimeSeconds); u32(uptimeSeconds)
        u32(sentFlood); u32(sentDirect); u32(receivedFlood); u32(receivedDirect)
        u16(errorEvents); u16(UInt16(bitPattern: lastSNRQuarterDb)); u16(directDuplicates); u16(floodDuplicates)
        if let p = postedCount {
            u16(p); u16(postPushCount ?? 0)
        } else {
            u32(rxAirTimeSeconds ?? 0); u32(receiveErrors ?? 0)
        }
        return out
    }
}

extension EncodedFrame {
    /// Appends as much of `bytes` as fits (message text is cut at 176, as the firmware does).
    mutating func appendTruncated(_ bytes: some Collection<UInt8>) throws(CompanionEncodeError) {
        for b in bytes {
            if count >= EncodedFrame.capacity { break }
            try append(b)
        }
    }
}
