import MeshAir
import MeshCompanion
import Testing
@testable import MeshNode
@testable import MeshSim

/// The admin CLI of simulated servers against the firmware's replies (`CommonCLI`, `simple_repeater`).
@Suite struct ServerCLITests {
    func repeater() throws -> (SimWorld, RepeaterNode) {
        let (w, _, r) = try pair()
        return (w, r)
    }

    @Test func settingsGetAndSetWithTheFirmwaresReplies() throws {
        let (w, r) = try repeater()
        defer { withExtendedLifetime(w) {} }
        let script: [(String, String)] = [
            ("ver", "v1.17.1 (Build: 14 Aug 2026)"),
            ("board", "PocketMesh simulator"),
            ("get name", "> rpt"),
            ("get role", "> repeater"),
            ("get repeat", "> on"),
            ("get radio", "> 869.6179809,62.5,8,5"),
            ("get freq", "> 869.6179809"),
            ("get tx", "> 20"),
            ("get af", "> 1.0"),
            ("get dutycycle", "> 50.0%"),
            ("get txdelay", "> 0.5"),
            ("get direct.txdelay", "> 0.3"),
            ("get rxdelay", "> 0.0"),
            ("get flood.max", "> 64"),
            ("get flood.max.unscoped", "> 64"),
            ("get flood.max.advert", "> 8"),
            ("get advert.interval", "> 2"),
            ("get flood.advert.interval", "> 47"),
            ("get loop.detect", "> off"),
            ("get path.hash.mode", "> 0"),
            ("get allow.read.only", "> off"),
            ("get lat", "> 0.0"),
            ("get bridge.type", "> none"),
            ("get nothing", "??: nothing"),
            ("set repeat off", "OK - repeat is now OFF"),
            ("get repeat", "> off"),
            ("set tx 14", "OK"),
            ("get tx", "> 14"),
            // Any saved change switches the 2-minute local advert off (it is under an hour).
            ("get advert.interval", "> 0"),
            ("set advert.interval 30", "Error: interval range is 60-240 minutes"),
            ("set advert.interval 90", "OK"),
            ("get advert.interval", "> 90"),
            ("set flood.advert.interval 2", "Error: interval range is 3-168 hours"),
            ("set dutycycle 10", "OK - 10.0%"),
            ("get af", "> 9.0"),
            ("set dutycycle 0", "ERROR: dutycycle must be 1-100"),
            ("set txdelay 3", "Error, must be 0-2"),
            ("set txdelay 1.5", "OK"),
            ("get txdelay", "> 1.5"),
            ("set flood.max 65", "Error, max 64"),
            ("set flood.max 10", "OK"),
            ("get flood.max", "> 10"),
            ("set owner.info Ann|base camp", "OK"),
            ("get owner.info", "> Ann|base camp"),
            ("set loop.detect sometimes", "Error, must be: off, minimal, moderate, or strict"),
            ("set loop.detect strict", "OK"),
            ("get loop.detect", "> strict"),
            ("set path.hash.mode 3", "Error, must be 0,1, or 2"),
            ("set name bad:name", "Error, bad chars"),
            ("set lat 51.5", "OK"),
            ("get lat", "> 51.5"),
            ("set guest.password visitor", "OK"),
            ("get guest.password", "> visitor"),
            ("set radio 100,250,10,5", "Error, invalid radio params"),
            // The firmware splits at commas (parseTextParts): the space-separated form is refused.
            ("set radio 915 250 10 5", "Error, invalid radio params"),
            ("set radio 915,250,10,5", "OK - reboot to apply"),
            ("get radio", "> 915.0,250,10,5"),
            ("set freq 868", "unknown config: freq 868"), // serial console only
            ("set whatever 1", "unknown config: whatever 1"),
            ("set radio.fem.rxgain on", "Error: unsupported"),
            ("get cad", "> off"),
            ("set cad on", "OK"),
            ("get cad", "> on"),
            ("set agc.reset.interval 10", "OK - interval rounded to 8"),
            ("get agc.reset.interval", "> 8"),
            ("set radio.rxgain off", "OK"),
            ("get radio.rxgain", "> off"),
            // Listen-before-talk by RSSI, which the admin CLI shares with the companion's.
            ("get rssi.lbt", "> off"),
            ("set rssi.lbt on", "OK"),
            ("get rssi.lbt", "> on"),
            ("get rssi.lbt.params", "> -80,5,0,4000,50"),
            ("set rssi.lbt.params -85,5,100,4000,50", "OK"),
            ("get rssi.lbt.params", "> -85,5,100,4000,50"),
            ("password s3cret", "password now: s3cret"),
            ("xy|get name", "xy|> rpt"),
            ("neighbors", "-none-"),
            ("clear stats", "(OK - stats reset)"),
            ("log start", "   logging on"),
            ("stats-core", "Unknown command"), // serial console only
            ("erase", "Unknown command"),
            ("frobnicate", "Unknown command"),
            ("time 1", "(ERR: clock cannot go backwards)"),
            ("setperm 1234", "Err - bad params"),
            ("setperm 123 3", "Err - bad pubkey"),
            ("setperm 1234 3", "Err - invalid params"),
        ]
        for (cmd, want) in script {
            #expect(r.command(cmd) == want, "\(cmd)")
        }
        #expect(r.disableForward && r.radio.params.txPowerDbm == 14 && r.adminPassword == "s3cret")
        #expect(r.ownerInfo == "Ann\nbase camp" && r.latitudeE6 == 51_500_000)
        #expect(r.radio.params.freqKHz == 869_618) // `set radio` waits for a reboot
    }

    @Test func serialOnlyCommandsAnswerOnTheConsole() throws {
        let (w, r) = try repeater()
        defer { withExtendedLifetime(w) {} }
        #expect(r.command("stats-core", senderTimestamp: 0).hasPrefix("{\"battery_mv\":4150,\"uptime_secs\":"))
        #expect(r.command("stats-packets", senderTimestamp: 0).hasPrefix("{\"recv\":"))
        #expect(r.command("stats-radio", senderTimestamp: 0).hasPrefix("{\"noise_floor\":-120,"))
        #expect(r.command("set freq 868", senderTimestamp: 0) == "OK - reboot to apply")
        #expect(r.command("get radio") == "> 868.0,62.5,8,5")
    }

    @Test func clockAndTime() throws {
        let (w, r) = try repeater()
        #expect(r.command("clock") == "00:00 - 1/1/2026 UTC")
        let t = w.mesh.epochNow + 3600 + 120
        #expect(r.command("time \(t)") == "OK - clock set: 01:02 - 1/1/2026 UTC")
        #expect(r.command("clock sync", senderTimestamp: t - 5) == "ERR: clock cannot go backwards")
        #expect(r.command("clock sync", senderTimestamp: t + 59) == "OK - clock set: 01:03 - 1/1/2026 UTC")
    }

    @Test func regionCommands() throws {
        let (w, r) = try repeater()
        defer { withExtendedLifetime(w) {} }
        let script: [(String, String)] = [
            ("region", "*^ F\n"),
            ("region put north", "OK - (flood allowed)"),
            ("region put #south", "OK - (flood allowed)"),
            ("region put hills north", "OK - (flood allowed)"),
            ("region put x nowhere", "Err - unknown parent"),
            ("region put bad.name", "Err - unable to put"),
            ("region", "*^ F\n north F\n  hills F\n south F\n"),
            ("region get hills", " hills (north) F"),
            ("region get #south", " #south F"),
            ("region get nowhere", "Err - unknown region"),
            ("region denyf south", "OK"),
            ("region get south", " #south "),
            ("region list allowed", "*,north,hills"),
            ("region list denied", "south"),
            ("region list other", "Err - use 'allowed' or 'denied'"),
            ("region home", " home is *"),
            ("region home hil", " home is now hills"),
            ("region", "* F\n north F\n  hills^ F\n south\n"),
            ("region default", " default scope is <null>"),
            ("region default east", " default scope is now east"),
            ("region default", " default scope is east"),
            ("region default <null>", " default scope is now <null>"),
            ("region remove north", "Err - not empty"),
            ("region remove hills", "OK"),
            ("region remove hills", "Err - not found"),
            ("region save", "OK"),
            ("region frob", "Err - ??"),
        ]
        for (cmd, want) in script {
            #expect(r.command(cmd) == want, "\(cmd)")
        }
    }

    @Test func regionLoadReplacesTheTree() throws {
        let (w, r) = try repeater()
        defer { withExtendedLifetime(w) {} }
        _ = r.command("region put north")
        #expect(r.command("region load") == "")
        #expect(r.command(" north F") == "")
        #expect(r.command("  hills") == "")
        #expect(r.command(" west F") == "")
        #expect(r.command("") == "OK - loaded 3 regions")
        #expect(r.command("region") == "*^ F\n north F\n  hills\n west F\n")
    }

    @Test func regionsLastOnlyOnceSaved() throws {
        let (w, r) = try repeater()
        #expect(r.command("region put north") == "OK - (flood allowed)")
        _ = r.command("reboot")
        w.mesh.run(for: 2_000)
        #expect(r.command("region list allowed") == "*") // lost: never saved
        _ = r.command("region put north")
        #expect(r.command("region save") == "OK")
        _ = r.command("region put south")
        _ = r.command("reboot")
        w.mesh.run(for: 2_000)
        #expect(r.command("region list allowed") == "*,north")
        // Topology regions count as saved.
        let t = Topology(nodes: [NodeSpec(name: "r", role: .repeater, regions: ["#east"])], links: [])
        let w2 = try SimWorld(topology: t)
        _ = w2.repeaters[0].command("reboot")
        w2.mesh.run(for: 2_000)
        #expect(w2.repeaters[0].command("region list allowed") == "*,east")
    }

    @Test func setpermAddsAndRemovesClients() throws {
        let (w, r) = try repeater()
        let key = AirHex.encode(w.companions[0].publicKey.bytes)
        #expect(r.command("setperm \(key) 3") == "OK")
        #expect(r.clients.count == 1 && r.clients[0].isAdmin)
        #expect(r.command("setperm \(key.prefix(8)) 0") == "OK")
        #expect(r.clients.isEmpty)
    }

    @Test func setRadioAppliesAtTheNextBootAndReboots() throws {
        let (w, r) = try repeater()
        #expect(r.command("set radio 915,250,10,5") == "OK - reboot to apply")
        #expect(r.command("reboot") == "")
        #expect(!r.powered)
        w.mesh.run(for: 2_000)
        #expect(r.powered && r.radio.params.freqKHz == 915_000 && r.radio.params.bwHz == 250_000 && r.radio.params.sf == 10)
    }

    /// `set radio` and `tempradio` take comma-separated values, as the firmware's parseTextParts
    /// splits them; the space-separated form that a real repeater refuses is refused here too.
    @Test func radioSettingsAreCommaSeparatedAsInTheFirmware() throws {
        let (w, r) = try repeater()
        #expect(r.command("set radio 869.525 250 11 5") == "Error, invalid radio params")
        #expect(r.command("set radio 869.525,250,11,5") == "OK - reboot to apply")
        #expect(r.command("get radio") == "> 869.5250244,250,11,5")
        #expect(r.command("tempradio 869.525 250 11 5 1") == "Error, invalid params")
        #expect(r.command("tempradio 869.525,250,11,5,0") == "Error, invalid params")
        #expect(r.command("tempradio 915,125,9,5,1") == "OK - temp params for 1 mins")
        w.mesh.run(for: 3_000)
        #expect(r.radio.params.freqKHz == 915_000 && r.radio.params.bwHz == 125_000 && r.radio.params.sf == 9)
    }

    @Test func neighboursFromZeroHopAdvertsAndDiscovery() throws {
        let t = Topology(nodes: [NodeSpec(name: "r0", role: .repeater), NodeSpec(name: "r1", role: .repeater)],
                         links: [LinkSpec(a: "r0", b: "r1", snr: 6.25)])
        let w = try SimWorld(topology: t)
        let r0 = w.repeaters[0], r1 = w.repeaters[1]
        #expect(r0.command("discover.neighbors") == "OK - Discover sent")
        w.mesh.run(for: 10_000)
        let hex = AirHex.encode(r1.publicKey.bytes.prefix(4)).uppercased()
        let line = r0.command("neighbors")
        #expect(line.hasPrefix(hex + ":") && line.hasSuffix(":25"))
        #expect(r0.command("discover.neighbors now") == "Err - discover.neighbors has no options")
        #expect(r0.command("neighbor.remove \(hex)") == "OK")
        #expect(r0.command("neighbors") == "-none-")
        #expect(r0.command("neighbor.remove abc") == "ERR: bad pubkey")
    }

    @Test func cliOverTheAirIgnoresReplaysAndRetries() throws {
        let (w, a, r) = try pair()
        #expect(try loginFrame(a, w, r.publicKey, "password") != nil)
        var seen: [String] = []
        r.onCommand = { c, _ in seen.append(c) }
        a.frames.removeAll()
        _ = a.call(try CommandFrame.sendTextMessage(to: r.publicKey, text: "get repeat", timestamp: 1, type: .cliData))
        #expect(w.mesh.run(until: { a.count(0x83) > 0 }, limit: 30_000))
        let m = a.call(CommandFrame.syncNextMessage())!
        #expect(m.first == 0x07 && String(decoding: m[13...], as: UTF8.self) == "> on")
        #expect(seen == ["get repeat"])
    }
}
