/* workload: parser and lazy planner for workload files. Pure: the text
 * comes from the caller; the only allocation is the program's statement
 * array, bounded by WORKLOAD_STMTS_MAX. A plan never allocates. */
#include "load/workload.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/keyfmt.h"
#include "core/units.h"

/* ---- tables ----------------------------------------------------------- */

static const struct {
    const char *name;
    bool write;
} workload_cmds[WORKLOAD_CMD_COUNT] = {
#define WORKLOAD_CMD_ROW(id, name, write) { name, write },
    WORKLOAD_CMDS(WORKLOAD_CMD_ROW)
#undef WORKLOAD_CMD_ROW
};

static const char *const workload_status_text[WORKLOAD_STATUS_COUNT] = {
#define WORKLOAD_STATUS_ROW(id, text) text,
    WORKLOAD_STATUSES(WORKLOAD_STATUS_ROW)
#undef WORKLOAD_STATUS_ROW
};

const char *workload_cmd_name(enum workload_cmd cmd)
{
    return (unsigned)cmd < WORKLOAD_CMD_COUNT ? workload_cmds[cmd].name : "?";
}

bool workload_cmd_is_write(enum workload_cmd cmd)
{
    return (unsigned)cmd < WORKLOAD_CMD_COUNT && workload_cmds[cmd].write;
}

bool workload_cmd_is_read(enum workload_cmd cmd)
{
    return cmd == WORKLOAD_CMD_GET || cmd == WORKLOAD_CMD_GETS || cmd == WORKLOAD_CMD_GAT;
}

bool workload_cmd_parse(const char *name, size_t len, enum workload_cmd *out)
{
    for (unsigned c = 0; c < WORKLOAD_CMD_COUNT; c++) {
        if (strlen(workload_cmds[c].name) == len && !memcmp(workload_cmds[c].name, name, len)) {
            *out = (enum workload_cmd)c;
            return true;
        }
    }
    return false;
}

const char *workload_status_str(enum workload_status st)
{
    return (unsigned)st < WORKLOAD_STATUS_COUNT ? workload_status_text[st] : "?";
}

/* ---- the program ------------------------------------------------------ */

enum wl_size_kind {
    WL_SIZE_FIXED,
    WL_SIZE_UNIFORM,
    WL_SIZE_CHOICE,
    WL_SIZE_FILL,
    WL_SIZE_OVER,
    WL_SIZE_GPARETO,   /* etc, gpareto(scale,shape[,max]): always per key */
    WL_SIZE_LOGNORMAL, /* lognormal(mu,sigma[,max]): always per key */
};

/* Facebook's ETC pool (Atikoglu et al., "Workload Analysis of a
 * Large-Scale Key-Value Store", SIGMETRICS 2012, section 5.2): value
 * sizes follow a Generalized Pareto distribution with location 0, scale
 * 214.476 and shape 0.348238 (mean 329 bytes, median 168). */
#define WL_ETC_SCALE 214.476
#define WL_ETC_SHAPE 0.348238
#define WL_ETC_MAX 500000u /* bytes: P(size > 500,000) is about 5e-9 */
#define WL_DECIMAL_SCALE 1000000.0

struct wl_size {
    enum wl_size_kind kind;
    uint64_t lo,
        hi;      /* fixed: lo; uniform: [lo, hi]; fill/over: class; gpareto/lognormal: hi = max */
    double a, b; /* gpareto: scale, shape; lognormal: mu, sigma (of ln bytes) */
    uint32_t n_choices;
    uint64_t choices[WORKLOAD_CHOICES_MAX];
};

enum wl_field_kind { WL_FIELD_I, WL_FIELD_I_MOD, WL_FIELD_RAND, WL_FIELD_ZIPF };

/* {zipf:N:S}: the constants of rejection-inversion sampling (Hoermann &
 * Derflinger 1996, as in Apache Commons RNG), fixed at parse time so a
 * draw costs O(1) time and the program O(1) memory whatever N is. */
struct wl_zipf {
    double s;       /* the exponent */
    double h_x1;    /* H(1.5) - 1 */
    double h_n;     /* H(N + 0.5) */
    double squeeze; /* 2 - H^-1(H(2.5) - h(2)) */
};

/* A key pattern: literal text with fields spliced in at byte offsets. */
struct wl_key {
    char text[WORKLOAD_PATTERN_MAX + 1]; /* the literal bytes, fields removed */
    uint32_t text_len;
    uint32_t n_fields;
    struct {
        enum wl_field_kind kind;
        uint32_t at;    /* offset into text where it goes */
        uint64_t n;     /* the N of {i%N} / {rand:N} / {zipf:N:S} */
        uint32_t width; /* :W, zero-padded to W digits; 0 none */
        struct wl_zipf zipf;
    } field[WORKLOAD_FIELDS_MAX];
};

enum wl_stmt_kind { WL_ST_OP, WL_ST_PHASE, WL_ST_SLEEP, WL_ST_REPEAT, WL_ST_END };

struct wl_stmt {
    enum wl_stmt_kind kind;
    unsigned line;
    uint64_t count; /* op COUNT, repeat R */
    uint32_t match; /* repeat <-> its closing '}' */
    enum workload_cmd cmd;
    bool noreply;
    bool fill; /* getset: a get whose miss is filled; every size drawn per key */
    uint32_t flags;
    int64_t ttl;
    uint64_t delta; /* incr/decr by= */
    struct wl_size size;
    struct wl_key key;
    uint32_t sleep_ms;
    char name[WORKLOAD_NAME_MAX];
};

struct workload {
    char file[WORKLOAD_FILE_MAX];
    struct workload_settings settings;
    struct wl_stmt *stmts;
    uint32_t n_stmts;
    size_t cap_stmts;
    bool needs_ladder;
    bool has_fills;
    uint64_t total_ops;
};

const struct workload_settings *workload_settings(const struct workload *w)
{
    return &w->settings;
}

bool workload_needs_ladder(const struct workload *w)
{
    return w->needs_ladder;
}

bool workload_has_fills(const struct workload *w)
{
    return w->has_fills;
}

uint64_t workload_total_ops(const struct workload *w)
{
    return w->total_ops;
}

const char *workload_file(const struct workload *w)
{
    return w->file;
}

void workload_free(struct workload *w)
{
    if (!w)
        return;
    free(w->stmts);
    free(w);
}

/* ---- errors ----------------------------------------------------------- */

/* The message is "file:line: detail" (or "file: detail"), written in place
 * so a long detail is cut rather than the prefix. */
static enum workload_status wl_vfail(struct workload_error *err, enum workload_status st,
                                     const char *file, unsigned line, const char *fmt, va_list ap)
{
    if (!err)
        return st;
    err->status = st;
    err->line = line;
    int n = line ? snprintf(err->msg, sizeof err->msg, "%s:%u: ", file, line)
                 : snprintf(err->msg, sizeof err->msg, "%s: ", file);
    size_t off = n < 0 ? 0 : (size_t)n < sizeof err->msg ? (size_t)n : sizeof err->msg - 1;
    vsnprintf(err->msg + off, sizeof err->msg - off, fmt, ap);
    return st;
}

static enum workload_status wl_fail(struct workload_error *err, enum workload_status st,
                                    const char *file, unsigned line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static enum workload_status wl_fail(struct workload_error *err, enum workload_status st,
                                    const char *file, unsigned line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    wl_vfail(err, st, file, line, fmt, ap);
    va_end(ap);
    return st;
}

/* ---- numbers ---------------------------------------------------------- */

/* Decimal digits only: no sign, no blanks, no suffix, at most max. */
static bool wl_parse_u64(const char *s, size_t len, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    if (len == 0 || len > 20)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    if (v > max)
        return false;
    *out = v;
    return true;
}

/* A size (core/units.h: 876, 1k, 1.5KiB; a number alone is bytes) of at
 * most max bytes. */
static bool wl_parse_bytes(const char *s, size_t len, uint64_t max, uint64_t *out)
{
    uint64_t v;
    if (units_size(s, len, UNITS_B, &v) != UNITS_OK || v > max)
        return false;
    *out = v;
    return true;
}

static bool wl_parse_i64(const char *s, size_t len, int64_t min, int64_t max, int64_t *out)
{
    bool neg = len > 0 && s[0] == '-';
    uint64_t mag;
    if (!wl_parse_u64(s + neg, len - neg, (uint64_t)INT64_MAX + 1, &mag))
        return false;
    if (neg) {
        if (mag > (uint64_t) - (min + 1) + 1)
            return false;
        *out = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
        return true;
    }
    if (mag > (uint64_t)max)
        return false;
    *out = (int64_t)mag;
    return true;
}

static uint32_t wl_digits(uint64_t v)
{
    uint32_t n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

/* ---- the random stream ------------------------------------------------- */

static uint64_t wl_splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t wl_rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/* xoshiro256** (Blackman & Vigna) */
static uint64_t wl_rand(uint64_t s[4])
{
    uint64_t result = wl_rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = wl_rotl(s[3], 45);
    return result;
}

/* Uniform in [0, n), n >= 1, without modulo bias (rejection of the short
 * top range), so the plan's draws mean the same on every platform. */
static uint64_t wl_rand_below(uint64_t s[4], uint64_t n)
{
    uint64_t threshold = (0 - n) % n;
    for (;;) {
        uint64_t r = wl_rand(s);
        if (r >= threshold)
            return r % n;
    }
}

/* Uniform in [0, 1): the top 53 bits, exactly representable. */
static double wl_rand_unit(uint64_t s[4])
{
    return (double)(wl_rand(s) >> 11) * 0x1.0p-53;
}

/* ---- zipf -------------------------------------------------------------- */

/* Rank k of N drawn with probability proportional to 1/k^S by
 * rejection-inversion (W. Hoermann, G. Derflinger, "Rejection-inversion to
 * generate variates from monotone discrete distributions", 1996), the
 * formulation of Apache Commons RNG's RejectionInversionZipfSampler:
 * h(x) = x^-S, H its integral shifted so that H(1) = 0 for any S; one
 * uniform per try, and few tries are rejected (under 2 %, measured for
 * N 10..10^7 and S 0.000001..10).
 * Only libm's log, exp, log1p and expm1; no table, so N is not bounded by
 * memory. */

/* log1p(x)/x, continued to 1 at 0 */
static double wl_zipf_helper1(double x)
{
    return fabs(x) > 1e-8 ? log1p(x) / x : 1 - x * (0.5 - x * (1.0 / 3 - 0.25 * x));
}

/* expm1(x)/x, continued to 1 at 0 */
static double wl_zipf_helper2(double x)
{
    return fabs(x) > 1e-8 ? expm1(x) / x : 1 + x * 0.5 * (1 + x * (1.0 / 3) * (1 + 0.25 * x));
}

static double wl_zipf_h(double s, double x)
{
    return exp(-s * log(x));
}

/* (x^(1-S) - 1) / (1-S), or log(x) when S = 1 */
static double wl_zipf_H(double s, double x)
{
    double log_x = log(x);
    return wl_zipf_helper2((1 - s) * log_x) * log_x;
}

static double wl_zipf_H_inv(double s, double x)
{
    double t = x * (1 - s);
    if (t < -1)
        t = -1; /* rounding only: keeps log1p finite */
    return exp(wl_zipf_helper1(t) * x);
}

static void wl_zipf_init(struct wl_zipf *z, uint64_t n, double s)
{
    z->s = s;
    z->h_x1 = wl_zipf_H(s, 1.5) - 1;
    z->h_n = wl_zipf_H(s, (double)n + 0.5);
    z->squeeze = 2 - wl_zipf_H_inv(s, wl_zipf_H(s, 2.5) - wl_zipf_h(s, 2));
}

/* A rank in 1..n. */
static uint64_t wl_zipf_draw(uint64_t rng[4], const struct wl_zipf *z, uint64_t n)
{
    for (;;) {
        /* u in (h_x1, h_n]: one uniform per try */
        double u = z->h_n + wl_rand_unit(rng) * (z->h_x1 - z->h_n);
        double x = wl_zipf_H_inv(z->s, u);
        double kd = floor(x + 0.5);
        /* !(kd >= 1) also catches a NaN, so the cast below is always defined */
        uint64_t k = !(kd >= 1) ? 1 : kd >= (double)n ? n : (uint64_t)kd;
        if ((double)k - x <= z->squeeze ||
            u >= wl_zipf_H(z->s, (double)k + 0.5) - wl_zipf_h(z->s, (double)k))
            return k;
    }
}

/* The exponent S of {zipf:N:S}: "D[.DDDDDD]" in (0, 10], into millionths,
 * so the double it becomes is the same on every platform. */
#define WL_ZIPF_S_SCALE 1000000u
#define WL_ZIPF_S_MAX (10u * WL_ZIPF_S_SCALE)

static bool wl_parse_zipf_s(const char *str, size_t len, uint64_t *micro)
{
    const char *dot = memchr(str, '.', len);
    size_t ilen = dot ? (size_t)(dot - str) : len, flen = dot ? len - ilen - 1 : 0;
    uint64_t ipart, fpart = 0;
    if (!ilen || ilen > 2 || (dot && (!flen || flen > 6)) ||
        !wl_parse_u64(str, ilen, UINT64_MAX, &ipart) ||
        (flen && !wl_parse_u64(dot + 1, flen, UINT64_MAX, &fpart)))
        return false;
    for (size_t d = flen; d < 6; d++)
        fpart *= 10;
    *micro = ipart * WL_ZIPF_S_SCALE + fpart;
    return *micro > 0 && *micro <= WL_ZIPF_S_MAX;
}

/* ---- tokens ------------------------------------------------------------ */

struct wl_tok {
    const char *s;
    size_t len;
};

/* Splits a NUL-free line into blank-separated words; a word starting with
 * '#' starts a comment (so '#' inside a key pattern is fine). */
static bool wl_tokenize(const char *line, size_t len, struct wl_tok *toks, unsigned *n)
{
    size_t i = 0;
    *n = 0;
    while (i < len) {
        while (i < len && (line[i] == ' ' || line[i] == '\t'))
            i++;
        if (i >= len || line[i] == '#')
            break;
        size_t start = i;
        while (i < len && line[i] != ' ' && line[i] != '\t')
            i++;
        if (*n == WORKLOAD_TOKENS_MAX)
            return false;
        toks[*n].s = line + start;
        toks[(*n)++].len = i - start;
    }
    return true;
}

static bool wl_tok_is(const struct wl_tok *t, const char *word)
{
    return t->len == strlen(word) && !memcmp(t->s, word, t->len);
}

/* "name=value": true and *value set when t starts with name and '='. */
static bool wl_tok_option(const struct wl_tok *t, const char *name, struct wl_tok *value)
{
    size_t n = strlen(name);
    if (t->len <= n || memcmp(t->s, name, n) || t->s[n] != '=')
        return false;
    value->s = t->s + n + 1;
    value->len = t->len - n - 1;
    return true;
}

/* ---- parser state ----------------------------------------------------- */

struct wl_parser {
    struct workload *w;
    struct workload_error *err;
    unsigned line;
    uint32_t open[WORKLOAD_DEPTH_MAX]; /* statement index of each open repeat */
    uint32_t depth;
};

static enum workload_status wl_perr(struct wl_parser *ps, enum workload_status st, const char *fmt,
                                    ...) __attribute__((format(printf, 3, 4)));

static enum workload_status wl_perr(struct wl_parser *ps, enum workload_status st, const char *fmt,
                                    ...)
{
    va_list ap;
    va_start(ap, fmt);
    wl_vfail(ps->err, st, ps->w->file, ps->line, fmt, ap);
    va_end(ap);
    return st;
}

static enum workload_status wl_push(struct wl_parser *ps, const struct wl_stmt *st)
{
    struct workload *w = ps->w;
    if (w->n_stmts == WORKLOAD_STMTS_MAX)
        return wl_perr(ps, WORKLOAD_E_LIMIT, "more than %d statements", WORKLOAD_STMTS_MAX);
    if (!BUF_GROW(w->stmts, w->cap_stmts, (size_t)w->n_stmts + 1))
        return wl_perr(ps, WORKLOAD_E_MEMORY, "out of memory");
    w->stmts[w->n_stmts] = *st;
    w->stmts[w->n_stmts].line = ps->line;
    w->n_stmts++;
    return WORKLOAD_OK;
}

/* ---- sizes ------------------------------------------------------------- */

/* The comma-separated numbers inside "name(...)": false on any junk. */
static bool wl_size_args(const struct wl_tok *t, size_t open, uint64_t *args, uint32_t max,
                         bool bytes, uint32_t *n)
{
    size_t i = open + 1, end = t->len - 1;
    *n = 0;
    if (t->s[end] != ')')
        return false;
    while (i <= end) {
        size_t start = i;
        while (i < end && t->s[i] != ',')
            i++;
        if (*n == max || !(bytes ? wl_parse_bytes : wl_parse_u64)(t->s + start, i - start,
                                                                  WORKLOAD_VALUE_MAX, &args[*n]))
            return false;
        (*n)++;
        i++;
    }
    return *n > 0;
}

/* "[-]D[.DDDDDD]" (at most 9 integer digits) into a double by way of
 * millionths, so the same text gives the same double everywhere. */
static bool wl_parse_decimal(const char *str, size_t len, double *out)
{
    bool neg = len > 0 && str[0] == '-';
    const char *s = str + neg;
    size_t n = len - neg;
    const char *dot = memchr(s, '.', n);
    size_t ilen = dot ? (size_t)(dot - s) : n, flen = dot ? n - ilen - 1 : 0;
    uint64_t ipart, fpart = 0;
    if (!ilen || ilen > 9 || (dot && (!flen || flen > 6)) ||
        !wl_parse_u64(s, ilen, UINT64_MAX, &ipart) ||
        (flen && !wl_parse_u64(dot + 1, flen, UINT64_MAX, &fpart)))
        return false;
    for (size_t d = flen; d < 6; d++)
        fpart *= 10;
    double v = (double)(ipart * 1000000u + fpart) / WL_DECIMAL_SCALE;
    *out = neg ? -v : v;
    return true;
}

/* gpareto(scale,shape[,max]) / lognormal(mu,sigma[,max]): decimals, then
 * an optional whole max (default WL_ETC_MAX). */
static bool wl_size_dist_args(const struct wl_tok *t, size_t open, struct wl_size *out)
{
    size_t i = open + 1, end = t->len - 1;
    unsigned n = 0;
    out->hi = WL_ETC_MAX;
    if (t->s[end] != ')')
        return false;
    while (i <= end) {
        size_t start = i;
        while (i < end && t->s[i] != ',')
            i++;
        bool ok = n == 0   ? wl_parse_decimal(t->s + start, i - start, &out->a)
                  : n == 1 ? wl_parse_decimal(t->s + start, i - start, &out->b)
                  : n == 2 ? wl_parse_bytes(t->s + start, i - start, WORKLOAD_VALUE_MAX, &out->hi)
                           : false;
        if (!ok)
            return false;
        n++;
        i++;
    }
    return n >= 2;
}

static enum workload_status wl_parse_size_dist(struct wl_parser *ps, const struct wl_tok *t,
                                               const struct wl_tok *name, size_t open,
                                               struct wl_size *out)
{
    bool gp = wl_tok_is(name, "gpareto");
    out->kind = gp ? WL_SIZE_GPARETO : WL_SIZE_LOGNORMAL;
    if (!wl_size_dist_args(t, open, out))
        return wl_perr(ps, WORKLOAD_E_SIZE, "bad size '%.*s': want %s", (int)t->len, t->s,
                       gp ? "gpareto(SCALE,SHAPE[,MAX])" : "lognormal(MU,SIGMA[,MAX])");
    if (gp ? !(out->a > 0) || out->b < -10 || out->b > 10 : out->b < 0 || out->a > 30)
        return wl_perr(ps, WORKLOAD_E_SIZE, "bad size '%.*s': %s", (int)t->len, t->s,
                       gp ? "scale must be > 0, shape -10..10" : "sigma must be >= 0, mu <= 30");
    return WORKLOAD_OK;
}

static enum workload_status wl_parse_size(struct wl_parser *ps, const struct wl_tok *t,
                                          struct wl_size *out)
{
    memset(out, 0, sizeof *out);
    if (wl_parse_bytes(t->s, t->len, WORKLOAD_VALUE_MAX, &out->lo)) {
        out->kind = WL_SIZE_FIXED;
        return WORKLOAD_OK;
    }
    if (wl_tok_is(t, "etc")) {
        out->kind = WL_SIZE_GPARETO;
        out->a = WL_ETC_SCALE;
        out->b = WL_ETC_SHAPE;
        out->hi = WL_ETC_MAX;
        return WORKLOAD_OK;
    }
    const char *paren = memchr(t->s, '(', t->len);
    size_t open = paren ? (size_t)(paren - t->s) : 0;
    uint64_t args[WORKLOAD_CHOICES_MAX];
    uint32_t n = 0;
    struct wl_tok name = { t->s, open };
    if (paren && (wl_tok_is(&name, "gpareto") || wl_tok_is(&name, "lognormal")))
        return wl_parse_size_dist(ps, t, &name, open, out);
    if (paren && wl_tok_is(&name, "etc") && wl_size_args(t, open, args, 1, true, &n)) {
        out->kind = WL_SIZE_GPARETO;
        out->a = WL_ETC_SCALE;
        out->b = WL_ETC_SHAPE;
        out->hi = args[0];
        return WORKLOAD_OK;
    }
    /* fill(N) and over(N) take a class number, the others sizes */
    bool classes = wl_tok_is(&name, "fill") || wl_tok_is(&name, "over");
    if (!paren || !wl_size_args(t, open, args, WORKLOAD_CHOICES_MAX, !classes, &n))
        goto unknown;
    if (wl_tok_is(&name, "uniform") && n == 2) {
        if (args[0] > args[1])
            return wl_perr(ps, WORKLOAD_E_SIZE, "bad size '%.*s': minimum above maximum",
                           (int)t->len, t->s);
        out->kind = WL_SIZE_UNIFORM;
        out->lo = args[0];
        out->hi = args[1];
    } else if (wl_tok_is(&name, "choice")) {
        out->kind = WL_SIZE_CHOICE;
        out->n_choices = n;
        memcpy(out->choices, args, n * sizeof args[0]);
    } else if ((wl_tok_is(&name, "fill") || wl_tok_is(&name, "over")) && n == 1) {
        out->kind = name.s[0] == 'f' ? WL_SIZE_FILL : WL_SIZE_OVER;
        out->lo = args[0];
        if (args[0] < 1 || args[0] > SLAB_MODEL_MAX_CLASSES ||
            (out->kind == WL_SIZE_OVER && args[0] < 2))
            return wl_perr(ps, WORKLOAD_E_SIZE, "bad size '%.*s': class must be %d..%d",
                           (int)t->len, t->s, out->kind == WL_SIZE_OVER ? 2 : 1,
                           SLAB_MODEL_MAX_CLASSES);
        ps->w->needs_ladder = true;
    } else {
        goto unknown;
    }
    return WORKLOAD_OK;
unknown:
    return wl_perr(ps, WORKLOAD_E_SIZE, "unknown size '%.*s'", (int)t->len, t->s);
}

/* ---- key patterns ------------------------------------------------------ */

/* Splits a field body at ':' into at most 4 parts. */
static unsigned wl_field_parts(const char *s, size_t len, struct wl_tok part[4])
{
    unsigned n = 0;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && s[i] != ':')
            continue;
        if (n == 4)
            return 5;
        part[n].s = s + start;
        part[n++].len = i - start;
        start = i + 1;
    }
    return n;
}

/* One "{...}" field body (without braces) into k->field[k->n_fields]:
 * i, i%N, rand:N or zipf:N:S, then optionally :W to zero-pad to W digits. */
static bool wl_parse_field(const char *s, size_t len, struct wl_key *k)
{
    struct wl_tok part[4];
    unsigned n = wl_field_parts(s, len, part), used;
    uint64_t num = 0, width = 0, micro = 0;
    if (k->n_fields == WORKLOAD_FIELDS_MAX || n > 4)
        return false;
    if (wl_tok_is(&part[0], "i")) {
        k->field[k->n_fields].kind = WL_FIELD_I;
        used = 1;
    } else if (part[0].len > 2 && !memcmp(part[0].s, "i%", 2) &&
               wl_parse_u64(part[0].s + 2, part[0].len - 2, WORKLOAD_COUNT_MAX, &num) && num) {
        k->field[k->n_fields].kind = WL_FIELD_I_MOD;
        used = 1;
    } else if (wl_tok_is(&part[0], "rand") && n >= 2 &&
               wl_parse_u64(part[1].s, part[1].len, WORKLOAD_COUNT_MAX, &num) && num) {
        k->field[k->n_fields].kind = WL_FIELD_RAND;
        used = 2;
    } else if (wl_tok_is(&part[0], "zipf") && n >= 3 &&
               wl_parse_u64(part[1].s, part[1].len, WORKLOAD_COUNT_MAX, &num) && num &&
               wl_parse_zipf_s(part[2].s, part[2].len, &micro)) {
        k->field[k->n_fields].kind = WL_FIELD_ZIPF;
        wl_zipf_init(&k->field[k->n_fields].zipf, num, (double)micro / WL_ZIPF_S_SCALE);
        used = 3;
    } else {
        return false;
    }
    if (n > used + 1 ||
        (n == used + 1 &&
         (!wl_parse_u64(part[used].s, part[used].len, WORKLOAD_WIDTH_MAX, &width) || !width)))
        return false;
    k->field[k->n_fields].n = num;
    k->field[k->n_fields].width = (uint32_t)width;
    k->field[k->n_fields].at = k->text_len;
    k->n_fields++;
    return true;
}

static enum workload_status wl_parse_key(struct wl_parser *ps, const struct wl_tok *t,
                                         struct wl_key *k)
{
    memset(k, 0, sizeof *k);
    for (size_t i = 0; i < t->len; i++) {
        char c = t->s[i];
        if (c == '{') {
            const char *close = memchr(t->s + i, '}', t->len - i);
            size_t body = close ? (size_t)(close - t->s) - i - 1 : 0;
            if (!close || !wl_parse_field(t->s + i + 1, body, k))
                return wl_perr(
                    ps, WORKLOAD_E_KEY,
                    "bad key pattern '%.*s': fields are {i}, {i%%N}, {rand:N} or {zipf:N:S} "
                    "(N >= 1, S 0.000001..10), each with an optional :W (1..%d) to zero-pad, "
                    "at most %d",
                    (int)t->len, t->s, WORKLOAD_WIDTH_MAX, WORKLOAD_FIELDS_MAX);
            i += body + 1;
            continue;
        }
        /* memcached keys: no control characters or blanks */
        if ((unsigned char)c <= 0x20 || (unsigned char)c >= 0x7f || c == '}')
            return wl_perr(ps, WORKLOAD_E_KEY, "bad key pattern '%.*s': byte 0x%02x at %zu",
                           (int)t->len, t->s, (unsigned char)c, i + 1);
        if (k->text_len == WORKLOAD_PATTERN_MAX)
            return wl_perr(ps, WORKLOAD_E_KEY, "key pattern longer than %d bytes",
                           WORKLOAD_PATTERN_MAX);
        k->text[k->text_len++] = c;
    }
    if (k->text_len == 0 && k->n_fields == 0)
        return wl_perr(ps, WORKLOAD_E_KEY, "empty key pattern");
    return WORKLOAD_OK;
}

/* The longest key the pattern gives for {i} in [0, count). */
static uint32_t wl_key_max_len(const struct wl_key *k, uint64_t count)
{
    uint32_t len = k->text_len;
    for (uint32_t f = 0; f < k->n_fields; f++) {
        uint64_t top = k->field[f].n - 1;
        if (k->field[f].kind == WL_FIELD_I ||
            (k->field[f].kind == WL_FIELD_I_MOD && count && count - 1 < top))
            top = count ? count - 1 : 0;
        uint32_t digits = wl_digits(top);
        len += digits > k->field[f].width ? digits : k->field[f].width;
    }
    return len;
}

/* ---- statements -------------------------------------------------------- */

enum wl_opt {
    WL_OPT_KEY = 1u << 0,
    WL_OPT_SIZE = 1u << 1,
    WL_OPT_FLAGS = 1u << 2,
    WL_OPT_TTL = 1u << 3,
    WL_OPT_NOREPLY = 1u << 4,
    WL_OPT_BY = 1u << 5,
};

static const struct {
    const char *name;
    unsigned bit;
} wl_opt_names[] = {
    { "key", WL_OPT_KEY }, { "size", WL_OPT_SIZE },       { "flags", WL_OPT_FLAGS },
    { "ttl", WL_OPT_TTL }, { "noreply", WL_OPT_NOREPLY }, { "by", WL_OPT_BY },
};

static unsigned wl_cmd_options(enum workload_cmd cmd)
{
    if (workload_cmd_is_write(cmd))
        return WL_OPT_KEY | WL_OPT_SIZE | WL_OPT_FLAGS | WL_OPT_TTL | WL_OPT_NOREPLY;
    switch (cmd) {
    case WORKLOAD_CMD_GET:
    case WORKLOAD_CMD_GETS: return WL_OPT_KEY;
    case WORKLOAD_CMD_GAT: return WL_OPT_KEY | WL_OPT_TTL;
    case WORKLOAD_CMD_DELETE: return WL_OPT_KEY | WL_OPT_NOREPLY;
    case WORKLOAD_CMD_TOUCH: return WL_OPT_KEY | WL_OPT_TTL | WL_OPT_NOREPLY;
    default: /* incr, decr */ return WL_OPT_KEY | WL_OPT_BY | WL_OPT_NOREPLY;
    }
}

/* The value of one option word into st. */
static enum workload_status wl_apply_option(struct wl_parser *ps, struct wl_stmt *st, unsigned bit,
                                            const struct wl_tok *v)
{
    uint64_t u;
    switch (bit) {
    case WL_OPT_KEY: return wl_parse_key(ps, v, &st->key);
    case WL_OPT_SIZE: return wl_parse_size(ps, v, &st->size);
    case WL_OPT_FLAGS:
        if (!wl_parse_u64(v->s, v->len, UINT32_MAX, &u))
            return wl_perr(ps, WORKLOAD_E_NUMBER, "bad flags '%.*s' (0..4294967295)", (int)v->len,
                           v->s);
        st->flags = (uint32_t)u;
        return WORKLOAD_OK;
    case WL_OPT_TTL:
        if (!wl_parse_i64(v->s, v->len, WORKLOAD_TTL_MIN, WORKLOAD_TTL_MAX, &st->ttl))
            return wl_perr(ps, WORKLOAD_E_NUMBER, "bad ttl '%.*s' (a 32-bit signed number)",
                           (int)v->len, v->s);
        return WORKLOAD_OK;
    case WL_OPT_BY:
        if (!wl_parse_u64(v->s, v->len, UINT64_MAX, &st->delta))
            return wl_perr(ps, WORKLOAD_E_NUMBER, "bad by '%.*s'", (int)v->len, v->s);
        return WORKLOAD_OK;
    default: st->noreply = true; return WORKLOAD_OK;
    }
}

/* getset takes a write's options but noreply (its get is answered). */
static unsigned wl_stmt_options(const struct wl_stmt *st)
{
    return st->fill ? WL_OPT_KEY | WL_OPT_SIZE | WL_OPT_FLAGS | WL_OPT_TTL
                    : wl_cmd_options(st->cmd);
}

static enum workload_status wl_parse_option(struct wl_parser *ps, struct wl_stmt *st,
                                            const struct wl_tok *t, unsigned *seen)
{
    const char *cmd = st->fill ? "getset" : workload_cmd_name(st->cmd);
    for (size_t k = 0; k < sizeof wl_opt_names / sizeof wl_opt_names[0]; k++) {
        struct wl_tok v = { 0 };
        unsigned bit = wl_opt_names[k].bit;
        bool hit = bit == WL_OPT_NOREPLY ? wl_tok_is(t, "noreply")
                                         : wl_tok_option(t, wl_opt_names[k].name, &v);
        if (!hit)
            continue;
        if (!(wl_stmt_options(st) & bit))
            return wl_perr(ps, WORKLOAD_E_UNKNOWN, "option '%s' does not apply to %s",
                           wl_opt_names[k].name, cmd);
        if (*seen & bit)
            return wl_perr(ps, WORKLOAD_E_SYNTAX, "option '%s' given twice", wl_opt_names[k].name);
        *seen |= bit;
        return wl_apply_option(ps, st, bit, &v);
    }
    return wl_perr(ps, WORKLOAD_E_UNKNOWN, "unknown option '%.*s' for %s", (int)t->len, t->s, cmd);
}

/* An op statement; fill: `getset`, a get of cmd GET whose miss is filled. */
static enum workload_status wl_parse_op(struct wl_parser *ps, enum workload_cmd cmd, bool fill,
                                        const struct wl_tok *toks, unsigned n)
{
    struct wl_stmt st;
    memset(&st, 0, sizeof st);
    st.kind = WL_ST_OP;
    st.cmd = cmd;
    st.fill = fill;
    st.delta = 1;
    const char *name = fill ? "getset" : workload_cmd_name(cmd);
    if (n < 2 || !wl_parse_u64(toks[1].s, toks[1].len, WORKLOAD_COUNT_MAX, &st.count))
        return wl_perr(ps, WORKLOAD_E_NUMBER, "%s needs a COUNT (0..%llu) first, got '%.*s'", name,
                       (unsigned long long)WORKLOAD_COUNT_MAX, n < 2 ? 0 : (int)toks[1].len,
                       n < 2 ? "" : toks[1].s);
    unsigned seen = 0;
    for (unsigned i = 2; i < n; i++) {
        enum workload_status rc = wl_parse_option(ps, &st, &toks[i], &seen);
        if (rc != WORKLOAD_OK)
            return rc;
    }
    if (!(seen & WL_OPT_KEY))
        return wl_perr(ps, WORKLOAD_E_SYNTAX, "%s needs key=PATTERN", name);
    if ((workload_cmd_is_write(cmd) || fill) && !(seen & WL_OPT_SIZE))
        return wl_perr(ps, WORKLOAD_E_SYNTAX, "%s needs size=SIZE", name);
    uint32_t max_len = wl_key_max_len(&st.key, st.count);
    if (max_len > WORKLOAD_KEY_MAX)
        return wl_perr(ps, WORKLOAD_E_KEY,
                       "key pattern gives keys of up to %u bytes; memcached's "
                       "limit is %d",
                       max_len, WORKLOAD_KEY_MAX);
    ps->w->has_fills |= fill;
    return wl_push(ps, &st);
}

static enum workload_status wl_parse_phase(struct wl_parser *ps, const struct wl_tok *toks,
                                           unsigned n)
{
    struct wl_stmt st;
    memset(&st, 0, sizeof st);
    st.kind = WL_ST_PHASE;
    if (n != 2)
        return wl_perr(ps, WORKLOAD_E_SYNTAX, "phase takes one NAME");
    if (toks[1].len >= WORKLOAD_NAME_MAX)
        return wl_perr(ps, WORKLOAD_E_LIMIT, "phase name longer than %d bytes",
                       WORKLOAD_NAME_MAX - 1);
    for (size_t i = 0; i < toks[1].len; i++) {
        char c = toks[1].s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              strchr("_.:-", c)))
            return wl_perr(ps, WORKLOAD_E_SYNTAX,
                           "bad phase name '%.*s' (letters, digits, _ . : -)", (int)toks[1].len,
                           toks[1].s);
    }
    memcpy(st.name, toks[1].s, toks[1].len);
    return wl_push(ps, &st);
}

static enum workload_status wl_parse_block(struct wl_parser *ps, const struct wl_tok *toks,
                                           unsigned n)
{
    struct wl_stmt st;
    memset(&st, 0, sizeof st);
    if (wl_tok_is(&toks[0], "}")) {
        if (n != 1)
            return wl_perr(ps, WORKLOAD_E_SYNTAX, "'}' must stand alone on its line");
        if (ps->depth == 0)
            return wl_perr(ps, WORKLOAD_E_BLOCK, "'}' without an open 'repeat'");
        st.kind = WL_ST_END;
        st.match = ps->open[--ps->depth];
        ps->w->stmts[st.match].match = ps->w->n_stmts;
        return wl_push(ps, &st);
    }
    st.kind = WL_ST_REPEAT;
    if (n != 3 || !wl_tok_is(&toks[2], "{"))
        return wl_perr(ps, WORKLOAD_E_SYNTAX, "repeat wants 'repeat R {'");
    if (!wl_parse_u64(toks[1].s, toks[1].len, WORKLOAD_COUNT_MAX, &st.count))
        return wl_perr(ps, WORKLOAD_E_NUMBER, "bad repeat count '%.*s'", (int)toks[1].len,
                       toks[1].s);
    if (ps->depth == WORKLOAD_DEPTH_MAX)
        return wl_perr(ps, WORKLOAD_E_LIMIT, "repeat blocks nested deeper than %d",
                       WORKLOAD_DEPTH_MAX);
    ps->open[ps->depth++] = ps->w->n_stmts;
    return wl_push(ps, &st);
}

/* connections / pipeline / seed: once each, outside any block. */
static enum workload_status wl_parse_setting(struct wl_parser *ps, const struct wl_tok *toks,
                                             unsigned n)
{
    struct workload_settings *s = &ps->w->settings;
    char word[16];
    snprintf(word, sizeof word, "%.*s", (int)toks[0].len, toks[0].s);
    bool is_conn = !strcmp(word, "connections"), is_pipe = !strcmp(word, "pipeline");
    bool *has = is_conn ? &s->has_connections : is_pipe ? &s->has_pipeline : &s->has_seed;
    uint64_t max = is_conn   ? WORKLOAD_CONNECTIONS_MAX
                   : is_pipe ? WORKLOAD_PIPELINE_MAX
                             : UINT64_MAX;
    uint64_t v;
    if (ps->depth)
        return wl_perr(ps, WORKLOAD_E_SYNTAX, "%s is file-wide: not inside a repeat block", word);
    if (*has)
        return wl_perr(ps, WORKLOAD_E_SYNTAX, "%s given twice", word);
    if (n != 2 || !wl_parse_u64(toks[1].s, toks[1].len, max, &v) ||
        (v == 0 && (is_conn || is_pipe)))
        return wl_perr(ps, WORKLOAD_E_NUMBER, "%s wants one number (%d..%llu)", word,
                       is_conn || is_pipe ? 1 : 0, (unsigned long long)max);
    *has = true;
    if (is_conn)
        s->connections = (unsigned)v;
    else if (is_pipe)
        s->pipeline = (unsigned)v;
    else
        s->seed = v;
    return WORKLOAD_OK;
}

static enum workload_status wl_parse_sleep(struct wl_parser *ps, const struct wl_tok *toks,
                                           unsigned n)
{
    struct wl_stmt st;
    uint64_t ms;
    memset(&st, 0, sizeof st);
    st.kind = WL_ST_SLEEP;
    /* a duration (core/units.h), its words included: "sleep 1 second" */
    const char *from = n >= 2 ? toks[1].s : NULL;
    size_t len = n >= 2 ? (size_t)(toks[n - 1].s + toks[n - 1].len - from) : 0;
    if (n < 2 || units_duration(from, len, UNITS_MS, &ms) != UNITS_OK ||
        ms > WORKLOAD_SLEEP_MAX_MS) {
        char max[32];
        units_duration_text(WORKLOAD_SLEEP_MAX_MS, UNITS_MS, max, sizeof max);
        return wl_perr(ps, WORKLOAD_E_NUMBER,
                       "sleep wants a duration of at most %s (250ms, 2s, '1 minute'; a number "
                       "alone is milliseconds)",
                       max);
    }
    st.sleep_ms = (uint32_t)ms;
    return wl_push(ps, &st);
}

static enum workload_status wl_parse_line(struct wl_parser *ps, const struct wl_tok *toks,
                                          unsigned n)
{
    const struct wl_tok *t = &toks[0];
    enum workload_cmd cmd;
    if (wl_tok_is(t, "}") || wl_tok_is(t, "repeat"))
        return wl_parse_block(ps, toks, n);
    if (wl_tok_is(t, "phase"))
        return wl_parse_phase(ps, toks, n);
    if (wl_tok_is(t, "sleep"))
        return wl_parse_sleep(ps, toks, n);
    if (wl_tok_is(t, "connections") || wl_tok_is(t, "pipeline") || wl_tok_is(t, "seed"))
        return wl_parse_setting(ps, toks, n);
    if (wl_tok_is(t, "getset"))
        return wl_parse_op(ps, WORKLOAD_CMD_GET, true, toks, n);
    if (workload_cmd_parse(t->s, t->len, &cmd))
        return wl_parse_op(ps, cmd, false, toks, n);
    return wl_perr(ps, WORKLOAD_E_UNKNOWN, "unknown directive '%.*s'", (int)t->len, t->s);
}

/* Total ops: each op statement's COUNT times its enclosing repeats. */
static enum workload_status wl_count_ops(struct wl_parser *ps)
{
    struct workload *w = ps->w;
    uint64_t mult[WORKLOAD_DEPTH_MAX + 1] = { 1 };
    uint64_t steps = 0; /* statements the planner walks: repeats of nothing count too */
    uint32_t depth = 0;
    w->total_ops = 0;
    for (uint32_t pc = 0; pc < w->n_stmts; pc++) {
        const struct wl_stmt *s = &w->stmts[pc];
        ps->line = s->line;
        if (s->kind != WL_ST_OP)
            steps += mult[depth] > WORKLOAD_STEPS_MAX ? WORKLOAD_STEPS_MAX + 1 : mult[depth];
        if (steps > WORKLOAD_STEPS_MAX)
            return wl_perr(ps, WORKLOAD_E_LIMIT,
                           "the plan walks its repeat, phase and sleep lines more than %llu "
                           "times (a large repeat of few or no operations)",
                           (unsigned long long)WORKLOAD_STEPS_MAX);
        if (s->kind == WL_ST_REPEAT) {
            /* a zero-count repeat makes its body contribute nothing */
            uint64_t m = mult[depth];
            mult[++depth] =
                s->count && m > WORKLOAD_OPS_MAX / s->count ? WORKLOAD_OPS_MAX + 1 : m * s->count;
        } else if (s->kind == WL_ST_END) {
            depth--;
        } else if (s->kind == WL_ST_OP && s->count) {
            uint64_t m = mult[depth];
            if (m > WORKLOAD_OPS_MAX / s->count || w->total_ops + m * s->count > WORKLOAD_OPS_MAX)
                return wl_perr(ps, WORKLOAD_E_LIMIT, "the plan has more than %llu operations",
                               (unsigned long long)WORKLOAD_OPS_MAX);
            w->total_ops += m * s->count;
        }
    }
    return WORKLOAD_OK;
}

/* Each line of text through the tokenizer and wl_parse_line. */
static enum workload_status wl_parse_lines(struct wl_parser *ps, const char *text, size_t len)
{
    size_t pos = 0;
    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - text) : len, line_len = end - pos;
        ps->line++;
        if (line_len && text[pos + line_len - 1] == '\r')
            line_len--;
        if (line_len > WORKLOAD_LINE_MAX)
            return wl_perr(ps, WORKLOAD_E_LIMIT, "line longer than %d bytes", WORKLOAD_LINE_MAX);
        if (memchr(text + pos, '\0', line_len))
            return wl_perr(ps, WORKLOAD_E_SYNTAX, "NUL byte in line");
        struct wl_tok toks[WORKLOAD_TOKENS_MAX];
        unsigned n;
        if (!wl_tokenize(text + pos, line_len, toks, &n))
            return wl_perr(ps, WORKLOAD_E_LIMIT, "more than %d words on one line",
                           WORKLOAD_TOKENS_MAX);
        if (n) {
            enum workload_status rc = wl_parse_line(ps, toks, n);
            if (rc != WORKLOAD_OK)
                return rc;
        }
        pos = end + 1;
    }
    if (ps->depth) {
        ps->line = ps->w->stmts[ps->open[ps->depth - 1]].line;
        return wl_perr(ps, WORKLOAD_E_BLOCK, "'repeat' block opened here is never closed");
    }
    return WORKLOAD_OK;
}

enum workload_status workload_parse(const char *file, const char *text, size_t len,
                                    struct workload **out, struct workload_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    if (!out || (!text && len))
        return wl_fail(err, WORKLOAD_E_ARG, file ? file : "?", 0, "bad argument");
    *out = NULL;
    struct workload *w = calloc(1, sizeof *w);
    if (!w)
        return wl_fail(err, WORKLOAD_E_MEMORY, file ? file : "?", 0, "out of memory");
    snprintf(w->file, sizeof w->file, "%s", file ? file : "<workload>");
    struct wl_parser ps = { .w = w, .err = err };
    enum workload_status rc = wl_parse_lines(&ps, text, len);
    if (rc == WORKLOAD_OK)
        rc = wl_count_ops(&ps);
    if (rc != WORKLOAD_OK) {
        workload_free(w);
        return rc;
    }
    *out = w;
    return WORKLOAD_OK;
}

/* ---- ladder-relative sizes ---------------------------------------------- */

static bool wl_value_for(const struct slab_ladder *l, uint64_t target, uint32_t key_len,
                         uint32_t flags, uint64_t *value_len)
{
    uint64_t base = slab_item_ntotal(l->use_cas, key_len, flags, 0);
    if (target < base)
        return false;
    *value_len = target - base;
    return true;
}

bool workload_size_fill(const struct slab_ladder *l, uint32_t cls, uint32_t key_len, uint32_t flags,
                        uint64_t *value_len)
{
    if (!l || cls < 1 || cls > l->n_classes)
        return false;
    return wl_value_for(l, l->cls[cls].chunk_size, key_len, flags, value_len);
}

bool workload_size_over(const struct slab_ladder *l, uint32_t cls, uint32_t key_len, uint32_t flags,
                        uint64_t *value_len)
{
    if (!l || cls < 2 || cls > l->n_classes)
        return false;
    return wl_value_for(l, (uint64_t)l->cls[cls - 1].chunk_size + 1, key_len, flags, value_len);
}

/* ---- the plan ------------------------------------------------------------ */

/* fill/over of one statement against the ladder, for its longest key. */
static enum workload_status wl_bind_stmt(const struct workload_plan *p, const struct wl_stmt *s,
                                         struct workload_error *err)
{
    const struct workload *w = p->w;
    bool fill = s->size.kind == WL_SIZE_FILL;
    uint32_t cls = (uint32_t)s->size.lo;
    uint64_t v;
    if (!p->has_ladder)
        return wl_fail(err, WORKLOAD_E_LADDER, w->file, s->line,
                       "%s(%u) needs the server's slab ladder", fill ? "fill" : "over", cls);
    if (cls > p->ladder.n_classes)
        return wl_fail(err, WORKLOAD_E_LADDER, w->file, s->line,
                       "%s(%u): the ladder has only %u classes", fill ? "fill" : "over", cls,
                       p->ladder.n_classes);
    uint32_t key_len = wl_key_max_len(&s->key, s->count);
    bool ok = fill ? workload_size_fill(&p->ladder, cls, key_len, s->flags, &v)
                   : workload_size_over(&p->ladder, cls, key_len, s->flags, &v);
    if (!ok)
        return wl_fail(err, WORKLOAD_E_LADDER, w->file, s->line,
                       "%s(%u): a %u-byte key with flags %u leaves no room for a value",
                       fill ? "fill" : "over", cls, key_len, s->flags);
    return WORKLOAD_OK;
}

enum workload_status workload_plan_init(struct workload_plan *p, const struct workload *w,
                                        const struct slab_ladder *ladder, uint64_t seed,
                                        struct workload_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    if (!p || !w)
        return wl_fail(err, WORKLOAD_E_ARG, "<workload>", 0, "bad argument");
    memset(p, 0, sizeof *p);
    p->w = w;
    if (ladder) {
        p->ladder = *ladder;
        p->has_ladder = true;
    }
    p->seed = seed;
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        p->rng[i] = wl_splitmix64(&x);
    for (uint32_t pc = 0; pc < w->n_stmts; pc++) {
        const struct wl_stmt *s = &w->stmts[pc];
        if (s->kind != WL_ST_OP || (s->size.kind != WL_SIZE_FILL && s->size.kind != WL_SIZE_OVER))
            continue;
        enum workload_status rc = wl_bind_stmt(p, s, err);
        if (rc != WORKLOAD_OK)
            return rc;
    }
    return WORKLOAD_OK;
}

/* v in decimal, zero-padded to at least width digits. */
static uint32_t wl_fmt_u64(char *out, uint64_t v, uint32_t width)
{
    char tmp[WORKLOAD_WIDTH_MAX];
    uint32_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n < width)
        tmp[n++] = '0';
    for (uint32_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    return n;
}

/* The key of op i; bounded by the check made at parse time. */
static void wl_make_key(struct workload_plan *p, const struct wl_key *k, uint64_t i,
                        struct workload_op *op)
{
    uint32_t pos = 0, len = 0;
    for (uint32_t f = 0; f < k->n_fields; f++) {
        memcpy(op->key + len, k->text + pos, k->field[f].at - pos);
        len += k->field[f].at - pos;
        pos = k->field[f].at;
        uint64_t v;
        switch (k->field[f].kind) {
        case WL_FIELD_I: v = i; break;
        case WL_FIELD_I_MOD: v = i % k->field[f].n; break;
        case WL_FIELD_RAND: v = wl_rand_below(p->rng, k->field[f].n); break;
        default: /* rank 1 (the hottest) is key 0 */
            v = wl_zipf_draw(p->rng, &k->field[f].zipf, k->field[f].n) - 1;
            break;
        }
        len += wl_fmt_u64(op->key + len, v, k->field[f].width);
    }
    memcpy(op->key + len, k->text + pos, k->text_len - pos);
    len += k->text_len - pos;
    op->key[len] = '\0';
    op->key_len = (uint16_t)len;
}

double workload_key_unit(const char *key, size_t len, uint64_t seed, unsigned stream)
{
    uint64_t x = keyfmt_hash(key, len) ^ wl_rotl(seed, 17) ^ ((uint64_t)stream << 56);
    x = wl_splitmix64(&x);
    return (double)(x >> 11) * 0x1.0p-53;
}

/* floor(x) clamped to [1, max] (a NaN or infinity gives max). */
static uint64_t wl_size_clamp(double x, uint64_t max)
{
    if (!(x < (double)max))
        return max;
    return x < 1 ? (max < 1 ? max : 1) : (uint64_t)x;
}

/* A size that depends on the key alone (and the seed). */
static uint64_t wl_key_size(const struct workload_plan *p, const struct wl_size *z,
                            const struct workload_op *op)
{
    double u = workload_key_unit(op->key, op->key_len, p->seed, 0), x;
    switch (z->kind) {
    case WL_SIZE_UNIFORM: {
        uint64_t span = z->hi - z->lo + 1, k = (uint64_t)(u * (double)span);
        return z->lo + (span && k >= span ? span - 1 : k);
    }
    case WL_SIZE_CHOICE: {
        uint32_t k = (uint32_t)(u * z->n_choices);
        return z->choices[k >= z->n_choices ? z->n_choices - 1 : k];
    }
    case WL_SIZE_GPARETO: /* inversion: scale * ((1-u)^-shape - 1) / shape */
        x = fabs(z->b) < 1e-12 ? -z->a * log1p(-u) : z->a * expm1(-z->b * log1p(-u)) / z->b;
        return wl_size_clamp(x, z->hi);
    case WL_SIZE_LOGNORMAL: { /* Box-Muller over the key's two draws */
        double u2 = workload_key_unit(op->key, op->key_len, p->seed, 1);
        double r = sqrt(-2 * log1p(-u)), zn = r * cos(6.283185307179586 * u2);
        return wl_size_clamp(exp(z->a + z->b * zn), z->hi);
    }
    default: return z->lo;
    }
}

static uint64_t wl_make_size(struct workload_plan *p, const struct wl_stmt *s,
                             const struct workload_op *op)
{
    const struct wl_size *z = &s->size;
    uint64_t v = 0;
    switch (z->kind) {
    case WL_SIZE_FIXED: return z->lo;
    case WL_SIZE_GPARETO:
    case WL_SIZE_LOGNORMAL: return wl_key_size(p, z, op);
    case WL_SIZE_UNIFORM:
        if (s->fill)
            return wl_key_size(p, z, op);
        return z->lo + wl_rand_below(p->rng, z->hi - z->lo + 1);
    case WL_SIZE_CHOICE:
        if (s->fill)
            return wl_key_size(p, z, op);
        return z->choices[wl_rand_below(p->rng, z->n_choices)];
    case WL_SIZE_FILL:
        workload_size_fill(&p->ladder, (uint32_t)z->lo, op->key_len, s->flags, &v);
        return v;
    case WL_SIZE_OVER:
        workload_size_over(&p->ladder, (uint32_t)z->lo, op->key_len, s->flags, &v);
        return v;
    }
    return 0;
}

static void wl_make_op(struct workload_plan *p, const struct wl_stmt *s, struct workload_op *op)
{
    bool carries = workload_cmd_is_write(s->cmd) || s->fill;
    op->cmd = s->cmd;
    op->noreply = s->noreply;
    op->fill = s->fill;
    op->flags = carries ? s->flags : 0;
    op->ttl = carries || s->cmd == WORKLOAD_CMD_TOUCH || s->cmd == WORKLOAD_CMD_GAT ? s->ttl : 0;
    wl_make_key(p, &s->key, p->i, op);
    if (carries)
        op->value_len = wl_make_size(p, s, op);
    else
        op->value_len = s->cmd == WORKLOAD_CMD_INCR || s->cmd == WORKLOAD_CMD_DECR ? s->delta : 0;
}

enum workload_next workload_plan_next(struct workload_plan *p, struct workload_item *it)
{
    const struct workload *w = p->w;
    while (p->pc < w->n_stmts) {
        const struct wl_stmt *s = &w->stmts[p->pc];
        switch (s->kind) {
        case WL_ST_OP:
            if (p->i < s->count) {
                it->kind = WORKLOAD_ITEM_OP;
                wl_make_op(p, s, &it->op);
                p->i++;
                p->emitted++;
                return WORKLOAD_NEXT_ITEM;
            }
            p->i = 0;
            p->pc++;
            break;
        case WL_ST_PHASE:
        case WL_ST_SLEEP:
            it->kind = s->kind == WL_ST_PHASE ? WORKLOAD_ITEM_PHASE : WORKLOAD_ITEM_SLEEP;
            memcpy(it->phase, s->name, sizeof it->phase);
            it->sleep_ms = s->sleep_ms;
            p->pc++;
            return WORKLOAD_NEXT_ITEM;
        case WL_ST_REPEAT:
            if (s->count == 0) {
                p->pc = s->match + 1;
                break;
            }
            p->stack[p->depth].pc = p->pc;
            p->stack[p->depth++].left = s->count;
            p->pc++;
            break;
        case WL_ST_END:
            if (--p->stack[p->depth - 1].left > 0) {
                p->pc = p->stack[p->depth - 1].pc + 1;
            } else {
                p->depth--;
                p->pc++;
            }
            break;
        }
    }
    return WORKLOAD_NEXT_END;
}

void workload_op_digest(struct sha256_ctx *c, const struct workload_op *op)
{
    char line[WORKLOAD_KEY_MAX + 96];
    int n = snprintf(line, sizeof line, "%s %.*s %llu %u %lld %d%s\n", workload_cmd_name(op->cmd),
                     (int)op->key_len, op->key, (unsigned long long)op->value_len, op->flags,
                     (long long)op->ttl, op->noreply ? 1 : 0, op->fill ? " fill" : "");
    if (n > 0)
        sha256_update(c, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}
