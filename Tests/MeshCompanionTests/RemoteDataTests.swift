import Testing
@testable import MeshCompanion

/// Byte-exact layouts of the data inside binary requests to remote nodes and of their answers.
@Suite struct RemoteDataTests {
    @Test func neighboursRequestLayout() {
        // type 0x06, version 0, count, offset u16 LE, order, prefix length, nonce u32 LE
        #expect(RemoteRequestData.neighbours(offset: 0x0102, count: 255, prefixLength: 6, nonce: 0xDDCC_BBAA)
                == [0x06, 0x00, 0xFF, 0x02, 0x01, 0x00, 0x06, 0xAA, 0xBB, 0xCC, 0xDD])
        #expect(RemoteRequestData.accessList() == [0x05, 0x00])
    }

    @Test func neighbourPageFromBinaryResponse() throws {
        // BINARY_RESPONSE: code, reserved, tag u32; then total 3, count 2, and two 6+4+1 entries.
        let frame: [UInt8] = [0x8C, 0x00, 0x01, 0x02, 0x03, 0x04, 0x03, 0x00, 0x02, 0x00,
                              0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0x3C, 0x00, 0x00, 0x00, 0x28,
                              0xB1, 0xB2, 0xB3, 0xB4, 0xB5, 0xB6, 0x10, 0x0E, 0x00, 0x00, 0xF8]
        let page = try #require(NeighbourPage(frame: frame, prefixLength: 6))
        #expect(page.total == 3)
        #expect(page.entries == [NeighbourEntry(prefix: [0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6], secondsAgo: 60, snrQuarterDb: 40),
                                 NeighbourEntry(prefix: [0xB1, 0xB2, 0xB3, 0xB4, 0xB5, 0xB6], secondsAgo: 3600, snrQuarterDb: -8)])
        // A count that claims more entries than the data holds is refused, not read past the end.
        #expect(NeighbourPage(frame: Array(frame.dropLast()), prefixLength: 6) == nil)
        // Not a binary response.
        #expect(NeighbourPage(frame: [0x00], prefixLength: 6) == nil)
    }

    @Test func accessListEntries() {
        let frame: [UInt8] = [0x8C, 0x00, 9, 9, 9, 9, 1, 2, 3, 4, 5, 6, 0x03, 7, 8, 9, 10, 11, 12, 0x01, 0xEE]
        #expect(AccessListEntry.list(frame: frame) == [AccessListEntry(prefix: [1, 2, 3, 4, 5, 6], permissions: 3),
                                                      AccessListEntry(prefix: [7, 8, 9, 10, 11, 12], permissions: 1)])
    }

    @Test func traceHopsWithTwoByteHashes() throws {
        // flags 1: 2-byte hashes; 4 path bytes = 2 hops, so 2 SNRs; then the final SNR.
        let f = try PushFrame.traceData(tag: 7, authCode: 0, flags: 1, pathHashes: [0x11, 0x22, 0x33, 0x44],
                                        pathSNRs: [0x14, 0xF0], finalSNRQuarterDb: 12)
        let t = try #require(TraceResult(frame: Array(f.bytes)))
        #expect(t.tag == 7 && t.hashSize == 2)
        // Hop i's hash starts at byte i × hash size (not at byte i).
        #expect(t.hops == [TraceResult.Hop(hash: [0x11, 0x22], snrQuarterDb: 20), TraceResult.Hop(hash: [0x33, 0x44], snrQuarterDb: -16)])
        #expect(t.finalSNRQuarterDb == 12)
    }
}

@Suite struct NewRequestLayoutTests {
    @Test func minMaxAvgRequestBytes() {
        #expect(RemoteRequestData.minMaxAvg(fromSecondsAgo: 3600, toSecondsAgo: 60)
                == [0x04, 0x10, 0x0E, 0x00, 0x00, 0x3C, 0x00, 0x00, 0x00, 0x00, 0x00])
    }

    @Test func runCLICommandBytes() throws {
        #expect(try CommandFrame.runCLICommand("ver").bytes == [0x42, 0x76, 0x65, 0x72])
        #expect(throws: CompanionEncodeError.self) { try CommandFrame.runCLICommand("v") }  // the firmware wants 2 bytes
        #expect(ContactFlags.telemetry == 0x0E && ContactFlags.favourite == 0x01 && ContactFlags.remoteCLI == 0x10)
    }
}
