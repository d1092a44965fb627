import MeshOps
import MeshSession
import Testing
@testable import pocketmesh

extension CommandLineParsing {
/// Both doors of an operation, the command line and the local API, go through the table's
/// argument definitions (`OperationValues`) and one function to the request (`Request(_:)`).
@Suite struct OperationValuesTests {
    /// The request the command line makes of `args` (without running it).
    static func cli(_ args: [String]) throws -> Request {
        guard case .run(let c, let values) = try CommandParser.parse(args + ["-t", "127.0.0.1:1"]) else { throw UsageError("not a command") }
        guard let command = c as? RadioCommand else { throw UsageError("\(args) is no radio command") }
        return try command.request(values)
    }

    static func api(_ op: String, _ fields: [String: Value]) throws(ClientError) -> Request {
        try Request(apiOp: op, fields: fields)
    }

    /// A value of an argument's type that every operation takes (an epoch the clock takes, a
    /// #name a channel takes without a secret).
    static func sample(_ a: OperationArgument) -> (field: Value, words: [String]) {
        switch a.type {
        case .bool: return (.bool(true), a.kind == .flag ? [] : ["on"])
        case .integer: return a.name == "epoch" ? (.integer(1_700_000_000), ["1700000000"]) : (.integer(7), ["7"])
        case .number: return (.double(1.5), ["1.5"])
        case .string:
            if let c = a.choices.first { return (.string(c), [c]) }
            if a.name == "type" { return (.string("room"), ["room"]) }  // discover's node types
            return a.repeatable ? (.array([.string("#a"), .string("b")]), ["#a", "b"]) : (.string("#x"), ["#x"])
        }
    }

    /// Every operation the API serves decodes from fields built from its own arguments, as the
    /// request of its class, and the command line given the same values makes the same request.
    @Test func everyAPIOperationDecodesFromItsArgumentsAsTheCommandLineParsesThem() throws {
        var checked = 0
        for row in OperationTable.rows where row.api != nil && !row.daemon {
            var fields: [String: Value] = [:]
            var options: [String] = []
            var positionals: [String] = []
            for a in row.args where !OperationArgument.link.contains(a) {
                let (field, words) = Self.sample(a)
                if !a.commandLineOnly { fields[a.apiField] = field }
                switch a.kind {
                case .positional: positionals += words
                case .option: options += ["--\(a.name)"] + words
                case .flag: if !a.commandLineOnly { options.append("--\(a.name)") }
                }
            }
            let fromAPI = try Self.api(row.api!, fields)
            #expect(Request.operationClass(apiOp: row.api!) == row.opClass, "\(row.cli)")
            #expect(row.operationClass(of: fromAPI) >= row.opClass!, "\(row.cli)")
            let fromCLI = try Self.cli(row.path + options + positionals)
            // The one default that differs: channel send listens for repeats on the command line only.
            #expect(fromAPI == fromCLI, "\(row.cli): \(fromAPI) from the API, \(fromCLI) from the command line")
            checked += 1
        }
        #expect(checked == Request.apiOps.count)
        #expect(checked > 50)
    }

    @Test func theSameValuesMakeTheSameRequest() throws {
        let key = String(repeating: "ab", count: 32)
        #expect(try Self.cli(["contacts", "add", key, "n", "--type", "room", "--path", "5f33"])
                == Self.api("contacts_add", ["public_key": .string(key), "name": .string("n"), "type": .string("room"), "path": .string("5f33")]))
        #expect(try Self.cli(["contacts", "add", key, "n"]) == .contactAdd(publicKey: key, name: "n", type: nil, path: nil))
        #expect(try Self.cli(["set", "coords", "45.5", "-75"]) == Self.api("set", ["setting": .string("coords"), "values": .array([.double(45.5), .integer(-75)])]))
        #expect(try Self.api("set", ["setting": .string("name"), "value": .string("x")]) == .set("name", ["x"]))
        #expect(try Self.cli(["contacts", "favourite", "alice", "off"]) == Self.api("contacts_favourite", ["name": .string("alice"), "on": .bool(false)]))
        #expect(try Self.cli(["cmd", "rpt", "get", "name"]) == Self.api("cmd", ["name": .string("rpt"), "text": .string("get name")]))
        #expect(try Self.cli(["raw", "1603"]) == Self.api("raw", ["hex": .string("1603")]))
        #expect(try Self.cli(["contacts", "import", "meshcore://ab"]) == Self.api("contacts_import", ["uri": .string("meshcore://ab")]))
        #expect(try Self.api("contacts_import", ["advert": .string("ab")]) == .contactImportLink("ab"))
        #expect(try Self.cli(["mma", "s", "--from", "60"]) == .mma("s", from: 60, to: 0))
        #expect(try Self.cli(["discover", "--for", "3", "--type", "room"]) == Self.api("discover", ["for": .integer(3), "type": .string("room")]))
        #expect(try Self.cli(["time", "set", "1700000000"]) == Self.api("time_set", ["epoch": .integer(1_700_000_000)]))
        // Defaults: the table's, except where the row gives the API its own (no listening for repeats).
        #expect(try Self.cli(["channel", "send", "0", "hello", "world"]) == .channelSend("0", text: "hello world", repeatsWaitMs: 2000))
        #expect(try Self.api("channel_send", ["channel": .integer(0), "text": .string("hello world")]) == .channelSend("0", text: "hello world", repeatsWaitMs: 0))
        #expect(try Self.api("raw_packet", ["packet": .string("00")]) == .rawPacket("00", priority: 0))
    }

    static func apiError(_ op: String, _ fields: [String: Value]) -> String {
        do throws(ClientError) { _ = try api(op, fields); return "" } catch { return error.message }
    }

    static func cliError(_ args: [String]) -> String {
        do { _ = try cli(args); return "" } catch let e as ClientError { return e.message } catch { return "\(error)" }
    }

    /// A range is the row's alone: the command line says it in the same words whatever the
    /// value (the property's Swift type once refused 70000 in other words than 0), and so does the API.
    @Test func aRangeIsCheckedOnceByTheRow() throws {
        for bad in ["0", "70000", "-1"] {
            #expect(Self.cliError(["channel", "data", "0", bad, "aa"]) == "<data-type> must be 1 to 65535, not \(bad).")
            #expect(Self.apiError("channel_data", ["channel": .string("0"), "data_type": .integer(Int64(bad)!), "data": .string("aa")])
                    == "channel_data: \"data_type\" must be 1 to 65535, not \(bad).")
        }
        #expect(Self.cliError(["channel", "data", "0", "x", "aa"]) == "The value 'x' is invalid for '<data-type>'")
        #expect(Self.cliError(["raw-packet", "00", "--priority", "256"]) == "--priority must be 0 to 255, not 256.")
        #expect(Self.cliError(["mma", "n", "--from", "4294967296"]) == "--from must be 0 to 4294967295, not 4294967296.")
        #expect(Self.cliError(["contacts", "list", "--timeout", "0"]) == "--timeout must be 0.001 to 86400, not 0.")
        #expect(Self.cliError(["contacts", "list", "--ble-min-mtu", "600"]) == "--ble-min-mtu must be 23 to 517, not 600.")
        #expect(Self.cliError(["discover", "--for", "0"]) == "--for must be 0.001 to 600, not 0.")
        #expect(Self.apiError("discover", ["for": .integer(601)]) == "discover: \"for\" must be 0.001 to 600, not 601.")
        #expect(Self.cliError(["history", "alice", "--limit", "0", "--socket", "/nonexistent"]) == "--limit must be 1 to 100000, not 0.")
        // An argument not given takes the row's default, once (the command declares none).
        #expect(try Self.cli(["mma", "n"]) == .mma("n", from: 3600, to: 0))
        #expect(try Self.cli(["raw-packet", "00"]) == .rawPacket("00", priority: 0))
    }

    @Test func badFieldsAreUsageErrorsNamingTheOpAndTheField() {
        #expect(Self.apiError("contacts_remove", ["name": .string("a"), "nmae": .string("b")])
                == "contacts_remove: unknown field \"nmae\"; it takes \"name\".")
        #expect(Self.apiError("reboot", ["now": .bool(true)]) == "reboot: unknown field \"now\"; it takes none.")
        #expect(Self.apiError("login", ["name": .string("r"), "no_save": .bool(true)]).hasPrefix("login: unknown field \"no_save\""))
        #expect(Self.apiError("channel_set", ["index": .string("two"), "name": .string("#a")])
                == "channel_set: \"index\" must be a whole number, not \"two\".")
        #expect(Self.apiError("channel_data", ["channel": .string("0"), "data_type": .integer(70000), "data": .string("ab")])
                == "channel_data: \"data_type\" must be 1 to 65535, not 70000.")
        #expect(Self.apiError("contacts_add", ["name": .string("x")]) == "contacts_add: missing \"public_key\".")
        // The API has no saved password to fall back on: it asks for one ("" for a guest login).
        #expect(Self.apiError("login", ["name": .string("r")]) == "login: missing \"password\".")
        let guest = try? Self.api("login", ["name": .string("r"), "password": .string("")])
        #expect(guest == .login("r", password: ""))
        #expect(Self.apiError("contacts_add", ["public_key": .string("ab"), "name": .string("n"), "type": .string("boat")])
                == "contacts_add: \"type\" takes chat, repeater, room or sensor, not \"boat\".")
        #expect(Self.apiError("time_set", ["epoch": .double(1.5)]) == "time_set: \"epoch\" must be a whole number, not 1.5.")
        #expect(Self.apiError("discover", ["for": .double(.infinity)]).hasPrefix("discover: \"for\" must be a finite number"))
        #expect(Self.apiError("channel_send", ["channel": .integer(0), "text": .string("x"), "repeats_wait": .integer(99)])
                == "channel_send: \"repeats_wait\" must be 0 to 60, not 99.")
        #expect(Self.apiError("advert", ["flood": .string("maybe")]) == "advert: \"flood\" must be true or false, not \"maybe\".")
        #expect(Self.apiError("contacts_import", ["uri": .string("a"), "advert": .string("b")])
                == "contacts_import: \"advert\" and \"uri\" are the same argument: give one.")
        #expect(Self.apiError("set", ["setting": .string("name"), "values": .object([])]).hasPrefix("set: \"values\" must be a string"))
        #expect(Self.apiError("factory_reset", [:]).contains("\"yes_erase_everything\": true"))
        #expect(Self.apiError("send", ["to": .string("a"), "text": .string("b")]) == "unknown operation \"send\".")
        #expect(Self.apiError("contacts_frob", [:]) == "unknown operation \"contacts_frob\".")
    }

    @Test func theCommandLineSaysTheSameInItsOwnWords() {
        #expect(Self.cliError(["time", "set", "5"]) == "<epoch> must be 1600000000 to 4294967295, not 5.")
        #expect(Self.cliError(["channel", "send", "0", "x", "--repeats-wait", "99"]) == "--repeats-wait must be 0 to 60, not 99.")
        #expect(Self.cliError(["contacts", "add", "ab", "n", "--type", "boat"]) == "--type takes chat, repeater, room or sensor, not \"boat\".")
        #expect(Self.cliError(["contacts", "favourite", "a", "maybe"]) == "<state> must be on or off (true or false), not \"maybe\".")
        #expect(Self.cliError(["channel", "add", "plain"]) == "give --secret (32 hex digits), or a #name for a hashtag channel.")
    }
}
}
