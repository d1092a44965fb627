// Descriptions for the types whose values are printed (log lines, errors, output). Release builds
// carry no reflection metadata (-disable-reflection-metadata), so a value printed without a
// description would print its type's name instead of its case: these spell out what reflection
// printed, byte for byte (Tests check every case).

extension ATTClient.Phase: CustomStringConvertible {
    /// The case's name.
    public var description: String {
        switch self {
        case .idle: return "idle"
        case .exchangingMTU: return "exchangingMTU"
        case .discoveringService: return "discoveringService"
        case .discoveringCharacteristics: return "discoveringCharacteristics"
        case .discoveringDescriptors: return "discoveringDescriptors"
        case .subscribing: return "subscribing"
        case .ready: return "ready"
        case .failed: return "failed"
        }
    }
}
