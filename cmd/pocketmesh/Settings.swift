import MeshSession
import MeshOps

private let settingsHelp = """
    Settings: name, coords (LAT LON), radio (FREQ_MHZ BW_KHZ SF CR [REPEAT]), tx (DBM), tuning (RX_DELAY AIRTIME_FACTOR), \
    manual-add (on|off), telemetry (BASE LOC ENV: deny|flags|allow), advert-loc-policy (none|share|prefs), multi-acks, pin, \
    auto-add (FLAGS [MAX_HOPS]; FLAGS as a number, 0x.. hex, or overwrite,chat,repeater,room,sensor), path-hash-mode (0-2), flood-scope (#REGION|none), custom (NAME VALUE); \
    read-only: public-key, firmware, model, max-contacts, max-channels, client-repeat.
    """

struct Get: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "get")
    func text(_ v: Value, _ args: OperationValues) -> String {
        let setting = args.string("setting")
        if let setting, let one = v[setting] {
            switch one { case .object, .array: return one.text(); default: return one.scalarText }
        }
        return v.text()
    }
}

struct Set: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "set")
    func text(_ v: Value, _ args: OperationValues) -> String { let setting = args.string("setting") ?? ""; return "\(setting) set" }
}
