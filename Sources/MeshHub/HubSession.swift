/// The companion hub's sessions: what the daemon keeps for each hub client (HubServer.swift).
/// A class: the hub updates it for every frame, without copying it in and out of a dictionary.
public final class HubSession {
    /// The app identity: the listener's `app=`, else the name from APP_START ("" until then).
    public var app = ""
    /// The app's persisted cursor name in the store (`hub-<app>`), once the app is known.
    public var cursorName: String? = nil
    /// The id of the last stored message handed to this connection.
    public var cursor: UInt64 = 0
    public var seeded = false
    /// DEVICE_QUERY's app_target_ver ≥ 3: messages as V3 frames (with SNR).
    public var v3 = false
    /// Requests received, and messages handed over (for `status`).
    public var requests = 0
    public var delivered = 0
    /// Requests refused for their class (answered with ERR, logged within `RefusalLog`'s bound).
    public var refused = 0
    public init() {}
}

/// Per-app cursors and the bounded backlog an app never seen before starts from.
public enum HubCursors {
    /// A never-seen app gets the incoming messages among the last 50 stored.
    public static let backlog: UInt64 = 50
    /// App cursors kept per radio; beyond this the least recently seen are removed.
    public static let maxApps = 64
    /// An app unseen this long loses its cursor (seconds).
    public static let maxAgeS = 30 * 86_400
    /// How often a connected app's cursor file is rewritten to mark it seen (seconds).
    public static let touchEveryS = 3_600

    /// `hub-` + the app name reduced to the store's cursor alphabet (a-z, 0-9, -, _), at most 64.
    public static func name(forApp app: String) -> String {
        var out = "hub-"
        for b in app.lowercased().utf8 {
            let ok = (b >= 97 && b <= 122) || (b >= 48 && b <= 57) || b == 45 || b == 95
            out.append(ok ? Character(Unicode.Scalar(b)) : "_")
            if out.utf8.count >= 64 { break }
        }
        if out == "hub-" { out += "unnamed" }
        return out
    }

    /// The cursors to remove: those last seen more than `maxAgeS` before `now`, then the least
    /// recently seen beyond `maxApps`; never one in `inUse`.
    public static func expired(_ cursors: [(name: String, writtenAt: Int)], now: Int, inUse: Set<String>) -> [String] {
        var keep: [(name: String, writtenAt: Int)] = []
        var out: [String] = []
        for c in cursors {
            if !inUse.contains(c.name) && now - c.writtenAt > maxAgeS { out.append(c.name) } else { keep.append(c) }
        }
        if keep.count > maxApps {
            let oldest = keep.filter { !inUse.contains($0.name) }.sorted { ($0.writtenAt, $0.name) < ($1.writtenAt, $1.name) }
            out += oldest.prefix(keep.count - maxApps).map(\.name)
        }
        return out
    }
}
