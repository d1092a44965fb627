import MeshCompanion
import MeshSession

// Direct messages: send, wait for the ACK, count the repeats of a flooded attempt. The round is
// `OperationPort.sendText` over `Session.sendText`; the daemon's outbox runs the same round as an
// operation (`OutboxSender`). What is here is the command's: the contact from the radio's list, the
// time now, heard repeats, the result.

extension Executor {
    func send(to: String, text: String, wait: Bool) async throws(ClientError) -> Outcome {
        let c = try await resolve(to)
        let started = radio.now
        var attempts = 1
        var flood = false
        var listening: RepeatListener? = nil
        defer { listening?.stop() }
        let d = try await radio.sendText(to: c.publicKey, text: text, timestamp: wallClockEpoch(), wait: wait) { p in
            switch p {
            case .sent(let a, let f, _, _):
                attempts = a + 1; flood = f
                // Flooded: count the repeaters heard sending it on while the ACK is awaited.
                if f, wait, listening == nil { listening = startHearingFloodRepeats(to: c.publicKey) }
            case .retrying(let a, let f): attempts = a + 1; flood = f
            default: break
            }
        }
        let elapsed = radio.now - started
        func result(_ status: String, _ extra: [Value.Field] = []) -> Value {
            var fields: [Value.Field] = [("status", .string(status)), ("to", .string(c.name)), ("attempts", .int(attempts)),
                                         ("flood", .bool(flood))]
            if let l = listening { fields.append(("heard_repeats", .int(l.heard.count))) }
            return .object(fields + extra)
        }
        switch d {
        case .sent(let a, let f, let est, _):
            return Outcome(result("sent", [("estimated_timeout_ms", .int(est))]).with(attempts: a + 1, flood: f))
        case .acked(let a, let rtt):
            return Outcome(result("acked", [("round_trip_ms", .int(rtt)), ("elapsed_ms", .int(elapsed))]).with(attempts: a + 1, flood: flood))
        case .failed(let n):
            return Outcome(result("failed").with(attempts: n, flood: flood),
                           error: .timeout("\(c.name) did not acknowledge after \(n) attempts: the node may be out of range; try again later or check `pocketmesh contacts path \(c.name)`."))
        case .refused(let code):
            throw .radio("the message", code: code, hint: code == 3 ? "the text may be too long or the radio busy" : "check the contact")
        case .timeout:
            throw .timeout("the radio did not accept the message within \(timeout / 1000) s: check the link or raise --timeout.")
        case .cancelled, .retrying:
            throw .link("the link to the radio was lost while sending: reconnect and try again.")
        }
    }
}

extension Value {
    /// Updates `attempts`/`flood` fields of a send result.
    func with(attempts: Int, flood: Bool) -> Value {
        guard case .object(var fields) = self else { return self }
        for i in fields.indices {
            if fields[i].key == "attempts" { fields[i].value = .int(attempts) }
            if fields[i].key == "flood" { fields[i].value = .bool(flood) }
        }
        return .object(fields)
    }
}
