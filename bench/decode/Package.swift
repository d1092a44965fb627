// swift-tools-version: 6.1
// The receive path, measured like meshcore_py's (bench/py_reader_bench.py): a plain release-built
// executable (run by bench/run-decode.sh); see ../README.md for the numbers.
import PackageDescription

let package = Package(
    name: "decode-bench",
    dependencies: [.package(name: "pocketmesh", path: "../..")],
    targets: [
        .executableTarget(
            name: "decode-bench",
            dependencies: [
                .product(name: "MeshCompanion", package: "pocketmesh"),
                .product(name: "MeshSession", package: "pocketmesh"),
            ],
            path: "Sources"
        ),
    ],
    swiftLanguageModes: [.v5]
)
