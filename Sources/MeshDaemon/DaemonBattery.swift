import MeshCompanion
import MeshSession
import MeshStore
import MeshLink

// The battery readings (`--battery-every`: samples, and the `--low-battery` watch) and the flood
// scope kept across reconnects.

extension Daemon {
    /// Asks for the battery when due; the next time to look.
    func checkBattery(_ s: Session, now: UInt64) -> UInt64 {
        if now >= sync.batteryCheckAt, sync.batteryTicket == nil {
            sync.batteryCheckAt = now + config.batteryCheckMS
            sync.batteryTicket = try? s.submit(frame: CommandFrame.getBatteryAndStorage().bytes,
                                          expecting: .codes(CodeSet(ResponseCode.batteryAndStorage.rawValue)), now: now)
            pump(now: now)
        }
        return sync.batteryCheckAt
    }

    /// A reading: kept as a battery sample (DaemonSamples.swift), and checked against `--low-battery`.
    func batteryReply(_ r: Reply) {
        guard case .frame(let f) = r,
              let b = CompanionFrame.owned(f, { frame -> BatteryAndStorage? in
                  if case .batteryAndStorage(let b) = frame { return b }
                  return nil
              }) else { return }
        storage.samples.record(BatterySample(time: Self.wallClock(), millivolts: b.millivolts, usedKB: b.usedKB, totalKB: b.totalKB),
                               now: monotonicMilliseconds())
        guard let limit = config.lowBatteryMV else { return }
        let mv = Int(b.millivolts)
        let wasLow = sync.batteryLow
        if let event = Daemon.batteryEvent(mv: mv, limit: limit, low: &sync.batteryLow) {
            if wasLow != sync.batteryLow { log("battery: \(mv) mV, " + (sync.batteryLow ? "below the \(limit) mV threshold" : "back above the \(limit) mV threshold")) }
            publish(.obj(("event", .string(event)), ("battery_mv", .int(Int64(mv))), ("threshold_mv", .int(Int64(limit)))))
        }
    }

    /// The event a reading makes, if any: `low_battery` for each reading below the threshold (a
    /// subscriber that connects later hears it at the next reading), `battery_ok` once when it is
    /// 50 mV above the threshold again (so a reading hovering at the line does not flap); nil otherwise.
    static func batteryEvent(mv: Int, limit: Int, low: inout Bool) -> String? {
        if mv < limit { low = true; return "low_battery" }
        if low && mv >= limit + 50 { low = false; return "battery_ok" }
        return nil
    }

    /// Sends the flood scope a client set again after a reconnect: the radio keeps it until it
    /// reboots, and it may have rebooted meanwhile.
    func reapplyFloodScope(now: UInt64) {
        guard let f = radio.floodScopeFrame, let s = session else { return }
        if (try? s.submit(frame: f, expecting: .codes(CodeSet(ResponseCode.ok.rawValue)), now: now)) != nil {
            log("radio: flood scope set again (the radio forgets it when it reboots)")
            pump(now: now)
        }
    }
}
