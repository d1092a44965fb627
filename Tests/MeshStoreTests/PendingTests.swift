import Testing
@testable import MeshStore

@Suite struct PendingTests {
    func advert(_ i: Int, heard: UInt32) -> StoredContact {
        var c = StoredContact(publicKey: [UInt8(i & 0xFF), UInt8(i >> 8)] + [UInt8](repeating: 7, count: 30), name: "node \(i)",
                              lastAdvert: 1_700_000_000 + UInt32(i), latitude: 45_500_000, longitude: -73_600_000)
        c.updatedAt = heard
        return c
    }

    @Test func keptNewestFirstReplacedAndDropped() throws {
        let dir = TempDir()
        let s = try RadioStore(directory: dir.radio)
        try s.savePending(advert(1, heard: 100))
        try s.savePending(advert(2, heard: 200))
        try s.savePending(advert(1, heard: 300))  // heard again: one entry, newer
        #expect(s.pending.map(\.name) == ["node 1", "node 2"])
        #expect(s.pending.first?.latitude == 45_500_000 && s.pending.first?.updatedAt == 300)
        try s.dropPending(publicKey: advert(1, heard: 0).publicKey)
        #expect(s.pending.map(\.name) == ["node 2"])
        s.close()
        // Survives a reopen, and a read-only open sees it.
        let r = try RadioStore(directory: dir.radio, options: StoreOptions(readOnly: true))
        #expect(r.pending.map(\.name) == ["node 2"])
    }

    @Test func boundedToTheNewest() throws {
        let dir = TempDir()
        let s = try RadioStore(directory: dir.radio)
        for i in 0..<(RadioStore.pendingLimit + 20) { try s.savePending(advert(i, heard: UInt32(1000 + i))) }
        #expect(s.pending.count == RadioStore.pendingLimit)
        #expect(s.pending.last?.name == "node 20")
        #expect(fileSize(dir.radio + "/pending") <= (RadioStore.pendingLimit + 1) * 256)
    }
}
