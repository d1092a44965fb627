import Glibc

// Message ids never go backwards, even when the message log is lost or cut short: delivery cursors
// (the hook's, `sync`'s) remember ids, and a reused id would be skipped by them or mistaken for an
// old message. The `ids` state file holds a ceiling: every id issued so far is below it. It is
// raised in steps of `idBlock` before ids past it are issued (one small atomic write per block,
// not per message), and set to the exact next id on close, so a clean restart continues without
// a gap and a crash costs at most one block of unused ids.
extension RadioStore {
    static let idBlock: UInt64 = 256

    /// The largest id the store ever issues: 2^53 - 1, exact as a JSON number (and as a double),
    /// more than a message a microsecond for 285 years. An `ids` file past it is damaged.
    public static let maxId: UInt64 = (1 << 53) - 1

    /// How far past the ceiling a cursor may be (ids issued while the ceiling could not be
    /// written, e.g. on a full disk: the log holds them, but it may be lost later).
    static let ceilingSlack: UInt64 = 16 * idBlock

    /// Opening: the next id is the highest of what the log says, the ceiling, and one past every
    /// stored cursor. Every value read is checked: an id the store cannot have issued (past the
    /// ceiling, or past `maxId` when there is none) is an error naming the file, never a wrap.
    func restoreIdMark() throws {
        guard !readOnly else { return }
        var floor: UInt64 = 0
        var fromFile: UInt64? = nil
        if let p = try readState("ids"), p.count == 8 {
            let v = p.withUnsafeBytes { $0.u64(0) }
            // The ceiling is one past the ids issued: after the last id it is `maxId + 1`.
            guard v <= Self.maxId + 1 else { throw StoreError.outOfRange(path: directory + "/ids", value: v, limit: Self.maxId + 2) }
            floor = v
            fromFile = v
        }
        idLimit = fromFile.map { min(max($0, log.nextId) + Self.ceilingSlack, Self.maxId + 1) } ?? Self.maxId + 1
        if let d = opendir(directory) {
            defer { closedir(d) }
            while let e = readdir(d) {
                let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                guard name.hasPrefix("cursor-"), let p = try? readState(name), p.count == 8 else { continue }
                let v = p.withUnsafeBytes { $0.u64(0) }
                try checkStoredId(v, file: directory + "/" + name)
                floor = max(floor, v + 1)
            }
        }
        if floor > log.nextId {
            log.report.idsRaised = floor - log.nextId
            log.nextId = floor
        }
        idCeiling = floor
    }

    /// Checks an id read from a file of the store (a delivery cursor, a hook's marker): ids are
    /// below `idLimit`; anything else is damage, reported with the file's path.
    public func checkStoredId(_ value: UInt64, file: String) throws {
        guard value < idLimit else { throw StoreError.outOfRange(path: file, value: value, limit: idLimit) }
    }

    /// Before `count` new ids are issued: raises the ceiling past them if needed. A failure is not
    /// fatal (the log itself is still in order); the next append tries again.
    func reserveIds(_ count: Int) {
        guard !readOnly, log.nextId &+ UInt64(count) > idCeiling else { return }
        let ceiling = min(log.nextId &+ UInt64(count) &+ Self.idBlock, Self.maxId + 1)
        if (try? writeIdMark(ceiling)) != nil { idCeiling = ceiling }
    }

    func writeIdMark(_ value: UInt64) throws {
        var p: [UInt8] = []
        p.putU64(value)
        try writeState("ids", p, mode: 0o600)
    }

    /// Makes the next id at least `minimum` (the daemon passes one past its hook cursor and markers).
    public func ensureNextId(atLeast minimum: UInt64) {
        guard !readOnly, minimum > log.nextId, minimum <= Self.maxId + 1 else { return }
        log.report.idsRaised += minimum - log.nextId
        log.nextId = minimum
        reserveIds(0)
    }
}
