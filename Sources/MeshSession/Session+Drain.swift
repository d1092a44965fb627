import MeshCompanion

// Draining the radio's message queue, with the shell's backpressure.

extension Session {
    // MARK: drain loop

    func drained(_ reply: Reply, now: UInt64) {
        syncOutstanding = false
        guard case .frame(let f) = reply, let code = f.first else {
            // NO_MORE_MESSAGES arrives as .frame; anything else (timeout, error) ends the loop.
            draining = false
            drainAgain = false
            emit(.drainFailed(reply))
            return
        }
        if code == Resp.noMoreMessages {
            if drainAgain {
                drainAgain = false
                continueDrain()
            } else {
                draining = false
            }
            return
        }
        do {
            let m = try ReceivedMessage(frame: f)
            if deliver(message: m, frame: f), config.holdDrainUntilStored { messagesPaused = true }
        } catch {
            emit(.malformedMessage(f))
        }
        continueDrain()
    }

    /// Hands a drained message out; returns true when it went out as a `.message` for the shell to keep.
    @discardableResult
    func deliver(message m: ReceivedMessage, frame f: [UInt8]) -> Bool {
        if m.kind == .contact, m.textType == .cliData, let r = commandRequest,
           r.request.publicKey.count >= 6, Array(r.request.publicKey[0..<6]) == m.senderPrefix {
            commandRequest = nil
            emit(.request(r.ticket, .reply(f)))
            return false
        }
        emit(.message(m))
        return true
    }
}
