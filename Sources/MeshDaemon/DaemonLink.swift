import Glibc
import MeshCompanion
import MeshLink
import MeshSession
import MeshStore
import MeshDaemonClient
import MeshOps

// The radio link: connect, reconnect with backoff, read frames into the session, write its frames.

extension Daemon {
    // MARK: - link lifecycle

    /// One attempt to reach the radio. A serial port is opened at once (its open does not wait);
    /// a TCP or BLE radio is connected on the loop (`RadioConnector`), which goes on serving the
    /// API, the hub, MQTT, hooks and the watchdog meanwhile.
    func connect(now: UInt64) {
        radio.connections += 1
        log("link: connecting to \(config.link) (attempt \(radio.connections))")
        let spec = config.link
        do {
            if spec.hasPrefix("tcp:") {
                let address = try TCPAddress(parsing: String(spec.dropFirst(4)))
                let c = RadioConnector(tcp: address, timeoutMS: config.connectTimeoutMS, now: now)
                if let h = config.environment["POCKETMESH_HOSTS"], !h.isEmpty { c.hostsPath = h }
                if let r = config.environment["POCKETMESH_RESOLV_CONF"], !r.isEmpty { c.resolvConfPath = r }
                if let p = config.environment["POCKETMESH_DNS_PORT"].flatMap({ UInt16($0) }), p > 0 { c.dnsPort = p }
                startConnector(c, now: now)
                return
            }
            if spec.hasPrefix("ble:") {
                var att = ATTClient.Configuration()
                att.minimumMTU = UInt16(clamping: max(23, config.bleMinimumMTU))
                let c = RadioConnector(ble: try BLEAddress(parsing: String(spec.dropFirst(4))),
                                       timeoutMS: max(config.connectTimeoutMS, 10_000), configuration: att, now: now)
                startConnector(c, now: now)
                return
            }
            linkOpened(try openLink(), now: now)
        } catch {
            connectFailed("\(error)", now: now)
        }
    }

    func startConnector(_ c: RadioConnector, now: UInt64) {
        connector = c
        phase = .connecting
        notify.status("connecting to \(config.link)" + (radio.radioProblem.map { " (last attempt: \($0))" } ?? ""))
        connectorProgress(now: now)
    }

    /// The connector has an outcome: the link to use, or the next attempt after a backoff.
    func connectorProgress(now: UInt64) {
        guard let c = connector, let outcome = c.outcome else { return }
        connector = nil
        switch outcome {
        case .link(let l): linkOpened(l, now: now)
        case .failed(let why): connectFailed(why, now: now)
        }
    }

    func connectFailed(_ why: String, now: UInt64) {
        log("link: cannot connect to \(config.link): \(why)")
        phase = .down
        radio.radioProblem = why
        scheduleReconnect(now: now)
        // Hub requests that waited for this attempt get their answer (requests of the API get
        // theirs at the waits' turn, `radioWaitTimers`).
        if hub != nil { hubDispatch(now: now) }
    }

    /// A link is open: the session starts its handshake on it.
    func linkOpened(_ l: ByteLink, now: UInt64) {
        link = l
        radio.deframer.reset()
        var sc = Self.sessionConfig(config)
        sc.clockEpoch = UInt32(truncatingIfNeeded: time(nil))
        let s = Session(config: sc)
        session = s
        // What an operation's command changed on the radio, the store follows (as for tunnel clients).
        ops.open(s) { [unowned self] frame, r in
            self.recordTunnelSend(frame, r)
            self.keepListedContacts(frame, r)
        }
        phase = .handshaking
        // No place on disk for a message yet (the store not open, or failing): the radio keeps
        // its queue until there is (`radioReady`, `retryStore`).
        if !storeTakesMessages { s.pauseMessages() }
        s.start(now: now)
        pump(now: now)
    }

    static func sessionConfig(_ config: Config) -> SessionConfig {
        var sc = SessionConfig()
        sc.appName = "pocketmesh-daemon"
        sc.commandTimeout = config.commandTimeoutMS
        sc.drainOnStart = true
        sc.drainOnWaiting = true
        // Each message is stored before the radio is asked for the next one (`resumeMessages`).
        sc.holdDrainUntilStored = true
        // LOG_RX_DATA pushes go on to tunnel clients (`listen --log-rx` through the daemon).
        sc.forwardLogRx = true
        return sc
    }

    /// A serial port, opened at once (O_NONBLOCK, its lock taken with LOCK_NB: nothing waits).
    func openLink() throws -> ByteLink {
        let spec = config.link
        if spec.hasPrefix("serial:") {
            guard let speed = SerialSpeed(baud: config.baud) else { throw DaemonError(.usage, "unsupported baud rate \(config.baud)") }
            return try SerialLink(path: hotplug.serialPath(String(spec.dropFirst(7))), speed: speed)
        }
        throw DaemonError(.usage, "unknown link \(spec): use serial:PATH, tcp:HOST[:PORT] or ble:ADDRESS")
    }

    func scheduleReconnect(now: UInt64) {
        radio.backoffMS = radio.backoffMS == 0 ? config.reconnectMinMS : min(radio.backoffMS * 2, config.reconnectMaxMS)
        // Jitter: 75–125 % of the backoff.
        let jitter = UInt64.random(in: 0...(radio.backoffMS / 2))
        let delay = radio.backoffMS - radio.backoffMS / 4 + jitter
        radio.reconnectAt = now + delay
        log("link: reconnecting in \(delay / 1000).\((delay % 1000) / 100) s")
        let why = radio.radioProblem.map { p in ": " + (p.hasSuffix(".") ? String(p.dropLast()) : p) } ?? ""
        notify.status("serving the API; radio \(config.link) not connected\(why); reconnecting in \(max(1, (delay + 500) / 1000)) s")
    }

    /// Tears down the link and session; the outbox and everything stored stay.
    func linkLost(_ reason: String) {
        if let c = connector {  // a reconnect asked for (SIGHUP) while connecting: start over
            c.cancel()
            connector = nil
            phase = .down
            log("link: stopped connecting to \(config.link): \(reason)")
            scheduleReconnect(now: monotonicMilliseconds())
            return
        }
        guard link != nil || session != nil else { return }
        log("link: lost \(config.link): \(reason)")
        radio.radioProblem = reason
        // The contacts and channels sync end here: their cancelled replies must not finish it.
        sync.contactsTicket = nil
        sync.channelTickets.removeAll()
        if let s = session {
            s.close()
            processEvents(now: monotonicMilliseconds())
            ops.close(reason)
            if let si = s.selfInfo { radio.lastSelfInfo = si }
            if let di = s.deviceInfo { radio.lastDeviceInfo = di }
        }
        session = nil
        link?.close()
        link = nil
        phase = .down
        sync.keepaliveTicket = nil
        sync.batteryTicket = nil
        outbox.sessionClosed()
        for (t, r) in requests.replyTickets {
            _ = t
            reply(DaemonResponse(id: r.id, error: DaemonError(.link, "the link to the radio was lost during \(r.what); try again.")), to: r.client)
        }
        requests.replyTickets.removeAll()
        hubLinkLost()
        requests.tunnelTickets.removeAll()
        publish(.obj(("event", "link"), ("state", "down"), ("reason", .string(reason))))
        scheduleReconnect(now: monotonicMilliseconds())
    }

    func linkReady(_ revents: Int16) {
        guard let l = link else { return }
        let now = monotonicMilliseconds()
        do throws(LinkError) {
            if revents & Int16(POLLOUT) != 0 { try l.flush() }
            if revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                var any = false
                for _ in 0..<16 {
                    let n: Int
                    if l.framing == .datagram {  // BLE: one whole frame per read
                        n = try readChunk(l)
                        if n > 0 { radio.readBuffer.withUnsafeBytes { raw in received(UnsafeRawBufferPointer(rebasing: raw[0..<n]), now: now) } }
                    } else {  // serial, TCP: read straight into the deframer's ring
                        var failure: LinkError? = nil
                        n = radio.deframer.feed(now: now, reading: { room in
                            do throws(LinkError) { return try l.read(into: room) } catch { failure = error; return 0 }
                        }) { frame in received(frame, now: now) }
                        if let failure { throw failure }
                    }
                    if link == nil { return }
                    if n == 0 { break }
                    any = true
                }
                if !any && revents & Int16(POLLHUP | POLLERR) != 0 { throw l.hangupError() }
            }
            pump(now: now)
        } catch {
            linkLost(error.description)
        }
    }

    func readChunk(_ l: ByteLink) throws(LinkError) -> Int {
        var result: Result<Int, LinkError> = .success(0)
        radio.readBuffer.withUnsafeMutableBytes { raw in
            do throws(LinkError) { result = .success(try l.read(into: raw)) } catch { result = .failure(error) }
        }
        return try result.get()
    }

    /// One frame from the radio: to the session, then its events are handled (messages stored)
    /// before anything the session wants to send is written.
    func received(_ frame: UnsafeRawBufferPointer, now: UInt64) {
        guard let s = session else { return }
        if hub != nil { hubRadioFrame(frame) }
        s.receive(frame: frame, now: now)
        processEvents(now: now)
    }

    /// Handles the session's events, then writes its frames. The order is the durability rule.
    func pump(now: UInt64) {
        processEvents(now: now)
        // The operations' next steps (their replies just arrived): what they submit goes out below.
        while ops.jobs.runReady() { processEvents(now: now) }
        // The hub's turn at the radio comes when the daemon's own commands are done.
        if hub != nil { while hubDispatch(now: now) { processEvents(now: now) } }
        guard let s = session, let l = link else { return }
        while let payload = s.nextFrame() {
            if hub != nil { hubPart.contacts.sent(payload) }
            do throws(LinkError) {
                try l.write(l.framing == .datagram ? payload : StreamDeframer.frame(payload, marker: UInt8(ascii: "<")))
            } catch {
                linkLost(error.description)
                return
            }
        }
    }
}
