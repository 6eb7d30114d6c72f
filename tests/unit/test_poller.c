/* test_poller: the poller against a REAL memcached that this test starts
 * itself (fork/exec; memcached binds an ephemeral port and names it in a
 * file) and kills at the end, also when a check fails or the test crashes
 * (PR_SET_PDEATHSIG). Owns nothing but the test; must never use a fixed
 * port or leave a memcached running. Every wait is a
 * uv timer with a deadline, so a hang becomes a failed check, not a stuck
 * ctest. Exits non-zero on any failed check.
 *
 * Phases: samples arrive and are consistent (sum of per-class mem_requested
 * == global bytes, version, settings); memcached frozen with SIGSTOP ->
 * ticks are skipped, not queued; memcached killed -> disconnected, no
 * samples; restarted on the same port -> samples resume, reconnects >= 1;
 * poller_sample_now -> a requested sample; poller_close -> every handle
 * closed. Every sample's classes have chunk_size (issue 18).
 *
 * Before memcached starts, a pure part (no socket): the batch the poller
 * sends, answered by a memcached whose `stats slabs` and `stats items`
 * disagree about a class, gives a sample whose every class is whole
 * (issue 18: a class born between the two replies). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include "server/poller.h"

#include "check.h"

/* ---- issue 18: the merge of two replies that disagree (pure) ----------- */

/* Answers the batch stats_parse_batch_command builds for `which`, reply by
 * reply in the order it asks, from the texts given per command; feeds the
 * answer to a batch over s and returns the result. */
static enum stats_parse_result answer_batch(struct stats_sample *s, unsigned which,
                                            const char *stats, const char *slabs, const char *items)
{
    char cmd[STATS_BATCH_CMD_MAX], reply[4096];
    struct stats_parse_batch b;
    size_t len = 0, used = 0;

    reply[0] = '\0';
    stats_parse_batch_command(which, cmd, sizeof cmd);
    for (const char *line = cmd; *line; line = strchr(line, '\n') + 1) {
        const char *text = !strncmp(line, "stats slabs\r\n", 13)   ? slabs
                           : !strncmp(line, "stats items\r\n", 13) ? items
                           : !strncmp(line, "stats\r\n", 7)        ? stats
                                                                   : "";
        len += (size_t)snprintf(reply + len, sizeof reply - len, "%s", text);
    }
    stats_parse_batch_begin(&b, s, which);
    return stats_parse_batch_feed(&b, reply, len, &used);
}

/* Classes present without chunk_size: the NULL chunk_size rows of
 * class_stats. */
static unsigned classes_without_chunk_size(const struct stats_sample *s)
{
    unsigned n = 0;
    int64_t v;

    for (unsigned id = 0; id <= s->max_class_id; id++)
        if (stats_sample_class(s, id) && !stats_sample_get(s, id, "chunk_size", &v))
            n++;
    return n;
}

static void test_class_born_between_replies(void)
{
    static struct stats_sample s; /* a class table: keep it off the stack */
    static const char stats[] = "STAT bytes 1131\r\nEND\r\n";
    static const char slabs_1[] = "STAT 1:chunk_size 96\r\nSTAT 1:total_pages 1\r\n"
                                  "STAT 1:used_chunks 1\r\nSTAT active_slabs 1\r\nEND\r\n";
    static const char slabs_1_3[] = "STAT 1:chunk_size 96\r\nSTAT 1:total_pages 1\r\n"
                                    "STAT 1:used_chunks 1\r\nSTAT 3:chunk_size 152\r\n"
                                    "STAT 3:total_pages 1\r\nSTAT 3:used_chunks 1\r\n"
                                    "STAT active_slabs 2\r\nEND\r\n";
    static const char items_1[] = "STAT items:1:number 1\r\nSTAT items:1:mem_requested 69\r\n"
                                  "END\r\n";
    static const char items_1_3[] = "STAT items:1:number 1\r\nSTAT items:1:mem_requested 69\r\n"
                                    "STAT items:3:number 1\r\nSTAT items:3:mem_requested 1062\r\n"
                                    "END\r\n";
    char cmd[STATS_BATCH_CMD_MAX];
    int64_t v;

    stats_sample_init(&s);
    /* `stats items` is asked before `stats slabs`: a class memcached names
     * in items has a page, and keeps one, so slabs (asked later) names it
     * too. Asked the other way round, a class whose first page came between
     * the two replies is in items alone. */
    stats_parse_batch_command(STATS_R_REQUIRED, cmd, sizeof cmd);
    CHECK(strstr(cmd, "stats items") && strstr(cmd, "stats slabs") &&
              strstr(cmd, "stats items") < strstr(cmd, "stats slabs"),
          "batch %s: stats items must come before stats slabs", cmd);

    /* slabs without class 3, items with it: class 3 is left out, counted */
    CHECK_INT(answer_batch(&s, STATS_R_REQUIRED, stats, slabs_1, items_1_3), STATS_PARSE_OK);
    CHECK_INT(classes_without_chunk_size(&s), 0);
    CHECK_TRUE(stats_sample_class(&s, 3) == NULL);
    CHECK_INT(s.n_classes, 1);
    CHECK_INT(s.max_class_id, 1);
    CHECK_INT(s.classes_partial, 1);
    CHECK_TRUE(stats_sample_get(&s, 1, "chunk_size", &v) && v == 96);
    CHECK_TRUE(stats_sample_get(&s, 1, "mem_requested", &v) && v == 69);

    /* the race as it comes with items first: slabs has class 3, items not
     * yet. Kept: it has its pages, and no items is what items said. */
    CHECK_INT(answer_batch(&s, STATS_R_REQUIRED, stats, slabs_1_3, items_1), STATS_PARSE_OK);
    CHECK_INT(classes_without_chunk_size(&s), 0);
    CHECK_INT(s.n_classes, 2);
    CHECK_INT(s.max_class_id, 3);
    CHECK_INT(s.classes_partial, 0);
    CHECK_INT(s.classes[3].sources, STATS_R_SLABS);
    CHECK_TRUE(stats_sample_get(&s, 3, "chunk_size", &v) && v == 152);
    CHECK_TRUE(!stats_sample_get(&s, 3, "number", &v));

    /* both agree: both classes whole */
    CHECK_INT(answer_batch(&s, STATS_R_REQUIRED, stats, slabs_1_3, items_1_3), STATS_PARSE_OK);
    CHECK_INT(classes_without_chunk_size(&s), 0);
    CHECK_INT(s.n_classes, 2);
    CHECK_INT(s.classes[3].sources, STATS_R_SLABS | STATS_R_ITEMS);
    CHECK_TRUE(stats_sample_get(&s, 3, "mem_requested", &v) && v == 1062);
    stats_sample_fini(&s);
}

/* ---- the memcached under test ----------------------------------------- */

static pid_t mc_pid = -1;
static int mc_port; /* 0 until the first start has read it back */

/* The TCP port in memcached's ports file ("TCP INET: PORT" lines; the file
 * is renamed into place once memcached listens); 0 while there is none. */
static int mc_read_port(const char *path)
{
    FILE *f = fopen(path, "r");
    char line[64];
    int port = 0;

    while (f != NULL && port <= 0 && fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "TCP INET: %d", &port) != 1)
            port = 0;
    if (f != NULL)
        fclose(f);
    return port > 0 && port < 65536 ? port : 0;
}

static int mc_connect(void)
{
    struct sockaddr_in a = { .sin_family = AF_INET,
                             .sin_port = htons((uint16_t)mc_port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct timeval tv = { .tv_sec = 2 };
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void mc_stop(void)
{
    if (mc_pid > 0) {
        kill(mc_pid, SIGKILL); /* kills a stopped process too */
        waitpid(mc_pid, NULL, 0);
        mc_pid = -1;
    }
}

/* Starts memcached and waits (<= 5 s) until it accepts. The first start
 * has memcached bind an ephemeral port itself (-p -1) and read it back from
 * its MEMCACHED_PORT_FILENAME file, as memcached's own t/issue_67.t does:
 * no port is chosen here that someone else could take first. A restart asks
 * for that port again (memcached sets SO_REUSEADDR); if another process took
 * it meanwhile memcached exits and this returns false. */
static bool mc_start(void)
{
    char port[16], ports_file[64];
    pid_t parent = getpid();
    bool ephemeral = mc_port == 0;
    pid_t pid;

    snprintf(port, sizeof port, "%d", ephemeral ? -1 : mc_port);
    snprintf(ports_file, sizeof ports_file, "/tmp/test_poller.%d.ports", (int)parent);
    unlink(ports_file);
    pid = fork();
    if (pid < 0)
        return false;
    if (pid == 0) {
        /* Dies with the test, whatever way the test dies. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        if (ephemeral)
            setenv("MEMCACHED_PORT_FILENAME", ports_file, 1);
        if (geteuid() == 0)
            execlp("memcached", "memcached", "-p", port, "-l", "127.0.0.1", "-U", "0", "-u", "root",
                   (char *)NULL);
        else
            execlp("memcached", "memcached", "-p", port, "-l", "127.0.0.1", "-U", "0",
                   (char *)NULL);
        _exit(127);
    }
    mc_pid = pid;
    for (int i = 0; i < 500; i++) {
        int fd = -1;
        if (ephemeral && mc_port == 0 && (mc_port = mc_read_port(ports_file)) > 0)
            unlink(ports_file);
        if (mc_port > 0 && (fd = mc_connect()) >= 0) {
            close(fd);
            return true;
        }
        if (waitpid(pid, NULL, WNOHANG) == pid) {
            mc_pid = -1;
            break;
        }
        usleep(10000);
    }
    unlink(ports_file);
    return false;
}

/* A blocking `set` on its own socket, never the poller's. */
static bool mc_set(const char *key, unsigned flags, size_t value_len)
{
    char hdr[128], reply[64];
    char *val = malloc(value_len + 2);
    int fd = mc_connect();
    bool ok = false;
    size_t got = 0;

    if (fd < 0 || !val)
        goto out;
    memset(val, 'v', value_len);
    memcpy(val + value_len, "\r\n", 2);
    int n = snprintf(hdr, sizeof hdr, "set %s %u 0 %zu\r\n", key, flags, value_len);
    if (write(fd, hdr, (size_t)n) != n || write(fd, val, value_len + 2) != (ssize_t)(value_len + 2))
        goto out;
    while (got < 8) {
        ssize_t r = read(fd, reply + got, sizeof reply - 1 - got);
        if (r <= 0)
            goto out;
        got += (size_t)r;
    }
    ok = got == 8 && !memcmp(reply, "STORED\r\n", 8);
out:
    if (fd >= 0)
        close(fd);
    free(val);
    return ok;
}

/* memcached 1.6's item size with CAS on (DESIGN.md): what one set adds to
 * `bytes` and to its class's mem_requested. */
static int64_t ntotal(size_t key_len, unsigned flags, size_t value_len)
{
    return (int64_t)(48 + key_len + 1 + (flags ? 4 : 0) + value_len + 2 + 8);
}

/* ---- the loop side ------------------------------------------------------ */

struct ctx {
    uv_loop_t loop;
    struct poller poller;
    uint64_t samples; /* callbacks */
    uint64_t last_seq;
    int64_t last_t_ns;
    uint64_t last_connection;
    uint64_t samples_by_conn[4]; /* [connection] for 1..3 */
    uint64_t settings_fetches;
    uint64_t requested_seen;
    uint64_t bad_sum, bad_version, bad_settings, bad_order, bad_rtt, bad_partial;
    int64_t last_bytes, last_curr_items;
    unsigned last_classes;
    bool closed;
    bool timed_out;
};

static void on_sample(void *ud, const struct stats_sample *s)
{
    struct ctx *c = ud;
    int64_t bytes = -1, sum = 0, v, items = -1;

    c->samples++;
    if (s->seq != c->last_seq + 1 || s->t_ns < c->last_t_ns || s->connection < c->last_connection)
        c->bad_order++;
    c->last_seq = s->seq;
    c->last_t_ns = s->t_ns;
    c->last_connection = s->connection;
    if (s->connection < 4)
        c->samples_by_conn[s->connection]++;
    if (s->rtt_ns == 0 || s->rtt_ns > 5000000000ull)
        c->bad_rtt++;
    /* The invariant the whole project rests on, per sample: the bytes
     * memcached says it stores equal the sum of ntotal per class, which
     * 1.6.18 reports only in `stats items`. */
    for (unsigned id = 0; id <= s->max_class_id; id++)
        if (stats_sample_get(s, id, "mem_requested", &v))
            sum += v;
    if (!stats_sample_global(s, "bytes", &bytes) || bytes != sum)
        c->bad_sum++;
    if (classes_without_chunk_size(s) || s->classes_partial)
        c->bad_partial++;
    stats_sample_global(s, "curr_items", &items);
    c->last_bytes = bytes;
    c->last_curr_items = items;
    c->last_classes = s->n_classes;
    if (!s->has_version || strncmp(s->version, "1.", 2))
        c->bad_version++;
    const char *gf = stats_sample_setting_text(s, "growth_factor");
    if (!s->has_settings || !gf || strcmp(gf, "1.25"))
        c->bad_settings++;
    if (s->settings_fresh)
        c->settings_fetches++;
    if (s->requested)
        c->requested_seen++;
}

static void on_deadline(uv_timer_t *t)
{
    struct ctx *c = t->data;
    c->timed_out = true;
    uv_stop(&c->loop);
}

typedef bool (*cond_fn)(struct ctx *c);
static cond_fn run_cond;

static void on_check(uv_timer_t *t)
{
    struct ctx *c = t->data;
    if (run_cond && run_cond(c))
        uv_stop(&c->loop);
}

/* Runs the loop until cond holds (checked every 5 ms) or timeout_ms pass;
 * returns whether cond held. cond NULL: just run for timeout_ms. */
static bool run_until(struct ctx *c, cond_fn cond, unsigned timeout_ms)
{
    uv_timer_t deadline, check;

    c->timed_out = false;
    run_cond = cond;
    uv_timer_init(&c->loop, &deadline);
    uv_timer_init(&c->loop, &check);
    deadline.data = check.data = c;
    uv_timer_start(&deadline, on_deadline, timeout_ms, 0);
    uv_timer_start(&check, on_check, 5, 5);
    uv_run(&c->loop, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&deadline, NULL);
    uv_close((uv_handle_t *)&check, NULL);
    uv_run(&c->loop, UV_RUN_NOWAIT); /* let the two closes finish */
    run_cond = NULL;
    return cond ? cond(c) : true;
}

static uint64_t want_samples;
static bool enough_samples(struct ctx *c)
{
    return c->samples >= want_samples;
}
static bool in_flight(struct ctx *c)
{
    return c->poller.in_flight;
}
static bool is_disconnected(struct ctx *c)
{
    return !c->poller.connected;
}
static bool conn2_samples(struct ctx *c)
{
    return c->samples_by_conn[2] >= 3;
}
static bool got_requested(struct ctx *c)
{
    return c->requested_seen >= 1;
}
static bool is_closed(struct ctx *c)
{
    return c->closed;
}
static bool idle(struct ctx *c)
{
    return c->poller.connected && !c->poller.in_flight;
}

static void on_closed(struct poller *p)
{
    struct ctx *c = (struct ctx *)((char *)p - offsetof(struct ctx, poller));
    c->closed = true;
}

/* Sets between batches only: a set racing a pipelined batch on another
 * memcached thread would legitimately break bytes == sum(mem_requested). */
static bool set_between_batches(struct ctx *c, const char *key, unsigned flags, size_t len)
{
    return run_until(c, idle, 2000) && mc_set(key, flags, len);
}

int main(void)
{
    static struct ctx c; /* the poller holds a sample table; keep it off the stack */
    struct sockaddr_in up;
    uint64_t n;

    signal(SIGPIPE, SIG_IGN);
    test_class_born_between_replies();
    atexit(mc_stop);
    bool started = mc_start();
    CHECK(started && mc_port > 0, "cannot start memcached (port %d)", mc_port);
    if (!started)
        return check_done("test_poller");
    /* Three classes before the poller starts: 96, 304 (flags) and 1184 byte chunks. */
    CHECK_TRUE(mc_set("small", 0, 10));
    CHECK_TRUE(mc_set("medium", 5, 200));
    CHECK_TRUE(mc_set("large", 0, 1000));

    CHECK_TRUE(uv_loop_init(&c.loop) == 0);
    uv_ip4_addr("127.0.0.1", mc_port, &up);
    CHECK_TRUE(poller_open(&c.poller, &c.loop, NULL, 50, on_sample, &c) == UV_EINVAL);
    struct addr_list upl = { 0 };
    addr_list_add(&upl, (struct sockaddr *)&up, sizeof up);
    CHECK_TRUE(poller_open(&c.poller, &c.loop, &upl, 50, on_sample, &c) == 0);
    CHECK_INT(c.poller.interval_ms, 50);

    /* 1. samples arrive, consistent */
    want_samples = 5;
    CHECK_TRUE(run_until(&c, enough_samples, 5000));
    CHECK_TRUE(c.poller.connected);
    CHECK_INT(c.last_bytes, ntotal(5, 0, 10) + ntotal(6, 5, 200) + ntotal(5, 0, 1000));
    CHECK_INT(c.last_curr_items, 3);
    CHECK_INT(c.last_classes, 3);
    CHECK_TRUE(set_between_batches(&c, "medium2", 5, 200));
    CHECK_TRUE(set_between_batches(&c, "huge", 0, 100000));
    want_samples = c.samples + 3;
    CHECK_TRUE(run_until(&c, enough_samples, 5000));
    CHECK_INT(c.last_curr_items, 5);
    CHECK_INT(c.last_classes, 4);
    CHECK_INT(c.last_bytes, ntotal(5, 0, 10) + ntotal(6, 5, 200) + ntotal(5, 0, 1000) +
                                ntotal(7, 5, 200) + ntotal(4, 0, 100000));
    CHECK_INT(c.bad_sum, 0);
    CHECK_INT(c.bad_partial, 0);
    CHECK_INT(c.poller.counters.classes_partial, 0);
    CHECK_INT(c.bad_version, 0);
    CHECK_INT(c.bad_settings, 0);
    CHECK_INT(c.bad_order, 0);
    CHECK_INT(c.bad_rtt, 0);
    CHECK_TRUE(c.settings_fetches >= 1 && c.settings_fetches <= 2); /* not every tick */
    CHECK_INT(c.poller.counters.reconnects, 0);
    CHECK_INT(c.poller.counters.samples, c.samples);

    /* 2. a frozen memcached: ticks are skipped, one request stays out */
    CHECK_TRUE(run_until(&c, idle, 2000));
    n = c.samples;
    uint64_t skipped = c.poller.counters.ticks_skipped;
    kill(mc_pid, SIGSTOP);
    run_until(&c, NULL, 400);
    CHECK_INT(c.samples, n);
    CHECK_TRUE(c.poller.counters.ticks_skipped >= skipped + 4);
    CHECK_TRUE(c.poller.in_flight);
    kill(mc_pid, SIGCONT);
    want_samples = c.samples + 2;
    CHECK_TRUE(run_until(&c, enough_samples, 3000));
    CHECK_INT(c.poller.counters.reconnects, 0); /* slow is not dead */

    /* 3. memcached dies with a request outstanding: the sample in flight is
     * discarded, the poller is disconnected, no samples, no crash */
    CHECK_TRUE(run_until(&c, idle, 2000));
    n = c.samples;
    kill(mc_pid, SIGSTOP);
    CHECK_TRUE(run_until(&c, in_flight, 1000));
    mc_stop();
    CHECK_TRUE(run_until(&c, is_disconnected, 3000));
    CHECK_INT(c.samples, n);
    CHECK_TRUE(c.poller.counters.samples_discarded >= 1);
    run_until(&c, NULL, 500);
    CHECK_INT(c.samples, n);
    CHECK_TRUE(!c.poller.connected);
    CHECK_TRUE(c.poller.counters.disconnects >= 1);
    CHECK_TRUE(c.poller.counters.connect_failures >= 2);  /* it kept trying, with backoff */
    CHECK_TRUE(c.poller.counters.connect_failures <= 10); /* ... but not in a tight loop */
    CHECK_TRUE(c.poller.last_error == POLLER_E_CONNECT);
    CHECK_TRUE(c.poller.last_uv_error == UV_ECONNREFUSED);
    fprintf(stderr, "test_poller: while down: %llu connect failures, last: %s (%s)\n",
            (unsigned long long)c.poller.counters.connect_failures,
            poller_error_str(c.poller.last_error), uv_strerror(c.poller.last_uv_error));

    /* 4. memcached is back on the same port: samples resume */
    started = mc_start();
    CHECK(started, "cannot restart memcached on port %d", mc_port);
    if (!started)
        goto close;
    CHECK_TRUE(run_until(&c, conn2_samples, 5000));
    CHECK_TRUE(c.poller.connected);
    CHECK_TRUE(c.poller.counters.reconnects >= 1);
    CHECK_INT(c.last_connection, 2);
    CHECK_INT(c.last_bytes, 0); /* a fresh memcached */
    CHECK_TRUE(set_between_batches(&c, "again", 0, 500));
    want_samples = c.samples + 2;
    CHECK_TRUE(run_until(&c, enough_samples, 3000));
    CHECK_INT(c.last_curr_items, 1);
    CHECK_INT(c.last_bytes, ntotal(5, 0, 500));
    CHECK_INT(c.bad_sum, 0);
    CHECK_INT(c.bad_settings, 0);
    CHECK_INT(c.bad_order, 0);

    /* 5. an extra sample on request (the final one at shutdown) */
    poller_sample_now(&c.poller);
    CHECK_TRUE(run_until(&c, got_requested, 2000));
    CHECK_INT(c.requested_seen, 1);
    CHECK_INT(c.poller.counters.requested, 1);

close:
    /* 6. close: every handle closed, the loop ends by itself */
    poller_close(&c.poller, on_closed);
    CHECK_TRUE(run_until(&c, is_closed, 2000));
    CHECK_TRUE(c.poller.state == POLLER_IDLE);
    CHECK_INT(uv_run(&c.loop, UV_RUN_NOWAIT), 0);
    CHECK_INT(uv_loop_close(&c.loop), 0);
    mc_stop();

    fprintf(stderr,
            "test_poller: %llu samples, %llu ticks skipped, %llu reconnects, %llu discarded\n",
            (unsigned long long)c.samples, (unsigned long long)c.poller.counters.ticks_skipped,
            (unsigned long long)c.poller.counters.reconnects,
            (unsigned long long)c.poller.counters.samples_discarded);
    return check_done("test_poller");
}
