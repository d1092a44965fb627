import Glibc
import MeshDaemonClient
import MeshLink
import MeshOps

extension Daemon {
    /// `--api-group`: the socket file goes to the group, mode 0660, and its folder lets the group
    /// in (0750, when it is the daemon's own; systemd's `RuntimeDirectoryMode=0750` does it for
    /// the service's /run/pocketmesh). Who gets what is decided per connection all the same
    /// (`APIGroup.admit`, SO_PEERCRED): the file's mode only lets the group knock.
    static func share(socket path: String, with g: APIGroup, log: (String) -> Void) throws(DaemonError) {
        if lchown(path, uid_t.max, g.group.gid) != 0 {
            let why = String(cString: strerror(errno)).lowercased()
            throw DaemonError(.usage, "--api-group \(g.group.name): cannot give the socket \(path) to group \(g.group.name) (\(why)); the daemon's user must be a member of that group (or root).")
        }
        if chmod(path, 0o660) != 0 {
            throw DaemonError(.storage, "--api-group \(g.group.name): cannot make the socket \(path) mode 0660 (\(String(cString: strerror(errno)).lowercased())).")
        }
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return }
        let dir = String(path[..<slash])
        // Through a descriptor that cannot follow a symbolic link: only the folder itself changes.
        let fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return }
        if st.st_uid == geteuid() {
            if st.st_gid != g.group.gid { _ = fchown(fd, uid_t.max, g.group.gid) }
            // Group read and search; nothing for others, no group write.
            let mode = (st.st_mode & 0o700) | 0o050
            if st.st_mode & 0o7777 != mode { _ = fchmod(fd, mode) }
            guard fstat(fd, &st) == 0 else { return }
        }
        // Every folder on the way must let the group through (a socket in a user's private
        // $XDG_RUNTIME_DIR cannot be shared): said once at start, not fixed (not ours to open).
        var path = dir
        while !path.isEmpty {
            var p = stat()
            if stat(path, &p) == 0, !((p.st_gid == g.group.gid && p.st_mode & 0o010 != 0) || p.st_mode & 0o001 != 0) {
                log("api: warning: members of group \(g.group.name) cannot reach the socket: \(path) is mode \(String(p.st_mode & 0o7777, radix: 8)), group \(p.st_gid) (for the service: RuntimeDirectoryMode=0750 and Group=\(g.group.name); else a --socket in a folder the group can enter)")
                break
            }
            guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { break }
            path = String(path[..<slash])
        }
    }
}
