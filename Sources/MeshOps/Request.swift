import MeshSession

/// One thing a person or script asks of a radio. Plain data (Codable), so the command line can
/// run it directly against a radio or hand it to a daemon that owns the radio.
/// Contacts are named by name or hex key prefix; channels by index or name.
public enum Request: Sendable, Equatable {
    case info
    case contacts
    case contactShow(String)
    /// Adds (or updates) a contact from its 64-hex-digit public key. A contact the radio knows keeps
    /// its type, flags, location, advert time and path unless new ones are given (`path` "" floods).
    case contactAdd(publicKey: String, name: String, type: UInt8?, path: String?)
    case contactRemove(String)
    case contactResetPath(String)
    /// Sets a contact's last advert time to 0 (as meshcore-cli's `reset_advert_time`), so that the
    /// radio takes its next advert whatever its timestamp (a node whose clock went back).
    case contactResetAdvertTime(String)
    case contactShare(String)
    /// Exports a contact's advert (nil: this radio's own advert) as hex.
    case contactExport(String?)
    /// Imports a contact from an exported advert (hex).
    case contactImport(String)
    /// Marks a contact a favourite (protected from auto-add overwrites) or not.
    case contactFavourite(String, on: Bool)
    /// A contact's share links (`meshcore://` card and `contact/add` link).
    case contactURI(String)
    /// Imports a `meshcore://` link (a card or `contact/add`) or an advert as hex.
    case contactImportLink(String)
    case contactPath(String)
    case contactDiscoverPath(String)
    case send(to: String, text: String, wait: Bool)
    case channels
    /// Sets a channel slot: the secret is 32 hex digits, or derived from the name for hashtag channels.
    case channelSet(index: Int, name: String, secret: String?, hashtag: Bool)
    case channelRemove(String)
    /// A channel's `meshcore://channel/add` link.
    case channelURI(String)
    /// A channel link into the slot with its name, else the first free one.
    case channelImport(String)
    /// The first free slot (or the slot with this name); a #name without secret is a hashtag channel.
    case channelAdd(name: String, secret: String?)
    /// `repeatsWaitMs` > 0: listen that long for repeaters re-sending it (heard repeats).
    case channelSend(String, text: String, repeatsWaitMs: Int = 0)
    case sync
    case advert(flood: Bool)
    case timeGet
    case timeSync
    case timeSet(UInt32)
    /// The radio's flood scope until it reboots: "#region", "none" (unscoped) or "default".
    case scope(String)
    /// A device setting by name (nil: all of them).
    case get(String?)
    case set(String, [String])
    case battery
    case stats(String?)
    case login(String, password: String)
    case logout(String)
    case status(String)
    /// A repeater's regions, owner or clock (anonymous requests, no login).
    case regions(String)
    case owner(String)
    case clock(String)
    /// Telemetry of a remote node (nil: the radio itself).
    case telemetry(String?)
    case neighbours(String)
    case acl(String)
    /// A repeater CLI command (txt_type 1); the reply is the repeater's text.
    case command(String, text: String)
    /// Trace along comma-separated hop hashes (hex), e.g. "5f,33,5f".
    case trace(path: String)
    case sign(data: String)
    case keyExport
    case keyImport(String)
    case reboot
    case factoryReset
    case raw(String)
    /// Nearby nodes answering a zero-hop DISCOVER_REQ within `waitMs` (`types`: bit per advert type).
    case discover(waitMs: Int, types: UInt8)
    /// A contact's path by hand (hex hop hashes; "" zero hops).
    case contactSetPath(String, path: String)
    /// Telemetry permissions of a contact: "base,location,environment", "all" or "none".
    case contactPermissions(String, grant: String)
    /// GET_CONTACT_BY_KEY (a whole key in hex).
    case contactByKey(String)
    case hasConnection(String)
    /// SEND_BINARY_REQ: the request as hex, its type byte first.
    case binaryRequest(String, hex: String)
    /// Min/max/avg telemetry over a window, in seconds ago.
    case mma(String, from: UInt32, to: UInt32)
    case channelData(String, dataType: UInt16, hex: String)
    case rawData(path: String, hex: String)
    case rawPacket(String, priority: UInt8)
    /// RUN_CLI_COMMAND (companion protocol 14 and later).
    case localCommand(String)
}

/// What a request produced: the value to print and, when it did not fully succeed, why
/// (the value still describes what happened, e.g. a send that was never acknowledged).
public struct Outcome: Sendable, Equatable {
    public var value: Value
    public var error: ClientError?
    public init(_ value: Value, error: ClientError? = nil) { self.value = value; self.error = error }
}

extension Request {
    /// Checks what can be checked without a radio (so that nothing is sent for bad input).
    public func validate() throws(ClientError) {
        switch self {
        case .send(_, let text, _), .channelSend(_, let text, _):
            if text.isEmpty { throw .usage("the message text is empty: give the text to send.") }
        default:
            break
        }
    }
}
