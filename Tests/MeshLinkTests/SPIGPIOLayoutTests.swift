import Testing
@testable import MeshLink

/// The spidev and GPIO v2 ioctl numbers and structures, byte for byte as linux/spi/spidev.h and
/// linux/gpio.h lay them out on 64-bit and 32-bit Linux (no pointers in them but u64 fields).
@Suite struct SPIGPIOLayoutTests {
    @Test func spidevIoctlsAndTransfer() {
        #expect(SPIIoctl.message(1) == 0x4020_6B00 && SPIIoctl.message(2) == 0x4040_6B00)
        #expect(SPIIoctl.writeMode == 0x4001_6B01 && SPIIoctl.writeBitsPerWord == 0x4001_6B03 && SPIIoctl.writeMaxSpeedHz == 0x4004_6B04)
        let t = SPIIoctl.transfer(tx: 0x1122_3344_5566_7788, rx: 0x99AA_BBCC_DDEE_FF00, length: 5, speedHz: 8_000_000)
        #expect(t.count == 32)
        #expect(t == [0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0x00, 0xFF, 0xEE, 0xDD, 0xCC, 0xBB, 0xAA, 0x99,
                      0x05, 0x00, 0x00, 0x00, 0x00, 0x12, 0x7A, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00])
    }

    @Test func gpioLineRequestValuesAndEvents() {
        #expect(GPIOv2.getLineIoctl == 0xC250_B407 && GPIOv2.setValuesIoctl == 0xC010_B40F && GPIOv2.getValuesIoctl == 0xC010_B40E)
        let r = GPIOv2.lineRequest(offsets: [17, 22], consumer: "pocketmesh", flags: GPIOv2.flagInput | GPIOv2.flagEdgeRising, eventBufferSize: 16)
        #expect(r.count == 592)
        #expect(Array(r[0..<12]) == [17, 0, 0, 0, 22, 0, 0, 0, 0, 0, 0, 0])
        #expect(Array(r[256..<267]) == Array("pocketmesh".utf8) + [0])
        #expect(Array(r[288..<296]) == [0x14, 0, 0, 0, 0, 0, 0, 0])  // flags: INPUT | EDGE_RISING
        #expect(Array(r[296..<300]) == [0, 0, 0, 0])                 // num_attrs
        #expect(Array(r[560..<568]) == [2, 0, 0, 0, 16, 0, 0, 0])    // num_lines, event_buffer_size
        #expect(r[588..<592].allSatisfy { $0 == 0 })                 // fd: the kernel's to fill
        #expect(GPIOv2.lineValues(bits: 0b01, mask: 0b11) == [1, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0])
        var ev = [UInt8](repeating: 0, count: 48)
        ev[0] = 0x10; ev[5] = 0x01; ev[8] = 1; ev[12] = 22; ev[16] = 7
        #expect(GPIOv2.LineEvent(ev) == GPIOv2.LineEvent(ev))
        let e = GPIOv2.LineEvent(ev)!
        #expect(e.timestampNs == 0x0000_0100_0000_0010 && e.rising && e.offset == 22 && e.seqno == 7)
        #expect(GPIOv2.LineEvent(Array(ev.prefix(47))) == nil)
    }

    /// Outputs taken with their first levels (a chip select and the held lines high from the
    /// start): one GPIO_V2_LINE_ATTR_ID_OUTPUT_VALUES attribute in the request's config.
    @Test func gpioOutputsWithTheirFirstLevels() {
        let r = GPIOv2.lineRequest(offsets: [18, 21, 6], consumer: "pocketmesh", flags: GPIOv2.flagOutput, initialValues: 0b111)
        #expect(Array(r[288..<300]) == [0x08, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0])  // flags: OUTPUT; num_attrs 1
        #expect(Array(r[320..<344]) == [2, 0, 0, 0, 0, 0, 0, 0,                  // id OUTPUT_VALUES, padding
                                        7, 0, 0, 0, 0, 0, 0, 0,                  // values
                                        7, 0, 0, 0, 0, 0, 0, 0])                 // mask: the three lines
        #expect(GPIOv2.lineRequest(offsets: [1], consumer: "x", flags: GPIOv2.flagOutput)[296] == 0)
        #expect(SPIIoctl.modeNoChipSelect == 0x40)
    }

    /// GPIO_GET_CHIPINFO_IOCTL and `struct gpiochip_info`, and chips named by path, name or label.
    @Test func gpioChipInfoAndNames() {
        #expect(GPIOv2.chipInfoIoctl == 0x8044_B401 && GPIOv2.chipInfoSize == 68)
        var b = [UInt8](repeating: 0, count: 68)
        for (i, c) in "gpiochip0".utf8.enumerated() { b[i] = c }
        for (i, c) in "pinctrl-rp1".utf8.enumerated() { b[32 + i] = c }
        b[64] = 54
        #expect(GPIOv2.ChipInfo(b) == GPIOv2.ChipInfo(b) && GPIOv2.ChipInfo(b)?.label == "pinctrl-rp1")
        #expect(GPIOv2.ChipInfo(b)?.name == "gpiochip0" && GPIOv2.ChipInfo(b)?.lines == 54 && GPIOv2.ChipInfo(Array(b.prefix(67))) == nil)
        #expect(GPIOChip.find("/dev/gpiochip4") == "/dev/gpiochip4" && GPIOChip.find("gpiochip4", in: "/nowhere") == "/nowhere/gpiochip4")
        #expect(GPIOChip.find("pinctrl-rp1", in: "/nowhere") == nil && GPIOChip.defaultChip(in: "/nowhere") == "/nowhere/gpiochip0")
        #expect(GPIOChip.raspberryPiLabels.first == "pinctrl-rp1")
    }
}
