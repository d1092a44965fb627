import CBluetooth
import Glibc

/// A BLE device heard advertising.
public struct BLEAdvertiser: Equatable, Hashable, Codable, Sendable {
    /// `AA:BB:CC:DD:EE:FF`.
    public var address: String
    /// `public` or `random`.
    public var addressType: String
    /// Complete or shortened local name, e.g. `MeshCore-1EC77175`.
    public var name: String?
    /// Strongest RSSI heard, dBm.
    public var rssi: Int

    /// The value for `--ble`: `AA:BB:...` or `AA:BB:.../random`.
    public var bleArgument: String { addressType == "random" ? "\(address)/random" : address }
}

/// Parses HCI LE Advertising Report events (sans-I/O; exercised by tests with captured bytes).
public enum AdvertisingReport {
    /// Reports in one HCI event packet (`04 3E len 02 n ...`); empty for anything else or malformed.
    public static func parse(hciEvent packet: UnsafeRawBufferPointer) -> [BLEAdvertiser] {
        guard packet.count >= 5, packet[0] == 0x04, packet[1] == 0x3E else { return [] }
        let length = Int(packet[2])
        guard packet.count >= 3 + length, length >= 2, packet[3] == 0x02 else { return [] }
        let count = Int(packet[4])
        var offset = 5
        var result: [BLEAdvertiser] = []
        // BlueZ lays reports out one after another (le_advertising_info), as controllers send them.
        for _ in 0..<count {
            guard offset + 9 <= 3 + length else { break }
            let addressType = packet[offset + 1]
            let address = (0..<6).map { packet[offset + 7 - $0] }  // little-endian on the wire
            let dataLength = Int(packet[offset + 8])
            let dataStart = offset + 9
            guard dataStart + dataLength + 1 <= 3 + length else { break }
            let data = UnsafeRawBufferPointer(rebasing: packet[dataStart..<(dataStart + dataLength)])
            let rssi = Int(Int8(bitPattern: packet[dataStart + dataLength]))
            result.append(BLEAdvertiser(
                address: address.map { hex($0).uppercased() }.joined(separator: ":"),
                addressType: addressType == 0x01 || addressType == 0x03 ? "random" : "public",
                name: localName(in: data), rssi: rssi))
            offset = dataStart + dataLength + 1
        }
        return result
    }

    /// The Complete (0x09) or Shortened (0x08) Local Name in advertising data.
    public static func localName(in data: UnsafeRawBufferPointer) -> String? {
        var offset = 0
        var shortened: String? = nil
        while offset < data.count {
            let length = Int(data[offset])
            if length == 0 || offset + 1 + length > data.count { break }
            let type = data[offset + 1]
            let value = UnsafeRawBufferPointer(rebasing: data[(offset + 2)..<(offset + 1 + length)])
            if type == 0x09 { return String(decoding: value, as: UTF8.self) }
            if type == 0x08 { shortened = String(decoding: value, as: UTF8.self) }
            offset += 1 + length
        }
        return shortened
    }
}

/// Active LE scan through the first HCI adapter (libbluetooth; needs CAP_NET_RAW and CAP_NET_ADMIN).
public enum BLEScanner {
    /// Scans for `milliseconds` and returns advertisers whose name starts with `namePrefix`
    /// (all named and unnamed ones when it is empty), strongest first.
    public static func scan(milliseconds: Int = 5000, namePrefix: String = "MeshCore-") throws(LinkError) -> [BLEAdvertiser] {
        let adapter = hci_get_route(nil)
        if adapter < 0 { throw noAdapter(.current) }
        let dd = hci_open_dev(adapter)
        if dd < 0 { throw noAdapter(.current) }
        defer { hci_close_dev(dd) }

        if hci_le_set_scan_parameters(dd, 0x01, 0x0010, 0x0010, 0x00, 0x00, 1000) < 0 {
            throw scanError(.current, step: "set the scan parameters")
        }
        if hci_le_set_scan_enable(dd, 0x01, 0x00, 1000) < 0 {
            throw scanError(.current, step: "start scanning")
        }
        defer { _ = hci_le_set_scan_enable(dd, 0x00, 0x00, 1000) }

        var saved = hci_filter()
        var savedLength = socklen_t(MemoryLayout<hci_filter>.size)
        _ = getsockopt(dd, SOL_HCI, HCI_FILTER, &saved, &savedLength)
        defer { _ = setsockopt(dd, SOL_HCI, HCI_FILTER, &saved, savedLength) }
        var filter = hci_filter()
        hci_filter_clear(&filter)
        hci_filter_set_ptype(HCI_EVENT_PKT, &filter)
        hci_filter_set_event(EVT_LE_META_EVENT, &filter)
        guard setsockopt(dd, SOL_HCI, HCI_FILTER, &filter, socklen_t(MemoryLayout<hci_filter>.size)) == 0 else {
            throw scanError(.current, step: "filter HCI events")
        }

        var seen: [String: BLEAdvertiser] = [:]
        let deadline = monotonicMilliseconds() + UInt64(max(0, milliseconds))
        var buffer = [UInt8](repeating: 0, count: 260)  // HCI_MAX_EVENT_SIZE
        while true {
            let now = monotonicMilliseconds()
            if now >= deadline { break }
            var p = pollfd(fd: dd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&p, 1, Int32(clamping: deadline - now))
            if ready <= 0 { continue }
            let n = buffer.withUnsafeMutableBytes { Glibc.read(dd, $0.baseAddress, $0.count) }
            if n <= 0 { continue }
            let reports = buffer.withUnsafeBytes { AdvertisingReport.parse(hciEvent: UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            for report in reports {
                var merged = seen[report.address] ?? report
                merged.name = report.name ?? merged.name          // names often come in scan responses
                merged.rssi = max(merged.rssi, report.rssi)
                seen[report.address] = merged
            }
        }
        return seen.values
            .filter { namePrefix.isEmpty || ($0.name?.hasPrefix(namePrefix) ?? false) }
            .sorted { $0.rssi != $1.rssi ? $0.rssi > $1.rssi : $0.address < $1.address }
    }

    static func noAdapter(_ error: Errno) -> LinkError {
        switch error {
        case .addressFamilyNotSupported, .protocolNotSupported:
            return .unsupported("Bluetooth scanning", reason: "this system's kernel has no Bluetooth support (\(error.name))")
        case .permissionDenied, .notPermitted:
            return .permission("the Bluetooth adapter", hint: "scanning needs CAP_NET_RAW and CAP_NET_ADMIN (run as root, or sudo setcap cap_net_raw,cap_net_admin+eip $(command -v pocketmesh))")
        default:
            return .unsupported("Bluetooth scanning", reason: "no Bluetooth adapter is present and powered (check `bluetoothctl show`)")
        }
    }

    static func scanError(_ error: Errno, step: String) -> LinkError {
        switch error {
        case .permissionDenied, .notPermitted:
            return noAdapter(error)
        case .ioError, .busy:
            return .bluetooth("Bluetooth scanning", reason: "the adapter refused to \(step) (\(error.name)); another program may be scanning: stop it or run `bluetoothctl scan off`")
        default:
            return .bluetooth("Bluetooth scanning", reason: "could not \(step): \(error)")
        }
    }
}
