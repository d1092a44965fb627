import CMeshLink
import Glibc

/// Finds USB serial devices (tty devices whose ancestor is a USB device): through libudev, or by
/// reading sysfs directly when libudev is unusable (fully static builds, containers without udev).
public enum SerialDiscovery {
    public enum Source: Equatable, Sendable {
        /// libudev, falling back to sysfs if udev cannot be initialised.
        case automatic
        case udev
        /// Read `<sys>/class/tty` and `<dev>/serial/by-id` under these roots (tests use a temp tree).
        case sysfs(sys: String, dev: String)

        public static let systemSysfs = Source.sysfs(sys: "/sys", dev: "/dev")
    }

    /// USB serial candidates, sorted by device path.
    public static func candidates(source: Source = .automatic) -> [RadioCandidate] {
        switch source {
        case .automatic:
            return udevCandidates() ?? sysfsCandidates(sys: "/sys", dev: "/dev")
        case .udev:
            return udevCandidates() ?? []
        case .sysfs(let sys, let dev):
            return sysfsCandidates(sys: sys, dev: dev)
        }
    }

    // MARK: libudev

    /// Nil when libudev cannot be initialised.
    static func udevCandidates() -> [RadioCandidate]? {
        guard let udev = cml_udev_new() else { return nil }
        defer { cml_udev_unref(udev) }
        guard let enumerate = cml_udev_enumerate_new(udev) else { return nil }
        defer { cml_udev_enumerate_unref(enumerate) }
        cml_udev_enumerate_add_match_subsystem(enumerate, "tty")
        cml_udev_enumerate_scan_devices(enumerate)
        var result: [RadioCandidate] = []
        var entry = cml_udev_enumerate_get_list_entry(enumerate)
        while let current = entry {
            defer { entry = cml_udev_list_entry_get_next(current) }
            guard let syspath = cml_udev_list_entry_get_name(current),
                  let device = cml_udev_device_new_from_syspath(udev, syspath) else { continue }
            defer { cml_udev_device_unref(device) }
            if let candidate = candidate(udevDevice: device) { result.append(candidate) }
        }
        fillByIdPaths(&result, dev: "/dev")
        return result.sorted { $0.path < $1.path }
    }

    /// A candidate from a udev tty device, or nil when it has no USB device ancestor.
    static func candidate(udevDevice device: OpaquePointer) -> RadioCandidate? {
        func string(_ pointer: UnsafePointer<CChar>?) -> String? {
            guard let pointer else { return nil }
            let value = String(cString: pointer).trimmingWhitespace()
            return value.isEmpty ? nil : value
        }
        // The parent reference is owned by the child: do not unref it.
        guard let usb = cml_udev_device_get_parent_with_subsystem_devtype(device, "usb", "usb_device") else { return nil }
        let sysname = string(cml_udev_device_get_sysname(device)) ?? ""
        guard let path = string(cml_udev_device_get_devnode(device)) ?? (sysname.isEmpty ? nil : "/dev/\(sysname)") else { return nil }
        let links = string(cml_udev_device_get_property_value(device, "DEVLINKS"))?.split(separator: " ").map(String.init) ?? []
        let vendor = parseHex16(string(cml_udev_device_get_sysattr_value(usb, "idVendor")))
            ?? parseHex16(string(cml_udev_device_get_property_value(device, "ID_VENDOR_ID")))
        let product = parseHex16(string(cml_udev_device_get_sysattr_value(usb, "idProduct")))
            ?? parseHex16(string(cml_udev_device_get_property_value(device, "ID_MODEL_ID")))
        return RadioCandidate(
            path: path,
            byIdPath: links.first { $0.hasPrefix("/dev/serial/by-id/") },
            vendorId: vendor,
            productId: product,
            manufacturer: string(cml_udev_device_get_sysattr_value(usb, "manufacturer")),
            product: string(cml_udev_device_get_sysattr_value(usb, "product")),
            serial: string(cml_udev_device_get_property_value(device, "ID_SERIAL"))
                ?? string(cml_udev_device_get_sysattr_value(usb, "serial")))
    }

    // MARK: sysfs

    static func sysfsCandidates(sys: String, dev: String) -> [RadioCandidate] {
        var result: [RadioCandidate] = []
        for name in directoryEntries("\(sys)/class/tty") {
            // Start at the port's `device` link, or (umockdev creates none) the class entry itself;
            // virtual terminals live under devices/virtual and have no USB ancestor.
            guard let device = realPath("\(sys)/class/tty/\(name)/device") ?? realPath("\(sys)/class/tty/\(name)"),
                  let usb = usbDeviceDirectory(above: device, sysRoot: sys) else { continue }
            let manufacturer = readAttribute(usb, "manufacturer")
            let product = readAttribute(usb, "product")
            let serialNumber = readAttribute(usb, "serial")
            // udev's ID_SERIAL is vendor_model_serial with blanks as underscores.
            let serial = serialNumber.map { number in
                [manufacturer, product, number].compactMap { $0 }.joined(separator: "_").replacingBlanks()
            }
            result.append(RadioCandidate(
                path: "\(dev)/\(name)", vendorId: parseHex16(readAttribute(usb, "idVendor")),
                productId: parseHex16(readAttribute(usb, "idProduct")), manufacturer: manufacturer,
                product: product, serial: serial))
        }
        fillByIdPaths(&result, dev: dev)
        return result.sorted { $0.path < $1.path }
    }

    /// Walks up from a tty's device directory to the USB device (the directory with `idVendor`).
    static func usbDeviceDirectory(above start: String, sysRoot: String) -> String? {
        var directory = start
        let stop = realPath(sysRoot) ?? sysRoot
        while directory.count > stop.count, directory != "/" {
            if access("\(directory)/idVendor", F_OK) == 0 && access("\(directory)/idProduct", F_OK) == 0 {
                return directory
            }
            guard let slash = directory.lastIndex(of: "/") else { break }
            directory = String(directory[..<slash])
        }
        return nil
    }

    /// Sets `byIdPath` from `<dev>/serial/by-id/*` symlinks that point at the candidate's node.
    static func fillByIdPaths(_ candidates: inout [RadioCandidate], dev: String) {
        let folder = "\(dev)/serial/by-id"
        let links = directoryEntries(folder)
        guard !links.isEmpty else { return }
        for index in candidates.indices where candidates[index].byIdPath == nil {
            let node = candidates[index].path.split(separator: "/").last.map(String.init) ?? ""
            for link in links.sorted() {
                guard let target = readLink("\(folder)/\(link)") else { continue }
                if target.split(separator: "/").last.map(String.init) == node {
                    candidates[index].byIdPath = "/dev/serial/by-id/\(link)"
                    break
                }
            }
        }
    }

    // MARK: file helpers

    static func directoryEntries(_ path: String) -> [String] {
        guard let directory = opendir(path) else { return [] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    static func readLink(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink(path, &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A sysfs attribute file's first line, or nil if missing/empty.
    static func readAttribute(_ directory: String, _ name: String) -> String? {
        let fd = Glibc.open("\(directory)/\(name)", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { Glibc.close(fd) }
        var buffer = [UInt8](repeating: 0, count: 512)
        let n = Glibc.read(fd, &buffer, buffer.count)
        guard n > 0 else { return nil }
        let line = buffer[0..<n].prefix { $0 != UInt8(ascii: "\n") }
        let value = String(decoding: line, as: UTF8.self).trimmingWhitespace()
        return value.isEmpty ? nil : value
    }
}

extension String {
    func replacingBlanks() -> String {
        String(map { $0 == " " ? "_" : $0 })
    }
}
