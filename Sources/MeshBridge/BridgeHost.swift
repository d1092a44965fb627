import MeshLink
import MeshOps

/// What the MQTT bridge and observer need from the daemon they run in: an API request run for one
/// of their clients (an operation of the daemon's table, under the bridge's allowed classes, which
/// the daemon checks). The answer comes back now, or later through the bridge's `answer`. The
/// daemon implements it (DaemonMQTT.swift).
public protocol BridgeHost: AnyObject {
    func bridgeExecute(_ request: DaemonRequest, client: Caller) -> DaemonResponse?
}
