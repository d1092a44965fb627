import Glibc
import Testing
@testable import MeshNode
@testable import MeshSim

/// Facts the simulator's documentation (docs/simulator.md, moved there from the README) states,
/// checked against the simulator.
@Suite struct ReadmeFactsTests {
    func readme() throws -> String {
        let path = String(#filePath.split(separator: "/").dropLast(3).joined(separator: "/"))
        let f = try #require(fopen("/" + path + "/docs/simulator.md", "r"))
        defer { fclose(f) }
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = fread(&buf, 1, buf.count, f)
            if n <= 0 { break }
            out += buf[0..<n]
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The volatile clock's boot time in the topology table is the simulator's.
    @Test func volatileClockBootTime() throws {
        let t = Int(SimNode.volatileClockStart)
        let secs = t % 86400
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let hms = "\(two(secs / 3600)):\(two(secs / 60 % 60)):\(two(secs % 60))"
        #expect(t / 86400 == 19858, "15 May 2024")
        #expect(try readme().contains("(15 May 2024 \(hms) UTC)"), "docs/simulator.md gives another time than \(hms)")
    }
}
