import Glibc
import MeshCompanion
import MeshLink
import MeshNet
import MeshOps
import MeshSession
import MeshStore

// The signal and battery samples kept in the radio's folder for plots (MeshStore's `SampleRing`):
// one signal sample for each packet heard, message received, RAW_DATA and CONTROL_DATA; one
// battery sample per reading (`--battery-every`, at most one a minute). A sample file that cannot
// be used is logged once and left alone: the messages go on without it.

/// The open store's sample files (a part of `StorePart`).
final class SampleFiles {
    var signal: SampleRing? = nil
    var battery: SampleRing? = nil
    /// When the last battery sample was taken (monotonic ms; nil: none since the store opened).
    var batterySampledAt: UInt64? = nil
    /// Fewest milliseconds between two battery samples.
    var batteryIntervalMS: UInt64 = 60_000
    var fileOps: FileOps = SystemFileOps()
    /// A write failed and was logged; logged again only after one works.
    var failing = false
    var log: (String) -> Void = { _ in }

    /// Opens the sample files in a store's folder (closing those of another).
    func open(directory: String) {
        close()
        func ring(_ kind: SampleRing.Kind) -> SampleRing? {
            do {
                let r = try SampleRing(directory: directory, kind: kind, fileOps: fileOps)
                if let p = r.problem { log("samples: \(p)") }
                if r.damaged > 0 { log("samples: \(r.path): \(r.damaged) damaged sample(s) skipped") }
                return r
            } catch {
                log("samples: cannot open the \(kind.fileName) samples: \(error); none are kept (messages are not affected)")
                return nil
            }
        }
        signal = ring(.signal)
        battery = ring(.battery)
    }

    func close() {
        signal?.close()
        battery?.close()
        signal = nil
        battery = nil
        batterySampledAt = nil
    }

    func record(_ s: SignalSample) { write(signal, time: s.time, body: s.body) }

    func record(_ b: BatterySample, now: UInt64) {
        if let last = batterySampledAt, now < last + batteryIntervalMS - batteryIntervalMS / 10 { return }
        batterySampledAt = now
        write(battery, time: b.time, body: b.body)
    }

    private func write(_ ring: SampleRing?, time: UInt32, body: [UInt8]) {
        guard let ring else { return }
        do {
            try ring.append(time: time, body: body)
            failing = false
        } catch {
            if !failing { log("samples: writing \(ring.path) failed: \(error); samples are lost until it works (messages are not affected)") }
            failing = true
        }
    }
}

extension Daemon {
    static func wallClock() -> UInt32 { UInt32(truncatingIfNeeded: time(nil)) }

    /// The signal of a push, if it carries one.
    func recordSignal(_ p: Push) {
        guard storage.samples.signal != nil else { return }
        let now = Self.wallClock()
        switch p.kind {
        case .logRxData(let q, let rssi, let packet):
            storage.samples.record(SignalSample(time: now, packet: packet, snrQuarterDb: q, rssi: rssi))
        case .rawData(let q, let rssi, _):
            storage.samples.record(SignalSample(time: now, kind: .raw, snrQuarterDb: Int16(q), rssi: Int16(rssi)))
        case .controlData(let q, let rssi, let path, _):
            storage.samples.record(SignalSample(time: now, kind: .control, snrQuarterDb: Int16(q), rssi: Int16(rssi),
                                                pathLength: path.rawValue))
        default:
            break
        }
    }

    /// The SNR of a received message (V3 frames carry one), with its sender's key prefix.
    func recordSignal(_ m: ReceivedMessage) {
        guard storage.samples.signal != nil, let q = m.snrQuarterDb else { return }
        storage.samples.record(SignalSample(time: Self.wallClock(), kind: .message, snrQuarterDb: Int16(q),
                                            pathLength: m.pathLength, from: Array(m.senderPrefix.prefix(4))))
    }

    /// `samples_signal`, `samples_battery`: from the open store's files.
    func answerSamples(_ req: DaemonRequest, _ v: OperationValues) throws(DaemonError) -> DaemonResponse {
        _ = try requireStore()
        let signal = req.op == .samplesSignal
        let since = UInt32(clamping: v["since"]?.intValue ?? 0)
        let limit = Int(clamping: v["limit"]?.intValue ?? 1000)
        do {
            let fields = try SampleJSON.result(signal ? storage.samples.signal : storage.samples.battery,
                                               kind: signal ? .signal : .battery, since: since, limit: limit)
            return DaemonResponse(id: req.id, ok: fields)
        } catch { throw DaemonError(.storage, "cannot read the samples: \(error)") }
    }
}
