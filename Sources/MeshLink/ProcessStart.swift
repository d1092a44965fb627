import Glibc

/// What every mode of the program (the command line, `daemon`, `node` in every role, `sim`) does
/// before anything else, in one place: `pocketmesh`'s `main` calls `begin()` first.
public enum ProcessStart {
    /// SIGPIPE is ignored: a write to a socket or pipe whose reader has gone fails with EPIPE,
    /// which the writer handles (a server drops that client), instead of the signal killing the
    /// whole process (every simulated radio of `pocketmesh sim`, a node and what it holds in
    /// memory). Socket writes also pass MSG_NOSIGNAL (`SocketOutput`, `FileDescriptor.send`), so a
    /// server in a process that did not come through here (a test runner) survives as well.
    /// Children get the default action back (the daemon's `Spawn` resets it before `exec`).
    public static func begin() {
        ignoreBrokenPipes()
    }

    public static func ignoreBrokenPipes() {
        signal(SIGPIPE, SIG_IGN)
    }
}
