import MeshCompanion
import MeshSession

/// `regions NAME`, `owner NAME`, `clock NAME`: anonymous requests to a repeater (no login). The
/// repeater answers only a request that reached it on a direct route; for a contact without a
/// known path the request goes zero-hop (its path is set to zero hops for the request and reset
/// afterwards, as meshcore-cli does).
extension Executor {
    func anonymous(_ who: String, _ type: AnonRequestType) async throws(ClientError) -> Outcome {
        let c: ContactSummary
        var stranger: MeshCompanion.PublicKey? = nil
        do throws(ClientError) { c = try await resolve(who) } catch {
            // A node that is no contact (one that answered a discovery), by its whole key: a contact
            // with a zero-hop path for the request, removed after it.
            guard error.kind == .notFound, who.utf8.count == 64, let k = Hex.decode(who), let key = MeshCompanion.PublicKey(k) else { throw error }
            var (contact, _) = try await contactToAdd(key, name: String(who.prefix(8)), type: ContactType.repeater.rawValue, path: nil)
            do { try contact.setOutPath(.zeroHop, []) } catch { throw ClientError.link("cannot give \(who.prefix(8)) a zero-hop path: \(error).") }
            let frame = try encode { () throws(CompanionEncodeError) in try CommandFrame.addUpdateContact(contact, includeLastModified: false) }
            _ = try await call(frame, expecting: .ok, what: "adding \(who.prefix(8)) for the request")
            stranger = key
            contactCache = nil
            c = try await resolve(who)
        }
        let known = PathLength(rawValue: c.outPathLength)
        var replyLength = known
        var replyPath = c.outPath
        var zeroHopSet = false
        if known.isUnknown {
            var (contact, _) = try await contactToAdd(publicKey(c), name: c.name, type: nil, path: nil)
            do { try contact.setOutPath(.zeroHop, []) } catch { throw .link("cannot give \(c.name) a zero-hop path: \(error).") }
            let frame = try encode { () throws(CompanionEncodeError) in try CommandFrame.addUpdateContact(contact, includeLastModified: false) }
            _ = try await call(frame, expecting: .ok, what: "setting a zero-hop path to \(c.name)")
            zeroHopSet = true
            replyLength = .zeroHop
            replyPath = []
        }
        let what: String
        switch type {
        case .regions: what = "the regions of \(c.name)"
        case .owner: what = "the owner of \(c.name)"
        case .basic: what = "the clock of \(c.name)"
        }
        var reply: [UInt8] = []
        var failure: ClientError? = nil
        do throws(ClientError) {
            let o = try await radio.request(.anon(publicKey: c.publicKey, data: RemoteRequestData.anon(type, replyPathLength: replyLength, replyPath: replyPath)))
            reply = try requestReply(o, what: what, timeoutHint: "a repeater answers only what reaches it directly (within radio range, or along the contact's path)")
        } catch {
            failure = error
        }
        if zeroHopSet {
            _ = try? await call(CommandFrame.resetPath(publicKey(c)), expecting: .ok, what: "resetting the path of \(c.name)")
            contactCache = nil
        }
        if let stranger {
            _ = try? await call(CommandFrame.removeContact(stranger), expecting: .ok, what: "removing \(c.name)")
            contactCache = nil
        }
        if let failure { throw failure }
        guard let r = AnonReply(frame: reply) else { throw .link("\(c.name) sent a malformed answer to \(what): try again.") }
        var fields: [Value.Field] = [("name", .string(c.name)), ("clock", .int(r.clock))]
        switch type {
        case .regions:
            let names = r.text.split(separator: ",").map { String($0) }.filter { !$0.isEmpty }
            fields.append(("regions", .array(names.map { .string($0) })))
        case .owner:
            let parts = r.text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            fields.append(("node_name", .string(parts.first ?? "")))
            fields.append(("owner", .string(parts.count > 1 ? parts[1] : "")))
        case .basic:
            fields.append(("offset_s", .int(Int64(r.clock) - Int64(wallClockEpoch()))))
            if let features = r.body.first { fields.append(("repeating", .bool(features & 0x80 == 0))) }
        }
        return Outcome(.object(fields))
    }
}
