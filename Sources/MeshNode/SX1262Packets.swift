// The SX1262's packets: transmit (listen-before-talk, CAD, a deadline on each), interrupts
// (every one handled, DIO1 looked at again after the clear), and the health check.

extension SX1262 {
    // MARK: transmit

    /// Sends a packet now, or after the ones before it. A command that fails is recovered from
    /// (the chip is reset and set up again) or, if that fails too, reported through `onDead`.
    public func send(_ packet: [UInt8]) {
        guard !packet.isEmpty, packet.count <= 255 else { return }
        if transmitting {
            if queue.count >= Self.maxQueued { queue.removeFirst(); dropped += 1 }
            queue.append(packet)
            return
        }
        guarded("sending a \(packet.count)-byte packet") { try start(packet) }
    }

    private func start(_ packet: [UInt8]) throws {
        transmitting = true
        waitingPacket = packet
        // Listen before talk, as the firmware before every transmit: a preamble or a header
        // being received holds the packet (at most `lbtMaxMs`, then it goes anyway).
        if try channelActive() {
            let now = scheduler?.now ?? 0
            if lbtSince == nil { lbtSince = now }
            if now &- lbtSince! < Self.lbtMaxMs {
                recoveries[.lbtDeferral] &+= 1
                onRecovery?(.lbtDeferral, "a packet waits: the chip is receiving a preamble or header")
                waitForChannel()
                return
            }
        }
        lbtSince = nil
        if cadBeforeTransmit {
            cadPacket = packet
            try command(.setStandby, [0x00])
            try command(.setCadParams, [0x03, params.sf + 13, 10, 0x00, 0x00, 0x00, 0x00])  // 8 symbols, CAD only
            try command(.setCad)
            armDeadline(8 * symbolMs + Self.txMarginMs)
            return
        }
        try transmitNow(packet)
    }

    /// The channel is busy: the packet is looked at again a little later.
    private func waitForChannel() {
        channelBusyCount += 1
        deadlineToken &+= 1
        waitingForChannel = true
        if let s = scheduler {
            s.after(retryDelay()) { [weak self] in self?.retry() }
        }
        onChannelBusy?()
    }

    /// After a busy channel: looks again, and sends if it is clear.
    public func retry() {
        guard waitingForChannel, let p = waitingPacket else { return }
        waitingForChannel = false
        guarded("sending a \(p.count)-byte packet") { try start(p) }
    }

    private func transmitNow(_ packet: [UInt8]) throws {
        cadPacket = nil
        try command(.setStandby, [0x00])
        try board.rfSwitch(rx: false, tx: true)
        try command(.setPacketParams, Self.packetParams(params, length: UInt8(packet.count)))
        try command(.writeBuffer, [0x00] + packet)
        try command(.clearIrqStatus, [UInt8(Self.irqAll >> 8), UInt8(Self.irqAll & 0xFF)])
        let air = UInt64(LoRa.airtimeMs(bytes: packet.count, params: params))
        // The chip's own timeout (airtime × 1.5 and 100 ms) raises the Timeout IRQ; the host's
        // deadline, later, covers an IRQ that never comes.
        try command(.setTx, Self.txTimeout(ms: air * 3 / 2 + 100))
        transmitting = true
        armDeadline(air * 3 / 2 + Self.txMarginMs)
    }

    /// The transmit (or CAD) is over: the next packet, or back to listening.
    private func finishTransmit() throws {
        transmitting = false
        waitingPacket = nil
        cadPacket = nil
        deadlineToken &+= 1
        if !queue.isEmpty { try start(queue.removeFirst()) } else {
            try command(.setStandby, [0x00])
            try command(.setPacketParams, Self.packetParams(params, length: 0xFF))
            try listen()
        }
    }

    var symbolMs: UInt64 { max(1, (UInt64(1) << UInt64(params.sf)) * 1000 / UInt64(max(1, params.bwHz))) }

    // MARK: listen before talk

    /// Whether a packet is being received (the firmware's `isReceiving`): a header received less
    /// than the longest payload's airtime ago, or a preamble detected less than a preamble and
    /// header's time ago. Stale and failed detections are cleared.
    func channelActive() throws -> Bool {
        let s = try command(.getIrqStatus, reply: 3)
        let irq = UInt16(s[2]) << 8 | UInt16(s[3])
        let now = scheduler?.now ?? 0
        let detection = Self.irqPreambleDetected | Self.irqHeaderValid | Self.irqHeaderErr | Self.irqSyncWordValid
        func forget(_ bits: UInt16) throws {
            try command(.clearIrqStatus, [UInt8(bits >> 8), UInt8(bits & 0xFF)])
            activityAt = nil; headerSeen = false
        }
        if irq & Self.irqHeaderErr != 0 { try forget(detection); return false }
        if irq & Self.irqHeaderValid == 0 && headerSeen { activityAt = nil; headerSeen = false; return false }
        if irq & Self.irqHeaderValid != 0 {
            if !headerSeen { headerSeen = true; activityAt = now }
            if now &- (activityAt ?? now) > maxPayloadMs { try forget(detection); return false }
            return true
        }
        if irq & Self.irqPreambleDetected != 0 {
            if activityAt == nil { activityAt = now }
            if now &- activityAt! > preambleMs { try forget(Self.irqPreambleDetected); return false }
            return true
        }
        activityAt = nil; headerSeen = false
        return false
    }

    /// A preamble and header's time (the firmware's `preambleMillis`).
    var preambleMs: UInt64 {
        let tsymUs = (UInt64(1) << UInt64(params.sf)) * 1_000_000 / UInt64(max(1, params.bwHz))
        return ((UInt64(Self.preambleSymbols(params)) + 8) * 4 + (params.sf <= 6 ? 25 : 17)) * tsymUs / 4 / 1000 + 1
    }

    /// The longest payload's airtime (the firmware's `maxPayloadMillis`).
    var maxPayloadMs: UInt64 { UInt64(LoRa.airtimeMs(bytes: 255, params: params)) }

    // MARK: interrupts

    /// DIO1 rose: reads the IRQ status, clears what was read and handles it, then looks at DIO1
    /// again: an IRQ raised between the read and the clear keeps it high with no new edge to come,
    /// so it is handled now (counted as a recovery). Four rounds at most, then everything is cleared.
    public func irq() {
        guarded("handling an interrupt") { try serviceIRQ() }
    }

    func serviceIRQ() throws {
        var rounds = 0
        while true {
            let s = try command(.getIrqStatus, reply: 3)
            let irq = UInt16(s[2]) << 8 | UInt16(s[3])
            if irq != 0 {
                try command(.clearIrqStatus, [UInt8(irq >> 8), UInt8(irq & 0xFF)])
                try handle(irq)
            }
            rounds += 1
            guard try board.dio1() else { return }
            if rounds == 1 {
                recoveries[.rxRecovery] &+= 1
                onRecovery?(.rxRecovery, "DIO1 stayed high after the IRQ status was cleared (an interrupt came between the read and the clear); handled without its edge")
            }
            if rounds >= 4 {
                try command(.clearIrqStatus, [UInt8(Self.irqAll >> 8), UInt8(Self.irqAll & 0xFF)])
                return
            }
        }
    }

    private func handle(_ irq: UInt16) throws {
        if irq & Self.irqCadDone != 0, let p = cadPacket {
            if irq & Self.irqCadDetected != 0 {
                cadPacket = nil
                try listen()  // hear what is on the air meanwhile
                waitForChannel()
            } else {
                try transmitNow(p)
            }
            return
        }
        if transmitting && waitingPacket != nil && cadPacket == nil && irq & (Self.irqTxDone | Self.irqTimeout) != 0 {
            lastAlive = scheduler?.now
            if irq & Self.irqTxDone == 0 {
                recoveries[.txFailure] &+= 1
                onRecovery?(.txFailure, "the chip's TX timeout came before TxDone (a \(waitingPacket!.count)-byte packet); the next one goes")
            }
            onTxDone?()
            try finishTransmit()
        }
        if irq & Self.irqRxDone != 0 {
            if irq & (Self.irqCrcErr | Self.irqHeaderErr) != 0 { crcErrors += 1; return }
            lastAlive = scheduler?.now
            let b = try command(.getRxBufferStatus, reply: 3)
            let length = Int(b[2]), start = b[3]
            guard length > 0 else { return }
            let data = try command(.readBuffer, [start, 0x00], reply: length)
            let packet = Array(data[3...])
            let ps = try command(.getPacketStatus, reply: 4)
            let rssi = -Int(ps[2]) / 2
            let snr = Double(Int8(bitPattern: ps[3])) / 4
            activityAt = nil; headerSeen = false
            onReceive?(packet, snr, rssi)
        }
    }

    // MARK: deadlines and health

    private func armDeadline(_ ms: UInt64) {
        deadlineToken &+= 1
        let token = deadlineToken
        scheduler?.after(ms) { [weak self] in
            guard let self, self.deadlineToken == token, self.transmitting else { return }
            self.guarded("a transmit's deadline") { try self.deadlinePassed(ms) }
        }
    }

    /// A transmit (or CAD) got no interrupt in time: if the IRQ is there, its edge was lost;
    /// if not, the packet is given up (or, after a CAD, sent) and the chip looked at.
    private func deadlinePassed(_ ms: UInt64) throws {
        let s = try command(.getIrqStatus, reply: 3)
        let irq = UInt16(s[2]) << 8 | UInt16(s[3])
        if irq & (Self.irqTxDone | Self.irqTimeout | Self.irqCadDone) != 0 {
            recoveries[.rxRecovery] &+= 1
            onRecovery?(.rxRecovery, "the chip's interrupt came without a DIO1 edge; found at the transmit's deadline (\(ms) ms)")
            try serviceIRQ()
            return
        }
        if let p = cadPacket {
            recoveries[.txTimeout] &+= 1
            onRecovery?(.txTimeout, "no CadDone within \(ms) ms; the packet goes without it")
            try transmitNow(p)
            return
        }
        let n = waitingPacket?.count ?? 0
        recoveries[.txTimeout] &+= 1
        onRecovery?(.txTimeout, "no TxDone within \(ms) ms of a \(n)-byte packet (chip status 0x" + String(try status(), radix: 16) + "); the packet is given up and the chip checked")
        try checkChip(listening: false)
        onTxDone?()
        try finishTransmit()
    }

    /// The chip answers, in a mode it can be in (standby, FS, RX or TX; RX when `listening`),
    /// and still has the settings given at start (the TX clamp bits, which a reset clears), or
    /// this throws (and `guarded` resets it and sets it up again).
    func checkChip(listening: Bool) throws {
        let s = try status()
        if s == 0x00 || s == 0xFF { throw SX1262Error.noChip(miso: s) }
        let mode = Self.chipMode(s)
        guard (2...6).contains(mode), !listening || mode == 5 else { throw SX1262Error.badStatus(s) }
        guard try readRegister(Self.txClampRegister, count: 1)[0] & 0x1E == 0x1E else { throw SX1262Error.settingsLost }
    }

    func armHealthCheck() {
        guard let s = scheduler else { return }
        healthToken &+= 1
        let token = healthToken
        s.after(Self.healthIntervalMs) { [weak self] in
            guard let self, self.healthToken == token else { return }
            self.healthCheck()
        }
    }

    /// The health check: the chip must be listening (GetStatus says RX) unless it is sending, and
    /// DIO1 must not be high with no edge seen (a lost RxDone). Each finding is recovered from.
    public func healthCheck() {
        guarded("the health check") {
            try checkChip(listening: !transmitting)
            if try board.dio1() {
                recoveries[.rxRecovery] &+= 1
                onRecovery?(.rxRecovery, "DIO1 was high with no edge seen (a lost interrupt); found by the health check")
                try serviceIRQ()
            }
            lastAlive = scheduler?.now
            armHealthCheck()
        }
    }

    /// Runs `body`; a chip error in it is recovered from by resetting the chip and setting it up
    /// again (the packet in flight is lost, the queue kept), and if that fails, `onDead` is told.
    func guarded(_ what: String, _ body: () throws -> Void) {
        do { try body() } catch {
            recoveries[.chipReset] &+= 1
            onRecovery?(.chipReset, "\(error) (\(what)); the chip is reset and set up again")
            do {
                try begin()
                if !queue.isEmpty { try start(queue.removeFirst()) }
            } catch {
                onDead?("the SX1262 did not come back from a reset: \(error)")
            }
        }
    }
}
