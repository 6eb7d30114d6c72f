/* sample: key sampling and its error. See sample.h. */
#include "core/sample.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int sample_parse(const char *text, uint32_t *n)
{
    const char *p = text;
    char *end;
    if (!text || !*text)
        return -1;
    if (!strcmp(text, "off") || !strcmp(text, "all")) {
        *n = 1;
        return 0;
    }
    if (!strcmp(text, "none")) {
        *n = SAMPLE_NONE;
        return 0;
    }
    if (!strncmp(p, "1/", 2))
        p += 2;
    if (*p < '0' || *p > '9')
        return -1;
    errno = 0;
    unsigned long v = strtoul(p, &end, 10);
    if (errno || *end || v < 1 || v > SAMPLE_MAX_N)
        return -1;
    *n = (uint32_t)v;
    return 0;
}

/* splitmix64's finalizer: FNV-1a's low bits follow the key's last bytes
 * too closely to be taken modulo N as they are */
static uint64_t sample_mix(uint64_t h)
{
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 31;
    return h;
}

bool sample_keep(uint64_t key_hash, uint32_t n)
{
    return n <= 1 || (n != SAMPLE_NONE && sample_mix(key_hash) % n == 0);
}

double sample_scale(double kept_sum, uint32_t n)
{
    return n <= 1 ? kept_sum : kept_sum * (double)n;
}

double sample_error(double kept_sumsq, double x_floor, uint32_t n)
{
    double floor2 = x_floor * x_floor;
    if (n <= 1)
        return 0;
    if (kept_sumsq < floor2)
        kept_sumsq = floor2;
    return SAMPLE_Z * sqrt((double)n * ((double)n - 1) * kept_sumsq);
}
