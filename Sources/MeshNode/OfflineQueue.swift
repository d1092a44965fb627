/// The companion's queue of received messages waiting for `SYNC_NEXT_MESSAGE` (`offline_queue`).
///
/// Frames are stored already formatted. When full, the oldest channel item (0x08, 0x11, 0x1B) is
/// evicted to make room; if there is none, the new frame is dropped (the caller still pushes
/// MSG_WAITING, as the firmware does).
public struct OfflineQueue {
    public let capacity: Int
    public private(set) var frames: [[UInt8]] = []
    /// Frames dropped because the queue was full of direct messages.
    public private(set) var dropped = 0
    /// Channel frames evicted to make room.
    public private(set) var evicted = 0

    public init(capacity: Int = 16) { self.capacity = max(1, capacity) }

    static func isChannelFrame(_ f: [UInt8]) -> Bool {
        guard let c = f.first else { return false }
        return c == 0x08 || c == 0x11 || c == 0x1B
    }

    /// Adds a frame; returns false if it was dropped.
    @discardableResult
    public mutating func append(_ frame: [UInt8]) -> Bool {
        if frames.count >= capacity {
            guard let i = frames.firstIndex(where: OfflineQueue.isChannelFrame) else { dropped += 1; return false }
            frames.remove(at: i); evicted += 1
        }
        frames.append(frame)
        return true
    }

    public mutating func popFirst() -> [UInt8]? { frames.isEmpty ? nil : frames.removeFirst() }

    public var count: Int { frames.count }
    public var isEmpty: Bool { frames.isEmpty }
    public mutating func removeAll() { frames.removeAll() }
}
