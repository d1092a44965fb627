import MeshAir
import MeshCompanion

/// A room server (`simple_room_server`): members log in with a `sync_since`, posts are stored and
/// pushed to each logged-in member as signed text (txt_type 2, author prefix), one at a time,
/// advancing the member's `sync_since` only when the member ACKs.
public final class RoomNode: ServerNode {
    public struct Post { public var author: PublicKey; public var timestamp: UInt32; public var text: [UInt8] }
    public internal(set) var posts: [Post] = []
    public static let maxPosts = 32
    var posted = 0
    var pushed = 0
    var pushScheduled = false
    /// Push retries per post before the member's path is dropped (flood next time).
    public var pushAttempts: UInt8 = 3

    public init(mesh: Air, name: String, identity: LocalIdentity, adminPassword: String = "password", guestPassword: String = "hello") {
        super.init(mesh: mesh, name: name, role: .room, identity: identity, adminPassword: adminPassword, guestPassword: guestPassword)
        disableForward = true
    }

    /// Off by default; `set repeat on` makes the room relay too, within the hop limits only (no
    /// region check, as in the firmware's room server).
    override public func allowForward(_ packet: Packet) -> Bool {
        guard !disableForward, powered else { return false }
        guard packet.routeType.isFlood else { return true }
        let hops = packet.pathLength.hopCount
        if hops >= floodMax || (packet.routeType == .flood && hops >= floodMaxUnscoped) { return false }
        return !(packet.payloadType == .advert && hops >= floodMaxAdvert)
    }

    override var postedCount: Int { posted }
    override var pushCount: Int { pushed }

    /// Adds a post as if `author` wrote it (also what a member's TXT_MSG does).
    public func addPost(author: PublicKey, text: [UInt8]) {
        posts.append(Post(author: author, timestamp: uniqueTime(), text: utf8Cut(text, max: 150)))
        if posts.count > Self.maxPosts { posts.removeFirst() ; for i in clients.indices { clients[i].pushing = nil } }
        posted += 1
        schedulePush(after: 500)
    }

    override public func onText(from client: Int, timestamp: UInt32, txtType: UInt8, text: [UInt8], secret: SharedSecret, arrival: Arrival) {
        guard txtType == TextType.plain.rawValue, clients[client].permissions & 3 >= 2 else { return }
        addPost(author: clients[client].key, text: text)
    }

    override func schedulePush(after delay: UInt64) {
        guard !pushScheduled else { return }
        pushScheduled = true
        mesh.scheduler.after(delay) { [unowned self] in
            self.pushScheduled = false
            self.pushRound()
        }
    }

    /// One pass over the members: each idle member gets its next unseen post.
    func pushRound() {
        guard powered else { return }
        var busy = false
        for i in clients.indices where clients[i].loggedIn {
            if let p = clients[i].pushing {
                let timeout = UInt64(pushTimeout(clients[i]))
                if now - p.sentAt < timeout { busy = true; continue }
                // No ACK in time: retry, then give up on the path.
                if p.attempt + 1 >= pushAttempts { clients[i].outPath = nil }
                if p.attempt + 1 >= pushAttempts + 2 { clients[i].pushing = nil; clients[i].loggedIn = false; continue }
                send(post: p.post, to: i, attempt: p.attempt + 1)
                busy = true
                continue
            }
            guard let next = posts.indices.first(where: { posts[$0].timestamp > clients[i].syncSince && posts[$0].author != clients[i].key }) else { continue }
            send(post: next, to: i, attempt: 0)
            busy = true
        }
        if busy { schedulePush(after: 1000) }
    }

    func pushTimeout(_ c: ServerClient) -> UInt32 {
        let air = radio.airtime(60)
        if let p = c.outPath { return 500 + (6 * air + 250) * UInt32(p.count / max(1, c.outHashSize) + 1) }
        return 500 + 16 * air
    }

    func send(post index: Int, to i: Int, attempt: UInt8) {
        let post = posts[index]
        let key = clients[i].key
        guard let s = secret(for: key) else { return }
        let author = Array(post.author.bytes.prefix(4))
        var pt: [UInt8] = []
        put32(post.timestamp, &pt)
        pt.append(2 << 2 | attempt & 3)
        pt += author + post.text
        let ack = TextAck.signedCode(timestamp: post.timestamp, attempt: attempt & 3, authorPrefix: author, text: post.text, receiver: key).bytes
        let payload = datagram(to: key, secret: s, plaintext: pt)
        if let p = clients[i].outPath { sendDirect(.txtMsg, payload: payload, path: p, hashSize: clients[i].outHashSize) }
        else { sendFlood(.txtMsg, payload: payload) }
        clients[i].pushing = (ack: get32(ack, 0), post: index, attempt: attempt, sentAt: now)
        pushed += 1
    }

    override public func onAck(_ ack: [UInt8], arrival: Arrival) -> Bool {
        let code = get32(ack, 0)
        guard let i = clients.firstIndex(where: { $0.pushing?.ack == code }), let p = clients[i].pushing else { return false }
        clients[i].syncSince = posts.indices.contains(p.post) ? posts[p.post].timestamp : clients[i].syncSince
        clients[i].pushing = nil
        schedulePush(after: 300)
        return true
    }
}
