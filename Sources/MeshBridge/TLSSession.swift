import CMeshTLS
import MeshNet

/// A TLS client session (mbedTLS through CMeshTLS) that does no I/O: the broker connection feeds it
/// what the socket read and sends what it produced. Certificates are verified against the system's
/// CA bundle or a given CA file, and the host name must match.
public final class TLSSession {
    private let t: OpaquePointer
    public private(set) var established = false

    public init(host: String, caFile: String?) throws(MQTTError) {
        var err = [CChar](repeating: 0, count: 512)
        guard let t = meshtls_new(host, caFile, &err, err.count) else {
            throw MQTTError(String(decoding: err.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        self.t = t
    }

    deinit { meshtls_free(t) }

    /// Bytes the socket received.
    public func feed(_ bytes: ArraySlice<UInt8>) throws(MQTTError) {
        let r = bytes.withUnsafeBufferPointer { meshtls_feed(t, $0.baseAddress, $0.count) }
        if r != 0 { throw MQTTError("TLS: the broker sent more than 64 KiB that does not decrypt yet") }
    }

    /// Moves what the session has to send onto `wire`.
    public func drain(into wire: inout [UInt8]) {
        var n = 0
        guard let p = meshtls_output(t, &n), n > 0 else { return }
        wire.append(contentsOf: UnsafeBufferPointer(start: p, count: n))
        meshtls_consume(t, n)
    }

    /// Advances the handshake; true once it is done.
    public func handshake() throws(MQTTError) -> Bool {
        let r = meshtls_handshake(t)
        if r < 0 { throw MQTTError(describe(r)) }
        established = r == 1
        return established
    }

    public func write(_ bytes: [UInt8]) throws(MQTTError) {
        var done = 0
        while done < bytes.count {
            let r = bytes[done...].withUnsafeBufferPointer { meshtls_write(t, $0.baseAddress, $0.count) }
            if r < 0 { throw MQTTError(describe(r)) }
            if r == 0 { throw MQTTError("TLS: the connection does not take more output") }
            done += Int(r)
        }
    }

    /// Decrypts what is complete into `out`; throws when the broker closed the session or on an error.
    public func read(into out: inout [UInt8]) throws(MQTTError) {
        var buf = [UInt8](repeating: 0, count: 4096)
        while true {
            let r = buf.withUnsafeMutableBufferPointer { meshtls_read(t, $0.baseAddress, $0.count) }
            if r == 0 { return }
            if r == -1 { throw MQTTError("the broker closed the TLS session") }
            if r < 0 { throw MQTTError(describe(r)) }
            out.append(contentsOf: buf[..<Int(r)])
        }
    }

    public func closeNotify() { meshtls_close_notify(t) }

    private func describe(_ code: Int32) -> String {
        var buf = [CChar](repeating: 0, count: 400)
        meshtls_describe(t, code, &buf, buf.count)
        return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
