import Testing
@testable import MeshStore

@Test func MeshStoreBuilds() { #expect(true) }
