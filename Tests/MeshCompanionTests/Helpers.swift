import MeshCompanion

func hex(_ s: String) -> [UInt8] { HexCodec.decode(s)! }

/// Decodes `frame` and hands the result to `body` while the bytes are alive.
func decoded<R>(_ frame: EncodedFrame, _ body: (CompanionFrame) throws -> R) throws -> R {
    try frame.withUnsafeBytes { try body(try CompanionFrame.decode($0)) }
}

func decoded<R>(_ bytes: [UInt8], _ body: (CompanionFrame) throws -> R) throws -> R {
    try bytes.withUnsafeBytes { try body(try CompanionFrame.decode($0)) }
}

let keyA = PublicKey(hex: "1ec77175b0918ed206f9ae04ec136d6d5d4315bb26305427f645b492e9350c10")!
let keyB = PublicKey(hex: "4852b69364572b52efa1b6bb3e6d0abed4f389a1cbfbb60a9bba2cce649caf0e")!

struct Unexpected: Error { let what: String }
