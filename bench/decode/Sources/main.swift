// The receive path of a frame from the radio, measured the way bench/py_reader_bench.py measures
// meshcore_py's MessageReader.handle_rx: each payload of bench/frames.txt (code byte first, no
// transport header on either side) is decoded into the owned event a session hands out, and that
// event is delivered to a subscriber, which reads its fields.
//
//   decode-bench [--runs N] [--rounds R]
//
// A run feeds R rounds of the six-frame mix; the time per frame is the run's time / (R × 6), on the
// monotonic clock (wall) and the process's CPU-time clock. Printed: the median of N runs (and
// their min and max), for the mix and for each frame alone: the same statistic the Python side prints.
//
// What "decoded into an owned event" is here, per frame (the same calls MeshSession makes):
//   messages (V3 direct, V3 channel)     ReceivedMessage(frame:)  (Session+Drain: a drained message)
//   pushes (SEND_CONFIRMED, LOG_RX_DATA) Push(_:)                 (Session+Routing: a push no command took)
//   CONTACT                              CompanionFrame.decode + ContactRecord.contact (owned Contact)
//   SENT                                 CompanionFrame.decode (SentInfo is a value)
// Not included: the session's routing of a response to the command it answers (the Python reader
// has no such step) and transport framing (neither side).
import Glibc
import MeshCompanion
import MeshSession

enum Event {
    case message(ReceivedMessage)
    case push(Push)
    case contact(Contact)
    case sent(SentInfo)
    case other([UInt8])
}

/// Subscribers get every event, in order, as meshcore_py's EventDispatcher hands them to callbacks.
final class Dispatcher {
    var subscribers: [(Event) -> Void] = []
    @inline(never)
    func emit(_ e: Event) {
        for s in subscribers { s(e) }
    }
}

@inline(never)
func decode(_ b: UnsafeRawBufferPointer) -> Event {
    let code = b.first ?? 0
    if PushCode.isPush(code) { return .push(Push(b)) }
    switch code {
    case 0x07, 0x08, 0x10, 0x11:
        if let m = try? ReceivedMessage(frame: b) { return .message(m) }
    default:
        switch try? CompanionFrame.decode(b) {
        case .contact(let r)?: return .contact(r.contact)
        case .sent(let s)?: return .sent(s)
        default: break
        }
    }
    return .other(Array(b))
}

func now(_ clock: clockid_t) -> UInt64 {
    var ts = timespec()
    clock_gettime(clock, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

func loadFrames() -> [(String, [UInt8])] {
    // bench/frames.txt, next to this package's folder (or $FRAMES).
    var path = #filePath
    for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
    if let p = getenv("FRAMES") { path = String(cString: p) } else { path += "/frames.txt" }
    guard let f = fopen(path, "r") else { fatalError("cannot open \(path)") }
    defer { fclose(f) }
    var out: [(String, [UInt8])] = []
    var line: UnsafeMutablePointer<CChar>? = nil
    var cap = 0
    while getline(&line, &cap, f) > 0 {
        let s = String(cString: line!)
        if s.hasPrefix("#") { continue }
        let parts = s.split(whereSeparator: { $0 == " " || $0 == "\n" })
        guard parts.count == 2, let bytes = HexCodec.decode(parts[1]) else { continue }
        out.append((String(parts[0]), bytes))
    }
    free(line)
    precondition(out.count == 6, "\(path): expected six frames")
    return out
}

var runs = 15, rounds = 20_000
var args = CommandLine.arguments.dropFirst().makeIterator()
while let a = args.next() {
    switch a {
    case "--runs": runs = Int(args.next() ?? "") ?? runs
    case "--rounds": rounds = Int(args.next() ?? "") ?? rounds
    default: fputs("usage: decode-bench [--runs N] [--rounds R]\n", stderr); exit(2)
    }
}

let frames = loadFrames()
let dispatcher = Dispatcher()
var seen = [Int](repeating: 0, count: 5)
var checksum: UInt64 = 0
// The subscriber: reads what an application reads of each event.
dispatcher.subscribers.append { e in
    switch e {
    case .message(let m):
        seen[0] += 1
        checksum &+= UInt64(m.timestamp) &+ UInt64(m.text.count) &+ UInt64(m.channelIndex) &+ UInt64(m.senderPrefix.first ?? 0)
    case .push(let p):
        seen[1] += 1
        switch p.kind {
        case .sendConfirmed(let c): checksum &+= UInt64(c.ack) &+ UInt64(c.roundTripMs)
        case .logRxData(let snr, let rssi, let packet): checksum &+= UInt64(packet.count) &+ UInt64(UInt8(bitPattern: snr)) &+ UInt64(UInt8(bitPattern: rssi))
        default: checksum &+= UInt64(p.code)
        }
    case .contact(let c):
        seen[2] += 1
        checksum &+= UInt64(c.publicKey[0]) &+ UInt64(c.name.utf8.count) &+ UInt64(c.lastModified)
    case .sent(let s):
        seen[3] += 1
        checksum &+= UInt64(s.tag) &+ UInt64(s.estimatedTimeoutMs)
    case .other(let b):
        seen[4] += 1
        checksum &+= UInt64(b.count)
    }
}

/// One run: `rounds` passes over `batch`; ns per frame on the wall and CPU clocks.
func run(_ batch: [[UInt8]], rounds: Int) -> (wall: Double, cpu: Double) {
    let w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID)
    for _ in 0..<rounds {
        for f in batch {
            f.withUnsafeBytes { dispatcher.emit(decode($0)) }
        }
    }
    let w1 = now(CLOCK_MONOTONIC), c1 = now(CLOCK_PROCESS_CPUTIME_ID)
    let n = Double(rounds * batch.count)
    return (Double(w1 - w0) / n, Double(c1 - c0) / n)
}

func median(_ xs: [Double]) -> Double {
    let s = xs.sorted()
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}

func fmt(_ x: Double) -> String {
    let r = (x * 10).rounded() / 10
    return "\(r)"
}

let all = frames.map { $0.1 }
_ = run(all, rounds: max(1, rounds / 10))  // warm up
for (label, bytes) in frames {
    let rs = (0..<runs).map { _ in run([bytes], rounds: rounds) }
    let pad = String(repeating: " ", count: max(0, 16 - label.count))
    print("\(label)\(pad) \(bytes.count) B  median \(fmt(median(rs.map { $0.wall }))) ns/frame (cpu \(fmt(median(rs.map { $0.cpu }))))")
}
let rs = (0..<runs).map { _ in run(all, rounds: rounds) }
let walls = rs.map { $0.wall }, cpus = rs.map { $0.cpu }
print("events per kind (message, push, contact, sent, other): \(seen)")
print("mix_runs=\(runs) rounds=\(rounds) frames_per_run=\(rounds * all.count)")
print("mix_ns_per_frame=\(fmt(median(walls))) min=\(fmt(walls.min()!)) max=\(fmt(walls.max()!))")
print("mix_cpu_ns_per_frame=\(fmt(median(cpus))) min=\(fmt(cpus.min()!)) max=\(fmt(cpus.max()!))")
if checksum == 42 { print("") }  // keeps the subscriber's reads
