import MeshCompanion
import MeshOps
import MeshSession
import Testing

@Suite struct PermissionTests {
    @Test func classesParse() throws {
        #expect(try AllowedClasses(parsing: "read,message").description == "read,message")
        #expect(try AllowedClasses(parsing: "config+read").description == "read,config")
        #expect(try AllowedClasses(parsing: "all") == .everything)
        #expect(try AllowedClasses(parsing: "none").description == "none")
        #expect(throws: ClientError.self) { try AllowedClasses(parsing: "root") }
        #expect(throws: ClientError.self) { try AllowedClasses(parsing: ",") }
        #expect(AllowedClasses.hubDefault.description == "read,message,config")
        #expect(AllowedClasses.mqttDefault.description == "read,message")
    }

    @Test func requestClasses() {
        let cases: [(Request, OperationClass)] = [
            (.info, .read), (.contacts, .read), (.get(nil), .read), (.battery, .read), (.status("rpt"), .read),
            (.contactExport(nil), .read), (.channels, .read),
            (.send(to: "a", text: "hi", wait: false), .message), (.channelSend("0", text: "hi"), .message), (.sync, .message),
            (.set("name", ["x"]), .config), (.set("radio", ["869.5", "250", "11", "5"]), .config), (.contactRemove("a"), .config),
            (.channelSet(index: 1, name: "#x", secret: nil, hashtag: true), .config), (.advert(flood: true), .config), (.timeSet(1), .config),
            (.set("pin", ["123456"]), .admin), (.reboot, .admin), (.factoryReset, .admin), (.raw("16 03"), .admin),
            (.rawPacket("00", priority: 0), .admin), (.login("r", password: "p"), .admin), (.command("r", text: "ver"), .admin),
            (.localCommand("ver"), .admin),
            (.keyExport, .secret), (.keyImport("00"), .secret), (.sign(data: "00"), .secret),
        ]
        for (r, c) in cases { #expect(r.operationClass == c, "\(r)") }
    }

    @Test func everyCommandCodeHasAClassAndTheDangerousOnesAreNotDefault() {
        for code in CommandCode.allCases {
            let c = OperationClass(command: code)
            #expect(OperationClass.allCases.contains(c))
        }
        for code: CommandCode in [.exportPrivateKey, .importPrivateKey, .signStart, .signData, .signFinish] {
            #expect(OperationClass(command: code) == .secret)
        }
        for code: CommandCode in [.reboot, .factoryReset, .sendRawPacket, .sendRawData, .setDevicePin, .sendLogin] {
            #expect(OperationClass(command: code) == .admin)
        }
        #expect(OperationClass(frame: [UInt8]()) == .admin)
    }
}

@Suite struct APIOpClassTests {
    @Test func everyAPIOpHasAClassByItsName() {
        for op in Request.apiOps { #expect(Request.operationClass(apiOp: op) != nil, "\(op)") }
        #expect(Request.operationClass(apiOp: "nonsense") == nil)
    }

    /// The class by name is never above the class of a request of that name (it is checked first).
    @Test func theNameClassIsTheLeast() throws {
        let samples: [(String, [String: Value])] = [
            ("set", ["setting": .string("name"), "value": .string("x")]),
            ("set", ["setting": .string("pin"), "value": .string("123456")]),
            ("key_export", [:]), ("reboot", [:]), ("get", [:]), ("channel_send", ["channel": .string("0"), "text": .string("x")]),
            ("contacts_remove", ["name": .string("a")]), ("cli", ["command": .string("ver")]),
        ]
        for (op, fields) in samples {
            let r = try Request(apiOp: op, fields: fields)
            #expect(Request.operationClass(apiOp: op)! <= r.operationClass, "\(op)")
        }
    }
}
