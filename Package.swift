// swift-tools-version: 6.0
import PackageDescription

// Dependencies point down only (see the module map in docs/design.md); each target lists what it imports:
//   pocketmesh (cmd) -> MeshDaemon -> MeshHub, MeshBridge, MeshDaemonClient -> MeshOps -> MeshSession, MeshStore, MeshNet;
//   MeshDaemonClient (the command line's `Radio`), MeshOps, MeshSim -> MeshLink; MeshSession, MeshSim -> MeshAir; MeshSim -> MeshNode -> MeshAir;
//   MeshOps, MeshDaemon, MeshSim -> MeshNet (JSON, MQTT, DNS, WebSocket: codecs without I/O, standard library only);
//   MeshLink, MeshStore -> MeshErrno (errno, EINTR); MeshStore, MeshAir and everything above -> MeshCompanion (standard library only);
//   never: MeshStore -> MeshLink, MeshHub/MeshBridge -> MeshDaemonClient, MeshSession -> MeshLink (LayerTests holds these);
//   MeshAir -> CMeshCrypto (libsodium, mbedTLS's libmbedcrypto); MeshBridge -> CMeshTLS (mbedTLS)
// Release builds skip the run-time exclusivity checks (debug builds and the tests keep them): in the
// simulator's inner loop they were an eighth of the time, and the binary is smaller without them.
// No module imports _StringProcessing (Regex, and `contains`/`replacing` of strings; MeshCompanion's
// TextSearch.swift has what the package needs): with it, it and its regular-expression parser were
// 1.1 MB of the release binary. In every configuration, so that a debug build catches a new use.
// No build carries reflection metadata (field and case names for Mirror): nothing here reads it, and
// the types whose values are printed have descriptions of their own (each module's
// Descriptions.swift). In every configuration, so that the debug build and every test print
// exactly what the release binary prints: a newly printed value without a description shows its
// type's name in the tests too (DescriptionTests), not only in the release binary.
let releaseSettings: [SwiftSetting] = [
    .unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release)),
    .unsafeFlags(["-Xfrontend", "-disable-reflection-metadata",
                  "-Xfrontend", "-disable-implicit-string-processing-module-import"]),
]

let package = Package(
    name: "pocketmesh",
    products: [
        .executable(name: "pocketmesh", targets: ["pocketmesh"]),
        .library(name: "MeshCompanion", targets: ["MeshCompanion"]),
        .library(name: "MeshAir", targets: ["MeshAir"]),
        .library(name: "MeshSession", targets: ["MeshSession"]),
        .library(name: "MeshOps", targets: ["MeshOps"]),
        .library(name: "MeshNode", targets: ["MeshNode"]),
        .library(name: "MeshSim", targets: ["MeshSim"]),
        .library(name: "MeshStore", targets: ["MeshStore"]),
        .library(name: "MeshTerminal", targets: ["MeshTerminal"]),
        .library(name: "MeshNet", targets: ["MeshNet"]),
        .library(name: "MeshHub", targets: ["MeshHub"]),
        .library(name: "MeshBridge", targets: ["MeshBridge"]),
    ],
    // No package dependencies: crypto comes from libsodium and mbedTLS (Debian's static archives), the
    // command line's grammar from the operation table.
    targets: [
        // Companion frames: codes, zero-copy decoders, encoders, serial/TCP framing. Standard library only.
        .target(name: "MeshCompanion", swiftSettings: releaseSettings),
        // On-air packets and their crypto.
        .target(name: "MeshAir", dependencies: ["MeshCompanion", "CSodium", "CMeshCrypto"], swiftSettings: releaseSettings),
        // libsodium (Debian's libsodium-dev, static archive): SHA-256/512, Ed25519, X25519, random bytes.
        .systemLibrary(name: "CSodium"),
        // MeshCore's crypto in C over libsodium and mbedTLS: Ed25519 from a 64-byte expanded key, the
        // firmware's ECDH, AES-128 blocks, HMAC-SHA256, and SHA-1 for the WebSocket handshake.
        .target(name: "CMeshCrypto", linkerSettings: [.linkedLibrary("sodium"), .linkedLibrary("mbedcrypto")]),
        // BlueZ headers only (libbluetooth-dev): structs and constants; nothing is linked, so the
        // binary starts on systems without BlueZ.
        .systemLibrary(name: "CBluetooth"),
        // The one errno type and EINTR policy (`Errno`, `sys`, `retryingOnInterrupt`): below the
        // links and the store, which both make system calls. Glibc only.
        .target(name: "MeshErrno", swiftSettings: releaseSettings),
        // Byte links (serial, TCP, BLE), discovery, the poll loop, Unix sockets and state files.
        .target(name: "MeshLink", dependencies: ["MeshErrno", "MeshNet", "CBluetooth", "CMeshLink"], swiftSettings: releaseSettings),
        // C helpers for MeshLink: _GNU_SOURCE calls, the signal self-pipe, and libudev loaded with
        // dlopen (so the binary starts without libudev and falls back to sysfs).
        .target(name: "CMeshLink"),
        // mbedTLS (Debian's libmbedtls-dev, static archives): linked into the release binary.
        .systemLibrary(name: "CMbedTLS"),
        // A TLS client session over mbedTLS that does no I/O (bytes in, bytes out), for the
        // daemon's MQTT connections.
        .target(name: "CMeshTLS", dependencies: ["CMbedTLS"],
                linkerSettings: [.linkedLibrary("mbedtls"), .linkedLibrary("mbedx509"), .linkedLibrary("mbedcrypto")]),
        // One conversation with one radio, sans-I/O (the command line's blocking shell over a
        // link, `Radio`, is MeshDaemonClient's).
        .target(name: "MeshSession", dependencies: ["MeshCompanion", "MeshAir"], swiftSettings: releaseSettings),
        // One operation per user action (device and settings, contacts, channels, messaging, remote
        // nodes) over a session, with one result model (`Value`, JSON) and one error type: the
        // command line and the daemon's socket API are two front ends of it; the API's messages
        // and the JSON of stored records, which the daemon, the hub and the bridges share.
        .target(name: "MeshOps", dependencies: ["MeshCompanion", "MeshAir", "MeshSession", "MeshLink", "MeshStore", "MeshNet"],
                swiftSettings: releaseSettings),
        // Flat-file persistence; its system calls go through MeshErrno (one EINTR policy).
        .target(name: "MeshStore", dependencies: ["MeshCompanion", "MeshErrno"], swiftSettings: releaseSettings),
        // Network codecs with no I/O (bytes in, bytes and events out): JSON, the MQTT 3.1.1 client
        // session, broker URLs and reconnect backoff, DNS, WebSocket client and server. Standard
        // library only.
        .target(name: "MeshNet", swiftSettings: releaseSettings),
        // The terminal chat's screen, keys and line editor (sans-I/O, standard library only).
        .target(name: "MeshTerminal", swiftSettings: releaseSettings),
        // A MeshCore node (repeater, room server, companion) on an air: the simulator's, or one real
        // radio's. Standard library plus MeshAir's crypto.
        .target(name: "MeshNode", dependencies: ["MeshCompanion", "MeshAir"], swiftSettings: releaseSettings),
        // Simulated radios and the air between them.
        .target(name: "MeshSim", dependencies: ["MeshCompanion", "MeshAir", "MeshNode", "MeshLink", "MeshNet"], swiftSettings: releaseSettings),
        // What a command uses to reach a radio: a running daemon (the client, the frame tunnel, the
        // registry of running daemons and the runtime folder) or its own link (`Radio`, the blocking
        // shell of a session on a poll loop).
        .target(name: "MeshDaemonClient", dependencies: ["MeshCompanion", "MeshSession", "MeshOps", "MeshStore", "MeshLink", "MeshNet"],
                swiftSettings: releaseSettings),
        // The companion hub: TCP and WebSocket listeners for companion apps, each client's queue and
        // turn at the radio, and the apps' cursors; a part of the daemon's loop.
        .target(name: "MeshHub", dependencies: ["MeshCompanion", "MeshAir", "MeshLink", "MeshNet", "MeshOps"],
                swiftSettings: releaseSettings),
        // The MQTT chat bridge and the packet observer, their broker connections (DNS, TCP, TLS over
        // mbedTLS, WebSocket); parts of the daemon's loop.
        .target(name: "MeshBridge", dependencies: ["MeshCompanion", "MeshAir", "MeshSession", "MeshLink", "MeshNet", "MeshOps", "MeshStore",
                                                   "CMeshTLS"], swiftSettings: releaseSettings),
        // The long-running service.
        // The web console's page, gzip-compressed, as constant bytes (scripts/gen-web-page.py).
        .target(name: "CMeshWebPage"),
        .target(name: "MeshDaemon", dependencies: ["MeshCompanion", "MeshAir", "MeshSession", "MeshOps", "MeshStore", "MeshLink", "CMeshLink",
                                                   "MeshNet", "MeshDaemonClient", "MeshHub", "MeshBridge", "CMeshWebPage"], swiftSettings: releaseSettings),
        .executableTarget(
            name: "pocketmesh",
            dependencies: [
                "MeshCompanion", "MeshAir", "MeshLink", "MeshSession", "MeshOps", "MeshStore", "MeshNode", "MeshSim", "MeshDaemon", "MeshDaemonClient", "MeshHub", "MeshBridge", "MeshTerminal", "MeshNet",
            ],
            path: "cmd/pocketmesh",
            swiftSettings: releaseSettings
        ),
        .testTarget(name: "MeshCompanionTests", dependencies: ["MeshCompanion"]),
        .testTarget(name: "MeshAirTests", dependencies: ["MeshAir", "CSodium"]),  // libsodium's own signing checks ours
        .testTarget(name: "MeshLinkTests", dependencies: ["MeshLink"]),
        .testTarget(name: "MeshSessionTests", dependencies: ["MeshSession", "MeshOps", "MeshNode", "MeshSim", "MeshDaemonClient", "MeshLink"]),  // the session and the operations over it
        .testTarget(name: "MeshStoreTests", dependencies: ["MeshStore", "MeshLink"]),  // MeshLink: the EINTR layer the store uses
        .testTarget(name: "MeshTerminalTests", dependencies: ["MeshTerminal", "MeshSession"]),
        .testTarget(name: "MeshNetTests", dependencies: ["MeshNet"]),
        .testTarget(name: "MeshNodeTests", dependencies: ["MeshNode", "MeshAir"]),
        .testTarget(name: "MeshSimTests", dependencies: ["MeshNode", "MeshSim", "MeshSession", "MeshNet"]),
        .testTarget(name: "MeshDaemonTests", dependencies: ["MeshDaemon", "MeshHub", "MeshBridge", "MeshDaemonClient", "MeshNode", "MeshSim", "MeshNet", "CSodium"]),
        // The command line against the operation table (MeshOps' OperationTable).
        .testTarget(name: "PocketMeshCLITests", dependencies: ["pocketmesh", "MeshDaemon", "MeshDaemonClient", "MeshOps", "MeshNode"]),
    ],
    swiftLanguageModes: [.v5]
)
