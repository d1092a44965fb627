import CMeshWebPage

/// The web console's page as the daemon serves it: web/index.html gzip-compressed, constant bytes
/// in the binary (Sources/CMeshWebPage/page.c, made by scripts/gen-web-page.py), and the hashes of
/// its inline scripts for its Content-Security-Policy.
enum WebPage {
    /// The page, gzip-compressed (copied once, when first served).
    static let gzipped: [UInt8] = {
        var size = 0
        let start = pm_web_page_gzip(&size)
        return Array(UnsafeBufferPointer(start: start, count: size))
    }()

    static let scriptSources = String(cString: pm_web_page_script_sources())
}
