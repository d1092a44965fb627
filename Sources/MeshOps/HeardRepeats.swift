import MeshAir
import MeshCompanion
import MeshSession

/// Heard repeats: after a channel send, the radio's LOG_RX_DATA pushes carry every copy of the
/// packet that repeaters send on. The packet is known in advance (the channel text is encrypted
/// deterministically from the channel's secret, the timestamp and "NAME: text"), so each echo is
/// recognised by its payload. Each echo heard is one repeat (a repeater sends a flood on once;
/// two repeaters may share a 1-byte path hash, so echoes are not merged by path).
final class RepeatListener {
    let radio: any OperationPort
    /// Whether a heard packet is a repeat of what was sent.
    let matches: (Packet) -> Bool
    var heard: [Value] = []
    var token = 0
    var wasForwarding = false

    convenience init(radio: any OperationPort, payload: [UInt8]) {
        self.init(radio: radio) { $0.payload == payload }
    }

    init(radio: any OperationPort, matches: @escaping (Packet) -> Bool) {
        self.radio = radio
        self.matches = matches
        wasForwarding = radio.session.forwardsLogRx
        radio.session.forwardsLogRx = true
        token = radio.observe { [unowned self] e in
            guard case .push(let p) = e, case .logRxData(let snr, let rssi, let bytes) = p.kind,
                  let packet = try? Packet(bytes: bytes), self.matches(packet) else { return }
            let path = packet.path
            guard !path.isEmpty else { return }
            self.heard.append(.object([("path", .hex(path)), ("hops", .int(packet.pathLength.hopCount)),
                                       ("snr", .double(Double(snr) / 4)), ("rssi", .int(rssi))]))
        }
    }

    func stop() {
        guard token != 0 else { return }
        radio.stopObserving(token)
        token = 0
        radio.session.forwardsLogRx = wasForwarding
    }

    /// Waits `waitMs` for echoes, then stops listening; the repeats heard.
    func finish(waitMs: Int) async throws(ClientError) -> [Value] {
        defer { stop() }
        try await radio.sleep(until: radio.now + UInt64(waitMs))
        return heard
    }
}

extension Executor {
    /// Starts listening for repeats of a direct message to `recipient` sent by flood. Its payload
    /// cannot be predicted (it is encrypted with the shared secret, which only the radio has), so an
    /// echo is a TXT_MSG with the recipient's and this radio's 1-byte hashes: the first one heard
    /// fixes the payload, and the echoes of that attempt count (another node's message with the
    /// same two hashes in the same seconds would be needed to miscount).
    func startHearingFloodRepeats(to recipient: [UInt8]) -> RepeatListener? {
        guard let me = radio.session.radioSelf?.publicKey.bytes.first, let dest = recipient.first else { return nil }
        var locked: [UInt8]? = nil
        return RepeatListener(radio: radio) { p in
            let body = p.payload
            guard p.header.payloadType == .txtMsg, body.count > 4, body[0] == dest, body[1] == me else { return false }
            if locked == nil { locked = body }
            return body == locked
        }
    }

    /// Starts listening for echoes of the channel text about to be sent; nil if the packet cannot
    /// be predicted (no name or secret).
    func startHearingRepeats(of c: ChannelSummary, text: String, timestamp: UInt32) -> RepeatListener? {
        guard let name = radio.session.radioSelf?.name, let secret = try? ChannelSecret(c.secret),
              let packet = try? Packet.groupText(GroupText(timestamp: timestamp, senderName: name, message: text), channel: secret) else {
            return nil
        }
        return RepeatListener(radio: radio, payload: packet.payload)
    }
}
