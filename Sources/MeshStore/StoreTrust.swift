import Glibc

/// What the store will use of a state folder: everything in a radio's folder (and the folder
/// itself) must be a plain file or folder, owned by this process's user, and not writable by its
/// group or by others. Anything else may have been put there by someone else (a link to another
/// file, a log others can write or read through a link), so the store refuses to open rather than
/// follow or repair it: the error names the file and says what to do.
public enum StoreTrust {
    /// How deep folders may nest in a radio's folder (it holds two levels: `mqtt/<broker>/cursor`).
    static let maxDepth = 8

    /// Checks `directory` and everything below it (without following links).
    public static func checkTree(_ directory: String) throws {
        var pending: [(path: String, depth: Int)] = [(directory, 0)]
        while let (path, depth) = pending.popLast() {
            let isDirectory = try checkEntry(path)
            guard isDirectory else { continue }
            if depth >= maxDepth {
                throw StoreError.untrusted(path: path, problem: "is nested deeper than the store ever writes: remove it")
            }
            guard let d = opendir(path) else {
                throw StoreError.io(operation: "read the folder", path: path, errno: FileErrno(errno))
            }
            while let e = readdir(d) {
                let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name == "." || name == ".." { continue }
                pending.append((path + "/" + name, depth + 1))
            }
            closedir(d)
        }
    }

    /// Checks the state root (the folder holding the radios' folders): followed if it is a link
    /// (the user may keep it elsewhere), but it must be the user's and closed to others' writes,
    /// or they could swap a radio's folder for their own.
    public static func checkRoot(_ root: String) throws {
        var st = stat()
        guard stat(root, &st) == 0 else { throw StoreError.io(operation: "stat", path: root, errno: FileErrno(errno)) }
        guard st.st_mode & S_IFMT == S_IFDIR else {
            throw StoreError.untrusted(path: root, problem: "is not a folder: give the state folder (--state-dir) as a folder")
        }
        try checkOwnerAndMode(root, st)
    }

    /// One file or folder, not followed if it is a link. Returns whether it is a folder.
    static func checkEntry(_ path: String) throws -> Bool {
        var st = stat()
        guard lstat(path, &st) == 0 else {
            if errno == ENOENT { return false }  // removed meanwhile (a temporary file)
            throw StoreError.io(operation: "stat", path: path, errno: FileErrno(errno))
        }
        switch st.st_mode & S_IFMT {
        case S_IFLNK:
            throw StoreError.untrusted(path: path, problem: "is a symbolic link, which the state folder never holds "
                                       + "(someone else may have put it there): remove it")
        case S_IFDIR, S_IFREG:
            try checkOwnerAndMode(path, st)
            return st.st_mode & S_IFMT == S_IFDIR
        default:
            throw StoreError.untrusted(path: path, problem: "is neither a file nor a folder (the store never makes one): remove it")
        }
    }

    static func checkOwnerAndMode(_ path: String, _ st: stat) throws {
        let me = geteuid()
        if st.st_uid != me {
            throw StoreError.untrusted(path: path, problem: "belongs to user \(st.st_uid), not to this process's user \(me): "
                                       + "remove it, or if it is yours, give it to this user (chown \(me) \(path))")
        }
        let mode = UInt32(st.st_mode) & 0o7777
        if mode & 0o022 != 0 {
            throw StoreError.untrusted(path: path, problem: "can be written by other users (mode 0\(String(mode, radix: 8))): "
                                       + "close it to them (chmod go-w \(path)), or remove it if you did not make it so")
        }
    }
}
