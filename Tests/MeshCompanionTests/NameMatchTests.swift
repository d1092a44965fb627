import Testing
@testable import MeshCompanion

/// One rule for naming a contact, used by the command line, the daemon's API and history.
@Suite struct NameMatchTests {
    let names = ["Alice", "alice2", "Bob's Room", "Carol", "carol"]
    let keys: [[UInt8]] = [[0xA1, 0x11], [0xA1, 0x22], [0xB0, 0xB1], [0xC0, 0x01], [0xC0, 0x02]]

    func find(_ q: String) -> NameMatch { NameMatch.find(q, names: names, keys: keys) }

    @Test func exactNameFirst() {
        #expect(find("Alice") == .one(0))
        #expect(find("Carol") == .one(3))
        #expect(find("carol") == .one(4))
    }

    @Test func caseInsensitiveWhenUnique() {
        #expect(find("ALICE") == .one(0))
        #expect(find("bob's room") == .one(2))
        #expect(find("CAROL") == .ambiguous(count: 2))
    }

    @Test func hexKeyPrefix() {
        #expect(find("b0") == .one(2))
        #expect(find("B0B1") == .one(2))
        #expect(find("a1") == .ambiguous(count: 2))
        #expect(find("a12") == .one(1))
        #expect(find("c001") == .one(3))
        #expect(find("c0010000") == .none)  // longer than the key
    }

    @Test func startOfANameWhenUnique() {
        #expect(find("bob") == .one(2))
        #expect(find("ali") == .ambiguous(count: 2))
        #expect(find("alice2") == .one(1))
        #expect(find("zed") == .none)
        #expect(find("") == .none)
    }
}
