import Testing
@testable import MeshAir

@Test func MeshAirBuilds() { #expect(true) }
