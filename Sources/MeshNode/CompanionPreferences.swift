/// A companion's preferences (persisted on a real radio).
public struct CompanionPreferences: Sendable {
    public var advertLatitude: Int32 = 0
    public var advertLongitude: Int32 = 0
    public var manualAddContacts: UInt8 = 0
    public var telemetryModes: UInt8 = 0
    public var advertLocationPolicy: UInt8 = 0
    public var multiAcks: UInt8 = 0
    public var autoAddFlags: UInt8 = 0
    public var autoAddMaxHops: UInt8 = 0
    public var blePin: UInt32 = 0
    public var clientRepeat: Bool = false
    public var maxTxPower: Int8 = 22
    /// Time zone offset in hours (the protocol 14 CLI's `tz.offset`).
    public var tzOffset: Int8 = 0
    public init() {}
}

/// The preferences by their names (as the companion protocol and the CLI read and set them).
extension CompanionNode {
    public var advertLatitude: Int32 {
        get { preferences.advertLatitude }
        set { preferences.advertLatitude = newValue }
    }
    public var advertLongitude: Int32 {
        get { preferences.advertLongitude }
        set { preferences.advertLongitude = newValue }
    }
    public var manualAddContacts: UInt8 {
        get { preferences.manualAddContacts }
        set { preferences.manualAddContacts = newValue }
    }
    public var telemetryModes: UInt8 {
        get { preferences.telemetryModes }
        set { preferences.telemetryModes = newValue }
    }
    public var advertLocationPolicy: UInt8 {
        get { preferences.advertLocationPolicy }
        set { preferences.advertLocationPolicy = newValue }
    }
    public var multiAcks: UInt8 {
        get { preferences.multiAcks }
        set { preferences.multiAcks = newValue }
    }
    public var autoAddFlags: UInt8 {
        get { preferences.autoAddFlags }
        set { preferences.autoAddFlags = newValue }
    }
    public var autoAddMaxHops: UInt8 {
        get { preferences.autoAddMaxHops }
        set { preferences.autoAddMaxHops = newValue }
    }
    public var blePin: UInt32 {
        get { preferences.blePin }
        set { preferences.blePin = newValue }
    }
    public var clientRepeat: Bool {
        get { preferences.clientRepeat }
        set { preferences.clientRepeat = newValue }
    }
    public var maxTxPower: Int8 {
        get { preferences.maxTxPower }
        set { preferences.maxTxPower = newValue }
    }
    public var tzOffset: Int8 {
        get { preferences.tzOffset }
        set { preferences.tzOffset = newValue }
    }
}
