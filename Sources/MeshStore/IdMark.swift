import Glibc

// Message ids never go backwards, even when the message log is lost or cut short: delivery cursors
// (the hook's, `sync`'s) remember ids, and a reused id would be skipped by them or mistaken for an
// old message. The `ids` state file holds a ceiling: every id issued so far is below it. It is
// raised in steps of `idBlock` before ids past it are issued (one small atomic write per block,
// not per message), and set to the exact next id on close, so a clean restart continues without
// a gap and a crash costs at most one block of unused ids.
extension RadioStore {
    static let idBlock: UInt64 = 256

    /// Opening: the next id is the highest of what the log says, the ceiling, and one past every
    /// stored cursor.
    func restoreIdMark() throws {
        guard !readOnly else { return }
        var floor: UInt64 = 0
        if let p = try readState("ids"), p.count == 8 { floor = p.withUnsafeBytes { $0.u64(0) } }
        if let d = opendir(directory) {
            while let e = readdir(d) {
                let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                guard name.hasPrefix("cursor-"), let p = try? readState(name), p.count == 8 else { continue }
                floor = max(floor, p.withUnsafeBytes { $0.u64(0) } &+ 1)
            }
            closedir(d)
        }
        if floor > log.nextId {
            log.report.idsRaised = floor - log.nextId
            log.nextId = floor
        }
        idCeiling = floor
    }

    /// Before `count` new ids are issued: raises the ceiling past them if needed. A failure is not
    /// fatal (the log itself is still in order); the next append tries again.
    func reserveIds(_ count: Int) {
        guard !readOnly, log.nextId &+ UInt64(count) > idCeiling else { return }
        let ceiling = log.nextId &+ UInt64(count) &+ Self.idBlock
        if (try? writeIdMark(ceiling)) != nil { idCeiling = ceiling }
    }

    func writeIdMark(_ value: UInt64) throws {
        var p: [UInt8] = []
        p.putU64(value)
        try writeState("ids", p, mode: 0o600)
    }

    /// Makes the next id at least `minimum` (the daemon passes one past its hook cursor and markers).
    public func ensureNextId(atLeast minimum: UInt64) {
        guard !readOnly, minimum > log.nextId else { return }
        log.report.idsRaised += minimum - log.nextId
        log.nextId = minimum
        reserveIds(0)
    }
}
