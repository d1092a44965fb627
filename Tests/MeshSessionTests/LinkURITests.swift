import MeshCompanion
import MeshSession
import Testing
@testable import MeshOps

/// Links that are not MeshCore links, or lack a part (a list of its own: Swift 6.0 crashes on
/// string interpolations inside the `@Test` attribute).
private let badLinks: [String] = {
    let key = String(repeating: "ab", count: 32)
    return ["", "meshcore://", "meshcore://abc", "meshcore://contact/add?name=&public_key=\(key)",
            "meshcore://contact/add?name=x&public_key=12", "meshcore://contact/add?name=%zz&public_key=\(key)",
            "meshcore://channel/add?name=x", "meshcore://channel/add?name=\(String(repeating: "n", count: 32))&secret=\(String(repeating: "00", count: 16))",
            "meshcore://other/thing", "ftp://x", "abcd"]
}()

@Suite struct LinkURITests {
    let key = String(repeating: "ab", count: 32)

    @Test func channelLinksRoundTrip() throws {
        let secret: [UInt8] = Array(0..<16)
        let link = MeshLinkURI.channel(name: "Team Ops & Co/ü", secret: secret)
        #expect(link.text == "meshcore://channel/add?name=Team%20Ops%20%26%20Co%2F%C3%BC&secret=000102030405060708090a0b0c0d0e0f")
        #expect(try MeshLinkURI.parse(link.text) == link)
        #expect(try MeshLinkURI.parse("meshcore://channel/add?name=a+b&secret=" + String(repeating: "00", count: 16))
                == .channel(name: "a b", secret: [UInt8](repeating: 0, count: 16)))
    }

    @Test func contactLinks() throws {
        let parsed: MeshCompanion.PublicKey? = MeshCompanion.PublicKey(hex: key)
        let k = try #require(parsed)
        #expect(try MeshLinkURI.parse("meshcore://contact/add?name=Bob&public_key=\(key)&type=2") == .contact(name: "Bob", publicKey: k, type: 2))
        #expect(try MeshLinkURI.parse("  MESHCORE://contact/add?public_key=\(key)&name=Bob  ") == .contact(name: "Bob", publicKey: k, type: 1))
        let advert = [UInt8](repeating: 7, count: 120)
        #expect(try MeshLinkURI.parse("meshcore://" + HexCodec.encode(advert)) == .contactCard(advert: advert))
        #expect(try MeshLinkURI.parse(HexCodec.encode(advert)) == .contactCard(advert: advert))
    }

    @Test(arguments: badLinks)
    func badLinksAreUsageErrors(text: String) {
        #expect(throws: ClientError.self) { try MeshLinkURI.parse(text) }
    }
}
