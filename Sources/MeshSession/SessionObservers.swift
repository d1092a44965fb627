/// Handlers of session events that operations add for a while (`OperationPort.observe`: discovery
/// answers, heard repeats), called after the shell's own handling, in the order they were added.
public struct SessionObservers {
    var handlers: [(token: Int, handler: (SessionEvent) -> Void)] = []
    var last = 0

    public init() {}

    /// Adds a handler; the token removes it.
    public mutating func add(_ handler: @escaping (SessionEvent) -> Void) -> Int {
        last += 1
        handlers.append((last, handler))
        return last
    }

    public mutating func remove(_ token: Int) {
        handlers.removeAll { $0.token == token }
    }

    public mutating func removeAll() { handlers.removeAll() }

    public func notify(_ e: SessionEvent) {
        for h in handlers { h.handler(e) }
    }
}
