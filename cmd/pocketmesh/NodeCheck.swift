import MeshOps
import Glibc
import MeshLink
import MeshNode
import MeshSession

extension NodeCommand {
    /// `pocketmesh node check`: the radio `pocketmesh node` would run on, checked step by step
    /// (MeshNode's `RadioCheck`), with at most one packet on the air.
    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "check")
        let args: OperationValues
        init(_ args: OperationValues) { self.args = args }
        var radio: String? { args.string("radio") }
        var freq: Double? { args.number("freq") }
        var bw: Double? { args.number("bw") }
        var sf: Int? { args.whole("sf") }
        var cr: Int? { args.whole("cr") }
        var txPower: Int? { args.whole("tx-power") }
        var hat: String? { args.string("hat") }
        var noTransmit: Bool { args.flag("no-transmit") }

        func run(_ args: OperationValues) throws {
            guard let radio else { throw ValidationError("--radio is required: kiss:PATH[@BAUD] or sx1262[:SPIDEV]") }
            let d = RadioParams()
            let params = RadioParams(freqKHz: freq.map { UInt32(($0 * 1000).rounded()) } ?? d.freqKHz, bwHz: bw.map { UInt32(($0 * 1000).rounded()) } ?? d.bwHz,
                                     sf: UInt8(sf ?? Int(d.sf)), cr: UInt8(cr ?? Int(d.cr)), txPowerDbm: Int8(clamping: txPower ?? Int(d.txPowerDbm)))
            let steps: [RadioCheckStep]
            switch try NodeRadioSpec(parsing: radio) {
            case .air: throw ValidationError("node check is for kiss: and sx1262 radios (the simulator's air needs no check)")
            case let .kiss(path, speed): steps = try kiss(path: path, speed: speed, params: params)
            case let .sx1262(bus):
                let r = try SX1262Pins.resolve(spidev: bus, args)
                guard SX1262.modulation(params) != nil else { throw ValidationError(SX1262ParamError().description) }
                steps = try sx1262(spidev: r.spidev, pins: r.pins, params: params)
            }
            for s in steps { emitHuman(s.line) }
            let failed = steps.filter { $0.result == .fail }.count
            guard failed == 0 else {
                writeError("pocketmesh node check: \(failed) of \(steps.count) checks failed; see the FAIL lines for what to check.")
                throw ExitCode(3)
            }
            emitLine("all \(steps.count) checks passed")
        }

        func kiss(path: String, speed: SerialSpeed, params: RadioParams) throws -> [RadioCheckStep] {
            let link: SerialLink
            do { link = try SerialLink(path: path, speed: speed) } catch {
                throw ClientError.link("cannot open the KISS modem at \(path): \(error)")
            }
            defer { link.close() }
            let verdict = try KISSRadio.identify(link, path: path)
            let air = RadioAir(seed: 1, start: monotonicMilliseconds(), epochNow: UInt32(truncatingIfNeeded: time(nil)))
            let host = KISSHost(air: air)
            host.write = { try? link.write($0) }
            var buf = [UInt8](repeating: 0, count: 512)
            return RadioCheck.kiss(host, verdict: verdict, port: path, params: params, transmit: !noTransmit, now: monotonicMilliseconds) { ms, _, done in
                Self.wait(air: air, fd: FileDescriptor(rawValue: link.fd), ms: ms, done: done) {
                    if let n = try? buf.withUnsafeMutableBytes({ try link.read(into: $0) }), n > 0 { host.receive(buf[0..<n]) }
                }
            }
        }

        func sx1262(spidev: String, pins: SX1262Pins, params: RadioParams) throws -> [RadioCheckStep] {
            let hat = try SX1262HAT(spidev: spidev, pins: pins)
            let air = RadioAir(seed: 1, start: monotonicMilliseconds(), epochNow: UInt32(truncatingIfNeeded: time(nil)))
            let chip = SX1262(board: hat, params: params, tcxoVolts: pins.tcxoVolts, dio2RfSwitch: pins.dio2RfSwitch, scheduler: air.scheduler)
            return RadioCheck.sx1262(chip, board: hat, transmit: !noTransmit, now: monotonicMilliseconds) { ms, interrupts, done in
                Self.wait(air: air, fd: hat.irqLine.fd, ms: ms, done: done) {
                    _ = hat.irqLine.events()
                    if interrupts { chip.irq() }
                }
            }
        }

        /// The check's clock: until `done` holds or `ms` pass, sleeping in poll on `fd` until the
        /// air's next deadline; `readable` takes what came (the air's clock run up to now first).
        static func wait(air: RadioAir, fd: FileDescriptor, ms: UInt64, done: () -> Bool, readable: () -> Void) -> Bool {
            let end = monotonicMilliseconds() &+ ms
            while !done() {
                let now = monotonicMilliseconds()
                air.run(until: now)
                guard now < end else { return done() }
                let until = min(end, air.nextDeadline ?? end)
                if (try? fd.poll(Int16(POLLIN), timeout: Int32(max(1, until &- now)))) == true {
                    air.run(until: monotonicMilliseconds())
                    readable()
                }
            }
            return true
        }
    }
}
