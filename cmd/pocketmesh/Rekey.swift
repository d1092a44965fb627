import MeshAir
import MeshCompanion
import MeshOps
import MeshSession

/// `channel rekey NAME --members A,B,…`: a new random secret for a channel, set on the radio, and
/// sent to each member as the channel's link by direct message; reports who acknowledged.
struct Rekey: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "rekey")
    let args: OperationValues
    init(_ args: OperationValues) { self.args = args }
    var link: LinkOptions { LinkOptions(args) }
    var channel: String { args.string("channel") ?? "" }
    var members: String { args.string("members") ?? "" }

    func run(_ args: OperationValues) throws {
        let names = members.split(separator: ",").map { $0.trimmingCharacters() }.filter { !$0.isEmpty }
        guard !names.isEmpty else { throw ClientError.usage("give --members A,B,… (at least one contact).") }
        let radio = try link.connect(drain: false)
        let executor = Executor(radio: radio, timeout: link.timeoutMilliseconds)
        let c = try executor.resolveChannel(channel, inUse: true)
        let people = try names.map { n throws(ClientError) in try executor.resolve(n) }
        let secret = SecureRandom.bytes(count: 16)  // the kernel's generator (libsodium's randombytes)
        let set = try executor.execute(.channelSet(index: Int(c.index), name: c.name, secret: HexCodec.encode(secret), hashtag: false))
        if let e = set.error { throw e }
        let uri = MeshLinkURI.channel(name: c.name, secret: secret).text
        var results: [Value] = []
        var missing: [String] = []
        for p in people {
            let o: Outcome
            do throws(ClientError) { o = try executor.execute(.send(to: HexCodec.encode(p.publicKey.prefix(6)), text: uri, wait: true)) } catch {
                o = Outcome(.null, error: error)
            }
            let acked = o.error == nil && o.value["status"]?.stringValue == "acked"
            if !acked { missing.append(p.name) }
            results.append(.object([("name", .string(p.name)), ("acked", .bool(acked)),
                                    ("attempts", o.value["attempts"] ?? .null)]))
            if !link.json { emitHuman("\(terminalSafeLine(p.name)): \(acked ? "acked" : "no ACK (\(o.error?.message ?? "not acknowledged"))")") }
        }
        if link.json {
            emitLine(Value.object([("channel", .int(c.index)), ("name", .string(c.name)), ("uri", .string(uri)),
                                   ("members", .array(results))]).json)
        } else {
            emitHuman("channel \(c.index) (\(terminalSafeLine(c.name))) has a new secret: \(uri)")
        }
        if !missing.isEmpty {
            throw ClientError.timeout("\(missing.joined(separator: ", ")) did not acknowledge the new secret: send the link again with `pocketmesh send NAME '\(uri)'`.")
        }
    }
}

extension Substring {
    func trimmingCharacters() -> String {
        var s = self
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " { s = s.dropLast() }
        return String(s)
    }
}
