// libFuzzer target over ATT PDUs: what a BLE radio sends to the GATT client (MTU exchange, service,
// characteristic and descriptor discovery, write responses, notifications, errors), and what a
// central sends to the simulated GATT server. Built by fuzz/run.sh together with ATT.swift,
// ATTClient.swift and SimulatedGATTServer.swift.
//
// Input: byte 0 = mode, then PDUs, each as one length byte and that many bytes.
//   mode bit 0: first complete an honest discovery against the simulated server (then fuzz a ready link)
//   mode bit 1: queue a frame to write before each PDU
//   mode bit 2: also feed each PDU to the simulated server
// Invariants: no trap; a client that threw stays failed; no PDU the client sends exceeds the MTU;
// the MTU stays within 23...517; a notification frame is a view into the PDU given.

import Glibc

func fuzzCheck(_ ok: Bool, _ what: StaticString, line: UInt = #line) {
    if !ok { fatalError("invariant failed: \(what)", line: line) }
}

var fuzzSink = 0

/// Runs the client against the simulated server until it is ready (or gives up), returning the
/// server's PDUs in order.
@discardableResult
func connect(_ client: inout ATTClient, _ server: SimulatedGATTServer) -> [[UInt8]] {
    var transcript: [[UInt8]] = []
    client.start(now: 0)
    for _ in 0 ..< 64 {
        while let pdu = client.takeOutgoing() { pdu.withUnsafeBytes { server.receive($0) } }
        guard let reply = server.takeOutgoing() else { break }
        transcript.append(reply)
        let event = reply.withUnsafeBytes { try? client.receive($0, now: 0) }
        if case .ready? = event { break }
    }
    return transcript
}

/// The largest MTU of this run: a radio may lower the MTU with a later exchange, and a frame
/// queued before that is still written whole (left as it is: see bench/README.md, Fuzzing).
var fuzzLargestMTU = 23

func drain(_ client: inout ATTClient) {
    fuzzLargestMTU = max(fuzzLargestMTU, client.mtu)
    while let pdu = client.takeOutgoing() {
        fuzzCheck(!pdu.isEmpty, "empty outgoing PDU")
        fuzzCheck(pdu.count <= fuzzLargestMTU, "outgoing PDU within the MTU")
        fuzzSink &+= pdu.count
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size > 0 else { return 0 }
    let input = UnsafeRawBufferPointer(start: data, count: size)
    let mode = input[0]
    var client = ATTClient()
    let server = SimulatedGATTServer()
    fuzzLargestMTU = 23
    if mode & 1 != 0 {
        connect(&client, server)
        fuzzCheck(client.phase == .ready, "honest discovery reaches ready")
    } else {
        client.start(now: 0)
    }
    drain(&client)
    var i = 1
    var now: UInt64 = 0
    var failed = false
    while i < input.count {
        let n = min(Int(input[i]), input.count - i - 1)
        let pdu = UnsafeRawBufferPointer(rebasing: input[(i + 1) ..< (i + 1 + n)])
        i += 1 + n
        now += 100
        if mode & 2 != 0 {
            let frame = [UInt8](repeating: 0x5A, count: Int(mode >> 3) + 1)
            if (try? client.send(frame: frame, now: now)) == nil { fuzzSink &+= 1 }
            drain(&client)
        }
        do throws(ATTClientError) {
            switch try client.receive(pdu, now: now) {
            case .frame(let f):
                fuzzCheck(f.count == pdu.count - 3 && f.baseAddress == pdu.baseAddress! + 3, "frame is the PDU's value")
            case .ready: fuzzCheck(client.handles != nil && client.phase == .ready, "ready with handles")
            case .none, .frameAcknowledged: break
            }
        } catch {
            fuzzCheck(client.phase == .failed, "a client that threw is failed")
            fuzzSink &+= error.description.utf8.count
            failed = true
        }
        if failed { fuzzCheck(client.phase == .failed, "a failed client stays failed") }
        fuzzCheck((23 ... 517).contains(client.mtu), "MTU in range")
        drain(&client)
        if (try? client.checkTimeout(now: now)) == nil { fuzzCheck(client.phase == .failed, "timeout fails") }
        if mode & 4 != 0 {
            server.receive(pdu)
            while let out = server.takeOutgoing() {
                fuzzCheck(out.count <= max(server.mtu, 23), "server PDU within the MTU")
            }
        }
    }
    return 0
}

// MARK: seeds

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> Int32 {
    guard let dir = getenv("FUZZ_WRITE_SEEDS").map({ String(cString: $0) }) else { return 0 }
    func write(_ name: String, _ mode: UInt8, _ pdus: [[UInt8]]) {
        var bytes = [mode]
        for p in pdus { bytes.append(UInt8(min(p.count, 255))); bytes += p.prefix(255) }
        let f = fopen(dir + "/" + name, "wb")!
        _ = fwrite(bytes, 1, bytes.count, f)
        fclose(f)
    }
    var client = ATTClient()
    let transcript = connect(&client, SimulatedGATTServer())
    write("discovery", 0, transcript)
    write("discovery-send", 2 | 8 << 3, transcript + [[0x13]])
    let tx = SimulatedGATTServer.txHandle
    write("notify", 1, [[0x1B, UInt8(tx & 0xFF), UInt8(tx >> 8), 0x05, 0x01, 0x02], [0x1D, UInt8(tx & 0xFF), UInt8(tx >> 8), 0x83]])
    write("errors", 0, [[0x01, 0x02, 0x01, 0x00, 0x05], [0x01, 0x10, 0x01, 0x00, 0x0A]])
    write("mtu-request", 5, [[0x02, 0x17, 0x00], [0x02, 0xF7, 0x00], [0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28]])
    write("write-ack", 3, [[0x13], [0x13], [0x01, 0x12, 0x12, 0x00, 0x0E]])
    _exit(0)
}
