import CSodium
@testable import MeshAir

func hex(_ s: String) -> [UInt8] { AirHex.decode(s)! }
func hexOf<S: Sequence>(_ b: S) -> String where S.Element == UInt8 { AirHex.encode(b) }

/// Parties of the derived vectors (reference 4.11 B).
enum Vectors {
    /// Firmware-embedded test client keypair (`LocalIdentity::validatePrivateKey`).
    static let aPrivate = "7065e18fd9fabb70c1ed90dca19907de698c88b709ea146eafd93d9b830c7b60c4681193c79bbc39945ba8064104bb618f8fd7a84a0af6f57033d6e8ddcd6471"
    static let aPublic = "1ec77175b0918ed206f9ae04ec136d6d5d4315bb26305427f645b492e9350c10"
    /// meshcore-decoder sample keypair (key-derivation.test.ts).
    static let bPrivate = "18469d6140447f77de13cd8d761e605431f52269fbff43b0925752ed9e6745435dc6a86d2568af8b70d3365db3f88234760c8ecc645ce469829bc45b65f1d5d5"
    static let bPublic = "4852b69364572b52efa1b6bb3e6d0abed4f389a1cbfbb60a9bba2cce649caf0e"
    static let secretAB = "fa3e40c00aacdad37c94b1bbf4dd5e34580dcf312fe676a46ff210968bef8b30"

    static let a = try! LocalIdentity(privateKey: hex(aPrivate))
    static let b = try! LocalIdentity(privateKey: hex(bPrivate))
}

/// libsodium's own seed-based Ed25519 (`crypto_sign_seed_keypair`, `crypto_sign_detached`,
/// `crypto_sign_verify_detached`): a path independent of MeshAir's signing from the expanded key.
enum Sodium {
    static func keyPair(seed: [UInt8]) -> (publicKey: [UInt8], secretKey: [UInt8]) {
        var pk = [UInt8](repeating: 0, count: 32), sk = [UInt8](repeating: 0, count: 64)
        precondition(crypto_sign_seed_keypair(&pk, &sk, seed) == 0)
        return (pk, sk)
    }

    static func sign(_ message: [UInt8], secretKey: [UInt8]) -> [UInt8] {
        var sig = [UInt8](repeating: 0, count: 64)
        precondition(crypto_sign_detached(&sig, nil, message, UInt64(message.count), secretKey) == 0)
        return sig
    }

    static func verify(_ signature: [UInt8], _ message: [UInt8], publicKey: [UInt8]) -> Bool {
        signature.count == 64 && crypto_sign_verify_detached(signature, message, UInt64(message.count), publicKey) == 0
    }

    static func sha512(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 64)
        crypto_hash_sha512(&out, bytes, UInt64(bytes.count))
        return out
    }
}
