/* prom: Prometheus text format 0.0.4 writer.
 * Owns the byte layout of /metrics.
 * Must never do I/O, allocate, or touch global state (prom_format_double
 * relies on the "C" LC_NUMERIC, which slabtap never changes). */
#include "server/prom.h"

#include "core/escape.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const prom_error_text[PROM_ERR__COUNT] = {
#define PROM_ERR_TEXT(name, text) [name] = text,
    PROM_ERRORS(PROM_ERR_TEXT)
#undef PROM_ERR_TEXT
};

const char *prom_strerror(enum prom_err err)
{
    const char *text = "unknown prom error";

    if ((unsigned)err < PROM_ERR__COUNT)
        text = prom_error_text[err];
    return text;
}

/* \\ and \n always; \" only inside label values (HELP keeps quotes). */
static void prom_escape_out(struct esc_out *o, const char *src, int quote)
{
    const char *run = src;
    const char *p;

    for (p = src; *p != '\0'; p++) {
        const char *esc = NULL;

        if (*p == '\\')
            esc = "\\\\";
        else if (*p == '\n')
            esc = "\\n";
        else if (quote && *p == '"')
            esc = "\\\"";
        if (esc != NULL) {
            esc_out_put(o, run, (size_t)(p - run), 0);
            esc_out_put(o, esc, 2, 1);
            run = p + 1;
        }
    }
    esc_out_put(o, run, (size_t)(p - run), 0);
}

size_t prom_escape_help(char *dst, size_t cap, const char *src)
{
    struct esc_out o;

    esc_out_init_bounded(&o, dst, cap);
    prom_escape_out(&o, src, 0);
    return esc_out_finish(&o);
}

size_t prom_escape_label_value(char *dst, size_t cap, const char *src)
{
    struct esc_out o;

    esc_out_init_bounded(&o, dst, cap);
    prom_escape_out(&o, src, 1);
    return esc_out_finish(&o);
}

/* ---- names and values ---------------------------------------------------- */

static int prom_name_char(char c, int first, int colon_ok)
{
    int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    int digit = c >= '0' && c <= '9';

    return alpha || (colon_ok && c == ':') || (!first && digit);
}

static int prom_name_check(const char *name, int colon_ok)
{
    size_t i = 0;
    int ok = name != NULL && name[0] != '\0';

    for (; ok && name[i] != '\0'; i++)
        ok = i < PROM_NAME_MAX && prom_name_char(name[i], i == 0, colon_ok);
    return ok;
}

int prom_name_valid(const char *name)
{
    return prom_name_check(name, 1);
}

int prom_label_name_valid(const char *name)
{
    return prom_name_check(name, 0) && strncmp(name, "__", 2) != 0;
}

size_t prom_format_double(char *dst, size_t cap, double value)
{
    char tmp[PROM_VALUE_MAX];
    struct esc_out o;

    if (isnan(value)) {
        snprintf(tmp, sizeof tmp, "NaN");
    } else if (isinf(value)) {
        snprintf(tmp, sizeof tmp, "%s", value > 0 ? "+Inf" : "-Inf");
    } else {
        /* 17 significant digits always round-trip; fewer usually do and
         * read far better ("0.1", not "0.10000000000000001") */
        for (int prec = 1; prec <= 17; prec++) {
            snprintf(tmp, sizeof tmp, "%.*g", prec, value);
            if (strtod(tmp, NULL) == value)
                break;
        }
    }
    esc_out_init_bounded(&o, dst, cap);
    esc_out_put(&o, tmp, strlen(tmp), 1);
    return esc_out_finish(&o);
}

/* ---- sinks and the writer ------------------------------------------------ */

void prom_buf_init(struct prom_buf *b, char *data, size_t cap)
{
    b->data = data;
    b->cap = cap;
    b->len = 0;
    if (cap > 0)
        data[0] = '\0';
}

int prom_buf_write(void *ctx, const char *data, size_t len)
{
    struct prom_buf *b = ctx;
    int rc = -1;

    if (b->cap > 0 && len <= b->cap - 1 - b->len) {
        memcpy(b->data + b->len, data, len);
        b->len += len;
        b->data[b->len] = '\0';
        rc = 0;
    }
    return rc;
}

void prom_writer_init(struct prom_writer *w, prom_write_fn write, void *ctx)
{
    memset(w, 0, sizeof *w);
    w->write = write;
    w->ctx = ctx;
}

enum prom_err prom_writer_finish(struct prom_writer *w)
{
    return w->err;
}

static void prom_put(struct prom_writer *w, const char *s)
{
    size_t n = strlen(s);

    if (w->err == PROM_OK && n > 0 && w->write(w->ctx, s, n) != 0)
        w->err = PROM_ERR_WRITE;
}

static void prom_put_escaped(struct prom_writer *w, const char *s, int quote)
{
    struct esc_out o;

    if (w->err == PROM_OK) {
        esc_out_init_sink(&o, w->write, w->ctx);
        prom_escape_out(&o, s, quote);
        if (o.failed)
            w->err = PROM_ERR_WRITE;
    }
}

/* Families are remembered by hash: a fixed-size table, no allocation; a
 * 64-bit FNV-1a collision between a few hundred names is not a concern. */
static uint64_t prom_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;

    for (; *s != '\0'; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return h;
}

static enum prom_err prom_family_check(const struct prom_writer *w, const char *name,
                                       enum prom_type type)
{
    enum prom_err err = PROM_OK;
    uint64_t h;

    if (!prom_name_valid(name))
        err = PROM_ERR_NAME;
    else if (type != PROM_COUNTER && type != PROM_GAUGE)
        err = PROM_ERR_TYPE;
    else if (w->nseen == PROM_FAMILIES_MAX)
        err = PROM_ERR_TOO_MANY_FAMILIES;
    h = err == PROM_OK ? prom_hash(name) : 0;
    for (size_t i = 0; err == PROM_OK && i < w->nseen; i++)
        if (w->seen[i] == h)
            err = PROM_ERR_DUP_FAMILY;
    return err;
}

enum prom_err prom_declare(struct prom_writer *w, const char *name, enum prom_type type,
                           const char *help)
{
    if (w->err == PROM_OK)
        w->err = prom_family_check(w, name, type);
    if (w->err == PROM_OK) {
        w->seen[w->nseen++] = prom_hash(name);
        memcpy(w->family, name, strlen(name) + 1);
        prom_put(w, "# HELP ");
        prom_put(w, name);
        prom_put(w, " ");
        prom_put_escaped(w, help != NULL ? help : "", 0);
        prom_put(w, "\n# TYPE ");
        prom_put(w, name);
        prom_put(w, type == PROM_COUNTER ? " counter\n" : " gauge\n");
    }
    return w->err;
}

static enum prom_err prom_labels_check(const struct prom_label *labels, size_t n)
{
    enum prom_err err = PROM_OK;

    for (size_t i = 0; err == PROM_OK && i < n; i++) {
        if (!prom_label_name_valid(labels[i].name))
            err = PROM_ERR_LABEL_NAME;
        for (size_t j = 0; err == PROM_OK && j < i; j++)
            if (strcmp(labels[i].name, labels[j].name) == 0)
                err = PROM_ERR_LABEL_NAME; /* a repeated label is invalid too */
    }
    return err;
}

static enum prom_err prom_sample_text(struct prom_writer *w, const struct prom_label *labels,
                                      size_t nlabels, const char *value)
{
    if (w->err == PROM_OK && w->family[0] == '\0')
        w->err = PROM_ERR_NO_FAMILY;
    if (w->err == PROM_OK)
        w->err = prom_labels_check(labels, nlabels);
    prom_put(w, w->family);
    for (size_t i = 0; i < nlabels; i++) {
        prom_put(w, i == 0 ? "{" : ",");
        prom_put(w, labels[i].name);
        prom_put(w, "=\"");
        prom_put_escaped(w, labels[i].value != NULL ? labels[i].value : "", 1);
        prom_put(w, "\"");
    }
    prom_put(w, nlabels > 0 ? "} " : " ");
    prom_put(w, value);
    prom_put(w, "\n");
    return w->err;
}

enum prom_err prom_sample_u64(struct prom_writer *w, const struct prom_label *labels,
                              size_t nlabels, uint64_t value)
{
    char text[PROM_VALUE_MAX];

    snprintf(text, sizeof text, "%" PRIu64, value);
    return prom_sample_text(w, labels, nlabels, text);
}

enum prom_err prom_sample_i64(struct prom_writer *w, const struct prom_label *labels,
                              size_t nlabels, int64_t value)
{
    char text[PROM_VALUE_MAX];

    snprintf(text, sizeof text, "%" PRId64, value);
    return prom_sample_text(w, labels, nlabels, text);
}

enum prom_err prom_sample_double(struct prom_writer *w, const struct prom_label *labels,
                                 size_t nlabels, double value)
{
    char text[PROM_VALUE_MAX];

    prom_format_double(text, sizeof text, value);
    return prom_sample_text(w, labels, nlabels, text);
}
