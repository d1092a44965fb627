// The Swift standard library's Unicode scalar names (Unicode.Scalar.Properties.name and
// .nameAlias) are 550 KB of tables that a static binary always carries: the standard library's one
// object file that calls their lookup cannot be split by the linker. Nothing here asks a scalar for
// its name, so the release link (scripts/release.sh, scripts/release-aarch64.sh) points the lookup at
// this function instead (--defsym), and the tables are dropped as unused: a name asked for would be
// nil. Debug builds and the tests keep the standard library's.
#include <stdint.h>

intptr_t pocketmesh_unicode_no_scalar_name(uint32_t scalar, uint8_t *buffer, intptr_t capacity) {
    (void)scalar;
    (void)buffer;
    (void)capacity;
    return 0;
}

const char *pocketmesh_unicode_no_name_alias(uint32_t scalar) {
    (void)scalar;
    return 0;
}
