import Testing
@testable import MeshLink

@Test func MeshLinkBuilds() { #expect(true) }
