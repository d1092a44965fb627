import CMeshLink
import Glibc

/// A tty device appearing or disappearing.
public struct HotplugEvent: Equatable, Sendable {
    public enum Action: String, Sendable {
        case add, remove, change, bind, unbind, move
    }

    public var action: Action
    /// Kernel name, e.g. `ttyUSB0`.
    public var name: String
    /// Device node, e.g. `/dev/ttyUSB0` (may be absent on remove).
    public var path: String?
    /// The USB details on `add` through udev (nil for kernel events or non-USB ttys).
    public var candidate: RadioCandidate?
}

/// Watches tty hotplug events. Register `fd` with a `PollLoop` for `.readable` and call
/// `receive()` until it returns nil. Uses the udev monitor (events after udev has created the node
/// and its by-id link); without libudev, the kernel's uevent netlink socket.
public final class HotplugMonitor {
    public enum Source: Equatable, Sendable { case udev, kernel }

    public let source: Source
    public var fd: Int32 { udevMonitor.map { cml_udev_monitor_get_fd($0) } ?? kernelSocket.rawValue }

    private var udev: OpaquePointer?
    private var udevMonitor: OpaquePointer?
    private var kernelSocket = FileDescriptor(rawValue: -1)

    /// Opens the udev monitor, or the kernel netlink socket if `preferUdev` is false or udev fails.
    public init(preferUdev: Bool = true) throws(LinkError) {
        if preferUdev, let udev = cml_udev_new() {
            if let monitor = cml_udev_monitor_new_from_netlink(udev, "udev") {
                cml_udev_monitor_filter_add_match_subsystem_devtype(monitor, "tty", nil)
                if cml_udev_monitor_enable_receiving(monitor) == 0 {
                    let monitorFD = cml_udev_monitor_get_fd(monitor)
                    let flags = fcntl(monitorFD, F_GETFL)
                    _ = fcntl(monitorFD, F_SETFL, flags | O_NONBLOCK)
                    self.udev = udev
                    self.udevMonitor = monitor
                    self.source = .udev
                    return
                }
                cml_udev_monitor_unref(monitor)
            }
            cml_udev_unref(udev)
        }
        source = .kernel
        let socketFD = cml_uevent_socket()
        guard socketFD >= 0 else { throw .cannotOpen("the kernel hotplug socket", .current) }
        kernelSocket = FileDescriptor(rawValue: socketFD)
    }

    deinit { close() }

    public func close() {
        if let udevMonitor { cml_udev_monitor_unref(udevMonitor) }
        if let udev { cml_udev_unref(udev) }
        udevMonitor = nil
        udev = nil
        if kernelSocket.rawValue >= 0 { kernelSocket.close() }
        kernelSocket = FileDescriptor(rawValue: -1)
    }

    /// The next tty event, or nil when none is waiting. Non-tty kernel events are skipped.
    public func receive() -> HotplugEvent? {
        if let udevMonitor {
            while let device = cml_udev_monitor_receive_device(udevMonitor) {
                defer { cml_udev_device_unref(device) }
                guard let actionText = cml_udev_device_get_action(device),
                      let action = HotplugEvent.Action(rawValue: String(cString: actionText)),
                      let sysname = cml_udev_device_get_sysname(device) else { continue }
                let node = cml_udev_device_get_devnode(device).map { String(cString: $0) }
                let candidate = action == .remove ? nil : SerialDiscovery.candidate(udevDevice: device)
                return HotplugEvent(action: action, name: String(cString: sysname), path: node, candidate: candidate)
            }
            return nil
        }
        var buffer = [UInt8](repeating: 0, count: 8192)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(kernelSocket.rawValue, $0.baseAddress, $0.count, SocketFlags.dontWait) }
            if n <= 0 { return nil }
            if let event = buffer.withUnsafeBytes({ Self.parseKernelUevent(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }) {
                return event
            }
        }
    }

    /// Parses a kernel uevent message (`add@/devices/...\0ACTION=add\0SUBSYSTEM=tty\0DEVNAME=ttyUSB0\0...`).
    /// Nil for other subsystems, libudev-format messages, or malformed input.
    public static func parseKernelUevent(_ message: UnsafeRawBufferPointer) -> HotplugEvent? {
        var fields: [String: String] = [:]
        var first = true
        for part in message.split(separator: 0, omittingEmptySubsequences: true) {
            let text = String(decoding: part, as: UTF8.self)
            if first {
                first = false
                guard text.contains("@") else { return nil }  // "libudev" header or garbage
                continue
            }
            if let equals = text.firstIndex(of: "=") {
                fields[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
        }
        guard fields["SUBSYSTEM"] == "tty", let actionText = fields["ACTION"],
              let action = HotplugEvent.Action(rawValue: actionText) else { return nil }
        let devname = fields["DEVNAME"]
        let name = devname?.split(separator: "/").last.map(String.init)
            ?? fields["DEVPATH"]?.split(separator: "/").last.map(String.init) ?? ""
        guard !name.isEmpty else { return nil }
        let path = devname.map { $0.hasPrefix("/") ? $0 : "/dev/\($0)" }
        return HotplugEvent(action: action, name: name, path: path, candidate: nil)
    }
}

/// Which serial radio a long-running program waits for, and whether a hotplug event is it coming
/// back: the configured path (a node such as `/dev/ttyUSB0`, a `/dev/serial/by-id/...` link, or
/// `auto`), plus what was learned the last time it was connected (node, by-id link, USB ids, serial).
public struct SerialRadioIdentity: Equatable, Sendable {
    public var configuredPath: String
    public var devicePath: String?
    public var byIdPath: String?
    public var vendorId: UInt16?
    public var productId: UInt16?
    /// udev's `ID_SERIAL` (vendor_model_serialnumber), when known: tells two identical bridges apart.
    public var serial: String?

    public init(configuredPath: String) {
        self.configuredPath = configuredPath
    }

    /// Records the USB details of the device the radio was found on.
    public mutating func remember(_ candidate: RadioCandidate) {
        devicePath = candidate.path
        byIdPath = candidate.byIdPath ?? byIdPath
        vendorId = candidate.vendorId ?? vendorId
        productId = candidate.productId ?? productId
        serial = candidate.serial ?? serial
    }

    /// Finds the candidate the configured path names now (resolving symlinks), if it is present.
    public func present(in candidates: [RadioCandidate]) -> RadioCandidate? {
        if configuredPath == "auto" { return try? RadioCandidate.choose(from: candidates) }
        let resolved = SerialDiscovery.realPath(configuredPath) ?? configuredPath
        return candidates.first { $0.path == resolved || $0.path == configuredPath || $0.byIdPath == configuredPath }
    }

    /// True when `event` adds a tty that is (most likely) this radio: same node or by-id name as
    /// configured or last seen, or, failing names, the same USB vendor:product (and serial number
    /// when both are known). With `auto`, any tty on a known radio bridge.
    public func matches(_ event: HotplugEvent) -> Bool {
        guard event.action == .add else { return false }
        let nodes = [configuredPath, devicePath].compactMap { $0 }
        if let path = event.path, nodes.contains(path) { return true }
        if nodes.contains(where: { $0.hasPrefix("/dev/") && $0.split(separator: "/").last.map(String.init) == event.name }) {
            return true
        }
        guard let candidate = event.candidate else { return false }
        if let byId = candidate.byIdPath, byId == configuredPath || byId == byIdPath { return true }
        if let vendorId, let productId, candidate.vendorId == vendorId, candidate.productId == productId {
            if let serial, let theirs = candidate.serial { return serial == theirs }
            return true
        }
        if configuredPath == "auto" {
            return candidate.bridge != nil && candidate.bridge != "nRF52840 bootloader"
        }
        return false
    }
}
