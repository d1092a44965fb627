import Testing
@testable import MeshCompanion

@Suite struct FramingTests {
    @Test func deviceQueryOnTheWire() throws {
        #expect(CommandFrame.deviceQuery(appTargetVersion: 3).wireBytes(.toRadio) == hex("3C 02 00 16 03"))
        #expect(try FrameEncoder.encode([0x16, 0x03], marker: .toRadio) == hex("3C0200 1603"))
    }

    @Test func frameSplitAtEveryBoundary() throws {
        let frames: [EncodedFrame] = [
            PushFrame.messageWaiting(),
            try ResponseFrame.contact(Contact(publicKey: keyA, name: "alice")),
            PushFrame.sendConfirmed(SendConfirmed(ack: 0xAABBCCDD, roundTripMs: 1234)),
        ]
        var stream: [UInt8] = Array("garbage > text\r\n".utf8)
        for f in frames { stream += f.wireBytes(.fromRadio) }
        for cut in 0...stream.count {
            let d = FrameDecoder(side: .client)
            var got: [[UInt8]] = []
            d.append(Array(stream[0..<cut]))
            d.drain { got.append(Array($0)) }
            d.append(Array(stream[cut...]))
            d.drain { got.append(Array($0)) }
            #expect(got == frames.map(\.bytes), "cut at \(cut)")
        }
        // byte by byte
        let d = FrameDecoder(side: .client)
        var got: [[UInt8]] = []
        for b in stream { d.append([b]); d.drain { got.append(Array($0)) } }
        #expect(got == frames.map(\.bytes))
    }

    @Test func zeroLengthIgnoredAndOversizedResyncOnClient() {
        let d = FrameDecoder(side: .client)
        // '>' 00 00 (empty), then '>' FF 00 (255, oversized: garbage), then a real frame
        d.append(hex("3E0000 3EFF00 3E0100 83"))
        var got: [[UInt8]] = []
        d.drain { got.append(Array($0)) }
        #expect(got == [[0x83]])
        #expect(d.emptyFrames == 1)
        #expect(d.oversizedFrames == 1)
    }

    /// A stray header (marker and length, no body) must not swallow the replies after it.
    @Test(arguments: [1, 5, 64, 176])
    func strayHeaderIsSkippedWhenTheNextFrameStarts(length: Int) {
        let replies: [EncodedFrame] = [ResponseFrame.ok(), PushFrame.messageWaiting(),
                                       PushFrame.sendConfirmed(SendConfirmed(ack: 0x01020304, roundTripMs: 77))]
        var stream: [UInt8] = [0x3E, UInt8(length & 0xFF), UInt8(length >> 8)]
        for f in replies { stream += f.wireBytes(.fromRadio) }
        for step in [stream.count, 1] {  // all at once, and byte by byte
            let d = FrameDecoder(side: .client)
            var got: [[UInt8]] = []
            var i = 0
            while i < stream.count {
                d.append(Array(stream[i..<min(i + step, stream.count)]))
                d.drain { got.append(Array($0)) }
                i += step
            }
            #expect(got == replies.map(\.bytes), "length \(length), step \(step)")
            #expect(d.resyncs == 1)
        }
    }

    /// A header whose body stops coming is given up when bytes arrive after the stall timeout,
    /// even when what follows it is not a frame marker at once.
    @Test func stalledHeaderIsSkippedWhenLaterBytesArrive() {
        let d = FrameDecoder(side: .client)
        var got: [[UInt8]] = []
        ([0x3E, 0x20, 0x00, 0x05] as [UInt8]).withUnsafeBytes { d.receive($0, now: 1_000) { got.append(Array($0)) } }
        let later = Array("\r\n".utf8) + ResponseFrame.ok().wireBytes(.fromRadio)
        later.withUnsafeBytes { d.receive($0, now: 1_500) { got.append(Array($0)) } }  // within the timeout: still waiting
        #expect(got.isEmpty)
        let more = ResponseFrame.ok().wireBytes(.fromRadio)
        more.withUnsafeBytes { d.receive($0, now: 2_100) { got.append(Array($0)) } }
        #expect(got == [ResponseFrame.ok().bytes, ResponseFrame.ok().bytes])
        // A body that arrives in pieces within the timeout is a frame as always.
        let e = FrameDecoder(side: .client)
        let f = PushFrame.sendConfirmed(SendConfirmed(ack: 9, roundTripMs: 1)).wireBytes(.fromRadio)
        var n = 0
        for (k, b) in f.enumerated() { [b].withUnsafeBytes { e.receive($0, now: UInt64(k * 100)) { _ in n += 1 } } }
        #expect(n == 1 && e.resyncs == 0)
    }

    @Test func oversizedTruncatedOnDevice() {
        let d = FrameDecoder(side: .device)
        var stream: [UInt8] = [0x3C, 200, 0]
        stream += (0..<200).map { UInt8(truncatingIfNeeded: $0) }
        stream += CommandFrame.syncNextMessage().wireBytes(.toRadio)
        var got: [[UInt8]] = []
        stream.withUnsafeBytes { raw in d.receive(raw) { got.append(Array($0)) } }
        #expect(got.count == 2)
        #expect(got.first?.count == 176)
        #expect(got.last == [0x0A])
    }

    @Test func rescueCliTextIsSkipped() {
        let d = FrameDecoder(side: .client)
        d.append(Array("========= CLI Rescue =========\r\n> help\r\n> ".utf8))
        d.append(PushFrame.contactsFull().wireBytes(.fromRadio))
        var got: [[UInt8]] = []
        d.drain { got.append(Array($0)) }
        #expect(got == [[0x90]])
    }

    @Test func wrapsAroundTheRing() {
        let d = FrameDecoder(side: .client)
        let f = PushFrame.sendConfirmed(SendConfirmed(ack: 1, roundTripMs: 2)).wireBytes(.fromRadio)
        var n = 0
        for _ in 0..<2000 {
            d.append(f)
            d.drain { n += 1; #expect($0.count == 9) }
        }
        #expect(n == 2000)
    }

    @Test func largeAppendIsFullyConsumedByReceive() {
        let d = FrameDecoder(side: .client)
        var stream: [UInt8] = []
        for _ in 0..<1000 { stream += PushFrame.messageWaiting().wireBytes(.fromRadio) }
        var n = 0
        stream.withUnsafeBytes { d.receive($0) { _ in n += 1 } }
        #expect(n == 1000)
    }

    /// The read-into-the-ring path: a "link" that hands out its bytes in reads of any size,
    /// straight into the ring (wrapping around it many times), gives the same frames as appending.
    @Test(arguments: [1, 3, 7, 64, 500, 4096])
    func readsStraightIntoTheRing(readSize: Int) throws {
        var wire: [UInt8] = []
        var expected: [[UInt8]] = []
        for i in 0..<300 {
            // A response code first (never the marker byte, as on a real radio), then any bytes.
            let payload = [UInt8(i % 0x30)] + (0..<(i % 176)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ i) }
            expected.append(payload)
            wire += try FrameEncoder.encode(payload, marker: .fromRadio)
        }
        let d = FrameDecoder(side: .client)
        var got: [[UInt8]] = []
        var offset = 0
        var reads = 0
        while offset < wire.count {
            let n = d.receive(now: 0, reading: { room in
                let k = min(room.count, readSize, wire.count - offset)
                wire.withUnsafeBytes { src in room.copyMemory(from: UnsafeRawBufferPointer(rebasing: src[offset ..< offset + k])) }
                offset += k
                return k
            }) { got.append(Array($0)) }
            reads += 1
            #expect(n > 0 || offset == wire.count, "the ring always has room after its frames are taken")
            if reads > 1_000_000 { break }
        }
        #expect(got.count == expected.count)
        #expect(got.elementsEqual(expected), "same frames, in order")
        #expect(d.bufferedCount == 0 && d.garbageBytes == 0)
    }

    /// A header whose body stalls is skipped as stray when a later read comes in, as on the
    /// copying path.
    @Test func readPathSkipsAStalledHeader() throws {
        let d = FrameDecoder(side: .client)
        var got: [[UInt8]] = []
        let stray: [UInt8] = [0x3E, 0x05, 0x00]
        let frame = try FrameEncoder.encode([0x00], marker: .fromRadio)
        func feed(_ bytes: [UInt8], at t: UInt64) {
            d.receive(now: t, reading: { room in
                bytes.withUnsafeBytes { room.copyMemory(from: $0) }
                return bytes.count
            }) { got.append(Array($0)) }
        }
        feed(stray, at: 0)
        feed(frame, at: 5_000)
        #expect(got == [[0x00]])
    }
}
