import MeshCompanion

// Short names for the codes the session routes on, taken from MeshCompanion's enums.

enum Cmd {
    static let appStart = CommandCode.appStart.rawValue
    static let sendTxtMsg = CommandCode.sendTextMessage.rawValue
    static let sendChannelTxtMsg = CommandCode.sendChannelTextMessage.rawValue
    static let getContacts = CommandCode.getContacts.rawValue
    static let setDeviceTime = CommandCode.setDeviceTime.rawValue
    static let syncNextMessage = CommandCode.syncNextMessage.rawValue
    static let resetPath = CommandCode.resetPath.rawValue
    static let deviceQuery = CommandCode.deviceQuery.rawValue
    static let sendLogin = CommandCode.sendLogin.rawValue
    static let sendStatusReq = CommandCode.sendStatusRequest.rawValue
    static let sendTracePath = CommandCode.sendTracePath.rawValue
    static let sendTelemetryReq = CommandCode.sendTelemetryRequest.rawValue
    static let sendBinaryReq = CommandCode.sendBinaryRequest.rawValue
    static let sendPathDiscoveryReq = CommandCode.sendPathDiscoveryRequest.rawValue
    static let sendAnonReq = CommandCode.sendAnonRequest.rawValue
}

enum Resp {
    static let ok = ResponseCode.ok.rawValue
    static let err = ResponseCode.error.rawValue
    static let contactsStart = ResponseCode.contactsStart.rawValue
    static let contact = ResponseCode.contact.rawValue
    static let endOfContacts = ResponseCode.endOfContacts.rawValue
    static let selfInfo = ResponseCode.selfInfo.rawValue
    static let sent = ResponseCode.sent.rawValue
    static let contactMsgRecv = ResponseCode.contactMessageLegacy.rawValue
    static let channelMsgRecv = ResponseCode.channelMessageLegacy.rawValue
    static let noMoreMessages = ResponseCode.noMoreMessages.rawValue
    static let deviceInfo = ResponseCode.deviceInfo.rawValue
    static let disabled = ResponseCode.disabled.rawValue
    static let contactMsgRecvV3 = ResponseCode.contactMessage.rawValue
    static let channelMsgRecvV3 = ResponseCode.channelMessage.rawValue
    static let channelDataRecv = ResponseCode.channelData.rawValue
}

