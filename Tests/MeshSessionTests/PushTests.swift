import MeshCompanion
import Testing
@testable import MeshSession

/// Pushes are decoded once, in the session, into owned values; the frame stays as it came.
@Suite struct PushTests {
    @Test func eachKindFromItsBytes() throws {
        let key = try #require(PublicKey(keyB))
        #expect(Push(frame: [0x80] + keyB).kind == .advert(key))
        #expect(Push(frame: [0x81] + keyB).kind == .pathUpdated(key))
        #expect(Push(frame: [0x8F] + keyB).kind == .contactDeleted(key))
        #expect(Push(frame: [0x82] + le32(0x0403_0201) + le32(1_500)).kind == .sendConfirmed(SendConfirmed(ack: 0x0403_0201, roundTripMs: 1_500)))
        #expect(Push(frame: [0x83]).kind == .messageWaiting)
        #expect(Push(frame: [0x90]).kind == .contactsFull)
        #expect(Push(frame: [0x88, 0xF6, 0xA0, 0x11, 0x22]).kind == .logRxData(snrQuarterDb: -10, rssi: -96, packet: [0x11, 0x22]))
        #expect(Push(frame: [0x8C, 0x00] + le32(7) + [9, 8]).kind == .binary(tag: 7, data: [9, 8]))
        #expect(Push(frame: [0x8B, 0x00, 1, 2, 3, 4, 5, 6, 0x01, 0x74, 0x01, 0x9F]).kind
                == .telemetry(prefix: KeyPrefix(hex: "010203040506")!, lpp: [0x01, 0x74, 0x01, 0x9F]))
        #expect(Push(frame: [0x86, 0x00, 1, 2, 3, 4, 5, 6]).kind == .loginFail(KeyPrefix(hex: "010203040506")!))
        let advert = contactFrame(key: keyB, name: "bob", lastmod: 5, code: 0x8A)
        guard case .newAdvert(let c) = Push(frame: advert).kind else { Issue.record("not a new advert"); return }
        #expect(c.name == "bob" && c.publicKey == key && c.lastModified == 5)
        #expect(Push(frame: advert).frame == advert)
    }

    @Test func shortOrUnknownPushesAreKeptWhole() {
        #expect(Push(frame: [0x80, 1, 2]).kind == .other)
        #expect(Push(frame: [0x82, 1]).kind == .other)
        #expect(Push(frame: [0xF0, 1, 2]).kind == .other)
        #expect(Push(frame: [0xF0, 1, 2]).frame == [0xF0, 1, 2])
        #expect(Push(frame: [0xF0, 1, 2]).code == 0xF0)
    }
}
