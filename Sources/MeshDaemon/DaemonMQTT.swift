import Glibc
import MeshCompanion
import MeshLink
import MeshNet
import MeshOps
import MeshSession
import MeshStore
import MeshDaemonClient
import MeshBridge

/// Commands from the brokers run as API requests of the bridge's clients.
extension Daemon: BridgeHost {
    public func bridgeExecute(_ request: DaemonRequest, client: Caller) -> DaemonResponse? {
        handle(request, client)
    }
}

extension Daemon {
    /// Answers an API request: to its socket client, or to the MQTT bridge it came from.
    func reply(_ r: DaemonResponse, to client: Caller) {
        switch client {
        case .api(let id): api.reply(r, to: id)
        case .web(let id): requests.web?.reply(r, to: id)
        case .bridge(let bridge, let id):
            for b in mqtt.bridges where ObjectIdentifier(b) == bridge { b.answer(r, client: id, now: monotonicMilliseconds()) }
        case .observer(let observer):
            for o in mqtt.observers where ObjectIdentifier(o) == observer { o.answer(r, now: monotonicMilliseconds()) }
        case .gone: break
        }
    }

    func brokerSettings(_ text: String, flag: String) throws(DaemonError) -> BrokerConnection.Settings {
        try BrokerConnection.Settings.parse(text, flag: flag, caFile: config.mqttCAFile, connectTimeoutMS: config.connectTimeoutMS,
                                            environment: config.environment)
    }

    /// The radio's public key is known (from an earlier run, or the handshake): the bridges connect,
    /// as clients named after it.
    func mqttRadioKnown(publicKey: [UInt8]) {
        guard publicKey.count == 32 else { return }
        let now = monotonicMilliseconds()
        for b in mqtt.bridges { b.radioKnown(publicKey: publicKey, now: now) }
    }

    func setUpMQTT() throws(DaemonError) {
        for (i, m) in config.mqtt.enumerated() {
            var s = MQTTBridge.Settings(connection: try brokerSettings(m.url, flag: "--mqtt"))
            s.prefix = m.prefix
            guard !s.prefix.isEmpty, MQTTTopic.isValidName(s.prefix) else {
                throw DaemonError(.usage, "--mqtt-prefix \"\(m.prefix)\": a topic prefix must be non-empty, without + or #.")
            }
            s.user = m.user
            if let f = m.passwordFile { s.password = try SecretFile.password(f) }
            if s.password != nil && (s.user ?? s.connection.url.user) == nil {
                throw DaemonError(.usage, "--mqtt-password-file needs a user name (--mqtt-user or mqtt://USER@host).")
            }
            s.clientId = m.clientId
            guard !m.allowed.allows(.secret) else {
                throw DaemonError(.usage, "--mqtt-allow: the secret class (the private key, signing) is never allowed over MQTT.")
            }
            s.allowed = m.allowed
            // One client id per radio and bridge (MQTTBridge.radioKnown): two connections to one
            // broker with the same id would take turns throwing each other off.
            let b = MQTTBridge(settings: s, index: config.mqtt.count > 1 ? i + 1 : nil)
            b.log = { [unowned self] in self.log($0) }
            b.host = self
            mqtt.bridges.append(b)
            log("mqtt: bridge to \(s.connection.url), prefix \(s.prefix); commands allowed: \(s.allowed)")
        }
        for (i, m) in config.mqttObservers.enumerated() {
            var s = try m.observer(try brokerSettings(m.url, flag: "--mqtt-observer"))
            // Tests shorten the discovery's listening (packet-capture's floor is 5 s).
            if let w = config.environment["POCKETMESH_NEIGHBORS_WINDOW"].flatMap(Double.init) { s.neighborsWindowS = max(5, w) }
            let o = MQTTObserver(settings: s, clientIdSuffix: config.mqttObservers.count > 1 ? "-\(i + 1)" : "", index: i)
            o.log = { [unowned self] in self.log($0) }
            o.host = self
            mqtt.observers.append(o)
            log("mqtt-observer: \(s.connection.url), region \(s.iata)\(s.identity != nil ? ", signed in with the node's key" : s.signedByRadio ? ", signed in with a token the radio signs" : "")")
        }
    }

    func stopMQTT() {
        let now = monotonicMilliseconds()
        for b in mqtt.bridges { b.stop(now: now) }
        for o in mqtt.observers { o.stop(now: now) }
    }

    var mqttStatus: [(String, JSON)] {
        var f: [(String, JSON)] = []
        if !mqtt.bridges.isEmpty { f.append(("mqtt", .array(mqtt.bridges.map(\.statusFields)))) }
        if !mqtt.observers.isEmpty { f.append(("mqtt_observer", .array(mqtt.observers.map(\.statusFields)))) }
        return f
    }
}
