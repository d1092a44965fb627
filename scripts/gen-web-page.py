#!/usr/bin/env python3
"""Makes Sources/CMeshWebPage/page.c from web/index.html: the page gzip-compressed (mtime 0, so the
same page gives the same bytes) as constant bytes that the daemon serves as they are, and the
SHA-256 hashes of the page's inline scripts for its Content-Security-Policy.

    python3 scripts/gen-web-page.py            # writes the C file
    python3 scripts/gen-web-page.py --check    # exits 1 if the C file is not current
"""
import base64, gzip, hashlib, os, re, sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
page_path = os.path.join(root, "web", "index.html")
out_path = os.path.join(root, "Sources", "CMeshWebPage", "page.c")


def generate():
    with open(page_path, "rb") as f:
        page = f.read()
    packed = gzip.compress(page, compresslevel=9, mtime=0)
    # Inline scripts (no src=): allowed by their hashes, nothing else inline runs.
    hashes = []
    for m in re.finditer(rb"<script(?![^>]*\bsrc\s*=)[^>]*>(.*?)</script>", page, re.S | re.I):
        h = "'sha256-" + base64.b64encode(hashlib.sha256(m.group(1)).digest()).decode() + "'"
        if h not in hashes:
            hashes.append(h)
    out = ["/* Made by scripts/gen-web-page.py from web/index.html: do not edit; run the script again.",
           "   The page (%d bytes) gzip-compressed (%d bytes). */" % (len(page), len(packed)),
           '#include "CMeshWebPage.h"',
           "",
           "static const unsigned char page[%d] = {" % len(packed)]
    for i in range(0, len(packed), 20):
        out.append("    " + ",".join("0x%02x" % b for b in packed[i:i + 20]) + ",")
    out += ["};",
            "",
            "const unsigned char *pm_web_page_gzip(size_t *size) {",
            "    *size = sizeof page;",
            "    return page;",
            "}",
            "",
            "const char *pm_web_page_script_sources(void) {",
            '    return "%s";' % " ".join(hashes),
            "}",
            ""]
    return "\n".join(out).encode()


def main():
    data = generate()
    if "--check" in sys.argv[1:]:
        try:
            with open(out_path, "rb") as f:
                current = f.read()
        except OSError:
            current = b""
        if current != data:
            print("Sources/CMeshWebPage/page.c is not current: run python3 scripts/gen-web-page.py", file=sys.stderr)
            return 1
        return 0
    with open(out_path, "wb") as f:
        f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
