import MeshOps
import MeshLink
import CMeshLink
import Glibc
import MeshSession

/// `pocketmesh chat [NAME|CHANNEL]`: the interactive terminal chat.
struct ChatCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "chat")
    let args: OperationValues
    init(_ args: OperationValues) { self.args = args }
    var link: LinkOptions { LinkOptions(args) }
    var name: String? { args.string("name") }
    var stateDir: String? { args.string("state-dir") }

    func run(_ args: OperationValues) throws {
        guard isatty(0) == 1, isatty(1) == 1 else {
            throw ClientError.usage("chat needs a terminal (stdin and stdout are not one): use send, channel send and listen in scripts.")
        }
        let app = try ChatApp(target: link.target(), timeout: link.timeoutMilliseconds, stateDir: stateDir, open: name)
        try app.run()
    }
}

/// The controlling terminal in raw mode on the alternate screen, put back on every way out.
enum ChatTerminal {
    static let enter = "\u{1B}[?1049h\u{1B}[H\u{1B}[2J"
    static let leave = "\u{1B}[?25h\u{1B}[?1049l"

    static func start() throws(ClientError) {
        guard cml_terminal_raw(0, leave) == 0 else {
            throw .usage("cannot set up the terminal: \(String(cString: strerror(errno))).")
        }
        write(enter)
    }

    static func stop() { cml_terminal_restore() }

    static func size() -> (rows: Int, cols: Int) {
        var w = winsize()
        if ioctl(1, UInt(TIOCGWINSZ), &w) == 0, w.ws_row > 0, w.ws_col > 0 { return (Int(w.ws_row), Int(w.ws_col)) }
        return (24, 80)
    }

    static func write(_ s: String) {
        var bytes = Array(s.utf8)
        var off = 0
        while off < bytes.count {
            switch bytes.withUnsafeMutableBytes({ raw in retryingOnInterrupt { Glibc.write(1, raw.baseAddress! + off, raw.count - off) } }) {
            case .success(let n): off += n
            case .failure(.wouldBlock): continue
            case .failure: return
            }
        }
    }
}
