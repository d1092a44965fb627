import MeshCompanion
import MeshStore
import MeshLink
import MeshOps

/// Which radio a link last reached: `STATE/links/<link slug>` holds the radio's public key (hex),
/// so `history --tcp HOST` finds the store of the radio behind that link. Whoever opens a radio's
/// store for writing through a link (the daemon, `chat` and `sync` without a daemon) records it.
public enum StoreLinks {
    public static func path(stateRoot: String, link: String) -> String {
        stateRoot + "/links/" + DaemonRegistry.slug(forLink: link)
    }

    /// Records that `link` reaches the radio with `publicKey`.
    public static func remember(stateRoot: String, link: String, publicKey: [UInt8]) {
        try? UnixSocket.makeDirectory(stateRoot + "/links")
        try? StateFile.write(path(stateRoot: stateRoot, link: link), HexCodec.encode(Array(publicKey)) + "\n")
    }

    /// The public key (hex) of the radio `link` reached last, if any.
    public static func radio(stateRoot: String, link: String) -> String? {
        guard let hex = StateFile.readString(path(stateRoot: stateRoot, link: link))?.filter({ !$0.isWhitespace }),
              hex.count == 64, HexCodec.decode(hex) != nil else { return nil }
        return hex
    }
}
