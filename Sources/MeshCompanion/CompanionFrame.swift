// Decoding of radio → app frames (responses and pushes).

/// One frame from the radio, decoded in place: payloads are views over the bytes passed to
/// `decode`, valid as long as those bytes are. Decoding allocates nothing.
public enum CompanionFrame {
    // Responses (< 0x80)
    case ok
    case error(RadioError)
    /// Total number of contacts (not the filtered count).
    case contactsStart(count: UInt32)
    case contact(ContactRecord)
    /// Max lastmod among contacts sent in this listing; 0 if none.
    case endOfContacts(lastModified: UInt32)
    case selfInfo(SelfInfo)
    case sent(SentInfo)
    /// Direct message, V3 (0x10) or legacy (0x07).
    case contactMessage(ContactMessage)
    /// Channel message, V3 (0x11) or legacy (0x08).
    case channelMessage(ChannelMessage)
    case currentTime(UInt32)
    case noMoreMessages
    /// A raw advert packet (`RESP_CODE_EXPORT_CONTACT`).
    case exportContact(advertPacket: UnsafeRawBufferPointer)
    case batteryAndStorage(BatteryAndStorage)
    case deviceInfo(DeviceInfo)
    /// The 64-byte private key.
    case privateKey(UnsafeRawBufferPointer)
    case disabled
    case channelInfo(ChannelInfo)
    case signStart(maxLength: UInt32)
    /// The 64-byte signature.
    case signature(UnsafeRawBufferPointer)
    /// `"name:value,..."` bytes.
    case customVars(UnsafeRawBufferPointer)
    case advertPath(AdvertPath)
    case tuningParams(TuningParams)
    case stats(DeviceStats)
    case autoAddConfig(AutoAddConfig)
    case allowedRepeatFrequencies(FrequencyRanges)
    case channelData(ChannelData)
    /// nil when no default scope is set.
    case defaultFloodScope(DefaultFloodScope?)
    /// Protocol 14: the reply text of `RUN_CLI_COMMAND` (`text` bytes, no NUL).
    case cliReply(text: UnsafeRawBufferPointer)
    // Pushes (≥ 0x80)
    case advert(PublicKey)
    case pathUpdated(PublicKey)
    case sendConfirmed(SendConfirmed)
    case messageWaiting
    case rawData(RawDataPush)
    case loginSuccess(LoginSuccess)
    case loginFail(KeyPrefix)
    case statusResponse(StatusResponse)
    case logRxData(LogRxData)
    case traceData(TraceData)
    case newAdvert(ContactRecord)
    case telemetryResponse(TelemetryResponse)
    case binaryResponse(BinaryResponse)
    case pathDiscoveryResponse(PathDiscoveryResponse)
    case controlData(ControlData)
    case contactDeleted(PublicKey)
    case contactsFull
    /// A code this module does not know, kept whole.
    case unknown(RawFrame)

    /// Byte 0 of the frame this was decoded from.
    public var code: UInt8 {
        switch self {
        case .ok: return 0x00
        case .error: return 0x01
        case .contactsStart: return 0x02
        case .contact: return 0x03
        case .endOfContacts: return 0x04
        case .selfInfo: return 0x05
        case .sent: return 0x06
        case .contactMessage(let m): return m.bytes[0]
        case .channelMessage(let m): return m.bytes[0]
        case .currentTime: return 0x09
        case .noMoreMessages: return 0x0A
        case .exportContact: return 0x0B
        case .batteryAndStorage: return 0x0C
        case .deviceInfo: return 0x0D
        case .privateKey: return 0x0E
        case .disabled: return 0x0F
        case .channelInfo: return 0x12
        case .signStart: return 0x13
        case .signature: return 0x14
        case .customVars: return 0x15
        case .advertPath: return 0x16
        case .tuningParams: return 0x17
        case .stats: return 0x18
        case .autoAddConfig: return 0x19
        case .allowedRepeatFrequencies: return 0x1A
        case .channelData: return 0x1B
        case .defaultFloodScope: return 0x1C
        case .cliReply: return 0x1D
        case .advert: return 0x80
        case .pathUpdated: return 0x81
        case .sendConfirmed: return 0x82
        case .messageWaiting: return 0x83
        case .rawData: return 0x84
        case .loginSuccess: return 0x85
        case .loginFail: return 0x86
        case .statusResponse: return 0x87
        case .logRxData: return 0x88
        case .traceData: return 0x89
        case .newAdvert: return 0x8A
        case .telemetryResponse: return 0x8B
        case .binaryResponse: return 0x8C
        case .pathDiscoveryResponse: return 0x8D
        case .controlData: return 0x8E
        case .contactDeleted: return 0x8F
        case .contactsFull: return 0x90
        case .unknown(let r): return r.code
        }
    }

    /// True for unsolicited frames (code ≥ 0x80).
    public var isPush: Bool { code >= 0x80 }

    /// Decodes one frame payload (no transport header).
    public static func decode(_ b: UnsafeRawBufferPointer) throws(CompanionDecodeError) -> CompanionFrame {
        guard let c = b.first else { throw .empty }
        if b.count > CompanionLimits.maxFrameSize { throw .tooLong(length: b.count) }
        @inline(__always) func need(_ n: Int) throws(CompanionDecodeError) {
            if b.count < n { throw .truncated(code: c, length: b.count, minimum: n) }
        }
        switch c {
        case 0x00: return .ok
        case 0x01: return .error(RadioError(rawCode: b.count > 1 ? b[1] : 0))
        case 0x02: try need(5); return .contactsStart(count: b.u32(1))
        case 0x03:
            return .contact(try decodeContact(b))
        case 0x04: return .endOfContacts(lastModified: b.count >= 5 ? b.u32(1) : 0)
        case 0x05: try need(58); return .selfInfo(SelfInfo(bytes: b))
        case 0x06:
            try need(10)
            return .sent(SentInfo(isFlood: b[1] != 0, tag: b.u32(2), estimatedTimeoutMs: b.u32(6)))
        case 0x07:
            try need(13)
            if b[8] == TextType.signedPlain.rawValue { try need(17) }
            return .contactMessage(ContactMessage(bytes: b))
        case 0x08: try need(8); return .channelMessage(ChannelMessage(bytes: b))
        case 0x09: try need(5); return .currentTime(b.u32(1))
        case 0x0A: return .noMoreMessages
        case 0x0B: try need(2); return .exportContact(advertPacket: b.tail(1))
        case 0x0C:
            try need(3)
            let full = b.count >= 11
            return .batteryAndStorage(BatteryAndStorage(millivolts: b.u16(1), usedKB: full ? b.u32(3) : nil,
                                                        totalKB: full ? b.u32(7) : nil))
        case 0x0D: try need(2); return .deviceInfo(DeviceInfo(bytes: b))
        case 0x0E: try need(65); return .privateKey(b.slice(1, 64))
        case 0x0F: return .disabled
        case 0x10:
            try need(16)
            if b[11] == TextType.signedPlain.rawValue { try need(20) }
            return .contactMessage(ContactMessage(bytes: b))
        case 0x11: try need(11); return .channelMessage(ChannelMessage(bytes: b))
        case 0x12: try need(50); return .channelInfo(ChannelInfo(bytes: b))
        case 0x13: try need(6); return .signStart(maxLength: b.u32(2))
        case 0x14: try need(65); return .signature(b.slice(1, 64))
        case 0x15: return .customVars(b.tail(1))
        case 0x16:
            try need(6)
            let p = PathLength(rawValue: b[5])
            if !p.isValid { throw .malformed(code: c, field: .pathLength) }
            try need(6 + p.byteCount)
            return .advertPath(AdvertPath(bytes: b))
        case 0x17: try need(9); return .tuningParams(TuningParams(rxDelayBaseMilli: b.u32(1), airtimeFactorMilli: b.u32(5)))
        case 0x18:
            try need(2)
            switch b[1] {
            case 0:
                try need(11)
                return .stats(.core(CoreStats(batteryMillivolts: b.u16(2), uptimeSeconds: b.u32(4),
                                              errorFlags: b.u16(8), queueLength: b[10])))
            case 1:
                try need(14)
                return .stats(.radio(RadioStats(noiseFloor: b.i16(2), lastRSSI: b.i8(4), lastSNRQuarterDb: b.i8(5),
                                                txAirSeconds: b.u32(6), rxAirSeconds: b.u32(10))))
            case 2:
                try need(26)
                return .stats(.packets(PacketStats(received: b.u32(2), sent: b.u32(6), sentFlood: b.u32(10),
                                                   sentDirect: b.u32(14), receivedFlood: b.u32(18),
                                                   receivedDirect: b.u32(22),
                                                   receiveErrors: b.count >= 30 ? b.u32(26) : nil)))
            default:
                return .stats(.unknown(type: b[1]))
            }
        case 0x19:
            try need(2)
            return .autoAddConfig(AutoAddConfig(flags: b[1], maxHops: b.count > 2 ? b[2] : 0))
        case 0x1A: return .allowedRepeatFrequencies(FrequencyRanges(bytes: b))
        case 0x1B:
            try need(9)
            try need(9 + Int(b[8]))
            return .channelData(ChannelData(bytes: b))
        case 0x1C:
            if b.count == 1 { return .defaultFloodScope(nil) }
            try need(48)
            return .defaultFloodScope(DefaultFloodScope(bytes: b))
        case 0x1D: return .cliReply(text: b.tail(1))
        case 0x80: try need(33); return .advert(b.key(1))
        case 0x81: try need(33); return .pathUpdated(b.key(1))
        case 0x82: try need(9); return .sendConfirmed(SendConfirmed(ack: b.u32(1), roundTripMs: b.u32(5)))
        case 0x83: return .messageWaiting
        case 0x84: try need(4); return .rawData(RawDataPush(bytes: b))
        case 0x85:
            try need(8)
            if b.count >= 14 {
                return .loginSuccess(LoginSuccess(permissions: b[1], prefix: b.prefix(2), serverTimestamp: b.u32(8),
                                                  aclPermissions: b[12], firmwareLevel: b[13]))
            }
            return .loginSuccess(LoginSuccess(permissions: b[1], prefix: b.prefix(2)))
        case 0x86: try need(8); return .loginFail(b.prefix(2))
        case 0x87: try need(8); return .statusResponse(StatusResponse(bytes: b))
        case 0x88: try need(3); return .logRxData(LogRxData(bytes: b))
        case 0x89:
            try need(13)
            let n = Int(b[2]), shift = Int(b[3] & 3)
            try need(12 + n + (n >> shift) + 1)
            return .traceData(TraceData(bytes: b))
        case 0x8A: return .newAdvert(try decodeContact(b))
        case 0x8B: try need(8); return .telemetryResponse(TelemetryResponse(bytes: b))
        case 0x8C: try need(6); return .binaryResponse(BinaryResponse(bytes: b))
        case 0x8D:
            try need(10)
            let out = PathLength(rawValue: b[8])
            if !out.isValid { throw .malformed(code: c, field: .pathLength) }
            try need(10 + out.byteCount)
            let inn = PathLength(rawValue: b[9 + out.byteCount])
            if !inn.isValid { throw .malformed(code: c, field: .pathLength) }
            try need(10 + out.byteCount + inn.byteCount)
            return .pathDiscoveryResponse(PathDiscoveryResponse(bytes: b))
        case 0x8E: try need(4); return .controlData(ControlData(bytes: b))
        case 0x8F: try need(33); return .contactDeleted(b.key(1))
        case 0x90: return .contactsFull
        default: return .unknown(RawFrame(b))
        }
    }

    static func decodeContact(_ b: UnsafeRawBufferPointer) throws(CompanionDecodeError) -> ContactRecord {
        if b.count < CompanionLimits.contactRecordMinimumSize {
            throw .truncated(code: b[0], length: b.count, minimum: CompanionLimits.contactRecordMinimumSize)
        }
        let p = PathLength(rawValue: b[35])
        if !p.isUnknown && !p.isValid { throw .malformed(code: b[0], field: .pathLength) }
        return ContactRecord(bytes: b)
    }
}

extension ContactRecord {
    /// Decodes a contact record frame (code 0x03, 0x8A or 0x09; ≥ 136 bytes).
    public static func decode(_ b: UnsafeRawBufferPointer) throws(CompanionDecodeError) -> ContactRecord {
        guard !b.isEmpty else { throw .empty }
        return try CompanionFrame.decodeContact(b)
    }
}
