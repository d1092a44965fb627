import Glibc
import Testing
@testable import MeshLink

/// A fake sysfs + /dev tree in a temporary folder.
final class FakeSysfs {
    let root: String
    var sys: String { root + "/sys" }
    var dev: String { root + "/dev" }

    init() {
        var template = Array("/tmp/pocketmesh-sysfs-XXXXXX".utf8CString)
        root = String(cString: mkdtemp(&template)!)
        makeDirectory(sys + "/class/tty")
        makeDirectory(dev + "/serial/by-id")
    }

    deinit { _ = system("rm -rf '\(root)'") }

    func makeDirectory(_ path: String) {
        var prefix = ""
        for part in path.split(separator: "/") {
            prefix += "/" + part
            mkdir(prefix, 0o755)
        }
    }

    func write(_ path: String, _ text: String) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        _ = text.withCString { Glibc.write(fd, $0, strlen($0)) }
        close(fd)
    }

    /// A USB serial port: `usbPath` is the USB device folder under sys/devices.
    func addUSBSerial(tty: String, usbPath: String, interface: String, vendor: String, product: String,
                      manufacturer: String?, productName: String?, serial: String?, byId: String?, acm: Bool = false) {
        let usb = sys + "/devices/" + usbPath
        makeDirectory(usb)
        write(usb + "/idVendor", vendor + "\n")
        write(usb + "/idProduct", product + "\n")
        if let manufacturer { write(usb + "/manufacturer", manufacturer + "\n") }
        if let productName { write(usb + "/product", productName + "\n") }
        if let serial { write(usb + "/serial", serial + "\n") }
        // ttyUSB: <intf>/ttyUSB0/tty/ttyUSB0 with device -> <intf>/ttyUSB0 ; ttyACM: <intf>/tty/ttyACM0 with device -> <intf>
        let port = acm ? usb + "/" + interface : usb + "/" + interface + "/" + tty
        let classDir = port + "/tty/" + tty
        makeDirectory(classDir)
        write(classDir + "/dev", "188:0\n")
        symlink(classDir, sys + "/class/tty/" + tty)
        symlink(port, classDir + "/device")
        if let byId { symlink("../../" + tty, dev + "/serial/by-id/" + byId) }
    }

    func addVirtual(tty: String) {
        let dir = sys + "/devices/virtual/tty/" + tty
        makeDirectory(dir)
        symlink(dir, sys + "/class/tty/" + tty)
    }

    func addPlatformSerial(tty: String) {
        let port = sys + "/devices/platform/serial8250/" + tty
        let classDir = port + "/tty/" + tty
        makeDirectory(classDir)
        symlink(classDir, sys + "/class/tty/" + tty)
        symlink(port, classDir + "/device")
    }
}

@Suite struct DiscoveryTests {
    @Test func sysfsTree() {
        let fake = FakeSysfs()
        fake.addVirtual(tty: "tty0")
        fake.addPlatformSerial(tty: "ttyS0")
        fake.addUSBSerial(tty: "ttyUSB0", usbPath: "pci0000:00/0000:00:14.0/usb1/1-2", interface: "1-2:1.0",
                          vendor: "10c4", product: "ea60", manufacturer: "Silicon Labs",
                          productName: "CP2102 USB to UART Bridge Controller", serial: "0001",
                          byId: "usb-Silicon_Labs_CP2102_USB_to_UART_Bridge_Controller_0001-if00-port0")
        fake.addUSBSerial(tty: "ttyACM0", usbPath: "pci0000:00/0000:00:14.0/usb1/1-3", interface: "1-3:1.0",
                          vendor: "239a", product: "8029", manufacturer: "RAKwireless", productName: "WisCore RAK4631 Board",
                          serial: nil, byId: nil, acm: true)
        let found = SerialDiscovery.candidates(source: .sysfs(sys: fake.sys, dev: fake.dev))
        #expect(found.count == 2)
        let acm = found[0], usb = found[1]
        #expect(acm.path == fake.dev + "/ttyACM0")
        #expect(acm.bridge == "nRF52840 (RAK4631)")
        #expect(acm.byIdPath == nil)
        #expect(acm.usbId == "239a:8029")
        #expect(usb.path == fake.dev + "/ttyUSB0")
        #expect(usb.vendorId == 0x10C4 && usb.productId == 0xEA60)
        #expect(usb.bridge == "CP210x")
        #expect(usb.manufacturer == "Silicon Labs")
        #expect(usb.serial == "Silicon_Labs_CP2102_USB_to_UART_Bridge_Controller_0001")
        #expect(usb.byIdPath == "/dev/serial/by-id/usb-Silicon_Labs_CP2102_USB_to_UART_Bridge_Controller_0001-if00-port0")
        #expect(usb.preferredPath == usb.byIdPath)
    }

    @Test func emptySysfs() {
        let fake = FakeSysfs()
        #expect(SerialDiscovery.candidates(source: .sysfs(sys: fake.sys, dev: fake.dev)).isEmpty)
        #expect(SerialDiscovery.candidates(source: .sysfs(sys: fake.root + "/missing", dev: fake.dev)).isEmpty)
    }

    @Test func chooser() throws {
        let cp = RadioCandidate(path: "/dev/ttyUSB0", vendorId: 0x10C4, productId: 0xEA60)
        let gps = RadioCandidate(path: "/dev/ttyACM1", vendorId: 0x1546, productId: 0x01A7, product: "u-blox GNSS receiver")
        let ch = RadioCandidate(path: "/dev/ttyUSB1", vendorId: 0x1A86, productId: 0x55D4)
        #expect(try RadioCandidate.choose(from: [cp]) == cp)
        #expect(try RadioCandidate.choose(from: [gps]) == gps)           // the only one, even if unknown
        #expect(try RadioCandidate.choose(from: [gps, cp]) == cp)        // the only known radio bridge
        #expect {
            _ = try RadioCandidate.choose(from: [cp, ch, gps])
        } throws: { error in
            guard case .severalRadios? = error as? LinkError else { return false }
            let text = "\(error)"
            return text.contains("/dev/ttyUSB0 (CP210x, 10c4:ea60)") && text.contains("/dev/ttyUSB1 (CH9102, 1a86:55d4)")
                && text.contains("--serial PATH") && (error as! LinkError).isUsageError
        }
        #expect {
            _ = try RadioCandidate.choose(from: [])
        } throws: { error in
            guard case .noRadio? = error as? LinkError else { return false }
            return !(error as! LinkError).isUsageError
        }
    }

    @Test func kernelUevents() {
        func parse(_ text: String) -> HotplugEvent? {
            let bytes = Array(text.utf8).map { $0 == UInt8(ascii: "|") ? 0 : $0 }
            return bytes.withUnsafeBytes { HotplugMonitor.parseKernelUevent($0) }
        }
        let add = parse("add@/devices/pci0000:00/0000:00:14.0/usb1/1-2/1-2:1.0/ttyUSB0/tty/ttyUSB0|ACTION=add|DEVPATH=/devices/pci0000:00/0000:00:14.0/usb1/1-2/1-2:1.0/ttyUSB0/tty/ttyUSB0|SUBSYSTEM=tty|MAJOR=188|MINOR=0|DEVNAME=ttyUSB0|SEQNUM=4242|")
        #expect(add == HotplugEvent(action: .add, name: "ttyUSB0", path: "/dev/ttyUSB0", candidate: nil))
        let remove = parse("remove@/devices/x/tty/ttyACM0|ACTION=remove|DEVPATH=/devices/x/tty/ttyACM0|SUBSYSTEM=tty|")
        #expect(remove?.action == .remove)
        #expect(remove?.name == "ttyACM0")
        #expect(parse("add@/devices/x|ACTION=add|SUBSYSTEM=usb|DEVNAME=bus/usb/001/002|") == nil)
        #expect(parse("libudev|garbage") == nil)
        #expect(parse("") == nil)
    }

    @Test func hotplugMonitorOpens() throws {
        // udev monitor where libudev works; the kernel socket otherwise. Either gives a pollable fd.
        do {
            let monitor = try HotplugMonitor()
            #expect(monitor.fd >= 0)
            #expect(monitor.receive() == nil || true)
            monitor.close()
        } catch {
            // Containers may forbid netlink: that must be a clear error, not a crash.
            #expect(error.description.contains("hotplug"))
        }
    }

    @Test func advertisingReports() {
        // One report: ADV_IND, random address C0:FF:EE:11:22:33, flags + complete name, RSSI -67.
        let name = Array("MeshCore-1EC77175".utf8)
        let data: [UInt8] = [0x02, 0x01, 0x06, UInt8(name.count + 1), 0x09] + name
        var report: [UInt8] = [0x00, 0x01, 0x33, 0x22, 0x11, 0xEE, 0xFF, 0xC0, UInt8(data.count)] + data + [UInt8(bitPattern: -67)]
        report = [0x02, 0x01] + report
        let packet: [UInt8] = [0x04, 0x3E, UInt8(report.count)] + report
        let parsed = packet.withUnsafeBytes { AdvertisingReport.parse(hciEvent: $0) }
        #expect(parsed == [BLEAdvertiser(address: "C0:FF:EE:11:22:33", addressType: "random", name: "MeshCore-1EC77175", rssi: -67)])
        #expect(parsed.first?.bleArgument == "C0:FF:EE:11:22:33/random")
        // Shortened name only; truncated packets give nothing.
        let short: [UInt8] = [0x05, 0x08] + Array("Mesh".utf8)
        #expect(short.withUnsafeBytes { AdvertisingReport.localName(in: $0) } == "Mesh")
        #expect(Array(packet.prefix(12)).withUnsafeBytes { AdvertisingReport.parse(hciEvent: $0) }.isEmpty)
        #expect([UInt8]([0x04, 0x0E, 0x01, 0x00]).withUnsafeBytes { AdvertisingReport.parse(hciEvent: $0) }.isEmpty)
    }

    @Test func scanWithoutBluetoothFailsCleanly() {
        let probe = socket(AF_BLUETOOTH, Int32(SOCK_RAW.rawValue), 1)  // BTPROTO_HCI
        if probe >= 0 {
            close(probe)
            return  // a machine with Bluetooth: nothing to check here
        }
        #expect {
            _ = try BLEScanner.scan(milliseconds: 100)
        } throws: { error in
            guard case .unsupported? = error as? LinkError else { return false }
            return "\(error)".hasSuffix(".")
        }
    }
}

/// Runs only under `umockdev-run --device Tests/umockdev/cp210x.umockdev` (see Tests/umockdev/run.sh).
@Suite(.enabled(if: getenv("UMOCKDEV_DIR") != nil), .serialized) struct UmockdevTests {
    @Test func udevFindsTheFakeCP210x() throws {
        let found = SerialDiscovery.candidates(source: .udev)
        #expect(found.count == 1)
        let radio = try #require(found.first)
        #expect(radio.path == "/dev/ttyUSB0")
        #expect(radio.bridge == "CP210x")
        #expect(radio.usbId == "10c4:ea60")
        #expect(radio.manufacturer == "Silicon Labs")
        #expect(radio.product == "CP2102 USB to UART Bridge Controller")
        #expect(radio.serial == "Silicon_Labs_CP2102_USB_to_UART_Bridge_Controller_0001")
        #expect(radio.byIdPath == "/dev/serial/by-id/usb-Silicon_Labs_CP2102_USB_to_UART_Bridge_Controller_0001-if00-port0")
        #expect(try RadioCandidate.choose(from: found) == radio)
    }

    @Test func sysfsFallbackFindsTheFakeCP210x() {
        let found = SerialDiscovery.candidates(source: .systemSysfs)
        #expect(found.map(\.path) == ["/dev/ttyUSB0"])
        #expect(found.first?.bridge == "CP210x")
    }

    @Test func serialAutoOpensTheFakeCP210x() throws {
        let link = try LinkEndpoint(serial: "auto", baud: nil, tcp: nil, ble: nil).open()
        #expect(link.description == "serial /dev/ttyUSB0 at 115200 baud")
        link.close()
    }

    @Test func fakePortOpens() throws {
        // umockdev's /dev/ttyUSB0 is a pty: no modem lines, but a working serial link.
        let link = try SerialLink(path: "/dev/ttyUSB0")
        #expect(!link.hasModemLines)
        link.close()
    }

    /// With `--script /dev/ttyUSB0=Tests/umockdev/cp210x-device-query.script` the fake radio answers
    /// DEVICE_QUERY with DEVICE_INFO.
    @Test(.enabled(if: getenv("POCKETMESH_UMOCKDEV_SCRIPT") != nil))
    func scriptedRadioAnswersDeviceQuery() throws {
        let link = try SerialLink(path: "/dev/ttyUSB0")
        defer { link.close() }
        try link.write([0x3C, 0x02, 0x00, 0x16, 0x03])
        let reply = try receive(from: link, count: 85, timeout: 3000)
        #expect(reply.count == 85)
        var expected: [UInt8] = [0x3E, 0x52, 0x00, 0x0D, 13, 50, 40, 0, 0, 0, 0]
        expected += Array("21 Nov 2026".utf8) + [0]
        expected += Array("Heltec V3".utf8) + [UInt8](repeating: 0, count: 31)
        expected += Array("v1.17.1".utf8) + [UInt8](repeating: 0, count: 13)
        expected += [0, 0]
        #expect(reply == expected)
    }
}
