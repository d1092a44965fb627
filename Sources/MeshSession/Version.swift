/// PocketMesh's version: `pocketmesh --version`, the daemon's `ping`, the man page. Kept here only.
public enum PocketMeshVersion {
    public static let string = "0.2.0"
}
