import MeshAir
import MeshCompanion
import Testing
@testable import MeshNode

/// MeshCore's KISS modem protocol (docs/kiss_modem_protocol.md of the firmware), byte for byte.
@Suite struct KISSTests {
    @Test func framesEscapeFendAndFesc() {
        #expect(KISS.frame(type: 0x00, [0x11, 0xC0, 0xDB, 0x22]) == [0xC0, 0x00, 0x11, 0xDB, 0xDC, 0xDB, 0xDD, 0x22, 0xC0])
        #expect(KISSModem.frame(KISSModem.Request.ping.rawValue) == [0xC0, 0x06, 0x17, 0xC0])
        #expect(KISSModem.dataFrame([0x12, 0x00]) == [0xC0, 0x00, 0x12, 0x00, 0xC0])
    }

    @Test func setRadioAndRxMetaLayouts() {
        let p = RadioParams(freqKHz: 869_618, bwHz: 62_500, sf: 8, cr: 5)
        #expect(KISSModem.frame(KISSModem.Request.setRadio.rawValue, KISSModem.radioData(p))
            == [0xC0, 0x06, 0x09, 0x50, 0x51, 0xD5, 0x33, 0x24, 0xF4, 0x00, 0x00, 0x08, 0x05, 0xC0])
        #expect(KISSModem.radioParams(KISSModem.radioData(p)) == p)
        #expect(KISSModem.radioParams([0x50, 0x51, 0xD5, 0x33, 0x24, 0xF4, 0x00, 0x00, 0x0D, 0x05]) == nil)  // SF 13
        #expect(KISSModem.rxMetaData(snr: -3.5, rssi: -117) == [0xF2, 0x8B])
        #expect(KISSModem.response(.getIdentity) == 0x81 && KISSModem.response(.getCapabilities) == 0x9B)
    }

    /// A modem (or anything on its port) answering with a frequency within 500 Hz of 2^32 Hz: the
    /// kHz rounding overflowed and trapped the node (found by the kiss fuzz target).
    @Test func radioParamsNearTheTopOfTheFrequencyRangeDoNotTrap() {
        let p = KISSModem.radioParams([0xFF, 0xFF, 0xFF, 0xFF, 0x24, 0xF4, 0x00, 0x00, 0x08, 0x05])
        #expect(p?.freqKHz == 4_294_967)
        #expect(p?.bwHz == 62_500)
        // Under 500 Hz rounds to 0 kHz: no frequency.
        #expect(KISSModem.radioParams([0x01, 0x00, 0x00, 0x00, 0x24, 0xF4, 0x00, 0x00, 0x08, 0x05]) == nil)
    }

    @Test func decoderAcrossReadsDropsNoiseBadEscapesAndOversizedFrames() {
        let wire: [UInt8] = [0xAA, 0x55, 0xC0, 0x00, 0x11, 0xDB, 0xDC, 0xC0, 0xC0, 0x06, 0xF8, 0x01, 0xC0,
                             0x00, 0x01, 0xDB, 0x01, 0xC0, 0x06, 0x17, 0xC0]
        var d = KISS.Decoder()
        var got: [(UInt8, [UInt8])] = []
        for b in wire { d.feed([b]) { got.append(($0, $1)) } }
        #expect(got.map(\.0) == [0x00, 0x06, 0x06])
        #expect(got.map(\.1) == [[0x11, 0xC0], [0xF8, 0x01], [0x17]])
        #expect(d.dropped == 1)  // FESC then 0x01
        var big = KISS.Decoder()
        var n = 0
        big.feed([0xC0] + [UInt8](repeating: 0x41, count: 600) + [0xC0, 0x00, 0x01, 0xC0]) { _, _ in n += 1 }
        #expect(n == 1 && big.dropped == 1)
    }

    /// The host side: one packet pending at a time, the next after TxDone; a received packet goes
    /// to the air with the RxMeta after it.
    @Test func hostSendsOneAtATimeAndPairsRxMeta() {
        let air = RadioAir(seed: 1, start: 0, epochNow: 1_800_000_000)
        var rng = SimRandom(seed: 2)
        let node = RecordingNode(mesh: air, identity: LocalIdentity.generate(using: &rng))
        let host = KISSHost(air: air)
        var out: [[UInt8]] = []
        host.write = { out.append($0) }
        host.start(params: RadioParams())
        #expect(out.count == 3 && out[2] == [0xC0, 0x06, 0x19, 0x01, 0xC0])
        out.removeAll()
        host.send([0x11, 0x00, 0x01])
        host.send([0x11, 0x00, 0x02])
        #expect(out == [[0xC0, 0x00, 0x11, 0x00, 0x01, 0xC0]])
        host.receive([0xC0, 0x06, 0xF8, 0x01, 0xC0])
        #expect(out.last == [0xC0, 0x00, 0x11, 0x00, 0x02, 0xC0] && out.count == 2)
        host.receive([0xC0, 0x00, 0x12, 0x00, 0xAB, 0xC0, 0xC0, 0x06, 0xF9])
        #expect(node.heard.isEmpty)  // waits for its RxMeta
        host.receive([0xF2, 0x8B, 0xC0])
        #expect(node.heard.count == 1 && node.heard[0].0 == [0x12, 0x00, 0xAB] && node.heard[0].1 == -3.5 && node.heard[0].2 == -117)
        // TxBusy: the modem had a packet of its own; ours goes after its TxDone.
        host.receive([0xC0, 0x06, 0xF1, 0x07, 0xC0])
        host.receive([0xC0, 0x06, 0xF8, 0x01, 0xC0])
        #expect(out.last == [0xC0, 0x00, 0x11, 0x00, 0x02, 0xC0] && out.count == 3)
    }

    /// `--identity modem`: GetIdentity, SignData and KeyExchange on the wire, and their answers
    /// going to the request that asked.
    @Test func modemIdentityRequestsAndAnswers() throws {
        let air = RadioAir(seed: 1, start: 0, epochNow: 0)
        let host = KISSHost(air: air)
        var wire: [UInt8] = []
        host.write = { wire += $0 }
        var key: PublicKey?? = nil
        host.identity { key = .some($0) }
        #expect(wire == [0xC0, 0x06, 0x01, 0xC0])
        let pub = AirHex.decode("4f6a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8")!
        host.receive([0xC0, 0x06, 0x81] + pub + [0xC0])
        let answered: PublicKey? = key ?? nil
        let id = KISSModemIdentity(publicKey: try #require(answered), host: host)
        #expect(id.publicKey.bytes == pub)
        // SignData: the message as is, escaped; Signature (0x84): 64 bytes.
        wire.removeAll()
        var sig: [UInt8]?? = nil
        id.sign([0x01, 0xC0, 0x02]) { sig = .some($0) }
        #expect(wire == [0xC0, 0x06, 0x04, 0x01, 0xDB, 0xDC, 0x02, 0xC0])
        let s64 = [UInt8](repeating: 0x5A, count: 64)
        host.receive([0xC0, 0x06, 0x84] + s64 + [0xC0])
        #expect(sig == .some(s64))
        // KeyExchange: the peer's key; SharedSecret (0x87): 32 bytes.
        wire.removeAll()
        var secret: SharedSecret?? = nil
        id.keyExchange(with: id.publicKey) { secret = .some($0) }
        #expect(wire == [0xC0, 0x06, 0x07] + pub + [0xC0])
        host.receive([0xC0, 0x06, 0x87] + [UInt8](repeating: 0x33, count: 32) + [0xC0])
        #expect(secret??.bytes == [UInt8](repeating: 0x33, count: 32))
        // An Error answers the oldest request: refused, nil; RxMeta and TxDone answer none.
        sig = nil
        id.sign([0x09]) { sig = .some($0) }
        host.receive([0xC0, 0x06, 0xF8, 0x01, 0xC0])
        #expect(sig == nil)
        host.receive([0xC0, 0x06, 0xF1, 0x01, 0xC0])
        #expect(sig == .some(nil))
        // An answer skips a request the modem did not answer: that one is told NoCallback.
        var pong: UInt8? = nil
        sig = nil
        host.request(.ping) { code, _ in pong = code }
        id.sign([0x0A]) { sig = .some($0) }
        host.receive([0xC0, 0x06, 0x84] + s64 + [0xC0])
        #expect(pong == 0xF1 && sig == .some(s64))
        // An answer nobody asked for goes nowhere.
        host.receive([0xC0, 0x06, 0x87] + [UInt8](repeating: 0x33, count: 32) + [0xC0])
        // A short signature is no signature.
        sig = nil
        id.sign([0x09]) { sig = .some($0) }
        host.receive([0xC0, 0x06, 0x84, 0x01, 0x02, 0xC0])
        #expect(sig == .some(nil))
    }
}

final class RecordingNode: Node {
    var heard: [([UInt8], Double, Int)] = []
    init(mesh: Air, identity: LocalIdentity) { super.init(mesh: mesh, name: "rec", role: .repeater, poolSize: 8) }
    override func radioReceived(_ bytes: [UInt8], snr: Double, rssi: Int) { heard.append((bytes, snr, rssi)) }
}
