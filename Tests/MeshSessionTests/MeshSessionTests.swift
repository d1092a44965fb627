import Testing
@testable import MeshSession

@Test func MeshSessionBuilds() { #expect(true) }
