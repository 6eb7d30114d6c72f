/* keyfmt: what of a key gets recorded. Pure; never allocates. */
#include "core/keyfmt.h"

#include <string.h>

static const char *const mode_names[] = { "full", "prefix", "hash" };

int keyfmt_parse_mode(const char *s, enum keyfmt_mode *out)
{
    for (int i = 0; i < 3; i++) {
        if (!strcmp(s, mode_names[i])) {
            *out = (enum keyfmt_mode)i;
            return 0;
        }
    }
    return -1;
}

const char *keyfmt_mode_name(enum keyfmt_mode mode)
{
    return (unsigned)mode < 3 ? mode_names[mode] : "?";
}

uint64_t keyfmt_hash(const char *key, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)key[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

int keyfmt_text(enum keyfmt_mode mode, const char *key, size_t len, char *out, size_t cap)
{
    size_t n = len;
    if (mode == KEYFMT_HASH || cap == 0)
        return -1;
    if (mode == KEYFMT_PREFIX) {
        n = 0;
        while (n < len && !strchr(":/.|", key[n]))
            n++;
        if (n == len)
            n = 0;
    }
    if (n > cap - 1)
        n = cap - 1;
    memcpy(out, key, n);
    out[n] = '\0';
    return (int)n;
}
