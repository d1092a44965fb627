/// The firmware's 160-entry ring of recently seen packet hashes (`SimpleMeshTables`).
public struct SeenTable {
    public static let capacity = 160
    private var hashes = [UInt64](repeating: 0, count: SeenTable.capacity)
    private var used = [Bool](repeating: false, count: SeenTable.capacity)
    private var next = 0

    public init() {}

    public func contains(_ h: UInt64) -> Bool {
        for i in 0..<SeenTable.capacity where used[i] && hashes[i] == h { return true }
        return false
    }

    public mutating func insert(_ h: UInt64) {
        hashes[next] = h; used[next] = true
        next = (next + 1) % SeenTable.capacity
    }

    /// Marks `h` seen and returns whether it was already there (`hasSeen` in the firmware).
    public mutating func checkAndInsert(_ h: UInt64) -> Bool {
        if contains(h) { return true }
        insert(h); return false
    }

    public mutating func removeAll() {
        for i in 0..<SeenTable.capacity { used[i] = false }
        next = 0
    }
}
