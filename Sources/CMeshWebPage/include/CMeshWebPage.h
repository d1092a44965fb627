#ifndef CMESHWEBPAGE_H
#define CMESHWEBPAGE_H
#include <stddef.h>

/* The web console's page (web/index.html), gzip-compressed, as the daemon serves it, and the
   hashes of its inline scripts for its Content-Security-Policy. Both are made by
   scripts/gen-web-page.py (Sources/CMeshWebPage/page.c). */
const unsigned char *pm_web_page_gzip(size_t *size);
const char *pm_web_page_script_sources(void);

#endif
