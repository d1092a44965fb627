import Glibc
import MeshCompanion
import MeshLink
@testable import MeshDaemonClient
import Testing
@testable import MeshOps
@testable import MeshSession

/// Issue 35 in the session and the operations: a contact listing holds what the radio can hold,
/// `set pin` does not echo the PIN, every string a remote node chose prints on one line, and the
/// config file is refused when others can write it.
@Suite struct TrustBoundsTests {
    @Test func aContactListingKeepsWhatTheRadioCanHoldAndCountsTheRest() throws {
        let h = Harness.ready()
        #expect(h.s.contactsLimit == 100)  // deviceInfoFrame: max-contacts 50 × 2
        let t = try h.s.listContacts(now: h.now)
        h.feed([0x02] + le32(20_000))
        for i in 0..<20_000 {
            var key = keyA
            key[0] = UInt8(i & 0xFF)
            key[1] = UInt8(i >> 8)
            h.feed(contactFrame(key: key, name: "n\(i)", lastmod: 5))
        }
        h.feed([0x04] + le32(0))
        guard case .reply(let got, .contacts(let listing))? = h.takeEvents().last else { Issue.record("no listing"); return }
        #expect(got == t && listing.records.count == 100 && listing.refused == 19_900 && listing.total == 20_000)
    }

    @Test func aRadioThatSaysNothingOfItsSizeGetsTheCeiling() {
        let h = Harness()
        #expect(h.s.contactsLimit == CompanionLimits.contactsCeiling)
    }

    @Test func setPinDoesNotEchoThePIN() throws {
        let (radio, peer) = makePair(oneShot: true)
        defer { radio.loop.unregister(fd: peer.fd); Glibc.close(peer.fd) }
        try radio.connect(timeoutMilliseconds: 2_000)
        peer.answers[0x25] = [[0x00]]
        let v = try Executor(radio: radio, timeout: 500).execute(.set("pin", ["654321"])).value
        #expect(v["status"] == .string("ok") && v["setting"] == .string("pin"))
        #expect(!v.json.contains("654321"), "\(v.json)")
        #expect(peer.received.contains([0x25] + le32(654_321)))
    }

    @Test func everyStringPrintsOnOneLine() {
        let forged = "E\nab12cd34ef56  chat     0 hops   Bob"
        let v = Value.array([.object([("name", .string(forged)), ("path", .string("a\r\nb")), ("k\ney", .int(1))])])
        let text = v.oneLine.text()
        #expect(!text.contains("\n") && !text.contains("\r"), "\(text)")
        #expect(text.contains("E\\nab12cd34ef56"))
        // JSON is not touched.
        #expect(v.json.contains("E\\nab12"))
    }

    @Test func aConfigFileOthersCanWriteIsRefused() throws {
        var template = Array("/tmp/cfg-XXXXXX".utf8CString)
        let dir = String(cString: template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }!)
        let path = dir + "/config.toml"
        defer { unlink(path); rmdir(dir) }
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let text = Array("[radio.home]\ntcp = \"127.0.0.1:5000\"\n".utf8)
        _ = text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        #expect(try Config.load(path)?.radios.count == 1)
        chmod(path, 0o666)
        do {
            _ = try Config.load(path)
            Issue.record("a config file every user can write was read")
        } catch {
            #expect(error.exitCode == 2 && error.message.contains(path) && error.message.contains("chmod go-w"), "\(error)")
        }
        chmod(path, 0o620)
        #expect(throws: ClientError.self) { try Config.load(path) }
        chmod(path, 0o644)
        #expect(try Config.load(path) != nil)
    }

    @Test func fileTrustNamesTheFileAndWhatToDo() throws {
        var template = Array("/tmp/ft-XXXXXX".utf8CString)
        let dir = String(cString: template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }!)
        let path = dir + "/f"
        defer { unlink(path); rmdir(dir) }
        close(open(path, O_WRONLY | O_CREAT, 0o600))
        #expect(FileTrust.problem(path) == nil)
        chmod(path, 0o602)
        #expect(FileTrust.problem(path)?.hasPrefix(path + " can be written by every user") == true)
        #expect(FileTrust.problem(dir + "/missing") == nil)
    }
}
