/// Who asked the daemon for something. Each door numbers its own callers; the kind says which
/// door, so no caller is told apart by a range of one integer.
public enum Caller: Hashable, Sendable {
    /// A client of the local API socket (the API server's number for it).
    case api(Int)
    /// A command from an MQTT chat bridge's broker: the bridge, and the bridge's number for it.
    case bridge(ObjectIdentifier, Int)
    /// A browser on a `--web` listener (the web door's number for it).
    case web(Int)
    /// A packet observer's own status query.
    case observer(ObjectIdentifier)
    /// A caller that has gone: what it asked for still finishes; its answer goes nowhere.
    case gone
}
