import Glibc

/// The files this program takes orders or secrets from (the config file, a hook program, key,
/// password and CA files) must belong to its user or to root, and be closed to writes by their
/// group and by others: whoever can write one could run programs as this user, redirect it, or
/// read what it guards. (The state folder has its own, stricter rule: MeshStore's `StoreTrust`.)
public enum FileTrust {
    /// Why `path` (or the file open as `fd`) is not to be trusted, as a clause that names it and
    /// says what to do; nil when it may be used. A missing file is not this check's business (nil).
    public static func problem(_ path: String, fd: Int32? = nil) -> String? {
        var st = stat()
        let rc = fd.map { fstat($0, &st) } ?? stat(path, &st)
        guard rc == 0 else { return nil }
        return problem(path, st)
    }

    public static func problem(_ path: String, _ st: stat) -> String? {
        let me = geteuid()
        if st.st_uid != me && st.st_uid != 0 {
            return "\(path) belongs to user \(st.st_uid), not to this user (\(me)) or root: give it to this user (chown \(me) \(path)), or remove it if it is not yours"
        }
        let mode = UInt32(st.st_mode) & 0o7777
        if mode & 0o022 != 0 {
            return "\(path) can be written by \(mode & 0o002 != 0 ? "every user" : "its group") (mode 0\(String(mode, radix: 8))): close it (chmod go-w \(path))"
        }
        return nil
    }
}
