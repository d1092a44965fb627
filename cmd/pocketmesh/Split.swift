import MeshOps
import MeshDaemonClient
import MeshSession

/// `send --split` and `channel send --split`: a text longer than one message goes as numbered
/// parts, "(1/3) …", one after the other, each with the usual retries. The result (and `--json`)
/// has one entry per part; the first part that fails stops the rest (exit as that part's error).
func runSplit(link: LinkOptions, text: String, limit: (Radio) -> Int, request: (String) -> Request,
              render: (Value) -> String) throws {
    let radio = try link.connect(drain: false)
    let executor = Executor(radio: radio, timeout: link.timeoutMilliseconds)
    let parts = TextSplit.split(text, limit: limit(radio))
    var results: [Value] = []
    var failure: ClientError? = nil
    for (i, part) in parts.enumerated() {
        let label: [Value.Field] = [("part", .int(i + 1)), ("of", .int(parts.count))]
        var outcome: Outcome
        do throws(ClientError) { outcome = try executor.execute(request(part)) } catch { outcome = Outcome(.null, error: error) }
        var fields = label
        if case .object(let f) = outcome.value { fields += f }
        if let e = outcome.error { fields.append(("error", .string(e.message))) }
        results.append(.object(fields))
        if !link.json { emitHuman("part \(i + 1)/\(parts.count): " + (outcome.error.map { "failed: \($0.message)" } ?? render(outcome.value.oneLine))) }
        if let e = outcome.error {
            failure = i + 1 < parts.count
                ? ClientError(e.kind, e.message + " Parts \(i + 2) to \(parts.count) were not sent.", radioCode: e.radioCode) : e
            break
        }
    }
    if link.json { emitLine(Value.array(results).json) }
    if let failure { throw failure }
}
