import MeshCompanion

/// A push from the radio (code 0x80 and above) that no request of this session took, decoded
/// once, in MeshCompanion, into owned values. `frame` keeps the bytes as they came, for those
/// who pass them on unchanged (the daemon's tunnel clients).
public struct Push: Sendable, Equatable {
    public let frame: [UInt8]
    public let kind: Kind

    public var code: UInt8 { frame.first ?? 0 }

    public enum Kind: Sendable, Equatable {
        /// A known contact advertised (its record was updated).
        case advert(PublicKey)
        case pathUpdated(PublicKey)
        case sendConfirmed(SendConfirmed)
        case messageWaiting
        case rawData(snrQuarterDb: Int8, rssi: Int8, payload: [UInt8])
        case loginSuccess(LoginSuccess)
        case loginFail(KeyPrefix)
        case status(prefix: KeyPrefix, stats: ServerStats?)
        /// A packet the radio heard (only with `SessionConfig.forwardLogRx`).
        case logRxData(snrQuarterDb: Int8, rssi: Int8, packet: [UInt8])
        case trace(tag: UInt32, authCode: UInt32, flags: UInt8, pathHashes: [UInt8], pathSNRs: [Int8], finalSNRQuarterDb: Int8)
        /// An advert of a node that is not a contact (manual add), or a new contact.
        case newAdvert(Contact)
        case telemetry(prefix: KeyPrefix, lpp: [UInt8])
        case binary(tag: UInt32, data: [UInt8])
        case pathDiscovery(prefix: KeyPrefix, outPathLength: PathLength, outPath: [UInt8], inPathLength: PathLength, inPath: [UInt8])
        case controlData(snrQuarterDb: Int8, rssi: Int8, pathLength: PathLength, payload: [UInt8])
        case contactDeleted(PublicKey)
        case contactsFull
        /// A push code this version does not know, or one too short for its layout.
        case other
    }

    /// Decodes `b` (a push frame, code first).
    public init(_ b: UnsafeRawBufferPointer) {
        frame = Array(b)
        kind = Push.kind(b)
    }

    /// Decodes `frame` (a push frame, code first).
    public init(frame: [UInt8]) {
        self = frame.withUnsafeBytes { Push($0) }
    }

    static func kind(_ b: UnsafeRawBufferPointer) -> Kind {
        guard let f = try? CompanionFrame.decode(b) else { return .other }
        switch f {
        case .advert(let k): return .advert(k)
        case .pathUpdated(let k): return .pathUpdated(k)
        case .sendConfirmed(let c): return .sendConfirmed(c)
        case .messageWaiting: return .messageWaiting
        case .rawData(let r): return .rawData(snrQuarterDb: r.snrQuarterDb, rssi: r.rssi, payload: Array(r.payload))
        case .loginSuccess(let l): return .loginSuccess(l)
        case .loginFail(let p): return .loginFail(p)
        case .statusResponse(let s): return .status(prefix: s.prefix, stats: s.stats)
        case .logRxData(let l): return .logRxData(snrQuarterDb: l.snrQuarterDb, rssi: l.rssi, packet: Array(l.packet))
        case .traceData(let t):
            return .trace(tag: t.tag, authCode: t.authCode, flags: t.flags, pathHashes: Array(t.pathHashes),
                          pathSNRs: t.pathSNRs.map { Int8(bitPattern: $0) }, finalSNRQuarterDb: t.finalSNRQuarterDb)
        case .newAdvert(let c): return .newAdvert(c.contact)
        case .telemetryResponse(let t): return .telemetry(prefix: t.prefix, lpp: Array(t.lppBytes))
        case .binaryResponse(let r): return .binary(tag: r.tag, data: Array(r.data))
        case .pathDiscoveryResponse(let p):
            return .pathDiscovery(prefix: p.prefix, outPathLength: p.outPathLength, outPath: Array(p.outPath),
                                  inPathLength: p.inPathLength, inPath: Array(p.inPath))
        case .controlData(let c):
            return .controlData(snrQuarterDb: c.snrQuarterDb, rssi: c.rssi, pathLength: c.pathLength, payload: Array(c.payload))
        case .contactDeleted(let k): return .contactDeleted(k)
        case .contactsFull: return .contactsFull
        default: return .other
        }
    }
}
