import Glibc
import MeshErrno

/// The file system calls the store makes. `SystemFileOps` calls Glibc; tests inject failures
/// (ENOSPC, EIO, short writes) by wrapping it.
public protocol FileOps: AnyObject {
    /// `open(2)`. Returns the descriptor. `SystemFileOps` never follows a symbolic link in the last
    /// part of the path of a file (`O_NOFOLLOW`): a link planted in the state folder is an error
    /// (ELOOP), not a way to make the store read or write another file.
    func open(_ path: String, flags: Int32, mode: UInt32) throws(FileErrno) -> Int32
    func close(_ fd: Int32)
    /// `pread(2)` until `buffer` is full or end of file; returns the bytes read.
    func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws(FileErrno) -> Int
    /// `pwrite(2)` of all of `bytes` at `offset`.
    func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws(FileErrno)
    /// `fdatasync(2)` (`dataOnly`) or `fsync(2)`.
    func sync(_ fd: Int32, dataOnly: Bool) throws(FileErrno)
    /// `ftruncate(2)`.
    func truncate(_ fd: Int32, to length: UInt64) throws(FileErrno)
    /// `fstat(2)` size.
    func size(_ fd: Int32) throws(FileErrno) -> UInt64
    /// `rename(2)`.
    func rename(_ from: String, _ to: String) throws(FileErrno)
    /// `unlink(2)`.
    func unlink(_ path: String) throws(FileErrno)
    /// `mkdir(2)`; an existing directory is not an error.
    func makeDirectory(_ path: String, mode: UInt32) throws(FileErrno)
    /// `fchmod(2)`.
    func setMode(_ fd: Int32, _ mode: UInt32) throws(FileErrno)
    /// `fcntl(fd, F_SETLK, F_WRLCK)` over the whole file: false if another process holds it.
    /// A POSIX record lock belongs to the process, not to the open file description, so a child
    /// forked by another thread (between its `clone` and its `exec`) never holds it, as it would
    /// hold a `flock`. It also means this process must not close any other descriptor of the
    /// file while it holds the lock: `RadioLock` keeps that rule.
    func lockExclusive(_ fd: Int32) throws(FileErrno) -> Bool
    /// `access(path, F_OK)`.
    func exists(_ path: String) -> Bool
}

public final class SystemFileOps: FileOps {
    public init() {}

    public func open(_ path: String, flags: Int32, mode: UInt32) throws(FileErrno) -> Int32 {
        // Directories are only opened to fsync them; the state folder itself is checked by
        // `StoreTrust` (a link above it, e.g. a linked home folder, is the user's choice).
        let nofollow = flags & O_DIRECTORY == 0 ? O_NOFOLLOW : 0
        return try system { Glibc.open(path, flags | O_CLOEXEC | nofollow, mode_t(mode)) }
    }

    public func close(_ fd: Int32) { _ = Glibc.close(fd) }

    public func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws(FileErrno) -> Int {
        var done = 0
        while done < buffer.count {
            let n = try system { pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done)) }
            if n == 0 { break }
            done += n
        }
        return done
    }

    public func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws(FileErrno) {
        var done = 0
        while done < bytes.count {
            let n = try system { pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done)) }
            if n == 0 { throw FileErrno(EIO) }
            done += n
        }
    }

    public func sync(_ fd: Int32, dataOnly: Bool) throws(FileErrno) {
        _ = try system { dataOnly ? fdatasync(fd) : fsync(fd) }
    }

    public func truncate(_ fd: Int32, to length: UInt64) throws(FileErrno) {
        _ = try system { ftruncate(fd, off_t(length)) }
    }

    public func size(_ fd: Int32) throws(FileErrno) -> UInt64 {
        var st = stat()
        if fstat(fd, &st) != 0 { throw FileErrno(errno) }
        return UInt64(st.st_size)
    }

    public func rename(_ from: String, _ to: String) throws(FileErrno) {
        if Glibc.rename(from, to) != 0 { throw FileErrno(errno) }
    }

    public func unlink(_ path: String) throws(FileErrno) {
        if Glibc.unlink(path) != 0 { throw FileErrno(errno) }
    }

    public func makeDirectory(_ path: String, mode: UInt32) throws(FileErrno) {
        if mkdir(path, mode_t(mode)) != 0 && errno != EEXIST { throw FileErrno(errno) }
    }

    public func setMode(_ fd: Int32, _ mode: UInt32) throws(FileErrno) {
        if fchmod(fd, mode_t(mode)) != 0 { throw FileErrno(errno) }
    }

    public func lockExclusive(_ fd: Int32) throws(FileErrno) -> Bool {
        var l = flock()
        l.l_type = Int16(F_WRLCK)
        l.l_whence = Int16(SEEK_SET)
        l.l_start = 0
        l.l_len = 0
        switch retryingOnInterrupt({ fcntl(fd, F_SETLK, &l) }) {
        case .success: return true
        case .failure(.wouldBlock), .failure(.permissionDenied): return false
        case .failure(let error): throw FileErrno(error.rawValue)
        }
    }

    public func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// MeshErrno's `sys` (EINTR retried there, the one place it is), failing with the store's `FileErrno`.
    @inline(__always)
    private func system<T: FixedWidthInteger>(_ body: () -> T) throws(FileErrno) -> T {
        do throws(Errno) { return try sys(body) } catch { throw FileErrno(error.rawValue) }
    }
}

/// File helpers that attach the path and operation to errors.
struct Files {
    let ops: FileOps

    func open(_ path: String, _ flags: Int32, _ mode: UInt32 = 0o644) throws -> Int32 {
        do { return try ops.open(path, flags: flags, mode: mode) } catch { throw StoreError.io(operation: "open", path: path, errno: error) }
    }
    func read(_ fd: Int32, _ path: String, into b: UnsafeMutableRawBufferPointer, at o: UInt64) throws -> Int {
        do { return try ops.read(fd, into: b, at: o) } catch { throw StoreError.io(operation: "read", path: path, errno: error) }
    }
    func write(_ fd: Int32, _ path: String, _ b: UnsafeRawBufferPointer, at o: UInt64) throws {
        do { try ops.write(fd, b, at: o) } catch { throw StoreError.io(operation: "write to", path: path, errno: error) }
    }
    func write(_ fd: Int32, _ path: String, _ b: [UInt8], at o: UInt64) throws {
        try b.withUnsafeBytes { try write(fd, path, $0, at: o) }
    }
    func sync(_ fd: Int32, _ path: String, dataOnly: Bool = true) throws {
        do { try ops.sync(fd, dataOnly: dataOnly) } catch { throw StoreError.io(operation: "fsync", path: path, errno: error) }
    }
    func truncate(_ fd: Int32, _ path: String, to n: UInt64) throws {
        do { try ops.truncate(fd, to: n) } catch { throw StoreError.io(operation: "truncate", path: path, errno: error) }
    }
    func size(_ fd: Int32, _ path: String) throws -> UInt64 {
        do { return try ops.size(fd) } catch { throw StoreError.io(operation: "stat", path: path, errno: error) }
    }
    func rename(_ a: String, _ b: String) throws {
        do { try ops.rename(a, b) } catch { throw StoreError.io(operation: "rename \(a) to", path: b, errno: error) }
    }
    func makeDirectory(_ path: String, mode: UInt32) throws {
        do { try ops.makeDirectory(path, mode: mode) } catch { throw StoreError.io(operation: "create directory", path: path, errno: error) }
    }
    func unlinkIfPresent(_ path: String) {
        try? ops.unlink(path)
    }

    /// Reads a whole (small) file, or nil if it does not exist.
    func readFile(_ path: String) throws -> [UInt8]? {
        let fd: Int32
        do { fd = try ops.open(path, flags: O_RDONLY, mode: 0) } catch {
            if error.code == ENOENT { return nil }
            throw StoreError.io(operation: "open", path: path, errno: error)
        }
        defer { ops.close(fd) }
        let n = Int(try size(fd, path))
        var out = [UInt8](repeating: 0, count: n)
        let got = try out.withUnsafeMutableBytes { p in try read(fd, path, into: p, at: 0) }
        if got < n { out.removeLast(n - got) }
        return out
    }

    /// fsync of a directory, so that a rename or a new file in it is durable.
    func syncDirectory(_ dir: String) throws {
        let fd = try open(dir, O_RDONLY | O_DIRECTORY, 0)
        defer { ops.close(fd) }
        try sync(fd, dir, dataOnly: false)
    }

    /// Replaces `path` atomically: write `path.tmp`, fsync, rename over `path`, fsync the directory.
    func writeAtomically(_ path: String, _ bytes: [UInt8], mode: UInt32 = 0o644, syncDir: Bool = true) throws {
        try writeAtomically(path, mode: mode, syncDir: syncDir) { try $0.write(bytes) }
    }

    /// The same, with the content written in pieces by `produce` (no copy of large content).
    func writeAtomically(_ path: String, mode: UInt32 = 0o644, syncDir: Bool = true,
                         produce: (SequentialWriter) throws -> Void) throws {
        let tmp = path + ".tmp"
        let fd = try open(tmp, O_WRONLY | O_CREAT | O_TRUNC, mode)
        do {
            do { try ops.setMode(fd, mode) } catch { throw StoreError.io(operation: "chmod", path: tmp, errno: error) }
            let w = SequentialWriter(files: self, fd: fd, path: tmp)
            try produce(w)
            try w.flush()
            try sync(fd, tmp, dataOnly: false)
        } catch {
            ops.close(fd)
            unlinkIfPresent(tmp)
            throw error
        }
        ops.close(fd)
        do { try rename(tmp, path) } catch { unlinkIfPresent(tmp); throw error }
        if syncDir { try syncDirectory(parentDirectory(path)) }
    }
}

/// Writes a file front to back through a 64 KiB buffer; large pieces go straight to pwrite.
final class SequentialWriter {
    let files: Files
    let fd: Int32
    let path: String
    var offset: UInt64 = 0
    var buffer: [UInt8] = []
    static let chunk = 64 * 1024

    init(files: Files, fd: Int32, path: String) {
        self.files = files; self.fd = fd; self.path = path
        buffer.reserveCapacity(Self.chunk)
    }

    func write(_ p: UnsafeRawBufferPointer) throws {
        if buffer.count + p.count > Self.chunk { try flush() }
        if p.count >= Self.chunk {
            try files.write(fd, path, p, at: offset)
            offset += UInt64(p.count)
        } else {
            buffer.append(contentsOf: p)
        }
    }

    func write(_ b: [UInt8]) throws { try b.withUnsafeBytes { try write($0) } }

    func flush() throws {
        guard !buffer.isEmpty else { return }
        try files.write(fd, path, buffer, at: offset)
        offset += UInt64(buffer.count)
        buffer.removeAll(keepingCapacity: true)
    }
}

func parentDirectory(_ path: String) -> String {
    guard let i = path.lastIndex(of: "/") else { return "." }
    if i == path.startIndex { return "/" }
    return String(path[..<i])
}
