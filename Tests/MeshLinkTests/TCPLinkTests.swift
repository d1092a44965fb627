import Glibc
import Testing
@testable import MeshLink

@Suite struct TCPLinkTests {
    @Test func addressParsing() throws {
        #expect(try TCPAddress(parsing: "radio.local") == TCPAddress(host: "radio.local", port: 5000))
        #expect(try TCPAddress(parsing: "10.0.0.5:4403") == TCPAddress(host: "10.0.0.5", port: 4403))
        #expect(try TCPAddress(parsing: "[::1]:6000") == TCPAddress(host: "::1", port: 6000))
        #expect(try TCPAddress(parsing: "[fe80::1%eth0]") == TCPAddress(host: "fe80::1%eth0", port: 5000))
        #expect(try TCPAddress(parsing: "::1") == TCPAddress(host: "::1", port: 5000))
        #expect(TCPAddress(host: "::1", port: 7).description == "[::1]:7")
        for bad in ["", ":5000", "host:", "host:0", "host:70000", "host:abc", "[::1", "[::1]x"] {
            #expect(throws: LinkError.self) { _ = try TCPAddress(parsing: bad) }
        }
        do {
            _ = try TCPAddress(parsing: "host:70000")
        } catch {
            #expect(error.isUsageError)
        }
    }

    @Test func roundTripOnLoopback() throws {
        let listener = try LoopbackListener()
        defer { listener.close() }
        let link = try TCPLink(connectingTo: TCPAddress(host: "127.0.0.1", port: listener.port), timeoutMilliseconds: 2000)
        defer { link.close() }
        let peer = listener.accept()
        #expect(peer >= 0)
        defer { Glibc.close(peer) }
        var nodelay: Int32 = 0
        var length = socklen_t(4)
        getsockopt(link.fd, Int32(IPPROTO_TCP), TCP_NODELAY, &nodelay, &length)
        #expect(nodelay == 1)
        var keepalive: Int32 = 0
        getsockopt(link.fd, SOL_SOCKET, SO_KEEPALIVE, &keepalive, &length)
        #expect(keepalive == 1)

        let query: [UInt8] = [0x3C, 0x02, 0x00, 0x16, 0x03]
        try link.write(query)
        #expect(readAll(peer, count: query.count) == query)
        let reply: [UInt8] = [0x3E, 0x01, 0x00, 0x00]
        let before = link.lastReceiveMs
        sendAll(peer, reply)
        #expect(try receive(from: link, count: reply.count) == reply)
        #expect(link.lastReceiveMs >= before)
        #expect(link.idleMilliseconds(now: link.lastReceiveMs + 250) == 250)
    }

    @Test func localhostNameResolves() throws {
        let listener = try LoopbackListener()
        defer { listener.close() }
        // "localhost" may resolve to ::1 first; the IPv4 listener is found after a refusal.
        let link = try TCPLink(connectingTo: TCPAddress(parsing: "localhost:\(listener.port)"), timeoutMilliseconds: 2000)
        link.close()
    }

    @Test func closedPortIsRefused() throws {
        let listener = try LoopbackListener()
        let port = listener.port
        listener.close()
        let address = TCPAddress(host: "127.0.0.1", port: port)
        #expect(throws: LinkError.refused(address.description)) {
            _ = try TCPLink(connectingTo: address, timeoutMilliseconds: 2000)
        }
    }

    /// Names are found without glibc's resolver: /etc/hosts first (any of a line's names, any
    /// case), then DNS to resolv.conf's servers; a server that refuses is passed over at once.
    @Test func namesFromTheHostsFileThenDNS() throws {
        var template = Array("/tmp/pm-resolve-XXXXXX".utf8CString)
        let dir = String(cString: try #require(mkdtemp(&template)))
        defer { unlink(dir + "/hosts"); unlink(dir + "/resolv.conf"); rmdir(dir) }
        try StateFile.write(dir + "/hosts", "127.0.0.1 localhost\n# 10.9.9.9 radio\n127.0.0.7 Radio.Lan radio\n::1 v6only\n")
        try StateFile.write(dir + "/resolv.conf", "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n")
        let found = try TCPLink.resolve(TCPAddress(host: "RADIO", port: 5000), hostsPath: dir + "/hosts", resolvConf: dir + "/resolv.conf")
        #expect(found.map(\.description) == ["127.0.0.7"])
        #expect(try TCPLink.resolve(TCPAddress(host: "v6only", port: 1), hostsPath: dir + "/hosts", resolvConf: dir + "/resolv.conf").map(\.description) == ["::1"])
        // Not listed: DNS to 127.0.0.1 on a port where nothing listens, refused at once.
        let start = monotonicMilliseconds()
        #expect(throws: LinkError.unresolved("elsewhere", reason: "127.0.0.1: Connection refused")) {
            _ = try TCPLink.resolve(TCPAddress(host: "elsewhere", port: 1), hostsPath: dir + "/hosts", resolvConf: dir + "/resolv.conf", dnsPort: 9)
        }
        #expect(monotonicMilliseconds() - start < 900)
    }

    @Test func unknownHostIsUnresolved() {
        #expect {
            _ = try TCPLink(connectingTo: TCPAddress(host: "no-such-host.invalid", port: 5000), timeoutMilliseconds: 500)
        } throws: { error in
            if case .unresolved? = error as? LinkError { return true }
            return false
        }
    }

    /// A listener whose accept queue is full drops further SYNs on Linux, so connect hangs:
    /// the connect timeout fires without leaving loopback.
    @Test func connectTimeout() throws {
        let listener = try LoopbackListener(backlog: 0)
        defer { listener.close() }
        let address = TCPAddress(host: "127.0.0.1", port: listener.port)
        var fillers: [TCPLink] = []
        defer { fillers.forEach { $0.close() } }
        var failure: LinkError? = nil  // checked after the loop: Swift 6.0 crashes on `#expect` inside this typed catch
        for _ in 0..<4 {
            do {
                fillers.append(try TCPLink(connectingTo: address, timeoutMilliseconds: 300))
            } catch {
                failure = error
                break
            }
        }
        #expect(failure == .timeout(address.description, milliseconds: 300))
    }

    @Test func peerCloseIsLinkLost() throws {
        let listener = try LoopbackListener()
        defer { listener.close() }
        let link = try TCPLink(connectingTo: TCPAddress(host: "127.0.0.1", port: listener.port), timeoutMilliseconds: 2000)
        defer { link.close() }
        let peer = listener.accept()
        sendAll(peer, [0x3E, 0x01, 0x00, 0x00])
        Glibc.close(peer)
        var received: [UInt8] = []
        var failure: LinkError? = nil
        let loop = PollLoop()
        loop.attach(link, onReceive: { received += $0 }, onError: { failure = $0; loop.stop() })
        #expect(loop.run(until: monotonicMilliseconds() + 2000) == .stopped)
        #expect(received == [0x3E, 0x01, 0x00, 0x00])  // bytes before the close are delivered
        guard case .lost = failure else {
            Issue.record("expected .lost, got \(String(describing: failure))")
            return
        }
    }

    @Test func errorMessagesAreOneSentence() {
        let errors: [LinkError] = [
            .refused("127.0.0.1:5000"), .timeout("10.0.0.9:5000", milliseconds: 5000),
            .unreachable("10.0.0.9:5000", .networkUnreachable), .busy("/dev/ttyUSB0"),
            .lost("127.0.0.1:5000", reason: "the radio closed the connection"),
            .unsupported("Bluetooth", reason: "this kernel has no Bluetooth support (EAFNOSUPPORT)"),
        ]
        for error in errors {
            let text = error.description
            #expect(text.hasSuffix("."))
            #expect(!text.dropLast().contains(". "))
        }
        #expect(LinkError.timeout("x", milliseconds: 5000).description.contains("5 s"))
    }
}

@Suite struct LinkEndpointTests {
    @Test func parsing() throws {
        #expect(try LinkEndpoint(serial: "/dev/ttyUSB0", baud: nil, tcp: nil, ble: nil)
                == .serial(path: "/dev/ttyUSB0", speed: .default, modemLines: .deassert))
        #expect(try LinkEndpoint(serial: "auto", baud: 921_600, tcp: nil, ble: nil)
                == .serialAuto(speed: SerialSpeed(baud: 921_600)!, modemLines: .deassert))
        #expect(try LinkEndpoint(serial: nil, baud: nil, tcp: "[::1]", ble: nil) == .tcp(TCPAddress(host: "::1", port: 5000)))
        #expect(try LinkEndpoint(serial: nil, baud: nil, tcp: nil, ble: "00:11:22:33:44:55/random")
                == .ble(BLEAddress(bytes: [0, 0x11, 0x22, 0x33, 0x44, 0x55], type: .randomAddress), security: .medium))
        for (serial, baud, tcp) in [(nil, nil, nil), ("/dev/x", nil, "h"), ("/dev/x", 1200, nil), ("/dev/x", 12345, nil)] as [(String?, Int?, String?)] {
            #expect {
                _ = try LinkEndpoint(serial: serial, baud: baud, tcp: tcp, ble: nil)
            } throws: { ($0 as? LinkError)?.isUsageError == true }
        }
    }

    @Test func blueToothTargetOnThisMachine() throws {
        let probe = socket(AF_BLUETOOTH, Int32(SOCK_SEQPACKET.rawValue), 0)
        if probe >= 0 { close(probe); return }
        let target = try LinkEndpoint(serial: nil, baud: nil, tcp: nil, ble: "00:11:22:33:44:55")
        #expect {
            _ = try target.open(timeoutMilliseconds: 500)
        } throws: { error in
            guard case .unsupported? = error as? LinkError else { return false }
            return !(error as! LinkError).isUsageError
        }
    }

    @Test func serialAutoWithoutDevices() throws {
        let fake = FakeSysfs()
        let target = try LinkEndpoint(serial: "auto", baud: nil, tcp: nil, ble: nil)
        #expect {
            _ = try target.open(discovery: .sysfs(sys: fake.sys, dev: fake.dev))
        } throws: { error in
            guard case .noRadio? = error as? LinkError else { return false }
            return true
        }
    }
}
