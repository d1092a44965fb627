// libFuzzer target over what a KISS modem sends to `pocketmesh node`: the KISS deframer and the
// MeshCore modem's SetHardware answers (radio parameters, RX metadata). Built by fuzz/run.sh
// together with the MeshNode sources.
//
// Byte 0 picks the read size (1 ... 64 bytes at a time). Invariants: no trap on any input; the
// same bytes give the same frames (and the same count of dropped ones) at once or in pieces; no
// frame is empty or over the TNC's limit; every frame, framed again, decodes to itself; radio
// parameters that decode encode to the bytes they came from (frequency to the kHz).

import Glibc

func fuzzCheck(_ ok: Bool, _ what: StaticString, line: UInt = #line) {
    if !ok { fatalError("invariant failed: \(what)", line: line) }
}

struct Frame: Equatable {
    var type: UInt8
    var data: [UInt8]
}

func decode(_ stream: ArraySlice<UInt8>, step: Int) -> ([Frame], Int) {
    var decoder = KISS.Decoder()
    var frames: [Frame] = []
    var at = stream.startIndex
    while at < stream.endIndex {
        let end = min(at + step, stream.endIndex)
        decoder.feed(stream[at..<end]) { frames.append(Frame(type: $0, data: $1)) }
        at = end
    }
    return (frames, decoder.dropped)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let step = Int(bytes[0] & 0x3F) + 1
    let stream = bytes[1...]

    let (whole, droppedWhole) = decode(stream, step: stream.count)
    let (pieces, droppedPieces) = decode(stream, step: step)
    fuzzCheck(whole == pieces && droppedWhole == droppedPieces, "the same frames at once or in pieces")

    for f in whole {
        fuzzCheck(f.data.count + 1 <= KISS.maxFrame, "no frame over the TNC's limit")
        let again = decode(KISS.frame(type: f.type, f.data)[...], step: step).0
        fuzzCheck(again == [f], "a frame framed again decodes to itself")
        // What the host reads out of the modem's SetHardware answers.
        if f.type == KISS.Command.setHardware.rawValue, let sub = f.data.first {
            let body = Array(f.data.dropFirst())
            if sub == KISSModem.response(.getRadio), let p = KISSModem.radioParams(body) {
                let encoded = KISSModem.radioData(p)
                fuzzCheck(encoded.count == 10 && Array(encoded[4...]) == Array(body[4..<10]),
                          "radio parameters encode to the bandwidth, SF and CR they came from")
                fuzzCheck(KISSModem.radioParams(encoded) == p, "radio parameters survive encode and decode")
            }
        }
    }
    return 0
}

// Seeds: written when the binary runs with FUZZ_WRITE_SEEDS=DIR (fuzz/run.sh does).
@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> Int32 {
    guard let dir = getenv("FUZZ_WRITE_SEEDS").map({ String(cString: $0) }) else { return 0 }
    var params = RadioParams()
    params.freqKHz = 869_618
    let seeds: [(String, [UInt8])] = [
        ("data", [0x05] + KISSModem.dataFrame([0x11, 0x00, 0xC0, 0xDB, 0x42])),
        ("radio", [0x00] + KISSModem.frame(KISSModem.response(.getRadio), KISSModem.radioData(params))),
        ("tx-done-rx-meta", [0x03] + KISSModem.frame(KISSModem.txDone, [0x01]) + KISSModem.frame(KISSModem.rxMeta, KISSModem.rxMetaData(snr: -7.25, rssi: -110))),
        ("noise-then-frame", [0x3F, 0x41, 0x42, 0xDB, 0xC0, 0xC0] + KISSModem.dataFrame([1, 2, 3])),
        ("bad-escape", [0x01, 0xC0, 0x00, 0xDB, 0x01, 0xC0]),
        ("companion-firmware", [0x02] + Array(">\u{05}\u{00}".utf8) + [0x0D, 0x0D, 0xAF, 0x28, 0x40]),
    ]
    for (name, seed) in seeds {
        guard let f = fopen(dir + "/" + name, "wb") else { continue }
        _ = seed.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, f) }
        fclose(f)
    }
    _exit(0)
}
