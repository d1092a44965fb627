import Testing
import Glibc
@testable import MeshBridge

/// A broker's socket address, byte for byte: family (host order), port (network order), the
/// address; IPv6's flow information and scope are zero.
@Suite struct BrokerAddressTests {
    func socketAddress(_ text: String, port: UInt16) -> [UInt8] {
        var storage = sockaddr_storage()
        let length = BrokerAddress.literal(text)!.socketAddress(port: port, into: &storage)
        return withUnsafeBytes(of: &storage) { Array($0.prefix(Int(length))) }
    }

    @Test func ipv4() {
        #expect(socketAddress("192.168.1.2", port: 1883) == [0x02, 0x00, 0x07, 0x5B, 192, 168, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0])
    }

    @Test func ipv6() {
        #expect(socketAddress("2001:db8::1", port: 8883) == [0x0A, 0x00, 0x22, 0xB3, 0, 0, 0, 0,
                                                            0x20, 0x01, 0x0D, 0xB8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
                                                            0, 0, 0, 0])
    }
}
