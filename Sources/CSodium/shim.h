// libsodium (Debian's libsodium-dev): hashes, Ed25519 verification and random bytes for MeshAir.
// Linked statically into the release binary (the package ships libsodium.a; only the objects
// used are linked).
#include <sodium.h>
