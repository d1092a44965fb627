import MeshSession

/// Runs operations on the thread of the poll loop that owns the radio. An operation is an
/// `async` function over an `OperationPort`: the compiler turns it into a state machine whose
/// steps end where it waits for a reply. Those steps are jobs, and this executor keeps them in a
/// list until the shell calls `runReady` (after it handed the port the session's events). So
/// there is one thread, no Swift concurrency thread pool, and no step ever runs while the shell
/// is in the middle of something else.
public final class OperationJobs: TaskExecutor, @unchecked Sendable {
    var ready: [UnownedJob] = []
    var running = false
    /// Operations started and not yet ended.
    public private(set) var active = 0

    public init() {}

    public func enqueue(_ job: consuming ExecutorJob) {
        ready.append(UnownedJob(job))
    }

    public var hasReady: Bool { !ready.isEmpty }

    /// Runs every step that is ready, and the steps those make ready; true if any ran. A call from
    /// inside a step (the shell's pump, reached through the port) returns at once: the outer call
    /// runs what the inner one would have.
    @discardableResult
    public func runReady() -> Bool {
        guard !running else { return false }
        running = true
        defer { running = false }
        var any = false
        while !ready.isEmpty {
            let batch = ready
            ready.removeAll(keepingCapacity: true)
            for job in batch { job.runSynchronously(on: asUnownedTaskExecutor()) }
            any = true
        }
        return any
    }

    /// Starts an operation. Its first step runs at the next `runReady`; `done` is called when it
    /// ends, from inside `runReady`.
    public func start<T>(_ body: @escaping () async throws(ClientError) -> T, done: @escaping (Result<T, ClientError>) -> Void) {
        active += 1
        Task(executorPreference: self) {
            let result: Result<T, ClientError>
            do throws(ClientError) { result = .success(try await body()) } catch { result = .failure(error) }
            self.active -= 1
            done(result)
        }
    }

    /// Runs an operation to its end before returning: for shells whose port never suspends (the
    /// command line's `Radio` spins its own loop inside each wait).
    @available(*, noasync, message: "an operation's steps wait through its port, not to the end")
    public static func runToEnd<T>(_ body: @escaping () async throws(ClientError) -> T) throws(ClientError) -> T {
        let jobs = OperationJobs()
        let box = ResultBox<T>()
        jobs.start(body) { box.result = $0 }
        while box.result == nil, jobs.runReady() {}
        guard let r = box.result else {
            throw ClientError(.internal, "the operation waited for something its link cannot give; this is a bug.")
        }
        return try r.get()
    }
}

final class ResultBox<T> {
    var result: Result<T, ClientError>? = nil
}
