import Testing
@testable import MeshCompanion

@Test func MeshCompanionBuilds() { #expect(true) }
