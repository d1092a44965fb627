import MeshOps
import MeshSession
import MeshLink

/// The command line's shell: one operation on its own link. Each wait spins the `Radio`'s poll
/// loop until what it waits for arrived, so an operation run through it never suspends
/// (`OperationJobs.runToEnd`).
extension Radio: OperationPort {
    public func reply(to ticket: Ticket) async throws(ClientError) -> Reply { try waitReply(ticket) }
    public func delivery(of ticket: Ticket) async throws(ClientError) -> Delivery { try waitDelivery(ticket) }
    public func outcome(of ticket: Ticket) async throws(ClientError) -> RequestOutcome { try waitOutcome(ticket) }
    public func drained(by deadline: UInt64?) async throws(ClientError) { try waitDrained(by: deadline) }
    public func sleep(until deadline: UInt64) async throws(ClientError) { try wait(until: deadline) }
}
