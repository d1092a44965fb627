// Forward scan over framed records in a file region, with resynchronisation past damage.

struct ScanOutcome {
    /// End of the last valid record (where a torn tail starts, if any).
    var validEnd: UInt64
    /// Damaged stretches between valid records.
    var damage: [DamageReport] = []
    /// Bytes after the last valid record that form no valid record (a torn tail).
    var tornBytes: UInt64 = 0
    var records = 0
}

/// Scans `[start, end)` of `fd`, calling `onRecord(offset, payload)` for every record whose magic,
/// length and CRC check out. A bad stretch followed by a valid record is reported as damage; a bad
/// stretch that runs to `end` is a torn tail (`tornBytes`), which the caller may truncate.
func scanRecords(_ files: Files, fd: Int32, path: String, from start: UInt64, to end: UInt64, salt: UInt32,
                 onRecord: (UInt64, UnsafeRawBufferPointer) throws -> Void) throws -> ScanOutcome {
    var outcome = ScanOutcome(validEnd: start)
    guard start < end else { return outcome }
    let window = 1 << 18
    var buf = [UInt8](repeating: 0, count: window)
    var winStart = start
    var winLen = 0
    var pos = start
    var badFrom: UInt64? = nil
    let name = fileName(path)
    try buf.withUnsafeMutableBytes { b in
        func load(_ at: UInt64) throws {
            let n = Int(min(UInt64(window), end - at))
            winLen = try files.read(fd, path, into: UnsafeMutableRawBufferPointer(rebasing: b[0..<n]), at: at)
            winStart = at
        }
        try load(pos)
        while pos < end {
            var rel = Int(pos - winStart)
            if rel + Frame.headerSize + Frame.maxPayload > winLen && winStart + UInt64(winLen) < end {
                try load(pos)
                rel = 0
                if winLen == 0 { break } // the file shrank under us
            }
            let avail = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(b)[rel..<winLen])
            if case let .ok(len) = Frame.check(avail, salt: salt) {
                if let bf = badFrom {
                    outcome.damage.append(DamageReport(file: name, offset: bf, length: pos - bf,
                                                       detail: "bad magic, length or checksum"))
                    badFrom = nil
                }
                try onRecord(pos, UnsafeRawBufferPointer(rebasing: avail[Frame.headerSize ..< Frame.headerSize + len]))
                outcome.records += 1
                pos += UInt64(Frame.headerSize + len)
                outcome.validEnd = pos
            } else {
                if badFrom == nil { badFrom = pos }
                // Resynchronise: the next record starts with the magic's first byte, 0xFF.
                var i = 1
                while i < avail.count && avail[i] != 0xFF { i += 1 }
                pos += UInt64(i)
            }
        }
    }
    if let bf = badFrom { outcome.tornBytes = end - bf }
    return outcome
}

func fileName(_ path: String) -> String {
    guard let i = path.lastIndex(of: "/") else { return path }
    return String(path[path.index(after: i)...])
}
