// libFuzzer target over the serial/TCP framing decoder and both frame decoders.
// Built together with the MeshCompanion sources by fuzz/run.sh.

/// Reads every accessor of a decoded radio → app frame, so that each offset is exercised.
@inline(never) func exercise(_ f: CompanionFrame) -> Int {
    var n = Int(f.code)
    switch f {
    case .contact(let r), .newAdvert(let r):
        n &+= r.name.utf8.count &+ r.outPath.count &+ Int(r.latitude) &+ Int(r.lastModified ?? 0)
        n &+= r.contact.name.utf8.count
    case .selfInfo(let s): n &+= s.name.utf8.count &+ Int(s.radio.frequencyKHz) &+ Int(s.publicKey[31])
    case .deviceInfo(let d):
        n &+= (d.model?.utf8.count ?? 0) &+ (d.version?.utf8.count ?? 0) &+ (d.buildDate?.utf8.count ?? 0)
        n &+= Int(d.pathHashMode ?? 0) &+ (d.maxContacts ?? 0) &+ Int(d.blePin ?? 0)
    case .contactMessage(let m):
        n &+= m.text.utf8.count &+ Int(m.authorPrefix?.count ?? 0) &+ Int(m.senderTimestamp) &+ m.pathLength.byteCount
    case .channelMessage(let m): n &+= m.text.utf8.count &+ (m.sender?.utf8.count ?? 0) &+ m.message.utf8.count
    case .channelInfo(let c): n &+= c.name.utf8.count &+ (c.isEmpty ? 1 : 0)
    case .channelData(let c): n &+= c.data.count &+ Int(c.dataType)
    case .advertPath(let a): n &+= a.path.count
    case .allowedRepeatFrequencies(let r): for x in r { n &+= Int(x.lowerBound) }
    case .defaultFloodScope(let s): n &+= (s?.name.utf8.count ?? 0) &+ (s?.key.count ?? 0)
    case .cliReply(let t): n &+= t.count
    case .rawData(let r): n &+= r.payload.count
    case .statusResponse(let s): n &+= Int(s.stats?.uptimeSeconds ?? 0) &+ s.statsBytes.count
    case .logRxData(let l): n &+= l.packet.count
    case .traceData(let t): n &+= t.pathHashes.count &+ t.pathSNRs.count &+ Int(t.finalSNRQuarterDb)
    case .telemetryResponse(let t):
        var r = t.lpp
        while let x = try? r.next() { n &+= Int(x.channel) }
        n &+= r.remainder.count
    case .binaryResponse(let b): n &+= b.data.count
    case .pathDiscoveryResponse(let p): n &+= p.outPath.count &+ p.inPath.count
    case .controlData(let c): n &+= c.payload.count
    case .exportContact(let p), .privateKey(let p), .signature(let p), .customVars(let p): n &+= p.count
    case .unknown(let r): n &+= r.body.count
    default: break
    }
    return n
}

/// Reads every accessor of a decoded app → radio command.
@inline(never) func exercise(_ c: CompanionCommand) -> Int {
    var n = Int(c.code)
    switch c {
    case .sendTextMessage(let m): n &+= m.text.utf8.count &+ Int(m.recipientPrefix[5])
    case .sendChannelTextMessage(let m): n &+= m.text.utf8.count
    case .addUpdateContact(let r): n &+= r.contact.name.utf8.count &+ r.outPath.count
    case .sendChannelData(let d): n &+= d.path.count &+ d.payload.count &+ Int(d.dataType)
    case .sendLogin(let k), .sendBinaryRequest(let k), .sendAnonRequest(let k): n &+= k.data.count &+ k.text.utf8.count
    case .sendRawData(let r): n &+= r.path.count &+ r.payload.count &+ (r.encodedPath?.count ?? 0) &+ r.encodedPayload.count
    case .sendTracePath(let t): n &+= t.hashes.count &+ (t.isValid ? 1 : 0)
    case .setChannel(let s): n &+= s.name.utf8.count &+ s.secret.count
    case .setDefaultFloodScope(let s): n &+= (s?.name.utf8.count ?? 0) &+ (s?.key.count ?? 0)
    case .appStart(let b), .setAdvertName(let b), .importContact(let b), .importPrivateKey(let b), .signData(let b),
         .setCustomVar(let b), .sendControlData(let b), .runCLICommand(let b): n &+= b.count
    case .sendRawPacket(_, let p): n &+= p.count
    case .setFloodScopeKey(.key(let k)): n &+= k.count
    case .unknown(let r): n &+= r.body.count
    default: break
    }
    return n
}

var sink = 0

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size > 0 else { return 0 }
    let all = UnsafeRawBufferPointer(start: data, count: size)
    let mode = all[0]
    let input = UnsafeRawBufferPointer(rebasing: all[1...])

    // 1. The input as one frame payload, both directions.
    if let f = try? CompanionFrame.decode(input) { sink &+= exercise(f) }
    if let c = try? CompanionCommand.decode(input) { sink &+= exercise(c) }
    if let r = try? ContactRecord.decode(input) { sink &+= r.name.utf8.count }

    // 2. The input as a byte stream, split into reads by `mode`, on the side `mode` picks.
    let decoder = FrameDecoder(side: mode & 1 == 0 ? .client : .device)
    let chunk = Int(mode >> 1) + 1
    var offset = 0
    var frames = 0
    while offset < input.count {
        let n = min(chunk, input.count - offset)
        let piece = UnsafeRawBufferPointer(rebasing: input[offset ..< offset + n])
        decoder.receive(piece) { frame in
            precondition(frame.count >= 1 && frame.count <= CompanionLimits.maxFrameSize)
            frames += 1
            if decoder.side == .client {
                if let f = try? CompanionFrame.decode(frame) { sink &+= exercise(f) }
            } else {
                if let c = try? CompanionCommand.decode(frame) { sink &+= exercise(c) }
            }
            // Re-framing and decoding again must give the same payload.
            if let copy = try? EncodedFrame(copying: frame) {
                let again = FrameDecoder(side: decoder.side)
                var same = false
                copy.withWireBytes(decoder.side.inboundMarker) { wire in
                    again.receive(wire) { g in same = g.elementsEqual(frame) }
                }
                precondition(same)
            }
        }
        offset += n
    }
    precondition(decoder.bufferedCount <= FrameDecoder.capacity)
    sink &+= frames
    return 0
}
