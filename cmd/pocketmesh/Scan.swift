import MeshLink
import MeshSession
import MeshOps

/// `pocketmesh scan`: which radios could this machine talk to?
struct Scan: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "scan")
    let args: OperationValues
    init(_ args: OperationValues) { self.args = args }

    var ble: Bool { args.flag("ble") }

    var seconds: Double { args.number("for") ?? 0 }

    var all: Bool { args.flag("all") }

    var json: Bool { args.flag("json") }

    func run(_ args: OperationValues) throws {
        let serial = SerialDiscovery.candidates()
        var advertisers: [BLEAdvertiser] = []
        var bleError: LinkError? = nil
        if ble {
            do {
                advertisers = try BLEScanner.scan(milliseconds: Int(seconds * 1000), namePrefix: all ? "" : "MeshCore-")
            } catch {
                bleError = error
            }
        }
        if json {
            var fields: [Value.Field] = [("serial", .array(serial.map(Self.value)))]
            if ble {
                fields.append(("ble", .array(advertisers.map(Self.value))))
                if let bleError { fields.append(("ble_error", .string(Self.sentence(bleError.description)))) }
            }
            emitLine(Value.object(fields).json)
        } else {
            let text = Self.text(serial: serial, advertisers: advertisers, bleScanned: ble && bleError == nil, seconds: seconds)
            if !text.isEmpty { emitHuman(text) }
        }
        if let bleError {
            throw ClientError.link(Self.sentence(bleError.description))
        }
        if serial.isEmpty && advertisers.isEmpty {
            throw ClientError.notFound(ble
                ? "no radio found: no USB serial device is connected and no BLE radio advertising as MeshCore-* was heard; plug the radio in (check `dmesg`), or turn its Bluetooth on and scan longer with --for."
                : "no radio found: no USB serial device is connected; plug the radio in (check `dmesg` for a new ttyUSB/ttyACM), or look for BLE radios with `pocketmesh scan --ble`.")
        }
    }

    static func value(_ c: RadioCandidate) -> Value {
        func optional(_ s: String?) -> Value { s.map(Value.string) ?? .null }
        return .object([
            "path": .string(c.path),
            "by_id": optional(c.byIdPath),
            "usb_id": optional(c.usbId),
            "manufacturer": optional(c.manufacturer),
            "product": optional(c.product),
            "serial": optional(c.serial),
            "bridge": optional(c.bridge),
            "known_bridge": .bool(c.bridge != nil),
            "use": .string("--serial " + c.preferredPath),
        ])
    }

    static func value(_ a: BLEAdvertiser) -> Value {
        .object([
            "address": .string(a.address),
            "address_type": .string(a.addressType),
            "name": a.name.map(Value.string) ?? .null,
            "rssi": .int(a.rssi),
            "use": .string("--ble " + a.bleArgument),
        ])
    }

    static func text(serial: [RadioCandidate], advertisers: [BLEAdvertiser], bleScanned: Bool, seconds: Double) -> String {
        var lines: [String] = []
        if !serial.isEmpty {
            lines.append("USB serial:")
            for c in serial {
                var details: [String] = []
                if let id = c.usbId { details.append(id) }
                details.append(c.bridge ?? "unknown bridge")
                let names = terminalSafeLine([c.manufacturer, c.product].compactMap { $0 }.joined(separator: " "))
                if !names.isEmpty { details.append(names) }
                lines.append("  \(c.path)  \(details.joined(separator: "  "))")
                if let byId = c.byIdPath { lines.append("    by-id: \(byId)") }
                lines.append("    use:   --serial \(c.preferredPath)")
            }
        }
        if bleScanned {
            if advertisers.isEmpty {
                lines.append("BLE: no MeshCore-* radio heard in \(seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)) s.")
            } else {
                lines.append("BLE:")
                for a in advertisers {
                    // A BLE name is whatever the advertiser chose: one line.
                    lines.append("  \(a.address)  \(a.rssi) dBm  \(a.name.map(terminalSafeLine) ?? "(no name)")  use: --ble \(a.bleArgument)")
                }
            }
        }
        return lines.joined(separator: "\n")
    }

    static func sentence(_ s: String) -> String {
        var t = s
        while t.hasSuffix(".") { t.removeLast() }
        return t + "."
    }
}
