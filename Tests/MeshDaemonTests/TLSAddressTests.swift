import CMeshTLS
import Testing

/// TLS to a broker given as an IP address: the certificate must name the address in a
/// subjectAltName iPAddress entry (CMeshTLS walks the extension's DER: mbedTLS 2.28 lists only
/// dNSName entries).
@Suite struct TLSAddressTests {
    /// Self-signed, made with openssl: subjectAltName DNS:broker.test, IP:127.0.0.1, IP:::1.
    static let withIPs = hex(
        "308201aa30820151a00302010202144a0e34ab963ac441c7669f3efc40174aa0726b7e300a06082a8648ce3d040302301231" +
        "10300e06035504030c0769702d74657374301e170d3236313132363032333732335a170d3336313132333032333732335a30" +
        "123110300e06035504030c0769702d746573743059301306072a8648ce3d020106082a8648ce3d03010703420004eb7fc0f4" +
        "3cd23f5f8611534f5d097eed909394956a4b822073ac9532c44543a19057dde18ca43a725e7eb440ea9d09a4590ca0f9c810" +
        "8c6b0bc6e7f71608e813a38184308181301d0603551d0e04160414d4099c7605461f2ec502fb6208e579cd8534197e301f06" +
        "03551d23041830168014d4099c7605461f2ec502fb6208e579cd8534197e300f0603551d130101ff040530030101ff302e06" +
        "03551d1104273025820b62726f6b65722e7465737487047f000001871000000000000000000000000000000001300a06082a" +
        "8648ce3d0403020347003044022038a7a7fa2df348ea71719a25aacc307b436d288dd0a48fdf965dc02c18532edc022073b1" +
        "f31866a6568ffe7c8f9a00edd9509e472b4185bc7c3282fac2478fd3daad"    )
    /// CN=127.0.0.1, subjectAltName DNS:127.0.0.1, DNS:localhost: the address as text only.
    static let withoutIPs = hex(
        "3082019d30820144a003020102021442974cdc5cbf35de0e5fcce07469763c3de50d28300a06082a8648ce3d040302301431" +
        "12301006035504030c093132372e302e302e31301e170d3236313132363032333732335a170d333631313233303233373233" +
        "5a30143112301006035504030c093132372e302e302e313059301306072a8648ce3d020106082a8648ce3d03010703420004" +
        "63ee74ebe45e5d41b7b0739cd3c06b4820ee8329cac8bcf2ce7ac26df34e52cfa23c891c0b3638edea7b47a103566b177b43" +
        "25b0847eb43ac7cac73ecdc0d13fa3743072301d0603551d0e041604141d227da2088ac8922f59643b804fcaad8344f55130" +
        "1f0603551d230418301680141d227da2088ac8922f59643b804fcaad8344f551300f0603551d130101ff040530030101ff30" +
        "1f0603551d110418301682093132372e302e302e3182096c6f63616c686f7374300a06082a8648ce3d040302034700304402" +
        "20037248f8ec4254fc7b984e70f58f2a08acc5466e9d888a01abdc5993a89a3fd6022062e5a143ef18cd8a44f74488fb19ee" +
        "5cb8711d95b9c7ed8191fdf628843734f5"    )

    static func hex(_ s: String) -> [UInt8] {
        var out: [UInt8] = []
        var i = s.startIndex
        while i < s.endIndex {
            let j = s.index(i, offsetBy: 2)
            out.append(UInt8(s[i..<j], radix: 16)!)
            i = j
        }
        return out
    }

    @Test func anIPAddressMustBeAnIPAddressSubjectAltName() {
        func names(_ der: [UInt8], _ ip: String) -> Int32 { der.withUnsafeBufferPointer { meshtls_certificate_names_ip($0.baseAddress, $0.count, ip) } }
        #expect(names(Self.withIPs, "127.0.0.1") == 1)
        #expect(names(Self.withIPs, "::1") == 1)
        #expect(names(Self.withIPs, "127.0.0.2") == 0)
        #expect(names(Self.withIPs, "::2") == 0)
        // The address written as a DNS name or the CN does not count.
        #expect(names(Self.withoutIPs, "127.0.0.1") == 0)
        #expect(names(Self.withIPs, "broker.test") == -1)
        #expect(names(Array(Self.withIPs.prefix(100)), "127.0.0.1") == -1)
    }
}
