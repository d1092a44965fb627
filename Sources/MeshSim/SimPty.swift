import Glibc

/// A raw pseudo-terminal for a simulated radio's serial port: the master is the simulator's side
/// (non-blocking, close-on-exec); a host opens the slave, at `path` or at the symlink `link`.
struct SimPty {
    let master: Int32
    /// The slave, when kept open here (-1 otherwise).
    let slave: Int32
    let path: String
    let link: String?

    /// `keepSlave`: hold the slave open too, so the master never reports a hangup between hosts;
    /// otherwise the master reports hangup until a host opens the slave.
    init(linkPath: String?, keepSlave: Bool) throws {
        var m: Int32 = -1, s: Int32 = -1
        guard openpty(&m, &s, nil, nil, nil) == 0 else { throw SimHostError.pty(errno: errno) }
        var t = termios()
        tcgetattr(s, &t)
        cfmakeraw(&t)
        tcsetattr(s, TCSANOW, &t)
        guard let name = ttyname(s) else { let e = errno; Glibc.close(m); Glibc.close(s); throw SimHostError.pty(errno: e) }
        path = String(cString: name)
        if let l = linkPath {
            unlink(l)
            guard symlink(path, l) == 0 else { let e = errno; Glibc.close(m); Glibc.close(s); throw SimHostError.symlink(path: l, errno: e) }
        }
        link = linkPath
        _ = fcntl(m, F_SETFL, fcntl(m, F_GETFL) | O_NONBLOCK)
        _ = fcntl(m, F_SETFD, FD_CLOEXEC)
        if keepSlave { _ = fcntl(s, F_SETFD, FD_CLOEXEC) } else { Glibc.close(s); s = -1 }
        master = m
        slave = s
    }

    /// Closes both ends and removes the link.
    func close() {
        Glibc.close(master)
        if slave >= 0 { Glibc.close(slave) }
        if let l = link { unlink(l) }
    }
}
