import MeshCompanion

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
    /// Plain, CLI data, or signed (a room post).
    public var textType: TextType
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
    public var hops: Int? {
        let p = PathLength(rawValue: pathLength)
        return p.isUnknown ? nil : p.hopCount
    }

    public enum ParseError: Error, Equatable { case truncated(code: UInt8), notAMessage(code: UInt8) }

    /// Parses one message frame with MeshCompanion's decoders and keeps an owned copy.
    public init(frame b: UnsafeRawBufferPointer) throws(ParseError) {
        let code = b.first ?? 0
        let decoded: CompanionFrame
        do { decoded = try CompanionFrame.decode(b) } catch {
            if case .truncated = error { throw .truncated(code: code) }
            throw .notAMessage(code: code)
        }
        self.code = code
        channelIndex = 0
        authorPrefix = []
        dataType = 0
        senderPrefix = []
        switch decoded {
        case .contactMessage(let m):
            kind = .contact
            snrQuarterDb = m.snrQuarterDb
            senderPrefix = m.senderPrefix.bytes
            pathLength = m.pathLength.rawValue
            textType = m.textType
            timestamp = m.senderTimestamp
            authorPrefix = m.authorPrefix?.bytes ?? []
            text = Array(m.textBytes)
        case .channelMessage(let m):
            kind = .channel
            snrQuarterDb = m.snrQuarterDb
            channelIndex = m.channelIndex
            pathLength = m.pathLength.rawValue
            textType = m.textType
            timestamp = m.timestamp
            text = Array(m.textBytes)
        case .channelData(let d):
            kind = .channelData
            snrQuarterDb = d.snrQuarterDb
            channelIndex = d.channelIndex
            pathLength = d.pathLength.rawValue
            dataType = d.dataType
            textType = .plain
            timestamp = 0
            text = Array(d.data)
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
