// mbedTLS (Debian's libmbedtls-dev): the headers CMeshTLS uses. Linked statically into the
// release binary (the package ships .a archives).
#include <mbedtls/ssl.h>
#include <mbedtls/entropy.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/x509_crt.h>
#include <mbedtls/error.h>
