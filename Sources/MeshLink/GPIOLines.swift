import Glibc

/// The GPIO character device's v2 uAPI (`linux/gpio.h`), its structures laid out by hand:
/// `struct gpio_v2_line_request` (592 bytes: offsets u32[64], consumer char[32], config at 288 —
/// flags u64, num_attrs u32, padding u32[5], attrs[10] of 24 bytes —, num_lines u32 at 560,
/// event_buffer_size u32, padding u32[5], fd s32 at 588), `struct gpio_v2_line_values` (bits u64,
/// mask u64) and `struct gpio_v2_line_event` (48 bytes). No libgpiod.
public enum GPIOv2 {
    /// `GPIO_V2_GET_LINE_IOCTL`: `_IOWR(0xB4, 0x07, struct gpio_v2_line_request)`.
    public static let getLineIoctl: UInt = 0xC250_B407
    /// `GPIO_V2_LINE_GET_VALUES_IOCTL`, `GPIO_V2_LINE_SET_VALUES_IOCTL`: `_IOWR(0xB4, 0x0E / 0x0F, struct gpio_v2_line_values)`.
    public static let getValuesIoctl: UInt = 0xC010_B40E
    public static let setValuesIoctl: UInt = 0xC010_B40F

    public static let flagInput: UInt64 = 1 << 2
    public static let flagOutput: UInt64 = 1 << 3
    public static let flagEdgeRising: UInt64 = 1 << 4
    public static let flagEdgeFalling: UInt64 = 1 << 5
    public static let requestSize = 592
    public static let fdOffset = 588
    /// `GPIO_V2_LINE_ATTR_ID_OUTPUT_VALUES`: a config attribute with the outputs' first values.
    public static let attrOutputValues: UInt32 = 2

    /// A line request for `offsets` with `flags`; `initialValues` (bit i for the line at index i)
    /// sets outputs' levels as they are taken (one config attribute at 320: id, padding, values, mask).
    public static func lineRequest(offsets: [UInt32], consumer: String, flags: UInt64, eventBufferSize: UInt32 = 0,
                                   initialValues: UInt64? = nil) -> [UInt8] {
        precondition(!offsets.isEmpty && offsets.count <= 64)
        var out = [UInt8](repeating: 0, count: requestSize)
        func put<T: FixedWidthInteger>(_ v: T, at i: Int) { withUnsafeBytes(of: v.littleEndian) { for (k, b) in $0.enumerated() { out[i + k] = b } } }
        for (i, o) in offsets.enumerated() { put(o, at: 4 * i) }
        for (i, b) in consumer.utf8.prefix(31).enumerated() { out[256 + i] = b }
        put(flags, at: 288)
        if let v = initialValues {
            put(UInt32(1), at: 296)
            put(attrOutputValues, at: 320)
            put(v, at: 328)
            put(offsets.count == 64 ? UInt64.max : (UInt64(1) << UInt64(offsets.count)) - 1, at: 336)
        }
        put(UInt32(offsets.count), at: 560)
        put(eventBufferSize, at: 564)
        return out
    }

    /// `GPIO_GET_CHIPINFO_IOCTL`: `_IOR(0xB4, 0x01, struct gpiochip_info)` (name char[32], label
    /// char[32], lines u32: 68 bytes).
    public static let chipInfoIoctl: UInt = 0x8044_B401
    public static let chipInfoSize = 68

    /// `struct gpiochip_info`.
    public struct ChipInfo: Equatable, Sendable {
        public var name: String
        public var label: String
        public var lines: UInt32

        public init?(_ b: [UInt8]) {
            guard b.count >= GPIOv2.chipInfoSize else { return nil }
            func text(_ r: Range<Int>) -> String { String(decoding: b[r].prefix { $0 != 0 }, as: UTF8.self) }
            name = text(0..<32)
            label = text(32..<64)
            lines = UInt32(b[64]) | UInt32(b[65]) << 8 | UInt32(b[66]) << 16 | UInt32(b[67]) << 24
        }
    }

    /// `struct gpio_v2_line_values`.
    public static func lineValues(bits: UInt64, mask: UInt64) -> [UInt8] {
        var out: [UInt8] = []
        withUnsafeBytes(of: bits.littleEndian) { out += $0 }
        withUnsafeBytes(of: mask.littleEndian) { out += $0 }
        return out
    }

    /// `struct gpio_v2_line_event`: timestamp_ns u64, id u32 (1 rising, 2 falling), offset u32, seqno u32, line_seqno u32, padding u32[6].
    public struct LineEvent: Equatable, Sendable {
        public static let size = 48
        public var timestampNs: UInt64
        public var rising: Bool
        public var offset: UInt32
        public var seqno: UInt32

        public init?(_ b: [UInt8]) {
            guard b.count >= Self.size else { return nil }
            func u32(_ i: Int) -> UInt32 { UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24 }
            timestampNs = UInt64(u32(0)) | UInt64(u32(4)) << 32
            rising = u32(8) == 1
            offset = u32(12)
            seqno = u32(16)
        }
    }
}

/// Lines of a GPIO chip (`/dev/gpiochipN`) taken with one v2 line request: outputs to set, inputs
/// to read, and for an input with edge detection, a descriptor that turns readable on each edge
/// (read the events with `events()`; poll it, never spin).
public final class GPIOLines {
    public let offsets: [UInt32]
    /// The request's descriptor (edge events are read from it).
    public let fd: FileDescriptor

    public init(chip: String, offsets: [UInt32], consumer: String, flags: UInt64, initialValues: UInt64? = nil) throws(Errno) {
        self.offsets = offsets
        let chipFD = try FileDescriptor.open(chip, O_RDWR)
        defer { chipFD.close() }
        var req = GPIOv2.lineRequest(offsets: offsets, consumer: consumer, flags: flags,
                                     eventBufferSize: flags & (GPIOv2.flagEdgeRising | GPIOv2.flagEdgeFalling) != 0 ? 16 : 0,
                                     initialValues: initialValues)
        _ = try sys { req.withUnsafeMutableBytes { Glibc.ioctl(chipFD.rawValue, GPIOv2.getLineIoctl, $0.baseAddress!) } }
        let raw = Int32(req[GPIOv2.fdOffset]) | Int32(req[GPIOv2.fdOffset + 1]) << 8 | Int32(req[GPIOv2.fdOffset + 2]) << 16 | Int32(req[GPIOv2.fdOffset + 3]) << 24
        fd = FileDescriptor(rawValue: raw)
        _ = fcntl(raw, F_SETFL, fcntl(raw, F_GETFL) | O_NONBLOCK)
    }

    deinit { fd.close() }

    /// Sets the line at `index` (of `offsets`) high or low.
    public func set(_ index: Int, _ high: Bool) throws(Errno) {
        var v = GPIOv2.lineValues(bits: high ? 1 << UInt64(index) : 0, mask: 1 << UInt64(index))
        _ = try sys { v.withUnsafeMutableBytes { Glibc.ioctl(fd.rawValue, GPIOv2.setValuesIoctl, $0.baseAddress!) } }
    }

    /// Whether the line at `index` is high.
    public func get(_ index: Int) throws(Errno) -> Bool {
        var v = GPIOv2.lineValues(bits: 0, mask: 1 << UInt64(index))
        _ = try sys { v.withUnsafeMutableBytes { Glibc.ioctl(fd.rawValue, GPIOv2.getValuesIoctl, $0.baseAddress!) } }
        return v[index / 8] & (1 << UInt8(index % 8)) != 0
    }

    /// The edge events waiting (none when the descriptor would block).
    public func events() -> [GPIOv2.LineEvent] {
        var out: [GPIOv2.LineEvent] = []
        var buf = [UInt8](repeating: 0, count: GPIOv2.LineEvent.size * 8)
        while true {
            let n = buf.withUnsafeMutableBytes { raw in (try? fd.read(into: raw)) ?? -1 }
            guard n >= GPIOv2.LineEvent.size else { break }
            var i = 0
            while i + GPIOv2.LineEvent.size <= n {
                if let e = GPIOv2.LineEvent(Array(buf[i..<(i + GPIOv2.LineEvent.size)])) { out.append(e) }
                i += GPIOv2.LineEvent.size
            }
            if n < buf.count { break }
        }
        return out
    }
}

/// GPIO chips by what the kernel calls them: a path, a device name, or the chip's label, so a
/// board's pins are found whatever number the chip got (the Raspberry Pi 5's header chip,
/// `pinctrl-rp1`, was /dev/gpiochip4 and is /dev/gpiochip0 since Linux 6.6.45).
public enum GPIOChip {
    /// The Raspberry Pi header's chip, newest first: Pi 5 (RP1), Pi 4 (BCM2711), earlier (BCM2835).
    public static let raspberryPiLabels = ["pinctrl-rp1", "pinctrl-bcm2711", "pinctrl-bcm2835"]

    /// The chip's name, label and line count.
    public static func info(_ path: String) throws(Errno) -> GPIOv2.ChipInfo {
        let fd = try FileDescriptor.open(path, O_RDONLY)
        defer { fd.close() }
        var buf = [UInt8](repeating: 0, count: GPIOv2.chipInfoSize)
        _ = try sys { buf.withUnsafeMutableBytes { Glibc.ioctl(fd.rawValue, GPIOv2.chipInfoIoctl, $0.baseAddress!) } }
        return GPIOv2.ChipInfo(buf)!
    }

    /// The `/dev/gpiochip*` devices, by name.
    public static func all(in dir: String = "/dev") -> [String] {
        guard let d = opendir(dir) else { return [] }
        defer { closedir(d) }
        var out: [String] = []
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasPrefix("gpiochip") { out.append(dir + "/" + name) }
        }
        return out.sorted { $0.count != $1.count ? $0.count < $1.count : $0 < $1 }
    }

    /// The chip `spec` names: a path (kept as it is), `gpiochipN`, or a label; nil when no chip has that label.
    public static func find(_ spec: String, in dir: String = "/dev") -> String? {
        if spec.hasPrefix("/") { return spec }
        if spec.hasPrefix("gpiochip"), spec.dropFirst(8).allSatisfy(\.isNumber) { return dir + "/" + spec }
        return all(in: dir).first { (try? info($0).label) == spec }
    }

    /// The Raspberry Pi header's chip if this is a Pi, else /dev/gpiochip0.
    public static func defaultChip(in dir: String = "/dev") -> String {
        let chips = all(in: dir).map { ($0, try? info($0).label) }
        for l in raspberryPiLabels { if let c = chips.first(where: { $0.1 == l }) { return c.0 } }
        return dir + "/gpiochip0"
    }
}
