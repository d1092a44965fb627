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

    /// A line request for `offsets` with `flags`.
    public static func lineRequest(offsets: [UInt32], consumer: String, flags: UInt64, eventBufferSize: UInt32 = 0) -> [UInt8] {
        precondition(!offsets.isEmpty && offsets.count <= 64)
        var out = [UInt8](repeating: 0, count: requestSize)
        func put<T: FixedWidthInteger>(_ v: T, at i: Int) { withUnsafeBytes(of: v.littleEndian) { for (k, b) in $0.enumerated() { out[i + k] = b } } }
        for (i, o) in offsets.enumerated() { put(o, at: 4 * i) }
        for (i, b) in consumer.utf8.prefix(31).enumerated() { out[256 + i] = b }
        put(flags, at: 288)
        put(UInt32(offsets.count), at: 560)
        put(eventBufferSize, at: 564)
        return out
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

    public init(chip: String, offsets: [UInt32], consumer: String, flags: UInt64) throws(Errno) {
        self.offsets = offsets
        let chipFD = try FileDescriptor.open(chip, O_RDWR)
        defer { chipFD.close() }
        var req = GPIOv2.lineRequest(offsets: offsets, consumer: consumer, flags: flags, eventBufferSize: flags & (GPIOv2.flagEdgeRising | GPIOv2.flagEdgeFalling) != 0 ? 16 : 0)
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
