/* test_prom: byte-exact tables for prom.c (Prometheus text format 0.0.4 and
 * JSON string escaping). Owns nothing else; must never pass silently: every
 * mismatch prints expected and actual bytes and the exit status is 1. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "server/prom.h"

#define TEST_OUT_MAX 4096

static int failures;

/* Prints bytes with C escapes so a mismatch in \\ or \n is visible. */
static void test_show(const char *label, const char *s, size_t n)
{
    fprintf(stderr, "    %s (%zu): \"", label, n);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\\' || c == '"')
            fprintf(stderr, "\\%c", c);
        else if (c >= 0x20 && c < 0x7f)
            fputc(c, stderr);
        else
            fprintf(stderr, "\\x%02x", c);
    }
    fprintf(stderr, "\"\n");
}

static void test_bytes(const char *what, const char *want, size_t want_len,
                       const char *got, size_t got_len)
{
    if (want_len != got_len || memcmp(want, got, want_len) != 0) {
        failures++;
        fprintf(stderr, "FAIL %s\n", what);
        test_show("want", want, want_len);
        test_show("got ", got, got_len);
    }
}

static void test_true(const char *what, int cond)
{
    if (!cond) {
        failures++;
        fprintf(stderr, "FAIL %s\n", what);
    }
}

static void test_names(void)
{
    static const struct { const char *name; int metric, label; } cases[] = {
        {"a", 1, 1}, {"_", 1, 1}, {"abc_def", 1, 1}, {"A9", 1, 1},
        {"slabtap:requests_total", 1, 0}, {":x", 1, 0}, {"9a", 0, 0},
        {"", 0, 0}, {"a-b", 0, 0}, {"a b", 0, 0}, {"a.b", 0, 0},
        {"__name__", 1, 0}, {"_x", 1, 1}, {"caf\xc3\xa9", 0, 0},
    };
    char longname[PROM_NAME_MAX + 2];

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char what[128];
        snprintf(what, sizeof what, "name \"%s\" metric=%d label=%d", cases[i].name,
                 cases[i].metric, cases[i].label);
        test_true(what, prom_name_valid(cases[i].name) == cases[i].metric &&
                            prom_label_name_valid(cases[i].name) == cases[i].label);
    }
    memset(longname, 'a', sizeof longname);
    longname[PROM_NAME_MAX] = '\0';
    test_true("name of PROM_NAME_MAX bytes is valid", prom_name_valid(longname));
    longname[PROM_NAME_MAX] = 'a';
    longname[PROM_NAME_MAX + 1] = '\0';
    test_true("name of PROM_NAME_MAX+1 bytes is refused", !prom_name_valid(longname));
    test_true("NULL name is refused", !prom_name_valid(NULL) && !prom_label_name_valid(NULL));
}

static void test_escapes(void)
{
    static const struct { const char *in, *help, *label; } cases[] = {
        {"plain", "plain", "plain"},
        {"", "", ""},
        {"a\\b", "a\\\\b", "a\\\\b"},
        {"line1\nline2", "line1\\nline2", "line1\\nline2"},
        {"say \"hi\"", "say \"hi\"", "say \\\"hi\\\""},
        {"\\\"\n", "\\\\\"\\n", "\\\\\\\"\\n"},
        {"tab\there", "tab\there", "tab\there"},
        {"caf\xc3\xa9", "caf\xc3\xa9", "caf\xc3\xa9"},
    };
    char out[TEST_OUT_MAX];

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = prom_escape_help(out, sizeof out, cases[i].in);
        test_bytes("prom_escape_help", cases[i].help, strlen(cases[i].help), out, n);
        n = prom_escape_label_value(out, sizeof out, cases[i].in);
        test_bytes("prom_escape_label_value", cases[i].label, strlen(cases[i].label), out, n);
    }
    /* truncation: snprintf return, NUL, and never half an escape */
    test_true("escape needs 4, cap 3 keeps whole escapes only",
              prom_escape_label_value(out, 3, "a\"b") == 4 && strcmp(out, "a") == 0);
    test_true("escape cap 4 truncates plain text", prom_escape_help(out, 4, "abcdef") == 6 &&
                                                      strcmp(out, "abc") == 0);
    test_true("escape cap 0 measures only", prom_escape_help(NULL, 0, "a\nb") == 4);
}

static void test_doubles(void)
{
    static const struct { double v; const char *want; } cases[] = {
        {0.0, "0"}, {1.0, "1"}, {-2.5, "-2.5"}, {0.1, "0.1"}, {1e21, "1e+21"},
        {123456789.0, "123456789"}, {0.30000000000000004, "0.30000000000000004"},
        {1.0 / 3.0, "0.3333333333333333"}, {2.2250738585072014e-308, "2.2250738585072014e-308"},
    };
    char out[PROM_VALUE_MAX];

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = prom_format_double(out, sizeof out, cases[i].v);
        test_bytes("prom_format_double", cases[i].want, strlen(cases[i].want), out, n);
    }
    test_bytes("NaN", "NaN", 3, out, prom_format_double(out, sizeof out, NAN));
    test_bytes("+Inf", "+Inf", 4, out, prom_format_double(out, sizeof out, INFINITY));
    test_bytes("-Inf", "-Inf", 4, out, prom_format_double(out, sizeof out, -INFINITY));
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
    const struct prom_label set[] = {{"cmd", "set"}};
    const struct prom_label get[] = {{"cmd", "get"}, {"note", "a\\b\"c\nd"}};
    const struct prom_label cls[] = {{"class", "-1"}};
    const struct prom_label empty[] = {{"k", NULL}};
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
    test_true("exposition has no error", prom_writer_finish(&w) == PROM_OK);
    test_bytes("exposition", want, sizeof want - 1, buf.data, buf.len);
}

/* Each misuse is refused before a byte of it is written, and sticks. */
static void test_writer_errors(void)
{
    static const struct prom_label bad[] = {{"__reserved", "x"}};
    static const struct prom_label dup[] = {{"a", "1"}, {"a", "2"}};
    char out[TEST_OUT_MAX];
    struct prom_buf buf;
    struct prom_writer w;

    prom_buf_init(&buf, out, sizeof out);
    prom_writer_init(&w, prom_buf_write, &buf);
    test_true("sample before family", prom_sample_u64(&w, NULL, 0, 1) == PROM_ERR_NO_FAMILY);
    test_true("sticky: nothing written", buf.len == 0 &&
                                             prom_writer_finish(&w) == PROM_ERR_NO_FAMILY);

    struct { const char *what; enum prom_err want; } steps[] = {
        {"bad metric name", PROM_ERR_NAME}, {"bad type", PROM_ERR_TYPE},
        {"duplicate family", PROM_ERR_DUP_FAMILY}, {"reserved label", PROM_ERR_LABEL_NAME},
        {"repeated label", PROM_ERR_LABEL_NAME},
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
        test_true(steps[i].what, got == steps[i].want && buf.len == before);
        test_true(prom_strerror(got), prom_sample_u64(&w, NULL, 0, 1) == steps[i].want &&
                                          buf.len == before);
    }

    /* a sink that runs out of room */
    char tiny[16];
    prom_buf_init(&buf, tiny, sizeof tiny);
    prom_writer_init(&w, prom_buf_write, &buf);
    test_true("full sink reports PROM_ERR_WRITE",
              prom_declare(&w, "a_rather_long_name", PROM_GAUGE, "help") == PROM_ERR_WRITE);
    test_true("prom_strerror has text", strcmp(prom_strerror(PROM_ERR_WRITE),
                                               "the sink refused the bytes") == 0 &&
                                            strcmp(prom_strerror(PROM_ERR__COUNT),
                                                   "unknown prom error") == 0);
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
    test_true("PROM_FAMILIES_MAX families fit", err == PROM_OK);
    test_true("one more is refused",
              prom_declare(&w, "extra", PROM_GAUGE, "") == PROM_ERR_TOO_MANY_FAMILIES);
}

static void test_json(void)
{
    static const struct { const char *in; size_t len; const char *want; } cases[] = {
        {"plain key", 9, "plain key"},
        {"", 0, ""},
        {"q\"b\\s/", 6, "q\\\"b\\\\s/"},
        {"\b\f\n\r\t", 5, "\\b\\f\\n\\r\\t"},
        {"\x01\x1f\x7f", 3, "\\u0001\\u001f\x7f"},
        {"nul\0x", 5, "nul\\u0000x"},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"},
        {"\xff", 1, "\\ufffd"},
        {"\xc3", 1, "\\ufffd"},                    /* truncated sequence */
        {"\xc3(", 2, "\\ufffd("},                  /* bad continuation */
        {"\xc0\xaf", 2, "\\ufffd\\ufffd"},         /* overlong '/' */
        {"\xe0\x80\xaf", 3, "\\ufffd\\ufffd\\ufffd"},
        {"\xed\xa0\x80", 3, "\\ufffd\\ufffd\\ufffd"}, /* UTF-16 surrogate */
        {"\xf4\x90\x80\x80", 4, "\\ufffd\\ufffd\\ufffd\\ufffd"}, /* > U+10FFFF */
        {"\xf4\x8f\xbf\xbf", 4, "\xf4\x8f\xbf\xbf"},             /* U+10FFFF */
        {"\xef\xbf\xbd", 3, "\xef\xbf\xbd"},
    };
    char out[TEST_OUT_MAX];
    char streamed[TEST_OUT_MAX];
    struct prom_buf buf;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = json_escape(out, sizeof out, cases[i].in, cases[i].len);
        test_bytes("json_escape", cases[i].want, strlen(cases[i].want), out, n);
        prom_buf_init(&buf, streamed, sizeof streamed);
        test_true("json_escape_write ok",
                  json_escape_write(prom_buf_write, &buf, cases[i].in, cases[i].len) == 0);
        test_bytes("json_escape_write", cases[i].want, strlen(cases[i].want), buf.data, buf.len);
    }
    test_true("json truncation keeps whole escapes",
              json_escape(out, 6, "abcd\"", 5) == 6 && strcmp(out, "abcd") == 0);
    test_true("json truncation keeps whole characters",
              json_escape(out, 3, "a\xe2\x82\xac", 4) == 4 && strcmp(out, "a") == 0);
    prom_buf_init(&buf, streamed, 4);
    test_true("json_escape_write reports a full sink",
              json_escape_write(prom_buf_write, &buf, "abcdef", 6) != 0);
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
    if (failures > 0)
        fprintf(stderr, "test_prom: %d failure(s)\n", failures);
    else
        printf("test_prom: all passed\n");
    return failures > 0;
}
