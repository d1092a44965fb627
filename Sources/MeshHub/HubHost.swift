/// What the hub needs from the daemon it runs in: how many more frames a client may hand over now,
/// each frame a client sends (a companion command for the daemon to answer or take to the radio
/// in the client's turn), and a client gone. The daemon implements it (DaemonHub.swift); the hub
/// answers through `HubServer.send`.
public protocol HubHost: AnyObject {
    /// Frames the daemon takes from `client` now (0: the hub stops reading that client).
    func hubRoom(_ client: Int) -> Int
    /// One whole frame from `client`, valid only during the call.
    func hubFrame(_ client: Int, _ frame: UnsafeRawBufferPointer)
    func hubGone(_ client: Int)
}
