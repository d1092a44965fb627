import Glibc
import MeshDaemonClient

/// The write end of the self-pipe; read only by the signal handler.
nonisolated(unsafe) private var signalPipeWriteFD: Int32 = -1

private func signalPipeHandler(_ signo: Int32) {
    let saved = errno
    var b = UInt8(truncatingIfNeeded: signo)
    _ = write(signalPipeWriteFD, &b, 1)
    errno = saved
}

/// Turns signals into readable bytes on a pipe, so the poll loop sees them (the self-pipe trick;
/// Glibc's module map does not expose `signalfd`). One per process.
public final class SignalPipe {
    public let readFD: Int32
    private let writeFD: Int32
    private let signals: [Int32]

    public init(signals: [Int32]) throws(SystemError) {
        guard let fds = UnixSocket.makePipe(nonBlocking: true) else { throw SystemError("pipe") }
        readFD = fds.read
        writeFD = fds.write
        self.signals = signals
        signalPipeWriteFD = writeFD
        for s in signals {
            var sa = sigaction()
            sa.__sigaction_handler.sa_handler = signalPipeHandler
            sigemptyset(&sa.sa_mask)
            sa.sa_flags = SA_RESTART | (s == SIGCHLD ? SA_NOCLDSTOP : 0)
            sigaction(s, &sa, nil)
        }
    }

    deinit {
        for s in signals { signal(s, SIG_DFL) }
        signalPipeWriteFD = -1
        close(readFD)
        close(writeFD)
    }

    /// Reads every pending signal number (each delivery once; repeated signals may coalesce).
    public func drain() -> [Int32] {
        var out: [Int32] = []
        var buf = [UInt8](repeating: 0, count: 64)
        while true {
            let n = buf.withUnsafeMutableBytes { read(readFD, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            for i in 0..<n where !out.contains(Int32(buf[i])) { out.append(Int32(buf[i])) }
        }
        return out
    }
}
