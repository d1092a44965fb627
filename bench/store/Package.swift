// swift-tools-version: 6.1
// Store benchmarks: durable appends, opening a 1,000,000-message store, latest 50 of a thread.
// A plain release-built executable (run.sh); see ../README.md for the numbers.
import PackageDescription

let package = Package(
    name: "store-bench",
    dependencies: [.package(name: "pocketmesh", path: "../..")],
    targets: [
        .executableTarget(
            name: "store-bench",
            dependencies: [.product(name: "MeshStore", package: "pocketmesh")],
            path: "Sources"
        ),
    ],
    swiftLanguageModes: [.v5]
)
