import Glibc
import MeshAir
import MeshCompanion
import MeshSession

/// A contact, owned, as the command line shows it.
public struct ContactSummary: Sendable, Equatable {
    public var publicKey: [UInt8]
    public var name: String
    public var type: UInt8
    public var flags: UInt8
    public var outPathLength: UInt8
    public var outPath: [UInt8]
    public var lastAdvert: UInt32
    public var latitude: Int32
    public var longitude: Int32
    public var lastModified: UInt32

    /// From a contact record frame (CONTACT, NEW_ADVERT; 148 bytes), decoded by MeshCompanion.
    public init?(record f: [UInt8]) {
        guard f.count >= CompanionLimits.contactRecordSize, let c = f.withUnsafeBytes({ b -> ContactSummary? in
            guard let r = try? ContactRecord.decode(b) else { return nil }
            return ContactSummary(r)
        }) else { return nil }
        self = c
    }

    init(_ r: ContactRecord) {
        publicKey = r.publicKey.bytes
        type = r.type.rawValue
        flags = r.flags
        outPathLength = r.outPathLength.rawValue
        outPath = Array(r.outPath)
        name = r.name
        lastAdvert = r.lastAdvertTimestamp
        latitude = r.latitude
        longitude = r.longitude
        lastModified = r.lastModified ?? 0
    }

    public var typeName: String { ContactType(rawValue: type).description }

    public var value: Value {
        .object([
            ("name", .string(name)),
            ("public_key", .hex(publicKey)),
            ("type", .string(typeName)),
            ("flags", .int(flags)),
            ("path_length", PathLength(rawValue: outPathLength).isUnknown ? .int(-1) : .int(PathLength(rawValue: outPathLength).hopCount)),
            ("path", .hex(outPath)),
            ("last_advert", .int(lastAdvert)),
            ("latitude", .double(Double(latitude) / 1e6)),
            ("longitude", .double(Double(longitude) / 1e6)),
            ("lastmod", .int(lastModified)),
        ])
    }
}

public struct ChannelSummary: Sendable, Equatable {
    public var index: UInt8
    public var name: String
    public var secret: [UInt8]
    public var isEmpty: Bool { name.isEmpty && !secret.contains { $0 != 0 } }
    public var value: Value {
        .object([("index", .int(index)), ("name", .string(name)), ("secret", .hex(secret))])
    }
}

/// Wall clock, epoch seconds (for message timestamps and clock sync).
public func wallClockEpoch() -> UInt32 {
    UInt32(truncatingIfNeeded: time(nil))
}

/// What a contact's message is, by its text type: a text ("direct"), a CLI reply ("cli"), a room
/// post ("room"), or a CLI command (text type 3, protocol 14) the radio handed to the app because
/// its sender may not run it there ("cli_command"). The one naming of `listen`/`sync` and the store's JSON.
public func contactMessageKind(_ t: TextType) -> String {
    switch t {
    case .cliData: return "cli"
    case .signedPlain: return "room"
    case .cliCommand: return "cli_command"
    default: return "direct"
    }
}

/// The message as the command line prints it (text and JSON).
public func messageValue(_ m: ReceivedMessage, contacts: [ContactSummary] = []) -> Value {
    var fields: [Value.Field] = []
    switch m.kind {
    case .contact:
        fields.append(("kind", .string(contactMessageKind(m.textType))))
        fields.append(("from", .hex(m.senderPrefix)))
        if let c = contacts.first(where: { Array($0.publicKey.prefix(6)) == m.senderPrefix }) {
            fields.append(("name", .string(c.name)))
        }
        if !m.authorPrefix.isEmpty { fields.append(("author", .hex(m.authorPrefix))) }
    case .channel:
        fields.append(("kind", .string("channel")))
        fields.append(("channel", .int(m.channelIndex)))
    case .channelData:
        fields.append(("kind", .string("channel_data")))
        fields.append(("channel", .int(m.channelIndex)))
        fields.append(("data_type", .int(m.dataType)))
    }
    // CHANNEL_DATA_RECV carries no timestamp (as meshcore_py, the field is left out).
    if m.kind != .channelData { fields.append(("timestamp", .int(m.timestamp))) }
    fields.append(("hops", m.hops.map { .int($0) } ?? .null))
    fields.append(("snr", m.snrQuarterDb.map { .double(Double($0) / 4) } ?? .null))
    if m.kind == .channelData {
        fields.append(("data", .hex(m.text)))
    } else {
        fields.append(("text", .string(m.textString)))
    }
    return .object(fields)
}
