import Glibc
import MeshCompanion
import MeshSession
import MeshStore

/// The companion hub's sessions: what the daemon keeps for each hub client (HubServer.swift).
struct HubSession {
    /// The app name from APP_START ("" until then).
    var app = ""
    /// The app's persisted cursor name in the store (`hub-<app>`), once APP_START named it.
    var cursorName: String? = nil
    /// The id of the last stored message handed to this connection.
    var cursor: UInt64 = 0
    var seeded = false
    /// DEVICE_QUERY's app_target_ver ≥ 3: messages as V3 frames (with SNR).
    var v3 = false
    /// Requests waiting for their turn at the radio (one in flight per client: round robin).
    var waiting: [[UInt8]] = []
    var inFlight = false
}

/// Per-app cursors and the bounded backlog an app never seen before starts from.
enum HubCursors {
    /// A never-seen app gets the incoming messages among the last 50 stored ones.
    static let backlog: UInt64 = 50

    /// `hub-` + the app name reduced to the store's cursor alphabet (a-z, 0-9, -, _), at most 64.
    static func name(forApp app: String) -> String {
        var out = "hub-"
        for b in app.lowercased().utf8 {
            let ok = (b >= 97 && b <= 122) || (b >= 48 && b <= 57) || b == 45 || b == 95
            out.append(ok ? Character(Unicode.Scalar(b)) : "_")
            if out.utf8.count >= 64 { break }
        }
        if out == "hub-" { out += "unnamed" }
        return out
    }
}

extension Daemon {
    /// A frame from a hub client.
    func hubFrame(_ client: Int, _ frame: UnsafeRawBufferPointer) {
        guard let hub, let code = frame.first else { return }
        guard authorizeHub(client, frame) else {
            hub.send(ResponseFrame.error(.unsupportedCommand).bytes, to: client)
            return
        }
        var s = hubSessions[client] ?? HubSession()
        switch code {
        case CommandCode.deviceQuery.rawValue:
            s.v3 = frame.count >= 2 && frame[1] >= 3
            hubSessions[client] = s
            hub.send(deviceInfo, to: client)
        case CommandCode.appStart.rawValue:
            if case .appStart(let name)? = try? CompanionCommand.decode(frame) {
                s.app = String(decoding: name, as: UTF8.self)
            }
            hubSeed(&s)
            hubSessions[client] = s
            hub.send(selfInfo, to: client)
        case CommandCode.syncNextMessage.rawValue:
            if !s.seeded { hubSeed(&s) }
            hub.send(hubNextMessage(&s), to: client)
            hubSessions[client] = s
        default:
            s.waiting.append(Array(frame))
            hubSessions[client] = s
            hubSubmitNext(client)
        }
    }

    /// Seeds a connection's cursor from its app's persisted one, or the recent backlog.
    func hubSeed(_ s: inout HubSession) {
        s.seeded = true
        guard let store else { return }
        let newest = store.nextMessageId > 0 ? store.nextMessageId - 1 : 0
        let start = newest > HubCursors.backlog ? newest - HubCursors.backlog : 0
        guard !s.app.isEmpty else { s.cursor = start; return }
        let name = HubCursors.name(forApp: s.app)
        s.cursorName = name
        s.cursor = ((try? store.storedCursor(name)) ?? nil) ?? start
    }

    /// The answer to a hub client's SYNC_NEXT_MESSAGE: the next received message past its cursor,
    /// or NO_MORE_MESSAGES (persisting the app's cursor).
    func hubNextMessage(_ s: inout HubSession) -> [UInt8] {
        guard let store else { return ResponseFrame.noMoreMessages().bytes }
        while let m = (try? store.messages(after: s.cursor, limit: 1, incomingOnly: true))?.first {
            s.cursor = m.id
            if let f = Self.hubFrame(for: m, v3: s.v3) { return f }
        }
        hubSaveCursor(s)
        return ResponseFrame.noMoreMessages().bytes
    }

    func hubSaveCursor(_ s: HubSession) {
        guard let store, let name = s.cursorName else { return }
        // Two connections of one app: the app's cursor is the furthest either reached.
        let old = ((try? store.storedCursor(name)) ?? nil) ?? 0
        guard s.cursor > old else { return }
        do { try store.setCursor(name, s.cursor) } catch { log("store: cannot save the cursor \(name): \(error)") }
    }

    /// A stored message as the frame version the client negotiated.
    static func hubFrame(for m: StoredMessage, v3: Bool) -> [UInt8]? {
        guard var f = TunnelQueue.frame(for: m) else { return nil }
        guard !v3, let code = f.first else { return f }
        // Legacy layout: the V3 frame without SNR and the two reserved bytes after it.
        switch code {
        case ResponseCode.contactMessage.rawValue, ResponseCode.channelMessage.rawValue:
            guard f.count >= 4 else { return f }
            f.removeSubrange(1..<4)
            f[0] = code == ResponseCode.contactMessage.rawValue ? ResponseCode.contactMessageLegacy.rawValue : ResponseCode.channelMessageLegacy.rawValue
            return f
        default:
            return f
        }
    }

    /// Sends a client's next waiting request to the radio, unless one of its own is in flight.
    func hubSubmitNext(_ client: Int) {
        guard var s = hubSessions[client], !s.inFlight, !s.waiting.isEmpty, let hub else { return }
        let bytes = s.waiting.removeFirst()
        guard let session, phase == .ready || phase == .syncing else {
            hubSessions[client] = s
            hub.send(ResponseFrame.error(.badState).bytes, to: client)  // no radio right now
            hubSubmitNext(client)
            return
        }
        let now = monotonicNow()
        do {
            let t = try session.submit(frame: bytes, expecting: .answering(bytes), now: now)
            tunnelTickets[t] = (client, bytes)
            s.inFlight = true
        } catch {
            hub.send(ResponseFrame.error(.tableFull).bytes, to: client)
        }
        hubSessions[client] = s
        pump(now: now)
    }

    /// The radio answered a hub client's request (after `tunnelReply` sent the answer).
    func hubAnswered(_ client: Int, frame: [UInt8], _ r: Reply) {
        if case .frame(let f) = r, let sent = Self.sentInfo(f) {
            hubAckOwners.append((sent.tag, client))
            if hubAckOwners.count > 256 { hubAckOwners.removeFirst() }
        }
        if case .timeout = r { hub?.send(ResponseFrame.error(.badState).bytes, to: client) }
        if case .cancelled = r { hub?.send(ResponseFrame.error(.badState).bytes, to: client) }
        // Contacts and channels a client changed: the daemon's copies follow.
        switch CommandCode(rawValue: frame.first ?? 0) {
        case .addUpdateContact, .removeContact, .importContact, .resetPath, .setAdvertName, .setAdvertLatLon, .setOtherParams:
            if contactsResyncAt == nil { contactsResyncAt = monotonicNow() }
        case .setChannel:
            if case .ok = r, channelTickets.isEmpty { syncChannels(now: monotonicNow()) }
        default:
            break
        }
        if var s = hubSessions[client] {
            s.inFlight = false
            hubSessions[client] = s
            hubSubmitNext(client)
        }
    }

    /// A push: to every hub client, except SEND_CONFIRMED, which goes to the client whose send it
    /// confirms (nobody's when it is the daemon's own or a tunnel client's).
    func hubPush(_ p: Push) {
        guard let hub else { return }
        if case .sendConfirmed(let c) = p.kind {
            if let i = hubAckOwners.firstIndex(where: { $0.ack == c.ack }) {
                let owner = hubAckOwners.remove(at: i).client
                hub.send(p.frame, to: owner)
            }
            return
        }
        for c in hub.clientIDs { hub.send(p.frame, to: c) }
    }

    /// A message was stored: MSG_WAITING to every hub client.
    func hubMessageWaiting() {
        guard let hub else { return }
        for c in hub.clientIDs { hub.send(PushFrame.messageWaiting().bytes, to: c) }
    }

    /// The radio link went down: requests in flight get ERR (bad state); they are not retried.
    func hubLinkLost() {
        guard let hub else { return }
        for (c, var s) in hubSessions where s.inFlight || !s.waiting.isEmpty {
            for _ in 0..<(s.waiting.count + (s.inFlight ? 1 : 0)) { hub.send(ResponseFrame.error(.badState).bytes, to: c) }
            s.inFlight = false
            s.waiting = []
            hubSessions[c] = s
        }
    }

    func hubGone(_ client: Int) {
        if let s = hubSessions.removeValue(forKey: client) { hubSaveCursor(s) }
        for (t, w) in tunnelTickets where w.client == client { tunnelTickets[t] = (-1, w.frame) }
        hubAckOwners.removeAll { $0.client == client }
    }
}
