/// The client side of one MQTT 3.1.1 session, sans-I/O: the caller owns the transport (TCP, TLS,
/// WebSocket), feeds it received bytes with `receive`, writes what `takeOutput` returns, calls
/// `tick` at `deadline`, and reports the transport's end with `transportClosed`.
///
/// Delivery: a QoS 1 PUBLISH stays in flight until its PUBACK, across connections. Each new
/// connection (clean session: the broker keeps nothing of an earlier one) first sends again, with
/// DUP set and their packet ids, whatever was in flight, then the queue. So a message is lost only
/// with the process, and the callers that must survive that (the daemon's bridge) publish from
/// their own durable store and persist what was acknowledged.
public final class MQTTClient {
    public struct Options: Sendable {
        public var connect: MQTTConnect
        /// QoS 1 PUBLISHes awaiting PUBACK at once; further ones wait in the queue.
        public var maxInflight = 32
        /// Window slots the queue may not take: kept for `publishAhead`, so that what is published
        /// ahead (the bridge's stored messages) always finds room beside a queue of other
        /// PUBLISHes (command results, events).
        public var reservedInflight = 0
        /// PUBLISHes waiting for the connection or the window; past this the oldest are dropped
        /// (counted in `dropped`).
        public var maxQueued = 1_024
        /// CONNACK must come within this after the transport opened.
        public var connackTimeoutMS: UInt64 = 15_000
        /// The largest packet taken whole; a larger PUBLISH is skipped (`Event.oversized`).
        public var maxPacketSize = 256 * 1024
        public init(connect: MQTTConnect) { self.connect = connect }
    }

    public enum State: Equatable, Sendable { case closed, connecting, connected }

    public enum Event: Equatable, Sendable {
        case connected(sessionPresent: Bool)
        /// The PUBACK of a QoS 1 PUBLISH (its packet id, as `publish` returned it).
        case acknowledged(UInt16)
        case message(MQTTPublish)
        case subscribed(packetId: UInt16, granted: [UInt8])
        /// A PUBLISH over the decoder's limit (`Options.maxPacketSize`): acknowledged at QoS 1 (so
        /// the broker does not send it again) and dropped; its payload was never buffered.
        case oversized(topic: String, bytes: Int)
    }

    public var options: Options
    public private(set) var state: State = .closed
    public private(set) var dropped = 0
    /// Packet ids in flight, oldest first, and their PUBLISHes.
    private var inflightOrder: [UInt16] = []
    private var inflight: [UInt16: MQTTPublish] = [:]
    private var queue: [MQTTPublish] = []
    private var queueHead = 0
    private var subscriptions: [(String, MQTTQoS)] = []
    private var nextId: UInt16 = 1
    private var decoder = MQTTDecoder()
    private var output: [UInt8] = []
    private var lastSent: UInt64 = 0
    private var lastHeard: UInt64 = 0
    private var pingSentAt: UInt64? = nil
    private var openedAt: UInt64 = 0

    public init(options: Options) {
        self.options = options
        decoder = MQTTDecoder(maxPacketSize: options.maxPacketSize)
    }

    public var inflightCount: Int { inflightOrder.count }
    public var queuedCount: Int { queue.count - queueHead }
    /// Whether a QoS 1 PUBLISH now would go out at once (connected, window open, nothing queued).
    public var canPublishNow: Bool { state == .connected && inflightOrder.count < options.maxInflight && queuedCount == 0 }
    public var hasOutput: Bool { !output.isEmpty }

    /// Bytes to write to the transport, in order.
    public func takeOutput() -> [UInt8] {
        defer { output.removeAll(keepingCapacity: true) }
        return output
    }

    /// The transport is open: sends CONNECT.
    public func transportOpened(now: UInt64) {
        decoder.reset()
        output.removeAll()
        state = .connecting
        openedAt = now
        lastHeard = now
        pingSentAt = nil
        send(.connect(options.connect), now: now)
    }

    /// The transport ended (or the caller gave up on it). In-flight PUBLISHes are kept for the next connection.
    public func transportClosed() {
        state = .closed
        output.removeAll()
        decoder.reset()
        pingSentAt = nil
    }

    /// Sends DISCONNECT (the broker then drops the will) and closes; the caller flushes the output first.
    public func disconnect(now: UInt64) {
        guard state != .closed else { return }
        send(.disconnect, now: now)
        state = .closed
    }

    /// Queues a PUBLISH; returns its packet id (0 at QoS 0).
    @discardableResult
    public func publish(topic: String, payload: [UInt8], qos: MQTTQoS = .atLeastOnce, retain: Bool = false, now: UInt64) -> UInt16 {
        var p = MQTTPublish(topic: topic, payload: payload, qos: qos, retain: retain)
        if qos == .atLeastOnce { p.packetId = allocateId() }
        if queuedCount >= options.maxQueued {
            queueHead += 1
            dropped += 1
        }
        queue.append(p)
        pumpQueue(now: now)
        return p.packetId
    }

    /// A QoS 1 PUBLISH straight into the window, ahead of anything queued: its packet id, or nil
    /// when not connected or the window is full (nothing is queued then; the caller tries again
    /// after the next acknowledgement).
    public func publishAhead(topic: String, payload: [UInt8], now: UInt64) -> UInt16? {
        guard state == .connected, inflightOrder.count < options.maxInflight else { return nil }
        var p = MQTTPublish(topic: topic, payload: payload, qos: .atLeastOnce, retain: false)
        p.packetId = allocateId()
        inflight[p.packetId] = p
        inflightOrder.append(p.packetId)
        send(.publish(p), now: now)
        return p.packetId
    }

    /// Replaces the subscriptions; they take effect at the next connection (the caller reconnects).
    public func replaceSubscriptions(_ filters: [(String, MQTTQoS)]) {
        subscriptions = filters
    }

    /// Subscribes now and again on every later connection.
    public func subscribe(_ filters: [(String, MQTTQoS)], now: UInt64) {
        subscriptions.append(contentsOf: filters)
        if state == .connected { send(.subscribe(packetId: allocateId(), filters: filters), now: now) }
    }

    /// Handles received bytes. Throws on a protocol error or a refused connection; the caller then
    /// closes the transport (and calls `transportClosed`).
    public func receive<C: Collection<UInt8>>(_ bytes: C, now: UInt64) throws(MQTTError) -> [Event] {
        decoder.append(bytes)
        lastHeard = now
        var events: [Event] = []
        while let packet = try decoder.next() {
            switch packet {
            case .connack(let present, let code):
                guard state == .connecting else { throw MQTTError("a second CONNACK") }
                guard code == 0 else { throw MQTTError("the broker refused the connection: \(MQTTPacket.connackReason(code))") }
                state = .connected
                events.append(.connected(sessionPresent: present))
                if !subscriptions.isEmpty { send(.subscribe(packetId: allocateId(), filters: subscriptions), now: now) }
                for id in inflightOrder {
                    guard var p = inflight[id] else { continue }
                    p.dup = true
                    send(.publish(p), now: now)
                }
                pumpQueue(now: now)
            case .puback(let id):
                guard inflight.removeValue(forKey: id) != nil else { continue }  // a late duplicate
                if let i = inflightOrder.firstIndex(of: id) { inflightOrder.remove(at: i) }
                events.append(.acknowledged(id))
                pumpQueue(now: now)
            case .publish(let p):
                guard state == .connected else { throw MQTTError("PUBLISH before CONNACK") }
                if p.qos == .atLeastOnce { send(.puback(p.packetId), now: now) }
                events.append(.message(p))
            case .oversized(let topic, let qos, let id, let length):
                guard state == .connected else { throw MQTTError("PUBLISH before CONNACK") }
                if qos == .atLeastOnce { send(.puback(id), now: now) }
                events.append(.oversized(topic: topic, bytes: length))
            case .suback(let id, let granted):
                events.append(.subscribed(packetId: id, granted: granted))
            case .pingresp:
                pingSentAt = nil
            case .pingreq:
                send(.pingresp, now: now)
            case .connect, .subscribe, .disconnect:
                throw MQTTError("a broker-bound packet from the broker")
            }
        }
        return events
    }

    /// Keep-alive and timeouts. Throws when the connection is dead (no CONNACK, no PINGRESP).
    public func tick(now: UInt64) throws(MQTTError) {
        switch state {
        case .closed:
            return
        case .connecting:
            if now >= openedAt + options.connackTimeoutMS { throw MQTTError("no CONNACK within \(options.connackTimeoutMS / 1000) s") }
        case .connected:
            let keepAlive = UInt64(options.connect.keepAliveS) * 1000
            guard keepAlive > 0 else { return }
            if let sent = pingSentAt, now >= sent + keepAlive / 2 + 5_000 {
                throw MQTTError("no answer from the broker for \((now - lastHeard) / 1000) s")
            }
            if pingSentAt == nil && now >= lastSent + keepAlive * 3 / 4 {
                send(.pingreq, now: now)
                pingSentAt = now
            }
        }
    }

    /// When `tick` must run next.
    public var deadline: UInt64? {
        switch state {
        case .closed: return nil
        case .connecting: return openedAt + options.connackTimeoutMS
        case .connected:
            let keepAlive = UInt64(options.connect.keepAliveS) * 1000
            guard keepAlive > 0 else { return nil }
            if let sent = pingSentAt { return sent + keepAlive / 2 + 5_000 }
            return lastSent + keepAlive * 3 / 4
        }
    }

    // MARK: internals

    private func pumpQueue(now: UInt64) {
        guard state == .connected else { return }
        while queueHead < queue.count {
            let p = queue[queueHead]
            if p.qos == .atLeastOnce {
                guard inflightOrder.count < options.maxInflight - min(options.reservedInflight, options.maxInflight - 1) else { break }
                inflight[p.packetId] = p
                inflightOrder.append(p.packetId)
            }
            queueHead += 1
            send(.publish(p), now: now)
        }
        if queueHead == queue.count {
            queue.removeAll(keepingCapacity: queue.count < 256)
            queueHead = 0
        } else if queueHead > 256 && queueHead * 2 > queue.count {
            queue.removeFirst(queueHead)
            queueHead = 0
        }
    }

    private func send(_ p: MQTTPacket, now: UInt64) {
        p.encode(into: &output)
        lastSent = now
    }

    /// Packet ids cycle through 1...65535, skipping ids still in use.
    private func allocateId() -> UInt16 {
        while true {
            let id = nextId
            nextId = nextId == UInt16.max ? 1 : nextId + 1
            if inflight[id] == nil && !queue[queueHead...].contains(where: { $0.packetId == id }) { return id }
        }
    }
}
