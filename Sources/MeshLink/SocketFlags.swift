import CMeshLink

/// Socket flag values for `send`/`recv`/`socket`, taken from the C headers through CMeshLink.
/// (Swift's Glibc module does not reliably export these enum constants.)
public enum SocketFlags {
    /// `MSG_NOSIGNAL`: a closed peer gives EPIPE instead of SIGPIPE.
    public static let noSignal = cml_msg_nosignal()
    /// `MSG_DONTWAIT`: this call only is non-blocking.
    public static let dontWait = cml_msg_dontwait()
    /// `SOCK_CLOEXEC` for `socket(2)`'s type argument.
    public static let closeOnExec = cml_sock_cloexec()
    /// `SOCK_NONBLOCK` for `socket(2)`'s type argument.
    public static let nonBlocking = cml_sock_nonblock()
}
