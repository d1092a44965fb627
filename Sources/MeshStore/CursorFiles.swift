import Glibc

// Housekeeping of delivery cursors kept per client (the companion hub keeps one per app name):
// which exist, when each was last written, and removing one.
extension RadioStore {
    /// The cursors whose names start with `prefix`, with the wall-clock second each was last
    /// written (its file's modification time).
    public func cursors(prefix: String) -> [(name: String, writtenAt: Int)] {
        var out: [(name: String, writtenAt: Int)] = []
        guard let d = opendir(directory) else { return out }
        defer { closedir(d) }
        let filePrefix = "cursor-" + prefix
        while let e = readdir(d) {
            let file = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard file.hasPrefix(filePrefix) else { continue }
            var st = stat()
            guard lstat(directory + "/" + file, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { continue }
            out.append((String(file.dropFirst(7)), Int(st.st_mtim.tv_sec)))
        }
        return out
    }

    /// Removes a cursor (nothing happens if it does not exist).
    public func removeCursor(_ name: String) throws {
        try Self.checkName(name)
        guard !readOnly else { throw StoreError.readOnly }
        do { try files.ops.unlink(directory + "/cursor-" + name) } catch {
            if error.code != ENOENT { throw error }
        }
    }
}
