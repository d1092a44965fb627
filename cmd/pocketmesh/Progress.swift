import Glibc
import MeshDaemonClient
import MeshSession

/// Progress of long work on a terminal only (stderr is a TTY and the output is not JSON): a
/// contacts listing of many records ("contacts 120/340") and a drain of the radio's queue
/// ("messages 37"), on one line rewritten in place and cleared at the end. Shown once the work
/// has 50 items or has taken half a second; nothing is written to pipes or files.
final class Progress {
    private let start: UInt64
    private var lastDraw: UInt64 = 0
    private var shown = false
    private(set) var messages = 0
    private let radio: Radio

    /// nil when there is no terminal to show it on.
    init?(radio: Radio, json: Bool) {
        guard !json, isatty(2) == 1, getenv("POCKETMESH_NO_PROGRESS") == nil else { return nil }
        self.radio = radio
        start = radio.now
    }

    func message() { messages += 1 }

    func update() {
        let now = radio.now
        guard now >= lastDraw + 100 else { return }
        var text = ""
        var size = 0
        if let p = radio.session.contactsProgress {
            text = "contacts \(p.received)/\(p.total)"
            size = p.total
        } else if messages > 0 {
            text = "messages \(messages)"
            size = messages
        }
        guard !text.isEmpty, size >= 50 || now >= start + 500 else { return }
        lastDraw = now
        shown = true
        write("\r\u{1B}[K\(text)")
    }

    func finish() {
        if shown { write("\r\u{1B}[K") }
        shown = false
    }

    private func write(_ s: String) {
        _ = s.withCString { fputs($0, stderr) }
        fflush(stderr)
    }
}
