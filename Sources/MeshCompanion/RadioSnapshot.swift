// Owned copies of SELF_INFO and DEVICE_INFO: what a session keeps of the radio once it has
// decoded those frames, for every layer above to read by name.

/// SELF_INFO, owned: the radio's identity and settings.
public struct RadioSelf: Hashable, Sendable {
    public var advertType: ContactType
    public var txPowerDbm: Int8
    public var maxTxPowerDbm: Int8
    public var publicKey: PublicKey
    /// Micro-degrees.
    public var latitude: Int32
    /// Micro-degrees.
    public var longitude: Int32
    public var multiAcks: UInt8
    public var advertLocationPolicy: UInt8
    public var telemetryModes: TelemetryModes
    /// Bit 0: adverts of unknown nodes wait for the app instead of being added.
    public var manualAddContacts: UInt8
    public var radio: RadioParams
    public var name: String

    public init(_ v: SelfInfo) {
        advertType = v.advertType
        txPowerDbm = v.txPowerDbm
        maxTxPowerDbm = v.maxTxPowerDbm
        publicKey = v.publicKey
        latitude = v.latitude
        longitude = v.longitude
        multiAcks = v.multiAcks
        advertLocationPolicy = v.advertLocationPolicy
        telemetryModes = v.telemetryModes
        manualAddContacts = v.manualAddContacts
        radio = v.radio
        let n = v.nameBytes
        name = String(utf8Bytes: UnsafeRawBufferPointer(rebasing: n[..<(n.firstIndex(of: 0) ?? n.count)]))
    }

    /// Decodes a SELF_INFO frame (code byte first); nil for anything else.
    public init?(frame: [UInt8]) {
        guard let v = CompanionFrame.owned(frame, { if case .selfInfo(let s) = $0 { return RadioSelf(s) }; return nil }) else { return nil }
        self = v
    }
}

/// DEVICE_INFO, owned: firmware and limits (fields older firmware does not send are nil).
public struct RadioDevice: Hashable, Sendable {
    public var firmwareVersionCode: UInt8
    public var maxContacts: Int?
    public var maxChannels: Int?
    public var blePin: UInt32?
    public var buildDate: String?
    public var model: String?
    public var version: String?
    public var clientRepeat: Bool?
    public var pathHashMode: UInt8?

    public init(_ v: DeviceInfo) {
        firmwareVersionCode = v.firmwareVersionCode
        maxContacts = v.maxContacts
        maxChannels = v.maxChannels
        blePin = v.blePin
        buildDate = v.buildDate
        model = v.model
        version = v.version
        clientRepeat = v.clientRepeat
        pathHashMode = v.pathHashMode
    }

    /// Decodes a DEVICE_INFO frame (code byte first); nil for anything else.
    public init?(frame: [UInt8]) {
        guard let v = CompanionFrame.owned(frame, { if case .deviceInfo(let d) = $0 { return RadioDevice(d) }; return nil }) else { return nil }
        self = v
    }
}

extension CompanionFrame {
    /// Decodes `frame` and lets `pick` make an owned value of it while the views are valid.
    public static func owned<T>(_ frame: [UInt8], _ pick: (CompanionFrame) -> T?) -> T? {
        frame.withUnsafeBytes { b in (try? CompanionFrame.decode(b)).flatMap(pick) }
    }
}
