/* test_workload: the workload file format and its planner, table-driven.
 * Parse errors must name file:line; sizes (fixed, uniform, choice,
 * fill/over against memcached 1.6.18's default ladder) must come out as
 * specified; plans must be deterministic, their fingerprint pinned, and
 * their expansion lazy. Prints every failing case; exits 1 if any. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/sha256.h"
#include "load/workload.h"
#include "model/slab_model.h"

static struct slab_ladder ladder_default;

/* sha256 of test_fingerprints' zipf plan, computed independently (Python:
 * splitmix64, xoshiro256**, rejection-inversion with the same constants) */
#define ZIPF_FINGERPRINT "3cd38e9f6fa93985fdb72113778498bf313cefdd01ce27763f6b8d35090cc5eb"

#define KEY_HINT \
    "fields are {i}, {i%N}, {rand:N} or {zipf:N:S} (N >= 1, S 0.000001..10), each with an " \
    "optional :W (1..20) to zero-pad, at most 4"

static struct workload *parse_ok(const char *text)
{
    struct workload *w = NULL;
    struct workload_error err;
    enum workload_status st = workload_parse("t.wl", text, strlen(text), &w, &err);
    CHECK(st == WORKLOAD_OK, "parse of %s failed: %s", text, err.msg);
    return st == WORKLOAD_OK ? w : NULL;
}

/* ---- parse errors ------------------------------------------------------- */

static void test_parse_errors(void)
{
    static char long_key[400];
    memset(long_key, 0, sizeof long_key);
    snprintf(long_key, sizeof long_key, "set 10 key=%0250d{i} size=1\n", 0);
    static const struct {
        const char *text;
        enum workload_status status;
        const char *msg; /* exact */
    } cases[] = {
        { "set 10 key=a size=fil(12)\n", WORKLOAD_E_SIZE, "t.wl:1: unknown size 'fil(12)'" },
        { "# comment\n\nfrobnicate 3\n", WORKLOAD_E_UNKNOWN,
          "t.wl:3: unknown directive 'frobnicate'" },
        { "seed 1\nset x key=a size=1\n", WORKLOAD_E_NUMBER,
          "t.wl:2: set needs a COUNT (0..1000000000000) first, got 'x'" },
        { "set 5 size=1\n", WORKLOAD_E_SYNTAX, "t.wl:1: set needs key=PATTERN" },
        { "add 5 key=a\n", WORKLOAD_E_SYNTAX, "t.wl:1: add needs size=SIZE" },
        { "get 5 key=a size=5\n", WORKLOAD_E_UNKNOWN,
          "t.wl:1: option 'size' does not apply to get" },
        { "set 5 key=a size=5 colour=red\n", WORKLOAD_E_UNKNOWN,
          "t.wl:1: unknown option 'colour=red' for set" },
        { "set 5 key=a key=b size=5\n", WORKLOAD_E_SYNTAX, "t.wl:1: option 'key' given twice" },
        { "repeat 2 {\n  set 1 key=a size=1\n", WORKLOAD_E_BLOCK,
          "t.wl:1: 'repeat' block opened here is never closed" },
        { "set 1 key=a size=1\n}\n", WORKLOAD_E_BLOCK, "t.wl:2: '}' without an open 'repeat'" },
        { "repeat 2\n", WORKLOAD_E_SYNTAX, "t.wl:1: repeat wants 'repeat R {'" },
        { "set 1 key=a{j} size=1\n", WORKLOAD_E_KEY, "t.wl:1: bad key pattern 'a{j}': " KEY_HINT },
        { "set 1 key=a{i%0} size=1\n", WORKLOAD_E_KEY,
          "t.wl:1: bad key pattern 'a{i%0}': " KEY_HINT },
        { "set 1 key=a{i:0} size=1\n", WORKLOAD_E_KEY,
          "t.wl:1: bad key pattern 'a{i:0}': " KEY_HINT },
        { "set 1 key=a{i:21} size=1\n", WORKLOAD_E_KEY,
          "t.wl:1: bad key pattern 'a{i:21}': " KEY_HINT },
        { "set 1 key=a{rand:5:2:1} size=1\n", WORKLOAD_E_KEY,
          "t.wl:1: bad key pattern 'a{rand:5:2:1}': " KEY_HINT },
        { "set 1 key=a{rand} size=1\n", WORKLOAD_E_KEY,
          "t.wl:1: bad key pattern 'a{rand}': " KEY_HINT },
        { "set 1 key=a{i size=1\n", WORKLOAD_E_KEY, "t.wl:1: bad key pattern 'a{i': " KEY_HINT },
        { "seed 2\nset 1 key=z{zipf:0:1} size=1\n", WORKLOAD_E_KEY,
          "t.wl:2: bad key pattern 'z{zipf:0:1}': " KEY_HINT },
        { "set 1 key=z{zipf:10} size=1\n", WORKLOAD_E_KEY,
          "t.wl:1: bad key pattern 'z{zipf:10}': " KEY_HINT },
        { "set 1 key=z{zipf:10:0} size=1\n", WORKLOAD_E_KEY,
          "t.wl:1: bad key pattern 'z{zipf:10:0}': " KEY_HINT },
        { "set 1 key=z{zipf:10:0.0000001} size=1\n", WORKLOAD_E_KEY,
          "t.wl:1: bad key pattern 'z{zipf:10:0.0000001}': " KEY_HINT },
        { "set 1 key=z{zipf:10:10.000001} size=1\n", WORKLOAD_E_KEY,
          "t.wl:1: bad key pattern 'z{zipf:10:10.000001}': " KEY_HINT },
        { "set 1 key=z{zipf:10:1.} size=1\n", WORKLOAD_E_KEY,
          "t.wl:1: bad key pattern 'z{zipf:10:1.}': " KEY_HINT },
        { "set 1 key=z{zipf:10:.5} size=1\n", WORKLOAD_E_KEY,
          "t.wl:1: bad key pattern 'z{zipf:10:.5}': " KEY_HINT },
        { "set 1 key=z{zipf:10:-1} size=1\n", WORKLOAD_E_KEY,
          "t.wl:1: bad key pattern 'z{zipf:10:-1}': " KEY_HINT },
        { "set 1 key=z{zipf:10:1e0} size=1\n", WORKLOAD_E_KEY,
          "t.wl:1: bad key pattern 'z{zipf:10:1e0}': " KEY_HINT },
        { "set 1 key=z{zipf:10:1:0} size=1\n", WORKLOAD_E_KEY,
          "t.wl:1: bad key pattern 'z{zipf:10:1:0}': " KEY_HINT },
        { "set 1 key=z{zipf:10:1:2:3} size=1\n", WORKLOAD_E_KEY,
          "t.wl:1: bad key pattern 'z{zipf:10:1:2:3}': " KEY_HINT },
        { "set 1 key=z{zipf:1000000000001:1} size=1\n", WORKLOAD_E_KEY,
          "t.wl:1: bad key pattern 'z{zipf:1000000000001:1}': " KEY_HINT },
        { "set 1 key=z{rand:10:1:2} size=1\n", WORKLOAD_E_KEY,
          "t.wl:1: bad key pattern 'z{rand:10:1:2}': " KEY_HINT },
        { long_key, WORKLOAD_E_KEY,
          "t.wl:1: key pattern gives keys of up to 251 bytes; memcached's limit is 250" },
        { "set 1 key=a size=uniform(5,2)\n", WORKLOAD_E_SIZE,
          "t.wl:1: bad size 'uniform(5,2)': minimum above maximum" },
        { "set 1 key=a size=uniform(5)\n", WORKLOAD_E_SIZE, "t.wl:1: unknown size 'uniform(5)'" },
        { "set 1 key=a size=choice()\n", WORKLOAD_E_SIZE, "t.wl:1: unknown size 'choice()'" },
        { "set 1 key=a size=over(1)\n", WORKLOAD_E_SIZE,
          "t.wl:1: bad size 'over(1)': class must be 2..63" },
        { "set 1 key=a size=fill(0)\n", WORKLOAD_E_SIZE,
          "t.wl:1: bad size 'fill(0)': class must be 1..63" },
        { "set 1 key=a size=1073741825\n", WORKLOAD_E_SIZE, "t.wl:1: unknown size '1073741825'" },
        { "seed 1\nseed 2\n", WORKLOAD_E_SYNTAX, "t.wl:2: seed given twice" },
        { "repeat 2 {\nconnections 4\n}\n", WORKLOAD_E_SYNTAX,
          "t.wl:2: connections is file-wide: not inside a repeat block" },
        { "connections 0\n", WORKLOAD_E_NUMBER, "t.wl:1: connections wants one number (1..256)" },
        { "pipeline 5000\n", WORKLOAD_E_NUMBER, "t.wl:1: pipeline wants one number (1..4096)" },
        { "phase bad/name\n", WORKLOAD_E_SYNTAX,
          "t.wl:1: bad phase name 'bad/name' (letters, digits, _ . : -)" },
        { "set 1 key=a size=1 flags=-1\n", WORKLOAD_E_NUMBER,
          "t.wl:1: bad flags '-1' (0..4294967295)" },
        { "set 1 key=a size=1 ttl=4294967296\n", WORKLOAD_E_NUMBER,
          "t.wl:1: bad ttl '4294967296' (a 32-bit signed number)" },
        { "set 1 key=a size=1\r\nset 1 key=a b=c size=1\r\n", WORKLOAD_E_UNKNOWN,
          "t.wl:2: unknown option 'b=c' for set" },
        { "sleep soon\n", WORKLOAD_E_NUMBER,
          "t.wl:1: sleep wants a duration of at most 1h (250ms, 2s, '1 minute'; a number alone is "
          "milliseconds)" },
        { "sleep 2h\n", WORKLOAD_E_NUMBER,
          "t.wl:1: sleep wants a duration of at most 1h (250ms, 2s, '1 minute'; a number alone is "
          "milliseconds)" },
        { "sleep 0.5\n", WORKLOAD_E_NUMBER,
          "t.wl:1: sleep wants a duration of at most 1h (250ms, 2s, '1 minute'; a number alone is "
          "milliseconds)" },
        { "sleep\n", WORKLOAD_E_NUMBER,
          "t.wl:1: sleep wants a duration of at most 1h (250ms, 2s, '1 minute'; a number alone is "
          "milliseconds)" },
        { "set 1 key=a size=0.3k\n", WORKLOAD_E_SIZE, "t.wl:1: unknown size '0.3k'" },
        { "set 1 key=a size=2g\n", WORKLOAD_E_SIZE, "t.wl:1: unknown size '2g'" },
        { "set 1 key=a size=fill(1k)\n", WORKLOAD_E_SIZE, "t.wl:1: unknown size 'fill(1k)'" },
        { "repeat 1000000 {\nrepeat 1000000 {\nset 1000000000 key=a size=1\n}\n}\n",
          WORKLOAD_E_LIMIT, "t.wl:3: the plan has more than 1000000000000000 operations" },
        /* found by fuzz_workload: the planner would spin 1e12 times in one call */
        { "repeat 1000000000000 {\n}\n", WORKLOAD_E_LIMIT,
          "t.wl:2: the plan walks its repeat, phase and sleep lines more than 100000000 times (a "
          "large repeat of few or no operations)" },
        { "repeat 200000000 {\nphase x\n}\nset 1 key=a size=1\n", WORKLOAD_E_LIMIT,
          "t.wl:2: the plan walks its repeat, phase and sleep lines more than 100000000 times (a "
          "large repeat of few or no operations)" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct workload *w = NULL;
        struct workload_error err;
        enum workload_status st =
            workload_parse("t.wl", cases[i].text, strlen(cases[i].text), &w, &err);
        CHECK(st == cases[i].status, "case %zu: status %s, want %s (%s)", i,
              workload_status_str(st), workload_status_str(cases[i].status), err.msg);
        CHECK(!strcmp(err.msg, cases[i].msg), "case %zu: message\n  got  '%s'\n  want '%s'", i,
              err.msg, cases[i].msg);
        CHECK(w == NULL, "case %zu: a program came back with an error", i);
        workload_free(w);
    }
    /* a NUL byte inside the text */
    struct workload *w = NULL;
    struct workload_error err;
    CHECK(workload_parse("t.wl", "seed 1\nse\0t\n", 11, &w, &err) == WORKLOAD_E_SYNTAX &&
              !strcmp(err.msg, "t.wl:2: NUL byte in line"),
          "NUL byte: %s", err.msg);
}

/* Bind-time errors: the ladder decides, and the statement's line is named. */
static void test_bind_errors(void)
{
    static const struct {
        const char *text;
        bool ladder;
        const char *msg;
    } cases[] = {
        { "seed 3\nset 1 key=a size=fill(40)\n", true,
          "t.wl:2: fill(40): the ladder has only 39 classes" },
        { "set 1 key=a size=over(12)\n", false, "t.wl:1: over(12) needs the server's slab ladder" },
        { "set 1 key=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa size=fill(1)\n", true,
          "t.wl:1: fill(1): a 40-byte key with flags 0 leaves no room for a value" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct workload *w = parse_ok(cases[i].text);
        if (!w)
            continue;
        struct workload_plan p;
        struct workload_error err;
        enum workload_status st =
            workload_plan_init(&p, w, cases[i].ladder ? &ladder_default : NULL, 1, &err);
        CHECK(st == WORKLOAD_E_LADDER, "bind case %zu: status %s", i, workload_status_str(st));
        CHECK(!strcmp(err.msg, cases[i].msg), "bind case %zu:\n  got  '%s'\n  want '%s'", i,
              err.msg, cases[i].msg);
        workload_free(w);
    }
}

/* ---- sizes ------------------------------------------------------------- */

/* The chunk-relative sizes against the default ladder (96 ... 944, 1184 ...). */
static void test_fill_over(void)
{
    static const struct {
        uint32_t cls, key_len, flags;
        bool cas, fill;
        uint64_t ntotal;
    } cases[] = {
        { 12, 10, 0, true, true, 1184 },    { 12, 10, 0, true, false, 945 },
        { 12, 10, 7, true, true, 1184 },    { 12, 10, 7, true, false, 945 },
        { 12, 10, 0, false, true, 1184 },   { 1, 10, 0, true, true, 96 },
        { 2, 10, 0, true, false, 97 },      { 39, 200, 0, true, true, 524288 },
        { 39, 10, 0, true, false, 394841 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct slab_ladder l = ladder_default;
        l.use_cas = cases[i].cas;
        uint64_t v = 0;
        bool ok = cases[i].fill
                      ? workload_size_fill(&l, cases[i].cls, cases[i].key_len, cases[i].flags, &v)
                      : workload_size_over(&l, cases[i].cls, cases[i].key_len, cases[i].flags, &v);
        uint64_t nt = slab_item_ntotal(l.use_cas, cases[i].key_len, cases[i].flags, v);
        CHECK(ok && nt == cases[i].ntotal,
              "case %zu: ok %d value %" PRIu64 " ntotal %" PRIu64 " want %" PRIu64, i, ok, v, nt,
              cases[i].ntotal);
        CHECK(slab_ladder_class_for(&l, nt) == cases[i].cls, "case %zu: class %u want %u", i,
              slab_ladder_class_for(&l, nt), cases[i].cls);
    }
    uint64_t v;
    CHECK(workload_size_fill(&ladder_default, 12, 10, 0, &v) && v == 1115,
          "fill(12) value %" PRIu64, v);
    CHECK(workload_size_over(&ladder_default, 12, 10, 0, &v) && v == 876, "over(12) value %" PRIu64,
          v);
    CHECK(!workload_size_over(&ladder_default, 1, 10, 0, &v), "over(1) exists");
    CHECK(!workload_size_fill(&ladder_default, 40, 10, 0, &v), "fill(40) exists");

    /* through a plan: keys of varying length all land exactly on the size */
    struct workload *w = parse_ok("set 2000 key=exp1:{i} size=over(12) flags=3\n"
                                  "set 2000 key=k{i} size=fill(12)\n");
    struct workload_plan p;
    struct workload_item it;
    struct workload_error err;
    if (!w || workload_plan_init(&p, w, &ladder_default, 1, &err) != WORKLOAD_OK)
        return;
    int bad = 0;
    for (int n = 0; workload_plan_next(&p, &it) == WORKLOAD_NEXT_ITEM; n++) {
        uint64_t nt = slab_item_ntotal(true, it.op.key_len, it.op.flags, it.op.value_len);
        if (nt != (n < 2000 ? 945u : 1184u) || slab_ladder_class_for(&ladder_default, nt) != 12)
            bad++;
    }
    CHECK(bad == 0, "%d ops missed their fill/over size", bad);
    workload_free(w);
    w = parse_ok("set 400000 key=e2w:{i:6} size=876\n");
    if (!w || workload_plan_init(&p, w, NULL, 1, &err) != WORKLOAD_OK)
        return;
    bad = 0;
    while (workload_plan_next(&p, &it) == WORKLOAD_NEXT_ITEM)
        bad +=
            it.op.key_len != 10 || slab_item_ntotal(true, it.op.key_len, 0, it.op.value_len) != 945;
    CHECK(bad == 0, "%d fixed-width keys missed 945 bytes", bad);
    workload_free(w);
}

static void test_size_distributions(void)
{
    struct workload *w = parse_ok("seed 7\n"
                                  "set 3 key=f{i} size=945\n"
                                  "set 5000 key=u{i} size=uniform(100,2000)\n"
                                  "set 5000 key=c{i} size=choice(100,500,9000)\n");
    struct workload_plan p;
    struct workload_item it;
    struct workload_error err;
    if (!w || workload_plan_init(&p, w, NULL, 7, &err) != WORKLOAD_OK)
        return;
    uint64_t lo = UINT64_MAX, hi = 0, seen[3] = { 0 }, fixed_bad = 0, other = 0;
    while (workload_plan_next(&p, &it) == WORKLOAD_NEXT_ITEM) {
        uint64_t v = it.op.value_len;
        if (it.op.key[0] == 'f') {
            fixed_bad += v != 945;
        } else if (it.op.key[0] == 'u') {
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        } else {
            if (v == 100)
                seen[0]++;
            else if (v == 500)
                seen[1]++;
            else if (v == 9000)
                seen[2]++;
            else
                other++;
        }
    }
    CHECK(fixed_bad == 0, "fixed size wrong %" PRIu64 " times", fixed_bad);
    CHECK(lo >= 100 && hi <= 2000 && lo < 150 && hi > 1950,
          "uniform range [%" PRIu64 ", %" PRIu64 "]", lo, hi);
    CHECK(other == 0 && seen[0] > 1400 && seen[1] > 1400 && seen[2] > 1400,
          "choice: %" PRIu64 " %" PRIu64 " %" PRIu64 " other %" PRIu64, seen[0], seen[1], seen[2],
          other);
    workload_free(w);
}

/* ---- expansion ----------------------------------------------------------- */

/* Plan text: one line per item, "op key len flags ttl noreply" or "phase X". */
static void plan_text(const char *text, const struct slab_ladder *l, uint64_t seed, char *out,
                      size_t cap)
{
    struct workload *w = parse_ok(text);
    struct workload_plan p;
    struct workload_item it;
    struct workload_error err;
    size_t len = 0;
    out[0] = '\0';
    if (!w || workload_plan_init(&p, w, l, seed, &err) != WORKLOAD_OK) {
        CHECK(0, "plan_init: %s", err.msg);
        workload_free(w);
        return;
    }
    while (workload_plan_next(&p, &it) == WORKLOAD_NEXT_ITEM && len < cap) {
        if (it.kind == WORKLOAD_ITEM_OP)
            len += (size_t)snprintf(out + len, cap - len, "%s %s %" PRIu64 " %u %lld%s;",
                                    workload_cmd_name(it.op.cmd), it.op.key, it.op.value_len,
                                    it.op.flags, (long long)it.op.ttl, it.op.noreply ? " nr" : "");
        else if (it.kind == WORKLOAD_ITEM_PHASE)
            len += (size_t)snprintf(out + len, cap - len, "phase %s;", it.phase);
        else
            len += (size_t)snprintf(out + len, cap - len, "sleep %u;", it.sleep_ms);
    }
    workload_free(w);
}

static void test_expansion(void)
{
    static const struct {
        const char *text;
        const char *plan;
    } cases[] = {
        { "repeat 3 {\n  set 2 key=w{i} size=1\n}\n",
          "set w0 1 0 0;set w1 1 0 0;set w0 1 0 0;set w1 1 0 0;set w0 1 0 0;set w1 1 0 0;" },
        { "set 5 key=m{i%2}x size=2 ttl=60 flags=9 noreply\n",
          "set m0x 2 9 60 nr;set m1x 2 9 60 nr;set m0x 2 9 60 nr;set m1x 2 9 60 nr;set m0x 2 9 60 "
          "nr;" },
        { "phase a\nrepeat 2 {\nphase b\nrepeat 0 {\nset 9 key=z size=1\n}\nget 1 "
          "key=g{i}\n}\nsleep 5\n"
          "delete 1 key=d noreply\ntouch 1 key=t ttl=30\nincr 1 key=n by=7\ngets 1 key=s\n",
          "phase a;phase b;get g0 0 0 0;phase b;get g0 0 0 0;sleep 5;delete d 0 0 0 nr;"
          "touch t 0 0 30;incr n 7 0 0;gets s 0 0 0;" },
        { "repeat 2 {\nrepeat 2 {\nappend 1 key=a{i} size=3\n}\nprepend 1 key=p size=0\n}\n",
          "append a0 3 0 0;append a0 3 0 0;prepend p 0 0 0;append a0 3 0 0;append a0 3 0 0;prepend "
          "p 0 0 0;" },
        { "set 0 key=x size=1\nreplace 1 key=r size=4 # trailing comment\n", "replace r 4 0 0;" },
        /* sizes and durations in core/units.h's spellings, bytes and ms alone */
        { "set 1 key=a size=1k\nset 1 key=b size=1.5KiB\nset 1 key=c size=2MB\n"
          "set 1 key=d size=uniform(1k,1k)\nset 1 key=e size=choice(2k)\n"
          "sleep 1s\nsleep 250\nsleep 1 minute # comment\nsleep 1h\nsleep 0.5s\n",
          "set a 1024 0 0;set b 1536 0 0;set c 2097152 0 0;set d 1024 0 0;set e 2048 0 0;"
          "sleep 1000;sleep 250;sleep 60000;sleep 3600000;sleep 500;" },
        { "set 2 key=a#b{i} size=1\n", "set a#b0 1 0 0;set a#b1 1 0 0;" },
        { "set 3 key=e2w:{i:6} size=876\n",
          "set e2w:000000 876 0 0;set e2w:000001 876 0 0;set e2w:000002 876 0 0;" },
        { "set 3 key={i%2:3}-{i:1} size=1\n", "set 000-0 1 0 0;set 001-1 1 0 0;set 000-2 1 0 0;" },
        { "set 12 key=w{i:1} size=1\nget 1 key=x\n",
          "set w0 1 0 0;set w1 1 0 0;set w2 1 0 0;set w3 1 0 0;set w4 1 0 0;set w5 1 0 0;"
          "set w6 1 0 0;set w7 1 0 0;set w8 1 0 0;set w9 1 0 0;set w10 1 0 0;set w11 1 0 0;get x 0 "
          "0 0;" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char got[2048];
        plan_text(cases[i].text, NULL, 1, got, sizeof got);
        CHECK(!strcmp(got, cases[i].plan), "case %zu:\n  got  %s\n  want %s", i, got,
              cases[i].plan);
    }
    /* {rand:N} stays in [0, N) */
    char got[8192];
    plan_text("set 200 key=r{rand:10} size=1\n", NULL, 5, got, sizeof got);
    int bad = 0;
    for (char *s = got; (s = strstr(s, "set r")); s += 5)
        if (s[5] < '0' || s[5] > '9' || s[6] != ' ')
            bad++;
    CHECK(bad == 0 && strlen(got) > 0, "{rand:10} out of range %d times", bad);
    plan_text("set 50 key=r{rand:100:5} size=1\n", NULL, 5, got, sizeof got);
    bad = 0;
    for (char *s = got; (s = strstr(s, "set r")); s += 5)
        if (strncmp(s + 5, "000", 3) || s[10] != ' ')
            bad++;
    CHECK(bad == 0 && strlen(got) > 0, "{rand:100:5} not 5 digits %d times: %.60s", bad, got);
}

/* {zipf:N:S}: rank k (key k-1) with probability k^-S / sum_j j^-S. */
static void test_zipf(void)
{
    static const struct {
        const char *text;
        uint64_t seed;
        const char *plan;
    } cases[] = {
        /* pinned: the same draws from an independent Python implementation
         * of splitmix64/xoshiro256** and rejection-inversion */
        { "set 12 key=u:{zipf:1000:1} size=1\n", 3,
          "set u:5 1 0 0;set u:7 1 0 0;set u:194 1 0 0;set u:17 1 0 0;set u:40 1 0 0;"
          "set u:49 1 0 0;set u:206 1 0 0;set u:4 1 0 0;set u:0 1 0 0;set u:230 1 0 0;"
          "set u:0 1 0 0;set u:5 1 0 0;" },
        /* plan order: zipf, then rand, then the size, from one stream */
        { "set 6 key=z{zipf:100:0.8:3}-{rand:10} size=uniform(1,9)\n", 5,
          "set z035-6 7 0 0;set z001-3 8 0 0;set z013-6 2 0 0;set z023-1 9 0 0;"
          "set z026-6 1 0 0;set z001-3 4 0 0;" },
        /* one key: always key 0, whatever the exponent */
        { "get 3 key=one{zipf:1:10:2}\n", 9, "get one00 0 0 0;get one00 0 0 0;get one00 0 0 0;" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char got[2048];
        plan_text(cases[i].text, NULL, cases[i].seed, got, sizeof got);
        CHECK(!strcmp(got, cases[i].plan), "zipf case %zu:\n  got  %s\n  want %s", i, got,
              cases[i].plan);
    }

    /* frequencies: S=1, N=1000 gives rank 1 1/H(1000) = 0.13359 and rank 2
     * half that; 200,000 draws put them within 0.004 (over 5 sigma) */
    struct workload *w = parse_ok("set 200000 key={zipf:1000:1} size=1\n");
    struct workload_plan p;
    struct workload_item it;
    struct workload_error err;
    if (!w || workload_plan_init(&p, w, NULL, 11, &err) != WORKLOAD_OK)
        return;
    uint64_t n = 0, r1 = 0, r2 = 0, bad = 0;
    while (workload_plan_next(&p, &it) == WORKLOAD_NEXT_ITEM) {
        uint64_t v = strtoull(it.op.key, NULL, 10);
        r1 += v == 0;
        r2 += v == 1;
        bad += v >= 1000 || it.op.key_len > 3;
        n++;
    }
    double f1 = (double)r1 / (double)n, f2 = (double)r2 / (double)n;
    CHECK(n == 200000 && bad == 0, "%" PRIu64 " keys, %" PRIu64 " out of 0..999", n, bad);
    CHECK(f1 > 0.13359 - 0.004 && f1 < 0.13359 + 0.004, "rank 1 frequency %.5f, want 0.13359", f1);
    CHECK(f2 > 0.06680 - 0.004 && f2 < 0.06680 + 0.004, "rank 2 frequency %.5f, want 0.06680", f2);
    workload_free(w);

    /* a huge N costs no memory: the program is one statement; the longest
     * key (12 digits) is what the 250-byte check sees */
    w = parse_ok("set 1000 key=big:{zipf:1000000000000:0.99} size=1\n");
    if (w && workload_plan_init(&p, w, NULL, 1, &err) == WORKLOAD_OK) {
        bad = 0;
        while (workload_plan_next(&p, &it) == WORKLOAD_NEXT_ITEM)
            bad += it.op.key_len < 5 || it.op.key_len > 16;
        CHECK(bad == 0, "%" PRIu64 " keys of a bad length", bad);
    }
    workload_free(w);
    char pad[300];
    snprintf(pad, sizeof pad, "set 1 key=%0238d{zipf:1000000000000:1} size=1\n", 0);
    w = parse_ok(pad); /* 238 + 12 = 250 bytes: fits */
    workload_free(w);
    snprintf(pad, sizeof pad, "set 1 key=%0239d{zipf:1000000000000:1} size=1\n", 0);
    struct workload *w2 = NULL;
    CHECK(
        workload_parse("t.wl", pad, strlen(pad), &w2, &err) == WORKLOAD_E_KEY &&
            !strcmp(err.msg,
                    "t.wl:1: key pattern gives keys of up to 251 bytes; memcached's limit is 250"),
        "zipf key length: %s", err.msg);
    workload_free(w2);
}

/* ---- determinism and fingerprints ---------------------------------------- */

static void fingerprint(const char *text, const struct slab_ladder *l, uint64_t seed,
                        char hex[SHA256_HEX_LEN + 1], uint64_t *ops)
{
    struct workload *w = parse_ok(text);
    struct workload_plan p;
    struct workload_item it;
    struct workload_error err;
    struct sha256_ctx c;
    uint8_t d[SHA256_DIGEST_LEN];
    *ops = 0;
    sha256_init(&c);
    if (w && workload_plan_init(&p, w, l, seed, &err) == WORKLOAD_OK) {
        while (workload_plan_next(&p, &it) == WORKLOAD_NEXT_ITEM) {
            if (it.kind != WORKLOAD_ITEM_OP)
                continue;
            workload_op_digest(&c, &it.op);
            (*ops)++;
        }
    }
    sha256_final(&c, d);
    sha256_hex(d, hex);
    workload_free(w);
}

static void test_fingerprints(void)
{
    char a[SHA256_HEX_LEN + 1], b[SHA256_HEX_LEN + 1];
    uint64_t na, nb;
    /* pinned: sha256 of the canonical lines, computed independently */
    fingerprint("set 3 key=k{i} size=10\nphase p\nget 1 key=k0\ndelete 1 key=k1 noreply\n", NULL, 1,
                a, &na);
    CHECK(na == 5 && !strcmp(a, "d1859a52de84fa20298c142af1054246870d0a42fefec70b3654dca68487a5d4"),
          "pinned fingerprint %s (%" PRIu64 " ops)", a, na);

    const char *rnd = "set 3000 key=r{rand:1000} size=uniform(1,5000)\nget 100 key=r{rand:1000}\n";
    fingerprint(rnd, NULL, 42, a, &na);
    fingerprint(rnd, NULL, 42, b, &nb);
    CHECK(na == 3100 && nb == na && !strcmp(a, b), "same text and seed differ: %s %s", a, b);
    fingerprint(rnd, NULL, 43, b, &nb);
    CHECK(strcmp(a, b) != 0, "another seed gives the same plan");
    fingerprint("set 3000 key=r{rand:1000} size=uniform(1,5001)\nget 100 key=r{rand:1000}\n", NULL,
                42, b, &nb);
    CHECK(strcmp(a, b) != 0, "a changed size gives the same plan");

    /* zipf plans are fingerprinted like the others: pinned, seed-bound, and
     * the exponent is part of the plan */
    const char *zt = "set 2000 key=z:{zipf:5000:1.1} size=100\nget 500 key=z:{zipf:5000:1.1}\n";
    fingerprint(zt, NULL, 42, a, &na);
    fingerprint(zt, NULL, 42, b, &nb);
    CHECK(na == 2500 && nb == na && !strcmp(a, b), "zipf: same text and seed differ: %s %s", a, b);
    CHECK(!strcmp(a, ZIPF_FINGERPRINT), "zipf pinned fingerprint %s", a);
    fingerprint(zt, NULL, 43, b, &nb);
    CHECK(strcmp(a, b) != 0, "zipf: another seed gives the same plan");
    fingerprint("set 2000 key=z:{zipf:5000:1.2} size=100\nget 500 key=z:{zipf:5000:1.1}\n", NULL,
                42, b, &nb);
    CHECK(strcmp(a, b) != 0, "zipf: another exponent gives the same plan");

    /* the fill flag is part of the plan; pinned (Python: sha256 of
     * "get k0 10 5 60 0 fill\n" ...) */
    fingerprint("getset 3 key=k{i} size=10 flags=5 ttl=60\n", NULL, 1, a, &na);
    CHECK(na == 3 && !strcmp(a, "0c0486e572bf8e0e71c664b7a42387ae90be9b67622387d342f7b662137e3451"),
          "getset pinned fingerprint %s", a);
    fingerprint("getset 3 key=k{i} size=etc\n", NULL, 7, a, &na);
    CHECK(!strcmp(a, "9b54f53ef70de0b34bc3083601881fe57bfd9a721758c33aaee520445f8fbfda"),
          "getset etc pinned fingerprint %s", a);
    fingerprint("get 3 key=k{i}\n", NULL, 1, b, &nb);
    CHECK(nb == 3 && strcmp(a, b) != 0, "get and getset give the same plan");
    fingerprint("getset 3 key=k{i} size=10 flags=5 ttl=61\n", NULL, 1, b, &nb);
    CHECK(strcmp(a, b) != 0, "a getset's ttl is not in the plan");

    /* the ladder is part of the plan: -f 1.08 moves fill(12) */
    struct slab_settings s;
    struct slab_ladder l108;
    slab_settings_default(&s);
    s.growth_factor = 1.08;
    slab_ladder_build(&s, &l108, NULL, 0);
    fingerprint("set 10 key=x{i} size=fill(12)\n", &ladder_default, 1, a, &na);
    fingerprint("set 10 key=x{i} size=fill(12)\n", &l108, 1, b, &nb);
    CHECK(strcmp(a, b) != 0, "a different ladder gives the same plan");
}

/* A 400,000-op plan (and a 1e12-op one) is a cursor of constant size; the
 * program holds one statement per line, never one per op. */
static void test_lazy(void)
{
    CHECK(sizeof(struct workload_plan) < 2048, "plan cursor is %zu bytes",
          sizeof(struct workload_plan));
    struct workload *w = parse_ok("repeat 4 {\nset 100000 key=exp1:{i} size=over(12)\n}\n");
    struct workload_plan p;
    struct workload_item it;
    struct workload_error err;
    if (w && workload_plan_init(&p, w, &ladder_default, 1, &err) == WORKLOAD_OK) {
        uint64_t n = 0, last_i = 0;
        while (workload_plan_next(&p, &it) == WORKLOAD_NEXT_ITEM)
            n++;
        last_i = p.emitted;
        CHECK(n == 400000 && workload_total_ops(w) == 400000 && last_i == n,
              "ops %" PRIu64 " total %" PRIu64, n, workload_total_ops(w));
    }
    workload_free(w);
    w = parse_ok("repeat 1000 {\nset 1000000000 key=big:{i} size=1\n}\n");
    if (w && workload_plan_init(&p, w, NULL, 1, &err) == WORKLOAD_OK) {
        CHECK(workload_total_ops(w) == 1000000000000ull, "total %" PRIu64, workload_total_ops(w));
        CHECK(workload_plan_next(&p, &it) == WORKLOAD_NEXT_ITEM && !strcmp(it.op.key, "big:0"),
              "first op of a huge plan: %s", it.op.key);
    }
    workload_free(w);
}

static void test_settings(void)
{
    struct workload *w = parse_ok("connections 4\npipeline 64\nseed 99\nset 1 key=a size=1\n");
    if (!w)
        return;
    const struct workload_settings *s = workload_settings(w);
    CHECK(s->has_connections && s->connections == 4 && s->has_pipeline && s->pipeline == 64 &&
              s->has_seed && s->seed == 99,
          "settings %u %u %" PRIu64, s->connections, s->pipeline, s->seed);
    CHECK(!workload_needs_ladder(w), "needs ladder without fill/over");
    workload_free(w);
    w = parse_ok("set 1 key=a size=over(3)\n");
    CHECK(w && workload_needs_ladder(w) && !workload_settings(w)->has_seed,
          "over(3) needs the ladder");
    workload_free(w);
}

/* ---- get-or-set and per-key sizes ----------------------------------------- */

static void test_getset_errors(void)
{
    static const struct {
        const char *text;
        enum workload_status status;
        const char *msg; /* exact */
    } cases[] = {
        { "seed 1\ngetset 5 key=a\n", WORKLOAD_E_SYNTAX, "t.wl:2: getset needs size=SIZE" },
        { "getset 5 size=1\n", WORKLOAD_E_SYNTAX, "t.wl:1: getset needs key=PATTERN" },
        { "getset 5 key=a size=1 noreply\n", WORKLOAD_E_UNKNOWN,
          "t.wl:1: option 'noreply' does not apply to getset" },
        { "getset 5 key=a size=1 by=2\n", WORKLOAD_E_UNKNOWN,
          "t.wl:1: option 'by' does not apply to getset" },
        { "getset x key=a size=1\n", WORKLOAD_E_NUMBER,
          "t.wl:1: getset needs a COUNT (0..1000000000000) first, got 'x'" },
        { "\n\ngetset 5 key=a size=gpareto(0,0.3)\n", WORKLOAD_E_SIZE,
          "t.wl:3: bad size 'gpareto(0,0.3)': scale must be > 0, shape -10..10" },
        { "getset 5 key=a size=gpareto(10)\n", WORKLOAD_E_SIZE,
          "t.wl:1: bad size 'gpareto(10)': want gpareto(SCALE,SHAPE[,MAX])" },
        { "getset 5 key=a size=gpareto(10,0.5,2,3)\n", WORKLOAD_E_SIZE,
          "t.wl:1: bad size 'gpareto(10,0.5,2,3)': want gpareto(SCALE,SHAPE[,MAX])" },
        { "set 5 key=a size=lognormal(7,-1)\n", WORKLOAD_E_SIZE,
          "t.wl:1: bad size 'lognormal(7,-1)': sigma must be >= 0, mu <= 30" },
        { "set 5 key=a size=lognormal(7.1234567,1)\n", WORKLOAD_E_SIZE,
          "t.wl:1: bad size 'lognormal(7.1234567,1)': want lognormal(MU,SIGMA[,MAX])" },
        { "getset 5 key=a size=etc(x)\n", WORKLOAD_E_SIZE, "t.wl:1: unknown size 'etc(x)'" },
        { "getset 5 key=a size=etcx\n", WORKLOAD_E_SIZE, "t.wl:1: unknown size 'etcx'" },
        { "gat 5 key=a size=1\n", WORKLOAD_E_UNKNOWN,
          "t.wl:1: option 'size' does not apply to gat" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct workload *w = NULL;
        struct workload_error err;
        enum workload_status st =
            workload_parse("t.wl", cases[i].text, strlen(cases[i].text), &w, &err);
        CHECK(st == cases[i].status && !strcmp(err.msg, cases[i].msg),
              "case %zu: status %d msg '%s', want %d '%s'", i, st, err.msg, cases[i].status,
              cases[i].msg);
        workload_free(w);
    }
}

static void test_getset_ops(void)
{
    char plan[1024];
    /* a getset is a get carrying fill, its size, flags and ttl; gat carries its exptime */
    plan_text("getset 2 key=k{i} size=10 flags=5 ttl=60\ngat 1 key=k0 ttl=30\n", NULL, 1, plan,
              sizeof plan);
    CHECK_STR(plan, "get k0 10 5 60;get k1 10 5 60;gat k0 0 0 30;");
    struct workload *w = parse_ok("getset 1 key=a size=3\nget 1 key=a\n");
    struct workload_plan p;
    struct workload_item it;
    struct workload_error err;
    if (w && workload_plan_init(&p, w, NULL, 0, &err) == WORKLOAD_OK) {
        CHECK(workload_has_fills(w), "getset: has fills");
        CHECK(workload_plan_next(&p, &it) == WORKLOAD_NEXT_ITEM && it.op.fill &&
                  it.op.cmd == WORKLOAD_CMD_GET && workload_cmd_is_read(it.op.cmd),
              "getset op: fill %d cmd %s", it.op.fill, workload_cmd_name(it.op.cmd));
        CHECK(workload_plan_next(&p, &it) == WORKLOAD_NEXT_ITEM && !it.op.fill &&
                  it.op.value_len == 0,
              "plain get: fill %d len %" PRIu64, it.op.fill, it.op.value_len);
    }
    workload_free(w);
    w = parse_ok("get 1 key=a\n");
    CHECK(w && !workload_has_fills(w), "no getset: no fills");
    workload_free(w);
}

/* A key has one size, whatever op draws it: per-key sizes are a function of
 * the key and the seed, and take nothing from the plan's stream. */
static void test_per_key_sizes(void)
{
    /* pinned: computed independently (Python: FNV-1a, splitmix64, the
     * ETC inversion with math.expm1/log1p) */
    static const struct {
        const char *key;
        uint64_t etc;
    } pinned[] = { { "k0", 47 }, { "k1", 68 }, { "k2", 491 }, { "etc:000000", 400 } };
    char plan[512], want[512];
    size_t wl = 0;
    for (size_t i = 0; i < 3; i++)
        wl += (size_t)snprintf(want + wl, sizeof want - wl, "get %s %" PRIu64 " 0 0;",
                               pinned[i].key, pinned[i].etc);
    plan_text("getset 3 key=k{i} size=etc\n", NULL, 7, plan, sizeof plan);
    CHECK_STR(plan, want);
    plan_text("getset 1 key=etc:{i:6} size=etc\n", NULL, 7, plan, sizeof plan);
    CHECK_STR(plan, "get etc:000000 400 0 0;");
    CHECK(workload_key_unit("k0", 2, 7, 0) == 0.19063310333250916, "unit k0 %.17g",
          workload_key_unit("k0", 2, 7, 0));

    /* every op of a key the same size: getset (etc, uniform, choice,
     * lognormal) and set (etc) over the same keys agree */
    static const char *const texts[] = {
        "getset 20000 key=k{rand:500} size=etc\nset 500 key=k{i} size=etc\n",
        "getset 20000 key=k{zipf:500:1.0} size=uniform(1,100000)\n",
        "getset 20000 key=k{rand:500} size=choice(1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16)\n",
        "getset 20000 key=k{rand:500} size=lognormal(7.5,1.2)\nset 9 key=x size=uniform(1,9)\n",
    };
    for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++) {
        struct workload *w = parse_ok(texts[t]);
        struct workload_plan p;
        struct workload_item it;
        struct workload_error err;
        static uint64_t size_of[500];
        uint64_t churn = 0, distinct = 0, ops = 0;
        memset(size_of, 0, sizeof size_of);
        if (!w || workload_plan_init(&p, w, NULL, 11, &err) != WORKLOAD_OK) {
            workload_free(w);
            continue;
        }
        while (workload_plan_next(&p, &it) == WORKLOAD_NEXT_ITEM) {
            if (it.op.key[0] != 'k')
                continue;
            unsigned k = (unsigned)atoi(it.op.key + 1);
            ops++;
            if (!size_of[k]) {
                size_of[k] = it.op.value_len + 1;
                distinct++;
            } else {
                churn += size_of[k] != it.op.value_len + 1;
            }
        }
        CHECK(churn == 0 && ops > 20000 - 1 && distinct > 20,
              "text %zu: %" PRIu64 " ops changed their key's size (%" PRIu64 " keys)", t, churn,
              distinct);
        workload_free(w);
    }
    /* per-key sizes take no draw: the keys that follow are the same */
    plan_text("set 1 key=a size=etc\nget 3 key=r{rand:1000}\n", NULL, 5, plan, sizeof plan);
    plan_text("set 1 key=a size=7\nget 3 key=r{rand:1000}\n", NULL, 5, want, sizeof want);
    CHECK(!strcmp(strchr(plan, ';'), strchr(want, ';')), "etc took a draw: %s vs %s", plan, want);
}

/* The distributions have the shape they claim: ETC's median 168 and mean
 * 329 (Generalized Pareto, scale 214.476, shape 0.348238), a lognormal's
 * median exp(mu); caps hold. */
static void test_size_shapes(void)
{
    static const struct {
        const char *text;
        double median_lo, median_hi, mean_lo, mean_hi;
        uint64_t max;
    } cases[] = {
        { "getset 100000 key=s{i} size=etc\n", 160, 176, 310, 350, 500000 },
        { "getset 100000 key=s{i} size=gpareto(100,0)\n", 66, 73, 96, 104, 500000 },
        { "getset 100000 key=s{i} size=lognormal(7,0.5)\n", 1060, 1130, 1170, 1270, 500000 },
        { "getset 100000 key=s{i} size=etc(1000)\n", 160, 176, 240, 300, 1000 },
    };
    static uint64_t v[100000];
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        struct workload *w = parse_ok(cases[t].text);
        struct workload_plan p;
        struct workload_item it;
        struct workload_error err;
        size_t n = 0;
        double sum = 0;
        uint64_t max = 0, zero = 0;
        if (!w || workload_plan_init(&p, w, NULL, 3, &err) != WORKLOAD_OK) {
            workload_free(w);
            continue;
        }
        while (workload_plan_next(&p, &it) == WORKLOAD_NEXT_ITEM && n < 100000) {
            v[n++] = it.op.value_len;
            sum += (double)it.op.value_len;
            max = it.op.value_len > max ? it.op.value_len : max;
            zero += it.op.value_len == 0;
        }
        /* the median by counting: values below each bound */
        size_t below_lo = 0, below_hi = 0;
        for (size_t i = 0; i < n; i++) {
            below_lo += (double)v[i] < cases[t].median_lo;
            below_hi += (double)v[i] < cases[t].median_hi;
        }
        double mean = n ? sum / (double)n : 0;
        CHECK(n == 100000 && below_lo < n / 2 && below_hi > n / 2,
              "case %zu: median outside [%.0f, %.0f] (%zu, %zu below)", t, cases[t].median_lo,
              cases[t].median_hi, below_lo, below_hi);
        CHECK(mean >= cases[t].mean_lo && mean <= cases[t].mean_hi,
              "case %zu: mean %.1f outside [%.0f, %.0f]", t, mean, cases[t].mean_lo,
              cases[t].mean_hi);
        CHECK(max <= cases[t].max && zero == 0, "case %zu: max %" PRIu64 ", %" PRIu64 " zeros", t,
              max, zero);
        workload_free(w);
    }
}

int main(void)
{
    struct slab_settings s;
    slab_settings_default(&s);
    if (slab_ladder_build(&s, &ladder_default, NULL, 0) != SLAB_OK ||
        ladder_default.n_classes != 39) {
        printf("default ladder did not build\n");
        return 1;
    }
    test_parse_errors();
    test_bind_errors();
    test_fill_over();
    test_size_distributions();
    test_expansion();
    test_zipf();
    test_fingerprints();
    test_lazy();
    test_settings();
    test_getset_errors();
    test_getset_ops();
    test_per_key_sizes();
    test_size_shapes();
    return check_done("test_workload");
}
