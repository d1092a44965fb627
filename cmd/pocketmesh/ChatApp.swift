import Glibc
import MeshAir
import MeshCompanion
import MeshLink
import MeshOps
import MeshSession
import MeshStore
import MeshTerminal
import MeshDaemonClient

/// The chat's one loop: the keyboard, the radio (direct or through a daemon's tunnel), signals.
/// Sends do not wait: each message's delivery state is updated in place as the session reports it.
/// Commands that wait for a remote node (/login, /status, /cmd) run between loop turns, with the
/// keyboard still read while they wait.
final class ChatApp {
    let target: LinkTarget
    let timeout: UInt64
    let stateDir: String?
    let loop = PollLoop()
    let model = ChatModel()
    var editor = LineEditor()
    var keys = KeyDecoder()
    var screen: ChatScreen
    var radio: Radio?
    var executor: Executor?
    var contacts: [ContactSummary] = []
    var channels: [ChannelSummary] = []
    var store: RadioStore?
    var storeWritable = false
    var throughDaemon = false
    var linkState = "connecting"
    var status = "Type to send; /help for commands; Ctrl-D leaves."
    var actions: [() -> Void] = []
    var quit = false
    var pendingOpen: String?
    var retryDelayMs: UInt64 = 1_000
    var retryTimer: PollLoop.TimerID?
    var started = false

    /// An outgoing message part waiting for its fate.
    struct Tracked {
        var conversation: ChatConversation
        var entry: Int
        var part: Int
        var storeId: UInt64?
        var attempts = 0
    }
    var tracked: [Ticket: Tracked] = [:]
    /// Channel sends whose echoes (repeaters sending them on) are being counted.
    struct Echo { var payload: [UInt8]; var conversation: ChatConversation; var entry: Int; var part: Int; var heard: Int }
    var echoes: [Echo] = []
    /// Messages typed while no radio is connected: sent when it is back.
    var queued: [(ChatConversation, Int, [String])] = []

    init(target: LinkTarget, timeout: UInt64, stateDir: String?, open: String?) throws(ClientError) {
        self.target = target
        self.timeout = timeout
        self.stateDir = stateDir
        self.pendingOpen = open
        let (r, c) = ChatTerminal.size()
        screen = ChatScreen(rows: r, cols: c)
    }

    // MARK: - running

    func run() throws(ClientError) {
        do { try loop.handleSignals([SIGINT, SIGTERM, SIGHUP, SIGWINCH]) } catch {}
        // The first connection must work (a wrong address is a usage error, not something to wait for).
        try connect()
        if let n = pendingOpen, model.find(n).isEmpty {
            throw .notFound("no contact, room or channel named \"\(n)\": run `pocketmesh contacts` or `pocketmesh channel list`.")
        }
        try ChatTerminal.start()
        defer { ChatTerminal.stop() }
        started = true
        loop.register(fd: 0, events: .readable) { [unowned self] ev in self.readKeys(ev) }
        if let n = pendingOpen { open(n) } else if let c = model.conversations.max(by: { $0.lastActivity < $1.lastActivity }) { select(c) }
        pendingOpen = nil
        draw()
        while !quit {
            if !actions.isEmpty {
                let a = actions.removeFirst()
                a()
                draw()
                continue
            }
            switch loop.run() {
            case .signal(let n): _ = signal(n)
            case .idle: quit = true
            default: break
            }
            if let r = radio, r.linkError != nil { lost() }
        }
    }

    /// A signal: a resize redraws; the others end the chat. True to go on.
    func signal(_ n: Int32) -> Bool {
        if n == SIGWINCH {
            let (r, c) = ChatTerminal.size()
            screen = ChatScreen(rows: r, cols: c)
            draw()
            return true
        }
        quit = true
        return false
    }

    // MARK: - the radio

    func connect() throws(ClientError) {
        let link = try target.openDirectOrThroughDaemon(timeoutMilliseconds: Int(timeout))
        throughDaemon = link is DaemonTunnelLink
        var config = SessionConfig()
        config.commandTimeout = timeout
        config.drainOnStart = true
        config.drainOnWaiting = true
        config.forwardLogRx = true
        let r = Radio(link: link, config: config, loop: loop)
        r.onEvent = { [unowned self] e in self.event(e) }
        r.onSignal = { [unowned self] n in self.signal(n) }
        radio = r
        do {
            try r.connect(timeoutMilliseconds: timeout)
            let x = Executor(radio: r, timeout: timeout)
            contacts = try x.contacts()
            channels = try x.channelList().filter { !$0.isEmpty }
            executor = x
        } catch {
            radio = nil
            executor = nil
            throw error
        }
        refreshConversations()
        openStore(r)
        linkState = (throughDaemon ? "through the daemon: " : "") + (r.session.radioSelf?.name ?? "radio")
        retryDelayMs = 1_000
        for (c, i, parts) in queued { transmit(c, entry: i, parts: parts) }
        queued.removeAll()
    }

    /// The link went away: every message in flight is reported, then reconnection is tried with
    /// a growing pause (1 s up to 10 s).
    func lost() {
        let why = radio?.linkError.map { "\($0)" } ?? "the link closed"
        radio = nil
        executor = nil
        echoes.removeAll()
        for (_, t) in tracked { t.conversation.update(t.entry, part: t.part, state: "failed: the radio went away") }
        tracked.removeAll()
        // The store is let go with the link: a daemon that takes the radio over must be able to open it.
        if storeWritable { store?.close(); store = nil; storeWritable = false }
        linkState = "radio lost (\(why)); reconnecting"
        scheduleReconnect()
        draw()
    }

    func scheduleReconnect() {
        guard retryTimer == nil else { return }
        retryTimer = loop.addTimer(after: retryDelayMs) { [unowned self] in
            self.retryTimer = nil
            self.actions.append { [unowned self] in self.reconnect() }
            self.loop.stop()
        }
        retryDelayMs = min(retryDelayMs * 2, 10_000)
    }

    func reconnect() {
        linkState = "reconnecting"
        draw()
        do {
            try connect()
            status = "connected again."
        } catch {
            linkState = "radio unreachable (\(error.message)); retrying in \(retryDelayMs / 1000) s"
            scheduleReconnect()
        }
    }

    /// The store of this radio: written when the chat talks to the radio itself (it takes the
    /// messages off the radio), read-only when a daemon owns it (the daemon stores them).
    func openStore(_ r: Radio) {
        guard let key = r.session.radioSelf?.publicKey.bytes, let root = try? StoreLocation.stateRoot(stateDir: stateDir) else { return }
        if store != nil { return }
        let dir = StoreLocation.radioDirectory(stateRoot: root, publicKey: key)
        if !throughDaemon {
            _ = mkdir(root, 0o700)
            if let s = try? RadioStore(directory: dir) {
                store = s; storeWritable = true
                // The radio's contacts name the threads for `history`; it finds this store by the link.
                _ = try? s.saveContacts(contacts.map(StoredContact.init(summary:)))
                if let spec = target.daemonLinkSpec { StoreLinks.remember(stateRoot: root, link: spec, publicKey: key) }
                loadHistory()
                return
            }
        }
        if let s = try? RadioStore(directory: dir, options: MeshStore.StoreOptions(readOnly: true)) { store = s; loadHistory() }
    }

    // MARK: - conversations

    func id(of key: [UInt8]) -> String { "key:" + HexCodec.encode(Array(key.prefix(6))) }

    func kind(_ type: UInt8) -> ChatConversation.Kind {
        switch type { case 2: return .repeater; case 3: return .room; case 4: return .sensor; default: return .contact }
    }

    func refreshConversations() {
        for c in contacts { _ = model.conversation(id: id(of: c.publicKey), name: c.name, kind: kind(c.type)) }
        for ch in channels { _ = model.conversation(id: "channel:\(ch.index)", name: ch.name, kind: .channel) }
    }

    func loadHistory() {
        guard let s = store, let list = try? s.conversations() else { return }
        for conv in list {
            let cid: String
            switch conv.thread.kind {
            case .channel?: cid = "channel:\(conv.thread.channelIndex)"
            default: cid = id(of: (0..<6).map { UInt8(truncatingIfNeeded: conv.thread.peer.packed >> UInt64(8 * (5 - $0))) })
            }
            // The radio's names win over the store's (which may only know a key prefix).
            let c = model.conversation(id: cid) ?? model.conversation(id: cid, name: conv.name,
                                                                      kind: conv.thread.kind == .channel ? .channel : conv.thread.kind == .room ? .room : .contact)
            guard c.entries.isEmpty, let ms = try? s.history(conv.thread, limit: 200) else { continue }
            for m in ms { c.add(entry(stored: m, in: c)) }
            c.unread = conv.unread
        }
    }

    func entry(stored m: StoredMessage, in c: ChatConversation) -> ChatEntry {
        let text = m.isDatagram ? "data \(m.dataType): " + HexCodec.encode(m.text) : m.textString
        if m.direction == .outgoing {
            let state: String
            switch m.status {
            case .acked: state = m.roundTripMs > 0 ? "acked after \(seconds(m.roundTripMs))" : "acked"
            default: state = m.status.name
            }
            return ChatEntry(kind: .outgoing, time: m.senderTimestamp, from: "me", text: text, states: [state])
        }
        var from = c.name
        if m.kind == .channel, !m.isDatagram { (from, _) = splitSender(text) }
        if m.kind == .room { from = author(m.author) ?? from }
        let body = m.kind == .channel && !m.isDatagram ? splitSender(text).1 : text
        return ChatEntry(kind: .incoming, time: m.senderTimestamp != 0 ? m.senderTimestamp : m.receivedAt, from: from, text: body)
    }

    /// "NAME: text" of a channel message.
    func splitSender(_ t: String) -> (String, String) {
        let c = Array(t)
        for i in 0..<max(0, c.count - 1) where c[i] == ":" && c[i + 1] == " " {
            return (String(c[..<i]), String(c[(i + 2)...]))
        }
        return ("", t)
    }

    func author(_ prefix: UInt32) -> String? {
        contacts.first { c in c.publicKey.count >= 4 && c.publicKey.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) } == prefix }?.name
    }

    func seconds(_ ms: UInt32) -> String {
        "\(ms / 1000).\((ms % 1000) / 100) s"
    }

    func select(_ c: ChatConversation) {
        model.select(c)
        if storeWritable, let s = store, let t = thread(of: c) { try? s.markRead(t) }
    }

    func thread(of c: ChatConversation) -> ThreadKey? {
        if c.kind == .channel, let i = UInt8(c.id.dropFirst("channel:".count)) { return .channel(i) }
        guard let hex = HexCodec.decode(String(c.id.dropFirst("key:".count))) else { return nil }
        return c.kind == .room ? .room(KeyPrefix(sixOf: hex)) : .direct(KeyPrefix(sixOf: hex))
    }

    func open(_ name: String) {
        let hits = model.find(name)
        if hits.count == 1 { select(hits[0]); status = "talking to \(hits[0].name)."; return }
        status = hits.isEmpty ? "no contact, room or channel named \"\(name)\"." : "\"\(name)\" matches \(hits.count): " + hits.map(\.name).joined(separator: ", ")
    }

    // MARK: - events from the radio

    func event(_ e: SessionEvent) {
        switch e {
        case .message(let m): received(m)
        case .delivery(let t, let d): delivery(t, d)
        case .reply(let t, let r): channelReply(t, r)
        case .push(let p):
            switch p.kind {
            case .logRxData(_, _, let bytes): echo(bytes)
            case .newAdvert, .advert:
                if case .advert(let key) = p.kind, let c = contacts.first(where: { $0.publicKey == key.bytes }) {
                    status = "advert heard from \(c.name)."
                } else if case .newAdvert = p.kind, let c = ContactSummary(record: p.frame) {
                    status = "a new node was heard: \(c.name) (\(c.typeName))."
                }
                actions.append { [unowned self] in
                    if let x = self.executor, let list = try? x.contacts(refresh: true) { self.contacts = list; self.refreshConversations() }
                }
                loop.stop()
            default: break
            }
        default: break
        }
        if started { draw() }
    }

    func received(_ m: ReceivedMessage) {
        let now = UInt32(truncatingIfNeeded: time(nil))
        if storeWritable, let s = store { _ = try? s.append(MessageJSON.stored(m, receivedAt: now)) }
        let c: ChatConversation
        var from: String
        var text = m.textString
        switch m.kind {
        case .contact:
            let contact = contacts.first { $0.publicKey.starts(with: m.senderPrefix) }
            let name = contact?.name ?? HexCodec.encode(m.senderPrefix)
            let k: ChatConversation.Kind = m.textType == .signedPlain ? .room : contact.map { kind($0.type) } ?? .contact
            c = model.conversation(id: id(of: m.senderPrefix), name: name, kind: k)
            from = name
            if m.textType == .signedPlain {
                from = author(m.authorPrefix.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }) ?? HexCodec.encode(m.authorPrefix)
            }
        case .channel:
            let name = channels.first { $0.index == m.channelIndex }?.name ?? "channel \(m.channelIndex)"
            c = model.conversation(id: "channel:\(m.channelIndex)", name: name, kind: .channel)
            (from, text) = splitSender(text)
        case .channelData:
            let name = channels.first { $0.index == m.channelIndex }?.name ?? "channel \(m.channelIndex)"
            c = model.conversation(id: "channel:\(m.channelIndex)", name: name, kind: .channel)
            from = ""
            text = "data \(m.dataType): " + HexCodec.encode(m.text)
        }
        model.add(ChatEntry(kind: .incoming, time: m.timestamp != 0 ? m.timestamp : now, from: from, text: text), to: c)
        if c === model.current, storeWritable, let s = store, let t = thread(of: c) { try? s.markRead(t) }
    }

    func delivery(_ t: Ticket, _ d: Delivery) {
        guard var x = tracked[t] else { return }
        let state: String
        var done = true
        var update: DeliveryUpdate? = nil
        switch d {
        case .sent(let attempt, let flood, _, let tag):
            x.attempts = attempt + 1
            state = "sent" + (flood ? " (flood)" : "") + (attempt > 0 ? ", attempt \(attempt + 1)" : "")
            done = false
            update = DeliveryUpdate(status: .sent, attempts: UInt8(clamping: attempt + 1), ackTag: tag)
        case .retrying(let attempt, let flood):
            state = "no ACK yet; retrying" + (flood ? " by flood" : "") + " (attempt \(attempt + 2))"
            done = false
        case .acked(let attempt, let rtt):
            state = "acked after \(seconds(rtt))"
            update = DeliveryUpdate(status: .acked, attempts: UInt8(clamping: attempt + 1), roundTripMs: rtt)
        case .failed(let n):
            state = "failed: no ACK after \(n) attempts"
            update = DeliveryUpdate(status: .failed, attempts: UInt8(clamping: n))
        case .refused(let code):
            state = "failed: the radio refused it (ERR \(code))"
            update = DeliveryUpdate(status: .failed)
        case .timeout:
            state = "failed: the radio did not answer"
            update = DeliveryUpdate(status: .failed)
        case .cancelled:
            state = "failed: the radio went away"
            update = DeliveryUpdate(status: .failed)
        }
        x.conversation.update(x.entry, part: x.part, state: state)
        if let u = update, storeWritable, let s = store, let id = x.storeId {
            try? s.setDelivery(id: id, u, at: UInt32(truncatingIfNeeded: time(nil)))
        }
        if done { tracked[t] = nil; radio?.forget(t) } else { tracked[t] = x }
    }

    func channelReply(_ t: Ticket, _ r: Reply) {
        guard let x = tracked.removeValue(forKey: t) else { return }
        radio?.forget(t)
        switch r {
        case .ok, .frame:
            x.conversation.update(x.entry, part: x.part, state: "sent")
            if storeWritable, let s = store, let id = x.storeId {
                try? s.setDelivery(id: id, DeliveryUpdate(status: .sent, attempts: 1), at: UInt32(truncatingIfNeeded: time(nil)))
            }
        case .error(let code): x.conversation.update(x.entry, part: x.part, state: "failed: the radio refused it (ERR \(code))")
        case .cancelled: x.conversation.update(x.entry, part: x.part, state: "failed: the radio went away")
        default: x.conversation.update(x.entry, part: x.part, state: "failed: the radio did not answer")
        }
    }

    /// A packet the radio heard: an echo of a channel message sent here is a repeat.
    func echo(_ bytes: [UInt8]) {
        guard !echoes.isEmpty, let p = try? Packet(bytes: bytes), !p.path.isEmpty else { return }
        for i in echoes.indices where echoes[i].payload == p.payload {
            echoes[i].heard += 1
            let e = echoes[i]
            let n = e.heard
            e.conversation.update(e.entry, part: e.part, state: "sent, heard \(n) repeat" + (n == 1 ? "" : "s"))
        }
    }

    // MARK: - the keyboard

    func readKeys(_ ev: PollEvents) {
        var buf = [UInt8](repeating: 0, count: 1024)
        let r = buf.withUnsafeMutableBytes { raw in retryingOnInterrupt { Glibc.read(0, raw.baseAddress, raw.count) } }
        if r == .success(0) || (r != .failure(.wouldBlock) && (try? r.get()) == nil) {
            quit = true  // the terminal went away
            loop.stop()
            return
        }
        guard case .success(let n) = r, n > 0 else { return }
        var ks = keys.feed(buf[..<n])
        if keys.isHolding, buf[n - 1] == 0x1B { ks += keys.flush() }  // a lone ESC
        var full = false
        for k in ks {
            switch editor.handle(k) {
            case .none: break
            case .submit(let line):
                full = true
                actions.append { [unowned self] in self.submit(line) }
                loop.stop()
            case .complete: complete(); full = true
            case .quit: quit = true; loop.stop()
            case .redraw: full = true
            case .pageUp: model.scrollBack += max(1, screen.bodyRows - 1); full = true
            case .pageDown: model.scrollBack = max(0, model.scrollBack - max(1, screen.bodyRows - 1)); full = true
            }
        }
        if full { draw() } else { ChatTerminal.write(screen.renderInput(prompt: prompt, editor: editor)) }
    }

    func complete() {
        let (word, start) = editor.completionWord
        let line = editor.text
        if start == 0 && word.hasPrefix("/") {
            let hits = Self.commands.map { $0.name }.filter { $0.hasPrefix(word) }
            if hits.count == 1 { editor.complete(with: hits[0] + " ") } else if !hits.isEmpty { status = hits.joined(separator: "  ") }
            return
        }
        _ = line
        let hits = model.completions(word)
        if hits.count == 1 { editor.complete(with: hits[0]) } else if hits.count > 1 {
            let p = commonPrefix(hits)
            if p.count > word.count { editor.complete(with: p) }
            status = hits.joined(separator: ", ")
        }
    }

    // MARK: - drawing

    var prompt: String {
        guard let c = model.current else { return "> " }
        return terminalSafeLine(c.name) + "> "
    }

    func draw() {
        guard started else { return }
        let c = model.current
        var title = " pocketmesh chat"
        if let c { title += " | " + terminalSafeLine(c.name) + " (\(c.kind.rawValue))" }
        title += " | " + terminalSafeLine(linkState)
        let others = model.unreadSummary
        if !others.isEmpty { title += " | unread: " + terminalSafeLine(others) }
        let lines = c.map { screen.bodyLines($0.entries, format: format) } ?? []
        model.scrollBack = min(model.scrollBack, max(0, lines.count - screen.bodyRows))
        var st = status
        if model.scrollBack > 0 { st = "scrolled back \(model.scrollBack) lines (Page Down returns) | " + st }
        ChatTerminal.write(screen.render(title: title, lines: lines, scrollBack: model.scrollBack, status: terminalSafeLine(st),
                                         prompt: prompt, editor: editor))
    }

    func format(_ e: ChatEntry) -> String {
        e.shown(time: clock(e.time), safe: terminalSafeLine)
    }

    /// "HH:MM" in local time.
    func clock(_ epoch: UInt32) -> String {
        var t = time_t(epoch)
        var tmv = tm()
        localtime_r(&t, &tmv)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return two(tmv.tm_hour) + ":" + two(tmv.tm_min)
    }
}
