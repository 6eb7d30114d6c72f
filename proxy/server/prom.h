/* prom: the Prometheus text exposition format (version 0.0.4), as pure
 * helpers.
 *
 * Owns: metric and label name validation, HELP and label-value escaping,
 * sample value formatting, and the ordering rule "one HELP and one TYPE per
 * metric family, written before any of its samples".
 * Must never: do I/O, allocate, keep global state, or emit a byte that would
 * make the exposition unparsable (a bad name, an unescaped value, a sample
 * without its family header). Output goes through a caller-supplied sink so
 * the same code fills a fixed buffer or an HTTP body builder.
 *
 * Errors are sticky in a prom_writer: after the first one nothing more is
 * written, and prom_writer_finish reports it, so a caller can emit a whole
 * exposition and check once.
 */
#ifndef SLABTAP_PROM_H
#define SLABTAP_PROM_H

#include <stddef.h>
#include <stdint.h>

#include "core/escape.h"

/* The Content-Type a scraper expects for this format. */
#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Prometheus itself sets no limit; ours keeps names in a fixed buffer and
 * rejects runaway names generated from data. */
#define PROM_NAME_MAX 200
/* Families remembered to refuse a second HELP/TYPE for the same name; the
 * proxy exposes a few dozen. */
#define PROM_FAMILIES_MAX 256
/* "-1.2345678901234567e-308" is 24 chars; NUL included with headroom. */
#define PROM_VALUE_MAX 32

enum prom_type { PROM_COUNTER, PROM_GAUGE };

/* X(name, text): one list, so the enum and its text table cannot drift. */
#define PROM_ERRORS(X) \
    X(PROM_OK, "no error") \
    X(PROM_ERR_NAME, "invalid metric name") \
    X(PROM_ERR_LABEL_NAME, "invalid label name") \
    X(PROM_ERR_TYPE, "unknown metric type") \
    X(PROM_ERR_NO_FAMILY, "sample written before any HELP/TYPE") \
    X(PROM_ERR_DUP_FAMILY, "metric family declared twice") \
    X(PROM_ERR_TOO_MANY_FAMILIES, "more than PROM_FAMILIES_MAX families") \
    X(PROM_ERR_WRITE, "the sink refused the bytes")

enum prom_err {
#define PROM_ERR_ENUM(name, text) name,
    PROM_ERRORS(PROM_ERR_ENUM)
#undef PROM_ERR_ENUM
        PROM_ERR__COUNT
};

const char *prom_strerror(enum prom_err err);

/* A sink: accept all len bytes and return 0, or accept none and return
 * non-zero (the same sink type core/escape.h streams JSON into). */
typedef esc_write_fn prom_write_fn;

/* A fixed-buffer sink: data[0..len) is the output, always NUL-terminated
 * when cap > 0; a write that does not fit is refused whole. */
struct prom_buf {
    char *data;
    size_t cap;
    size_t len;
};

void prom_buf_init(struct prom_buf *b, char *data, size_t cap);
int prom_buf_write(void *ctx, const char *data, size_t len);

struct prom_label {
    const char *name;
    const char *value; /* any bytes but NUL; escaped on output */
};

struct prom_writer {
    prom_write_fn write;
    void *ctx;
    enum prom_err err;                /* first error; sticky */
    char family[PROM_NAME_MAX + 1];   /* current family; "" before the first */
    uint64_t seen[PROM_FAMILIES_MAX]; /* FNV-1a of declared family names */
    size_t nseen;
};

void prom_writer_init(struct prom_writer *w, prom_write_fn write, void *ctx);
/* Returns the first error of the whole exposition (PROM_OK if none). */
enum prom_err prom_writer_finish(struct prom_writer *w);

/* Writes "# HELP name help\n# TYPE name type\n" and makes name the family
 * of the samples that follow. */
enum prom_err prom_declare(struct prom_writer *w, const char *name, enum prom_type type,
                           const char *help);

/* Writes one sample of the current family: name{l="v",...} value\n.
 * labels may be NULL when nlabels is 0. */
enum prom_err prom_sample_u64(struct prom_writer *w, const struct prom_label *labels,
                              size_t nlabels, uint64_t value);
enum prom_err prom_sample_i64(struct prom_writer *w, const struct prom_label *labels,
                              size_t nlabels, int64_t value);
enum prom_err prom_sample_double(struct prom_writer *w, const struct prom_label *labels,
                                 size_t nlabels, double value);

/* 1 if name matches [a-zA-Z_:][a-zA-Z0-9_:]* and is at most PROM_NAME_MAX
 * bytes, else 0. */
int prom_name_valid(const char *name);
/* 1 if name matches [a-zA-Z_][a-zA-Z0-9_]*, does not start with the
 * reserved "__", and is at most PROM_NAME_MAX bytes, else 0. */
int prom_label_name_valid(const char *name);

/* Bounded escapers with snprintf's contract: they return the length the
 * full output needs (excluding NUL), write at most cap-1 bytes plus a NUL
 * when cap > 0, and never cut an escape sequence in half, so
 * "return >= cap" means truncated. */
size_t prom_escape_help(char *dst, size_t cap, const char *src);        /* \\ \n */
size_t prom_escape_label_value(char *dst, size_t cap, const char *src); /* \\ \" \n */
/* Shortest text that reads back as the same double; NaN, +Inf, -Inf as
 * Prometheus spells them. Same contract as above (PROM_VALUE_MAX fits any). */
size_t prom_format_double(char *dst, size_t cap, double value);

#endif
