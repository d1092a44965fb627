/// A USB serial device that could be a companion radio.
public struct RadioCandidate: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// Device node, e.g. `/dev/ttyUSB0`.
    public var path: String
    /// Stable name, e.g. `/dev/serial/by-id/usb-Silicon_Labs_CP2102_..._0001-if00-port0`.
    public var byIdPath: String?
    public var vendorId: UInt16?
    public var productId: UInt16?
    public var manufacturer: String?
    public var product: String?
    /// `ID_SERIAL` from udev (vendor_model_serial), or the USB serial number from sysfs.
    public var serial: String?
    /// Name of a USB bridge or board that MeshCore radios use, when the ids match one.
    public var bridge: String?

    public init(path: String, byIdPath: String? = nil, vendorId: UInt16? = nil, productId: UInt16? = nil,
                manufacturer: String? = nil, product: String? = nil, serial: String? = nil, bridge: String? = nil) {
        self.path = path
        self.byIdPath = byIdPath
        self.vendorId = vendorId
        self.productId = productId
        self.manufacturer = manufacturer
        self.product = product
        self.serial = serial
        self.bridge = bridge ?? KnownBridge.name(vendorId: vendorId, productId: productId)
    }

    /// The path to open: the by-id name when there is one (it survives re-plugging).
    public var preferredPath: String { byIdPath ?? path }

    /// `10c4:ea60`, or nil without ids.
    public var usbId: String? {
        guard let vendorId, let productId else { return nil }
        return "\(hex16(vendorId)):\(hex16(productId))"
    }

    /// e.g. `/dev/ttyUSB0 (CP210x, 10c4:ea60, Silicon Labs CP2102 USB to UART Bridge Controller)`.
    public var description: String {
        var details: [String] = []
        if let bridge { details.append(bridge) }
        if let usbId { details.append(usbId) }
        let names = [manufacturer, product].compactMap { $0 }.joined(separator: " ")
        if !names.isEmpty { details.append(names) }
        let shown = byIdPath.map { "\($0) -> \(path)" } ?? path
        return details.isEmpty ? shown : "\(shown) (\(details.joined(separator: ", ")))"
    }
}

/// USB ids of the serial bridges and native-USB chips found on MeshCore companion radios.
public enum KnownBridge {
    public static let table: [(vendorId: UInt16, productId: UInt16, name: String)] = [
        (0x10C4, 0xEA60, "CP210x"),                 // Heltec V2/V3, T-Beam, many ESP32 boards
        (0x1A86, 0x7523, "CH340"),                  // CH340 boards (Heltec V1, clones)
        (0x1A86, 0x55D4, "CH9102"),                 // T-Beam 1.1+, LilyGO boards
        (0x1A86, 0x55D3, "CH343"),                  // LilyGO T3-S3 / T-Deck era boards (WCH CH343P)
        (0x303A, 0x1001, "ESP32-S3 native USB"),    // Espressif USB Serial/JTAG (S3, C3, C6)
        (0x239A, 0x8029, "nRF52840 (RAK4631)"),     // RAK4631 / Adafruit nRF52 bootloader CDC
        (0x239A, 0x0029, "nRF52840 bootloader"),    // same boards in DFU mode: not the companion
        (0x2E8A, 0x000A, "RP2040 native USB"),      // RAK11310, Pico-based MeshCore builds
        (0x0403, 0x6001, "FTDI FT232R"),            // UART adapters wired to a radio's serial port
    ]

    public static func name(vendorId: UInt16?, productId: UInt16?) -> String? {
        guard let vendorId, let productId else { return nil }
        return table.first { $0.vendorId == vendorId && $0.productId == productId }?.name
    }
}

extension RadioCandidate {
    /// Picks the radio for `--serial auto`: the only candidate; or, among several, the only one on a
    /// known radio bridge. Otherwise an error that lists what was found.
    public static func choose(from candidates: [RadioCandidate]) throws(LinkError) -> RadioCandidate {
        if candidates.count == 1 { return candidates[0] }
        if candidates.isEmpty {
            throw .noRadio("no USB serial device is connected: plug the radio in (check `dmesg` for a new ttyUSB/ttyACM), or give --serial PATH, --tcp or --ble")
        }
        let known = candidates.filter { $0.bridge != nil && $0.bridge != "nRF52840 bootloader" }
        if known.count == 1 { return known[0] }
        let listed = candidates.map(\.description).joined(separator: "; ")
        throw .severalRadios("\(candidates.count) USB serial devices could be the radio (\(listed)): choose one with --serial PATH")
    }
}

func hex16(_ value: UInt16) -> String {
    hex(UInt8(value >> 8)) + hex(UInt8(value & 0xFF))
}

func parseHex16(_ text: String?) -> UInt16? {
    guard let text else { return nil }
    return UInt16(text.trimmingWhitespace(), radix: 16)
}

extension String {
    func trimmingWhitespace() -> String {
        var scalars = Substring(self)
        while let last = scalars.last, last == "\n" || last == " " || last == "\r" || last == "\t" { scalars.removeLast() }
        while let first = scalars.first, first == " " || first == "\t" { scalars.removeFirst() }
        return String(scalars)
    }
}
