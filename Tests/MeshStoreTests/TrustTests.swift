import Glibc
import MeshCompanion
import Testing
@testable import MeshStore

/// The state folder is trusted only when it is the user's own: links, files others own or can
/// write are refused by name, never followed.
@Suite struct StateFolderTrustTests {
    func untrustedPath(_ body: () throws -> Void) -> String? {
        do { try body() } catch StoreError.untrusted(let path, _) { return path } catch { Issue.record("\(error)") }
        return nil
    }

    @Test func aSymbolicLinkIsRefusedAndItsTargetUntouched() throws {
        let dir = TempDir()
        var s: RadioStore? = try RadioStore(directory: dir.radio)
        try s!.saveChannels([StoredChannel(index: 1, name: "#x", secret: [UInt8](repeating: 7, count: 16))])
        s!.close()
        s = nil
        let target = dir.path + "/victim"
        writeBytes(target, Array("precious".utf8))
        unlink(dir.radio + "/channels")
        #expect(symlink(target, dir.radio + "/channels") == 0)
        #expect(untrustedPath { _ = try RadioStore(directory: dir.radio) } == dir.radio + "/channels")
        #expect(readBytes(target) == Array("precious".utf8))
        // Without a daemon, `chats` and `history` open the store read-only: the link is not followed.
        unlink(dir.radio + "/messages.log")
        writeBytes(dir.path + "/someone-elses.log", Array(repeating: 0x41, count: 100))
        #expect(symlink(dir.path + "/someone-elses.log", dir.radio + "/messages.log") == 0)
        #expect(throws: StoreError.self) { _ = try RadioStore(directory: dir.radio, options: StoreOptions(readOnly: true)) }
        do {
            _ = try RadioStore(directory: dir.radio, options: StoreOptions(readOnly: true))
        } catch {
            #expect("\(error)".contains("ELOOP") && "\(error)".contains("symbolic link"), "\(error)")
        }
    }

    @Test func aFileOthersCanWriteIsRefused() throws {
        let dir = TempDir()
        try RadioStore(directory: dir.radio).close()
        chmod(dir.radio + "/messages.log", 0o666)
        var message = ""
        do { _ = try RadioStore(directory: dir.radio) } catch { message = "\(error)" }
        #expect(message.hasPrefix(dir.radio + "/messages.log can be written by other users (mode 0666)"), "\(message)")
        #expect(message.contains("chmod go-w"))
        chmod(dir.radio + "/messages.log", 0o600)
        mkdir(dir.radio + "/mqtt", 0o777)
        chmod(dir.radio + "/mqtt", 0o777)
        #expect(untrustedPath { _ = try RadioStore(directory: dir.radio) } == dir.radio + "/mqtt")
        chmod(dir.radio + "/mqtt", 0o700)
        try RadioStore(directory: dir.radio).close()
    }

    @Test func aFileAnotherUserOwnsIsRefused() throws {
        guard geteuid() == 0 else { return }  // only root can give a file away
        let dir = TempDir()
        try RadioStore(directory: dir.radio).close()
        mkdir(dir.radio + "/hooks", 0o700)
        writeBytes(dir.radio + "/hooks/cursor", Array("0\n".utf8))
        #expect(chown(dir.radio + "/hooks/cursor", 65534, 65534) == 0)
        var message = ""
        do { _ = try RadioStore(directory: dir.radio) } catch { message = "\(error)" }
        #expect(message.hasPrefix(dir.radio + "/hooks/cursor belongs to user 65534, not to this process's user 0"), "\(message)")
        #expect(message.contains("chown 0 "))
    }

    @Test func aStateRootOthersCanWriteIsRefused() throws {
        let dir = TempDir()
        let root = dir.path + "/state"
        mkdir(root, 0o700)
        chmod(root, 0o777)
        #expect(untrustedPath { _ = try RadioStore(publicKey: [UInt8](repeating: 1, count: 32), stateDir: root) } == root)
        chmod(root, 0o700)
        try RadioStore(publicKey: [UInt8](repeating: 1, count: 32), stateDir: root).close()
        // Made 0700 when the store makes it.
        let fresh = dir.path + "/new/state"
        try RadioStore(publicKey: [UInt8](repeating: 1, count: 32), stateDir: fresh).close()
        #expect(fileMode(fresh) == 0o700 && fileMode(fresh + "/" + String(repeating: "01", count: 32)) == 0o700)
    }
}

/// Counters and cursors read from disk are checked: an id the store never issued is an error
/// naming the file, never a wrap or a trap.
@Suite struct StoredIdCheckTests {
    func putU64(_ path: String, _ v: UInt64) {
        var p: [UInt8] = []
        p.putU64(v)
        writeBytes(path, StateFile.encode(p))
    }

    @Test func aCursorPastTheStoresIdsNamesItsFile() throws {
        let dir = TempDir()
        var s = try RadioStore(directory: dir.radio)
        for i in 0..<3 { try s.append(incoming("m\(i)", ts: UInt32(i))) }
        s.close()
        let idsBefore = readBytes(dir.radio + "/ids")
        putU64(dir.radio + "/cursor-hub-app", UInt64.max)
        var caught: StoreError? = nil
        do { _ = try RadioStore(directory: dir.radio) } catch let e as StoreError { caught = e }
        guard case .outOfRange(let path, let value, _)? = caught else { Issue.record("\(String(describing: caught))"); return }
        #expect(path == dir.radio + "/cursor-hub-app" && value == UInt64.max)
        #expect("\(caught!)".contains("remove it"))
        #expect(readBytes(dir.radio + "/ids") == idsBefore, "a failed open rewrote the id ceiling")
        // A cursor among the issued ids is fine, and new ids stay above it.
        putU64(dir.radio + "/cursor-hub-app", 3)
        s = try RadioStore(directory: dir.radio)
        #expect(try s.append(incoming("m3", ts: 9)) == .stored(4))
        #expect(throws: StoreError.self) { try s.checkStoredId(UInt64.max, file: "x") }
        try s.checkStoredId(4, file: "x")
    }

    @Test func anIdCeilingPastAnyIdNamesItsFile() throws {
        let dir = TempDir()
        try RadioStore(directory: dir.radio).close()
        putU64(dir.radio + "/ids", UInt64.max)
        var caught: StoreError? = nil
        do { _ = try RadioStore(directory: dir.radio) } catch let e as StoreError { caught = e }
        guard case .outOfRange(let path, _, _)? = caught else { Issue.record("\(String(describing: caught))"); return }
        #expect(path == dir.radio + "/ids")
    }
}

/// A received message the log cannot take waits on disk, in room written in advance.
@Suite struct InboxTests {
    @Test func aMessageTheLogCannotTakeWaitsOnDiskAndReachesTheLog() throws {
        let dir = TempDir()
        let ops = FaultyFileOps()
        var s = try RadioStore(directory: dir.radio, options: StoreOptions(fileOps: ops))
        try s.append(incoming("one", ts: 1))
        #expect(s.canTakeMessage)
        ops.failWrite = .noSpace
        #expect(throws: StoreError.self) { try s.append(incoming("two", ts: 2)) }
        try s.hold(incoming("two", ts: 2))
        #expect(!s.canTakeMessage)
        #expect(s.heldMessages.map(\.textString) == ["two"])
        // A stop now (SIGTERM: the store is closed) loses nothing: the next opening stores it.
        let size = fileSize(dir.radio + "/inbox")
        s.close()
        s = try RadioStore(directory: dir.radio)
        #expect(fileSize(dir.radio + "/inbox") == size)
        #expect(s.heldMessages.isEmpty && s.canTakeMessage)
        #expect(try s.messages(after: 0, limit: 10).map(\.textString) == ["one", "two"])
        // Held twice (a crash between the log write and emptying the inbox): stored once.
        try s.hold(incoming("two", ts: 2))
        #expect(try s.storeHeld() == [.duplicate(2)])
        #expect(s.canTakeMessage)
    }
}
