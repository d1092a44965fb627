/// The result shapes several operations share: `$defs` of the JSON Schema by these names. The
/// shapes of one operation only are in OperationResults.swift.
public enum SharedShape: String, CaseIterable, Sendable {
    /// A contact as `contacts --json` lists it (`ContactSummary.value`).
    case contact
    /// A pending advert (`contacts pending`): a contact and when this host heard it.
    case pendingContact = "pending_contact"
    /// A channel slot (`ChannelSummary.value`).
    case channel
    /// A message drained from the radio (`messageValue`: sync, listen, cmd).
    case message
    /// A message of the daemon's store (history, chats, hooks; the API's and hooks' JSON).
    case storedMessage = "stored_message"
    /// `{"status":"ok","done":"..."}`: a change the radio confirmed.
    case ok
    /// A direct message's outcome (`send`).
    case sendResult = "send_result"
    /// A channel message's outcome (`channel send`).
    case channelSendResult = "channel_send_result"
    /// A repeater heard sending a message on.
    case heardRepeat = "heard_repeat"
    /// One Cayenne LPP record of telemetry.
    case lppRecord = "lpp_record"
    /// The radio's telemetry modes (base, location, environment: deny, flags or allow).
    case telemetryModes = "telemetry_modes"

    public var shape: ResultShape {
        switch self {
        case .contact:
            return .object(
                ResultField("name", .string),
                ResultField("public_key", .hex),
                ResultField("type", .contactType),
                ResultField("flags", .integer),
                ResultField("path_length", .integer, about: "Hops of its stored path; -1: unknown (messages flood)."),
                ResultField("path", .hex, about: "The stored path's hop hashes."),
                ResultField("last_advert", .integer, about: "The timestamp of its last advert (its clock, epoch seconds)."),
                ResultField("latitude", .number),
                ResultField("longitude", .number),
                ResultField("lastmod", .integer, about: "When the radio last changed the contact (its clock)."))
        case .pendingContact:
            return SharedShape.contact.shape.appending([ResultField("heard", .integer, about: "When this host heard it (epoch seconds).")])
        case .channel:
            return .object(ResultField("index", .integer), ResultField("name", .string), ResultField("secret", .hex))
        case .message:
            let timestamp = ResultField("timestamp", .integer, about: "The sender's timestamp (epoch seconds).")
            let heard = [ResultField("hops", .nullable(.integer), about: "Hops it came over by flood; null: sent direct."),
                         ResultField("snr", .nullable(.number), about: "SNR of its last hop (dB); null when the radio does not say.")]
            return .anyOf([
                // From a contact (`name` when it is one): a text, a room post (`author`), a CLI reply,
                // or a CLI command its sender may not run on this radio (protocol 14).
                .object([ResultField("kind", .oneOf(["direct", "room", "cli", "cli_command"])), ResultField("from", .hex),
                         .optional("name", .string), .optional("author", .hex), timestamp] + heard + [ResultField("text", .string)],
                        closed: true),
                .object([ResultField("kind", .oneOf(["channel"])), ResultField("channel", .integer), timestamp] + heard
                        + [ResultField("text", .string)], closed: true),
                // A channel datagram: its frame carries no timestamp.
                .object([ResultField("kind", .oneOf(["channel_data"])), ResultField("channel", .integer),
                         ResultField("data_type", .integer)] + heard + [ResultField("data", .hex)], closed: true),
            ])
        case .storedMessage:
            return .object(
                ResultField("id", .integer),
                ResultField("kind", .oneOf(["direct", "channel", "room", "cli", "cli_command"]),
                            about: "A contact's message is direct (a text), cli (a CLI reply) or cli_command (text type 3), by its text type."),
                ResultField("direction", .oneOf(["in", "out"])),
                .optional("channel", .integer),
                .optional("channel_name", .string),
                ResultField("from", .string, about: "\"me\" when sent; a key prefix (hex), or a channel text's sender name."),
                .optional("peer", .hex),
                .optional("name", .string),
                .optional("author", .hex),
                .optional("text", .string, about: "Absent for a channel datagram: its bytes are `data`."),
                .optional("data_type", .integer),
                .optional("data", .hex),
                ResultField("text_type", .integer),
                .optional("timestamp", .integer),
                ResultField("received", .integer),
                .optional("route", .oneOf(["flood", "direct"]), about: "How a received message came."),
                ResultField("hops", .nullable(.integer), about: "Hops it came (or went) over; null: unknown."),
                ResultField("snr", .nullable(.number), about: "SNR of its last hop (dB); null: unknown or sent."),
                ResultField("status", .oneOf(["received", "pending", "sent", "acked", "failed"]),
                            about: "received (incoming); an outgoing one's delivery state."),
                .optional("radio", .hex, about: "Public key of the radio whose store it is."),
                .optional("attempts", .integer),
                .optional("round_trip_ms", .integer))
        case .ok:
            return .object(ResultField("status", .oneOf(["ok"])), ResultField("done", .string))
        case .sendResult:
            return .object(
                ResultField("status", .oneOf(["sent", "acked", "failed"])),
                ResultField("to", .string),
                ResultField("attempts", .integer),
                ResultField("flood", .bool),
                .optional("heard_repeats", .integer, about: "Repeaters heard sending a flooded attempt on."),
                .optional("estimated_timeout_ms", .integer, about: "With --no-wait: the radio's ACK timeout estimate."),
                .optional("round_trip_ms", .integer, about: "When acked: the ACK's round trip."),
                .optional("elapsed_ms", .integer, about: "When acked: the time from the first attempt."))
        case .channelSendResult:
            return .object(
                ResultField("status", .oneOf(["sent"])),
                ResultField("channel", .integer),
                ResultField("name", .string),
                .optional("heard_repeats", .integer),
                .optional("repeats", .arrayOf(.heardRepeat)))
        case .heardRepeat:
            return .object(ResultField("path", .hex), ResultField("hops", .integer), ResultField("snr", .number),
                           ResultField("rssi", .integer))
        case .lppRecord:
            return .object(
                ResultField("channel", .integer),
                ResultField("type", .string),
                .optional("value", .anyOf([.number, .hex])),  // a number, or a colour as hex
                .optional("x", .number), .optional("y", .number), .optional("z", .number),
                .optional("latitude", .number), .optional("longitude", .number), .optional("altitude", .number),
                .optional("unit", .string),
                ResultField("text", .string))
        case .telemetryModes:
            let mode = ResultShape.oneOf(["deny", "flags", "allow", "3"])
            return .object(ResultField("base", mode), ResultField("location", mode), ResultField("environment", mode))
        }
    }
}

extension ResultShape {
    /// A contact's type as the command line names it: none, chat, repeater, room, sensor, or typeN.
    public static let contactType: ResultShape = .matching("^(none|chat|repeater|room|sensor|type[0-9]+)$")

    /// The object with `more` fields after its own.
    func appending(_ more: [ResultField]) -> ResultShape {
        guard case .object(let fields, let closed) = self else { return self }
        return .object(fields + more, closed: closed)
    }
}
