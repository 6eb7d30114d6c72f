/* opt: see opt.h. */
#include "core/opt.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/units.h"

/* One parse: where the table and argv are, and where a message goes. */
struct opt_ctx {
    const char *command;
    const struct opt_spec *table;
    size_t n;
    int argc;
    char **argv;
    char *err;
    size_t errlen;
};

/* One option as given: its row, the name as typed, its value (or NULL). */
struct opt_use {
    const struct opt_spec *spec;
    char name[64];
    const char *value;
};

static void opt_verror(char *err, size_t errlen, const char *command, const char *fmt, va_list ap)
{
    if (!err || errlen == 0)
        return;
    int n = snprintf(err, errlen, "slabtap %s: ", command);
    if (n >= 0 && (size_t)n < errlen)
        vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
}

enum opt_result opt_error(char *err, size_t errlen, const char *command, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    opt_verror(err, errlen, command, fmt, ap);
    va_end(ap);
    return OPT_ERROR;
}

/* "slabtap CMD: --name: MESSAGE"; returns -1 for take_*'s callers. */
__attribute__((format(printf, 3, 4))) static int
opt_bad(const struct opt_ctx *c, const struct opt_use *u, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    opt_error(c->err, c->errlen, c->command, "%s: %s", u->name, msg);
    return -1;
}

static bool opt_all_digits(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

/* n digits (already checked) into *out; false when above UINT64_MAX. */
static bool opt_digits_value(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/* v (read from text; fits false when it overflowed) within the row's
 * [min, max]; 0 or -1 with the message. */
static int opt_check_u(const struct opt_ctx *c, const struct opt_use *u, uint64_t v, bool fits)
{
    uint64_t max = u->spec->max ? u->spec->max : UINT64_MAX;
    if (!fits || v > max)
        return opt_bad(c, u, "%s is above the maximum %llu", u->value, (unsigned long long)max);
    if (v < u->spec->min)
        return opt_bad(c, u, "%s is below the minimum %llu", u->value,
                       (unsigned long long)u->spec->min);
    return 0;
}

static int opt_take_uint(const struct opt_ctx *c, const struct opt_use *u)
{
    const char *t = u->value;
    size_t len = strlen(t);
    uint64_t v = 0;
    if ((t[0] == '-' || t[0] == '+') && opt_all_digits(t + 1, len - 1))
        return opt_bad(c, u, "\"%s\" must be a number without a sign", t);
    if (!opt_all_digits(t, len))
        return opt_bad(c, u, "\"%s\" is not a number", t);
    bool fits = opt_digits_value(t, len, &v);
    if (opt_check_u(c, u, v, fits))
        return -1;
    *(uint64_t *)u->spec->dest = v;
    return 0;
}

static int opt_take_int(const struct opt_ctx *c, const struct opt_use *u)
{
    const char *t = u->value;
    bool neg = t[0] == '-';
    size_t skip = neg || t[0] == '+';
    int64_t lo = u->spec->smin, hi = u->spec->smax;
    uint64_t mag = 0;
    if (lo == 0 && hi == 0) {
        lo = INT64_MIN;
        hi = INT64_MAX;
    }
    if (!opt_all_digits(t + skip, strlen(t + skip)))
        return opt_bad(c, u, "\"%s\" is not a number", t);
    bool fits = opt_digits_value(t + skip, strlen(t + skip), &mag) &&
                mag <= (neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX);
    int64_t v = !fits ? 0 : neg ? (int64_t)(0 - mag) : (int64_t)mag;
    if ((!fits && neg) || (fits && v < lo))
        return opt_bad(c, u, "%s is below the minimum %lld", t, (long long)lo);
    if (!fits || v > hi)
        return opt_bad(c, u, "%s is above the maximum %lld", t, (long long)hi);
    *(int64_t *)u->spec->dest = v;
    return 0;
}

/* OPT_SIZE and OPT_DURATION: core/units.h's grammar, the row's bare unit,
 * bounds printed in the same units ("1MiB", "50ms"). */
static int opt_take_units(const struct opt_ctx *c, const struct opt_use *u)
{
    const struct opt_spec *s = u->spec;
    const char *t = u->value;
    bool size = s->kind == OPT_SIZE;
    uint64_t unit = size && !s->unit ? 1 : s->unit, v = 0, max = s->max ? s->max : UINT64_MAX;
    char bound[48];
    const char *name = size ? units_size_name(unit) : units_duration_name(unit ? unit : 1);
    enum units_status st =
        size ? units_size(t, strlen(t), unit, &v) : units_duration(t, strlen(t), unit, &v);
    int (*text)(uint64_t, uint64_t, char *, size_t) = size ? units_size_text : units_duration_text;
    if (st == UNITS_SYNTAX && size)
        return opt_bad(c, u, "\"%s\" is not a size (examples: 512k, 8MB, 1.5GiB%s%s)", t,
                       unit == 1 ? "" : "; a number alone is in ", unit == 1 ? "" : name);
    if (st == UNITS_SYNTAX)
        return opt_bad(c, u, "\"%s\" is not a duration (examples: 250ms, 1s, 1h30m, '2 days'%s%s)",
                       t, unit ? "; a number alone is in " : "", unit ? name : "");
    if (st == UNITS_INEXACT)
        return opt_bad(c, u, "\"%s\" is not a whole number of %s", t, name);
    if (st == UNITS_RANGE || v > max) {
        text(max, unit, bound, sizeof bound);
        return opt_bad(c, u, "%s is above the maximum %s", t, bound);
    }
    if (v < s->min) {
        text(s->min, unit, bound, sizeof bound);
        return opt_bad(c, u, "%s is below the minimum %s", t, bound);
    }
    *(uint64_t *)s->dest = v;
    return 0;
}

static int opt_take_double(const struct opt_ctx *c, const struct opt_use *u)
{
    const char *t = u->value;
    char *end;
    if (!t[0] || t[strspn(t, "0123456789.eE+-")] != '\0')
        return opt_bad(c, u, "\"%s\" is not a number", t);
    errno = 0;
    double v = strtod(t, &end);
    if (*end || end == t)
        return opt_bad(c, u, "\"%s\" is not a number", t);
    if (errno == ERANGE || !isfinite(v))
        return opt_bad(c, u, "%s is out of range", t);
    bool bounded = u->spec->dmin != 0 || u->spec->dmax != 0;
    if (bounded && v < u->spec->dmin)
        return opt_bad(c, u, "%s is below the minimum %g", t, u->spec->dmin);
    if (bounded && v > u->spec->dmax)
        return opt_bad(c, u, "%s is above the maximum %g", t, u->spec->dmax);
    *(double *)u->spec->dest = v;
    return 0;
}

static int opt_take_enum(const struct opt_ctx *c, const struct opt_use *u)
{
    char list[192] = "";
    size_t len = 0;
    for (const struct opt_word *w = u->spec->words; w && w->word; w++) {
        if (!strcmp(w->word, u->value)) {
            *(int *)u->spec->dest = w->value;
            return 0;
        }
        int k = snprintf(list + len, sizeof list - len, "%s%s", len ? ", " : "", w->word);
        if (k > 0 && (size_t)k < sizeof list - len)
            len += (size_t)k;
    }
    return opt_bad(c, u, "\"%s\" is not one of %s", u->value, list);
}

static int opt_take_call(const struct opt_ctx *c, const struct opt_use *u)
{
    char msg[192] = "";
    if (u->spec->call(u->spec->dest, u->value, msg, sizeof msg) == 0)
        return 0;
    if (msg[0])
        return opt_bad(c, u, "%s", msg);
    return opt_bad(c, u, "bad value \"%s\"", u->value);
}

/* Stores the option's value (or its flag) in its destination. */
static int opt_store(const struct opt_ctx *c, const struct opt_use *u)
{
    const struct opt_spec *s = u->spec;
    int rc = 0;
    switch (s->kind) {
    case OPT_FLAG: *(bool *)s->dest = true; break;
    case OPT_SET: *(int *)s->dest = s->set_value; break;
    case OPT_STRING: *(const char **)s->dest = u->value; break;
    case OPT_UINT: rc = opt_take_uint(c, u); break;
    case OPT_INT: rc = opt_take_int(c, u); break;
    case OPT_SIZE:
    case OPT_DURATION: rc = opt_take_units(c, u); break;
    case OPT_DOUBLE: rc = opt_take_double(c, u); break;
    case OPT_ENUM: rc = opt_take_enum(c, u); break;
    case OPT_CALL: rc = opt_take_call(c, u); break;
    }
    if (rc == 0 && s->seen)
        *s->seen = true;
    if (rc == 0 && s->text)
        *s->text = u->value;
    return rc;
}

static bool opt_has_value(const struct opt_spec *s)
{
    return s->kind != OPT_FLAG && s->kind != OPT_SET;
}

/* The value of option u in argv[i + 1]; the slots used (2), or -1. A next
 * argument that is missing, empty or itself a long option is no value. */
static int opt_next_value(const struct opt_ctx *c, int i, struct opt_use *u)
{
    const char *next = i + 1 < c->argc ? c->argv[i + 1] : NULL;
    if (!next || !next[0] || !strncmp(next, "--", 2)) {
        opt_error(c->err, c->errlen, c->command, "%s needs a value", u->name);
        return -1;
    }
    u->value = next;
    return opt_store(c, u) ? -1 : 2;
}

/* argv[i] is "--name" or "--name=value": the slots used (1 or 2), or -1. */
static int opt_take_long(const struct opt_ctx *c, int i)
{
    const char *arg = c->argv[i] + 2, *eq = strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    struct opt_use u = { .spec = NULL };
    for (size_t k = 0; k < c->n && !u.spec; k++) {
        const char *name = c->table[k].long_name;
        if (name && strlen(name) == len && !strncmp(name, arg, len))
            u.spec = &c->table[k];
    }
    if (!u.spec) {
        opt_error(c->err, c->errlen, c->command, "unknown option --%.*s", (int)len, arg);
        return -1;
    }
    snprintf(u.name, sizeof u.name, "--%s", u.spec->long_name);
    if (!opt_has_value(u.spec) && eq) {
        opt_error(c->err, c->errlen, c->command, "%s takes no value", u.name);
        return -1;
    }
    if (opt_has_value(u.spec) && !eq)
        return opt_next_value(c, i, &u);
    if (eq && !eq[1]) {
        opt_error(c->err, c->errlen, c->command, "%s needs a value", u.name);
        return -1;
    }
    u.value = eq ? eq + 1 : NULL;
    return opt_store(c, &u) ? -1 : 1;
}

/* argv[i] is "-x", "-xVALUE" or "-x VALUE": the slots used, or -1. */
static int opt_take_short(const struct opt_ctx *c, int i)
{
    const char *arg = c->argv[i];
    struct opt_use u = { .spec = NULL };
    for (size_t k = 0; k < c->n && !u.spec; k++)
        if (c->table[k].short_name == arg[1])
            u.spec = &c->table[k];
    if (!u.spec || (!opt_has_value(u.spec) && arg[2])) {
        opt_error(c->err, c->errlen, c->command, "unknown option %s", arg);
        return -1;
    }
    snprintf(u.name, sizeof u.name, "-%c", arg[1]);
    if (opt_has_value(u.spec) && !arg[2])
        return opt_next_value(c, i, &u);
    u.value = arg[2] ? arg + 2 : NULL;
    return opt_store(c, &u) ? -1 : 1;
}

/* Moves argv[i..i+k) to argv[pos..pos+k), the positionals in argv[pos..i)
 * one step right each time, so both keep their order. */
static void opt_move_before(char **argv, int pos, int i, int k)
{
    for (int j = 0; j < k; j++) {
        char *moved = argv[i + j];
        memmove(&argv[pos + j + 1], &argv[pos + j], (size_t)(i - pos) * sizeof *argv);
        argv[pos + j] = moved;
    }
}

static bool opt_is_option(const char *arg)
{
    return arg[0] == '-' && arg[1] != '\0';
}

enum opt_result opt_parse(const char *command, const struct opt_spec *table, size_t n, int argc,
                          char **argv, int *first_positional, char *err, size_t errlen)
{
    const struct opt_ctx c = { command, table, n, argc, argv, err, errlen };
    int pos = 1, i = 1; /* positionals so far sit in argv[pos..i) */
    while (i < argc) {
        const char *arg = argv[i];
        bool end = !strcmp(arg, "--");
        int used;
        if (!opt_is_option(arg) && !first_positional)
            return opt_error(err, errlen, command, "unexpected argument '%s'", arg);
        if (!opt_is_option(arg)) {
            i++;
            continue;
        }
        if (!strcmp(arg, "-h") || !strcmp(arg, "--help"))
            return OPT_HELP;
        used = end ? 1 : arg[1] == '-' ? opt_take_long(&c, i) : opt_take_short(&c, i);
        if (used < 0)
            return OPT_ERROR;
        opt_move_before(argv, pos, i, used);
        pos += used;
        i += used;
        if (end)
            break;
    }
    if (pos < argc && !first_positional)
        return opt_error(err, errlen, command, "unexpected argument '%s'", argv[pos]);
    if (first_positional)
        *first_positional = pos;
    return OPT_OK;
}
