/* libFuzzer target: arbitrary bytes through the request and response
 * parsers, split at a fuzzer-chosen point, checking their invariants --
 * consumption never exceeds the input, every byte is accounted for, the
 * same stream split differently yields the same requests. Build with
 * -DSLABTAP_FUZZ=ON (clang); run: build-fuzz/fuzz_mc_parse -max_total_time=60 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/mc_parse.h"

#define MAX_REQS 4096

struct seen {
    enum mc_cmd cmd[MAX_REQS];
    size_t bytes[MAX_REQS];
    size_t n;
    int error;
};

static void feed_requests(const uint8_t *data, size_t size, size_t split, struct seen *out)
{
    static struct mc_req_parser p;
    struct mc_request r;
    size_t bounds[2][2] = { { 0, split }, { split, size } };
    mc_req_init(&p);
    memset(out, 0, sizeof *out);
    for (int part = 0; part < 2 && !out->error; part++) {
        size_t pos = bounds[part][0], end = bounds[part][1];
        while (pos < end) {
            size_t used = 0;
            enum mc_result res = mc_req_parse(&p, (const char *)data + pos, end - pos, &used, &r);
            if (used > end - pos)
                abort();
            pos += used;
            if (res == MC_ERROR) {
                out->error = 1;
                break;
            }
            if (res == MC_NEED_MORE) {
                if (pos != end)
                    abort(); /* need-more must consume everything */
                break;
            }
            if (out->n < MAX_REQS) {
                out->cmd[out->n] = r.cmd;
                out->bytes[out->n] = r.bytes;
                out->n++;
            }
            if (used == 0 && res != MC_OK)
                abort();
        }
    }
}

static void feed_responses(const uint8_t *data, size_t size)
{
    static struct mc_resp_parser p;
    struct mc_line l;
    size_t pos = 0;
    mc_resp_init(&p);
    while (pos < size) {
        size_t used = 0;
        enum mc_result res = mc_resp_parse(&p, (const char *)data + pos, size - pos, &used, &l);
        if (used > size - pos)
            abort();
        pos += used;
        if (res != MC_OK)
            break;
        if (l.len > MC_LINE_MAX || (l.text && strlen(l.text) > l.len))
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct seen whole, split;
    if (size == 0)
        return 0;
    size_t cut = data[0] % (size + 1);
    feed_requests(data, size, size, &whole);
    feed_requests(data, size, cut, &split);
    /* memcached decides by the bytes, not by how they arrive: the same
     * requests must come out (up to where a line over 2048 bytes closes) */
    if (!whole.error && !split.error) {
        if (whole.n != split.n)
            abort();
        for (size_t i = 0; i < whole.n && i < MAX_REQS; i++)
            if (whole.cmd[i] != split.cmd[i] || whole.bytes[i] != split.bytes[i])
                abort();
    }
    feed_responses(data, size);
    return 0;
}
