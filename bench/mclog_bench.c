/* mclog_bench: the watch/metadump line parser's speed (protocol/mclog.h),
 * single thread, on lines as memcached 1.6.18 prints them, fed in 16 KiB
 * reads (lines cut across reads as on a socket). Not a test: build Release
 * and run `build/mclog_bench [MB]` (default 256 MB of each kind). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "protocol/mclog.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void run(const char *name, int metadump, size_t mb)
{
    size_t cap = mb << 20, len = 0;
    char *buf = malloc(cap + 512);
    unsigned long i = 0;

    if (!buf)
        exit(1);
    while (len < cap) {
        int n = metadump ? snprintf(buf + len, 512,
                                    "key=user%%3A%lu exp=-1 la=1796212816 cas=%lu fetch=no "
                                    "cls=12 size=1066\n",
                                    i, i + 1)
                         : snprintf(buf + len, 512,
                                    "ts=1796212812.%lu gid=%lu type=item_store key=user%%3A%lu "
                                    "status=stored cmd=set ttl=0 clsid=12 cfd=24 size=1000\n",
                                    i % 1000000, i, i);
        len += (size_t)n;
        i++;
    }

    static struct mclog_parser p;
    static struct mclog_event ev;
    size_t events = 0, errors = 0;
    double t0 = now_s();
    mclog_init(&p);
    for (size_t at = 0; at < len;) {
        size_t chunk = len - at < 16384 ? len - at : 16384;
        size_t off = 0;
        while (off < chunk) {
            size_t used;
            enum mclog_result r = mclog_next(&p, buf + at + off, chunk - off, &used, &ev);
            off += used;
            if (r == MCLOG_NEED_MORE)
                break;
            events++;
            errors += r == MCLOG_ERROR;
        }
        at += chunk;
    }
    double el = now_s() - t0;
    printf("%-10s %9zu lines  %6.1f MB  %6.3f s  %7.2f M lines/s  %6.0f MB/s  errors %zu\n", name,
           events, (double)len / 1e6, el, (double)events / el / 1e6, (double)len / el / 1e6,
           errors);
    free(buf);
}

int main(int argc, char **argv)
{
    size_t mb = argc > 1 ? (size_t)atol(argv[1]) : 256;
    run("watch", 0, mb);
    run("metadump", 1, mb);
    return 0;
}
