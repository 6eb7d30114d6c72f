/* workload: the line-based workload file format (experiments/README.md,
 * "Workload files") and its planner.
 *
 * Owns: parsing a workload file's text into a program, checking it against
 * a slab ladder (fill(N) / over(N) sizes), and expanding it lazily, one
 * operation at a time, into the deterministic operation plan; the plan's
 * canonical text for fingerprinting.
 * Must never: do I/O (the caller reads the file and hands over the text),
 * know about libuv or sockets, or expand a plan eagerly: a plan is a
 * cursor whose memory does not depend on how many operations it yields.
 *
 * Determinism: the same text, seed and ladder always give the same plan.
 * Random draws come from one xoshiro256** stream seeded through splitmix64,
 * consumed in plan order: for each op, the {rand:N} and {zipf:N:S} key
 * fields left to right, then the size. A {zipf:N:S} field takes one draw
 * per try of rejection-inversion sampling, so usually one, sometimes more.
 * Sizes drawn per key (etc, gpareto(..), lognormal(..), and every random
 * size of a getset statement) take no draw from the stream: they are a
 * function of the key's bytes and the seed (workload_key_unit), so a key
 * has one size for the whole plan.
 */
#ifndef SLABTAP_WORKLOAD_H
#define SLABTAP_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/sha256.h"
#include "model/slab_model.h"

#define WORKLOAD_KEY_MAX 250                       /* memcached's KEY_MAX_LENGTH */
#define WORKLOAD_NAME_MAX 64                       /* phase names, NUL included */
#define WORKLOAD_FILE_MAX 256                      /* file name kept for messages, NUL included */
#define WORKLOAD_LINE_MAX 1024                     /* one line of a workload file */
#define WORKLOAD_TOKENS_MAX 16                     /* words on one line */
#define WORKLOAD_STMTS_MAX 4096                    /* statements in one file */
#define WORKLOAD_DEPTH_MAX 8                       /* nested repeat blocks */
#define WORKLOAD_CHOICES_MAX 16                    /* values in choice(...) */
#define WORKLOAD_PATTERN_MAX WORKLOAD_KEY_MAX      /* literal bytes of a key pattern */
#define WORKLOAD_FIELDS_MAX 4                      /* {..} fields in a key pattern */
#define WORKLOAD_WIDTH_MAX 20                      /* :W of a field; a uint64 has 20 digits */
#define WORKLOAD_ERR_MAX 320                       /* "file:line: message", NUL included */
#define WORKLOAD_VALUE_MAX (1024ull * 1024 * 1024) /* memcached's largest -I */
#define WORKLOAD_OPS_MAX 1000000000000000ull       /* ops in one plan (1e15) */
/* times the planner may walk a repeat, '}', phase or sleep line: a repeat
 * of nothing would otherwise spin inside one call */
#define WORKLOAD_STEPS_MAX 100000000ull
#define WORKLOAD_COUNT_MAX 1000000000000ull /* one statement's COUNT / R */
#define WORKLOAD_SLEEP_MAX_MS 3600000u
#define WORKLOAD_CONNECTIONS_MAX 256
#define WORKLOAD_PIPELINE_MAX 4096
/* memcached reads a text exptime as a 32-bit int */
#define WORKLOAD_TTL_MIN (-2147483647ll - 1)
#define WORKLOAD_TTL_MAX 2147483647ll

/* The commands a plan can hold. X(id, wire name, is a write) */
/* clang-format off */
#define WORKLOAD_CMDS(X) \
    X(SET, "set", true) X(ADD, "add", true) X(REPLACE, "replace", true) \
    X(APPEND, "append", true) X(PREPEND, "prepend", true) X(GET, "get", false) \
    X(GETS, "gets", false) X(DELETE, "delete", false) X(TOUCH, "touch", false) \
    X(INCR, "incr", false) X(DECR, "decr", false) X(GAT, "gat", false)
/* clang-format on */

enum workload_cmd {
#define WORKLOAD_CMD_ENUM(id, name, write) WORKLOAD_CMD_##id,
    WORKLOAD_CMDS(WORKLOAD_CMD_ENUM)
#undef WORKLOAD_CMD_ENUM
        WORKLOAD_CMD_COUNT
};

const char *workload_cmd_name(enum workload_cmd cmd);
/* A command that carries a data block (set add replace append prepend). */
bool workload_cmd_is_write(enum workload_cmd cmd);
/* "set" -> WORKLOAD_CMD_SET; false for anything else. */
bool workload_cmd_parse(const char *name, size_t len, enum workload_cmd *out);

/* A read answered by VALUE ... END: get, gets, gat. */
bool workload_cmd_is_read(enum workload_cmd cmd);

/* One request, as the load generator will send it.
 * fill: a get-or-set read (getset statements, replayed reads with demand
 * fill): when memcached answers it with a miss, the load engine sends
 * `set key flags ttl value_len` on the same connection before any later
 * op of that key. Only reads carry it. */
struct workload_op {
    enum workload_cmd cmd;
    bool noreply;
    bool fill;
    uint16_t key_len;
    uint32_t flags;     /* writes; fill reads: the fill's flags */
    int64_t ttl;        /* exptime as sent (writes, touch, gat); fill reads: the fill's */
    uint64_t value_len; /* writes, fill reads: data block bytes; incr/decr: the delta */
    char key[WORKLOAD_KEY_MAX + 1];
};

enum workload_item_kind {
    WORKLOAD_ITEM_OP,    /* send item.op */
    WORKLOAD_ITEM_PHASE, /* a phase starts here (after every earlier op is answered) */
    WORKLOAD_ITEM_SLEEP, /* wait for every earlier answer, then item.sleep_ms */
};

struct workload_item {
    enum workload_item_kind kind;
    struct workload_op op;
    char phase[WORKLOAD_NAME_MAX];
    uint32_t sleep_ms;
};

enum workload_next { WORKLOAD_NEXT_ITEM, WORKLOAD_NEXT_END, WORKLOAD_NEXT_ERROR };

#define WORKLOAD_STATUSES(X) \
    X(WORKLOAD_OK, "ok") \
    X(WORKLOAD_E_ARG, "bad argument") \
    X(WORKLOAD_E_SYNTAX, "syntax error") \
    X(WORKLOAD_E_UNKNOWN, "unknown directive, command or option") \
    X(WORKLOAD_E_NUMBER, "bad number") \
    X(WORKLOAD_E_SIZE, "bad size") \
    X(WORKLOAD_E_KEY, "bad key pattern") \
    X(WORKLOAD_E_BLOCK, "unbalanced repeat block") \
    X(WORKLOAD_E_LIMIT, "over a limit") \
    X(WORKLOAD_E_LADDER, "size does not fit the slab ladder") \
    X(WORKLOAD_E_MEMORY, "out of memory")

enum workload_status {
#define WORKLOAD_STATUS_ENUM(id, text) id,
    WORKLOAD_STATUSES(WORKLOAD_STATUS_ENUM)
#undef WORKLOAD_STATUS_ENUM
        WORKLOAD_STATUS_COUNT
};

const char *workload_status_str(enum workload_status st);

/* Every failure names its file and line: msg is ready to print, e.g.
 * "exp1.wl:7: unknown size 'fil(12)'". */
struct workload_error {
    enum workload_status status;
    unsigned line; /* 1-based; 0 when no line is to blame */
    char msg[WORKLOAD_ERR_MAX];
};

/* The file-wide directives; has_* tells whether the file set them. */
struct workload_settings {
    unsigned connections;
    unsigned pipeline;
    uint64_t seed;
    bool has_connections, has_pipeline, has_seed;
};

struct workload; /* a parsed program; immutable once parsed */

/* Parses text (len bytes, NUL bytes refused) named `file` in messages.
 * On success *out owns a program to free with workload_free. */
enum workload_status workload_parse(const char *file, const char *text, size_t len,
                                    struct workload **out, struct workload_error *err);
void workload_free(struct workload *w);

const struct workload_settings *workload_settings(const struct workload *w);
/* Whether some size is fill(N) / over(N) and so needs the server's ladder. */
bool workload_needs_ladder(const struct workload *w);
/* Whether some statement is a getset (its ops carry fill). */
bool workload_has_fills(const struct workload *w);
/* Operations the whole plan yields (phases and sleeps not counted). */
uint64_t workload_total_ops(const struct workload *w);
const char *workload_file(const struct workload *w);

/* The cursor over a plan. Fields are private; it holds no resources, so
 * it needs no cleanup, and copying it forks the plan. */
struct workload_plan {
    const struct workload *w;
    struct slab_ladder ladder;
    bool has_ladder;
    uint64_t seed; /* per-key sizes */
    uint64_t rng[4];
    uint32_t pc; /* statement being expanded */
    uint64_t i;  /* next {i} of that statement */
    uint32_t depth;
    struct {
        uint32_t pc;   /* the repeat statement */
        uint64_t left; /* iterations still to run, this one included */
    } stack[WORKLOAD_DEPTH_MAX];
    uint64_t emitted; /* ops yielded so far */
};

/* Binds w to a ladder (NULL is fine when !workload_needs_ladder(w)) and a
 * seed, checking every fill/over size against it: a class beyond the
 * ladder, or a key so long that no value fits the chunk, is an error that
 * names the statement's line. w must outlive the plan. */
enum workload_status workload_plan_init(struct workload_plan *p, const struct workload *w,
                                        const struct slab_ladder *ladder, uint64_t seed,
                                        struct workload_error *err);
/* The next item in plan order, or WORKLOAD_NEXT_END (never an error: every
 * check was made by workload_plan_init). */
enum workload_next workload_plan_next(struct workload_plan *p, struct workload_item *it);

/* The value length whose item exactly fills class `cls` (fill) or lands
 * one byte over class cls-1's chunk, i.e. in class cls (over), for this
 * key length and flags; false when the class does not exist or no value
 * fits. Exposed for tests and for `slabtap model`-style tools. */
bool workload_size_fill(const struct slab_ladder *l, uint32_t cls, uint32_t key_len, uint32_t flags,
                        uint64_t *value_len);
bool workload_size_over(const struct slab_ladder *l, uint32_t cls, uint32_t key_len, uint32_t flags,
                        uint64_t *value_len);

/* The per-key uniform draw in [0, 1) behind per-key sizes: splitmix64's
 * finalizer over the key's FNV-1a hash mixed with the seed and a stream
 * number (0 and 1 for the two draws lognormal needs). Exposed for tests. */
double workload_key_unit(const char *key, size_t len, uint64_t seed, unsigned stream);

/* Adds one op's canonical line "<cmd> <key> <value_len> <flags> <ttl>
 * <noreply 0|1>\n" to a fingerprint; a fill op's line ends " fill\n"
 * instead, so plans without fills keep their fingerprints. */
void workload_op_digest(struct sha256_ctx *c, const struct workload_op *op);

#endif
