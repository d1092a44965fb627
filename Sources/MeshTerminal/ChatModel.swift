/// What a terminal chat shows: conversations with their entries and unread counts. Sans-I/O:
/// the program adds what arrives and what is sent, and draws it with `ChatScreen`.
public struct ChatEntry: Equatable, Sendable {
    public enum Kind: Equatable, Sendable { case incoming, outgoing, notice }
    public var kind: Kind
    /// Epoch seconds (the sender's clock for messages).
    public var time: UInt32
    public var from: String
    public var text: String
    /// The delivery state of each part of an outgoing message ("sending", "acked after 1.2 s", …).
    public var states: [String]
    /// Parts of a split message ("(i/n) …") joined so far, and how many there are.
    public var parts: (have: Int, of: Int)?
    /// A split message's parts by number (nil: not here yet); `text` is those here, in order.
    var pieces: [String?] = []

    public init(kind: Kind, time: UInt32, from: String, text: String, states: [String] = []) {
        self.kind = kind
        self.time = time
        self.from = from
        self.text = text
        self.states = states
    }

    public static func == (a: ChatEntry, b: ChatEntry) -> Bool {
        a.kind == b.kind && a.time == b.time && a.from == b.from && a.text == b.text && a.states == b.states
            && a.parts?.have == b.parts?.have && a.parts?.of == b.parts?.of
    }

    /// The entry as the chat shows it, with `time` ("HH:MM") and `safe` making text from the mesh
    /// harmless on one line (`terminalSafeLine`): a message is one line, `HH:MM from: text`, so
    /// nothing in it can look like the start of another message. A notice (the chat's own
    /// output, e.g. a list or a node's reply) may have several lines; those after the first are
    /// indented, so none of them looks like a message either.
    public func shown(time: String, safe: (String) -> String) -> String {
        switch kind {
        case .notice:
            return "-- " + text.split(separator: "\n", omittingEmptySubsequences: false).map { safe(String($0)) }.joined(separator: "\n   ")
        case .outgoing:
            return "\(time) me: " + safe(text) + (stateText.map { "  [\($0)]" } ?? "")
        case .incoming:
            let partial = parts.map { $0.have < $0.of ? "  [part \($0.have) of \($0.of)]" : "" } ?? ""
            return "\(time) " + (from.isEmpty ? "" : safe(from) + ": ") + safe(text) + partial
        }
    }

    /// `text` and `parts` from the pieces here.
    mutating func join() {
        let here = pieces.compactMap { $0 }
        text = here.joined(separator: " ")
        parts = (here.count, pieces.count)
    }

    /// The delivery state as shown: one state, or each part's.
    public var stateText: String? {
        guard !states.isEmpty else { return nil }
        if states.count == 1 { return states[0] }
        if Set(states).count == 1 { return "\(states.count) parts " + states[0] }
        return states.enumerated().map { "\($0.offset + 1): \($0.element)" }.joined(separator: ", ")
    }
}

public final class ChatConversation {
    public enum Kind: String, Sendable { case contact, room, repeater, sensor, channel }
    /// A stable id ("key:<hex prefix>", "channel:<index>").
    public let id: String
    public var name: String
    public var kind: Kind
    public private(set) var entries: [ChatEntry] = []
    public var unread = 0
    /// The stored messages shown from the store, so that a message is not shown twice.
    public var lastActivity: UInt32 = 0

    public init(id: String, name: String, kind: Kind) {
        self.id = id
        self.name = name
        self.kind = kind
    }

    /// How far back a part looks for the rest of its message.
    static let partWindow = 16

    /// Adds an entry; an incoming part "(i/n) …" joins the newest unfinished message of n parts
    /// from the same sender that lacks part i (parts may arrive in any order: each went its own
    /// way through the mesh), and the message shows its parts in their order. The index of the
    /// entry that shows it.
    @discardableResult
    public func add(_ e: ChatEntry) -> Int {
        lastActivity = max(lastActivity, e.time)
        if e.kind == .incoming, let (i, n, rest) = Self.part(e.text) {
            let window = entries.indices.suffix(Self.partWindow)
            if let k = window.last(where: { k in
                let x = entries[k]
                return x.kind == .incoming && x.from == e.from && x.parts?.of == n && x.pieces.count == n && x.pieces[i - 1] == nil
            }) {
                entries[k].pieces[i - 1] = rest
                entries[k].join()
                return k
            }
            var first = e
            first.pieces = [String?](repeating: nil, count: n)
            first.pieces[i - 1] = rest
            first.join()
            entries.append(first)
            return entries.count - 1
        }
        entries.append(e)
        return entries.count - 1
    }

    public func update(_ index: Int, part: Int, state: String) {
        guard entries.indices.contains(index), entries[index].states.indices.contains(part) else { return }
        entries[index].states[part] = state
    }

    /// Keeps the newest `limit` entries (older ones are in the store).
    public func trim(to limit: Int) -> Int {
        let drop = max(0, entries.count - limit)
        if drop > 0 { entries.removeFirst(drop) }
        return drop
    }

    /// "(i/n) rest" with 1 ≤ i ≤ n ≤ 99.
    static func part(_ s: String) -> (Int, Int, String)? {
        guard s.hasPrefix("("), let close = s.firstIndex(of: ")") else { return nil }
        let inner = s[s.index(after: s.startIndex)..<close].split(separator: "/", omittingEmptySubsequences: false)
        guard inner.count == 2, let i = Int(inner[0]), let n = Int(inner[1]), i >= 1, i <= n, n >= 2, n <= 99 else { return nil }
        var rest = s[s.index(after: close)...]
        if rest.first == " " { rest = rest.dropFirst() }
        return (i, n, String(rest))
    }
}

public final class ChatModel {
    public private(set) var conversations: [ChatConversation] = []
    public private(set) var current: ChatConversation?
    /// Rows scrolled back from the newest (Page Up / Page Down).
    public var scrollBack = 0

    public init() {}

    public func conversation(id: String) -> ChatConversation? { conversations.first { $0.id == id } }

    /// The conversation with this id, made if new.
    public func conversation(id: String, name: String, kind: ChatConversation.Kind) -> ChatConversation {
        if let c = conversation(id: id) {
            if !name.isEmpty { c.name = name }
            return c
        }
        let c = ChatConversation(id: id, name: name, kind: kind)
        conversations.append(c)
        return c
    }

    /// Adds an entry to a conversation; unread unless it is the one shown.
    @discardableResult
    public func add(_ e: ChatEntry, to c: ChatConversation) -> Int {
        let before = c.entries.count
        let i = c.add(e)
        // A part joined to the message before it is not another unread message.
        if c !== current && e.kind == .incoming && c.entries.count > before { c.unread += 1 }
        return i
    }

    public func select(_ c: ChatConversation) {
        current = c
        c.unread = 0
        scrollBack = 0
    }

    /// Conversations whose name matches: exact (case-insensitive) first, then by prefix.
    public func find(_ name: String) -> [ChatConversation] {
        let n = name.lowercased()
        let exact = conversations.filter { $0.name.lowercased() == n }
        if !exact.isEmpty { return exact }
        let prefixed = conversations.filter { $0.name.lowercased().hasPrefix(n) }
        if !prefixed.isEmpty { return prefixed }
        return conversations.filter { $0.id.hasPrefix("key:" + n) }
    }

    /// Names that complete `word` (case-insensitive prefix), sorted.
    public func completions(_ word: String) -> [String] {
        let w = word.lowercased()
        return conversations.map(\.name).filter { $0.lowercased().hasPrefix(w) }.sorted()
    }

    /// The others with unread messages, "Bob 2, #public 1".
    public var unreadSummary: String {
        conversations.filter { $0 !== current && $0.unread > 0 }
            .sorted { $0.lastActivity > $1.lastActivity }
            .map { "\($0.name) \($0.unread)" }.joined(separator: ", ")
    }
}

/// The longest common prefix of names (what Tab fills in when several match).
public func commonPrefix(_ names: [String]) -> String {
    guard var p = names.first.map(Array.init) else { return "" }
    for n in names.dropFirst() {
        let a = Array(n)
        var i = 0
        while i < p.count && i < a.count && String(p[i]).lowercased() == String(a[i]).lowercased() { i += 1 }
        p = Array(p[..<i])
    }
    return String(p)
}
