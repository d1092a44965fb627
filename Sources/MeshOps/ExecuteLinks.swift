import MeshAir
import MeshCompanion
import MeshSession

/// Share links as the phone apps make them, favourites, adding channels, setting the clock.
///
///     meshcore://<hex of the advert EXPORT_CONTACT returns>        a contact card
///     meshcore://contact/add?name=…&public_key=<64 hex>&type=<1-4>  a contact by key
///     meshcore://channel/add?name=<url-encoded>&secret=<32 hex>    a channel
public enum MeshLinkURI: Equatable, Sendable {
    case contactCard(advert: [UInt8])
    case contact(name: String, publicKey: MeshCompanion.PublicKey, type: UInt8)
    case channel(name: String, secret: [UInt8])

    /// Parses a link, or a bare advert as hex; nil with the reason in `why` otherwise.
    public static func parse(_ text: String) throws(ClientError) -> MeshLinkURI {
        let t = text.trimmedSpaces
        let scheme = "meshcore://"
        guard t.lowercased().hasPrefix(scheme) else {
            guard let bytes = HexCodec.decode(t), bytes.count > 98 else {
                throw .usage("give a meshcore:// link, or an exported advert as hex (more than 98 bytes).")
            }
            return .contactCard(advert: bytes)
        }
        let rest = String(t.dropFirst(scheme.count))
        let pathAndQuery = rest.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = String(pathAndQuery[0]).lowercased()
        var query: [String: String] = [:]
        if pathAndQuery.count == 2 {
            for pair in pathAndQuery[1].split(separator: "&") {
                let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard let k = percentDecoded(String(kv[0])), let v = percentDecoded(kv.count == 2 ? String(kv[1]) : "") else {
                    throw .usage("the link has a malformed %-escape.")
                }
                query[k] = v
            }
        }
        switch path {
        case "contact/add":
            guard let name = query["name"], !name.isEmpty, name.utf8.count <= 31 else { throw .usage("the contact link needs a name of at most 31 bytes.") }
            guard let keyHex = query["public_key"], let key = MeshCompanion.PublicKey(hex: keyHex) else {
                throw .usage("the contact link needs public_key: 64 hex digits.")
            }
            let type = UInt8(query["type"] ?? "1") ?? 0
            guard (1...4).contains(type) else { throw .usage("the contact link's type must be 1 (chat) to 4 (sensor).") }
            return .contact(name: name, publicKey: key, type: type)
        case "channel/add":
            guard let name = query["name"], !name.isEmpty, name.utf8.count <= 31 else { throw .usage("the channel link needs a name of at most 31 bytes.") }
            guard let s = query["secret"], let secret = HexCodec.decode(s), secret.count == 16 else {
                throw .usage("the channel link needs secret: 32 hex digits.")
            }
            return .channel(name: name, secret: secret)
        default:
            guard !path.contains("/"), let bytes = HexCodec.decode(path), bytes.count > 98 else {
                throw .usage("not a MeshCore link: use meshcore://HEX, meshcore://contact/add?… or meshcore://channel/add?….")
            }
            return .contactCard(advert: bytes)
        }
    }

    public var text: String {
        switch self {
        case .contactCard(let advert): return "meshcore://" + HexCodec.encode(advert)
        case .contact(let name, let key, let type):
            return "meshcore://contact/add?name=\(MeshLinkURI.percentEncoded(name))&public_key=\(key.hex)&type=\(type)"
        case .channel(let name, let secret):
            return "meshcore://channel/add?name=\(MeshLinkURI.percentEncoded(name))&secret=\(HexCodec.encode(secret))"
        }
    }

    /// RFC 3986: all but the unreserved characters as %XX of their UTF-8 bytes.
    public static func percentEncoded(_ s: String) -> String {
        var out = ""
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(b))
            default:
                out += "%" + HexCodec.encode([b]).uppercased()
            }
        }
        return out
    }

    /// %XX escapes and "+" as a space; nil for a malformed escape or bytes that are not UTF-8.
    static func percentDecoded(_ s: String) -> String? {
        var bytes: [UInt8] = []
        var u = Array(s.utf8)[...]
        while let c = u.first {
            u = u.dropFirst()
            if c == UInt8(ascii: "%") {
                guard u.count >= 2, let b = HexCodec.decode(String(decoding: u.prefix(2), as: UTF8.self)) else { return nil }
                bytes += b
                u = u.dropFirst(2)
            } else if c == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else {
                bytes.append(c)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}

extension String {
    var trimmedSpaces: String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\n" || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\n" || l == "\t" { s = s.dropLast() }
        return String(s)
    }
}

extension Executor {
    func contactFavourite(_ who: String, on: Bool) async throws(ClientError) -> Outcome {
        let c = try await resolve(who)
        var (contact, _) = try await contactToAdd(publicKey(c), name: c.name, type: nil, path: nil)
        contact.flags = on ? contact.flags | ContactFlags.favourite : contact.flags & ~ContactFlags.favourite
        let frame = try encode { () throws(CompanionEncodeError) in try CommandFrame.addUpdateContact(contact, includeLastModified: false) }
        _ = try await call(frame, expecting: .ok, what: "updating \(c.name)")
        contactCache = nil
        return Outcome(.object([("status", .string("ok")), ("name", .string(c.name)), ("favourite", .bool(on))]))
    }

    /// ADD_UPDATE_CONTACT with the last advert time 0 (meshcore-cli's `reset_advert_time`): the
    /// radio drops adverts no newer than the last one it took, so after this it takes the next
    /// advert of the contact whatever its timestamp. The rest of the contact is kept.
    func contactResetAdvertTime(_ who: String) async throws(ClientError) -> Outcome {
        let c = try await resolve(who)
        var (contact, _) = try await contactToAdd(publicKey(c), name: c.name, type: nil, path: nil)
        contact.lastAdvertTimestamp = 0
        let frame = try encode { () throws(CompanionEncodeError) in try CommandFrame.addUpdateContact(contact, includeLastModified: false) }
        _ = try await call(frame, expecting: .ok, what: "updating \(c.name)")
        contactCache = nil
        return Outcome(.object([("status", .string("ok")), ("name", .string(c.name)), ("last_advert", .int(0))]))
    }

    func contactURI(_ who: String) async throws(ClientError) -> Outcome {
        let c = try await resolve(who)
        let f = try await call(CommandFrame.exportContact(publicKey(c)), expecting: .exportContact, what: "exporting \(c.name)")
        let card = MeshLinkURI.contactCard(advert: Array(f.dropFirst()))
        let byKey = MeshLinkURI.contact(name: c.name, publicKey: publicKey(c), type: c.type)
        return Outcome(.object([("name", .string(c.name)), ("uri", .string(card.text)), ("contact_uri", .string(byKey.text))]))
    }

    func importLink(_ text: String) async throws(ClientError) -> Outcome {
        switch try MeshLinkURI.parse(text) {
        case .contactCard(let advert):
            let frame = try encode { () throws(CompanionEncodeError) in try CommandFrame.importContact(advertPacket: advert) }
            _ = try await call(frame, expecting: .ok, what: "importing the contact")
            contactCache = nil
            return Outcome(ok("contact imported"))
        case .contact(let name, let key, let type):
            return try await run(.contactAdd(publicKey: key.hex, name: name, type: type, path: nil))
        case .channel:
            throw .usage("that is a channel link: use `pocketmesh channel import`.")
        }
    }

    func channelURI(_ which: String) async throws(ClientError) -> Outcome {
        let c = try await resolveChannel(which, inUse: true)
        let uri = MeshLinkURI.channel(name: c.name, secret: c.secret).text
        return Outcome(.object([("index", .int(c.index)), ("name", .string(c.name)), ("uri", .string(uri))]))
    }

    /// A channel link into the slot that has this name already, else the first free slot.
    func channelImport(_ text: String) async throws(ClientError) -> Outcome {
        guard case .channel(let name, let secret) = try MeshLinkURI.parse(text) else {
            throw .usage("that is not a channel link: use `pocketmesh contacts import` for contacts.")
        }
        return try await channelAdd(name, secret: HexCodec.encode(secret))
    }

    /// `channel add NAME`: the first free slot (or the slot that already has this name); a #name
    /// without a secret is a hashtag channel.
    func channelAdd(_ name: String, secret: String?) async throws(ClientError) -> Outcome {
        guard !name.isEmpty, name.utf8.count <= 31 else { throw .usage("a channel name must be 1 to 31 bytes.") }
        let all = try await channels()
        let slot = all.first(where: { $0.name == name }) ?? all.first(where: { $0.isEmpty })
        guard let s = slot else {
            throw .refused("every channel slot is in use: remove one first (`pocketmesh channel remove`).", code: 3)
        }
        _ = try await run(.channelSet(index: Int(s.index), name: name, secret: secret, hashtag: secret == nil && name.hasPrefix("#")))
        return Outcome(.object([("status", .string("ok")), ("index", .int(s.index)), ("name", .string(name))]))
    }

    func timeSet(_ epoch: UInt32) async throws(ClientError) -> Outcome {
        let r = try await radio.call(CommandFrame.setDeviceTime(epoch).bytes, expecting: .codes(CodeSet(0)), timeout: timeout)
        if case .error(6) = r {
            throw .refused("the radio refused the time with ERR 6 (illegal argument): its clock cannot move backwards; reboot the radio to set an earlier time.", code: 6)
        }
        _ = try check(r, what: "setting the time")
        return Outcome(.object([("status", .string("ok")), ("epoch", .int(epoch))]))
    }

    /// SET_FLOOD_SCOPE_KEY (kept by the radio until it reboots, not per connection): floods carry the region's transport codes
    /// ("#north": key = SHA-256("#north")[0..16]), none at all ("none"), or the radio's default.
    func scope(_ name: String) async throws(ClientError) -> Outcome {
        let override: FloodScopeOverride
        let shown: String
        switch name.lowercased() {
        case "none", "unscoped": override = .unscoped; shown = "none"
        case "default", "clear": override = .clear; shown = "default"
        default:
            let bare = name.hasPrefix("#") ? String(name.dropFirst()) : name
            guard !bare.isEmpty, bare.utf8.count <= 30, !bare.contains(" ") else {
                throw .usage("give a region as #name (no spaces, at most 30 bytes), none, or default.")
            }
            override = .key(RegionKey(name: "#" + bare).key)
            shown = "#" + bare
        }
        let frame = try encode { () throws(CompanionEncodeError) in try CommandFrame.setFloodScopeKey(override) }
        _ = try await call(frame, expecting: .ok, what: "the flood scope")
        return Outcome(.object([("status", .string("ok")), ("scope", .string(shown))]))
    }
}
