import MeshCompanion
import Testing
@testable import MeshStore

/// Issue 35 in the store: the contacts table has a bound (the removed contacts heard from longest
/// ago make room; new ones past it are refused), and an outbox item keeps the door that queued it.
@Suite struct BoundsTests {
    func contact(_ i: Int, removed: Bool = false, at t: UInt32 = 0) -> StoredContact {
        var c = StoredContact(publicKey: [UInt8(i & 0xFF), UInt8(i >> 8), 9] + [UInt8](repeating: 3, count: 29), name: "c\(i)")
        c.removed = removed
        c.updatedAt = t
        return c
    }

    @Test func theContactsTableHasABound() throws {
        let dir = TempDir()
        let s = try RadioStore(directory: dir.radio)
        let limit = RadioStore.contactsLimit
        // Removed contacts fill half, live ones the rest.
        let refusedRemoved = try s.saveContacts((0..<(limit / 2)).map { contact($0, removed: true, at: UInt32(1_000 + $0)) })
        let refusedLive = try s.saveContacts((limit / 2..<limit).map { contact($0) })
        #expect(refusedRemoved == 0 && refusedLive == 0 && s.contacts.count == limit)
        // 10 new ones: the 10 removed contacts heard from longest ago make room.
        #expect(try s.saveContacts((limit..<(limit + 10)).map { contact($0) }) == 0)
        #expect(s.contacts.count == limit && s.contact(publicKey: contact(0).publicKey) == nil)
        #expect(s.contact(publicKey: contact(10).publicKey) != nil && s.contact(publicKey: contact(limit + 9).publicKey) != nil)
        // With only live contacts left, new ones are refused; changes to known ones still go in.
        _ = try s.saveContacts((0..<limit * 2).compactMap { i in s.contact(publicKey: contact(i).publicKey).map { c in var l = c; l.removed = false; return l } })
        let renamed = StoredContact(publicKey: contact(limit + 1).publicKey, name: "renamed")
        #expect(try s.saveContacts([renamed] + (20_000..<20_100).map { contact($0) }) == 100)
        #expect(s.contacts.count == limit && s.contact(publicKey: renamed.publicKey)?.name == "renamed")
        #expect(fileSize(dir.radio + "/contacts") <= limit * 256)
    }

    @Test func anOutboxItemKeepsItsDoor() throws {
        let dir = TempDir()
        let s = try RadioStore(directory: dir.radio)
        let m = StoredMessage(kind: .direct, direction: .outgoing, peer: KeyPrefix(sixOf: [1, 2, 3, 4, 5, 6]), senderTimestamp: 1, receivedAt: 1, text: Array("hi".utf8))
        _ = try s.enqueue(m, now: 1, origin: 2)
        _ = try s.enqueue(m, now: 1)
        #expect(s.outbox.map(\.origin) == [2, 0])
        s.close()
        let again = try RadioStore(directory: dir.radio)
        #expect(again.outbox.map(\.origin) == [2, 0])
    }
}
