import CMeshLink
import CUdev
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
    public var fd: Int32 { udevMonitor.map { udev_monitor_get_fd($0) } ?? kernelSocket.rawValue }

    private var udev: OpaquePointer?
    private var udevMonitor: OpaquePointer?
    private var kernelSocket = FileDescriptor(rawValue: -1)

    /// Opens the udev monitor, or the kernel netlink socket if `preferUdev` is false or udev fails.
    public init(preferUdev: Bool = true) throws(LinkError) {
        if preferUdev, let udev = udev_new() {
            if let monitor = udev_monitor_new_from_netlink(udev, "udev") {
                udev_monitor_filter_add_match_subsystem_devtype(monitor, "tty", nil)
                if udev_monitor_enable_receiving(monitor) == 0 {
                    let monitorFD = udev_monitor_get_fd(monitor)
                    let flags = fcntl(monitorFD, F_GETFL)
                    _ = fcntl(monitorFD, F_SETFL, flags | O_NONBLOCK)
                    self.udev = udev
                    self.udevMonitor = monitor
                    self.source = .udev
                    return
                }
                udev_monitor_unref(monitor)
            }
            udev_unref(udev)
        }
        source = .kernel
        let socketFD = cml_uevent_socket()
        guard socketFD >= 0 else { throw .cannotOpen("the kernel hotplug socket", .current) }
        kernelSocket = FileDescriptor(rawValue: socketFD)
    }

    deinit { close() }

    public func close() {
        if let udevMonitor { udev_monitor_unref(udevMonitor) }
        if let udev { udev_unref(udev) }
        udevMonitor = nil
        udev = nil
        if kernelSocket.rawValue >= 0 { kernelSocket.close() }
        kernelSocket = FileDescriptor(rawValue: -1)
    }

    /// The next tty event, or nil when none is waiting. Non-tty kernel events are skipped.
    public func receive() -> HotplugEvent? {
        if let udevMonitor {
            while let device = udev_monitor_receive_device(udevMonitor) {
                defer { udev_device_unref(device) }
                guard let actionText = udev_device_get_action(device),
                      let action = HotplugEvent.Action(rawValue: String(cString: actionText)),
                      let sysname = udev_device_get_sysname(device) else { continue }
                let node = udev_device_get_devnode(device).map { String(cString: $0) }
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
