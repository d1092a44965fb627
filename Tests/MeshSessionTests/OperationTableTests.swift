import MeshOps
import MeshSession
import Testing

/// The operation table itself: API names, classes, `ops --json` and the completion scripts. (The
/// table against the command line: PocketMeshCLITests.)
@Suite struct OperationTableTests {
    /// The API ops run as requests, as the daemon served them before the table: none lost, none
    /// added; `advert` and `channel_send`, which the daemon once answered with code of its own, run
    /// the operation too now.
    @Test func apiOpsAreTheTablesAndUnchanged() {
        let before: Set<String> = [
            "contacts_show", "contacts_add", "contacts_remove", "contacts_reset_path", "contacts_reset_advert_time", "contacts_share",
            "contacts_export", "contacts_import", "contacts_path", "contacts_discover_path",
            "contacts_favourite", "contacts_uri",
            "channel_list", "channel_set", "channel_remove", "channel_uri", "channel_import", "channel_add",
            "time_get", "time_sync", "time_set", "scope", "get", "set", "battery", "stats",
            "login", "logout", "status", "regions", "owner", "clock", "telemetry", "neighbours", "acl", "cmd", "trace", "sign",
            "key_export", "key_import", "reboot", "factory_reset", "raw",
            "discover", "contacts_set_path", "contacts_permissions", "contacts_connected", "request", "mma", "channel_data",
            "raw_data", "raw_packet", "cli", "advert", "channel_send",
        ]
        #expect(Request.apiOps == before)
    }

    /// An op's class by name is what it was before the table, for every name that had one.
    @Test func classesByNameUnchanged() {
        let before: [OperationClass: [String]] = [
            .read: ["contacts_show", "contacts_export", "contacts_path", "contacts_uri", "contacts_connected", "channel_list",
                    "channel_uri", "time_get", "get", "battery", "stats", "status", "regions", "owner", "clock", "telemetry",
                    "neighbours", "acl", "trace", "mma"],
            .message: ["channel_send", "channel_data"],
            .config: ["contacts_add", "contacts_remove", "contacts_reset_path", "contacts_reset_advert_time", "contacts_share", "contacts_import",
                      "contacts_discover_path", "contacts_favourite", "contacts_set_path", "contacts_permissions",
                      "channel_set", "channel_remove", "channel_import", "channel_add", "time_sync", "time_set", "scope",
                      "discover", "set"],
            .admin: ["login", "logout", "cmd", "reboot", "factory_reset", "raw", "raw_data", "raw_packet", "cli", "request"],
            .secret: ["sign", "key_export", "key_import"],
        ]
        for (c, ops) in before { for op in ops { #expect(Request.operationClass(apiOp: op) == c, "\(op)") } }
        #expect(Request.operationClass(apiOp: "contacts remove") == nil)
        #expect(Request.operationClass(apiOp: "") == nil)
    }

    /// The API name is the command path joined with "_" (dashes too), except `contacts list`, which
    /// the daemon has always served as `contacts`.
    /// The firmware keeps a flood scope until it reboots (SET_FLOOD_SCOPE_KEY is not undone when an
    /// app disconnects): the help says so, not that it lasts as long as the connection.
    @Test func scopeHelpSaysItLastsUntilTheRadioReboots() {
        let row = OperationTable.row(["scope"])!
        let text = row.help + " " + row.discussion
        #expect(text.contains("until the radio reboots") || text.contains("until it reboots"))
        #expect(!text.contains("as long as the connection") && !text.contains("this connection"))
    }

    @Test func apiNamesAreThePathJoined() {
        for row in OperationTable.rows {
            guard let api = row.api else { continue }
            if row.cli == "contacts list" { #expect(api == "contacts"); continue }
            #expect(api == Operation.apiName(row.path), "\(row.cli)")
        }
        #expect(OperationTable.row(api: "contacts_remove")?.cli == "contacts remove")
        #expect(OperationTable.row(api: "factory_reset")?.cli == "factory-reset")
        #expect(OperationTable.row(api: "contacts_reset_advert_time")?.opClass == .config)
    }

    @Test func eachRowsArgumentsAreNamedOnce() {
        for row in OperationTable.rows {
            let names = row.args.map(\.display)
            #expect(Set(names).count == names.count, "\(row.cli)")
            let shorts = row.args.compactMap(\.short)
            #expect(Set(shorts).count == shorts.count, "\(row.cli)")
            for a in row.args where a.kind == .flag { #expect(a.type == .bool && !a.required, "\(row.cli) \(a.display)") }
            for a in row.args where a.defaultValue != nil { #expect(!a.required, "\(row.cli) \(a.display)") }
        }
    }

    @Test func opsJSON() {
        let v = OperationTable.value
        guard case .array(let ops)? = v["operations"] else { Issue.record("no operations"); return }
        #expect(ops.count == OperationTable.rows.filter { !$0.hidden }.count)
        let remove = ops.first { $0["cli"] == .string("contacts remove") }
        #expect(remove?["api"] == .string("contacts_remove"))
        #expect(remove?["class"] == .string("config"))
        guard case .array(let args)? = remove?["args"] else { Issue.record("no args"); return }
        let contact = args.first { $0["name"] == .string("contact") }
        #expect(contact?["kind"] == .string("positional"))
        #expect(contact?["required"] == .bool(true))
        let timeout = args.first { $0["name"] == .string("timeout") }
        #expect(timeout?["kind"] == .string("option"))
        #expect(timeout?["type"] == .string("number"))
        #expect(timeout?["default"] == .string("5.0"))
        let scan = ops.first { $0["cli"] == .string("scan") }
        #expect(scan?["api"] == .null)
        #expect(scan?["class"] == .null)
        #expect(!ops.contains { $0["cli"] == .string("daemon op-exec") })
        // A field only the API takes is among the row's args, marked.
        let send = ops.first { $0["cli"] == .string("send") }
        guard case .array(let sendArgs)? = send?["args"] else { Issue.record("no send args"); return }
        let wait = sendArgs.first { $0["name"] == .string("wait") }
        #expect(wait?["api_only"] == .bool(true))
        #expect(wait?["api"] == .string("wait"))
        #expect(sendArgs.filter { $0["api_only"] == .bool(true) }.count == 1)
        let login = ops.first { $0["cli"] == .string("login") }
        guard case .array(let loginArgs)? = login?["args"] else { Issue.record("no login args"); return }
        #expect(loginArgs.first { $0["name"] == .string("password") }?["api_required"] == .bool(true))
        // The API's own ops: no command path, their class and fields.
        guard case .array(let apiOps)? = v["api_ops"] else { Issue.record("no api_ops"); return }
        #expect(apiOps.count == OperationTable.apiOnly.count)
        let names = apiOps.compactMap { $0["api"]?.stringValue }
        #expect(names == ["ping", "status", "channels", "outbox", "contacts_flush_pending", "subscribe", "tunnel"])
        for o in apiOps { #expect(o["cli"] == .null) }
        let subscribe = apiOps.first { $0["api"] == .string("subscribe") }
        #expect(subscribe?["class"] == .string("message"))
        guard case .array(let subArgs)? = subscribe?["args"] else { Issue.record("no subscribe args"); return }
        #expect(subArgs.first?["api"] == .string("log_rx"))
        #expect(subArgs.first?["api_only"] == .bool(true))
    }

    @Test func completionScriptsNameEveryCommand() {
        let bash = OperationTable.completions(.bash)
        #expect(bash.contains("complete -F _pocketmesh pocketmesh"))
        #expect(bash.contains("['pocketmesh contacts']='list show add remove"))
        #expect(bash.contains("['pocketmesh contacts add --type']='chat repeater room sensor'"))
        #expect(bash.contains("['pocketmesh contacts favorite']='favourite'"))
        let zsh = OperationTable.completions(.zsh)
        #expect(zsh.hasPrefix("#compdef pocketmesh\n"))
        let fish = OperationTable.completions(.fish)
        for row in OperationTable.rows where !row.hidden && row.path.count == 1 {
            #expect(bash.contains(" \(row.path[0])"), "\(row.cli)")
            #expect(zsh.contains("\(row.path[0]):"), "\(row.cli)")
            #expect(fish.contains("-a '\(row.path[0])'"), "\(row.cli)")
        }
    }
}
