import Glibc
import MeshAir
import MeshCompanion
import MeshSession

/// Runs `Request`s through an `OperationPort`: the command line's `Radio` on its own link, or the
/// daemon's session (`SessionPort`), where any number of operations run at once.
public final class Executor {
    public let radio: any OperationPort
    /// Per-command response timeout (ms).
    public var timeout: UInt64
    var contactCache: [ContactSummary]? = nil
    /// Messages drained while doing something else; `sync` and `listen` print them.
    public private(set) var collected: [ReceivedMessage] = []

    public init(radio: any OperationPort, timeout: UInt64) {
        self.radio = radio
        self.timeout = timeout
    }

    var selfInfo: [UInt8] { radio.session.selfInfo ?? [] }
    var deviceInfo: [UInt8] { radio.session.deviceInfo ?? [] }

    // MARK: small helpers

    func call(_ frame: [UInt8], expecting code: UInt8, what: String) async throws(ClientError) -> [UInt8] {
        let r = try await radio.call(frame, expecting: .codes(CodeSet(code)), timeout: timeout)
        return try check(r, what: what)
    }

    func call(_ frame: EncodedFrame, expecting code: ResponseCode, what: String) async throws(ClientError) -> [UInt8] {
        try await call(frame.bytes, expecting: code.rawValue, what: what)
    }

    func encode(_ build: () throws(CompanionEncodeError) -> EncodedFrame) throws(ClientError) -> EncodedFrame {
        do { return try build() } catch { throw .usage("\(error)".hasSuffix(".") ? "\(error)" : "\(error): check the value and try again.") }
    }

    func check(_ r: Reply, what: String) throws(ClientError) -> [UInt8] {
        switch r {
        case .ok: return [ResponseCode.ok.rawValue]
        case .frame(let f): return f
        case .contacts: return []
        case .error(let code): throw .radio(what, code: code)
        case .disabled: throw .refused("the radio refused \(what): the feature is disabled in its firmware build.", code: ResponseCode.disabled.rawValue)
        case .timeout: throw .timeout("the radio did not answer \(what) within \(timeout / 1000) s: check the link or raise --timeout.")
        case .sent: return []
        case .cancelled: throw .link("the link to the radio was lost during \(what): reconnect and try again.")
        }
    }

    public func contacts(refresh: Bool = false) async throws(ClientError) -> [ContactSummary] {
        if let c = contactCache, !refresh { return c }
        let r = try await radio.listContacts()
        guard case .contacts(let listing) = r else {
            _ = try check(r, what: "the contact listing")
            throw .link("the radio answered the contact listing with something unexpected: try again.")
        }
        let list = listing.records.compactMap(ContactSummary.init(record:))
        contactCache = list
        return list
    }

    /// A contact by exact name, case-insensitive name, or hex key prefix.
    /// A contact by the rules of `NameMatch` (exact or case-insensitive name, hex key prefix,
    /// start of a name), the same as the daemon's API and `history`.
    public func resolve(_ who: String) async throws(ClientError) -> ContactSummary {
        let all = try await contacts()
        switch NameMatch.find(who, names: all.map(\.name), keys: all.map(\.publicKey)) {
        case .one(let i):
            return all[i]
        case .ambiguous(let n):
            throw .usage("\"\(who)\" matches \(n) contacts: give the whole name or more hex digits of the key.")
        case .none:
            throw .notFound("no contact named or keyed \"\(who)\": run `pocketmesh contacts` to list them (adverts add contacts).")
        }
    }

    public func channels() async throws(ClientError) -> [ChannelSummary] {
        let max = radio.session.radioDevice?.maxChannels ?? 8
        var out: [ChannelSummary] = []
        for i in 0..<max {
            let f = try await call(CommandFrame.getChannel(UInt8(i)), expecting: .channelInfo, what: "GET_CHANNEL \(i)")
            if let c = CompanionFrame.owned(f, { frame -> ChannelSummary? in
                guard case .channelInfo(let c) = frame else { return nil }
                return ChannelSummary(index: c.index, name: c.name, secret: Array(c.secret))
            }) { out.append(c) }
        }
        return out
    }

    /// A channel by index or name. `inUse`: only one with a secret (sending on an empty slot, or
    /// sharing its link, would use an all-zero key): an empty one is not found (exit 6).
    public func resolveChannel(_ which: String, inUse: Bool = false) async throws(ClientError) -> ChannelSummary {
        let all = try await channels()
        if let i = Int(which) {
            if let c = all.first(where: { Int($0.index) == i }) {
                if inUse && !c.secret.contains(where: { $0 != 0 }) {
                    throw .notFound("channel \(i) is empty (it has no secret): set it with `pocketmesh channel add` or `channel set` first.")
                }
                return c
            }
            throw .notFound("channel \(i) does not exist (the radio has \(all.count) slots): run `pocketmesh channel list`.")
        }
        let want = which.lowercased()
        let alt = want.hasPrefix("#") ? String(want.dropFirst()) : "#" + want
        if let c = all.first(where: { !$0.isEmpty && ($0.name.lowercased() == want || $0.name.lowercased() == alt) }),
           !inUse || c.secret.contains(where: { $0 != 0 }) { return c }
        throw .notFound("no channel named \"\(which)\": run `pocketmesh channel list`, or add it with `pocketmesh channel set`.")
    }

    func publicKey(_ c: ContactSummary) -> MeshCompanion.PublicKey { MeshCompanion.PublicKey(c.publicKey)! }

    func ok(_ what: String) -> Value { .object([("status", .string("ok")), ("done", .string(what))]) }

    // MARK: execute

    /// Runs a request to its end on the command line's link (the `Radio`'s waits spin its loop).
    @available(*, noasync, message: "an operation waits through the port: use the async form")
    public func execute(_ request: Request) throws(ClientError) -> Outcome {
        try OperationJobs.runToEnd { () async throws(ClientError) -> Outcome in try await self.run(request) }
    }

    /// The contacts, a contact, the channels and a channel, for the command line (see the
    /// operations' own, which wait through the port).
    @available(*, noasync, message: "an operation waits through the port: use the async form")
    public func contacts(refresh: Bool = false) throws(ClientError) -> [ContactSummary] {
        try OperationJobs.runToEnd { () async throws(ClientError) -> [ContactSummary] in try await self.contacts(refresh: refresh) }
    }

    @available(*, noasync, message: "an operation waits through the port: use the async form")
    public func resolve(_ who: String) throws(ClientError) -> ContactSummary {
        try OperationJobs.runToEnd { () async throws(ClientError) -> ContactSummary in try await self.resolve(who) }
    }

    @available(*, noasync, message: "an operation waits through the port: use the async form")
    public func resolveChannel(_ which: String, inUse: Bool = false) throws(ClientError) -> ChannelSummary {
        try OperationJobs.runToEnd { () async throws(ClientError) -> ChannelSummary in try await self.resolveChannel(which, inUse: inUse) }
    }

    /// Every channel slot, empty ones included.
    @available(*, noasync, message: "an operation waits through the port: use the async form")
    public func channelList() throws(ClientError) -> [ChannelSummary] {
        try OperationJobs.runToEnd { () async throws(ClientError) -> [ChannelSummary] in try await self.channels() }
    }

    /// Runs a request: the one implementation of every operation, whatever the shell.
    public func run(_ request: Request) async throws(ClientError) -> Outcome {
        try request.validate()
        switch request {
        case .info:
            return Outcome(try await info())
        case .contacts:
            return Outcome(.array(try await contacts(refresh: true).map(\.value)))
        case .contactShow(let who):
            if who.count == 64, Hex.decode(who) != nil, (try? await resolve(who)) == nil { return try await contactByKey(who) }
            return Outcome(try await resolve(who).value)
        case .contactAdd(let keyHex, let name, let type, let pathHex):
            guard let key = MeshCompanion.PublicKey(hex: keyHex) else { throw .usage("a public key must be 64 hex digits.") }
            let c = try await contactToAdd(key, name: name, type: type, path: pathHex)
            let frame = try encode { () throws(CompanionEncodeError) in try CommandFrame.addUpdateContact(c.contact, includeLastModified: false) }
            _ = try await call(frame, expecting: .ok, what: "adding the contact")
            contactCache = nil
            return Outcome(ok(c.known ? "contact \(name) updated" : "contact \(name) added"))
        case .contactRemove(let who):
            let c = try await resolve(who)
            _ = try await call(CommandFrame.removeContact(publicKey(c)), expecting: .ok, what: "removing \(c.name)")
            return Outcome(ok("removed \(c.name)"))
        case .contactResetPath(let who):
            let c = try await resolve(who)
            _ = try await call(CommandFrame.resetPath(publicKey(c)), expecting: .ok, what: "resetting the path of \(c.name)")
            return Outcome(ok("path of \(c.name) reset (next message floods)"))
        case .contactShare(let who):
            let c = try await resolve(who)
            _ = try await call(CommandFrame.shareContact(publicKey(c)), expecting: .ok, what: "sharing \(c.name)")
            return Outcome(ok("shared \(c.name) zero-hop"))
        case .contactExport(let who):
            var key: MeshCompanion.PublicKey? = nil
            if let w = who { key = publicKey(try await resolve(w)) }
            let f = try await call(CommandFrame.exportContact(key), expecting: .exportContact, what: "exporting the contact")
            return Outcome(.object([("advert", .hex(f.dropFirst()))]))
        case .contactImport(let hex):
            guard let bytes = Hex.decode(hex), bytes.count > 98 else {
                throw .usage("give the exported advert as hex (more than 98 bytes), as `pocketmesh contacts export` prints it.")
            }
            let frame = try encode { () throws(CompanionEncodeError) in try CommandFrame.importContact(advertPacket: bytes) }
            _ = try await call(frame, expecting: .ok, what: "importing the contact")
            return Outcome(ok("contact imported"))
        case .contactFavourite(let who, let on): return try await contactFavourite(who, on: on)
        case .contactResetAdvertTime(let who): return try await contactResetAdvertTime(who)
        case .contactURI(let who): return try await contactURI(who)
        case .contactImportLink(let text): return try await importLink(text)
        case .channelURI(let which): return try await channelURI(which)
        case .channelImport(let text): return try await channelImport(text)
        case .channelAdd(let name, let secret): return try await channelAdd(name, secret: secret)
        case .timeSet(let epoch): return try await timeSet(epoch)
        case .scope(let name): return try await scope(name)
        case .discover(let ms, let types): return try await discover(waitMs: ms, types: types)
        case .contactSetPath(let who, let path): return try await contactSetPath(who, hex: path)
        case .contactPermissions(let who, let grant): return try await contactPermissions(who, grant)
        case .contactByKey(let hex): return try await contactByKey(hex)
        case .hasConnection(let who): return try await hasConnection(who)
        case .binaryRequest(let who, let hex): return try await binaryRequest(who, hex: hex)
        case .mma(let who, let from, let to): return try await mma(who, from: from, to: to)
        case .channelData(let which, let type, let hex): return try await channelData(which, dataType: type, hex: hex)
        case .rawData(let path, let hex): return try await rawData(path: path, hex: hex)
        case .rawPacket(let hex, let priority): return try await rawPacket(hex: hex, priority: priority)
        case .localCommand(let text): return try await localCommand(text)
        case .regions(let who): return try await anonymous(who, .regions)
        case .owner(let who): return try await anonymous(who, .owner)
        case .clock(let who): return try await anonymous(who, .basic)
        case .contactPath(let who):
            let c = try await resolve(who)
            var fields: [Value.Field] = [
                ("name", .string(c.name)),
                ("out_path_length", .int(PathLength(rawValue: c.outPathLength).isUnknown ? -1 : PathLength(rawValue: c.outPathLength).hopCount)),
                ("out_path", .hex(c.outPath)),
            ]
            let r = try await radio.call(CommandFrame.getAdvertPath(publicKey(c)).bytes,
                                   expecting: .codes(CodeSet(ResponseCode.advertPath.rawValue)), timeout: timeout)
            if case .frame(let f) = r, let (at, path) = CompanionFrame.owned(f, { frame -> (UInt32, [UInt8])? in
                if case .advertPath(let p) = frame { return (p.receivedTimestamp, Array(p.path)) }
                return nil
            }) {
                fields.append(("advert_received", .int(at)))
                fields.append(("advert_path", .hex(path)))
            }
            return Outcome(.object(fields))
        case .contactDiscoverPath(let who):
            let c = try await resolve(who)
            let o = try await radio.request(.pathDiscovery(publicKey: c.publicKey))
            let f = try requestReply(o, what: "path discovery to \(c.name)")
            guard case .pathDiscovery(_, _, let out, _, let inPath) = Push(frame: f).kind else {
                throw .link("the radio sent a malformed path discovery reply: try again.")
            }
            return Outcome(.object([("name", .string(c.name)), ("out_path", .hex(out)), ("in_path", .hex(inPath))]))
        case .send(let to, let text, let wait):
            return try await send(to: to, text: text, wait: wait)
        case .channels:
            return Outcome(.array(try await channels().filter { !$0.isEmpty }.map(\.value)))
        case .channelSet(let index, let name, let secretHex, let hashtag):
            let secret: [UInt8]
            if let s = secretHex {
                guard let b = Hex.decode(s), b.count == 16 else { throw .usage("the channel secret must be 32 hex digits (16 bytes).") }
                secret = b
            } else if hashtag || name.hasPrefix("#") {
                secret = ChannelSecret(hashtag: name).key
            } else {
                throw .usage("give --secret HEX, or a #name (or --hashtag) for a hashtag channel.")
            }
            let chanName = hashtag && !name.hasPrefix("#") ? "#" + name : name
            guard index >= 0, index < 256 else { throw .usage("the channel index must be 0–255.") }
            let frame = try encode { () throws(CompanionEncodeError) in try CommandFrame.setChannel(UInt8(index), name: chanName, secret: secret) }
            _ = try await call(frame, expecting: .ok, what: "setting channel \(index)")
            return Outcome(ChannelSummary(index: UInt8(index), name: chanName, secret: secret).value)
        case .channelRemove(let which):
            let c = try await resolveChannel(which)
            let frame = try encode { () throws(CompanionEncodeError) in try CommandFrame.setChannel(c.index, name: "", secret: [UInt8](repeating: 0, count: 16)) }
            _ = try await call(frame, expecting: .ok, what: "removing channel \(c.index)")
            return Outcome(ok("channel \(c.index) removed"))
        case .channelSend(let which, let text, let waitMs):
            let c = try await resolveChannel(which, inUse: true)
            let timestamp = wallClockEpoch()
            let frame = try encode { () throws(CompanionEncodeError) in
                try CommandFrame.sendChannelTextMessage(channel: c.index, text: text, timestamp: timestamp)
            }
            let listening = waitMs > 0 ? startHearingRepeats(of: c, text: text, timestamp: timestamp) : nil
            do { _ = try await call(frame, expecting: .ok, what: "sending to channel \(c.index)") } catch {
                listening?.stop()
                throw error
            }
            var fields: [Value.Field] = [("status", .string("sent")), ("channel", .int(c.index)), ("name", .string(c.name))]
            if let listening {
                let heard = try await listening.finish(waitMs: waitMs)
                fields.append(("heard_repeats", .int(heard.count)))
                fields.append(("repeats", .array(heard)))
            }
            return Outcome(.object(fields))
        case .sync:
            try await radio.drain()
            let cs = (try? await contacts()) ?? []
            let msgs = collected.map { messageValue($0, contacts: cs) }
            collected.removeAll()
            return Outcome(.array(msgs))
        case .advert(let flood):
            _ = try await call(CommandFrame.sendSelfAdvert(flood: flood), expecting: .ok, what: "sending an advert")
            return Outcome(ok(flood ? "flood advert sent" : "zero-hop advert sent"))
        case .timeGet:
            let f = try await call(CommandFrame.getDeviceTime(), expecting: .currentTime, what: "GET_DEVICE_TIME")
            guard let t = CompanionFrame.owned(f, { if case .currentTime(let t) = $0 { return t }; return nil }) else {
                throw .link("the radio sent a malformed time frame: try again.")
            }
            return Outcome(.object([("epoch", .int(t)), ("host_epoch", .int(wallClockEpoch())),
                                    ("offset_s", .int(Int64(t) - Int64(wallClockEpoch())))]))
        case .timeSync:
            let now = wallClockEpoch()
            let r = try await radio.call(CommandFrame.setDeviceTime(now).bytes, expecting: .codes(CodeSet(0)), timeout: timeout)
            if case .error(6) = r {
                throw .refused("the radio refused the time with ERR 6 (illegal argument): its clock is ahead of this host's and cannot move backwards; fix the host clock or reboot the radio.", code: 6)
            }
            _ = try check(r, what: "setting the time")
            return Outcome(.object([("status", .string("ok")), ("epoch", .int(now))]))
        case .get(let key):
            return Outcome(try await getSetting(key))
        case .set(let key, let values):
            return Outcome(try await setSetting(key, values))
        case .battery:
            let f = try await call(CommandFrame.getBatteryAndStorage(), expecting: .batteryAndStorage, what: "GET_BATT_AND_STORAGE")
            guard let b = CompanionFrame.owned(f, { if case .batteryAndStorage(let b) = $0 { return b }; return nil }) else {
                throw .link("the radio sent a malformed battery frame: try again.")
            }
            var fields: [Value.Field] = [("millivolts", .int(b.millivolts))]
            if let used = b.usedKB, let total = b.totalKB {
                fields.append(("storage_used_kb", .int(used)))
                fields.append(("storage_total_kb", .int(total)))
            }
            return Outcome(.object(fields))
        case .stats(let which):
            return Outcome(try await stats(which))
        case .login(let who, let password):
            let c = try await resolve(who)
            let o = try await radio.request(.login(publicKey: c.publicKey, password: password))
            let f = try requestReply(o, what: "login to \(c.name)", timeoutHint: "check the password (servers do not answer a wrong one)")
            guard case .loginSuccess(let l) = Push(frame: f).kind else {
                return Outcome(.object([("status", .string("failed")), ("name", .string(c.name))]),
                               error: .refused("\(c.name) rejected the login: check the password.", code: 0))
            }
            var fields: [Value.Field] = [("status", .string("ok")), ("name", .string(c.name)),
                                         ("admin", .bool(l.isAdmin))]
            if let acl = l.aclPermissions, let level = l.firmwareLevel {
                fields.append(("acl_permissions", .int(acl)))
                fields.append(("firmware_level", .int(level)))
            }
            return Outcome(.object(fields))
        case .logout(let who):
            let c = try await resolve(who)
            _ = try await call(CommandFrame.logout(publicKey(c)), expecting: .ok, what: "logging out of \(c.name)")
            return Outcome(ok("logged out of \(c.name)"))
        case .status(let who):
            let c = try await resolve(who)
            let o = try await radio.request(.status(publicKey: c.publicKey))
            let f = try requestReply(o, what: "status of \(c.name)", timeoutHint: "log in first (`pocketmesh login`)")
            return Outcome(statusValue(f, name: c.name))
        case .telemetry(let who):
            if let who {
                let c = try await resolve(who)
                let o = try await radio.request(.telemetry(publicKey: c.publicKey))
                let f = try requestReply(o, what: "telemetry of \(c.name)", timeoutHint: "the node may deny telemetry")
                return Outcome(telemetryValue(f, name: c.name))
            }
            let r = try await radio.call(CommandFrame.sendTelemetryRequest(nil).bytes,
                                   expecting: .codes(CodeSet(PushCode.telemetryResponse.rawValue)), timeout: timeout)
            return Outcome(telemetryValue(try check(r, what: "self telemetry"), name: nil))
        case .neighbours(let who):
            return Outcome(try await neighbours(of: try await resolve(who)))
        case .acl(let who):
            let c = try await resolve(who)
            let o = try await radio.request(.binary(publicKey: c.publicKey, data: RemoteRequestData.accessList()))
            let f = try requestReply(o, what: "the ACL of \(c.name)", timeoutHint: "log in as admin first")
            let entries = AccessListEntry.list(frame: f) ?? []
            return Outcome(.array(entries.map { .object([("prefix", .hex($0.prefix)), ("permissions", .int($0.permissions))]) }))
        case .command(let who, let text):
            return try await command(text, to: try await resolve(who))
        case .trace(let pathText):
            var path: [UInt8] = []
            for part in pathText.split(separator: ",") {
                guard let b = Hex.decode(String(part)), b.count == 1 else {
                    throw .usage("give the trace path as comma-separated 1-byte hex hashes, e.g. 5f,33,5f.")
                }
                path += b
            }
            var rng = SystemRandomNumberGenerator()
            let tag = UInt32.random(in: 1...UInt32.max, using: &rng)
            let o = try await radio.request(.trace(tag: tag, auth: 0, flags: 0, path: path))
            let f = try requestReply(o, what: "the trace", timeoutHint: "check the hop hashes")
            return Outcome(traceValue(f))
        case .sign(let hex):
            guard let data = Hex.decode(hex) else { throw .usage("give the data to sign as hex.") }
            _ = try await call(CommandFrame.signStart(), expecting: .signStart, what: "SIGN_START")
            var i = 0
            while i < data.count {
                let chunk = Array(data[i..<min(data.count, i + 128)])
                let frame = try encode { () throws(CompanionEncodeError) in try CommandFrame.signData(chunk) }
                _ = try await call(frame, expecting: .ok, what: "SIGN_DATA")
                i += 128
            }
            let f = try await call(CommandFrame.signFinish(), expecting: .signature, what: "SIGN_FINISH")
            return Outcome(.object([("signature", .hex(f.dropFirst()))]))
        case .keyExport:
            let f = try await call(CommandFrame.exportPrivateKey(), expecting: .privateKey, what: "exporting the private key")
            return Outcome(.object([("private_key", .hex(f.dropFirst()))]))
        case .keyImport(let hex):
            guard let key = Hex.decode(hex), key.count == 64 else { throw .usage("the private key must be 128 hex digits (64 bytes).") }
            let frame = try encode { () throws(CompanionEncodeError) in try CommandFrame.importPrivateKey(key) }
            _ = try await call(frame, expecting: .ok, what: "importing the private key")
            return Outcome(ok("private key imported"))
        case .reboot:
            _ = try await radio.call(CommandFrame.reboot().bytes, expecting: .noReply)
            return Outcome(ok("reboot sent"))
        case .factoryReset:
            let r = try await radio.call(CommandFrame.factoryReset().bytes, expecting: .codes(CodeSet(0)), timeout: 2_000)
            switch r {
            case .ok, .timeout, .cancelled: return Outcome(ok("factory reset sent"))
            default: _ = try check(r, what: "the factory reset"); return Outcome(ok("factory reset sent"))
            }
        case .raw(let hex):
            guard let bytes = Hex.decode(hex), !bytes.isEmpty, bytes.count <= 176 else {
                throw .usage("give one frame as 1 to 176 bytes of hex, e.g. 16 03.")
            }
            let r = try await radio.call(bytes, expecting: .anyResponse, timeout: timeout)
            switch r {
            case .ok: return Outcome(.object([("reply", .hex([ResponseCode.ok.rawValue]))]))
            case .frame(let f): return Outcome(.object([("reply", .hex(f))]))
            case .error(let e): return Outcome(.object([("reply", .hex(ResponseFrame.error(rawCode: e).bytes))]))
            case .disabled: return Outcome(.object([("reply", .hex([ResponseCode.disabled.rawValue]))]))
            default: _ = try check(r, what: "the raw frame"); return Outcome(.null)
            }
        }
    }

    /// Collects drained messages (called by the command line from `Radio.onEvent`).
    public func collect(_ m: ReceivedMessage) { collected.append(m) }

    func requestReply(_ o: RequestOutcome, what: String, timeoutHint: String = "the node may be out of range") throws(ClientError) -> [UInt8] {
        switch o {
        case .reply(let f): return f
        case .timeout: throw .timeout("no reply to \(what) in time: \(timeoutHint), or try again.")
        case .superseded: throw .timeout("\(what) was superseded by a newer request: send one request at a time.")
        case .refused(let code): throw .radio(what, code: code, hint: code == 2 ? "the contact is not known to the radio" : "check the arguments")
        case .cancelled: throw .link("the link to the radio was lost during \(what): reconnect and try again.")
        case .sent: throw .timeout("no reply to \(what) in time: try again.")
        }
    }

    // MARK: contacts

    /// What ADD_UPDATE_CONTACT writes, whole. A contact the radio knows keeps its type, flags,
    /// location, last advert time and path unless new ones are given. A new one gets last_advert 0
    /// (as meshcore-cli does): the firmware takes an advert as a replay unless its timestamp is
    /// newer, so this host's clock there would hide the node's adverts while its clock lags.
    func contactToAdd(_ key: MeshCompanion.PublicKey, name: String, type: UInt8?, path: String?) async throws(ClientError) -> (contact: Contact, known: Bool) {
        let keyBytes = key.bytes
        let old = try await contacts(refresh: true).first { $0.publicKey == keyBytes }
        var c = Contact(publicKey: key, type: ContactType(rawValue: type ?? old?.type ?? ContactType.chat.rawValue),
                        flags: old?.flags ?? 0, name: name, lastAdvertTimestamp: old?.lastAdvert ?? 0,
                        latitude: old?.latitude ?? 0, longitude: old?.longitude ?? 0)
        if let p = path {
            if !p.isEmpty {
                let (len, bytes) = try hopPath(p)
                do { try c.setOutPath(len, bytes) } catch { throw .usage("the path is not valid: \(error).") }
            }
        } else if let o = old, o.outPathLength != PathLength.unknown.rawValue {
            do { try c.setOutPath(PathLength(rawValue: o.outPathLength), o.outPath) } catch {
                throw .link("the radio's path for \(o.name) is malformed: give --path, or an empty --path to flood.")
            }
        }
        return (c, old != nil)
    }

    // MARK: remote CLI

    /// Runs a CLI command on a repeater, room server or sensor (txt_type 1), or on a companion
    /// (txt_type 3, companion protocol 14: the node runs it only if it gave this radio remote CLI
    /// permission, else its app gets it as a message). The reply is a contact message (txt_type 1)
    /// that the radio queues: the session drains on MSG_WAITING while the command waits, and looks
    /// once more at the end. Other messages taken off the queue meanwhile are part of the result,
    /// so none is lost.
    func command(_ text: String, to c: ContactSummary) async throws(ClientError) -> Outcome {
        let companion = c.type == ContactType.chat.rawValue
        if companion {
            try requireCLIProtocol("a CLI command to the companion \(c.name) (text type 3)",
                                   alternative: "send it as a message (`pocketmesh send`)")
        }
        let o = try await radio.request(.command(publicKey: c.publicKey, text: text, timestamp: wallClockEpoch(),
                                           textType: companion ? .cliCommand : .cliData))
        var reply: String? = nil
        var failure: ClientError? = nil
        switch o {
        case .reply(let f):
            reply = (try? ReceivedMessage(frame: f))?.textString ?? ""
        case .timeout:
            reply = try await lateCommandReply(from: c)
            if reply == nil {
                failure = .timeout(companion
                    ? "no reply to the command to \(c.name) in time: that node runs commands only from contacts it gave remote CLI permission (`pocketmesh contacts permissions NAME cli` there), or try again."
                    : "no reply to the command to \(c.name) in time: log in as admin first (`pocketmesh login`), or try again.")
            }
        default:
            _ = try requestReply(o, what: "the command to \(c.name)", timeoutHint: companion ? "give this radio remote CLI permission on that node" : "log in as admin first")
        }
        // The drain that brought the reply may still be under way: no message is left half taken.
        try await radio.finishDrain()
        let cs = (try? await contacts()) ?? []
        let others = collected.map { messageValue($0, contacts: cs) }
        collected.removeAll()
        return Outcome(.object([("name", .string(c.name)), ("reply", reply.map { .string($0) } ?? .null),
                                ("messages", .array(others))]), error: failure)
    }

    /// The CLI reply when no MSG_WAITING announced it: one last look at the radio's queue.
    func lateCommandReply(from c: ContactSummary) async throws(ClientError) -> String? {
        try await radio.drain()
        guard let i = collected.firstIndex(where: {
            $0.kind == .contact && $0.textType == .cliData && !$0.senderPrefix.isEmpty && c.publicKey.starts(with: $0.senderPrefix)
        }) else { return nil }
        return collected.remove(at: i).textString
    }
}
