/// A sans-I/O GATT server that looks like a MeshCore companion radio's BLE side: a GAP service,
/// the Nordic UART service (RX write, TX notify + CCCD) and a DFU-like service after it.
///
/// Whole frames written to RX go to `onFrame`; `notify(frame:)` sends one frame per notification.
/// Switches: `requireAuthentication` (writes to RX and the CCCD fail with "insufficient
/// authentication" until `isAuthenticated`), and `mtu` (the server's own MTU, e.g. 176 like the
/// ESP32 firmware, or smaller to force the client's MTU check).
public final class SimulatedGATTServer {
    public struct Options: Sendable {
        public var mtu: UInt16 = 247
        public var requireAuthentication = false
        public var deviceName = "MeshCore-SIM"
        public init() {}
    }

    public struct Attribute {
        public var handle: UInt16
        public var type: BluetoothUUID
        public var value: [UInt8]
    }

    public static let rxHandle: UInt16 = 0x0012
    public static let txHandle: UInt16 = 0x0014
    public static let txConfigurationHandle: UInt16 = 0x0015

    public let options: Options
    /// Called with each whole frame the client writes to RX (Write Request or Write Command).
    public var onFrame: ((UnsafeRawBufferPointer) -> Void)?
    /// Set to true to simulate a paired, encrypted link.
    public var isAuthenticated = false
    public private(set) var notificationsEnabled = false
    /// The negotiated MTU (23 until the client exchanges).
    public private(set) var mtu = 23
    /// Notifications dropped because the client had not subscribed.
    public private(set) var droppedNotifications = 0
    /// Notifications cut short because the frame did not fit MTU - 3 (what an ESP32 does).
    public private(set) var truncatedNotifications = 0
    /// Every request opcode received, in order (for tests).
    public private(set) var requestLog: [UInt8] = []

    private var attributes: [Attribute] = []
    private var serviceEnds: [UInt16: UInt16] = [:]
    private var outgoing: [[UInt8]] = []

    public init(options: Options = Options()) {
        self.options = options
        func add(_ handle: UInt16, _ type: BluetoothUUID, _ value: [UInt8]) {
            attributes.append(Attribute(handle: handle, type: type, value: value))
        }
        func declaration(_ properties: GATTProperties, _ valueHandle: UInt16, _ uuid: BluetoothUUID) -> [UInt8] {
            var value: [UInt8] = [properties.rawValue]
            value.appendU16(valueHandle)
            value += uuid.short.map { [UInt8($0 & 0xFF), UInt8($0 >> 8)] } ?? uuid.littleEndianBytes
            return value
        }
        let gap = BluetoothUUID(short: 0x1800), deviceName = BluetoothUUID(short: 0x2A00)
        add(0x0001, .primaryService, [0x00, 0x18]); serviceEnds[0x0001] = 0x0003
        add(0x0002, .characteristic, declaration(.read, 0x0003, deviceName))
        add(0x0003, deviceName, Array(options.deviceName.utf8))
        _ = gap
        add(0x0010, .primaryService, BluetoothUUID.nordicUARTService.littleEndianBytes); serviceEnds[0x0010] = 0x0015
        add(0x0011, .characteristic, declaration([.write, .writeWithoutResponse], Self.rxHandle, .nordicUARTRX))
        add(Self.rxHandle, .nordicUARTRX, [])
        add(0x0013, .characteristic, declaration([.read, .notify], Self.txHandle, .nordicUARTTX))
        add(Self.txHandle, .nordicUARTTX, [])
        add(Self.txConfigurationHandle, .clientCharacteristicConfiguration, [0, 0])
        let dfu = BluetoothUUID(short: 0xFE59), dfuControl = BluetoothUUID("8EC90001-F315-4F60-9FB8-838830DAEA50")!
        add(0x0020, .primaryService, [0x59, 0xFE]); serviceEnds[0x0020] = 0x0023
        add(0x0021, .characteristic, declaration([.write, .indicate], 0x0022, dfuControl))
        add(0x0022, dfuControl, [])
        add(0x0023, .clientCharacteristicConfiguration, [0, 0])
        _ = dfu
    }

    public var hasOutgoing: Bool { !outgoing.isEmpty }

    /// The next PDU to send to the client.
    public func takeOutgoing() -> [UInt8]? {
        outgoing.isEmpty ? nil : outgoing.removeFirst()
    }

    /// Queues one frame as a Handle Value Notification on TX. False (and counted) when the client
    /// has not enabled notifications.
    @discardableResult
    public func notify(frame: UnsafeRawBufferPointer) -> Bool {
        guard notificationsEnabled else {
            droppedNotifications += 1
            return false
        }
        let room = mtu - 3
        if frame.count > room { truncatedNotifications += 1 }
        var pdu: [UInt8] = [ATTOpcode.handleValueNotification.rawValue]
        pdu.appendU16(Self.txHandle)
        pdu += frame.prefix(room)
        outgoing.append(pdu)
        return true
    }

    @discardableResult
    public func notify(frame: [UInt8]) -> Bool {
        frame.withUnsafeBytes { notify(frame: $0) }
    }

    /// Handles one PDU from the client.
    public func receive(_ pdu: UnsafeRawBufferPointer) {
        guard let first = pdu.first else { return }
        requestLog.append(first)
        guard let opcode = ATTOpcode(rawValue: first) else {
            if first & 0x40 == 0 { error(first, 0, .requestNotSupported) }
            return
        }
        switch opcode {
        case .exchangeMTURequest:
            guard pdu.count == 3 else { return error(first, 0, .invalidPDU) }
            mtu = Int(max(23, min(pdu.u16(at: 1), options.mtu)))
            var response: [UInt8] = [ATTOpcode.exchangeMTUResponse.rawValue]
            response.appendU16(options.mtu)
            outgoing.append(response)
        case .findByTypeValueRequest:
            guard pdu.count >= 7 else { return error(first, 0, .invalidPDU) }
            let start = pdu.u16(at: 1), end = pdu.u16(at: 3), type = pdu.u16(at: 5)
            let value = Array(pdu[7...])
            let found = attributes.filter {
                $0.handle >= start && $0.handle <= end && type == 0x2800 && $0.type == .primaryService && $0.value == value
            }
            guard !found.isEmpty else { return error(first, start, .attributeNotFound) }
            var response: [UInt8] = [ATTOpcode.findByTypeValueResponse.rawValue]
            for attribute in found.prefix((mtu - 1) / 4) {
                response.appendU16(attribute.handle)
                response.appendU16(serviceEnds[attribute.handle] ?? attribute.handle)
            }
            outgoing.append(response)
        case .readByTypeRequest:
            guard pdu.count == 7 || pdu.count == 21 else { return error(first, 0, .invalidPDU) }
            let start = pdu.u16(at: 1), end = pdu.u16(at: 3)
            guard start != 0, start <= end else { return error(first, start, .invalidHandle) }
            guard let type = BluetoothUUID(littleEndian: UnsafeRawBufferPointer(rebasing: pdu[5...])) else {
                return error(first, start, .invalidPDU)
            }
            let found = attributes.filter { $0.handle >= start && $0.handle <= end && $0.type == type }
            guard let firstFound = found.first else { return error(first, start, .attributeNotFound) }
            let length = 2 + firstFound.value.count
            var response: [UInt8] = [ATTOpcode.readByTypeResponse.rawValue, UInt8(length)]
            for attribute in found where attribute.value.count == firstFound.value.count {
                if response.count + length > mtu { break }
                response.appendU16(attribute.handle)
                response += attribute.value
            }
            outgoing.append(response)
        case .findInformationRequest:
            guard pdu.count == 5 else { return error(first, 0, .invalidPDU) }
            let start = pdu.u16(at: 1), end = pdu.u16(at: 3)
            guard start != 0, start <= end else { return error(first, start, .invalidHandle) }
            let found = attributes.filter { $0.handle >= start && $0.handle <= end }
            guard let firstFound = found.first else { return error(first, start, .attributeNotFound) }
            let short = firstFound.type.short != nil
            var response: [UInt8] = [ATTOpcode.findInformationResponse.rawValue, short ? 1 : 2]
            for attribute in found where (attribute.type.short != nil) == short {
                let entry = short ? 4 : 18
                if response.count + entry > mtu { break }
                response.appendU16(attribute.handle)
                if let value = attribute.type.short { response.appendU16(value) } else { response += attribute.type.littleEndianBytes }
            }
            outgoing.append(response)
        case .readRequest:
            guard pdu.count == 3 else { return error(first, 0, .invalidPDU) }
            let handle = pdu.u16(at: 1)
            guard let attribute = attributes.first(where: { $0.handle == handle }) else {
                return error(first, handle, .invalidHandle)
            }
            if handle == Self.txHandle && options.requireAuthentication && !isAuthenticated {
                return error(first, handle, .insufficientAuthentication)
            }
            outgoing.append([ATTOpcode.readResponse.rawValue] + attribute.value.prefix(mtu - 1))
        case .writeRequest, .writeCommand:
            guard pdu.count >= 3 else {
                if opcode == .writeRequest { error(first, 0, .invalidPDU) }
                return
            }
            let handle = pdu.u16(at: 1)
            let value = UnsafeRawBufferPointer(rebasing: pdu[3...])
            let respond = opcode == .writeRequest
            switch handle {
            case Self.rxHandle, Self.txConfigurationHandle:
                if options.requireAuthentication && !isAuthenticated {
                    if respond { error(first, handle, .insufficientAuthentication) }
                    return
                }
                if handle == Self.rxHandle {
                    onFrame?(value)  // frames it notifies go out before the Write Response
                } else {
                    guard value.count == 2 else {
                        if respond { error(first, handle, .invalidAttributeValueLength) }
                        return
                    }
                    notificationsEnabled = value[0] & 0x01 != 0
                }
                if respond { outgoing.append([ATTOpcode.writeResponse.rawValue]) }
            case 0x0023:
                if respond { outgoing.append([ATTOpcode.writeResponse.rawValue]) }
            default:
                if respond {
                    let known = attributes.contains { $0.handle == handle }
                    error(first, handle, known ? .writeNotPermitted : .invalidHandle)
                }
            }
        case .exchangeMTUResponse:
            if pdu.count == 3 { mtu = Int(max(23, min(pdu.u16(at: 1), options.mtu))) }
        default:
            if opcode.isRequest { error(first, 0, .requestNotSupported) }
        }
    }

    /// Sends the client an Exchange MTU Request (some peripherals start one themselves).
    public func requestMTUExchange() {
        var pdu: [UInt8] = [ATTOpcode.exchangeMTURequest.rawValue]
        pdu.appendU16(options.mtu)
        outgoing.append(pdu)
    }

    private func error(_ opcode: UInt8, _ handle: UInt16, _ code: ATTErrorCode) {
        var pdu: [UInt8] = [ATTOpcode.errorResponse.rawValue, opcode]
        pdu.appendU16(handle)
        pdu.append(code.rawValue)
        outgoing.append(pdu)
    }
}
