import Testing
@testable import MeshOps

@Suite struct TextSplitTests {
    @Test func aTextThatFitsIsOnePartUnnumbered() {
        #expect(TextSplit.split("hello there", limit: 160) == ["hello there"])
        let exact = String(repeating: "a", count: 160)
        #expect(TextSplit.split(exact, limit: 160) == [exact])
    }

    @Test(arguments: [20, 40, 150, 160])
    func partsFitAreNumberedAndCutAtSpaces(limit: Int) {
        let words = (1...200).map { "word\($0)" }
        let text = words.joined(separator: " ")
        let parts = TextSplit.split(text, limit: limit)
        #expect(parts.count > 1)
        for (i, p) in parts.enumerated() {
            #expect(p.utf8.count <= limit, "\(p)")
            #expect(p.hasPrefix("(\(i + 1)/\(parts.count)) "))
        }
        // Joined again, the words are all there, in order, none cut.
        let body = parts.map { String($0.drop { $0 != ")" }.dropFirst(2)) }
        #expect(body.joined(separator: " ").split(separator: " ").map(String.init) == words)
    }

    @Test func multiByteCharactersAreNeverCut() {
        let text = String(repeating: "日本語のテキスト😀", count: 40)  // no spaces at all
        let parts = TextSplit.split(text, limit: 50)
        for p in parts { #expect(p.utf8.count <= 50) }
        let body = parts.map { String($0.drop { $0 != ")" }.dropFirst(2)) }.joined()
        #expect(body == text)
    }

    @Test func moreThanNineParts() {
        let text = String(repeating: "abcdefghij ", count: 60)
        let parts = TextSplit.split(text, limit: 30)
        #expect(parts.count >= 10)
        #expect(parts.allSatisfy { $0.utf8.count <= 30 })
        #expect(parts.last!.hasPrefix("(\(parts.count)/\(parts.count)) "))
    }
}
