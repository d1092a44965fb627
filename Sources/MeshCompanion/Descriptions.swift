// Descriptions for the types whose values are printed (log lines, errors, output). Release builds
// carry no reflection metadata (-disable-reflection-metadata), so a value printed without a
// description would print its type's name instead of its case: these spell out what reflection
// printed, byte for byte (Tests check every case).

extension CommandCode: CustomStringConvertible {
    /// The case's name.
    public var description: String {
        switch self {
        case .appStart: return "appStart"
        case .sendTextMessage: return "sendTextMessage"
        case .sendChannelTextMessage: return "sendChannelTextMessage"
        case .getContacts: return "getContacts"
        case .getDeviceTime: return "getDeviceTime"
        case .setDeviceTime: return "setDeviceTime"
        case .sendSelfAdvert: return "sendSelfAdvert"
        case .setAdvertName: return "setAdvertName"
        case .addUpdateContact: return "addUpdateContact"
        case .syncNextMessage: return "syncNextMessage"
        case .setRadioParams: return "setRadioParams"
        case .setRadioTxPower: return "setRadioTxPower"
        case .resetPath: return "resetPath"
        case .setAdvertLatLon: return "setAdvertLatLon"
        case .removeContact: return "removeContact"
        case .shareContact: return "shareContact"
        case .exportContact: return "exportContact"
        case .importContact: return "importContact"
        case .reboot: return "reboot"
        case .getBatteryAndStorage: return "getBatteryAndStorage"
        case .setTuningParams: return "setTuningParams"
        case .deviceQuery: return "deviceQuery"
        case .exportPrivateKey: return "exportPrivateKey"
        case .importPrivateKey: return "importPrivateKey"
        case .sendRawData: return "sendRawData"
        case .sendLogin: return "sendLogin"
        case .sendStatusRequest: return "sendStatusRequest"
        case .hasConnection: return "hasConnection"
        case .logout: return "logout"
        case .getContactByKey: return "getContactByKey"
        case .getChannel: return "getChannel"
        case .setChannel: return "setChannel"
        case .signStart: return "signStart"
        case .signData: return "signData"
        case .signFinish: return "signFinish"
        case .sendTracePath: return "sendTracePath"
        case .setDevicePin: return "setDevicePin"
        case .setOtherParams: return "setOtherParams"
        case .sendTelemetryRequest: return "sendTelemetryRequest"
        case .getCustomVars: return "getCustomVars"
        case .setCustomVar: return "setCustomVar"
        case .getAdvertPath: return "getAdvertPath"
        case .getTuningParams: return "getTuningParams"
        case .sendBinaryRequest: return "sendBinaryRequest"
        case .factoryReset: return "factoryReset"
        case .sendPathDiscoveryRequest: return "sendPathDiscoveryRequest"
        case .setFloodScopeKey: return "setFloodScopeKey"
        case .sendControlData: return "sendControlData"
        case .getStats: return "getStats"
        case .sendAnonRequest: return "sendAnonRequest"
        case .setAutoAddConfig: return "setAutoAddConfig"
        case .getAutoAddConfig: return "getAutoAddConfig"
        case .getAllowedRepeatFrequencies: return "getAllowedRepeatFrequencies"
        case .setPathHashMode: return "setPathHashMode"
        case .sendChannelData: return "sendChannelData"
        case .setDefaultFloodScope: return "setDefaultFloodScope"
        case .getDefaultFloodScope: return "getDefaultFloodScope"
        case .sendRawPacket: return "sendRawPacket"
        case .runCLICommand: return "runCLICommand"
        }
    }
}

extension LPPValue: CustomStringConvertible {
    /// The case and its values, e.g. `gps(latitude: 45.5, longitude: -73.6, altitude: 20.0)` (what
    /// `channel telemetry --json` prints for a value that is not one number).
    public var description: String {
        switch self {
        case .scalar(let v): return "scalar(\(String(reflecting: v)))"
        case .vector(let x, let y, let z):
            return "vector(x: \(String(reflecting: x)), y: \(String(reflecting: y)), z: \(String(reflecting: z)))"
        case .gps(let la, let lo, let al):
            return "gps(latitude: \(String(reflecting: la)), longitude: \(String(reflecting: lo)), altitude: \(String(reflecting: al)))"
        case .colour(let r, let g, let b): return "colour(r: \(r), g: \(g), b: \(b))"
        case .unixTime(let t): return "unixTime(\(t))"
        }
    }
}

extension LPPError: CustomStringConvertible {
    /// The case with its type and offset, e.g. `truncated(type: 136, offset: 4)`.
    public var description: String {
        switch self {
        case .unknownType(let type, let offset): return "unknownType(type: \(type), offset: \(offset))"
        case .truncated(let type, let offset): return "truncated(type: \(type), offset: \(offset))"
        }
    }
}
