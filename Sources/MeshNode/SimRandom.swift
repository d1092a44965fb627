/// Deterministic pseudo-random numbers for the simulator: xoshiro256** seeded through splitmix64.
/// Every random choice in a simulated mesh comes from one of these, so a seed fixes a whole run.
public struct SimRandom: RandomNumberGenerator {
    private var s0: UInt64, s1: UInt64, s2: UInt64, s3: UInt64

    public init(seed: UInt64) {
        var x = seed
        func splitmix(_ x: inout UInt64) -> UInt64 {
            x &+= 0x9E37_79B9_7F4A_7C15
            var z = x
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        s0 = splitmix(&x); s1 = splitmix(&x); s2 = splitmix(&x); s3 = splitmix(&x)
    }

    @inline(__always) private static func rotl(_ x: UInt64, _ k: UInt64) -> UInt64 { (x << k) | (x >> (64 - k)) }

    public mutating func next() -> UInt64 {
        let result = SimRandom.rotl(s1 &* 5, 7) &* 9
        let t = s1 << 17
        s2 ^= s0; s3 ^= s1; s1 ^= s2; s0 ^= s3
        s2 ^= t
        s3 = SimRandom.rotl(s3, 45)
        return result
    }

    /// Uniform in 0..<bound (bound > 0), by Lemire's multiply-shift (tiny bias is irrelevant here).
    public mutating func below(_ bound: UInt64) -> UInt64 {
        if bound <= 1 { return 0 }
        return next().multipliedFullWidth(by: bound).high
    }

    /// Uniform in [lo, hi] inclusive.
    public mutating func between(_ lo: UInt64, _ hi: UInt64) -> UInt64 {
        hi <= lo ? lo : lo + below(hi - lo + 1)
    }

    /// Uniform in [0, 1).
    public mutating func unit() -> Double { Double(next() >> 11) * (1.0 / 9_007_199_254_740_992.0) }

    public mutating func fill(_ bytes: inout [UInt8]) {
        for i in bytes.indices { bytes[i] = UInt8(truncatingIfNeeded: next() >> 32) }
    }

    public mutating func bytes(_ n: Int) -> [UInt8] {
        var b = [UInt8](repeating: 0, count: n); fill(&b); return b
    }

    /// A fresh generator derived from this one (for a node or a subsystem), without disturbing
    /// the order of draws elsewhere when nodes are added.
    public mutating func fork() -> SimRandom { SimRandom(seed: next()) }
}
