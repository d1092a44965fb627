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

    /// A request's class is its row's (the API op's), with `set`'s PIN and key and `raw`'s frame apart.
    @Test func requestClasses() throws {
        let s: (String) -> Value = { .string($0) }
        let cases: [(String, [String: Value], OperationClass)] = [
            ("get", [:], .read), ("battery", [:], .read), ("status", ["name": s("rpt")], .read),
            ("contacts_export", [:], .read), ("channel_list", [:], .read),
            ("channel_send", ["channel": s("0"), "text": s("hi")], .message),
            ("set", ["setting": s("name"), "value": s("x")], .config), ("set", ["setting": s("radio"), "values": .array([s("869.5"), s("250")])], .config),
            ("contacts_remove", ["name": s("a")], .config), ("channel_set", ["index": .integer(1), "name": s("#x"), "hashtag": .bool(true)], .config),
            ("advert", ["flood": .bool(true)], .config), ("time_set", ["epoch": .integer(1_700_000_000)], .config),
            ("set", ["setting": s("pin"), "value": s("123456")], .admin), 
            ("reboot", [:], .admin), ("factory_reset", ["yes_erase_everything": .bool(true)], .admin), ("raw", ["hex": s("16 03")], .admin),
            ("raw", ["hex": s("17")], .secret),
            ("raw_packet", ["packet": s("00")], .admin), ("login", ["name": s("r"), "password": s("p")], .admin),
            ("cmd", ["name": s("r"), "text": s("ver")], .admin), ("cli", ["command": s("ver")], .admin),
            ("key_export", [:], .secret), ("key_import", ["key": s("00")], .secret), ("sign", ["data": s("00")], .secret),
        ]
        for (op, fields, c) in cases { #expect(try Request.operationClass(apiOp: op, fields: fields) == c, "\(op)") }
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
            #expect(try Request.operationClass(apiOp: op)! <= Request.operationClass(apiOp: op, fields: fields), "\(op)")
        }
    }
}
