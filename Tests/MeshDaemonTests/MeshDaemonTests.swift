import Testing
@testable import MeshDaemon

@Test func MeshDaemonBuilds() { #expect(true) }
