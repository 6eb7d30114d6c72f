/* scrape: the /metrics exposition of a running proxy -- the proxy's own
 * counters, the recorder's and the store's figures, and memcached's from
 * the stats poller's latest sample -- written through a prom_writer.
 *
 * Owns: which value each family of server/metrics.h takes (the recorder's
 * and retention's gauges copied into the proxy's struct metrics at each
 * scrape), the families built from a state rather than a field (requests by
 * command, rows lost by reason, memcached's set hits), and the rule "no
 * memcached sample, no memcached samples" (a gap, never a stale value).
 * The memcached_* families are written per target when the proxy has
 * shadows (issue 23): the label target="primary" on the primary's and
 * target="NAME" (struct shadow's name) on each shadow's.
 * Must never: declare a metric outside server/metrics.h's tables (but the
 * labelled families above), frame the HTTP answer (the caller's route does),
 * block, or touch the store (the recorder's counters, and the SQLite
 * file's size on disk: retain_disk_bytes). */
#ifndef SLABTAP_SCRAPE_H
#define SLABTAP_SCRAPE_H

#include <stdbool.h>

#include "protocol/stats_parse.h"
#include "record/recorder.h"
#include "record/sink.h"
#include "server/poller.h"
#include "server/prom.h"
#include "server/proxy.h"
#include "server/shadow.h"

/* What a scrape reads: last is the poller's latest sample (NULL: none yet). */
struct scrape_sources {
    struct proxy *px;
    struct recorder *rec;
    const struct poller *poller;
    enum sink_kind store;
    const struct stats_sample *last;
    /* the shadows (NULL or none: no slabtap_shadow_* samples, and the
     * primary's memcached_* samples unlabelled, as before issue 23); with
     * any, each memcached_* family has a sample per target, labelled
     * target="primary" / target="NAME" */
    const struct shadow_set *shadows;
};

/* Loop thread: every family into w; the first error of the exposition
 * (prom_writer_finish). */
enum prom_err scrape_write(struct prom_writer *w, const struct scrape_sources *src);

#endif
