import Glibc
import MeshAir
import MeshCompanion
import MeshOps
import MeshSession
import MeshStore
import MeshTerminal

extension ChatApp {
    static let commands: [(name: String, usage: String)] = [
        ("/to", "/to NAME          talk to a contact, room, repeater or channel (Tab completes)"),
        ("/list", "/list             the conversations, with unread counts"),
        ("/login", "/login [PASSWORD] log in to this repeater or room (no password: the saved one)"),
        ("/logout", "/logout           log out of this repeater or room"),
        ("/status", "/status           this repeater's or room's status"),
        ("/cmd", "/cmd TEXT         a CLI command to this repeater (its reply is shown)"),
        ("/help", "/help             this list"),
        ("/quit", "/quit             leave (also Ctrl-D, Ctrl-C)"),
    ]

    func notice(_ text: String) {
        guard let c = model.current else { status = text.split(separator: "\n").first.map(String.init) ?? text; return }
        model.add(ChatEntry(kind: .notice, time: UInt32(truncatingIfNeeded: time(nil)), from: "", text: text), to: c)
        model.scrollBack = 0
    }

    /// A line typed and entered: a command, or a message to the current conversation.
    func submit(_ line: String) {
        if line.hasPrefix("/") && !line.hasPrefix("//") {
            command(line)
            return
        }
        let text = line.hasPrefix("//") ? String(line.dropFirst()) : line
        guard let c = model.current else { status = "no conversation open: /to NAME opens one."; return }
        if c.kind == .repeater || c.kind == .sensor {
            status = "\(c.name) is a \(c.kind.rawValue): it takes commands (/cmd TEXT, /status), not messages."
            return
        }
        let limit: Int
        if c.kind == .channel {
            let me = radio?.session.radioSelf?.name ?? ""
            limit = CompanionLimits.maxTextLength - me.utf8.count - 2
        } else {
            limit = CompanionLimits.maxTextLength
        }
        let parts = TextSplit.split(text, limit: max(16, limit))
        let now = UInt32(truncatingIfNeeded: time(nil))
        let initial = radio == nil ? "waiting for the radio" : "sending"
        let i = model.add(ChatEntry(kind: .outgoing, time: now, from: "me", text: text, states: parts.map { _ in initial }), to: c)
        model.scrollBack = 0
        if radio == nil { queued.append((c, i, parts)); return }
        transmit(c, entry: i, parts: parts)
    }

    /// Hands the parts of an entry to the session (none waits: states follow as events).
    func transmit(_ c: ChatConversation, entry i: Int, parts: [String]) {
        guard let r = radio else { queued.append((c, i, parts)); return }
        let base = UInt32(truncatingIfNeeded: time(nil))
        for (k, part) in parts.enumerated() {
            // Parts get distinct timestamps so that the recipient does not drop them as repeats.
            let ts = base &+ UInt32(k)
            do {
                if c.kind == .channel {
                    guard let idx = UInt8(c.id.dropFirst("channel:".count)) else { continue }
                    let t = try r.submit { s, now throws(Session.SubmitError) in try s.sendChannelText(index: idx, text: part, timestamp: ts, now: now) }
                    tracked[t] = Tracked(conversation: c, entry: i, part: k, storeId: storeOutgoing(c, part, ts))
                    if let ch = channels.first(where: { $0.index == idx }), let name = r.session.radioSelf?.name,
                       let secret = try? ChannelSecret(ch.secret),
                       let packet = try? Packet.groupText(GroupText(timestamp: ts, senderName: name, message: part), channel: secret) {
                        echoes.append(Echo(payload: packet.payload, conversation: c, entry: i, part: k, heard: 0))
                        if echoes.count > 32 { echoes.removeFirst() }
                    }
                } else {
                    guard let key = contacts.first(where: { id(of: $0.publicKey) == c.id })?.publicKey else {
                        c.update(i, part: k, state: "failed: \(c.name) is not among the radio's contacts")
                        continue
                    }
                    let t = try r.submit { s, now throws(Session.SubmitError) in try s.sendText(to: key, text: part, timestamp: ts, now: now) }
                    tracked[t] = Tracked(conversation: c, entry: i, part: k, storeId: storeOutgoing(c, part, ts))
                }
            } catch {
                c.update(i, part: k, state: "failed: " + error.message)
            }
        }
    }

    /// Records a sent message in the store (when the chat owns it); its id.
    func storeOutgoing(_ c: ChatConversation, _ text: String, _ ts: UInt32) -> UInt64? {
        guard storeWritable, let s = store, let t = thread(of: c) else { return nil }
        let kind: MessageKind = t.kind ?? .direct
        let m = StoredMessage(kind: kind, direction: .outgoing, peer: t.peer, channelIndex: t.channelIndex,
                              senderTimestamp: ts, receivedAt: ts, text: text)
        if case .stored(let id)? = try? s.append(m) { return id }
        return nil
    }

    func command(_ line: String) {
        let words = line.split(separator: " ", maxSplits: 1).map(String.init)
        let name = words[0].lowercased()
        let arg = words.count > 1 ? words[1].trimmingCharacters(in: " ") : ""
        switch name {
        case "/to", "/open":
            if arg.isEmpty { status = "/to NAME: give a contact, room or channel."; return }
            open(arg)
        case "/list":
            let list = model.conversations.sorted { $0.lastActivity > $1.lastActivity }
                .map { "\($0.name) (\($0.kind.rawValue))" + ($0.unread > 0 ? ": \($0.unread) unread" : "") }
            notice(list.isEmpty ? "no conversations yet." : list.joined(separator: "\n"))
        case "/help", "/?":
            notice(Self.commands.map(\.usage).joined(separator: "\n"))
        case "/quit", "/exit", "/q":
            quit = true
        case "/login", "/logout", "/status", "/cmd":
            remote(name, arg)
        default:
            status = "unknown command \(name): /help lists them (start a message with // to send a slash)."
        }
    }

    /// A command to the current repeater or room, waited for between loop turns.
    func remote(_ name: String, _ arg: String) {
        guard let c = model.current, c.kind != .channel else { status = "\(name) needs a repeater or room: /to NAME first."; return }
        guard let x = executor else { status = "not connected to the radio: \(name) has to wait until it is back."; return }
        guard let contact = contacts.first(where: { id(of: $0.publicKey) == c.id }) else {
            status = "\(c.name) is not among the radio's contacts."
            return
        }
        let key = HexCodec.encode(contact.publicKey)
        let request: Request
        switch name {
        case "/login":
            request = .login(key, password: arg.isEmpty ? (SavedPasswords.load()[key] ?? "") : arg)
        case "/logout": request = .logout(key)
        case "/status": request = .status(key)
        default:
            if arg.isEmpty { status = "/cmd TEXT: give the command, e.g. /cmd ver."; return }
            request = .command(key, text: arg)
        }
        status = "\(name.dropFirst()) \(c.name)…"
        draw()
        do {
            let outcome = try x.execute(request)
            notice(name.dropFirst() + " " + c.name + ":\n" + outcome.value.text())
            if let e = outcome.error { status = e.message } else {
                status = "\(name.dropFirst()) \(c.name): done."
                if name == "/login", !arg.isEmpty { try? SavedPasswords.save(key: key, password: arg) }
            }
        } catch {
            status = "\(name.dropFirst()) \(c.name) failed: \(error.message)"
        }
    }
}

extension String {
    func trimmingCharacters(in set: Character) -> String {
        var s = Substring(self)
        while s.first == set { s = s.dropFirst() }
        while s.last == set { s = s.dropLast() }
        return String(s)
    }
}
