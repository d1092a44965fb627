// TODO(companion): replace with MeshCompanion's code enums once they land on main.
// Only the codes the session routes on.

enum Cmd {
    static let appStart: UInt8 = 0x01
    static let sendTxtMsg: UInt8 = 0x02
    static let sendChannelTxtMsg: UInt8 = 0x03
    static let getContacts: UInt8 = 0x04
    static let setDeviceTime: UInt8 = 0x06
    static let syncNextMessage: UInt8 = 0x0A
    static let resetPath: UInt8 = 0x0D
    static let deviceQuery: UInt8 = 0x16
    static let sendLogin: UInt8 = 0x1A
    static let sendStatusReq: UInt8 = 0x1B
    static let sendTracePath: UInt8 = 0x24
    static let sendTelemetryReq: UInt8 = 0x27
    static let sendBinaryReq: UInt8 = 0x32
    static let sendPathDiscoveryReq: UInt8 = 0x34
    static let sendAnonReq: UInt8 = 0x39
}

enum Resp {
    static let ok: UInt8 = 0x00
    static let err: UInt8 = 0x01
    static let contactsStart: UInt8 = 0x02
    static let contact: UInt8 = 0x03
    static let endOfContacts: UInt8 = 0x04
    static let selfInfo: UInt8 = 0x05
    static let sent: UInt8 = 0x06
    static let contactMsgRecv: UInt8 = 0x07
    static let channelMsgRecv: UInt8 = 0x08
    static let noMoreMessages: UInt8 = 0x0A
    static let deviceInfo: UInt8 = 0x0D
    static let disabled: UInt8 = 0x0F
    static let contactMsgRecvV3: UInt8 = 0x10
    static let channelMsgRecvV3: UInt8 = 0x11
    static let channelDataRecv: UInt8 = 0x1B
}

enum Push {
    static let advert: UInt8 = 0x80
    static let pathUpdated: UInt8 = 0x81
    static let sendConfirmed: UInt8 = 0x82
    static let msgWaiting: UInt8 = 0x83
    static let loginSuccess: UInt8 = 0x85
    static let loginFail: UInt8 = 0x86
    static let statusResponse: UInt8 = 0x87
    static let logRxData: UInt8 = 0x88
    static let traceData: UInt8 = 0x89
    static let telemetryResponse: UInt8 = 0x8B
    static let binaryResponse: UInt8 = 0x8C
    static let pathDiscoveryResponse: UInt8 = 0x8D
}
