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
    @OptionGroup var link: LinkOptions
    @Argument var setting: String?
    func text(_ v: Value) -> String {
        if let setting, let one = v[setting] {
            switch one { case .object, .array: return one.text(); default: return one.scalarText }
        }
        return v.text()
    }
}

struct Set: RadioCommand {
    static let configuration = CommandConfiguration(commandName: "set")
    @OptionGroup var link: LinkOptions
    @Argument var setting: String
    @Argument var values: [String] = []
    func text(_ v: Value) -> String { "\(setting) set" }
}
