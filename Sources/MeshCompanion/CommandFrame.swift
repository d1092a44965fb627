// Encoders for every app → radio command. Each checks the firmware's limits first and
// throws `CompanionEncodeError` instead of producing a frame the radio would refuse or cut.

/// Override of the flood scope for this session (`CMD_SET_FLOOD_SCOPE_KEY`).
public enum FloodScopeOverride: Sendable, Equatable {
    /// Back to the default scope (`36 00`).
    case clear
    /// Scope floods with this 16-byte key (`36 00 key16`).
    case key([UInt8])
    /// Force un-scoped floods (`36 01`, v12+).
    case unscoped
}

/// Command frame encoders (app → radio). Every function returns a fixed-capacity frame.
public enum CommandFrame {
    static func checkMax(_ f: CompanionField, _ n: Int, _ limit: Int) throws(CompanionEncodeError) {
        if n > limit { throw .tooLong(f, length: n, limit: limit) }
    }
    static func checkRange<T: BinaryInteger>(_ f: CompanionField, _ v: T, _ r: ClosedRange<T>) throws(CompanionEncodeError) {
        if !r.contains(v) { throw .outOfRange(f, value: Int64(v), allowed: Int64(r.lowerBound)...Int64(r.upperBound)) }
    }
    static func simple(_ c: CommandCode) -> EncodedFrame {
        var f = EncodedFrame()
        try? f.append(c)
        return f
    }
    static func withKey(_ c: CommandCode, _ key: PublicKey) -> EncodedFrame {
        var f = simple(c)
        try? f.append(key: key)
        return f
    }

    /// `CMD_APP_START` (0x01): `01 res[7] app_name`. meshcore_py sends reserved byte 1 = 3.
    public static func appStart(appName: String = "pocketmesh") throws(CompanionEncodeError) -> EncodedFrame {
        try checkMax(.appName, appName.utf8.count, CompanionLimits.maxFrameSize - 8)
        var f = simple(.appStart)
        try f.append(3)
        try f.append(contentsOf: [UInt8](repeating: 0x20, count: 6))
        try f.append(text: appName)
        return f
    }

    /// `CMD_SEND_TXT_MSG` (0x02). `type` is `.plain`, `.cliData` or (protocol 14) `.cliCommand`;
    /// text ≤ 160 bytes (158 if attempt > 3).
    public static func sendTextMessage(to recipient: KeyPrefix, text: String, timestamp: UInt32,
                                       attempt: UInt8 = 0, type: TextType = .plain) throws(CompanionEncodeError) -> EncodedFrame {
        if type != .plain && type != .cliData && type != .cliCommand { throw .invalid(.textType) }
        if recipient.count < 6 { throw .tooShort(.prefix, length: recipient.count, minimum: 6) }
        let limit = attempt > 3 && type == .plain ? CompanionLimits.maxTextLengthHighAttempt : CompanionLimits.maxTextLength
        try checkMax(.text, text.utf8.count, limit)
        var f = simple(.sendTextMessage)
        try f.append(type.rawValue)
        try f.append(attempt)
        try f.append(u32: timestamp)
        try f.append(prefix: recipient.truncated(to: 6))
        try f.append(text: text)
        return f
    }

    /// `CMD_SEND_TXT_MSG` to a full key.
    public static func sendTextMessage(to recipient: PublicKey, text: String, timestamp: UInt32,
                                       attempt: UInt8 = 0, type: TextType = .plain) throws(CompanionEncodeError) -> EncodedFrame {
        try sendTextMessage(to: recipient.prefix(6), text: text, timestamp: timestamp, attempt: attempt, type: type)
    }

    /// `CMD_SEND_CHANNEL_TXT_MSG` (0x03); the radio answers OK, not SENT. Text ≤ 160 bytes
    /// (the radio also cuts `"name: text"` to 160 on air without telling).
    public static func sendChannelTextMessage(channel: UInt8, text: String, timestamp: UInt32) throws(CompanionEncodeError) -> EncodedFrame {
        try checkMax(.text, text.utf8.count, CompanionLimits.maxTextLength)
        var f = simple(.sendChannelTextMessage)
        try f.append(TextType.plain.rawValue)
        try f.append(channel)
        try f.append(u32: timestamp)
        try f.append(text: text)
        return f
    }

    /// `CMD_GET_CONTACTS` (0x04), optionally only contacts with lastmod > `since`.
    public static func getContacts(since: UInt32? = nil) -> EncodedFrame {
        var f = simple(.getContacts)
        if let s = since { try? f.append(u32: s) }
        return f
    }

    /// `CMD_GET_DEVICE_TIME` (0x05).
    public static func getDeviceTime() -> EncodedFrame { simple(.getDeviceTime) }

    /// `CMD_SET_DEVICE_TIME` (0x06); the radio refuses to go backwards (ERR 6).
    public static func setDeviceTime(_ epoch: UInt32) -> EncodedFrame {
        var f = simple(.setDeviceTime)
        try? f.append(u32: epoch)
        return f
    }

    /// `CMD_SEND_SELF_ADVERT` (0x07): flood or zero-hop.
    public static func sendSelfAdvert(flood: Bool) -> EncodedFrame {
        var f = simple(.sendSelfAdvert)
        try? f.append(flood ? 1 : 0)
        return f
    }

    /// `CMD_SET_ADVERT_NAME` (0x08): 1...31 bytes.
    public static func setAdvertName(_ name: String) throws(CompanionEncodeError) -> EncodedFrame {
        let n = name.utf8.count
        try checkMax(.name, n, CompanionLimits.maxNameLength)
        if n == 0 { throw .tooShort(.name, length: 0, minimum: 1) }
        if name.utf8.contains(0) { throw .invalid(.name) }
        var f = simple(.setAdvertName)
        try f.append(text: name)
        return f
    }

    /// `CMD_ADD_UPDATE_CONTACT` (0x09): the full 148-byte record (lastmod included unless nil).
    public static func addUpdateContact(_ contact: Contact, includeLastModified: Bool = true) throws(CompanionEncodeError) -> EncodedFrame {
        var f = simple(.addUpdateContact)
        try f.append(contact: contact, includeTail: includeLastModified)
        return f
    }

    /// `CMD_ADD_UPDATE_CONTACT` from a received record (e.g. a NEW_ADVERT push): same bytes, code 0x09.
    public static func addUpdateContact(_ record: ContactRecord) throws(CompanionEncodeError) -> EncodedFrame {
        var f = try EncodedFrame(copying: record.bytes)
        f.storage[EncodedFrame.headerSize] = CommandCode.addUpdateContact.rawValue
        return f
    }

    /// `CMD_SYNC_NEXT_MESSAGE` (0x0A).
    public static func syncNextMessage() -> EncodedFrame { simple(.syncNextMessage) }

    /// `CMD_SET_RADIO_PARAMS` (0x0B). `clientRepeat` (v9+) is only written when not nil.
    public static func setRadioParams(_ p: RadioParams, clientRepeat: Bool? = nil) throws(CompanionEncodeError) -> EncodedFrame {
        try checkRange(.frequency, p.frequencyKHz, CompanionLimits.frequencyRangeKHz)
        try checkRange(.bandwidth, p.bandwidthHz, CompanionLimits.bandwidthRangeHz)
        try checkRange(.spreadingFactor, p.spreadingFactor, CompanionLimits.spreadingFactorRange)
        try checkRange(.codingRate, p.codingRate, CompanionLimits.codingRateRange)
        var f = simple(.setRadioParams)
        try f.append(u32: p.frequencyKHz)
        try f.append(u32: p.bandwidthHz)
        try f.append(p.spreadingFactor)
        try f.append(p.codingRate)
        if let r = clientRepeat { try f.append(r ? 1 : 0) }
        return f
    }

    /// `CMD_SET_RADIO_TX_POWER` (0x0C): −9 ... `maxDbm` (the radio's `max_tx_power` from SELF_INFO).
    public static func setRadioTxPower(_ dbm: Int8, maxDbm: Int8 = 30) throws(CompanionEncodeError) -> EncodedFrame {
        try checkRange(.txPower, dbm, CompanionLimits.minTxPowerDbm...max(CompanionLimits.minTxPowerDbm, maxDbm))
        var f = simple(.setRadioTxPower)
        try f.append(i8: dbm)
        return f
    }

    /// `CMD_RESET_PATH` (0x0D): the contact goes back to flood.
    public static func resetPath(_ key: PublicKey) -> EncodedFrame { withKey(.resetPath, key) }

    /// `CMD_SET_ADVERT_LATLON` (0x0E), micro-degrees. Altitude is written only when given (ignored by v1.17.1).
    public static func setAdvertLatLon(latitude: Int32, longitude: Int32, altitude: Int32? = nil) throws(CompanionEncodeError) -> EncodedFrame {
        try checkRange(.latitude, latitude, CompanionLimits.latitudeRange)
        try checkRange(.longitude, longitude, CompanionLimits.longitudeRange)
        var f = simple(.setAdvertLatLon)
        try f.append(i32: latitude)
        try f.append(i32: longitude)
        if let a = altitude { try f.append(i32: a) }
        return f
    }

    /// `CMD_REMOVE_CONTACT` (0x0F).
    public static func removeContact(_ key: PublicKey) -> EncodedFrame { withKey(.removeContact, key) }

    /// `CMD_SHARE_CONTACT` (0x10): re-send the stored advert zero-hop.
    public static func shareContact(_ key: PublicKey) -> EncodedFrame { withKey(.shareContact, key) }

    /// `CMD_EXPORT_CONTACT` (0x11): a contact's advert, or this radio's (nil).
    public static func exportContact(_ key: PublicKey? = nil) -> EncodedFrame {
        key.map { withKey(.exportContact, $0) } ?? simple(.exportContact)
    }

    /// `CMD_IMPORT_CONTACT` (0x12): a raw advert packet (98...175 bytes).
    public static func importContact(advertPacket: some Collection<UInt8>) throws(CompanionEncodeError) -> EncodedFrame {
        let n = advertPacket.count
        if n < 98 { throw .tooShort(.advertPacket, length: n, minimum: 98) }
        try checkMax(.advertPacket, n, CompanionLimits.maxFrameSize - 1)
        var f = simple(.importContact)
        try f.append(contentsOf: advertPacket)
        return f
    }

    /// `CMD_REBOOT` (0x13): `13 "reboot"`; no reply.
    public static func reboot() -> EncodedFrame {
        var f = simple(.reboot)
        try? f.append(text: "reboot")
        return f
    }

    /// `CMD_GET_BATT_AND_STORAGE` (0x14).
    public static func getBatteryAndStorage() -> EncodedFrame { simple(.getBatteryAndStorage) }

    /// `CMD_SET_TUNING_PARAMS` (0x15), values ×1000.
    public static func setTuningParams(_ p: TuningParams) -> EncodedFrame {
        var f = simple(.setTuningParams)
        try? f.append(u32: p.rxDelayBaseMilli)
        try? f.append(u32: p.airtimeFactorMilli)
        return f
    }

    /// `CMD_DEVICE_QUERY` (0x16): announce the app's protocol version (≥ 3 for V3 message frames).
    public static func deviceQuery(appTargetVersion: UInt8 = 3) -> EncodedFrame {
        var f = simple(.deviceQuery)
        try? f.append(appTargetVersion)
        return f
    }

    /// `CMD_EXPORT_PRIVATE_KEY` (0x17).
    public static func exportPrivateKey() -> EncodedFrame { simple(.exportPrivateKey) }

    /// `CMD_IMPORT_PRIVATE_KEY` (0x18): the 64-byte expanded key.
    public static func importPrivateKey(_ key: some Collection<UInt8>) throws(CompanionEncodeError) -> EncodedFrame {
        if key.count != 64 { throw .wrongLength(.privateKey, length: key.count, expected: 64) }
        var f = simple(.importPrivateKey)
        try f.append(contentsOf: key)
        return f
    }

    /// `CMD_SEND_RAW_DATA` (0x19): sent DIRECT along `path` (raw byte count, v1.17.1 main);
    /// payload ≥ 4 bytes. Protocol 14 radios read the length byte as an encoded path length: use
    /// `sendRawData(pathLength:path:payload:)` for them.
    public static func sendRawData(path: some Collection<UInt8>, payload: some Collection<UInt8>) throws(CompanionEncodeError) -> EncodedFrame {
        try checkMax(.path, path.count, CompanionLimits.maxPathSize)
        if payload.count < 4 { throw .tooShort(.payload, length: payload.count, minimum: 4) }
        try checkMax(.payload, payload.count, CompanionLimits.maxFrameSize - 2 - path.count)
        var f = simple(.sendRawData)
        try f.append(UInt8(path.count))
        try f.append(contentsOf: path)
        try f.append(contentsOf: payload)
        return f
    }

    /// `CMD_SEND_RAW_DATA` (0x19) as the firmware's dev line (protocol 14) reads it: the path
    /// length byte is encoded like every other path length (hash size in the top two bits, hop
    /// count below), so multi-byte hop hashes go through; payload ≥ 4 bytes.
    public static func sendRawData(pathLength: PathLength, path: some Collection<UInt8>,
                                   payload: some Collection<UInt8>) throws(CompanionEncodeError) -> EncodedFrame {
        if pathLength.isUnknown || !pathLength.isValid { throw .invalid(.pathLength) }
        if path.count != pathLength.byteCount { throw .wrongLength(.path, length: path.count, expected: pathLength.byteCount) }
        if payload.count < 4 { throw .tooShort(.payload, length: payload.count, minimum: 4) }
        try checkMax(.payload, payload.count, CompanionLimits.maxFrameSize - 2 - path.count)
        var f = simple(.sendRawData)
        try f.append(pathLength.rawValue)
        try f.append(contentsOf: path)
        try f.append(contentsOf: payload)
        return f
    }

    /// `CMD_SEND_LOGIN` (0x1A): password ≤ 15 bytes.
    public static func sendLogin(_ key: PublicKey, password: String) throws(CompanionEncodeError) -> EncodedFrame {
        try checkMax(.password, password.utf8.count, CompanionLimits.maxPasswordLength)
        var f = withKey(.sendLogin, key)
        try f.append(text: password)
        return f
    }

    /// `CMD_SEND_STATUS_REQ` (0x1B).
    public static func sendStatusRequest(_ key: PublicKey) -> EncodedFrame { withKey(.sendStatusRequest, key) }
    /// `CMD_HAS_CONNECTION` (0x1C).
    public static func hasConnection(_ key: PublicKey) -> EncodedFrame { withKey(.hasConnection, key) }
    /// `CMD_LOGOUT` (0x1D).
    public static func logout(_ key: PublicKey) -> EncodedFrame { withKey(.logout, key) }
    /// `CMD_GET_CONTACT_BY_KEY` (0x1E).
    public static func getContactByKey(_ key: PublicKey) -> EncodedFrame { withKey(.getContactByKey, key) }

    /// `CMD_GET_CHANNEL` (0x1F).
    public static func getChannel(_ index: UInt8) -> EncodedFrame {
        var f = simple(.getChannel)
        try? f.append(index)
        return f
    }

    /// `CMD_SET_CHANNEL` (0x20): name ≤ 31 bytes, secret exactly 16 bytes. Empty name and zero
    /// secret delete the channel.
    public static func setChannel(_ index: UInt8, name: String, secret: some Collection<UInt8>) throws(CompanionEncodeError) -> EncodedFrame {
        try checkMax(.channelName, name.utf8.count, CompanionLimits.maxChannelNameLength)
        if secret.count != 16 { throw .wrongLength(.channelSecret, length: secret.count, expected: 16) }
        var f = simple(.setChannel)
        try f.append(index)
        try f.append(text: name, width: 32)
        try f.append(contentsOf: secret)
        return f
    }

    /// `CMD_SIGN_START` (0x21).
    public static func signStart() -> EncodedFrame { simple(.signStart) }

    /// `CMD_SIGN_DATA` (0x22): one chunk, 1...175 bytes.
    public static func signData(_ chunk: some Collection<UInt8>) throws(CompanionEncodeError) -> EncodedFrame {
        if chunk.isEmpty { throw .tooShort(.data, length: 0, minimum: 1) }
        try checkMax(.data, chunk.count, CompanionLimits.maxFrameSize - 1)
        var f = simple(.signData)
        try f.append(contentsOf: chunk)
        return f
    }

    /// `CMD_SIGN_FINISH` (0x23).
    public static func signFinish() -> EncodedFrame { simple(.signFinish) }

    /// `CMD_SEND_TRACE_PATH` (0x24): hop hashes of `1 << (flags & 3)` bytes each, at least one hop.
    public static func sendTracePath(tag: UInt32, authCode: UInt32 = 0, flags: UInt8 = 0,
                                     hashes: some Collection<UInt8>) throws(CompanionEncodeError) -> EncodedFrame {
        let size = 1 << Int(flags & 3)
        let n = hashes.count
        if n == 0 { throw .tooShort(.traceHashes, length: 0, minimum: size) }
        if n % size != 0 { throw .invalid(.traceHashes) }
        try checkMax(.traceHashes, n / size, CompanionLimits.maxPathSize)
        try checkMax(.traceHashes, n, CompanionLimits.maxFrameSize - 10)
        var f = simple(.sendTracePath)
        try f.append(u32: tag)
        try f.append(u32: authCode)
        try f.append(flags)
        try f.append(contentsOf: hashes)
        return f
    }

    /// `CMD_SET_DEVICE_PIN` (0x25): 0 (default) or 100000...999999.
    public static func setDevicePin(_ pin: UInt32) throws(CompanionEncodeError) -> EncodedFrame {
        if pin != 0 { try checkRange(.pin, pin, CompanionLimits.pinRange) }
        var f = simple(.setDevicePin)
        try f.append(u32: pin)
        return f
    }

    /// `CMD_SET_OTHER_PARAMS` (0x26), all four fields (v7+).
    public static func setOtherParams(manualAddContacts: UInt8, telemetryModes: TelemetryModes,
                                      advertLocationPolicy: UInt8, multiAcks: UInt8) -> EncodedFrame {
        var f = simple(.setOtherParams)
        try? f.append(manualAddContacts)
        try? f.append(telemetryModes.packed)
        try? f.append(advertLocationPolicy)
        try? f.append(multiAcks)
        return f
    }

    /// `CMD_SEND_TELEMETRY_REQ` (0x27): to a contact, or this radio itself (nil; answered by push 0x8B).
    public static func sendTelemetryRequest(_ key: PublicKey? = nil) -> EncodedFrame {
        var f = simple(.sendTelemetryRequest)
        try? f.append(zeros: 3)
        if let k = key { try? f.append(key: k) }
        return f
    }

    /// `CMD_GET_CUSTOM_VARS` (0x28).
    public static func getCustomVars() -> EncodedFrame { simple(.getCustomVars) }

    /// `CMD_SET_CUSTOM_VAR` (0x29): `"name:value"`; the name has no `:`.
    public static func setCustomVar(name: String, value: String) throws(CompanionEncodeError) -> EncodedFrame {
        if name.isEmpty || name.utf8.contains(UInt8(ascii: ":")) || name.utf8.contains(0) { throw .invalid(.customVarName) }
        if value.isEmpty || value.utf8.contains(0) { throw .invalid(.customVarValue) }
        try checkMax(.customVarValue, name.utf8.count + 1 + value.utf8.count, CompanionLimits.maxFrameSize - 1)
        var f = simple(.setCustomVar)
        try f.append(text: name)
        try f.append(UInt8(ascii: ":"))
        try f.append(text: value)
        return f
    }

    /// `CMD_GET_ADVERT_PATH` (0x2A).
    public static func getAdvertPath(_ key: PublicKey) -> EncodedFrame {
        var f = simple(.getAdvertPath)
        try? f.append(0)
        try? f.append(key: key)
        return f
    }

    /// `CMD_GET_TUNING_PARAMS` (0x2B).
    public static func getTuningParams() -> EncodedFrame { simple(.getTuningParams) }

    /// `CMD_SEND_BINARY_REQ` (0x32): `data[0]` is the request type; 1...143 bytes.
    public static func sendBinaryRequest(_ key: PublicKey, data: some Collection<UInt8>) throws(CompanionEncodeError) -> EncodedFrame {
        if data.isEmpty { throw .tooShort(.data, length: 0, minimum: 1) }
        try checkMax(.data, data.count, CompanionLimits.maxBinaryRequestData)
        var f = withKey(.sendBinaryRequest, key)
        try f.append(contentsOf: data)
        return f
    }

    /// `CMD_FACTORY_RESET` (0x33): `33 "reset"`.
    public static func factoryReset() -> EncodedFrame {
        var f = simple(.factoryReset)
        try? f.append(text: "reset")
        return f
    }

    /// `CMD_SEND_PATH_DISCOVERY_REQ` (0x34): `34 00 pk32`.
    public static func sendPathDiscoveryRequest(_ key: PublicKey) -> EncodedFrame {
        var f = simple(.sendPathDiscoveryRequest)
        try? f.append(0)
        try? f.append(key: key)
        return f
    }

    /// `CMD_SET_FLOOD_SCOPE_KEY` (0x36).
    public static func setFloodScopeKey(_ scope: FloodScopeOverride) throws(CompanionEncodeError) -> EncodedFrame {
        var f = simple(.setFloodScopeKey)
        switch scope {
        case .clear: try f.append(0)
        case .unscoped: try f.append(1)
        case .key(let k):
            if k.count != 16 { throw .wrongLength(.key, length: k.count, expected: 16) }
            try f.append(0)
            try f.append(contentsOf: k)
        }
        return f
    }

    /// `CMD_SEND_CONTROL_DATA` (0x37): `payload[0]` must have bit 7 set; sent zero-hop.
    public static func sendControlData(_ payload: some Collection<UInt8>) throws(CompanionEncodeError) -> EncodedFrame {
        guard let first = payload.first else { throw .tooShort(.payload, length: 0, minimum: 1) }
        if first & 0x80 == 0 { throw .invalid(.payload) }
        try checkMax(.payload, payload.count, CompanionLimits.maxFrameSize - 1)
        var f = simple(.sendControlData)
        try f.append(contentsOf: payload)
        return f
    }

    /// `CMD_GET_STATS` (0x38).
    public static func getStats(_ type: StatsType) -> EncodedFrame {
        var f = simple(.getStats)
        try? f.append(type.rawValue)
        return f
    }

    /// `CMD_SEND_ANON_REQ` (0x39): 1...132 bytes of data.
    public static func sendAnonRequest(_ key: PublicKey, data: some Collection<UInt8>) throws(CompanionEncodeError) -> EncodedFrame {
        if data.isEmpty { throw .tooShort(.data, length: 0, minimum: 1) }
        try checkMax(.data, data.count, CompanionLimits.maxAnonRequestData)
        var f = withKey(.sendAnonRequest, key)
        try f.append(contentsOf: data)
        return f
    }

    /// `CMD_SET_AUTOADD_CONFIG` (0x3A): `maxHops` 0...64 (written only when given).
    public static func setAutoAddConfig(flags: UInt8, maxHops: UInt8? = nil) throws(CompanionEncodeError) -> EncodedFrame {
        var f = simple(.setAutoAddConfig)
        try f.append(flags)
        if let h = maxHops {
            try checkRange(.maxHops, h, 0...64)
            try f.append(h)
        }
        return f
    }

    /// `CMD_GET_AUTOADD_CONFIG` (0x3B).
    public static func getAutoAddConfig() -> EncodedFrame { simple(.getAutoAddConfig) }
    /// `CMD_GET_ALLOWED_REPEAT_FREQ` (0x3C).
    public static func getAllowedRepeatFrequencies() -> EncodedFrame { simple(.getAllowedRepeatFrequencies) }

    /// `CMD_SET_PATH_HASH_MODE` (0x3D): 0...2 (1/2/3-byte hashes).
    public static func setPathHashMode(_ mode: UInt8) throws(CompanionEncodeError) -> EncodedFrame {
        try checkRange(.pathHashMode, mode, 0...2)
        var f = simple(.setPathHashMode)
        try f.append(0)
        try f.append(mode)
        return f
    }

    /// `CMD_SEND_CHANNEL_DATA` (0x3E): flood when `pathLength` is `.unknown`, otherwise DIRECT along
    /// `path` (an encoded length). `dataType` ≠ 0, payload ≤ 163 bytes and within the frame.
    public static func sendChannelData(channel: UInt8, pathLength: PathLength = .unknown, path: some Collection<UInt8> = [UInt8](),
                                       dataType: UInt16, payload: some Collection<UInt8>) throws(CompanionEncodeError) -> EncodedFrame {
        if dataType == 0 { throw .invalid(.dataType) }
        if pathLength.isUnknown {
            if !path.isEmpty { throw .wrongLength(.path, length: path.count, expected: 0) }
        } else {
            if !pathLength.isValid { throw .invalid(.pathLength) }
            if path.count != pathLength.byteCount { throw .wrongLength(.path, length: path.count, expected: pathLength.byteCount) }
        }
        try checkMax(.payload, payload.count, min(CompanionLimits.maxChannelDataLength, CompanionLimits.maxFrameSize - 5 - path.count))
        var f = simple(.sendChannelData)
        try f.append(channel)
        try f.append(pathLength.rawValue)
        try f.append(contentsOf: path)
        try f.append(u16: dataType)
        try f.append(contentsOf: payload)
        return f
    }

    /// `CMD_SET_DEFAULT_FLOOD_SCOPE` (0x3F): name 1...30 bytes and a 16-byte key; nil clears it.
    public static func setDefaultFloodScope(name: String?, key: some Collection<UInt8> = [UInt8]()) throws(CompanionEncodeError) -> EncodedFrame {
        var f = simple(.setDefaultFloodScope)
        guard let name else { return f }
        let n = name.utf8.count
        if n == 0 || name.utf8.contains(0) { throw .invalid(.floodScopeName) }
        try checkMax(.floodScopeName, n, CompanionLimits.maxFloodScopeNameLength)
        if key.count != 16 { throw .wrongLength(.key, length: key.count, expected: 16) }
        try f.append(text: name, width: 31)
        try f.append(contentsOf: key)
        return f
    }

    /// `CMD_GET_DEFAULT_FLOOD_SCOPE` (0x40).
    public static func getDefaultFloodScope() -> EncodedFrame { simple(.getDefaultFloodScope) }

    /// `CMD_SEND_RAW_PACKET` (0x41): a raw on-air packet (2...174 bytes) at `priority`.
    public static func sendRawPacket(priority: UInt8, packet: some Collection<UInt8>) throws(CompanionEncodeError) -> EncodedFrame {
        if packet.count < 2 { throw .tooShort(.rawPacket, length: packet.count, minimum: 2) }
        try checkMax(.rawPacket, packet.count, CompanionLimits.maxFrameSize - 2)
        var f = simple(.sendRawPacket)
        try f.append(priority)
        try f.append(contentsOf: packet)
        return f
    }

    /// `CMD_RUN_CLI_COMMAND` (0x42, protocol 14): a line for the radio's own CLI (answered with
    /// `CLI_REPLY`). The firmware wants at least 2 bytes of text.
    public static func runCLICommand(_ text: String) throws(CompanionEncodeError) -> EncodedFrame {
        if text.utf8.count < 2 { throw .tooShort(.text, length: text.utf8.count, minimum: 2) }
        try checkMax(.text, text.utf8.count, CompanionLimits.maxFrameSize - 1)
        var f = simple(.runCLICommand)
        try f.append(text: text)
        return f
    }

    /// Any bytes as a command (for `raw HEX`): 1...176 bytes, sent as given.
    public static func raw(_ bytes: some Collection<UInt8>) throws(CompanionEncodeError) -> EncodedFrame {
        if bytes.isEmpty { throw .tooShort(.frame, length: 0, minimum: 1) }
        return try EncodedFrame(bytes)
    }
}
