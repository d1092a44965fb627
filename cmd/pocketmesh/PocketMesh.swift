import Glibc
import MeshLink
import MeshSession

/// The root command. Each subcommand lives in its own file.
struct PocketMesh: ParsableCommand, Stateless {
    static let configuration = CommandConfiguration(
        commandName: "pocketmesh",
        version: PocketMeshVersion.string,
        subcommands: [
            // The commands that do more than run their row's request (the others are rows of
            // the table only: `RequestCommand`), and the groups of the tree.
            Scan.self,
            Contacts.self,
            Send.self,
            Channel.self,
            Sync.self,
            Listen.self,
            Time.self,
            Login.self,
            Logout.self,
            Key.self,
            ChatCommand.self, DaemonCommand.self, HooksCommand.self, ChatsCommand.self, HistoryCommand.self, SamplesCommand.self,
            ConfigCommand.self,
            OpsCommand.self, CompletionsCommand.self,
            DemoCommand.self,
            SimCommand.self, SimBenchCommand.self,
            NodeCommand.self,
        ])
}

@main
enum Main {
    static func main() {
        // Every mode (the command line, daemon, node, sim): SIGPIPE ignored before anything runs.
        ProcessStart.begin()
        do {
            switch try CommandParser.parse(Array(CommandLine.arguments.dropFirst())) {
            case .run(var command, let values):
                try command.run(values)
            case .help(let type, let path):
                print(HelpText.render(type, path: path), terminator: "")
            case .version:
                print(PocketMeshVersion.string)
            }
            exit(0)
        } catch let e as ClientError {
            fail(e)
        } catch let e as ExitCode {
            exit(e.rawValue)
        } catch let e as CleanExit {
            switch e {
            case .helpRequest(let t): print(HelpText.render(t.type, path: CommandParser.path(of: t.type)), terminator: "")
            case .message(let m): print(m)
            }
            exit(0)
        } catch let e as UsageError {
            usage(e.description)
        } catch let e as ValidationError {
            usage(e.message)
        } catch {
            // Not the command line's fault: an error of ours that no command mapped to its code is
            // a storage or system failure.
            writeError("pocketmesh: \(sentence("\(error)"))")
            exit(ErrorKind.storage.exitCode)
        }
    }

    /// One sentence (the usage summary is one `--help` away), exit 2.
    static func usage(_ message: String) -> Never {
        var line = message.split(separator: "\n").first.map(String.init) ?? message
        if let last = line.last, !".?!".contains(last) { line += "." }
        writeError("pocketmesh: \(line) See --help.")
        exit(2)
    }

    static func fail(_ e: ClientError) -> Never {
        writeError("pocketmesh: \(e.description)")
        exit(e.exitCode)
    }
}

/// `s` as one sentence: its first line, ending with a full stop.
func sentence(_ s: String) -> String {
    var line = s.split(separator: "\n").first.map(String.init) ?? s
    if let last = line.last, !".?!".contains(last) { line += "." }
    return line
}

/// Writes a message to stderr (made safe for the terminal: it may name things from the mesh).
func writeError(_ s: String) {
    var line = terminalSafe(s)
    if !line.hasSuffix("\n") { line += "\n" }
    _ = line.withCString { fputs($0, stderr) }
}

/// Writes one line to stdout and flushes (so JSON Lines reach pipes at once). When the reader
/// of stdout has gone (`pocketmesh listen | head -1`; SIGPIPE is ignored, so the write fails with
/// EPIPE), the command ends as it would have by the signal: nothing more is worth computing.
func emitLine(_ s: String) {
    print(s)
    if fflush(stdout) != 0 && errno == EPIPE { stdoutClosed() }
}

/// The reader of stdout went away: ends the command silently, as SIGPIPE's default action would.
func stdoutClosed() -> Never {
    signal(SIGPIPE, SIG_DFL)
    raise(SIGPIPE)
    exit(141)
}

/// Writes human output: every name and text from the mesh reaches the terminal through here,
/// with control characters shown as visible escapes (`terminalSafe`). JSON goes to `emitLine`.
func emitHuman(_ s: String) {
    emitLine(terminalSafe(s))
}
