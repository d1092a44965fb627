import MeshCompanion

/// The radio's contact table as the hub last saw it listed whole, so that hub clients' GET_CONTACTS
/// is answered by the daemon, byte for byte as the radio answers it, while nothing can have changed
/// the table since. Sans-I/O: the daemon shows it every command frame it writes to the radio
/// (`sent`) and every frame the radio sends (`received`).
///
/// - **Learning.** A whole listing (GET_CONTACTS without `since`, whoever asked: the daemon's
///   contacts sync or a hub client) is kept as it goes by: the CONTACT frames in the radio's order.
///   When END_OF_CONTACTS comes and the records were as many as CONTACTS_START's count, the copy
///   is current.
/// - **Forgetting.** The copy stops being current (the next GET_CONTACTS goes to the radio, and
///   teaches it again) on anything that may change the table: a push other than those known to
///   leave the contacts alone (ADVERT, NEW_ADVERT, PATH_UPDATED, CONTACT_DELETED, CONTACTS_FULL,
///   pushes this build does not know), a command other than those known to leave them alone
///   (ADD_UPDATE_CONTACT, REMOVE_CONTACT, RESET_PATH, IMPORT_CONTACT, a login, ..., from any
///   client, the daemon's API and tunnels included), and the radio link going down (`forget`).
/// - **Bounds.** At most `CompanionLimits.contactsCeiling` records; a listing longer than that is
///   not learnt.
public struct HubContacts {
    /// The CONTACT frames (148 bytes, code first) in the order the radio lists them.
    public private(set) var records: [[UInt8]] = []
    /// `records` is the radio's table now.
    public private(set) var current = false
    /// A whole listing going by: its count and the records so far.
    private var learning: [[UInt8]]? = nil
    private var learningTotal: Int = -1
    /// How often a current copy was dropped.
    public private(set) var forgotten = 0

    public init() {}

    /// Commands that leave the radio's contact table as it is (their answers and the pushes they
    /// lead to are seen on their own). Anything else drops the copy when it goes to the radio.
    static func leavesContacts(_ code: UInt8) -> Bool {
        switch CommandCode(rawValue: code) {
        case .appStart, .sendTextMessage, .sendChannelTextMessage, .getDeviceTime, .setDeviceTime, .sendSelfAdvert,
             .setAdvertName, .syncNextMessage, .setRadioParams, .setRadioTxPower, .setAdvertLatLon, .shareContact,
             .exportContact, .getBatteryAndStorage, .setTuningParams, .deviceQuery, .sendStatusRequest, .hasConnection,
             .getContactByKey, .getChannel, .setChannel, .sendTracePath, .sendTelemetryRequest, .getCustomVars,
             .getAdvertPath, .getTuningParams, .sendPathDiscoveryRequest, .getStats, .getAutoAddConfig,
             .getAllowedRepeatFrequencies, .sendChannelData, .getDefaultFloodScope:
            return true
        default:
            return false
        }
    }

    /// Pushes that say nothing about the contact table.
    static func pushLeavesContacts(_ code: UInt8) -> Bool {
        switch PushCode(rawValue: code) {
        case .sendConfirmed, .messageWaiting, .rawData, .loginFail, .statusResponse, .logRxData, .traceData,
             .telemetryResponse, .binaryResponse, .pathDiscoveryResponse, .controlData:
            return true
        default:
            return false
        }
    }

    /// A command frame written to the radio.
    public mutating func sent(_ frame: [UInt8]) {
        guard let code = frame.first else { return }
        if code == CommandCode.getContacts.rawValue {
            // `since` (4 bytes) filters the listing: it shows changes, not the table.
            learning = frame.count >= 5 ? nil : []
            learningTotal = -1
        } else if !Self.leavesContacts(code) {
            forget()
        }
    }

    /// A frame from the radio (a response or a push).
    public mutating func received(_ f: UnsafeRawBufferPointer) {
        guard let code = f.first else { return }
        if PushCode.isPush(code) {
            if !Self.pushLeavesContacts(code) { forget() }
            return
        }
        guard learning != nil else { return }
        switch code {
        case ResponseCode.contactsStart.rawValue where f.count >= 5:
            learning = []
            learningTotal = Int(f.u32(1))
        case ResponseCode.contact.rawValue where f.count >= 148 && learning!.count < CompanionLimits.contactsCeiling:
            learning!.append(Array(f[0..<148]))
        case ResponseCode.endOfContacts.rawValue:
            if learning!.count == learningTotal {
                records = learning!
                current = true
            }
            learning = nil
        default:
            learning = nil  // an error, a record past the ceiling: not a listing to learn from
        }
    }

    /// The table may have changed (or the radio is gone): the copy is no longer answered from.
    public mutating func forget() {
        if current { forgotten += 1 }
        current = false
        records = []
        learning = nil
    }

    /// The radio's answer to GET_CONTACTS `request` (its optional `since`: records whose lastmod
    /// is greater), frame by frame, when the copy is current; false when it is not.
    public func answer(_ request: [UInt8], _ out: ([UInt8]) -> Void) -> Bool {
        guard current else { return false }
        var since: UInt32? = nil
        if request.count >= 5 {
            since = UInt32(request[1]) | UInt32(request[2]) << 8 | UInt32(request[3]) << 16 | UInt32(request[4]) << 24
        }
        out(ResponseFrame.contactsStart(count: UInt32(records.count)).bytes)
        var most: UInt32 = 0
        for r in records {
            let lastmod = UInt32(r[144]) | UInt32(r[145]) << 8 | UInt32(r[146]) << 16 | UInt32(r[147]) << 24
            if let since, lastmod <= since { continue }
            out(r)
            most = max(most, lastmod)
        }
        out(ResponseFrame.endOfContacts(lastModified: most).bytes)
        return true
    }
}
