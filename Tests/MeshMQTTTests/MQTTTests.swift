import Testing
@testable import MeshMQTT
