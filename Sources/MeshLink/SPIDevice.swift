import Glibc

/// The kernel's spidev ioctls (`linux/spi/spidev.h`), with `struct spi_ioc_transfer` laid out by
/// hand (32 bytes, little-endian: tx_buf u64, rx_buf u64, len u32, speed_hz u32, delay_usecs u16,
/// bits_per_word u8, cs_change u8, tx_nbits u8, rx_nbits u8, word_delay_usecs u8, pad u8).
public enum SPIIoctl {
    /// `SPI_IOC_MESSAGE(n)`: `_IOW('k', 0, char[n * 32])`.
    public static func message(_ n: Int) -> UInt { 0x4000_6B00 | UInt(n * 32) << 16 }
    /// `SPI_IOC_WR_MODE` (u8), `SPI_IOC_WR_BITS_PER_WORD` (u8), `SPI_IOC_WR_MAX_SPEED_HZ` (u32).
    public static let writeMode: UInt = 0x4001_6B01
    public static let writeBitsPerWord: UInt = 0x4001_6B03
    public static let writeMaxSpeedHz: UInt = 0x4004_6B04
    /// `SPI_NO_CS` in the mode byte: no chip select driven by the controller.
    public static let modeNoChipSelect: UInt8 = 0x40

    /// One `struct spi_ioc_transfer`.
    public static func transfer(tx: UInt64, rx: UInt64, length: UInt32, speedHz: UInt32, bitsPerWord: UInt8 = 8) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(32)
        func le<T: FixedWidthInteger>(_ v: T) { withUnsafeBytes(of: v.littleEndian) { out += $0 } }
        le(tx); le(rx); le(length); le(speedHz)
        le(UInt16(0))                 // delay_usecs
        out += [bitsPerWord, 0, 0, 0, 0, 0]  // bits_per_word, cs_change, tx_nbits, rx_nbits, word_delay_usecs, pad
        return out
    }
}

/// A full-duplex SPI bus through `/dev/spidevB.C` (mode 0, 8 bits per word); chip select is the
/// kernel's, held for each transfer, unless `ownChipSelect`: then the kernel is asked to leave
/// its chip select alone (SPI_NO_CS) and the caller drives one of its own on a GPIO line (a
/// controller that cannot do without still toggles its own, which the board does not use).
public final class SPIDevice {
    public let path: String
    public let speedHz: UInt32
    /// Whether the kernel drives no chip select (SPI_NO_CS was taken).
    public private(set) var noKernelChipSelect = false
    let fd: FileDescriptor

    public init(path: String, speedHz: UInt32 = 8_000_000, mode: UInt8 = 0, ownChipSelect: Bool = false) throws(Errno) {
        self.path = path
        self.speedHz = speedHz
        fd = try FileDescriptor.open(path, O_RDWR)
        var m = mode, bits: UInt8 = 8, speed = speedHz
        do throws(Errno) {
            if ownChipSelect {
                var noCS = mode | SPIIoctl.modeNoChipSelect
                noKernelChipSelect = (try? sys { Glibc.ioctl(fd.rawValue, SPIIoctl.writeMode, &noCS) }) != nil
            }
            if !noKernelChipSelect { _ = try sys { Glibc.ioctl(fd.rawValue, SPIIoctl.writeMode, &m) } }
            _ = try sys { Glibc.ioctl(fd.rawValue, SPIIoctl.writeBitsPerWord, &bits) }
            _ = try sys { Glibc.ioctl(fd.rawValue, SPIIoctl.writeMaxSpeedHz, &speed) }
        } catch { fd.close(); throw error }
    }

    deinit { fd.close() }

    /// Clocks `tx` out and returns what came in at the same time (as many bytes).
    public func transfer(_ tx: [UInt8]) throws(Errno) -> [UInt8] {
        var rx = [UInt8](repeating: 0, count: tx.count)
        var failure: Errno? = nil
        tx.withUnsafeBytes { t in
            rx.withUnsafeMutableBytes { r in
                var x = SPIIoctl.transfer(tx: UInt64(UInt(bitPattern: t.baseAddress)), rx: UInt64(UInt(bitPattern: r.baseAddress)),
                                          length: UInt32(tx.count), speedHz: speedHz)
                do throws(Errno) { _ = try sys { x.withUnsafeMutableBytes { Glibc.ioctl(fd.rawValue, SPIIoctl.message(1), $0.baseAddress!) } } } catch { failure = error }
            }
        }
        if let failure { throw failure }
        return rx
    }
}
