/// A message taken from the radio's offline queue (SYNC_NEXT_MESSAGE), in either the legacy
/// layout (0x07/0x08, stored before the client announced version 3) or the V3 layout
/// (0x10/0x11/0x1B, with SNR). Owned copy: it outlives the receive buffer.
public struct ReceivedMessage: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// A direct message from a contact; `senderPrefix` holds 6 bytes of its key.
        case contact
        /// A channel text; `channelIndex` is the radio's slot.
        case channel
        /// A channel datagram (0x1B); `dataType` tells what `text` (the payload) holds.
        case channelData
    }

    public var kind: Kind
    /// The frame code it arrived with (0x07, 0x08, 0x10, 0x11, 0x1B).
    public var code: UInt8
    public var senderPrefix: [UInt8]
    public var channelIndex: UInt8
    /// Encoded path length; 0xFF means it came direct.
    public var pathLength: UInt8
    /// 0 plain, 1 CLI data, 2 signed (room post).
    public var textType: UInt8
    /// The sender's timestamp (its clock, epoch seconds). 0 for channel datagrams.
    public var timestamp: UInt32
    /// SNR × 4, only in V3 frames.
    public var snrQuarterDb: Int8?
    /// For signed room posts (txt_type 2): the 4-byte prefix of the post's author.
    public var authorPrefix: [UInt8]
    public var dataType: UInt16
    /// Text bytes (UTF-8, possibly cut mid code point by the radio) or datagram payload.
    public var text: [UInt8]

    public var textString: String { String(decoding: text, as: UTF8.self) }
    public var hops: Int? { pathLength == 0xFF ? nil : Int(pathLength & 63) }

    public enum ParseError: Error, Equatable { case truncated(code: UInt8), notAMessage(code: UInt8) }

    /// Parses one message frame.
    // TODO(companion): switch to MeshCompanion's zero-copy message views once they land.
    public init(frame b: UnsafeRawBufferPointer) throws(ParseError) {
        guard let code = b.first else { throw .notAMessage(code: 0) }
        self.code = code
        senderPrefix = []
        channelIndex = 0
        authorPrefix = []
        dataType = 0
        snrQuarterDb = nil
        switch code {
        case Resp.contactMsgRecv, Resp.contactMsgRecvV3:
            let base = code == Resp.contactMsgRecvV3 ? 3 : 0
            guard b.count >= 13 + base else { throw .truncated(code: code) }
            if base == 3 { snrQuarterDb = Int8(bitPattern: b[1]) }
            kind = .contact
            senderPrefix = Array(b[(1 + base)..<(7 + base)])
            pathLength = b[7 + base]
            textType = b[8 + base]
            timestamp = readU32(b, 9 + base)
            var start = 13 + base
            if textType == 2 {
                guard b.count >= start + 4 else { throw .truncated(code: code) }
                authorPrefix = Array(b[start..<(start + 4)])
                start += 4
            }
            text = Array(b[start...])
        case Resp.channelMsgRecv, Resp.channelMsgRecvV3:
            let base = code == Resp.channelMsgRecvV3 ? 3 : 0
            guard b.count >= 8 + base else { throw .truncated(code: code) }
            if base == 3 { snrQuarterDb = Int8(bitPattern: b[1]) }
            kind = .channel
            channelIndex = b[1 + base]
            pathLength = b[2 + base]
            textType = b[3 + base]
            timestamp = readU32(b, 4 + base)
            text = Array(b[(8 + base)...])
        case Resp.channelDataRecv:
            guard b.count >= 9 else { throw .truncated(code: code) }
            kind = .channelData
            snrQuarterDb = Int8(bitPattern: b[1])
            channelIndex = b[4]
            pathLength = b[5]
            dataType = UInt16(b[6]) | UInt16(b[7]) << 8
            textType = 0
            timestamp = 0
            let n = Int(b[8])
            guard b.count >= 9 + n else { throw .truncated(code: code) }
            text = Array(b[9..<(9 + n)])
        default:
            throw .notAMessage(code: code)
        }
    }

    public init(frame: [UInt8]) throws(ParseError) {
        var result: Result<ReceivedMessage, ParseError>!
        frame.withUnsafeBytes { b in
            do throws(ParseError) { result = .success(try ReceivedMessage(frame: b)) } catch { result = .failure(error) }
        }
        self = try result.get()
    }
}
