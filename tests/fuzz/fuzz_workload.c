/* libFuzzer target: arbitrary text as a workload file (load/workload.h)
 * through workload_parse, and, when it parses, through the planner for at
 * most FZ_ITEMS items -- against memcached 1.6.18's default slab ladder
 * when a size is fill(N) / over(N).
 *
 * Checks: a parse error names this file and a line that exists in the
 * input ("f.wl:L: ...", 1 <= L <= lines), and its status is the one
 * returned; the same text with every "\n" as "\r\n" gives the same answer
 * (same status, line and message); parsing is deterministic. A plan yields
 * only valid operations (a known command, a 1..250-byte key memcached
 * accepts, a value within WORKLOAD_VALUE_MAX, flags/TTL only where they
 * apply), never more than workload_total_ops, exactly that many when it
 * ends, and the same items twice from the same seed; binding a plan that
 * needs the ladder without one fails naming a line of the input.
 * Build with -DSLABTAP_FUZZ=ON (clang); run: tests/fuzz/run.sh */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load/workload.h"
#include "model/slab_model.h"

#define FZ_FILE "f.wl"
#define FZ_ITEMS 4096 /* plan items looked at per input */

#define FZ_CHECK(cond, ...) \
    do { \
        if (!(cond)) { \
            fprintf(stderr, "fuzz_workload: check failed: %s: ", #cond); \
            fprintf(stderr, __VA_ARGS__); \
            fputc('\n', stderr); \
            abort(); \
        } \
    } while (0)

static struct slab_ladder fz_ladder;

/* The error names FZ_FILE and, unless no line is to blame, a line that
 * exists: "f.wl:L: ...". */
static void fz_check_error(enum workload_status st, const struct workload_error *err,
                           unsigned lines)
{
    char want[32];

    FZ_CHECK(st != WORKLOAD_OK && st < WORKLOAD_STATUS_COUNT, "status %d", (int)st);
    FZ_CHECK(err->status == st, "err.status %d, returned %d", (int)err->status, (int)st);
    FZ_CHECK(memchr(err->msg, '\0', sizeof err->msg) != NULL, "message not terminated");
    FZ_CHECK(st == WORKLOAD_E_MEMORY || (err->line >= 1 && err->line <= lines),
             "line %u of a %u-line input: %s", err->line, lines, err->msg);
    snprintf(want, sizeof want, FZ_FILE ":%u: ", err->line);
    if (err->line)
        FZ_CHECK(strncmp(err->msg, want, strlen(want)) == 0, "message '%s' does not start '%s'",
                 err->msg, want);
}

static void fz_check_op(const struct workload_op *op)
{
    bool write = workload_cmd_is_write(op->cmd);

    FZ_CHECK((unsigned)op->cmd < WORKLOAD_CMD_COUNT, "cmd %d", (int)op->cmd);
    FZ_CHECK(op->key_len >= 1 && op->key_len <= WORKLOAD_KEY_MAX && op->key[op->key_len] == '\0' &&
                 strlen(op->key) == op->key_len,
             "key of %u bytes", op->key_len);
    for (size_t i = 0; i < op->key_len; i++)
        FZ_CHECK((unsigned char)op->key[i] > 0x20 && (unsigned char)op->key[i] < 0x7f,
                 "key byte 0x%02x", (unsigned char)op->key[i]);
    /* Only reads carry fill; a fill read carries the fill's value, flags
     * and ttl (workload.h), so it is checked like a write. */
    FZ_CHECK(!op->fill || workload_cmd_is_read(op->cmd), "fill on %s", workload_cmd_name(op->cmd));
    if (write || op->fill)
        FZ_CHECK(op->value_len <= WORKLOAD_VALUE_MAX, "value of %llu bytes",
                 (unsigned long long)op->value_len);
    else if (op->cmd != WORKLOAD_CMD_INCR && op->cmd != WORKLOAD_CMD_DECR)
        FZ_CHECK(op->value_len == 0, "%s with a value", workload_cmd_name(op->cmd));
    FZ_CHECK(write || op->fill || op->flags == 0, "flags on %s", workload_cmd_name(op->cmd));
    FZ_CHECK(op->ttl >= WORKLOAD_TTL_MIN && op->ttl <= WORKLOAD_TTL_MAX, "ttl %lld",
             (long long)op->ttl);
    FZ_CHECK(write || op->fill || op->cmd == WORKLOAD_CMD_TOUCH || op->ttl == 0, "ttl on %s",
             workload_cmd_name(op->cmd));
}

static bool fz_same_item(const struct workload_item *a, const struct workload_item *b)
{
    if (a->kind != b->kind)
        return false;
    if (a->kind == WORKLOAD_ITEM_PHASE)
        return strcmp(a->phase, b->phase) == 0;
    if (a->kind == WORKLOAD_ITEM_SLEEP)
        return a->sleep_ms == b->sleep_ms;
    return a->op.cmd == b->op.cmd && a->op.noreply == b->op.noreply &&
           a->op.key_len == b->op.key_len && a->op.flags == b->op.flags && a->op.ttl == b->op.ttl &&
           a->op.value_len == b->op.value_len && a->op.fill == b->op.fill &&
           memcmp(a->op.key, b->op.key, a->op.key_len) == 0;
}

static void fz_plan(const struct workload *w, unsigned lines)
{
    const struct workload_settings *set = workload_settings(w);
    uint64_t seed = set->has_seed ? set->seed : 1, total = workload_total_ops(w), ops = 0;
    struct workload_plan a, b;
    struct workload_error err;
    struct workload_item ia, ib;
    enum workload_status st;
    enum workload_next na = WORKLOAD_NEXT_ITEM, nb;
    size_t items;

    FZ_CHECK(total <= WORKLOAD_OPS_MAX, "%llu ops", (unsigned long long)total);
    FZ_CHECK(!set->has_connections ||
                 (set->connections >= 1 && set->connections <= WORKLOAD_CONNECTIONS_MAX),
             "connections %u", set->connections);
    FZ_CHECK(!set->has_pipeline || (set->pipeline >= 1 && set->pipeline <= WORKLOAD_PIPELINE_MAX),
             "pipeline %u", set->pipeline);
    if (workload_needs_ladder(w)) {
        st = workload_plan_init(&a, w, NULL, seed, &err);
        FZ_CHECK(st == WORKLOAD_E_LADDER, "fill/over bound without a ladder: %d", (int)st);
        fz_check_error(st, &err, lines);
    }
    st = workload_plan_init(&a, w, &fz_ladder, seed, &err);
    if (st != WORKLOAD_OK) {
        FZ_CHECK(st == WORKLOAD_E_LADDER, "plan_init: %d", (int)st);
        fz_check_error(st, &err, lines);
        return;
    }
    b = a; /* copying the cursor forks the plan */
    for (items = 0; items < FZ_ITEMS; items++) {
        na = workload_plan_next(&a, &ia);
        nb = workload_plan_next(&b, &ib);
        FZ_CHECK(na == nb, "forked plans disagree at item %zu", items);
        if (na != WORKLOAD_NEXT_ITEM)
            break;
        FZ_CHECK(fz_same_item(&ia, &ib), "forked plans differ at item %zu", items);
        if (ia.kind == WORKLOAD_ITEM_OP) {
            fz_check_op(&ia.op);
            ops++;
            FZ_CHECK(ops <= total, "op %llu of %llu", (unsigned long long)ops,
                     (unsigned long long)total);
        } else if (ia.kind == WORKLOAD_ITEM_PHASE) {
            FZ_CHECK(ia.phase[0] != '\0' && memchr(ia.phase, '\0', sizeof ia.phase) != NULL,
                     "phase name");
        } else {
            FZ_CHECK(ia.kind == WORKLOAD_ITEM_SLEEP && ia.sleep_ms <= WORKLOAD_SLEEP_MAX_MS,
                     "item kind %d", (int)ia.kind);
        }
    }
    FZ_CHECK(na != WORKLOAD_NEXT_ERROR, "plan_next gave an error");
    if (na == WORKLOAD_NEXT_END)
        FZ_CHECK(ops == total, "plan ended after %llu of %llu ops", (unsigned long long)ops,
                 (unsigned long long)total);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    static char *crlf;
    const char *text = (const char *)data;
    struct workload *w = NULL, *w2 = NULL;
    struct workload_error err, err2;
    enum workload_status st, st2;
    unsigned lines = 1;

    if (!ready) {
        struct slab_settings s;
        char why[256];
        slab_settings_default(&s);
        FZ_CHECK(slab_ladder_build(&s, &fz_ladder, why, sizeof why) == SLAB_OK, "ladder: %s", why);
        ready = 1;
    }
    for (size_t i = 0; i < size; i++)
        lines += text[i] == '\n';

    st = workload_parse(FZ_FILE, text, size, &w, &err);
    if (st != WORKLOAD_OK) {
        FZ_CHECK(w == NULL, "a program returned with an error");
        fz_check_error(st, &err, lines);
    }
    /* deterministic */
    st2 = workload_parse(FZ_FILE, text, size, &w2, &err2);
    FZ_CHECK(st2 == st && (st == WORKLOAD_OK || strcmp(err.msg, err2.msg) == 0),
             "second parse: %d '%s' vs %d '%s'", (int)st, err.msg, (int)st2, err2.msg);
    workload_free(w2);
    w2 = NULL;

    /* line ends: "\r\n" reads as "\n" (when no '\r' was there already) */
    if (memchr(text, '\r', size) == NULL && size < 1 << 16) {
        size_t n = 0;
        crlf = realloc(crlf, 2 * size + 1);
        for (size_t i = 0; i < size; i++) {
            if (text[i] == '\n')
                crlf[n++] = '\r';
            crlf[n++] = text[i];
        }
        st2 = workload_parse(FZ_FILE, crlf, n, &w2, &err2);
        FZ_CHECK(st2 == st, "CRLF: status %d, LF: %d ('%s')", (int)st2, (int)st,
                 st2 != WORKLOAD_OK ? err2.msg : err.msg);
        if (st != WORKLOAD_OK)
            FZ_CHECK(err.line == err2.line && strcmp(err.msg, err2.msg) == 0,
                     "CRLF: '%s', LF: '%s'", err2.msg, err.msg);
        else
            FZ_CHECK(workload_total_ops(w) == workload_total_ops(w2), "CRLF: other op count");
        workload_free(w2);
    }
    if (st == WORKLOAD_OK) {
        fz_plan(w, lines);
        workload_free(w);
    }
    return 0;
}
