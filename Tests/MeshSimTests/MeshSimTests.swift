import Testing
@testable import MeshSim

@Test func MeshSimBuilds() { #expect(true) }
