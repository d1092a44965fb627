import Glibc
import MeshLink

/// Serial hotplug: when the radio's tty comes back (udev `add`), reconnect at once instead of
/// waiting out the backoff. Matching is `SerialRadioIdentity.matches` (configured path, by-id
/// name, last node, USB vendor:product). The part's state is the monitor and the identity; of
/// the radio owner it needs only whether the link is down and a way to reconnect at a time.
extension HotplugPart {
    /// Opens the hotplug monitor for a serial link (no-op for TCP/BLE, or when neither udev nor the
    /// kernel uevent socket is available: the backoff still reconnects).
    func start(link: String) {
        guard link.hasPrefix("serial:"), monitor == nil else { return }
        let path = String(link.dropFirst(7))
        var found = SerialRadioIdentity(configuredPath: path)
        if let now = found.present(in: SerialDiscovery.candidates()) { found.remember(now) }
        identity = found
        do {
            // Without a running udevd (containers, minimal systems) udev's monitor never hears
            // anything: listen to the kernel's events instead.
            let m = try HotplugMonitor(preferUdev: access("/run/udev/control", F_OK) == 0)
            monitor = m
            log("link: watching for \(path) to be plugged in (\(m.source == .udev ? "udev" : "kernel uevents"))")
        } catch {
            log("link: no hotplug events (\(error)); reconnecting on the backoff schedule only")
        }
    }

    /// The path to open for `serial:PATH`: PATH itself, or for `auto` the chosen candidate's
    /// by-id link (else node). Also records the device's USB details for hotplug matching.
    func serialPath(_ path: String) throws(LinkError) -> String {
        let candidates = SerialDiscovery.candidates()
        if path == "auto" {
            let radio = try RadioCandidate.choose(from: candidates)
            identity?.remember(radio)
            return radio.byIdPath.flatMap { access($0, F_OK) == 0 ? $0 : nil } ?? radio.path
        }
        if let identity, let found = identity.present(in: candidates) { self.identity?.remember(found) }
        return path
    }

    /// The link to register once connected: `serial:auto` names the device it chose, so
    /// `pocketmesh --serial PATH` (or `auto`) finds this daemon.
    func registryLink(_ link: String) -> String {
        guard link == "serial:auto", let node = identity?.devicePath else { return link }
        return "serial:" + node
    }

    /// Drains hotplug events; a matching `add` while the link is down reconnects now.
    func monitorReady(now: UInt64) {
        guard let monitor else { return }
        while var event = monitor.receive() {
            guard linkDown(), let identity else { continue }
            if event.action == .add, event.candidate == nil {
                // Kernel events carry no USB details: read them from sysfs.
                event.candidate = SerialDiscovery.candidates(source: .systemSysfs).first { $0.path == "/dev/" + event.name }
            }
            guard identity.matches(event) else { continue }
            log("link: \(event.candidate?.description ?? event.path ?? event.name) plugged in; reconnecting now")
            // Kernel events arrive before udev has set the node's group: give it a moment.
            reconnect(monitor.source == .udev ? now : now + 300)
        }
    }
}
