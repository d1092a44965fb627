import MeshCompanion
import Testing
@testable import MeshOps
@testable import MeshSession

/// Operations on a shared session (the daemon's shell: `SessionPort`, `OperationJobs`) in virtual
/// time, without I/O: the test is the shell. It hands the session's events to the port, runs the
/// operations' ready steps, and answers the frames the session writes as a radio would.
@Suite struct SessionPortTests {
    final class Shell {
        let h = Harness.ready()
        let jobs = OperationJobs()
        let port: SessionPort
        /// Frames the session wrote, in order; events no operation took.
        var written: [[UInt8]] = []
        var others: [SessionEvent] = []
        var ended: [(String, Result<Outcome, ClientError>)] = []

        init() {
            let h = self.h
            port = SessionPort(session: h.s, jobs: jobs, clock: { h.now })
        }

        func start(_ name: String, _ request: Request) {
            let executor = Executor(radio: port, timeout: 5_000)
            jobs.start({ () async throws(ClientError) -> Outcome in try await executor.run(request) }) { [unowned self] r in
                self.ended.append((name, r))
            }
            pump()
        }

        /// What the daemon's pump does: events to the port, the operations' steps, frames out.
        func pump() {
            repeat {
                while let e = h.s.nextEvent() {
                    if !port.handle(e) { others.append(e) }
                }
            } while jobs.runReady()
            while let f = h.s.nextFrame() { written.append(f) }
        }

        func answer(_ frame: [UInt8]) {
            h.s.receive(frame: frame, now: h.now)
            pump()
        }

        func advance(to t: UInt64) {
            h.now = t
            h.s.tick(now: t)
            port.tick(now: t)
            pump()
        }

        func take() -> [[UInt8]] { defer { written = [] }; return written }
    }

    static let battery: [UInt8] = [ResponseCode.batteryAndStorage.rawValue, 0x10, 0x0E] + le32(10) + le32(100)

    @Test func aLongOperationDoesNotHoldUpAShortOne() throws {
        let shell = Shell()
        // A discovery: its request goes out, then it listens for 3 s.
        shell.start("discover", .discover(waitMs: 3_000, types: 0xFF))
        let control = shell.take()
        #expect(control.count == 1 && control.first?.first == CommandCode.sendControlData.rawValue)
        shell.answer([ResponseCode.ok.rawValue])
        #expect(shell.ended.isEmpty)
        #expect(shell.port.nextDeadline == shell.h.now + 3_000)
        // A battery reading meanwhile: asked, answered and done while the discovery still listens.
        shell.start("battery", .battery)
        #expect(shell.take() == [CommandFrame.getBatteryAndStorage().bytes])
        shell.answer(Self.battery)
        #expect(shell.ended.map(\.0) == ["battery"])
        let value = try shell.ended[0].1.get().value
        #expect(value["millivolts"] == .int(3600))
        // The listening window ends: nobody answered the discovery (it lists the contacts to name
        // whoever did; the radio has none).
        shell.advance(to: shell.h.now + 3_000)
        #expect(shell.take() == [CommandFrame.getContacts(since: nil).bytes])
        shell.answer([ResponseCode.contactsStart.rawValue] + le32(0))
        shell.answer([ResponseCode.endOfContacts.rawValue] + le32(0))
        #expect(shell.ended.map(\.0) == ["battery", "discover"])
        guard case .success(let d) = shell.ended[1].1 else { Issue.record("discover threw"); return }
        #expect(d.error?.kind == .notFound)
        #expect(shell.jobs.active == 0)
    }

    @Test func operationsAtOnceEachGetTheirOwnReply() throws {
        let shell = Shell()
        shell.start("battery", .battery)
        shell.start("time", .timeGet)
        // One command in flight at a time: the second goes out when the first is answered.
        #expect(shell.take() == [CommandFrame.getBatteryAndStorage().bytes])
        shell.answer(Self.battery)
        #expect(shell.take() == [CommandFrame.getDeviceTime().bytes])
        shell.answer([ResponseCode.currentTime.rawValue] + le32(1_700_000_000))
        #expect(shell.ended.map(\.0) == ["battery", "time"])
        #expect(try shell.ended[1].1.get().value["epoch"] == .int(1_700_000_000))
        // Nothing an operation asked for reached the shell as its own.
        #expect(!shell.others.contains { if case .reply = $0 { return true }; return false })
    }

    /// An operation made of other operations (`channel add`: the slots, then `channel set`) runs
    /// them through the same port: nothing of it waits outside the shell's loop.
    @Test func anOperationBuiltOnAnotherRunsThroughThePort() throws {
        let shell = Shell()
        shell.start("add", .channelAdd(name: "#daemon", secret: nil))
        var rounds = 0
        while shell.ended.isEmpty && rounds < 100 {
            rounds += 1
            for f in shell.take() {
                switch f.first {
                case CommandCode.getChannel.rawValue:
                    shell.answer([ResponseCode.channelInfo.rawValue, f[1]] + [UInt8](repeating: 0, count: 48))
                case CommandCode.setChannel.rawValue:
                    shell.answer([ResponseCode.ok.rawValue])
                default:
                    Issue.record("unexpected frame \(f)")
                }
            }
        }
        #expect(shell.ended.map(\.0) == ["add"])
        let v = try shell.ended[0].1.get().value
        #expect(v["index"] == .int(0) && v["name"] == .string("#daemon"))
    }

    @Test func aClosedSessionEndsWaitingOperationsWithTheLinkError() throws {
        let shell = Shell()
        shell.start("battery", .battery)
        shell.start("discover", .discover(waitMs: 10_000, types: 0xFF))
        #expect(shell.take().count == 1)
        // The link goes: the session cancels its commands; the port ends every wait.
        shell.h.s.close()
        shell.pump()
        shell.port.close(ClientError(.link, "the link to the radio was lost (test)."))
        shell.pump()
        #expect(Set(shell.ended.map(\.0)) == ["battery", "discover"])
        for (_, r) in shell.ended {
            guard case .failure(let e) = r else { Issue.record("an operation succeeded without its radio"); continue }
            #expect(e.kind == .link)
        }
        // Nothing more can be submitted through it.
        shell.start("late", .battery)
        if case .failure(let e)? = shell.ended.last?.1 { #expect(e.kind == .link) } else { Issue.record("late op ran") }
    }

    /// An operation past its deadline is cancelled, not merely answered: its command still queued
    /// never goes to the radio, and the late answer to its command in flight is dropped (no
    /// operation, and not the shell, is handed it), so it neither occupies the radio nor answers
    /// anyone (virtual time).
    @Test func anOperationCancelledAtItsDeadlineLeavesTheRadio() throws {
        let shell = Shell()
        let slow = OperationLease(shell.port)
        let queued = OperationLease(shell.port)
        func start(_ name: String, _ lease: OperationLease, _ request: Request) {
            let executor = Executor(radio: lease, timeout: 5_000)
            shell.jobs.start({ () async throws(ClientError) -> Outcome in try await executor.run(request) }) { r in
                shell.ended.append((name, r))
            }
            shell.pump()
        }
        start("battery", slow, .battery)
        start("time", queued, .timeGet)
        #expect(shell.take() == [CommandFrame.getBatteryAndStorage().bytes])  // the time command waits its turn
        // Their deadline passes (the daemon's: before the session's own command timeout).
        shell.advance(to: shell.h.now + 2_000)
        let late = ClientError(.timeout, "did not finish in time.")
        slow.cancel(late)
        queued.cancel(late)
        shell.pump()
        #expect(Set(shell.ended.map(\.0)) == ["battery", "time"])
        for (_, r) in shell.ended {
            guard case .failure(let e) = r else { Issue.record("a cancelled operation succeeded"); continue }
            #expect(e.kind == .timeout)
        }
        #expect(shell.h.s.commandsPending == 1)  // only the battery command in flight: the radio answers in order
        // The radio's late answer: dropped, to nobody; the queued command never went out.
        shell.answer(Self.battery)
        #expect(shell.take().isEmpty)
        #expect(!shell.others.contains { if case .reply = $0 { return true }; return false })
        #expect(shell.h.s.commandsPending == 0)
        #expect(shell.jobs.active == 0)
        // The radio is free for the next operation at once.
        shell.start("next", .timeGet)
        #expect(shell.take() == [CommandFrame.getDeviceTime().bytes])
        shell.answer([ResponseCode.currentTime.rawValue] + le32(1_700_000_000))
        #expect(shell.ended.last?.0 == "next")
        #expect(try shell.ended.last?.1.get().value["epoch"] == .int(1_700_000_000))
    }

    /// Without the cancellation, the same late answer finishes the operation that timed out (the
    /// test above can fail): the port hands it over as the answer to its ticket.
    @Test func aLateAnswerReachesAnOperationThatWasNotCancelled() throws {
        let shell = Shell()
        shell.start("battery", .battery)
        #expect(shell.take() == [CommandFrame.getBatteryAndStorage().bytes])
        shell.advance(to: shell.h.now + 2_000)
        shell.answer(Self.battery)
        #expect(shell.ended.map(\.0) == ["battery"])
    }
}
