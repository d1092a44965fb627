// store-bench [--messages N] [--dir DIR]   builds stores under DIR (default: a fresh directory in
//                                          /tmp, removed afterwards; a given DIR is kept) and prints
//                                          one line per measurement
// store-bench --open DIR/big               opens an existing store 20 times: time and RSS
import Glibc
import MeshStore

func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func rssKiB() -> Int {
    guard let f = fopen("/proc/self/status", "r") else { return -1 }
    defer { fclose(f) }
    var line = [CChar](repeating: 0, count: 256)
    while fgets(&line, 256, f) != nil {
        let s = String(cString: line)
        if s.hasPrefix("VmRSS:") { return Int(s.split(separator: " ").dropFirst().first ?? "") ?? -1 }
    }
    return -1
}

func fmt(_ v: Double, _ digits: Int = 2) -> String {
    var p = 1.0
    for _ in 0..<digits { p *= 10 }
    let r = (v * p).rounded() / p
    var s = "\(r)"
    if let dot = s.firstIndex(of: "."), s.distance(from: dot, to: s.endIndex) - 1 < digits {
        s += String(repeating: "0", count: digits - s.distance(from: dot, to: s.endIndex) + 1)
    }
    return s
}

func removeTree(_ path: String) {
    if let d = opendir(path) {
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name == "." || name == ".." { continue }
            let child = path + "/" + name
            if e.pointee.d_type == UInt8(DT_DIR) { removeTree(child) } else { unlink(child) }
        }
        closedir(d)
        rmdir(path)
    }
}

var total = 1_000_000
var base: String? = nil
var args = CommandLine.arguments.dropFirst().makeIterator()
while let a = args.next() {
    switch a {
    case "--messages": total = Int(args.next() ?? "") ?? total
    case "--dir": base = args.next()
    case "--open":
        // Only open an existing store, repeatedly (for profiling).
        let dir = args.next() ?? "."
        var ts: [Double] = []
        let rss0 = rssKiB()
        for k in 0..<20 {
            let t0 = now()
            let s = try! RadioStore(directory: dir, options: StoreOptions(logCapBytes: 1 << 30))
            ts.append(now() - t0)
            if k == 0 {
                _ = try! s.history(try! s.conversations()[0].thread, limit: 50)
                print("\(s.messageCount) messages; RSS \(rss0) KiB before opening, \(rssKiB()) KiB with the store open")
            }
            s.close()
        }
        print("open: min \(fmt(ts.min()! * 1e3)) ms, median \(fmt(median(ts) * 1e3)) ms")
        exit(0)
    default: print("usage: store-bench [--messages N] [--dir DIR]"); exit(2)
    }
}
let root: String = base ?? {
    var t = Array("/tmp/pocketmesh-bench-XXXXXX".utf8CString)
    return String(cString: t.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }!)
}()
defer { if base == nil { removeTree(root) } }

var rng = SystemRandomNumberGenerator()
let peers: [KeyPrefix] = (0..<300).map { _ in KeyPrefix(raw: rng.next()) }
func randomMessage(_ i: Int) -> StoredMessage {
    let r = Int.random(in: 0..<10, using: &rng)
    let text = Array("message \(i): the quick brown fox jumps over the lazy dog".utf8)
    if r < 3 {
        return StoredMessage(kind: .channel, direction: .incoming, channelIndex: UInt8(r), senderTimestamp: UInt32(i),
                             receivedAt: UInt32(i), pathLength: 2, snr: 20, text: Array("someone: ".utf8) + text)
    }
    return StoredMessage(kind: .direct, direction: r == 9 ? .outgoing : .incoming, peer: peers.randomElement(using: &rng)!,
                         senderTimestamp: UInt32(i), receivedAt: UInt32(i), pathLength: 1, snr: 24, text: text)
}

func median(_ xs: [Double]) -> Double { let s = xs.sorted(); return s[s.count / 2] }

do {
    // 1. Durable appends: one message per write + fdatasync, as the daemon stores each message before
    //    asking the radio for the next one.
    do {
        let dir = root + "/appends"
        let s = try RadioStore(directory: dir)
        let n = 2000
        let t0 = now()
        for i in 0..<n { try s.append(randomMessage(i)) }
        let dt = now() - t0
        print("durable appends (write + fdatasync each): \(n) in \(fmt(dt, 3)) s = \(Int(Double(n) / dt))/s, \(fmt(dt / Double(n) * 1e3, 3)) ms each")
        let batch = (0..<100).map { randomMessage(n + $0) }
        let rounds = 100
        let t1 = now()
        for r in 0..<rounds {
            try s.append(batch.enumerated().map { var m = $0.element; m.senderTimestamp = UInt32(10_000 + r * 100 + $0.offset); return m })
        }
        let dt1 = now() - t1
        print("durable batch appends (100 per fdatasync): \(Int(Double(rounds * 100) / dt1)) messages/s")
        s.close()
        removeTree(dir)
    }

    // 2. A store of `total` messages over 300 contacts and 3 channels (cap raised so nothing rotates).
    let dir = root + "/big"
    let opts = StoreOptions(logCapBytes: 1 << 30)
    do {
        let s = try RadioStore(directory: dir, options: opts)
        let t0 = now()
        var i = 0
        while i < total {
            let k = min(1000, total - i)
            try s.append((0..<k).map { randomMessage(i + $0) })
            i += k
        }
        s.close()
        print("built \(total) messages in \(fmt(now() - t0, 1)) s (batches of 1000)")
    }
    var st = stat()
    stat(dir + "/messages.log", &st)
    let logMB = Double(st.st_size) / 1048576
    stat(dir + "/index", &st)
    print("log \(fmt(logMB, 1)) MiB, index \(fmt(Double(st.st_size) / 1048576, 1)) MiB")

    // 3. Opening (warm page cache): the index checkpoint plus a tail scan.
    var times: [Double] = []
    for _ in 0..<11 {
        let t0 = now()
        let s = try RadioStore(directory: dir, options: opts)
        times.append(now() - t0)
        precondition(s.messageCount == total && !s.recovery.fullScan)
        s.close()
    }
    print("open \(total)-message store (checkpoint, warm cache): median \(fmt(median(times) * 1e3)) ms, min \(fmt(times.min()! * 1e3)) ms")

    // 4. Latest 50 of a thread, and a page further back.
    let s = try RadioStore(directory: dir, options: opts)
    let threads = try s.conversations().map(\.thread)
    var lat: [Double] = []
    for k in 0..<2000 {
        let t = threads[k % threads.count]
        let t0 = now()
        let page = try s.history(t, limit: 50)
        lat.append(now() - t0)
        precondition(page.count == 50)
    }
    lat.sort()
    print("latest 50 of a thread: median \(fmt(lat[lat.count / 2] * 1e6, 1)) µs, p99 \(fmt(lat[lat.count * 99 / 100] * 1e6, 1)) µs (\(threads.count) threads)")
    var older: [Double] = []
    for k in 0..<500 {
        let t = threads[k % threads.count]
        let first = try s.history(t, limit: 50).first!.id
        let t0 = now()
        _ = try s.history(t, limit: 50, before: first)
        older.append(now() - t0)
    }
    print("next 50 back (--before): median \(fmt(median(older) * 1e6, 1)) µs")
    let t0 = now()
    let convs = try s.conversations()
    print("conversations (\(convs.count)): \(fmt((now() - t0) * 1e3, 2)) ms")
    s.close()

    // 5. Opening after a crash: the worst tail the checkpoint policy leaves (1/32 of the store).
    do {
        let tail = max(4096, total / 32)
        let s = try RadioStore(directory: dir, options: StoreOptions(logCapBytes: 1 << 30, checkpointEvery: 1 << 30))
        let idx = try readAll(dir + "/index")
        var i = 0
        while i < tail { try s.append((0..<1000).map { randomMessage(total + i + $0) }); i += 1000 }
        s.close()
        try writeAll(dir + "/index", idx) // as if the process had been killed before its checkpoint
        var ts: [Double] = []
        for _ in 0..<5 {
            try writeAll(dir + "/index", idx)
            let t0 = now()
            let r = try RadioStore(directory: dir, options: StoreOptions(logCapBytes: 1 << 30, checkpointEvery: 1 << 30))
            ts.append(now() - t0)
            precondition(r.recovery.scannedRecords == i)
            r.close()
        }
        print("open after a crash with \(i) records past the checkpoint: median \(fmt(median(ts) * 1e3)) ms")
    }

    // 6. Opening without an index: a full scan with every CRC checked.
    var full: [Double] = []
    for _ in 0..<3 {
        unlink(dir + "/index")
        let t0 = now()
        let r = try RadioStore(directory: dir, options: StoreOptions(logCapBytes: 1 << 30, checkpointEvery: 1 << 30))
        full.append(now() - t0)
        precondition(r.recovery.fullScan)
        r.close()
    }
    print("open without index (full scan + index rewrite): median \(fmt(median(full) * 1e3)) ms")
} catch {
    print("store-bench: \(error)")
    exit(1)
}

func readAll(_ path: String) throws -> [UInt8] {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { throw StoreError.io(operation: "open", path: path, errno: FileErrno(errno)) }
    defer { close(fd) }
    var st = stat()
    fstat(fd, &st)
    var b = [UInt8](repeating: 0, count: Int(st.st_size))
    let n = b.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    precondition(n == b.count)
    return b
}

func writeAll(_ path: String, _ b: [UInt8]) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    guard fd >= 0 else { throw StoreError.io(operation: "open", path: path, errno: FileErrno(errno)) }
    defer { close(fd) }
    let n = b.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    precondition(n == b.count)
}
