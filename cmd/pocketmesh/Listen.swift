import Glibc
import MeshCompanion
import MeshDaemonClient
import MeshSession
import MeshOps

struct Listen: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "listen")
    let args: OperationValues
    init(_ args: OperationValues) { self.args = args }
    var link: LinkOptions { LinkOptions(args) }
    var duration: Double? { args.number("for") }
    var logRx: Bool { args.flag("log-rx") }

    func run(_ args: OperationValues) throws {
        let target = try link.target()
        let byteLink = try target.openDirectOrThroughDaemon(timeoutMilliseconds: Int(link.timeoutMilliseconds))
        var config = SessionConfig()
        config.commandTimeout = link.timeoutMilliseconds
        config.drainOnStart = true
        config.drainOnWaiting = true
        config.forwardLogRx = logRx
        let radio = Radio(link: byteLink, config: config)
        do { try radio.loop.handleSignals() } catch {}
        let json = link.json
        var contacts: [ContactSummary] = []
        radio.onEvent = { e in
            guard let v = eventValue(e, contacts: contacts) else { return }
            if json { emitLine(v.json) } else { emitHuman(eventLine(v.oneLine)) }
        }
        do {
            try radio.connect(timeoutMilliseconds: link.timeoutMilliseconds)
            let executor = Executor(radio: radio, timeout: link.timeoutMilliseconds)
            contacts = (try? executor.contacts()) ?? []
            let deadline = duration.map { radio.now + UInt64($0 * 1000) }
            try radio.run(until: deadline) { false }
        } catch {
            if error == .interrupted { return }
            throw error
        }
    }
}

/// A session event as printed by `listen` (nil: not shown).
func eventValue(_ e: SessionEvent, contacts: [ContactSummary]) -> Value? {
    switch e {
    case .message(let m):
        guard case .object(let fields) = messageValue(m, contacts: contacts) else { return nil }
        return .object([("event", .string("message"))] + fields)
    case .push(let p):
        var fields: [Value.Field] = [("event", .string(pushName(p.code)))]
        func contact(_ key: PublicKey) {
            fields.append(("public_key", .string(key.hex)))
            if let c = contacts.first(where: { $0.publicKey == key.bytes }) { fields.append(("name", .string(c.name))) }
        }
        switch p.kind {
        case .advert(let key), .pathUpdated(let key), .contactDeleted(let key):
            contact(key)
        case .sendConfirmed(let c):
            fields.append(("ack", .hex(withUnsafeBytes(of: c.ack.littleEndian) { Array($0) })))
        case .messageWaiting:
            return nil  // the session drains the queue and reports each message
        case .newAdvert:
            if let c = ContactSummary(record: p.frame), case .object(let cf) = c.value { fields += cf }
        case .logRxData(let snr, let rssi, let packet):
            fields.append(("snr", .double(Double(snr) / 4)))
            fields.append(("rssi", .int(rssi)))
            fields.append(("packet", .hex(packet)))
        default:
            fields.append(("frame", .hex(p.frame)))
        }
        return .object(fields)
    case .malformedMessage(let f):
        return .object([("event", .string("malformed_message")), ("frame", .hex(f))])
    default:
        return nil
    }
}

/// The name a push has in `listen`'s output (MeshCompanion's `PushCode.name`).
func pushName(_ code: UInt8) -> String {
    PushCode(rawValue: code)?.name ?? "push_\(Hex.encode([code]))"
}

func eventLine(_ v: Value) -> String {
    if v["event"]?.stringValue == "message" { return messageLine(v) }
    guard case .object(let fields) = v else { return v.text() }
    let name = fields.first?.value.scalarText ?? "event"
    return "* " + name + " " + fields.dropFirst().map { "\($0.key)=\($0.value.scalarText)" }.joined(separator: " ")
}
