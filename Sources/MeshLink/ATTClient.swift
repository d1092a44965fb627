/// The attribute handles of the Nordic UART service found by discovery.
public struct NordicUARTHandles: Equatable, Sendable {
    public var serviceStart: UInt16
    public var serviceEnd: UInt16
    /// RX characteristic value (the app writes frames here).
    public var rx: UInt16
    /// TX characteristic value (the radio notifies frames from here).
    public var tx: UInt16
    /// TX's Client Characteristic Configuration descriptor.
    public var txConfiguration: UInt16
}

/// Why the GATT client gave up. `description(address:)` gives the one-sentence message.
public enum ATTClientError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The negotiated ATT MTU cannot carry a whole 176-byte frame in one write or notification.
    case mtuTooSmall(Int, needed: Int)
    /// The device has no Nordic UART service.
    case serviceNotFound
    /// The Nordic UART service lacks the RX or TX characteristic (or it lacks write/notify).
    case characteristicMissing(String)
    /// TX has no CCCD, so notifications cannot be enabled.
    case notificationsUnavailable
    /// The radio requires an encrypted, authenticated (paired) link.
    case needsPairing(ATTErrorCode, during: String)
    /// The radio answered a request with another ATT error.
    case refused(ATTErrorCode, during: String)
    /// The radio sent a PDU that does not parse.
    case malformed(String)
    /// No response to a request within the transaction timeout.
    case timeout(String)
    /// More frames were queued than the bounded queue holds.
    case queueFull(capacity: Int)
    /// A frame longer than fits in one write at the negotiated MTU.
    case frameTooLarge(Int, maximum: Int)

    public var needsPairing: Bool {
        if case .needsPairing = self { return true }
        return false
    }

    public var description: String { description(address: "ADDRESS") }

    /// One sentence; `address` appears in the pairing command.
    public func description(address: String) -> String {
        switch self {
        case .mtuTooSmall(let mtu, let needed) where mtu >= 176:
            // ESP32 firmware pins its MTU at 176: writes still fit (the longest command is 173
            // bytes), but notifications carry at most MTU - 3 bytes.
            return "the radio's ATT MTU is \(mtu) bytes, but a whole 176-byte frame needs at least \(needed) (ESP32 radios offer 176): accept it with --ble-min-mtu \(mtu), knowing that received frames over \(mtu - 3) bytes (the longest messages) may be cut short, or connect the radio with --serial"
        case .mtuTooSmall(let mtu, let needed):
            return "the radio's ATT MTU is \(mtu) bytes, but a whole 176-byte frame needs at least \(needed): check that the adapter and the radio support a larger MTU (update the radio's firmware), or connect the radio with --serial"
        case .serviceNotFound:
            return "the device has no Nordic UART service: is it a MeshCore companion radio with BLE firmware?"
        case .characteristicMissing(let which):
            return "the device's Nordic UART service has no usable \(which) characteristic: is it a MeshCore companion radio?"
        case .notificationsUnavailable:
            return "the radio's TX characteristic cannot notify (no CCCD): is it a MeshCore companion radio?"
        case .needsPairing(let code, let during):
            return "the radio refused \(during) with \(code): pair the radio first: bluetoothctl pair \(address) (PIN 123456 or the one on the radio's screen)"
        case .refused(let code, let during):
            return "the radio refused \(during) with ATT error \(code)"
        case .malformed(let what):
            return "the radio sent a malformed ATT PDU (\(what))"
        case .timeout(let what):
            return "the radio did not answer \(what) in time"
        case .queueFull(let capacity):
            return "more than \(capacity) frames are waiting to be written to the radio"
        case .frameTooLarge(let length, let maximum):
            return "a \(length)-byte frame does not fit one BLE write (at most \(maximum) bytes at this MTU)"
        }
    }
}

/// A sans-I/O GATT client for the MeshCore companion's Nordic UART service.
///
/// Feed it every ATT PDU received (`receive`), send every PDU it produces (`takeOutgoing`), give it
/// frames to write (`send(frame:)`) and the time (`now`, monotonic ms). It exchanges the MTU,
/// discovers the service, RX/TX and TX's CCCD, enables notifications, then writes one whole frame per
/// Write Request (the next only after the Write Response) and returns one frame per notification.
public struct ATTClient {
    public struct Configuration: Sendable {
        /// MTU asked for in the exchange.
        public var requestedMTU: UInt16 = 517
        /// Smallest acceptable negotiated MTU: 176-byte frame + 3-byte ATT header.
        public var minimumMTU: UInt16 = 179
        /// How long a request may wait for its response.
        public var transactionTimeoutMilliseconds: UInt64 = 10_000
        /// Frames waiting for their turn (bounded; overflow throws `.queueFull`).
        public var frameQueueCapacity = 16
        public init() {}
    }

    public enum Phase: Equatable, Sendable {
        case idle, exchangingMTU, discoveringService, discoveringCharacteristics, discoveringDescriptors
        case subscribing, ready, failed
    }

    /// What one received PDU meant.
    public enum Event {
        /// Nothing for the caller (a discovery step, an ignored PDU).
        case none
        /// Discovery and subscription finished: frames flow.
        case ready
        /// One companion frame from a notification/indication: a view into the PDU given to `receive`.
        case frame(UnsafeRawBufferPointer)
        /// The radio acknowledged the frame written last.
        case frameAcknowledged
    }

    public let configuration: Configuration
    public private(set) var phase: Phase = .idle
    public private(set) var mtu = 23
    public private(set) var handles: NordicUARTHandles?
    /// Frames queued or in flight (written but not acknowledged).
    public var unacknowledgedFrames: Int { frames.count + (frameInFlight ? 1 : 0) }

    private struct Characteristic {
        var declaration: UInt16
        var properties: GATTProperties
        var value: UInt16
        var uuid: BluetoothUUID
    }

    private var outgoing: [[UInt8]] = []
    private var pending: (opcode: ATTOpcode, what: String, deadline: UInt64)? = nil
    private var frames: [[UInt8]] = []
    private var frameInFlight = false
    private var service: (start: UInt16, end: UInt16)? = nil
    private var characteristics: [Characteristic] = []
    private var rx: Characteristic? = nil
    private var tx: Characteristic? = nil
    private var txEnd: UInt16 = 0
    /// First handle of the discovery request in flight: answers must move past it (no loops).
    private var searchStart: UInt16 = 0

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Starts the MTU exchange.
    public mutating func start(now: UInt64) {
        guard phase == .idle else { return }
        phase = .exchangingMTU
        var pdu: [UInt8] = [ATTOpcode.exchangeMTURequest.rawValue]
        pdu.appendU16(configuration.requestedMTU)
        request(pdu, .exchangeMTURequest, "the MTU exchange", now: now)
    }

    public var hasOutgoing: Bool { !outgoing.isEmpty }

    /// The next PDU to write to the ATT channel, oldest first.
    public mutating func takeOutgoing() -> [UInt8]? {
        outgoing.isEmpty ? nil : outgoing.removeFirst()
    }

    /// Deadline of the request in flight.
    public var nextDeadline: UInt64? { pending?.deadline }

    /// Fails with `.timeout` when the request in flight is overdue.
    public mutating func checkTimeout(now: UInt64) throws(ATTClientError) {
        if let pending, now >= pending.deadline {
            throw fail(.timeout(pending.what))
        }
    }

    /// Queues one whole companion frame; written as soon as the link is ready and the previous
    /// frame was acknowledged.
    public mutating func send(frame: UnsafeRawBufferPointer, now: UInt64) throws(ATTClientError) {
        if phase == .failed { throw .malformed("the client already failed") }
        let maximum = phase == .ready ? mtu - 3 : Int(configuration.minimumMTU) - 3
        guard frame.count <= maximum else { throw .frameTooLarge(frame.count, maximum: maximum) }
        guard frames.count < configuration.frameQueueCapacity else {
            throw .queueFull(capacity: configuration.frameQueueCapacity)
        }
        frames.append(Array(frame))
        writeNextFrame(now: now)
    }

    public mutating func send(frame: [UInt8], now: UInt64) throws(ATTClientError) {
        var failure: ATTClientError? = nil
        frame.withUnsafeBytes { raw in
            do throws(ATTClientError) { try send(frame: raw, now: now) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    /// Handles one received ATT PDU. A returned `.frame` view is valid only as long as `pdu` is.
    public mutating func receive(_ pdu: UnsafeRawBufferPointer, now: UInt64) throws(ATTClientError) -> Event {
        guard let first = pdu.first else { throw fail(.malformed("empty PDU")) }
        guard let opcode = ATTOpcode(rawValue: first) else {
            // Unknown requests need an answer; unknown commands (bit 6) are ignored.
            if first & 0x40 == 0 && first & 0x01 == 0 { respondNotSupported(first) }
            return .none
        }
        switch opcode {
        case .handleValueNotification, .handleValueIndication:
            guard pdu.count >= 3 else { throw fail(.malformed("short notification")) }
            if opcode == .handleValueIndication { outgoing.append([ATTOpcode.handleValueConfirmation.rawValue]) }
            guard phase == .ready || phase == .subscribing, let handles, pdu.u16(at: 1) == handles.tx else { return .none }
            return .frame(UnsafeRawBufferPointer(rebasing: pdu[3...]))
        case .exchangeMTURequest:
            // The radio started its own exchange: answer with ours; both use the smaller.
            guard pdu.count >= 3 else { respondError(first, 0, .invalidPDU); return .none }
            var response: [UInt8] = [ATTOpcode.exchangeMTUResponse.rawValue]
            response.appendU16(configuration.requestedMTU)
            outgoing.append(response)
            let theirs = Int(pdu.u16(at: 1))
            mtu = max(23, min(Int(configuration.requestedMTU), theirs))
            return .none
        case _ where opcode.isRequest:
            respondNotSupported(first)
            return .none
        case .handleValueConfirmation, .writeCommand:
            return .none
        default:
            return try handleResponse(opcode, pdu, now: now)
        }
    }

    // MARK: responses

    private mutating func handleResponse(_ opcode: ATTOpcode, _ pdu: UnsafeRawBufferPointer,
                                         now: UInt64) throws(ATTClientError) -> Event {
        guard let expected = pending else { return .none }  // stray response: ignore
        if opcode == .errorResponse {
            guard pdu.count >= 5 else { throw fail(.malformed("short error response")) }
            pending = nil
            return try handleError(ATTErrorCode(rawValue: pdu[4]), what: expected.what, now: now)
        }
        guard opcode.rawValue == expected.opcode.rawValue + 1 else {
            throw fail(.malformed("expected the answer to \(expected.what), got opcode 0x\(hex(opcode.rawValue))"))
        }
        pending = nil
        switch opcode {
        case .exchangeMTUResponse:
            guard pdu.count >= 3 else { throw fail(.malformed("short MTU response")) }
            mtu = max(23, min(Int(configuration.requestedMTU), Int(pdu.u16(at: 1))))
            try checkMTU()
            discoverService(now: now)
        case .findByTypeValueResponse:
            guard pdu.count >= 5 else { throw fail(.malformed("short service discovery response")) }
            let start = pdu.u16(at: 1), end = pdu.u16(at: 3)
            guard start != 0, end >= start else { throw fail(.malformed("bad service handle range")) }
            service = (start, end)
            characteristics = []
            phase = .discoveringCharacteristics
            discoverCharacteristics(from: start, now: now)
        case .readByTypeResponse:
            guard pdu.count >= 2 else { throw fail(.malformed("short characteristic response")) }
            let length = Int(pdu[1])
            guard length == 7 || length == 21, (pdu.count - 2) % length == 0 else {
                throw fail(.malformed("characteristic entries of \(length) bytes"))
            }
            var offset = 2
            var last: UInt16 = 0
            while offset + length <= pdu.count {
                let declaration = pdu.u16(at: offset)
                let uuidBytes = UnsafeRawBufferPointer(rebasing: pdu[(offset + 5)..<(offset + length)])
                guard let uuid = BluetoothUUID(littleEndian: uuidBytes) else { throw fail(.malformed("characteristic UUID")) }
                characteristics.append(Characteristic(
                    declaration: declaration, properties: GATTProperties(rawValue: pdu[offset + 2]),
                    value: pdu.u16(at: offset + 3), uuid: uuid))
                last = declaration
                offset += length
            }
            guard let service, last >= searchStart else { throw fail(.malformed("characteristics out of the requested range")) }
            if last < service.end && last != 0 {
                discoverCharacteristics(from: last + 1, now: now)
            } else {
                try finishCharacteristics(now: now)
            }
        case .findInformationResponse:
            guard pdu.count >= 2 else { throw fail(.malformed("short descriptor response")) }
            let format = pdu[1]
            let entry = format == 1 ? 4 : format == 2 ? 18 : 0
            guard entry > 0, (pdu.count - 2) % entry == 0, pdu.count > 2 else {
                throw fail(.malformed("descriptor format \(format)"))
            }
            var offset = 2
            var last: UInt16 = 0
            while offset + entry <= pdu.count {
                let handle = pdu.u16(at: offset)
                let uuid = BluetoothUUID(littleEndian: UnsafeRawBufferPointer(rebasing: pdu[(offset + 2)..<(offset + entry)]))
                if uuid == .clientCharacteristicConfiguration {
                    subscribe(configuration: handle, now: now)
                    return .none
                }
                last = handle
                offset += entry
            }
            guard last >= searchStart else { throw fail(.malformed("descriptors out of the requested range")) }
            if last < txEnd && last != 0 {
                discoverDescriptors(from: last + 1, now: now)
            } else {
                throw fail(.notificationsUnavailable)
            }
        case .writeResponse:
            if phase == .subscribing {
                phase = .ready
                writeNextFrame(now: now)
                return .ready
            }
            if phase == .ready && frameInFlight {
                frameInFlight = false
                writeNextFrame(now: now)
                return .frameAcknowledged
            }
        default:
            break
        }
        return .none
    }

    private mutating func handleError(_ code: ATTErrorCode, what: String, now: UInt64) throws(ATTClientError) -> Event {
        switch phase {
        case .exchangingMTU where code == .requestNotSupported:
            mtu = 23
            try checkMTU()
            discoverService(now: now)
            return .none
        case .discoveringService where code == .attributeNotFound:
            throw fail(.serviceNotFound)
        case .discoveringCharacteristics where code == .attributeNotFound:
            try finishCharacteristics(now: now)
            return .none
        case .discoveringDescriptors where code == .attributeNotFound:
            throw fail(.notificationsUnavailable)
        default:
            if code.needsPairing { throw fail(.needsPairing(code, during: what)) }
            throw fail(.refused(code, during: what))
        }
    }

    private mutating func checkMTU() throws(ATTClientError) {
        if mtu < Int(configuration.minimumMTU) {
            throw fail(.mtuTooSmall(mtu, needed: Int(configuration.minimumMTU)))
        }
    }

    private mutating func finishCharacteristics(now: UInt64) throws(ATTClientError) {
        guard let service else { throw fail(.serviceNotFound) }
        guard let rx = characteristics.first(where: { $0.uuid == .nordicUARTRX }),
              !rx.properties.isDisjoint(with: [.write, .writeWithoutResponse]) else {
            throw fail(.characteristicMissing("RX (write)"))
        }
        guard let txIndex = characteristics.firstIndex(where: { $0.uuid == .nordicUARTTX }),
              !characteristics[txIndex].properties.isDisjoint(with: [.notify, .indicate]) else {
            throw fail(.characteristicMissing("TX (notify)"))
        }
        let tx = characteristics[txIndex]
        self.rx = rx
        self.tx = tx
        // TX's descriptors lie between its value and the next declaration (or the service end).
        let next = characteristics.filter { $0.declaration > tx.declaration }.map(\.declaration).min()
        txEnd = next.map { $0 - 1 } ?? service.end
        guard tx.value < txEnd else { throw fail(.notificationsUnavailable) }
        phase = .discoveringDescriptors
        discoverDescriptors(from: tx.value + 1, now: now)
    }

    // MARK: requests

    private mutating func request(_ pdu: [UInt8], _ opcode: ATTOpcode, _ what: String, now: UInt64) {
        outgoing.append(pdu)
        pending = (opcode, what, now + configuration.transactionTimeoutMilliseconds)
    }

    private mutating func discoverService(now: UInt64) {
        phase = .discoveringService
        var pdu: [UInt8] = [ATTOpcode.findByTypeValueRequest.rawValue]
        pdu.appendU16(0x0001)
        pdu.appendU16(0xFFFF)
        pdu.appendU16(0x2800)
        pdu += BluetoothUUID.nordicUARTService.littleEndianBytes
        request(pdu, .findByTypeValueRequest, "the Nordic UART service discovery", now: now)
    }

    private mutating func discoverCharacteristics(from start: UInt16, now: UInt64) {
        guard let service else { return }
        searchStart = start
        var pdu: [UInt8] = [ATTOpcode.readByTypeRequest.rawValue]
        pdu.appendU16(start)
        pdu.appendU16(service.end)
        pdu.appendU16(0x2803)
        request(pdu, .readByTypeRequest, "the characteristic discovery", now: now)
    }

    private mutating func discoverDescriptors(from start: UInt16, now: UInt64) {
        searchStart = start
        var pdu: [UInt8] = [ATTOpcode.findInformationRequest.rawValue]
        pdu.appendU16(start)
        pdu.appendU16(txEnd)
        request(pdu, .findInformationRequest, "the descriptor discovery", now: now)
    }

    private mutating func subscribe(configuration handle: UInt16, now: UInt64) {
        guard let rx, let tx, let service else { return }
        handles = NordicUARTHandles(serviceStart: service.start, serviceEnd: service.end,
                                    rx: rx.value, tx: tx.value, txConfiguration: handle)
        phase = .subscribing
        let value: UInt16 = tx.properties.contains(.notify) ? 0x0001 : 0x0002
        var pdu: [UInt8] = [ATTOpcode.writeRequest.rawValue]
        pdu.appendU16(handle)
        pdu.appendU16(value)
        request(pdu, .writeRequest, "enabling notifications", now: now)
    }

    private mutating func writeNextFrame(now: UInt64) {
        guard phase == .ready, !frameInFlight, pending == nil, !frames.isEmpty, let handles else { return }
        let frame = frames.removeFirst()
        var pdu: [UInt8] = [ATTOpcode.writeRequest.rawValue]
        pdu.reserveCapacity(3 + frame.count)
        pdu.appendU16(handles.rx)
        pdu += frame
        frameInFlight = true
        request(pdu, .writeRequest, "a frame write", now: now)
    }

    private mutating func respondNotSupported(_ opcode: UInt8) {
        respondError(opcode, 0, .requestNotSupported)
    }

    private mutating func respondError(_ opcode: UInt8, _ handle: UInt16, _ code: ATTErrorCode) {
        var pdu: [UInt8] = [ATTOpcode.errorResponse.rawValue, opcode]
        pdu.appendU16(handle)
        pdu.append(code.rawValue)
        outgoing.append(pdu)
    }

    private mutating func fail(_ error: ATTClientError) -> ATTClientError {
        phase = .failed
        pending = nil
        return error
    }
}
