import MeshAir
import MeshCompanion
import MeshSession

// The rest of the companion protocol as operations: node discovery, contact paths and telemetry
// permissions, contacts by key, connection state, generic binary and min/max/avg requests,
// channel datagrams, raw data and raw packets, and the radio's own CLI (protocol 14).

/// Advert types as the discover filter names them (bit `1 << type`).
public enum DiscoverTypes {
    public static let all: UInt8 = 1 << 1 | 1 << 2 | 1 << 3 | 1 << 4

    /// "repeater,room" → the filter byte; nil for an unknown name.
    public static func filter(_ names: String) -> UInt8? {
        var bits: UInt8 = 0
        for n in names.split(separator: ",") {
            switch n.lowercased() {
            case "chat", "companion": bits |= 1 << 1
            case "repeater": bits |= 1 << 2
            case "room": bits |= 1 << 3
            case "sensor": bits |= 1 << 4
            case "all": bits |= all
            default: return nil
            }
        }
        return bits == 0 ? nil : bits
    }
}

/// One min/max/avg record of a MMA reply: channel, LPP type and three values of that type.
public struct MMARecord: Equatable, Sendable {
    public var channel: UInt8
    public var type: LPPType
    public var min: LPPValue
    public var max: LPPValue
    public var avg: LPPValue

    /// The records of a MMA reply (after the 4-byte tag): until a zero channel or the end; nil
    /// when a record is cut short or has an unknown type.
    public static func decode(_ b: [UInt8]) -> [MMARecord]? {
        var out: [MMARecord] = []
        var i = 0
        while i < b.count, b[i] != 0 {
            guard i + 2 <= b.count, let type = LPPType(rawValue: b[i + 1]) else { return nil }
            let n = type.size
            guard i + 2 + 3 * n <= b.count else { return nil }
            var values: [LPPValue] = []
            for k in 0..<3 {
                // One LPP record (channel, type, value) per value, read by MeshCompanion's reader.
                let rec = [b[i], b[i + 1]] + b[(i + 2 + k * n)..<(i + 2 + (k + 1) * n)]
                guard let v = rec.withUnsafeBytes({ buf -> LPPValue? in
                    var r = LPPReader(buf)
                    return (try? r.next())?.map(\.value)
                }) else { return nil }
                values.append(v)
            }
            out.append(MMARecord(channel: b[i], type: type, min: values[0], max: values[1], avg: values[2]))
            i += 2 + 3 * n
        }
        return out
    }
}

extension Executor {
    /// DISCOVER_REQ (CONTROL, zero-hop) and the DISCOVER_RESPs heard within `waitMs`.
    func discover(waitMs: Int, types: UInt8) async throws(ClientError) -> Outcome {
        var rng = SystemRandomNumberGenerator()
        let tag = UInt32.random(in: 1...UInt32.max, using: &rng)
        let payload = ControlPayload.discoverRequest(prefixOnly: false, typeFilter: types, tag: tag, since: nil).encoded
        var heard: [(key: [UInt8], type: AdvertType, snrThere: Int8, snr: Int8, rssi: Int8)] = []
        let token = radio.observe { e in
            guard case .push(let p) = e, case .controlData(let snr, let rssi, _, let data) = p.kind,
                  case .discoverResponse(let type, let snrThere, let t, let key)? = try? ControlPayload(payload: data), t == tag,
                  !heard.contains(where: { $0.key == key }) else { return }
            heard.append((key, type, snrThere, snr, rssi))
        }
        defer { radio.stopObserving(token) }
        let frame = try encode { () throws(CompanionEncodeError) in try CommandFrame.sendControlData(payload) }
        _ = try await call(frame, expecting: .ok, what: "the discovery request")
        try await radio.sleep(until: radio.now + UInt64(waitMs))
        let known = (try? await contacts()) ?? []
        let nodes: [Value] = heard.map { h in
            let c = known.first { $0.publicKey.starts(with: h.key) }
            return .object([
                ("name", c.map { .string($0.name) } ?? .null),
                ("public_key", .hex(c?.publicKey ?? h.key)),
                ("type", .string(ContactType(rawValue: h.type.rawValue).description)),
                ("snr", .double(Double(h.snr) / 4)),
                ("rssi", .int(h.rssi)),
                ("snr_there", .double(Double(h.snrThere) / 4)),
            ])
        }
        let value = Value.object([("tag", .int(tag)), ("nodes", .array(nodes))])
        if nodes.isEmpty {
            return Outcome(value, error: .notFound("no node answered the discovery request within \(Value.formatDouble(Double(waitMs) / 1000)) s: repeaters answer only a request they hear directly, at most 4 times in 2 minutes."))
        }
        return Outcome(value)
    }

    /// A path as meshcore-cli writes one: hex hop hashes, all of the radio's path hash size; or
    /// comma-separated hops, whose width (1 to 3 bytes, the same for all) is the hash size
    /// (`5f1a,33b2`: two hops of 2 bytes); `HEX:MODE` names the hash size as a path hash mode (0–2).
    /// The encoded path length (hash size in its top bits, as the firmware's `path_len`) and the bytes.
    func hopPath(_ text: String) throws(ClientError) -> (PathLength, [UInt8]) {
        var hashSize = Int(radio.session.radioDevice?.pathHashMode ?? 0) + 1
        var hex = Substring(text)
        var modeGiven = false
        if let colon = hex.firstIndex(of: ":") {
            guard let mode = Int(hex[hex.index(after: colon)...]), (0...2).contains(mode) else {
                throw .usage("the path hash mode after \":\" must be 0, 1 or 2 (hashes of 1 to 3 bytes), e.g. 5f1a33b2:1.")
            }
            hashSize = mode + 1
            modeGiven = true
            hex = hex[..<colon]
        }
        let hops = hex.split(separator: ",", omittingEmptySubsequences: false).map { Hex.decode(String($0)) }
        if hops.count > 1 {
            guard let width = hops[0]?.count, (1...3).contains(width), hops.allSatisfy({ $0?.count == width }),
                  !modeGiven || width == hashSize else {
                throw .usage("give the path as comma-separated hop hashes of one width, 1 to 3 bytes each (5f,33 or 5f1a,33b2), not \"\(text)\".")
            }
            hashSize = width
        }
        guard hops.allSatisfy({ $0 != nil }), case let bytes = hops.flatMap({ $0! }), !bytes.isEmpty, bytes.count % hashSize == 0,
              let len = PathLength(hopCount: bytes.count / hashSize, hashSize: hashSize) else {
            throw .usage("the path must be hex hop hashes of \(hashSize) byte\(hashSize == 1 ? "" : "s") each (\(modeGiven ? "the mode given" : "the radio's path hash size"); or comma-separated, 5f1a,33b2), at most 64 bytes, not \"\(text)\".")
        }
        return (len, bytes)
    }

    /// Sets a contact's path by hand (hex hop hashes, as `hopPath` reads them; "" or "0" is zero
    /// hops: a neighbour heard directly).
    func contactSetPath(_ who: String, hex: String) async throws(ClientError) -> Outcome {
        let c = try await resolve(who)
        var (contact, _) = try await contactToAdd(publicKey(c), name: c.name, type: nil, path: nil)
        let (len, bytes) = try hex.isEmpty || hex == "0" ? (PathLength.zeroHop, []) : hopPath(hex)
        do { try contact.setOutPath(len, bytes) } catch { throw .usage("the path is not valid: \(error).") }
        let frame = try encode { () throws(CompanionEncodeError) in try CommandFrame.addUpdateContact(contact, includeLastModified: false) }
        _ = try await call(frame, expecting: .ok, what: "setting the path of \(c.name)")
        contactCache = nil
        return Outcome(.object([("status", .string("ok")), ("name", .string(c.name)), ("path", .hex(contact.outPath)),
                                ("hops", .int(contact.outPathLength.hopCount))]))
    }

    /// Permissions granted to a contact (flags bits 1–4): telemetry (bits 1–3, used when the radio's
    /// telemetry modes are `flags`) and, on protocol 14 radios, remote CLI (bit 4: the contact may
    /// run CLI commands on this radio). The list is the whole set; the favourite bit and the rest of
    /// the contact are kept.
    func contactPermissions(_ who: String, _ grant: String) async throws(ClientError) -> Outcome {
        var bits: UInt8 = 0
        for p in grant.split(separator: ",") {
            switch p.lowercased() {
            case "base": bits |= ContactFlags.telemetryBase
            case "location", "loc": bits |= ContactFlags.telemetryLocation
            case "environment", "env": bits |= ContactFlags.telemetryEnvironment
            case "all": bits |= ContactFlags.telemetry
            case "cli", "remote-cli": bits |= ContactFlags.remoteCLI
            case "none": break
            default: throw .usage("permissions are base, location, environment, all (the three), cli or none (comma-separated), not \"\(p)\".")
            }
        }
        if bits & ContactFlags.remoteCLI != 0 {
            try requireCLIProtocol("the remote CLI permission (contact flag 0x10)", alternative: "leave `cli` out")
        }
        let c = try await resolve(who)
        var (contact, _) = try await contactToAdd(publicKey(c), name: c.name, type: nil, path: nil)
        let mask = ContactFlags.telemetry | ContactFlags.remoteCLI
        contact.flags = contact.flags & ~mask | bits
        let frame = try encode { () throws(CompanionEncodeError) in try CommandFrame.addUpdateContact(contact, includeLastModified: false) }
        _ = try await call(frame, expecting: .ok, what: "updating \(c.name)")
        contactCache = nil
        return Outcome(.object([("status", .string("ok")), ("name", .string(c.name)),
                                ("base", .bool(bits & ContactFlags.telemetryBase != 0)),
                                ("location", .bool(bits & ContactFlags.telemetryLocation != 0)),
                                ("environment", .bool(bits & ContactFlags.telemetryEnvironment != 0)),
                                ("cli", .bool(bits & ContactFlags.remoteCLI != 0)), ("flags", .int(contact.flags))]))
    }

    /// GET_CONTACT_BY_KEY: also finds contacts the listing leaves out (transient ones).
    func contactByKey(_ hex: String) async throws(ClientError) -> Outcome {
        guard let key = MeshCompanion.PublicKey(hex: hex) else { throw .usage("a public key must be 64 hex digits.") }
        let r = try await radio.call(CommandFrame.getContactByKey(key).bytes, expecting: .codes(CodeSet(ResponseCode.contact.rawValue)), timeout: timeout)
        if case .error(2) = r { throw .notFound("the radio knows no contact with key \(hex.prefix(12))….") }
        let f = try check(r, what: "the contact lookup")
        guard let c = ContactSummary(record: f) else { throw .link("the radio sent a malformed contact: try again.") }
        return Outcome(c.value)
    }

    /// HAS_CONNECTION: whether the radio has a logged-in session with a server.
    func hasConnection(_ who: String) async throws(ClientError) -> Outcome {
        let c = try await resolve(who)
        let r = try await radio.call(CommandFrame.hasConnection(publicKey(c)).bytes, expecting: .codes(CodeSet(ResponseCode.ok.rawValue)), timeout: timeout)
        let connected: Bool
        switch r {
        case .ok, .frame: connected = true
        case .error(2): connected = false
        default: _ = try check(r, what: "the connection check"); connected = false
        }
        return Outcome(.object([("name", .string(c.name)), ("connected", .bool(connected))]))
    }

    /// SEND_BINARY_REQ with the data as given (its first byte is the request type); the reply's data.
    func binaryRequest(_ who: String, hex: String) async throws(ClientError) -> Outcome {
        guard let data = Hex.decode(hex), !data.isEmpty else { throw .usage("give the request as hex: its type byte first (e.g. 01 status, 06 neighbours).") }
        guard data.count <= CompanionLimits.maxBinaryRequestData else { throw .usage("the request is longer than \(CompanionLimits.maxBinaryRequestData) bytes.") }
        let c = try await resolve(who)
        let o = try await radio.request(.binary(publicKey: c.publicKey, data: data))
        let f = try requestReply(o, what: "the request to \(c.name)")
        guard case .binary(_, let reply) = Push(frame: f).kind else { throw .link("\(c.name) sent a malformed reply: try again.") }
        return Outcome(.object([("name", .string(c.name)), ("data", .hex(reply))]))
    }

    /// Min/max/avg of a sensor's readings over a time window (seconds ago), binary request 0x04.
    func mma(_ who: String, from: UInt32, to: UInt32) async throws(ClientError) -> Outcome {
        guard from > to else { throw .usage("--from must be further back than --to (seconds ago, e.g. --from 3600 --to 0).") }
        let c = try await resolve(who)
        let data = RemoteRequestData.minMaxAvg(fromSecondsAgo: from, toSecondsAgo: to)
        let o = try await radio.request(.binary(publicKey: c.publicKey, data: data))
        let f = try requestReply(o, what: "min/max/avg telemetry of \(c.name)")
        guard case .binary(_, let reply) = Push(frame: f).kind, reply.count >= 4, let records = MMARecord.decode(Array(reply.dropFirst(4))) else {
            throw .link("\(c.name) sent a malformed min/max/avg reply: try again.")
        }
        let values: [Value] = records.map { r in
            .object([("channel", .int(r.channel)), ("type", .string(r.type.name)),
                     ("min", lppValue(r.min)), ("max", lppValue(r.max)), ("avg", lppValue(r.avg))])
        }
        return Outcome(.object([("name", .string(c.name)), ("from_s_ago", .int(from)), ("to_s_ago", .int(to)),
                                ("records", .array(values))]))
    }

    func lppValue(_ v: LPPValue) -> Value {
        switch v {
        case .scalar(let d): return .double(d)
        default: return .string("\(v)")
        }
    }

    /// SEND_CHANNEL_DATA: a datagram (16-bit data type, not 0) to a channel, by flood.
    func channelData(_ which: String, dataType: UInt16, hex: String) async throws(ClientError) -> Outcome {
        guard dataType != 0 else { throw .usage("the data type must be 1–65535 (0 is reserved; 65280–65535 are for development).") }
        guard let payload = Hex.decode(hex) else { throw .usage("give the data as hex.") }
        let c = try await resolveChannel(which, inUse: true)
        let frame = try encode { () throws(CompanionEncodeError) in try CommandFrame.sendChannelData(channel: c.index, dataType: dataType, payload: payload) }
        _ = try await call(frame, expecting: .ok, what: "sending data to channel \(c.index)")
        return Outcome(.object([("status", .string("sent")), ("channel", .int(c.index)), ("name", .string(c.name)),
                                ("data_type", .int(dataType)), ("bytes", .int(payload.count))]))
    }

    /// SEND_RAW_DATA: a RAW_CUSTOM payload sent direct along `path` (hex hop hashes). Up to
    /// protocol 13 the frame carries the path's byte count (one-byte hashes); from protocol 14 on
    /// (the firmware's dev line) its encoded path length, so hop hashes of 2 or 3 bytes go through
    /// (`hopPath`).
    func rawData(path: String, hex: String) async throws(ClientError) -> Outcome {
        guard let payload = Hex.decode(hex) else { throw .usage("give the path and the payload as hex.") }
        let frame: EncodedFrame
        let pathBytes: [UInt8]
        let hops: Int
        if protocolVersion >= CompanionLimits.protocolVersionCLI {
            let (len, bytes) = try path.isEmpty ? (PathLength(hopCount: 0, hashSize: Int(radio.session.radioDevice?.pathHashMode ?? 0) + 1) ?? .zeroHop, [])
                : hopPath(path)
            frame = try encode { () throws(CompanionEncodeError) in try CommandFrame.sendRawData(pathLength: len, path: bytes, payload: payload) }
            pathBytes = bytes
            hops = len.hopCount
        } else {
            guard let p = Hex.decode(path.filter { $0 != "," }) else { throw .usage("give the path and the payload as hex.") }
            frame = try encode { () throws(CompanionEncodeError) in try CommandFrame.sendRawData(path: p, payload: payload) }
            pathBytes = p
            hops = p.count
        }
        _ = try await call(frame, expecting: .ok, what: "sending raw data")
        return Outcome(.object([("status", .string("sent")), ("path", .hex(pathBytes)), ("hops", .int(hops)),
                                ("bytes", .int(payload.count))]))
    }

    /// SEND_RAW_PACKET: a whole on-air packet, checked first by MeshAir's parser.
    func rawPacket(hex: String, priority: UInt8) async throws(ClientError) -> Outcome {
        guard let bytes = Hex.decode(hex) else { throw .usage("give the packet as hex.") }
        do { _ = try Packet(bytes: bytes) } catch { throw .usage("not a MeshCore packet: \(error).") }
        let frame = try encode { () throws(CompanionEncodeError) in try CommandFrame.sendRawPacket(priority: priority, packet: bytes) }
        _ = try await call(frame, expecting: .ok, what: "sending the packet")
        return Outcome(.object([("status", .string("sent")), ("bytes", .int(bytes.count))]))
    }

    /// RUN_CLI_COMMAND (companion protocol 14): the radio's own CLI; CLI_REPLY carries the text.
    func localCommand(_ text: String) async throws(ClientError) -> Outcome {
        try requireCLIProtocol("`cli` (RUN_CLI_COMMAND)", alternative: "use `get`/`set`")
        let frame = try encode { () throws(CompanionEncodeError) in try CommandFrame.runCLICommand(text) }
        let f = try await call(frame, expecting: .cliReply, what: "the CLI command")
        return Outcome(.object([("reply", .string(String(decoding: f.dropFirst().prefix { $0 != 0 }, as: UTF8.self)))]))
    }

    /// The radio's companion protocol version (DEVICE_INFO); 0 before the handshake.
    var protocolVersion: UInt8 { radio.session.radioDevice?.firmwareVersionCode ?? 0 }

    /// Refuses (exit 2, one sentence) what only protocol 14 radios do.
    func requireCLIProtocol(_ what: String, alternative: String) throws(ClientError) {
        let code = protocolVersion
        guard code >= CompanionLimits.protocolVersionCLI else {
            throw ClientError(.unsupported, "\(what) needs firmware with companion protocol 14 or later; this radio reports protocol \(code): update its firmware, or \(alternative).")
        }
    }

    /// GET_ALLOWED_REPEAT_FREQ: the frequency ranges (kHz) where client repeat may be on.
    func repeatFrequencies() async throws(ClientError) -> Value {
        let f = try await call(CommandFrame.getAllowedRepeatFrequencies(), expecting: .allowedRepeatFrequencies, what: "the allowed repeat frequencies")
        let ranges = CompanionFrame.owned(f) { frame -> [ClosedRange<UInt32>]? in
            if case .allowedRepeatFrequencies(let r) = frame { return Array(r) }
            return nil
        } ?? []
        return .array(ranges.map { r in .object([("from_mhz", .double(Double(r.lowerBound) / 1000)), ("to_mhz", .double(Double(r.upperBound) / 1000))]) })
    }

    /// Client repeat on or off, with the radio's current parameters (SET_RADIO_PARAMS).
    func setClientRepeat(_ on: Bool) async throws(ClientError) {
        guard let s = radio.session.radioSelf else { throw .link("the radio sent a malformed SELF_INFO frame: check its firmware.") }
        let frame = try encode { () throws(CompanionEncodeError) in try CommandFrame.setRadioParams(s.radio, clientRepeat: on) }
        let r = try await radio.call(frame.bytes, expecting: .codes(CodeSet(ResponseCode.ok.rawValue)), timeout: timeout)
        if case .error(6) = r, on {
            throw .refused("the radio refused client repeat on \(Value.formatDouble(Double(s.radio.frequencyKHz) / 1000)) MHz: it is allowed only on the frequencies `pocketmesh get repeat-freqs` lists.", code: 6)
        }
        _ = try check(r, what: "client repeat")
    }
}
