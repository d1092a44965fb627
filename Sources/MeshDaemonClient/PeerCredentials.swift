import Glibc
import MeshOps
import MeshLink

/// Who is at the other end of a connected Unix socket, as the kernel recorded it at connect time:
/// the process, its effective uid and gid (`SO_PEERCRED`) and its supplementary groups
/// (`SO_PEERGROUPS`, Linux 4.13 and later; empty where the kernel does not tell).
public struct PeerCredentials: Equatable, Sendable {
    public var pid: Int32
    public var uid: uid_t
    public var gid: gid_t
    public var groups: [gid_t]

    public init(pid: Int32, uid: uid_t, gid: gid_t, groups: [gid_t] = []) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
        self.groups = groups
    }

    /// The peer of connected socket `fd`, or nil when the kernel does not say.
    public init?(socket fd: Int32) {
        var cred: (pid: Int32, uid: UInt32, gid: UInt32) = (0, 0, 0)
        var len = socklen_t(MemoryLayout.size(ofValue: cred))
        let rc = withUnsafeMutablePointer(to: &cred) { getsockopt(fd, SOL_SOCKET, SO_PEERCRED, $0, &len) }
        guard rc == 0, len == socklen_t(12) else { return nil }
        pid = cred.pid
        uid = cred.uid
        gid = cred.gid
        groups = Self.supplementaryGroups(fd)
    }

    /// `SO_PEERGROUPS` (59 on every Linux architecture).
    static let peerGroupsOption: Int32 = 59

    static func supplementaryGroups(_ fd: Int32) -> [gid_t] {
        var buffer = [gid_t](repeating: 0, count: 64)
        for _ in 0..<2 {
            var len = socklen_t(buffer.count * MemoryLayout<gid_t>.size)
            let rc = buffer.withUnsafeMutableBytes { getsockopt(fd, SOL_SOCKET, peerGroupsOption, $0.baseAddress, &len) }
            if rc == 0 { return Array(buffer.prefix(Int(len) / MemoryLayout<gid_t>.size)) }
            // ERANGE: the peer is in more groups; `len` says how many bytes they need.
            guard errno == ERANGE, Int(len) > buffer.count * MemoryLayout<gid_t>.size, len <= 65_536 * 4 else { return [] }
            buffer = [gid_t](repeating: 0, count: Int(len) / MemoryLayout<gid_t>.size)
        }
        return []
    }

    /// The peer's effective gid or one of its supplementary groups is `group`.
    public func isMember(of group: gid_t) -> Bool { gid == group || groups.contains(group) }
}

/// A group of the system's users, by name or number, looked up in /etc/group (the files only:
/// like /etc/hosts for the radio's address, no NSS module is loaded into the daemon).
public struct SystemGroup: Equatable, Sendable, CustomStringConvertible {
    public var name: String
    public var gid: gid_t

    public init(name: String, gid: gid_t) {
        self.name = name
        self.gid = gid
    }

    /// `name` or a number, found in `groupFile` (a number needs no line there).
    public static func lookup(_ text: String, groupFile: String = "/etc/group") -> SystemGroup? {
        let lines = (StateFile.readString(groupFile) ?? "").split(whereSeparator: { $0 == "\n" })
        func fields(_ line: Substring) -> [Substring] { line.split(separator: ":", omittingEmptySubsequences: false) }
        if let n = UInt32(text) {
            let name = lines.map(fields).first { $0.count >= 3 && UInt32($0[2]) == n }.map { String($0[0]) }
            return SystemGroup(name: name ?? text, gid: n)
        }
        for f in lines.map(fields) where f.count >= 3 && f[0] == text[...] {
            if let gid = UInt32(f[2]) { return SystemGroup(name: text, gid: gid) }
        }
        return nil
    }

    public var description: String { name }
}

/// `--api-group GROUP[:CLASSES]`: the system group whose members may use the daemon's API socket,
/// and the operation classes they get (default read and message; the same class names as
/// `--mqtt-allow` and a hub listener's `allow=`, separated by `+` or `,`). Root and the daemon's
/// own user keep every class; anyone else is refused.
public struct APIGroup: Equatable, Sendable {
    public static let defaultClasses = AllowedClasses([.read, .message])

    public var group: SystemGroup
    public var allowed: AllowedClasses

    public init(group: SystemGroup, allowed: AllowedClasses = APIGroup.defaultClasses) {
        self.group = group
        self.allowed = allowed
    }

    /// Parses `GROUP` or `GROUP:CLASSES`; the group is looked up in `groupFile`.
    public init(parsing text: String, groupFile: String = "/etc/group") throws(DaemonError) {
        let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        let name = parts[0]
        guard !name.isEmpty else { throw DaemonError(.usage, "--api-group \(text): give a group, e.g. --api-group pocketmesh or pocketmesh:read+message.") }
        guard let g = SystemGroup.lookup(name, groupFile: groupFile) else {
            throw DaemonError(.usage, "--api-group \(text): there is no group \"\(name)\" in \(groupFile) (create it with `groupadd --system \(name)`, or give its number).")
        }
        var allowed = Self.defaultClasses
        if parts.count == 2 {
            do throws(DaemonError) { allowed = try AllowedClasses(parsing: parts[1]) } catch {
                throw DaemonError(.usage, "--api-group \(text): \(error.message)")
            }
        }
        self.init(group: g, allowed: allowed)
    }

    /// The classes a peer gets on the API socket: every class for root and `owner` (the daemon's
    /// user), this group's for its members, nil (refused) for anyone else.
    public static func admit(_ peer: PeerCredentials, owner: uid_t, group: APIGroup?) -> AllowedClasses? {
        if peer.uid == 0 || peer.uid == owner { return .everything }
        if let group, peer.isMember(of: group.group.gid) { return group.allowed }
        return nil
    }
}
