// swift-tools-version: 6.1
// Benchmarks for PocketMesh, kept out of the main package so that its build stays lean.
//   cd bench && swift package benchmark
import PackageDescription

// A path dependency is named after its folder, which differs between clones; derive it.
let rootIdentity: String = {
    var parts = #filePath.split(separator: "/").map(String.init)
    parts.removeLast(2)  // "Package.swift", "bench"
    return (parts.last ?? "pocketmesh").lowercased()
}()

let package = Package(
    name: "pocketmesh-bench",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "FrameDecode",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "MeshCompanion", package: rootIdentity),
                .product(name: "MeshSession", package: rootIdentity),
            ],
            path: "Benchmarks/FrameDecode",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v5]
)
