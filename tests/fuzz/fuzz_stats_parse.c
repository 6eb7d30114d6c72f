/* libFuzzer target: arbitrary bytes as memcached's reply to the poller's
 * pipelined stats batch; the batch parser must never read past its input,
 * never consume more than it was given, and always end in a defined state.
 * Build with -DSLABTAP_FUZZ=ON (clang). */
#include <stdint.h>
#include <stdlib.h>

#include "protocol/stats_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct stats_sample s;
    static int ready;
    struct stats_parse_batch b;
    size_t pos = 0;
    if (!ready) {
        stats_sample_init(&s);
        ready = 1;
    }
    stats_parse_batch_begin(&b, &s, STATS_R_ALL);
    while (pos < size) {
        size_t used = 0;
        size_t chunk = 1 + (data[pos] % 61);
        if (chunk > size - pos)
            chunk = size - pos;
        enum stats_parse_result r =
            stats_parse_batch_feed(&b, (const char *)data + pos, chunk, &used);
        if (used > chunk)
            abort();
        pos += used;
        if (r != STATS_PARSE_NEED_MORE)
            break;
        if (used != chunk)
            abort();
    }
    return 0;
}
