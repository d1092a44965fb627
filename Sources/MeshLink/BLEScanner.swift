import CBluetooth
import Glibc

/// A BLE device heard advertising.
public struct BLEAdvertiser: Equatable, Hashable, Sendable {
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

/// Active LE scan through the first HCI adapter that is up, over a raw HCI socket (needs
/// CAP_NET_RAW and CAP_NET_ADMIN). Talks HCI directly, so the binary needs no BlueZ library.
public enum BLEScanner {
    /// Scans for `milliseconds` and returns advertisers whose name starts with `namePrefix`
    /// (all of them when it is empty), strongest first.
    public static func scan(milliseconds: Int = 5000, namePrefix: String = "MeshCore-") throws(LinkError) -> [BLEAdvertiser] {
        let adapter: UInt16
        do {
            adapter = try HCI.firstAdapterUp()
        } catch {
            throw noAdapter(error)
        }
        let dd: FileDescriptor
        do {
            dd = try HCI.open(adapter: adapter)
        } catch {
            throw noAdapter(error)
        }
        defer { dd.close() }

        // Active scan, 10 ms interval and window, public own address, accept all advertisers.
        do {
            try HCI.command(dd, ocf: 0x000B, parameters: [0x01, 0x10, 0x00, 0x10, 0x00, 0x00, 0x00])
        } catch {
            throw scanError(error, step: "set the scan parameters")
        }
        do {
            try HCI.command(dd, ocf: 0x000C, parameters: [0x01, 0x00])  // enable, no duplicate filter
        } catch {
            throw scanError(error, step: "start scanning")
        }
        defer { try? HCI.command(dd, ocf: 0x000C, parameters: [0x00, 0x00]) }

        var filter = hci_filter()
        hci_filter_clear(&filter)
        hci_filter_set_ptype(HCI_EVENT_PKT, &filter)
        hci_filter_set_event(EVT_LE_META_EVENT, &filter)
        guard setsockopt(dd.rawValue, SOL_HCI, HCI_FILTER, &filter, socklen_t(MemoryLayout<hci_filter>.size)) == 0 else {
            throw scanError(.current, step: "filter HCI events")
        }

        var seen: [String: BLEAdvertiser] = [:]
        let deadline = monotonicMilliseconds() + UInt64(max(0, milliseconds))
        var buffer = [UInt8](repeating: 0, count: 260)  // largest HCI event
        while true {
            let now = monotonicMilliseconds()
            if now >= deadline { break }
            var p = pollfd(fd: dd.rawValue, events: Int16(POLLIN), revents: 0)
            if poll(&p, 1, Int32(clamping: deadline - now)) <= 0 { continue }
            let n = buffer.withUnsafeMutableBytes { Glibc.read(dd.rawValue, $0.baseAddress, $0.count) }
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
        case .networkDown:
            return .unsupported("Bluetooth scanning", reason: "the Bluetooth adapter is powered off (run `bluetoothctl power on`)")
        default:
            return .unsupported("Bluetooth scanning", reason: "no Bluetooth adapter is present (check `bluetoothctl show`)")
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

/// The few raw HCI operations a scan needs (Bluetooth Core Vol 4 Part E), over kernel sockets.
enum HCI {
    static let protocolHCI: Int32 = 1          // BTPROTO_HCI
    static let getDeviceList: UInt = 0x8004_48D2  // HCIGETDEVLIST = _IOR('H', 210, int)
    static let maxDevices = 16                  // HCI_MAX_DEV

    /// The id of the first adapter that is up: ENODEV when there is none, ENETDOWN when all are down.
    static func firstAdapterUp() throws(Errno) -> UInt16 {
        let control = try FileDescriptor.socket(AF_BLUETOOTH, Int32(SOCK_RAW.rawValue), protocolHCI)
        defer { control.close() }
        // struct hci_dev_list_req { u16 dev_num; struct hci_dev_req { u16 dev_id; u32 dev_opt; } dev_req[]; }
        var request = [UInt8](repeating: 0, count: 4 + maxDevices * 8)
        request[0] = UInt8(maxDevices)
        let status = request.withUnsafeMutableBytes { Glibc.ioctl(control.rawValue, getDeviceList, $0.baseAddress!) }
        if status < 0 { throw Errno.current }
        let count = min(Int(request[0]) | Int(request[1]) << 8, maxDevices)
        if count == 0 { throw Errno.noSuchDevice }
        for index in 0..<count {
            let entry = 4 + index * 8
            let id = UInt16(request[entry]) | UInt16(request[entry + 1]) << 8
            let options = UInt32(request[entry + 4]) | UInt32(request[entry + 5]) << 8
            if options & 1 != 0 { return id }  // bit HCI_UP
        }
        throw Errno.networkDown
    }

    /// A raw HCI socket bound to `adapter`.
    static func open(adapter: UInt16) throws(Errno) -> FileDescriptor {
        let dd = try FileDescriptor.socket(AF_BLUETOOTH, Int32(SOCK_RAW.rawValue), protocolHCI)
        var address = sockaddr_hci()
        address.hci_family = sa_family_t(AF_BLUETOOTH)
        address.hci_dev = adapter
        address.hci_channel = 0  // HCI_CHANNEL_RAW
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(dd.rawValue, $0, socklen_t(MemoryLayout<sockaddr_hci>.size)) }
        }
        if status != 0 {
            let error = Errno.current
            dd.close()
            throw error
        }
        return dd
    }

    /// Sends an LE controller command (OGF 0x08) and waits up to 1 s for its completion.
    /// A non-zero HCI status (e.g. 0x0C Command Disallowed while another scan runs) throws EIO.
    static func command(_ dd: FileDescriptor, ocf: UInt16, parameters: [UInt8]) throws(Errno) {
        let opcode: UInt16 = 0x08 << 10 | ocf
        var filter = hci_filter()
        hci_filter_clear(&filter)
        hci_filter_set_ptype(HCI_EVENT_PKT, &filter)
        hci_filter_set_event(EVT_CMD_COMPLETE, &filter)
        hci_filter_set_event(EVT_CMD_STATUS, &filter)
        hci_filter_set_opcode(Int32(opcode), &filter)
        if setsockopt(dd.rawValue, SOL_HCI, HCI_FILTER, &filter, socklen_t(MemoryLayout<hci_filter>.size)) != 0 {
            throw Errno.current
        }
        let packet: [UInt8] = [UInt8(HCI_COMMAND_PKT), UInt8(opcode & 0xFF), UInt8(opcode >> 8), UInt8(parameters.count)] + parameters
        let written = packet.withUnsafeBytes { raw in retryingOnInterrupt { Glibc.write(dd.rawValue, raw.baseAddress, raw.count) } }
        _ = try written.get()
        let deadline = monotonicMilliseconds() + 1000
        var buffer = [UInt8](repeating: 0, count: 260)
        while true {
            let now = monotonicMilliseconds()
            if now >= deadline { throw Errno.timedOut }
            var p = pollfd(fd: dd.rawValue, events: Int16(POLLIN), revents: 0)
            if poll(&p, 1, Int32(clamping: deadline - now)) <= 0 { continue }
            let n = buffer.withUnsafeMutableBytes { Glibc.read(dd.rawValue, $0.baseAddress, $0.count) }
            guard n >= 7, buffer[0] == UInt8(HCI_EVENT_PKT) else { continue }
            // Command Complete: 04 0E len ncmd opcode(2) status ; Command Status: 04 0F len status ncmd opcode(2)
            if buffer[1] == UInt8(EVT_CMD_COMPLETE), UInt16(buffer[4]) | UInt16(buffer[5]) << 8 == opcode {
                if buffer[6] != 0 { throw Errno.ioError }
                return
            }
            if buffer[1] == UInt8(EVT_CMD_STATUS), UInt16(buffer[5]) | UInt16(buffer[6]) << 8 == opcode {
                if buffer[3] != 0 { throw Errno.ioError }
                return
            }
        }
    }
}
