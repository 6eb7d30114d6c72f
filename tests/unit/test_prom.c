/* test_prom: byte-exact tables for prom.c (Prometheus text format 0.0.4 and
 * JSON string escaping). Owns nothing else; must never pass silently: every
 * mismatch prints expected and actual bytes and the exit status is 1. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "server/prom.h"

#include "check.h"

#define TEST_OUT_MAX 4096

static void test_names(void)
{
    static const struct {
        const char *name;
        int metric, label;
    } cases[] = {
        { "a", 1, 1 },
        { "_", 1, 1 },
        { "abc_def", 1, 1 },
        { "A9", 1, 1 },
        { "slabtap:requests_total", 1, 0 },
        { ":x", 1, 0 },
        { "9a", 0, 0 },
        { "", 0, 0 },
        { "a-b", 0, 0 },
        { "a b", 0, 0 },
        { "a.b", 0, 0 },
        { "__name__", 1, 0 },
        { "_x", 1, 1 },
        { "caf\xc3\xa9", 0, 0 },
    };
    char longname[PROM_NAME_MAX + 2];

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(prom_name_valid(cases[i].name) == cases[i].metric &&
                  prom_label_name_valid(cases[i].name) == cases[i].label,
              "name \"%s\" metric=%d label=%d", cases[i].name, cases[i].metric, cases[i].label);
    memset(longname, 'a', sizeof longname);
    longname[PROM_NAME_MAX] = '\0';
    CHECK(prom_name_valid(longname), "name of PROM_NAME_MAX bytes is valid");
    longname[PROM_NAME_MAX] = 'a';
    longname[PROM_NAME_MAX + 1] = '\0';
    CHECK(!prom_name_valid(longname), "name of PROM_NAME_MAX+1 bytes is refused");
    CHECK(!prom_name_valid(NULL) && !prom_label_name_valid(NULL), "NULL name is refused");
}

static void test_escapes(void)
{
    static const struct {
        const char *in, *help, *label;
    } cases[] = {
        { "plain", "plain", "plain" },
        { "", "", "" },
        { "a\\b", "a\\\\b", "a\\\\b" },
        { "line1\nline2", "line1\\nline2", "line1\\nline2" },
        { "say \"hi\"", "say \"hi\"", "say \\\"hi\\\"" },
        { "\\\"\n", "\\\\\"\\n", "\\\\\\\"\\n" },
        { "tab\there", "tab\there", "tab\there" },
        { "caf\xc3\xa9", "caf\xc3\xa9", "caf\xc3\xa9" },
    };
    char out[TEST_OUT_MAX];

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = prom_escape_help(out, sizeof out, cases[i].in);
        CHECK_MEM(out, n, cases[i].help, strlen(cases[i].help), "prom_escape_help, case %zu", i);
        n = prom_escape_label_value(out, sizeof out, cases[i].in);
        CHECK_MEM(out, n, cases[i].label, strlen(cases[i].label),
                  "prom_escape_label_value, case %zu", i);
    }
    /* truncation: snprintf return, NUL, and never half an escape */
    CHECK(prom_escape_label_value(out, 3, "a\"b") == 4 && strcmp(out, "a") == 0,
          "escape needs 4, cap 3 keeps whole escapes only");
    CHECK(prom_escape_help(out, 4, "abcdef") == 6 && strcmp(out, "abc") == 0,
          "escape cap 4 truncates plain text");
    CHECK(prom_escape_help(NULL, 0, "a\nb") == 4, "escape cap 0 measures only");
}

static void test_doubles(void)
{
    static const struct {
        double v;
        const char *want;
    } cases[] = {
        { 0.0, "0" },
        { 1.0, "1" },
        { -2.5, "-2.5" },
        { 0.1, "0.1" },
        { 1e21, "1e+21" },
        { 123456789.0, "123456789" },
        { 0.30000000000000004, "0.30000000000000004" },
        { 1.0 / 3.0, "0.3333333333333333" },
        { 2.2250738585072014e-308, "2.2250738585072014e-308" },
    };
    char out[PROM_VALUE_MAX];

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = prom_format_double(out, sizeof out, cases[i].v);
        CHECK_MEM(out, n, cases[i].want, strlen(cases[i].want), "prom_format_double, case %zu", i);
    }
    CHECK_MEM(out, prom_format_double(out, sizeof out, NAN), "NaN", 3, "NaN");
    CHECK_MEM(out, prom_format_double(out, sizeof out, INFINITY), "+Inf", 4, "+Inf");
    CHECK_MEM(out, prom_format_double(out, sizeof out, -INFINITY), "-Inf", 4, "-Inf");
}

/* One exposition with every feature, compared byte for byte. */
static void test_exposition(void)
{
    static const char want[] =
        "# HELP slabtap_requests_total Requests \\\\ parsed\\nfrom \"clients\"\n"
        "# TYPE slabtap_requests_total counter\n"
        "slabtap_requests_total{cmd=\"set\"} 3\n"
        "slabtap_requests_total{cmd=\"get\",note=\"a\\\\b\\\"c\\nd\"} 18446744073709551615\n"
        "# HELP slabtap_queue_depth Rows waiting\n"
        "# TYPE slabtap_queue_depth gauge\n"
        "slabtap_queue_depth 0\n"
        "slabtap_queue_depth{class=\"-1\"} -7\n"
        "# HELP ratio \n"
        "# TYPE ratio gauge\n"
        "ratio{k=\"\"} 0.25\n"
        "ratio NaN\n";
    const struct prom_label set[] = { { "cmd", "set" } };
    const struct prom_label get[] = { { "cmd", "get" }, { "note", "a\\b\"c\nd" } };
    const struct prom_label cls[] = { { "class", "-1" } };
    const struct prom_label empty[] = { { "k", NULL } };
    char out[TEST_OUT_MAX];
    struct prom_buf buf;
    struct prom_writer w;

    prom_buf_init(&buf, out, sizeof out);
    prom_writer_init(&w, prom_buf_write, &buf);
    prom_declare(&w, "slabtap_requests_total", PROM_COUNTER,
                 "Requests \\ parsed\nfrom \"clients\"");
    prom_sample_u64(&w, set, 1, 3);
    prom_sample_u64(&w, get, 2, UINT64_MAX);
    prom_declare(&w, "slabtap_queue_depth", PROM_GAUGE, "Rows waiting");
    prom_sample_u64(&w, NULL, 0, 0);
    prom_sample_i64(&w, cls, 1, -7);
    prom_declare(&w, "ratio", PROM_GAUGE, NULL);
    prom_sample_double(&w, empty, 1, 0.25);
    prom_sample_double(&w, NULL, 0, NAN);
    CHECK(prom_writer_finish(&w) == PROM_OK, "exposition has no error");
    CHECK_MEM(buf.data, buf.len, want, sizeof want - 1, "exposition");
}

/* Each misuse is refused before a byte of it is written, and sticks. */
static void test_writer_errors(void)
{
    static const struct prom_label bad[] = { { "__reserved", "x" } };
    static const struct prom_label dup[] = { { "a", "1" }, { "a", "2" } };
    char out[TEST_OUT_MAX];
    struct prom_buf buf;
    struct prom_writer w;

    prom_buf_init(&buf, out, sizeof out);
    prom_writer_init(&w, prom_buf_write, &buf);
    CHECK(prom_sample_u64(&w, NULL, 0, 1) == PROM_ERR_NO_FAMILY, "sample before family");
    CHECK(buf.len == 0 && prom_writer_finish(&w) == PROM_ERR_NO_FAMILY, "sticky: nothing written");

    struct {
        const char *what;
        enum prom_err want;
    } steps[] = {
        { "bad metric name", PROM_ERR_NAME },        { "bad type", PROM_ERR_TYPE },
        { "duplicate family", PROM_ERR_DUP_FAMILY }, { "reserved label", PROM_ERR_LABEL_NAME },
        { "repeated label", PROM_ERR_LABEL_NAME },
    };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        enum prom_err got = PROM_OK;
        prom_buf_init(&buf, out, sizeof out);
        prom_writer_init(&w, prom_buf_write, &buf);
        prom_declare(&w, "fam", PROM_GAUGE, "h");
        size_t before = buf.len;
        if (i == 0)
            got = prom_declare(&w, "bad-name", PROM_GAUGE, "h");
        else if (i == 1)
            got = prom_declare(&w, "other", (enum prom_type)7, "h");
        else if (i == 2)
            got = prom_declare(&w, "fam", PROM_COUNTER, "h");
        else
            got = prom_sample_u64(&w, i == 3 ? bad : dup, i == 3 ? 1 : 2, 1);
        CHECK(got == steps[i].want && buf.len == before, "%s", steps[i].what);
        CHECK(prom_sample_u64(&w, NULL, 0, 1) == steps[i].want && buf.len == before, "%s",
              prom_strerror(got));
    }

    /* a sink that runs out of room */
    char tiny[16];
    prom_buf_init(&buf, tiny, sizeof tiny);
    prom_writer_init(&w, prom_buf_write, &buf);
    CHECK(prom_declare(&w, "a_rather_long_name", PROM_GAUGE, "help") == PROM_ERR_WRITE,
          "full sink reports PROM_ERR_WRITE");
    CHECK(strcmp(prom_strerror(PROM_ERR_WRITE), "the sink refused the bytes") == 0 &&
              strcmp(prom_strerror(PROM_ERR__COUNT), "unknown prom error") == 0,
          "prom_strerror has text");
}

static void test_families_cap(void)
{
    static char out[PROM_FAMILIES_MAX * 64 + 64];
    struct prom_buf buf;
    struct prom_writer w;
    char name[32];
    enum prom_err err = PROM_OK;

    prom_buf_init(&buf, out, sizeof out);
    prom_writer_init(&w, prom_buf_write, &buf);
    for (int i = 0; i < PROM_FAMILIES_MAX && err == PROM_OK; i++) {
        snprintf(name, sizeof name, "f%d", i);
        err = prom_declare(&w, name, PROM_GAUGE, "");
    }
    CHECK(err == PROM_OK, "PROM_FAMILIES_MAX families fit");
    CHECK(prom_declare(&w, "extra", PROM_GAUGE, "") == PROM_ERR_TOO_MANY_FAMILIES,
          "one more is refused");
}

static void test_json(void)
{
    static const struct {
        const char *in;
        size_t len;
        const char *want;
    } cases[] = {
        { "plain key", 9, "plain key" },
        { "", 0, "" },
        { "q\"b\\s/", 6, "q\\\"b\\\\s/" },
        { "\b\f\n\r\t", 5, "\\b\\f\\n\\r\\t" },
        { "\x01\x1f\x7f", 3, "\\u0001\\u001f\x7f" },
        { "nul\0x", 5, "nul\\u0000x" },
        { "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14,
          "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80" },
        { "\xff", 1, "\\ufffd" },
        { "\xc3", 1, "\\ufffd" },            /* truncated sequence */
        { "\xc3(", 2, "\\ufffd(" },          /* bad continuation */
        { "\xc0\xaf", 2, "\\ufffd\\ufffd" }, /* overlong '/' */
        { "\xe0\x80\xaf", 3, "\\ufffd\\ufffd\\ufffd" },
        { "\xed\xa0\x80", 3, "\\ufffd\\ufffd\\ufffd" },            /* UTF-16 surrogate */
        { "\xf4\x90\x80\x80", 4, "\\ufffd\\ufffd\\ufffd\\ufffd" }, /* > U+10FFFF */
        { "\xf4\x8f\xbf\xbf", 4, "\xf4\x8f\xbf\xbf" },             /* U+10FFFF */
        { "\xef\xbf\xbd", 3, "\xef\xbf\xbd" },
    };
    char out[TEST_OUT_MAX];
    char streamed[TEST_OUT_MAX];
    struct prom_buf buf;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = json_escape(out, sizeof out, cases[i].in, cases[i].len);
        CHECK_MEM(out, n, cases[i].want, strlen(cases[i].want), "json_escape, case %zu", i);
        prom_buf_init(&buf, streamed, sizeof streamed);
        CHECK(json_escape_write(prom_buf_write, &buf, cases[i].in, cases[i].len, JSON_ESC_TEXT) ==
                  0,
              "json_escape_write ok, case %zu", i);
        CHECK_MEM(buf.data, buf.len, cases[i].want, strlen(cases[i].want),
                  "json_escape_write, case %zu", i);
    }
    CHECK(json_escape(out, 6, "abcd\"", 5) == 6 && strcmp(out, "abcd") == 0,
          "json truncation keeps whole escapes");
    CHECK(json_escape(out, 3, "a\xe2\x82\xac", 4) == 4 && strcmp(out, "a") == 0,
          "json truncation keeps whole characters");
    prom_buf_init(&buf, streamed, 4);
    CHECK(json_escape_write(prom_buf_write, &buf, "abcdef", 6, JSON_ESC_TEXT) != 0,
          "json_escape_write reports a full sink");
}

int main(void)
{
    test_names();
    test_escapes();
    test_doubles();
    test_exposition();
    test_writer_errors();
    test_families_cap();
    test_json();
    return check_done("test_prom");
}
