import Testing
@testable import MeshLink

/// Which tty `add` events bring the daemon's serial radio back (umockdev cannot send uevents, so
/// the decision is tested on its own).
@Suite struct HotplugMatchTests {
    static let byId = "/dev/serial/by-id/usb-Silicon_Labs_CP2102_USB_to_UART_Bridge_Controller_0001-if00-port0"
    static let cp2102 = RadioCandidate(path: "/dev/ttyUSB0", byIdPath: byId, vendorId: 0x10C4, productId: 0xEA60,
                                       manufacturer: "Silicon Labs", product: "CP2102 USB to UART Bridge Controller",
                                       serial: "Silicon_Labs_CP2102_USB_to_UART_Bridge_Controller_0001")

    static func add(_ name: String, _ candidate: RadioCandidate? = nil) -> HotplugEvent {
        HotplugEvent(action: .add, name: name, path: "/dev/\(name)", candidate: candidate)
    }

    @Test func configuredNodeMatchesByPathOrKernelName() {
        let identity = SerialRadioIdentity(configuredPath: "/dev/ttyUSB0")
        #expect(identity.matches(Self.add("ttyUSB0", Self.cp2102)))
        // Kernel uevents (no udev): no USB details, the name is enough.
        #expect(identity.matches(HotplugEvent(action: .add, name: "ttyUSB0", path: nil, candidate: nil)))
        #expect(!identity.matches(Self.add("ttyUSB1")))
        #expect(!identity.matches(Self.add("ttyACM0")))
    }

    @Test func onlyAddEventsMatch() {
        let identity = SerialRadioIdentity(configuredPath: "/dev/ttyUSB0")
        for action in [HotplugEvent.Action.remove, .change, .bind, .unbind, .move] {
            #expect(!identity.matches(HotplugEvent(action: action, name: "ttyUSB0", path: "/dev/ttyUSB0", candidate: Self.cp2102)))
        }
    }

    @Test func byIdPathMatchesWhateverNodeTheKernelPicks() {
        let identity = SerialRadioIdentity(configuredPath: Self.byId)
        var moved = Self.cp2102
        moved.path = "/dev/ttyUSB3"
        #expect(identity.matches(Self.add("ttyUSB3", moved)))
        // Another CP2102 (different serial number, so a different by-id name) is not the radio.
        var other = RadioCandidate(path: "/dev/ttyUSB1", byIdPath: "/dev/serial/by-id/usb-Silicon_Labs_CP2102_USB_to_UART_Bridge_Controller_0002-if00-port0",
                                   vendorId: 0x10C4, productId: 0xEA60, serial: "Silicon_Labs_CP2102_USB_to_UART_Bridge_Controller_0002")
        #expect(!identity.matches(Self.add("ttyUSB1", other)))
        other.byIdPath = nil
        #expect(!identity.matches(Self.add("ttyUSB1", other)))
    }

    @Test func rememberedUSBIdsMatchANewNode() {
        var identity = SerialRadioIdentity(configuredPath: "/dev/ttyACM0")
        identity.remember(RadioCandidate(path: "/dev/ttyACM0", vendorId: 0x239A, productId: 0x8029))
        #expect(identity.vendorId == 0x239A && identity.productId == 0x8029)
        // Re-enumerated as ttyACM1 (the old node was still held open): same vid:pid, reconnect.
        #expect(identity.matches(Self.add("ttyACM1", RadioCandidate(path: "/dev/ttyACM1", vendorId: 0x239A, productId: 0x8029))))
        // Its bootloader (another pid) or another board is not.
        #expect(!identity.matches(Self.add("ttyACM1", RadioCandidate(path: "/dev/ttyACM1", vendorId: 0x239A, productId: 0x0029))))
        #expect(!identity.matches(Self.add("ttyUSB0", Self.cp2102)))
    }

    @Test func rememberedSerialNumberTellsIdenticalBridgesApart() {
        var identity = SerialRadioIdentity(configuredPath: "/dev/ttyUSB0")
        identity.remember(Self.cp2102)
        var twin = Self.cp2102
        twin.path = "/dev/ttyUSB1"
        twin.byIdPath = nil
        twin.serial = "Silicon_Labs_CP2102_USB_to_UART_Bridge_Controller_0002"
        #expect(!identity.matches(Self.add("ttyUSB1", twin)))
        twin.serial = Self.cp2102.serial
        #expect(identity.matches(Self.add("ttyUSB1", twin)))
    }

    @Test func autoMatchesAnyKnownRadioBridge() {
        let identity = SerialRadioIdentity(configuredPath: "auto")
        #expect(identity.matches(Self.add("ttyUSB0", Self.cp2102)))
        #expect(identity.matches(Self.add("ttyACM0", RadioCandidate(path: "/dev/ttyACM0", vendorId: 0x303A, productId: 0x1001))))
        #expect(!identity.matches(Self.add("ttyACM0", RadioCandidate(path: "/dev/ttyACM0", vendorId: 0x239A, productId: 0x0029))))
        #expect(!identity.matches(Self.add("ttyUSB0", RadioCandidate(path: "/dev/ttyUSB0", vendorId: 0x1234, productId: 0x5678))))
        #expect(!identity.matches(HotplugEvent(action: .add, name: "ttyUSB0", path: "/dev/ttyUSB0", candidate: nil)))
    }

    @Test func presentFindsTheConfiguredDevice() {
        let candidates = [Self.cp2102, RadioCandidate(path: "/dev/ttyACM0", vendorId: 0x303A, productId: 0x1001)]
        #expect(SerialRadioIdentity(configuredPath: "/dev/ttyUSB0").present(in: candidates) == Self.cp2102)
        #expect(SerialRadioIdentity(configuredPath: Self.byId).present(in: candidates) == Self.cp2102)
        #expect(SerialRadioIdentity(configuredPath: "/dev/ttyUSB9").present(in: candidates) == nil)
        #expect(SerialRadioIdentity(configuredPath: "auto").present(in: [Self.cp2102]) == Self.cp2102)
    }
}
