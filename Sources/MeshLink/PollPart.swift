import Glibc

/// A part of a program's one poll loop, with its own state: the descriptors it waits on, what it
/// does when one of them is ready, and when it next needs to run. A part never blocks: it reads
/// and writes what is there and keeps the rest for its next turn. Everything the daemon does is a
/// part of its `PollLoop` (`PollLoop.add`): the radio owner, hotplug, the store, the outbox, the
/// hooks, the API server, the companion hub and each MQTT connection; the loop asks each in turn.
public protocol PollPart: AnyObject {
    /// Appends the descriptors this part waits on, with the events it waits for.
    func pollDescriptors(into fds: inout [pollfd])
    /// Handles a ready descriptor if it is one of this part's (true); false leaves it to the others.
    func handle(_ p: pollfd, now: UInt64) -> Bool
    /// Runs what is due at `now`; returns the next time it needs to run (nil: only on readiness).
    func tick(now: UInt64) -> UInt64?
}
