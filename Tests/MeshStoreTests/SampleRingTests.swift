import Glibc
import MeshCompanion
import Testing
@testable import MeshStore

/// The daemon's signal and battery sample files: their bytes, the ring's bound and wrap-around,
/// and what a damaged file does (it is started anew, or its damaged records skipped; the message
/// store beside it is untouched).
@Suite struct SampleRingTests {
    func hex(_ b: [UInt8]) -> String { HexCodec.encode(b) }

    @Test func headerAndRecordsByteForByte() {
        // Vectors from Python's struct and zlib.crc32.
        #expect(hex(SampleRing.header(kind: .signal, capacity: 4096)) == "504d53520101180000100000000000000000000015ddc5ac")
        #expect(hex(SampleRing.header(kind: .battery, capacity: 2048)) == "504d535201021800000800000000000000000000e2928da9")
        // A flood advert heard over one hop (hash AB): SNR -5.25 dB, RSSI -97 dBm.
        let s = SignalSample(time: 1_764_000_000, packet: [0x11, 0x01, 0xAB, 0x55, 0x66], snrQuarterDb: -21, rssi: -97)
        #expect(s == SignalSample(time: 1_764_000_000, kind: .packet, snrQuarterDb: -21, rssi: -97, header: 0x11, pathLength: 1, from: [0xAB]))
        #expect(hex(SampleRing.record(sequence: 5, time: 1_764_000_000, body: s.body)) == "0500000000812469ebff9fff01110101ab000000225f0bb5")
        let b = BatterySample(time: 1_764_000_300, millivolts: 4012, usedKB: 120, totalKB: 1024)
        #expect(hex(SampleRing.record(sequence: 1, time: 1_764_000_300, body: b.body)) == "010000002c822469ac0f01007800000000040000b92a7a18")
        // And back.
        #expect(SignalSample(SampleRecord(sequence: 5, time: 1_764_000_000, body: s.body)) == s)
        #expect(BatterySample(SampleRecord(sequence: 1, time: 1_764_000_300, body: b.body)) == b)
        let noStorage = BatterySample(time: 7, millivolts: 3900)
        #expect(hex(noStorage.body) == "3c0f0000" + String(repeating: "0", count: 16))
        #expect(BatterySample(SampleRecord(sequence: 1, time: 7, body: noStorage.body)) == noStorage)
        // A message's SNR has no RSSI: -32768 stands for none.
        let m = SignalSample(time: 9, kind: .message, snrQuarterDb: 30, pathLength: 0xFF, from: [1, 2, 3, 4, 5, 6])
        #expect(hex(m.body) == "1e0000800200ff0401020304")
        #expect(SignalSample(SampleRecord(sequence: 1, time: 9, body: m.body)) == m)
    }

    @Test func packetsNameTheHopTheyCameFrom() {
        // Transport flood (route 0): four bytes of transport codes before the path length; two
        // 2-byte hashes (0x42), the last one is the hop heard.
        let t = SignalSample(time: 1, packet: [0x08, 1, 2, 3, 4, 0x42, 0xAA, 0xBB, 0xCC, 0xDD, 0x99], snrQuarterDb: 4, rssi: -50)
        #expect(t.pathLength == 0x42 && t.from == [0xCC, 0xDD])
        // An advert heard straight from its node: its key prefix.
        let a = SignalSample(time: 1, packet: [0x11, 0x00, 0x7F, 0x01, 0xDB, 0x1B, 0x1A], snrQuarterDb: 4, rssi: -50)
        #expect(a.from == [0x7F, 0x01, 0xDB, 0x1B])
        // A direct packet's path is the route ahead, not who sent it; a path longer than the packet is not read.
        #expect(SignalSample(time: 1, packet: [0x0A, 0x02, 0xAB, 0xCD, 0x11], snrQuarterDb: 0, rssi: 0).from.isEmpty)
        let cut = SignalSample(time: 1, packet: [0x05, 0x05, 0x01], snrQuarterDb: 0, rssi: 0)
        #expect(cut.from.isEmpty && cut.pathLength == 0xFF && cut.header == 0x05)
        #expect(SignalSample(time: 1, packet: [], snrQuarterDb: 0, rssi: 0).header == 0)
    }

    @Test func theRingWrapsWithinItsBound() throws {
        let dir = TempDir()
        mkdir(dir.path, 0o700)
        let ring = try SampleRing(directory: dir.path, kind: .battery, capacity: 8)
        for i in 1...20 { try ring.append(time: UInt32(1000 + i), body: BatterySample(time: 0, millivolts: UInt16(3000 + i)).body) }
        let all = try ring.records()
        #expect(all.map(\.sequence) == Array(13...20))
        #expect(all.map(\.time) == (13...20).map { UInt32(1000 + $0) })
        #expect(fileSize(dir.path + "/battery") == 24 + 8 * 24)
        #expect(try ring.records(since: 1018).map(\.sequence) == [18, 19, 20])
        #expect(try ring.records(limit: 2).map(\.sequence) == [19, 20])
        #expect(try ring.records(since: 1014, limit: 3).map(\.sequence) == [18, 19, 20])
        ring.close()

        // Reopened: it goes on from the newest, over the oldest.
        let again = try SampleRing(directory: dir.path, kind: .battery, capacity: 8)
        #expect(again.nextSequence == 21 && again.problem == nil)
        try again.append(time: 2000, body: BatterySample(time: 0, millivolts: 1).body)
        #expect(try again.records().map(\.sequence) == Array(14...21))
        #expect(fileSize(dir.path + "/battery") == 24 + 8 * 24)
        // Read-only, as a command reads it beside the daemon.
        let reader = try SampleRing(directory: dir.path, kind: .battery, capacity: 8, readOnly: true)
        #expect(try reader.records().last.flatMap(BatterySample.init)?.millivolts == 1)
        #expect(throws: StoreError.readOnly) { try reader.append(time: 1, body: []) }
        // A folder without the file: an empty ring, nothing made.
        let none = try SampleRing(directory: dir.path, kind: .signal, readOnly: true)
        #expect(try none.records().isEmpty && fileSize(dir.path + "/signal") == -1)
    }

    @Test func aDamagedHeaderStartsTheFileAnew() throws {
        let dir = TempDir()
        mkdir(dir.path, 0o700)
        let path = dir.path + "/signal"
        do {
            let ring = try SampleRing(directory: dir.path, kind: .signal)
            for i in 1...5 { try ring.append(time: UInt32(i), body: SignalSample(time: 0, kind: .raw, snrQuarterDb: 1).body) }
        }
        var bytes = readBytes(path)
        bytes[9] ^= 0x01  // the capacity's bits: the header's CRC fails
        writeBytes(path, bytes)
        // A reader says what is wrong and changes nothing.
        #expect(throws: StoreError.corrupt(path: path, detail: "its header is damaged (checksum)")) {
            _ = try SampleRing(directory: dir.path, kind: .signal, readOnly: true)
        }
        #expect(readBytes(path) == bytes)
        // The writer starts it anew and says so.
        let ring = try SampleRing(directory: dir.path, kind: .signal)
        #expect(ring.problem == "\(path): its header is damaged (checksum); started anew (the samples in it are lost, nothing else)")
        #expect(try ring.records().isEmpty && ring.nextSequence == 1)
        #expect(readBytes(path) == SampleRing.header(kind: .signal, capacity: 4096))
        ring.close()

        // Not a sample file at all, one cut short, or one of another capacity: the same.
        for (content, why) in [(Array("hello world, not samples".utf8), "it is not a sample file (no PMSR header)"),
                               (Array(SampleRing.header(kind: .signal, capacity: 4096).prefix(10)), "its header is cut short (10 of 24 bytes)"),
                               (SampleRing.header(kind: .signal, capacity: 8), "it holds 8 records, not 4096"),
                               (SampleRing.header(kind: .battery, capacity: 4096), "it holds another kind of samples (2)")] {
            writeBytes(path, content)
            let r = try SampleRing(directory: dir.path, kind: .signal)
            #expect(r.problem == "\(path): \(why); started anew (the samples in it are lost, nothing else)")
            #expect(readBytes(path) == SampleRing.header(kind: .signal, capacity: 4096))
        }
    }

    @Test func aDamagedOrTornRecordIsSkipped() throws {
        let dir = TempDir()
        mkdir(dir.path, 0o700)
        let path = dir.path + "/battery"
        do {
            let ring = try SampleRing(directory: dir.path, kind: .battery, capacity: 8)
            for i in 1...6 { try ring.append(time: UInt32(i), body: BatterySample(time: 0, millivolts: UInt16(i)).body) }
        }
        var bytes = readBytes(path)
        bytes[24 + 2 * 24 + 9] ^= 0x40  // record 3's millivolts
        writeBytes(path, bytes)
        var ring = try SampleRing(directory: dir.path, kind: .battery, capacity: 8)
        #expect(ring.damaged == 1 && ring.problem == nil)
        #expect(try ring.records().map(\.sequence) == [1, 2, 4, 5, 6])
        #expect(ring.nextSequence == 7)
        ring.close()

        // A write torn by a power cut: the last record cut short.
        truncateFile(path, 24 + 5 * 24 + 10)
        ring = try SampleRing(directory: dir.path, kind: .battery, capacity: 8)
        #expect(try ring.records().map(\.sequence) == [1, 2, 4, 5])
        #expect(ring.damaged == 2 && ring.nextSequence == 6)
        try ring.append(time: 60, body: BatterySample(time: 0, millivolts: 60).body)
        #expect(try ring.records().map(\.sequence) == [1, 2, 4, 5, 6])
        #expect(ring.damaged == 1)
    }

    @Test func aRecordOfAnEarlierLapIsNotTakenForANewOne() {
        // Capacity 4: sequence 5...8 fill the second lap, but the write of 6 was lost: its slot
        // still holds 2, which must not show up between 5 and 7, nor a record in the wrong slot.
        func rec(_ seq: UInt32) -> [UInt8] { SampleRing.record(sequence: seq, time: seq * 10, body: BatterySample(time: 0, millivolts: 1).body) }
        let file = rec(5) + rec(2) + rec(7) + rec(8)
        let s = SampleRing.scan(file, capacity: 4)
        #expect(s.records.map(\.sequence) == [5, 7, 8] && s.nextSequence == 9 && s.damaged == 0)
        let misplaced = SampleRing.scan(rec(2) + rec(1), capacity: 4)
        #expect(misplaced.records.isEmpty && misplaced.damaged == 2 && misplaced.nextSequence == 1)
        // Never-written slots (zeros) are neither samples nor damage.
        let sparse = SampleRing.scan(rec(1) + [UInt8](repeating: 0, count: 24) + rec(3), capacity: 4)
        #expect(sparse.records.map(\.sequence) == [1, 3] && sparse.damaged == 0)
    }

    @Test func theMessageStoreIsNotTouchedByADamagedSampleFile() throws {
        let dir = TempDir()
        let store = try RadioStore(directory: dir.radio)
        try store.append(incoming("kept"))
        store.close()
        writeBytes(dir.radio + "/signal", [UInt8](repeating: 0xEE, count: 100))
        let ring = try SampleRing(directory: dir.radio, kind: .signal)
        #expect(ring.problem != nil)
        ring.close()
        let again = try RadioStore(directory: dir.radio)
        #expect(try again.messages(after: 0, limit: 10).map(\.textString) == ["kept"])
        #expect(again.recovery.damage.isEmpty)
        again.close()
    }

    @Test func writesAreSyncedInBatches() throws {
        let dir = TempDir()
        mkdir(dir.path, 0o700)
        let ops = CountingSyncs()
        let ring = try SampleRing(directory: dir.path, kind: .signal, capacity: 256, fileOps: ops)
        let syncs = ops.syncs
        for i in 0..<(SampleRing.syncEvery - 1) { try ring.append(time: UInt32(i), body: []) }
        #expect(ops.syncs == syncs)
        try ring.append(time: 99, body: [])
        #expect(ops.syncs == syncs + 1)
        try ring.append(time: 100, body: [])
        ring.close()
        #expect(ops.syncs == syncs + 2)
    }
}

/// The system's file operations, counting syncs.
final class CountingSyncs: FileOps {
    let real = SystemFileOps()
    var syncs = 0
    func open(_ path: String, flags: Int32, mode: UInt32) throws(FileErrno) -> Int32 { try real.open(path, flags: flags, mode: mode) }
    func close(_ fd: Int32) { real.close(fd) }
    func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws(FileErrno) -> Int {
        try real.read(fd, into: buffer, at: offset)
    }
    func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws(FileErrno) { try real.write(fd, bytes, at: offset) }
    func sync(_ fd: Int32, dataOnly: Bool) throws(FileErrno) { syncs += 1; try real.sync(fd, dataOnly: dataOnly) }
    func truncate(_ fd: Int32, to length: UInt64) throws(FileErrno) { try real.truncate(fd, to: length) }
    func size(_ fd: Int32) throws(FileErrno) -> UInt64 { try real.size(fd) }
    func rename(_ from: String, _ to: String) throws(FileErrno) { try real.rename(from, to) }
    func unlink(_ path: String) throws(FileErrno) { try real.unlink(path) }
    func makeDirectory(_ path: String, mode: UInt32) throws(FileErrno) { try real.makeDirectory(path, mode: mode) }
    func setMode(_ fd: Int32, _ mode: UInt32) throws(FileErrno) { try real.setMode(fd, mode) }
    func lockExclusive(_ fd: Int32) throws(FileErrno) -> Bool { try real.lockExclusive(fd) }
    func exists(_ path: String) -> Bool { real.exists(path) }
}
