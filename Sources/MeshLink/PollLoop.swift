import CMeshLink
import Glibc

/// What `poll()` reported for a descriptor, or what a registration asks for.
public struct PollEvents: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int16
    public init(rawValue: Int16) { self.rawValue = rawValue }

    public static let readable = PollEvents(rawValue: Int16(POLLIN))
    public static let writable = PollEvents(rawValue: Int16(POLLOUT))
    /// The peer hung up (POLLHUP, or POLLRDHUP for sockets). Always reported; need not be requested.
    public static let hangup = PollEvents(rawValue: Int16(POLLHUP))
    /// An error condition (POLLERR). Always reported.
    public static let error = PollEvents(rawValue: Int16(POLLERR))
    /// The descriptor is not open (POLLNVAL). Always reported.
    public static let invalid = PollEvents(rawValue: Int16(POLLNVAL))
    static let peerClosedWrite = PollEvents(rawValue: cml_pollrdhup())

    public var description: String {
        var names: [String] = []
        if contains(.readable) { names.append("readable") }
        if contains(.writable) { names.append("writable") }
        if contains(.hangup) || contains(.peerClosedWrite) { names.append("hangup") }
        if contains(.error) { names.append("error") }
        if contains(.invalid) { names.append("invalid") }
        return "[" + names.joined(separator: ",") + "]"
    }
}

/// One `poll()` loop over registered descriptors and parts (`PollPart`), with timers on the
/// monotonic clock and signals delivered through a self-pipe. One thread; handlers run inside `run`.
///
/// Handlers may register, unregister, add or cancel timers, add or remove parts and call `stop()`
/// freely.
public final class PollLoop {
    public typealias Handler = (PollEvents) -> Void

    /// Identifies a timer for `cancelTimer`.
    public struct TimerID: Hashable, Sendable {
        let rawValue: UInt64
    }

    /// Why `run` returned.
    public enum StopReason: Equatable, Sendable {
        /// `stop()` was called.
        case stopped
        /// The `until` deadline passed.
        case deadline
        /// A forwarded signal (SIGINT, SIGTERM) arrived.
        case signal(Int32)
        /// Nothing is registered, no timer is pending and no signal is handled: nothing can happen.
        case idle
    }

    private struct Registration {
        var token: UInt64
        var events: PollEvents
        var handler: Handler
        var link: ByteLink?
        var onLinkError: ((LinkError) -> Void)?
    }

    private struct Timer {
        var deadline: UInt64
        var id: UInt64
        var action: () -> Void
    }

    private var registrations: [Int32: Registration] = [:]
    private var timers: [Timer] = []   // sorted by deadline, then id
    private var nextToken: UInt64 = 1
    private var stopRequested: StopReason? = nil
    private var signalPipe: (read: FileDescriptor, write: FileDescriptor)? = nil
    private var forwardedSignals: [Int32] = []
    private var pollfds: [pollfd] = []
    private var tokens: [UInt64] = []
    private var parts: [PollPart] = []
    /// For each `pollfds` entry from `partsStart` on: the index in `polledParts` of its part.
    private var polledParts: [PollPart] = []
    private var partOf: [Int] = []
    private var partsStart = 0
    /// For each ready part entry (by index from `partsStart`): the file its descriptor named when
    /// `poll` returned (`FileIdentity`), checked again just before the part is told.
    private var readyFiles: [FileIdentity?] = []
    /// Token of a `pollfds` entry that belongs to a part.
    private static let partToken = UInt64.max
    /// Called with each forwarded signal instead of stopping `run` (nil: a signal stops it).
    public var onSignal: ((Int32) -> Void)? = nil

    /// Monotonic ms, refreshed before timers fire and after each `poll()` returns.
    public private(set) var now: UInt64

    /// How many times `poll()` has returned (a descriptor ready, a deadline, a signal): the
    /// loop's wake-ups, which an idle program keeps near zero (the daemon's `status` shows them).
    public private(set) var wakeups: UInt64 = 0

    public init() { now = monotonicMilliseconds() }

    deinit {
        restoreSignals()
    }

    // MARK: descriptors

    /// Calls `handler` with the reported events whenever `fd` is ready for `events`.
    /// Hangup, error and invalid are always reported. Replaces an earlier registration of `fd`.
    public func register(fd: Int32, events: PollEvents, handler: @escaping Handler) {
        registrations[fd] = Registration(token: takeToken(), events: events, handler: handler, link: nil, onLinkError: nil)
    }

    /// Changes the events a registered descriptor waits for.
    public func setEvents(fd: Int32, _ events: PollEvents) {
        registrations[fd]?.events = events
    }

    public func unregister(fd: Int32) {
        registrations[fd] = nil
    }

    public func isRegistered(fd: Int32) -> Bool { registrations[fd] != nil }

    /// Drives a link: reads whenever it is readable and hands each chunk (for `.datagram` links,
    /// each whole frame) to `onReceive`; flushes its out-buffer when writable; on EOF, hangup or
    /// any error calls `onError` once and detaches it (the caller closes the link). A link's own
    /// protocol deadline (`ByteLink.deadline`, e.g. an ATT request timeout) is checked as a timer.
    ///
    /// The chunk passed to `onReceive` is only valid during the call.
    public func attach(_ link: ByteLink, readBufferSize: Int = 4096,
                       onReceive: @escaping (UnsafeRawBufferPointer) -> Void,
                       onError: @escaping (LinkError) -> Void) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, readBufferSize), alignment: 8)
        let owner = BufferOwner(buffer)
        attach(link, reading: { l throws(LinkError) in
            let n = try l.read(into: owner.buffer)
            if n > 0 { onReceive(UnsafeRawBufferPointer(rebasing: owner.buffer[0..<n])) }
            return n
        }, onError: onError)
    }

    /// Like `attach(_:readBufferSize:onReceive:onError:)`, but `read` does the reading (at most 16
    /// times per wake-up, until it returns 0): a stream link's bytes can go straight into a frame
    /// decoder's ring (`FrameDecoder.receive(now:reading:_:)`), with no buffer in between.
    public func attach(_ link: ByteLink, reading read: @escaping (ByteLink) throws(LinkError) -> Int,
                       onError: @escaping (LinkError) -> Void) {
        let fd = link.fd
        let handler: Handler = { [unowned self] events in
            let token = self.registrations[fd]?.token
            do throws(LinkError) {
                if events.contains(.writable) { try link.flush() }
                if events.contains(.readable) {
                    // Bounded: at most 16 reads per wake-up, so one busy link cannot starve the rest.
                    for _ in 0..<16 {
                        let n = try read(link)
                        if self.registrations[fd]?.token != token { return }  // detached while reading
                        if n == 0 { break }
                    }
                } else if !events.isDisjoint(with: [.hangup, .error, .invalid, .peerClosedWrite]) {
                    throw link.hangupError()
                }
            } catch {
                if self.registrations[fd]?.token == token { self.registrations[fd] = nil }
                onError(error)
            }
        }
        registrations[fd] = Registration(token: takeToken(), events: .readable, handler: handler, link: link, onLinkError: onError)
    }

    /// Detaches a link attached with `attach` (does not close it).
    public func detach(_ link: ByteLink) {
        if let registration = registrations[link.fd], registration.link === link {
            registrations[link.fd] = nil
        }
    }

    private final class BufferOwner {
        let buffer: UnsafeMutableRawBufferPointer
        init(_ buffer: UnsafeMutableRawBufferPointer) { self.buffer = buffer }
        deinit { buffer.deallocate() }
    }

    // MARK: parts

    /// Runs `part` on this loop: its descriptors are polled with the rest, its readiness handler
    /// gets what `poll()` reports for them, and its `tick` runs on every turn of the loop, in the
    /// order the parts were added; the earliest deadline a part returns bounds the wait.
    public func add(_ part: PollPart) {
        if !parts.contains(where: { $0 === part }) { parts.append(part) }
    }

    public func remove(_ part: PollPart) {
        parts.removeAll { $0 === part }
    }

    /// The parts, in the order they run.
    public var allParts: [PollPart] { parts }

    // MARK: timers

    /// Runs `action` once, at or after monotonic ms `deadline`.
    @discardableResult
    public func addTimer(at deadline: UInt64, _ action: @escaping () -> Void) -> TimerID {
        let id = takeToken()
        let timer = Timer(deadline: deadline, id: id, action: action)
        let index = timers.firstIndex(where: { $0.deadline > deadline }) ?? timers.endIndex
        timers.insert(timer, at: index)
        return TimerID(rawValue: id)
    }

    /// Runs `action` once, `milliseconds` from now.
    @discardableResult
    public func addTimer(after milliseconds: UInt64, _ action: @escaping () -> Void) -> TimerID {
        addTimer(at: monotonicMilliseconds() &+ milliseconds, action)
    }

    public func cancelTimer(_ id: TimerID) {
        timers.removeAll { $0.id == id.rawValue }
    }

    /// The earliest pending timer deadline.
    public var nextTimerDeadline: UInt64? { timers.first?.deadline }

    // MARK: signals

    /// Makes `run` return `.signal(n)` when one of `signals` arrives (default SIGINT and SIGTERM),
    /// instead of the default action (terminate). `restoreSignals()` undoes it.
    public func handleSignals(_ signals: [Int32] = [SIGINT, SIGTERM]) throws(Errno) {
        if signalPipe == nil { signalPipe = try FileDescriptor.pipe() }
        guard let pipe = signalPipe else { return }
        for signo in signals where !forwardedSignals.contains(signo) {
            _ = try sys { cml_signal_forward(signo, pipe.write.rawValue) }
            forwardedSignals.append(signo)
        }
    }

    /// Restores the signal dispositions that were active before `handleSignals`.
    public func restoreSignals() {
        if let pipe = signalPipe {
            for signo in forwardedSignals { _ = cml_signal_restore(signo, pipe.write.rawValue) }
            cml_signal_unforward(pipe.write.rawValue)
            pipe.read.close()
            pipe.write.close()
            signalPipe = nil
        }
        forwardedSignals = []
    }

    // MARK: running

    /// Makes the current or next `run` return `.stopped` after the handler that called it.
    public func stop() {
        stopRequested = .stopped
    }

    /// Polls and dispatches until `stop()`, a handled signal, the monotonic `deadline`, or until
    /// nothing is left to wait for.
    @discardableResult
    public func run(until deadline: UInt64? = nil) -> StopReason {
        defer { stopRequested = nil }
        while true {
            if let reason = turn(until: deadline) { return reason }
        }
    }

    /// One turn of the loop: due timers, the parts' ticks, one `poll()` (waiting at most until
    /// `deadline`, or the earliest deadline of a timer, part or link) and the dispatch of what it
    /// reports. Returns why `run` would stop, or nil to go on. A stop request stays pending for
    /// the caller of `turn` (`run` clears it).
    public func turn(until deadline: UInt64? = nil) -> StopReason? {
        now = monotonicMilliseconds()
        fireDueTimers()
        if let reason = stopRequested { return reason }
        if let deadline, now >= deadline { return .deadline }
        if registrations.isEmpty && timers.isEmpty && forwardedSignals.isEmpty && parts.isEmpty { return .idle }
        checkLinkDeadlines()
        if let reason = stopRequested { return reason }
        var wake = deadline
        for part in parts {
            if let due = part.tick(now: now) { wake = min(wake ?? due, due) }
            if let reason = stopRequested { return reason }
        }
        if let first = timers.first?.deadline { wake = min(wake ?? first, first) }
        for registration in registrations.values {
            if let due = registration.link?.deadline { wake = min(wake ?? due, due) }
        }
        let timeout: Int32 = wake.map { Int32(clamping: $0 > now ? $0 - now : 0) } ?? -1
        pollOnce(timeout: timeout)
        return stopRequested
    }

    /// One `poll()` of at most `timeout` ms (-1 = no limit) and the dispatch of what it reports.
    /// Does not fire timers.
    public func pollOnce(timeout: Int32) {
        pollfds.removeAll(keepingCapacity: true)
        tokens.removeAll(keepingCapacity: true)
        if let pipe = signalPipe, !forwardedSignals.isEmpty {
            pollfds.append(pollfd(fd: pipe.read.rawValue, events: Int16(POLLIN), revents: 0))
            tokens.append(0)
        }
        for (fd, registration) in registrations {
            var events = registration.events
            if let link = registration.link, link.hasPendingOutput { events.insert(.writable) }
            events.insert(.peerClosedWrite)
            pollfds.append(pollfd(fd: fd, events: events.rawValue, revents: 0))
            tokens.append(registration.token)
        }
        partsStart = pollfds.count
        polledParts = parts
        partOf.removeAll(keepingCapacity: true)
        for (i, part) in polledParts.enumerated() {
            part.pollDescriptors(into: &pollfds)
            while tokens.count < pollfds.count {
                tokens.append(Self.partToken)
                partOf.append(i)
            }
        }
        let ready = pollfds.withUnsafeMutableBufferPointer { poll($0.baseAddress, nfds_t($0.count), timeout) }
        now = monotonicMilliseconds()
        wakeups &+= 1
        if ready <= 0 { return }  // timeout, or EINTR (a signal: the pipe says which)
        // A part looks its descriptors up by number. A handler earlier in this turn may close one
        // (a client that hung up) and accept a new client that gets the same number: the report
        // (a hangup, an error) was the old file's, and told to the part it would drop the new
        // client. So what each ready number names is noted now and compared before it is told.
        readyFiles.removeAll(keepingCapacity: true)
        for index in partsStart..<pollfds.count {
            readyFiles.append(pollfds[index].revents == 0 ? nil : FileIdentity(pollfds[index].fd))
        }
        for index in pollfds.indices {
            if stopRequested != nil { return }
            let entry = pollfds[index]
            if entry.revents == 0 { continue }
            if tokens[index] == 0 {
                drainSignalPipe()
                continue
            }
            if tokens[index] == Self.partToken {
                guard FileIdentity(entry.fd) == readyFiles[index - partsStart] else { continue }  // closed, its number reused
                let part = polledParts[partOf[index - partsStart]]
                // Still on the loop (a handler before it may have removed it).
                if parts.contains(where: { $0 === part }) { _ = part.handle(entry, now: monotonicMilliseconds()) }
                continue
            }
            guard let registration = registrations[entry.fd], registration.token == tokens[index] else { continue }
            registration.handler(PollEvents(rawValue: entry.revents))
        }
    }

    private func checkLinkDeadlines() {
        for (fd, registration) in registrations {
            guard let link = registration.link, let due = link.deadline, due <= now else { continue }
            do {
                try link.handleDeadline(now: now)
            } catch {
                if registrations[fd]?.token == registration.token { registrations[fd] = nil }
                registration.onLinkError?(error)
            }
        }
    }

    private func fireDueTimers() {
        while let first = timers.first, first.deadline <= now, stopRequested == nil {
            timers.removeFirst()
            first.action()
            now = monotonicMilliseconds()
        }
    }

    private func drainSignalPipe() {
        guard let pipe = signalPipe else { return }
        if let onSignal {
            // Every pending signal, each once (repeated deliveries may coalesce).
            var seen: [Int32] = []
            var bytes = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
            while true {
                let n = withUnsafeMutableBytes(of: &bytes) { raw in (try? pipe.read.read(into: raw)) ?? 0 }
                if n <= 0 { break }
                withUnsafeBytes(of: &bytes) { raw in
                    for b in raw[0..<n] where !seen.contains(Int32(b)) && forwardedSignals.contains(Int32(b)) { seen.append(Int32(b)) }
                }
            }
            for signo in seen {
                onSignal(signo)
                if stopRequested != nil { return }
            }
            return
        }
        // The first pending signal this loop asked for (the pipe receives only those; a byte that is
        // not one would be passed over).
        var bytes = (UInt64(0), UInt64(0))
        while true {
            let n = withUnsafeMutableBytes(of: &bytes) { raw in (try? pipe.read.read(into: raw)) ?? 0 }
            if n <= 0 { return }
            let mine = withUnsafeBytes(of: &bytes) { raw in raw[0..<n].map { Int32($0) }.first { forwardedSignals.contains($0) } }
            if let signo = mine {
                stopRequested = .signal(signo)
                return
            }
        }
    }

    private func takeToken() -> UInt64 {
        defer { nextToken += 1 }
        return nextToken
    }
}

/// The file a descriptor names (device and inode, from `fstat`): a socket accepted into the
/// number of one just closed is another file. Nil when the descriptor is not open.
struct FileIdentity: Equatable {
    let device: UInt64
    let inode: UInt64

    init?(_ fd: Int32) {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
    }
}
