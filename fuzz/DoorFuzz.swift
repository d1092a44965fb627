// libFuzzer target over what comes in through the daemon's remote doors, by class: an MQTT
// command (its op and JSON payload) through the bridge's reading of it (MQTTBridge.parseCommand)
// and the result it would publish (MQTTBridge.resultPayload), and a companion frame from a hub
// client through each kind of listener (HubListener.refusal) and the reply redaction
// (Secrets.redacted). Built by fuzz/run.sh together with the MeshDaemon sources.
//
// Byte 0 picks the door (bit 0: MQTT or hub) and, with byte 1, the op or the listener; the rest is
// the payload or the frame.
//
// Invariants:
// - MQTT: a command parsed to run is a request of at least its op's class, and a `raw` request at
//   least the class of the frame it carries; whatever an MQTT bridge's classes are (never secret),
//   a secret request is not among them; a published result, parsed back, holds no secret field at
//   any depth, and a reply frame in it has no secret byte left.
// - hub: a frame a listener takes is of a class it allows; a secret command is refused by every
//   listener without `secret`; a reply frame, redacted, keeps its length and code, changes no byte
//   outside the secret fields and holds no secret.

import Glibc
import MeshCompanion
import MeshDaemonClient
import MeshNet
import MeshOps
import MeshSession
import MeshHub
import MeshBridge

func fuzzCheck(_ ok: Bool, _ what: StaticString, line: UInt = #line) {
    if !ok { fatalError("invariant failed: \(what)", line: line) }
}

var fuzzSink = 0

let fuzzOps = ["raw", "info", "send", "channel_list", "channel_add", "channel_uri", "get", "set", "status", "key_export", "sign",
               "subscribe", "cmd", "raw_data", "history", "contacts", "login", "factory_reset", "x"]

let fuzzMQTTClasses: [AllowedClasses] = [.mqttDefault, AllowedClasses([]), AllowedClasses([.read, .message, .config, .admin]), AllowedClasses([.admin])]

let fuzzListeners: [HubListener] = {
    ["127.0.0.1:1", "127.0.0.1:1,read-only", "127.0.0.1:1,allow=admin", "127.0.0.1:1,allow=secret", "127.0.0.1:1,allow=all"]
        .map { try! HubListener(parsing: $0) }
}()

/// No key of `Secrets.resultFields` (or the op's own secret fields) at any depth; every frame field redacted.
func fuzzNoSecrets(_ v: JSON, op: String, depth: Int = 0) {
    switch v {
    case .object(let pairs):
        for (k, x) in pairs {
            fuzzCheck(!Secrets.isSecretField(k, op: op), "no secret field in a published result")
            if Secrets.isFrameField(k, op: op), case .string(let hex) = x, let f = HexCodec.decode(hex) {
                fuzzCheck(!Secrets.holdsSecret(reply: f), "a reply frame in a result holds no secret")
            }
            fuzzNoSecrets(x, op: op, depth: depth + 1)
        }
    case .array(let items):
        for x in items { fuzzNoSecrets(x, op: op, depth: depth + 1) }
    default:
        break
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard bytes.count >= 2 else { return 0 }
    let pick = Int(bytes[1])
    let rest = Array(bytes[2...])
    if bytes[0] & 1 == 0 {
        // MARK: MQTT
        let op = fuzzOps[pick % fuzzOps.count]
        switch MQTTBridge.parseCommand(op: op, payload: rest, prefix: "pm") {
        case .run(let name, let req):
            fuzzCheck(name == op, "the op is the topic's")
            if let c = try? req.operationClass() {
                if let least = Request.operationClass(apiOp: req.name) { fuzzCheck(c >= least, "a request is at least its op's class") }
                if req.name == "raw", case .object(let pairs) = req.args,
                   let hex = pairs.first(where: { $0.0 == "hex" || $0.0 == "frame" })?.1.string, let f = Hex.decode(hex), !f.isEmpty {
                    fuzzCheck(c >= OperationClass(frame: f), "raw is at least its frame's class")
                    if f.first.flatMap(CommandCode.init(rawValue:)).map(Secrets.commands.contains) == true {
                        fuzzCheck(c == .secret, "a secret frame inside raw is secret")
                    }
                }
                for allowed in fuzzMQTTClasses where c == .secret { fuzzCheck(!allowed.allows(c), "no MQTT door allows secret") }
                fuzzSink &+= c.rawValue.utf8.count
            }
        case .refuse(let id, let e, _):
            fuzzSink &+= Int(truncatingIfNeeded: id ?? 0) &+ e.message.utf8.count
        }
        // The payload as an answer's fields: what would be published.
        if let v = try? JSONParser.parse(String(decoding: rest, as: UTF8.self)), case .object(let fields) = v {
            let out = MQTTBridge.resultPayload(id: 1, op: op, radio: "0102030405", .success(fields))
            guard let back = try? JSONParser.parse(String(decoding: out, as: UTF8.self)) else { fuzzCheck(false, "a result is JSON"); return 0 }
            fuzzNoSecrets(back, op: op)
        }
    } else {
        // MARK: hub
        guard !rest.isEmpty else { return 0 }
        let listener = fuzzListeners[pick % fuzzListeners.count]
        let c = OperationClass(frame: rest)
        let refusal = listener.refusal(rest)
        if refusal == nil { fuzzCheck(listener.allowed.allows(c), "a frame taken is of an allowed class") }
        if !listener.allowed.allows(.secret), let code = CommandCode(rawValue: rest[0]), Secrets.commands.contains(code) {
            fuzzCheck(refusal != nil, "a secret command is refused without secret")
        }
        // The same bytes as a reply frame.
        let r = Secrets.redacted(reply: rest)
        fuzzCheck(r.count == rest.count && r.first == rest.first, "redaction keeps the frame's length and code")
        fuzzCheck(!Secrets.holdsSecret(reply: r), "a redacted reply holds no secret")
        for i in 0..<r.count where r[i] != rest[i] {
            fuzzCheck(r[i] == 0 && Secrets.replyFields.contains { $0.code.rawValue == rest[0] && $0.bytes.contains(i) }, "only secret bytes change")
        }
        fuzzSink &+= r.count
    }
    return 0
}

// MARK: seeds

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> Int32 {
    guard let dir = getenv("FUZZ_WRITE_SEEDS").map({ String(cString: $0) }) else { return 0 }
    func mqtt(_ op: String, _ payload: String) -> [UInt8] { [0, UInt8(fuzzOps.firstIndex(of: op)!)] + Array(payload.utf8) }
    func hub(_ listener: Int, _ frame: [UInt8]) -> [UInt8] { [1, UInt8(listener)] + frame }
    let channel: [UInt8] = [0x12, 1] + Array("Private".utf8) + [UInt8](repeating: 0, count: 25) + [UInt8](repeating: 0xAB, count: 16)
    let seeds: [(String, [UInt8])] = [
        ("raw-key", mqtt("raw", #"{"id":201,"hex":"17"}"#)),
        ("raw-sign", mqtt("raw", #"{"id":202,"hex":"2100"}"#)),
        ("raw-channel", mqtt("raw", #"{"id":203,"hex":"1f02","reply":"1202"}"#)),
        ("set-pin", mqtt("set", #"{"id":4,"setting":"pin","value":"123456","pin":123456}"#)),
        ("channels", mqtt("channel_list", #"{"id":5,"channels":[{"index":1,"secret":"ab","uri":"x"}]}"#)),
        ("channel-add", mqtt("channel_add", ##"{"id":6,"name":"#x","uri":"meshcore://channel/add?secret=00"}"##)),
        ("no-id", mqtt("info", #"{"x":1}"#)),
        ("hub-key", hub(0, [0x17])),
        ("hub-set-channel", hub(2, [0x20, 1] + Array("Private".utf8) + [UInt8](repeating: 0, count: 41))),
        ("hub-channel-info", hub(1, channel)),
        ("hub-device-info", hub(3, [0x0D, 13, 50, 8, 0x40, 0xE2, 0x01, 0x00] + [UInt8](repeating: 0x41, count: 74))),
    ]
    for (name, bytes) in seeds {
        let f = fopen(dir + "/" + name, "wb")!
        _ = fwrite(bytes, 1, bytes.count, f)
        fclose(f)
    }
    _exit(0)
}
