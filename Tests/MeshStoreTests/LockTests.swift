import Glibc
import Testing
@testable import MeshStore

/// The radio lock against processes that other threads of the same program start.
@Suite struct LockTests {
    /// The descriptor this process holds open on `path`, found through /proc/self/fd.
    func descriptor(of path: String) -> Int32? {
        guard let d = opendir("/proc/self/fd") else { return nil }
        defer { closedir(d) }
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let fd = Int32(name) else { continue }
            var buf = [CChar](repeating: 0, count: 4096)
            let n = readlink("/proc/self/fd/\(fd)", &buf, buf.count - 1)
            if n > 0, String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) == path { return fd }
        }
        return nil
    }

    /// A parallel test spawns a program while a store is open: between its fork and its exec the
    /// child holds a copy of every descriptor, the lock file's included. Here the child keeps that
    /// copy for good (dup2 clears close-on-exec), which makes the window as long as we like. The
    /// store closed and opened again in the meantime must still get its lock: the lock belongs to
    /// the process that took it, not to an open file description a child can inherit.
    @Test func aChildHoldingTheLockFileDoesNotHoldTheLock() throws {
        let dir = TempDir()
        var s = try RadioStore(directory: dir.radio)
        let fd = try #require(descriptor(of: dir.radio + "/lock"))

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, fd, 3)
        var pid: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("sleep"), strdup("30"), nil]
        defer { for a in argv { free(a) } }
        let rc = posix_spawnp(&pid, "sleep", &actions, nil, argv, environ)
        try #require(rc == 0)
        defer { kill(pid, SIGKILL); var st: Int32 = 0; waitpid(pid, &st, 0) }

        s.close()
        s = try RadioStore(directory: dir.radio)
        // Still one owner per radio inside this process.
        #expect(throws: StoreError.locked(path: dir.radio + "/lock", pid: getpid())) {
            _ = try RadioStore(directory: dir.radio)
        }
        s.close()
    }

    /// A second store refused in this process leaves the first one's lock in place (a POSIX lock
    /// is dropped by closing any descriptor of the file: the refusal must not open it).
    @Test func aRefusedSecondOpenKeepsTheFirstLock() throws {
        let dir = TempDir()
        let s = try RadioStore(directory: dir.radio)
        #expect(throws: StoreError.locked(path: dir.radio + "/lock", pid: getpid())) {
            _ = try RadioStore(directory: dir.radio)
        }
        // The kernel still holds this process's write lock on the file (seen through an open
        // file description lock query, which reports POSIX locks of any process).
        let fdOFDGetLock: Int32 = 36  // F_OFD_GETLK (Linux)
        let fd = open(dir.radio + "/lock", O_RDONLY | O_CLOEXEC)
        var l = flock()
        l.l_type = Int16(F_RDLCK)
        l.l_whence = Int16(SEEK_SET)
        #expect(fcntl(fd, fdOFDGetLock, &l) == 0)
        #expect(l.l_type == Int16(F_WRLCK))
        #expect(l.l_pid == getpid())
        s.close()
        close(fd)  // after the store: closing it first would drop the store's lock
    }
}
