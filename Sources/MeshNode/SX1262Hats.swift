/// Where an SX1262 board's pins are (line offsets of the GPIO chip: on a Raspberry Pi, the BCM
/// GPIO numbers) and how its RF path is switched: `pocketmesh node --hat NAME`. The pin maps are
/// the ones meshtasticd ships for the same boards (its `bin/config.d/lora-*.yaml`), checked
/// against pyMC_Repeater's `radio-settings.json` where it has the board.
public struct SX1262Hat: Equatable, Sendable {
    /// The `--hat` name.
    public var name: String
    public var title: String
    /// The SPI device it sits on.
    public var spidev: String
    /// NSS on a GPIO line the node drives (nil: the SPI device's own chip select, CE0 or CE1).
    public var cs: UInt32?
    public var irq: UInt32
    public var busy: UInt32
    public var reset: UInt32
    public var rxen: UInt32? = nil
    public var txen: UInt32? = nil
    /// Lines held high while the node runs (antenna switch, module power enables).
    public var holdHigh: [UInt32] = []
    /// The TCXO's supply on DIO3 (nil: a crystal).
    public var tcxoVolts: Double?
    public var dio2RfSwitch: Bool
    /// Where the pin map comes from.
    public var source: String

    public static let all: [SX1262Hat] = [
        SX1262Hat(name: "waveshare", title: "Waveshare SX1262 LoRa HAT", spidev: "/dev/spidev0.0", cs: 21, irq: 16, busy: 20, reset: 18,
                  holdHigh: [6], tcxoVolts: nil, dio2RfSwitch: true, source: "meshtasticd lora-waveshare-sxxx.yaml (SX126X_ANT_SW 6)"),
        SX1262Hat(name: "meshadv", title: "MeshAdv Pi Hat (E22-900M30S)", spidev: "/dev/spidev0.0", cs: 21, irq: 16, busy: 20, reset: 18,
                  rxen: 12, txen: 13, tcxoVolts: 1.8, dio2RfSwitch: false,
                  source: "meshtasticd lora-MeshAdv-900M30S.yaml; pyMC_Repeater meshadv"),
        SX1262Hat(name: "meshadv-mini", title: "MeshAdv Mini (E22-900M22S)", spidev: "/dev/spidev0.0", cs: nil, irq: 16, busy: 20, reset: 24,
                  rxen: 12, tcxoVolts: 1.8, dio2RfSwitch: true, source: "meshtasticd lora-MeshAdv-Mini-900M22S.yaml (CS 8: CE0)"),
        SX1262Hat(name: "pimesh-1w-v1", title: "PiMesh-1W V1 (E22-900M30S)", spidev: "/dev/spidev0.0", cs: 21, irq: 16, busy: 20, reset: 18,
                  rxen: 12, txen: 13, tcxoVolts: 1.8, dio2RfSwitch: false, source: "meshtasticd lora-pimesh-1w-v1.yaml"),
        SX1262Hat(name: "pimesh-1w-v2", title: "PiMesh-1W V2 (E22P-868M30S / E22P-915M30S)", spidev: "/dev/spidev0.0", cs: nil, irq: 6,
                  busy: 5, reset: 18, holdHigh: [26], tcxoVolts: 1.8, dio2RfSwitch: true,
                  source: "meshtasticd lora-pimesh-1w-v2.yaml (CS 8: CE0; gpio=26=op,dh)"),
        SX1262Hat(name: "zebrahat", title: "ZebraHat 1W / PiTastic 1W", spidev: "/dev/spidev0.0", cs: 24, irq: 22, busy: 27, reset: 17,
                  tcxoVolts: 1.8, dio2RfSwitch: true, source: "meshtasticd lora-ZebraHat_1W.yaml, lora-PiTastic-1W.yaml"),
        SX1262Hat(name: "nebrahat", title: "NebraHat 1W", spidev: "/dev/spidev0.0", cs: nil, irq: 22, busy: 4, reset: 18, rxen: 25,
                  tcxoVolts: 1.8, dio2RfSwitch: true, source: "meshtasticd lora-NebraHat_1W.yaml (CS 8: CE0)"),
        SX1262Hat(name: "rak6421-slot1", title: "RAK6421 Pi HAT, RAK13300 in slot 1", spidev: "/dev/spidev0.0", cs: nil, irq: 22, busy: 24,
                  reset: 16, holdHigh: [12, 13], tcxoVolts: 1.8, dio2RfSwitch: true,
                  source: "meshtasticd lora-RAK6421-13300-slot1.yaml (Enable_Pins 12, 13)"),
        SX1262Hat(name: "rak6421-slot2", title: "RAK6421 Pi HAT, RAK13300 in slot 2", spidev: "/dev/spidev0.1", cs: nil, irq: 18, busy: 19,
                  reset: 24, holdHigh: [26, 23], tcxoVolts: 1.8, dio2RfSwitch: true,
                  source: "meshtasticd lora-RAK6421-13300-slot2.yaml (Enable_Pins 26, 23)"),
    ]

    public static func named(_ name: String) -> SX1262Hat? { all.first { $0.name == name } }
}
