import ArgumentParser
import Glibc
import MeshSession

/// The root command. Each subcommand lives in its own file.
struct PocketMesh: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pocketmesh",
        abstract: "Talk to a MeshCore companion radio over USB serial, TCP or BLE.",
        discussion: """
            Exit codes: 0 success, 2 usage error, 3 link failure (cannot open or connect, or the link was lost), \
            4 timeout (no response, no ACK), 5 the radio refused (its error code is named), 6 not found \
            (unknown contact or channel; `scan` found no radio).
            """,
        subcommands: [
            Info.self,
            Scan.self,
            Contacts.self,
            Send.self,
            Channel.self,
            Sync.self,
            Listen.self,
            Advert.self,
            Time.self,
            Get.self,
            Set.self,
            Battery.self,
            Stats.self,
            Login.self,
            Logout.self,
            Status.self,
            Telemetry.self,
            Neighbours.self,
            ACL.self,
            Cmd.self,
            Trace.self,
            Sign.self,
            Key.self,
            Reboot.self,
            FactoryReset.self,
            Raw.self,
            DaemonCommand.self, HooksCommand.self, ChatsCommand.self, HistoryCommand.self,
            DemoCommand.self,
            SimCommand.self, SimBenchCommand.self,
        ]
    )
}

@main
enum Main {
    static func main() {
        do {
            var command = try PocketMesh.parseAsRoot(linkOptionsFirst(Array(CommandLine.arguments.dropFirst())))
            try command.run()
            exit(0)
        } catch let e as ClientError {
            fail(e)
        } catch let e as ExitCode {
            exit(e.rawValue)
        } catch {
            let code = PocketMesh.exitCode(for: error)
            let message = PocketMesh.fullMessage(for: error)
            if code == .success {
                print(message)
                exit(0)
            }
            writeError(message.isEmpty ? "pocketmesh: \(error)" : message)
            exit(2)
        }
    }

    static func fail(_ e: ClientError) -> Never {
        writeError("pocketmesh: \(e.description)")
        exit(e.exitCode)
    }
}

/// Writes a message to stderr (made safe for the terminal: it may name things from the mesh).
func writeError(_ s: String) {
    var line = terminalSafe(s)
    if !line.hasSuffix("\n") { line += "\n" }
    _ = line.withCString { fputs($0, stderr) }
}

/// Writes one line to stdout and flushes (so JSON Lines reach pipes at once).
func emitLine(_ s: String) {
    print(s)
    fflush(stdout)
}

/// Writes human output: every name and text from the mesh reaches the terminal through here,
/// with control characters shown as visible escapes (`terminalSafe`). JSON goes to `emitLine`.
func emitHuman(_ s: String) {
    emitLine(terminalSafe(s))
}

/// Lets the link options come before the command (`pocketmesh --tcp host info`) by moving them
/// behind the (sub)command path, where every command declares them.
func linkOptionsFirst(_ args: [String]) -> [String] {
    let valued: Swift.Set<String> = ["-s", "--serial", "--baud", "-t", "--tcp", "--ble", "--ble-min-mtu", "--timeout"]
    let flags: Swift.Set<String> = ["-j", "--json"]
    var lead: [String] = []
    var i = 0
    while i < args.count {
        let a = args[i]
        let name = a.split(separator: "=", maxSplits: 1).first.map(String.init) ?? a
        if valued.contains(a), i + 1 < args.count {
            lead += [a, args[i + 1]]
            i += 2
        } else if a.contains(Character("=")), valued.contains(name) || flags.contains(name) {
            lead.append(a)
            i += 1
        } else if flags.contains(a) {
            lead.append(a)
            i += 1
        } else {
            break
        }
    }
    if lead.isEmpty { return args }
    var rest = Array(args[i...])
    var command: ParsableCommand.Type = PocketMesh.self
    var j = 0
    while j < rest.count,
          let sub = command.configuration.subcommands.first(where: {
              $0._commandName == rest[j] || $0.configuration.aliases.contains(rest[j])
          }) {
        command = sub
        j += 1
    }
    rest.insert(contentsOf: lead, at: j)
    return rest
}
