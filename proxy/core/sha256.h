/* sha256: SHA-256 as FIPS 180-4 defines it, for fingerprinting operation
 * plans (two runs that hash alike sent the same workload).
 * Owns: the compression function, padding, and hex output.
 * Must never: allocate, do I/O, or be used where secrecy matters (no
 * constant-time care, no key handling; it is a checksum here). */
#ifndef SLABTAP_SHA256_H
#define SLABTAP_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_LEN 32
#define SHA256_BLOCK_LEN 64
#define SHA256_HEX_LEN (2 * SHA256_DIGEST_LEN) /* without the NUL */

struct sha256_ctx {
    uint32_t h[8];
    uint64_t total; /* bytes hashed so far */
    uint8_t block[SHA256_BLOCK_LEN];
    size_t block_len; /* bytes waiting in block */
};

void sha256_init(struct sha256_ctx *c);
void sha256_update(struct sha256_ctx *c, const void *data, size_t len);
/* Pads, writes the digest, and leaves c unusable until sha256_init. */
void sha256_final(struct sha256_ctx *c, uint8_t out[SHA256_DIGEST_LEN]);

/* One-shot convenience. */
void sha256(const void *data, size_t len, uint8_t out[SHA256_DIGEST_LEN]);
/* Lower-case hex, NUL-terminated (hex needs SHA256_HEX_LEN + 1 bytes). */
void sha256_hex(const uint8_t digest[SHA256_DIGEST_LEN], char hex[SHA256_HEX_LEN + 1]);

#endif
