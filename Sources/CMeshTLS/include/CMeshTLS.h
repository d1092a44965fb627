#pragma once
// Placeholder: the non-blocking TLS client over mbedTLS.
