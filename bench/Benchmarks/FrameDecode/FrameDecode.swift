// Receive path throughput: framing + decode + dispatch of a realistic frame mix, and
// allocations per frame. Frames come from bench/frames.txt (shared with py_reader_bench.py).
import Benchmark
import Foundation
import MeshCompanion
import MeshSession

struct Mix {
    let labels: [String]
    let payloads: [[UInt8]]
    let wire: [[UInt8]]

    static func load() -> Mix {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("frames.txt").path
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        var labels: [String] = [], payloads: [[UInt8]] = []
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: " ")
            guard parts.count == 2, let bytes = HexCodec.decode(parts[1]) else { continue }
            labels.append(String(parts[0]))
            payloads.append(bytes)
        }
        precondition(payloads.count == 6, "bench/frames.txt not found or malformed at \(path)")
        return Mix(labels: labels, payloads: payloads,
                   wire: payloads.map { try! FrameEncoder.encode($0, marker: .fromRadio) })
    }
}

/// What a session does with each frame: route on the code, read the fields it needs
/// (the equivalent of meshcore_py building its event payload).
@inline(never)
func dispatch(_ frame: CompanionFrame) -> UInt64 {
    switch frame {
    case .contact(let c), .newAdvert(let c):
        return UInt64(c.publicKey[0]) &+ UInt64(c.nameBytes.count) &+ UInt64(c.lastModified ?? 0) &+ UInt64(c.outPathLength.rawValue)
    case .contactMessage(let m):
        return UInt64(m.senderPrefix[0]) &+ UInt64(m.senderTimestamp) &+ UInt64(m.textBytes.count) &+ UInt64(bitPattern: Int64(m.snrQuarterDb ?? 0))
    case .channelMessage(let m):
        return UInt64(m.channelIndex) &+ UInt64(m.timestamp) &+ UInt64(m.textBytes.count) &+ UInt64(m.pathLength.rawValue)
    case .sendConfirmed(let s):
        return UInt64(s.ack) &+ UInt64(s.roundTripMs)
    case .sent(let s):
        return UInt64(s.tag) &+ UInt64(s.estimatedTimeoutMs) &+ (s.isFlood ? 1 : 0)
    case .logRxData(let l):
        return UInt64(l.packet.count) &+ UInt64(bitPattern: Int64(l.rssi))
    default:
        return UInt64(frame.code)
    }
}

let benchmarks: @Sendable () -> Void = {
    let mix = Mix.load()
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal, .cpuTotal],
        warmupIterations: 10,
        scalingFactor: .kilo,
        maxDuration: .seconds(2),
        maxIterations: 1_000_000
    )

    // One scaled iteration = one frame: appended to the ring buffer as received bytes,
    // framed, decoded and dispatched.
    Benchmark("receive mix (framing+decode+dispatch), per frame") { benchmark in
        // The six frames back to back, as a read buffer would hold them; each scaled
        // iteration hands the next frame's bytes to the ring buffer.
        let stream = mix.wire.flatMap { $0 }
        var bounds = [0]
        for w in mix.wire { bounds.append(bounds.last! + w.count) }
        let decoder = FrameDecoder(side: .client)
        var sum: UInt64 = 0
        stream.withUnsafeBytes { all in
            bounds.withUnsafeBufferPointer { b in
                var i = 0
                benchmark.startMeasurement()
                for _ in benchmark.scaledIterations {
                    decoder.append(UnsafeRawBufferPointer(rebasing: all[b[i] ..< b[i + 1]]))
                    while let payload = decoder.nextFrame() {
                        if let frame = try? CompanionFrame.decode(payload) { sum &+= dispatch(frame) }
                    }
                    i = i == 5 ? 0 : i + 1
                }
                benchmark.stopMeasurement()
            }
        }
        blackHole(sum)
    }

    // The session itself: `Session.receive` on a session past its handshake, with its events
    // taken. LOG_RX_DATA nobody asked for and an ACK for one of its own sends are frames it only
    // routes; the mix shows what the frames it hands out (owned events) cost.
    func readySession(forwardLogRx: Bool) -> Session {
        var c = SessionConfig()
        c.drainOnStart = false
        c.forwardLogRx = forwardLogRx
        let s = Session(config: c)
        s.start(now: 0)
        while s.nextFrame() != nil {}
        let device = HexCodec.decode("0d0d3228000000003134204175672032303236005465737420426f61726400000000000000000000000000000000000000000000000000000000000076312e31372e31000000000000000000000000000000")!
        let me = HexCodec.decode("05011416a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf000000000000000000000000f2440d0024f400000805")! + Array("bench".utf8)
        s.receive(frame: device, now: 1)
        s.receive(frame: me, now: 2)
        while s.nextFrame() != nil {}
        while s.nextEvent() != nil {}
        precondition(s.state == .ready, "the session did not finish its handshake")
        return s
    }

    Benchmark("Session.receive LOG_RX_DATA not asked for (routed only), per frame") { benchmark in
        let s = readySession(forwardLogRx: false)
        var n = 0
        mix.payloads[5].withUnsafeBytes { frame in
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                s.receive(frame: frame, now: 3)
                while s.nextEvent() != nil { n += 1 }
            }
            benchmark.stopMeasurement()
        }
        blackHole(n)
    }

    Benchmark("Session.receive mix (handed out as owned events), per frame") { benchmark in
        let s = readySession(forwardLogRx: true)
        var n = 0
        var i = 0
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            mix.payloads[i].withUnsafeBytes { s.receive(frame: $0, now: 3) }
            while s.nextEvent() != nil { n += 1 }
            while s.nextFrame() != nil { n += 1 }
            i = i == 5 ? 0 : i + 1
        }
        benchmark.stopMeasurement()
        blackHole(n)
    }

    // Decode + dispatch alone, per frame type.
    for (label, payload) in zip(mix.labels, mix.payloads) {
        Benchmark("decode+dispatch \(label) (\(payload.count) B)") { benchmark in
            var sum: UInt64 = 0
            payload.withUnsafeBytes { raw in
                benchmark.startMeasurement()
                for _ in benchmark.scaledIterations {
                    if let frame = try? CompanionFrame.decode(raw) { sum &+= dispatch(frame) }
                }
                benchmark.stopMeasurement()
            }
            blackHole(sum)
        }
    }
}
