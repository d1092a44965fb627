import Glibc
import MeshLink
import MeshSession
import Testing
@testable import pocketmesh

/// A fresh folder under /tmp, removed by `remove()`.
struct Scratch {
    let path: String
    init() throws {
        var template = Array("/tmp/pm-nodestate-XXXXXX".utf8CString)
        guard let p = mkdtemp(&template) else { throw ClientError.storage("mkdtemp") }
        path = String(cString: p)
    }
    func remove() { _ = system("rm -rf '\(path)'") }
    func file(_ name: String, _ text: String, mode: mode_t = 0o600) {
        let p = path + "/" + name
        let fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, mode)
        _ = text.withCString { write(fd, $0, strlen($0)) }
        fchmod(fd, mode)
        close(fd)
    }
    func read(_ name: String) -> String? {
        guard let f = fopen(path + "/" + name, "r") else { return nil }
        defer { fclose(f) }
        var out: [UInt8] = []
        var c = fgetc(f)
        while c != EOF { out.append(UInt8(c)); c = fgetc(f) }
        return String(decoding: out, as: UTF8.self)
    }
    func mode(_ name: String) -> mode_t? {
        var st = stat()
        guard lstat(path + "/" + name, &st) == 0 else { return nil }
        return st.st_mode & 0o7777
    }
}

func usageError(_ body: () throws -> Void) -> ClientError? {
    do { try body(); return nil } catch let e as ClientError { return e } catch { return ClientError(.internal, "\(error)") }
}

/// `pocketmesh node`'s state folder gets the daemon's checks: the folder is this user's and
/// closed to other users' writes; no file in it is followed; every file is written through a
/// temporary name made new and renamed; prefs (the admin password) are 0600.
@Suite(.serialized) struct NodeStateTests {
    @Test func aFolderOthersCanWriteIsRefusedWithOneSentence() throws {
        let s = try Scratch()
        defer { s.remove() }
        chmod(s.path, 0o777)
        let e = usageError { _ = try NodeState(dir: s.path) }
        #expect(e?.kind == .usage && e?.exitCode == 2)
        #expect(e?.message.contains("refusing the state folder \(s.path): other users can write to it (mode 0777)") == true, "\(String(describing: e))")
        #expect(e?.message.split(separator: "\n").count == 1)
        chmod(s.path, 0o755)
        #expect(usageError { _ = try NodeState(dir: s.path) } == nil)
        // A folder it makes is 0700.
        let made = s.path + "/new"
        _ = try NodeState(dir: made)
        #expect(s.mode("new") == 0o700)
    }

    @Test func aPlantedTemporaryLinkDoesNotRedirectTheWrite() throws {
        let s = try Scratch()
        defer { s.remove() }
        chmod(s.path, 0o700)
        s.file("victim", "keep me\n", mode: 0o644)
        symlink(s.path + "/victim", s.path + "/prefs.new")
        let state = try NodeState(dir: s.path)
        try state.savePrefs("password s3cret\n")
        #expect(s.read("victim") == "keep me\n")
        #expect(s.mode("victim") == 0o644)
        #expect(s.read("prefs") == "password s3cret\n")
        #expect(s.mode("prefs") == 0o600)
        #expect(s.mode("prefs.new") == nil)
        // A link in the final name is replaced, not written through.
        unlink(s.path + "/prefs")
        symlink(s.path + "/victim", s.path + "/prefs")
        try state.savePrefs("password other\n")
        #expect(s.read("victim") == "keep me\n")
        var st = stat()
        #expect(lstat(s.path + "/prefs", &st) == 0 && st.st_mode & S_IFMT == S_IFREG)
    }

    @Test func prefsAre0600WhateverTheUmask() throws {
        let s = try Scratch()
        defer { s.remove() }
        chmod(s.path, 0o700)
        let old = umask(0)
        defer { umask(old) }
        let state = try NodeState(dir: s.path)
        try state.savePrefs("password x\n")
        try state.saveRegions("next 1\n")
        try state.saveACL("")
        _ = try state.identity()
        for f in ["prefs", "regions", "acl", "identity"] { #expect(s.mode(f) == 0o600, "\(f)") }
    }

    @Test func aPlantedIdentityLinkIsRefusedNotAdopted() throws {
        let s = try Scratch()
        defer { s.remove() }
        chmod(s.path, 0o700)
        // An attacker's key, where the link points.
        let key = String(repeating: "ab", count: 64)
        s.file("theirs", key + "\n")
        symlink(s.path + "/theirs", s.path + "/identity")
        let state = try NodeState(dir: s.path)
        let e = usageError { _ = try state.identity() }
        #expect(e?.kind == .usage && e?.message.contains("symbolic link") == true, "\(String(describing: e))")
        // Nor is a prefs link read.
        symlink(s.path + "/theirs", s.path + "/prefs")
        #expect(usageError { _ = try state.prefs() }?.kind == .usage)
        // A file others can write is refused as well.
        unlink(s.path + "/identity")
        s.file("identity", key + "\n", mode: 0o666)
        #expect(usageError { _ = try state.identity() }?.message.contains("other users can write to it") == true)
    }
}

/// `--password-file` and `--guest-password-file`.
@Suite(.serialized) struct PasswordFileTests {
    @Test func theFirstLineWithoutItsNewline() throws {
        let s = try Scratch()
        defer { s.remove() }
        s.file("pw", "s3cret\n")
        #expect(try readPasswordFile(s.path + "/pw", option: "--password-file", allowEmpty: false) == "s3cret")
        s.file("crlf", "s3cret\r\nsecond line ignored\n", mode: 0o400)
        #expect(try readPasswordFile(s.path + "/crlf", option: "--password-file", allowEmpty: false) == "s3cret")
        s.file("guest", "\n")
        #expect(try readPasswordFile(s.path + "/guest", option: "--guest-password-file", allowEmpty: true) == "")
    }

    @Test func refusedWithOneSentence() throws {
        let s = try Scratch()
        defer { s.remove() }
        func refusal(_ name: String, _ text: String, mode: mode_t = 0o600) -> String? {
            s.file(name, text, mode: mode)
            return usageError { _ = try readPasswordFile(s.path + "/" + name, option: "--password-file", allowEmpty: false) }?.message
        }
        #expect(refusal("world", "x\n", mode: 0o644)?.contains("readable by others (mode 644); chmod 600 it") == true)
        #expect(refusal("group", "x\n", mode: 0o640)?.contains("readable by others") == true)
        #expect(refusal("writable", "x\n", mode: 0o622) != nil)
        #expect(refusal("empty", "")?.contains("empty") == true)
        #expect(refusal("emptyline", "\nsecond\n")?.contains("empty") == true)
        #expect(refusal("long", String(repeating: "x", count: 16))?.contains("at most 15") == true)
        #expect(usageError { _ = try readPasswordFile(s.path + "/missing", option: "--password-file", allowEmpty: false) }?.exitCode == 2)
        for m in [refusal("world", "x\n", mode: 0o644), refusal("long", String(repeating: "y", count: 20))] {
            #expect(m?.split(separator: "\n").count == 1)
        }
    }
}

/// What a real node reports as its battery and temperature: the host's sysfs values, or nothing.
@Suite(.serialized) struct HostSensorsTests {
    /// A made-up sysfs tree.
    func tree(_ s: Scratch, battery: String? = "3987000", batteryType: String = "Battery", mains: String? = "5100000",
              zone: String? = "48312", hwmonTemp: String? = nil) {
        func put(_ rel: String, _ text: String) {
            _ = system("mkdir -p '\(s.path)/\(rel.split(separator: "/").dropLast().joined(separator: "/"))'")
            s.file(rel, text + "\n", mode: 0o644)
        }
        if let mains { put("class/power_supply/AC/voltage_now", mains); put("class/power_supply/AC/type", "Mains") }
        if let battery { put("class/power_supply/BAT0/voltage_now", battery); put("class/power_supply/BAT0/type", batteryType) }
        if let zone { put("class/thermal/thermal_zone0/temp", zone) }
        if let hwmonTemp { put("class/hwmon/hwmon0/temp1_input", hwmonTemp) }
    }

    @Test func autoFindsTheBatteryAndAThermalZone() throws {
        let s = try Scratch()
        defer { s.remove() }
        tree(s)
        let h = try HostSensors(battery: nil, temperature: "auto", root: s.path)
        let r = h.read()
        #expect(r.voltage == 3.987 && r.temperature == 48.312)
        #expect(r.millivolts == 3987)
    }

    @Test func autoFallsBackAndElseReportsNothing() throws {
        let s = try Scratch()
        defer { s.remove() }
        tree(s, battery: nil, zone: nil, hwmonTemp: "39000")
        var r = try HostSensors(battery: nil, temperature: nil, root: s.path).read()
        #expect(r.voltage == 5.1 && r.temperature == 39)
        let empty = try Scratch()
        defer { empty.remove() }
        r = try HostSensors(battery: nil, temperature: nil, root: empty.path).read()
        #expect(r.voltage == nil && r.temperature == nil && r.millivolts == 0)
        // Nothing measured: no voltage or temperature record in telemetry at all.
        #expect(r.lpp(permissions: 0xFF).isEmpty)
        r = try HostSensors(battery: "none", temperature: "none", root: s.path).read()
        #expect(r.voltage == nil && r.temperature == nil)
    }

    @Test func aFileByItsUnit() throws {
        let s = try Scratch()
        defer { s.remove() }
        tree(s)
        _ = system("mkdir -p '\(s.path)/hw'")
        s.file("hw/in1_input", "12650\n", mode: 0o644)
        s.file("hw/temp2_input", "-5250\n", mode: 0o644)
        let h = try HostSensors(battery: s.path + "/hw/in1_input", temperature: s.path + "/hw/temp2_input", root: "/nonexistent")
        #expect(h.read().voltage == 12.65 && h.read().temperature == -5.25)
        let v = try HostSensors(battery: s.path + "/class/power_supply/BAT0/voltage_now", temperature: "none", root: "/nonexistent")
        #expect(v.read().voltage == 3.987)
        // A value that changes is read again each time.
        s.file("hw/in1_input", "11900\n", mode: 0o644)
        #expect(h.read().voltage == 11.9)
        // A file that is no sensor, or cannot be read: one sentence, exit 2.
        let bad = usageError { _ = try HostSensors(battery: s.path + "/class/power_supply/BAT0/type", temperature: nil, root: s.path) }
        #expect(bad?.exitCode == 2 && bad?.message.contains("--battery-sensor") == true)
        let missing = usageError { _ = try HostSensors(battery: nil, temperature: s.path + "/nope/temp", root: s.path) }
        #expect(missing?.exitCode == 2 && missing?.message.contains("cannot be read") == true)
    }
}
