/* test_sha256: sha256 against the FIPS 180-2 / NIST example vectors, the
 * padding edges (55, 56, 64 ... bytes; digests from an independent
 * implementation), and every way of splitting one input across updates.
 * Prints every failing case; exits 1 if any. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "core/sha256.h"

static void hex_of(const void *data, size_t len, char hex[SHA256_HEX_LEN + 1])
{
    uint8_t d[SHA256_DIGEST_LEN];
    sha256(data, len, d);
    sha256_hex(d, hex);
}

static void test_nist_vectors(void)
{
    static const struct {
        const char *msg;
        const char *digest;
    } v[] = {
        { "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
        { "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
        { "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
        { "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmno"
          "pqrlmnopqrsmnopqrstnopqrstu",
          "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1" },
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char hex[SHA256_HEX_LEN + 1];
        hex_of(v[i].msg, strlen(v[i].msg), hex);
        CHECK(!strcmp(hex, v[i].digest), "vector %zu: got %s want %s", i, hex, v[i].digest);
    }
}

/* One million 'a', fed in uneven pieces so the block buffering is used. */
static void test_million_a(void)
{
    static char chunk[997];
    memset(chunk, 'a', sizeof chunk);
    struct sha256_ctx c;
    sha256_init(&c);
    size_t left = 1000000;
    while (left) {
        size_t n = left < sizeof chunk ? left : sizeof chunk;
        sha256_update(&c, chunk, n);
        left -= n;
    }
    uint8_t d[SHA256_DIGEST_LEN];
    char hex[SHA256_HEX_LEN + 1];
    sha256_final(&c, d);
    sha256_hex(d, hex);
    CHECK(!strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"),
          "million a: %s", hex);
}

/* Lengths around the padding boundary: byte i is (i*7+3) & 0xff. */
static void test_padding_edges(void)
{
    static const struct {
        size_t len;
        const char *digest;
    } v[] = {
        { 55, "e7313d333c272e639f790978283f9eb392e843d0f29b7016828bb1daa4aac70b" },
        { 56, "4324d65f3c103567f5589c710bc08f8523f929a9272e3af36fc968e52abc6c27" },
        { 57, "35df609437dcfea3279283ab79fd554e2bf78f8f7ae2de532d8ee300b09e8f73" },
        { 63, "81c80242132f230c3bd41b3e63bbcff16107339549214a99614ff26664625055" },
        { 64, "39e3d7b6b5d075d37d053ad89b24b41bef4f3c29760c84447cab3f3be1882241" },
        { 65, "aacca6ff74fdbb296d165a45cecfa04e5127bc008770fbbdd48006f2d2fae95e" },
        { 119, "9ce7368e4daf32341631b492e80359dc9f594b48453cd0dd5bf0b19279cc177e" },
        { 120, "7836b787757e95e58b3ca5aec90b1b004e8deba1e50e9675af9cabf1a13a04b5" },
        { 128, "d2742f1f4ac6bb7ca2b239ee18402ba8b3f9f8e652d2a72973c2b9ba11c08cf6" },
    };
    unsigned char buf[128];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)((i * 7 + 3) & 0xff);
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char hex[SHA256_HEX_LEN + 1];
        hex_of(buf, v[i].len, hex);
        CHECK(!strcmp(hex, v[i].digest), "len %zu: got %s want %s", v[i].len, hex, v[i].digest);
    }
}

/* Every split of a 130-byte message into two updates (and a zero-length
 * update in between) gives the one-shot digest. */
static void test_splits(void)
{
    unsigned char buf[130];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)(i * 31 + 1);
    uint8_t want[SHA256_DIGEST_LEN];
    sha256(buf, sizeof buf, want);
    int bad = 0;
    for (size_t cut = 0; cut <= sizeof buf; cut++) {
        struct sha256_ctx c;
        uint8_t got[SHA256_DIGEST_LEN];
        sha256_init(&c);
        sha256_update(&c, buf, cut);
        sha256_update(&c, buf + cut, 0);
        sha256_update(&c, buf + cut, sizeof buf - cut);
        sha256_final(&c, got);
        if (memcmp(got, want, sizeof want))
            bad++;
    }
    CHECK(bad == 0, "%d splits differ from the one-shot digest", bad);
    /* byte at a time */
    struct sha256_ctx c;
    uint8_t got[SHA256_DIGEST_LEN];
    sha256_init(&c);
    for (size_t i = 0; i < sizeof buf; i++)
        sha256_update(&c, buf + i, 1);
    sha256_final(&c, got);
    CHECK(!memcmp(got, want, sizeof want), "byte-at-a-time digest differs");
}

int main(void)
{
    test_nist_vectors();
    test_million_a();
    test_padding_edges();
    test_splits();
    return check_done("test_sha256");
}
