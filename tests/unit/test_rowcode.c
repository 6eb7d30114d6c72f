/* test_rowcode: record/rowcode.h pinned byte for byte -- the packed op,
 * sizes and fe of writes that fit, and extra's JSON of those that do not,
 * in both text modes: as bytes (SQLite) and as valid UTF-8 without NUL
 * (PostgreSQL's jsonb), for quotes, backslashes, every kind of control byte,
 * valid multi-byte characters and each kind of invalid UTF-8 (a lone 0xff,
 * an overlong, a surrogate, a cut sequence). The encoding is what both
 * stores hold on disk: a change here is a change of the recorded format.
 * Also: a JSON longer than the buffer's max fails the row, and one buffer
 * reused row after row gives each row's JSON alone. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "core/buf.h"
#include "record/rowcode.h"

#define S(s) s, sizeof(s) - 1

/* a quote, a backslash, control bytes with and without short JSON escapes,
 * DEL, é, 😀, then 0xff, an overlong NUL, a surrogate, a cut 3-byte
 * sequence, a NUL and a last ASCII byte */
static const char odd[] = "a\"b\\c\n\t\x01\x1f\x7f"
                          "\xc3\xa9"
                          "\xf0\x9f\x98\x80"
                          "\xff"
                          "\xc0\x80"
                          "\xed\xa0\x80"
                          "\xe2\x82"
                          "\0z";

struct rc_case {
    const char *name;
    struct rowcode_in in;
    int64_t op, sizes, fe;
    const char *json[2]; /* by enum rowcode_text; NULL: no JSON */
};

/* a set that fits the packed columns: 10-byte key, 100-byte value, class
 * 5, STORED (answer id 2), 12.345 us */
static const struct rowcode_in set_write = { .cmd_id = 1,
                                             .cmd_has_flags = true,
                                             .cmd_has_exptime = true,
                                             .cmd = "set",
                                             .cmd_len = 3,
                                             .answer_id = 2,
                                             .answer = "STORED",
                                             .answer_len = 6,
                                             .key_len = { true, 10 },
                                             .value_len = { true, 100 },
                                             .flags = { true, 0 },
                                             .exptime = { true, 0 },
                                             .latency_ns = { true, 12345 },
                                             .class_id = { true, 5 } };

/* flags and exptime of that set: in fe (0 bytes when both are 0) */
static void test_fe(void)
{
    static const struct {
        int64_t flags, exptime, fe;
    } fes[] = {
        { 0, 0, 0 }, { 7, -1, 34359738367 }, { 0, 60, 60 }, { 4294967295, 0, -4294967296 }
    };
    struct buf b;
    buf_init(&b, BUF_UNBOUNDED);
    for (size_t i = 0; i < sizeof fes / sizeof fes[0]; i++) {
        struct rowcode_in in = set_write;
        in.flags.v = fes[i].flags;
        in.exptime.v = fes[i].exptime;
        struct rowcode_out o;
        CHECK_INT(rowcode_encode(&in, ROWCODE_TEXT_BYTES, &b, &o), 0);
        CHECK(o.op == 2114826 && o.sizes == 112967 && o.fe == fes[i].fe && !o.json,
              "flags %lld exptime %lld: op %lld sizes %lld fe %lld json %d",
              (long long)fes[i].flags, (long long)fes[i].exptime, (long long)o.op,
              (long long)o.sizes, (long long)o.fe, o.json);
    }
    buf_free(&b);
}

static const struct rc_case cases[] = {
    { "nothing fits",
      { .cmd_id = 0,
        .cmd = "ms",
        .cmd_len = 2,
        .ms_mode = "E",
        .ms_len = 1,
        .answer_id = 0,
        .answer = "HD",
        .answer_len = 2,
        .key_len = { true, 300 },
        .value_len = { true, -5 },
        .flags = { false, 0 },
        .exptime = { true, 60 },
        .latency_ns = { true, -3 },
        .class_id = { true, 99 } },
      0,
      0,
      0,
      { "{\"flags\":null,\"exptime\":60,\"cmd\":\"ms\",\"ms_mode\":\"E\",\"answer\":\"HD\","
        "\"key_len\":300,\"value_len\":-5,\"latency_ns\":-3,\"class_id\":99}",
        "{\"flags\":null,\"exptime\":60,\"cmd\":\"ms\",\"ms_mode\":\"E\",\"answer\":\"HD\","
        "\"key_len\":300,\"value_len\":-5,\"latency_ns\":-3,\"class_id\":99}" } },
    { "odd bytes",
      { .cmd_id = 0,
        .cmd = odd,
        .cmd_len = sizeof odd - 1,
        .ms_mode = NULL,
        .answer_id = 0,
        .answer = odd,
        .answer_len = sizeof odd - 1,
        .key_len = { false, 0 },
        .flags = { true, 5000000000 },
        .exptime = { true, 1 } },
      0,
      0,
      0,
      { "{\"flags\":5000000000,\"exptime\":1,"
        "\"cmd\":\"a\\\"b\\\\c\\u000a\\u0009\\u0001\\u001f\x7f\xc3\xa9\xf0\x9f\x98\x80"
        "\xff\xc0\x80\xed\xa0\x80\xe2\x82\\u0000z\","
        "\"ms_mode\":null,"
        "\"answer\":\"a\\\"b\\\\c\\u000a\\u0009\\u0001\\u001f\x7f\xc3\xa9\xf0\x9f\x98\x80"
        "\xff\xc0\x80\xed\xa0\x80\xe2\x82\\u0000z\","
        "\"key_len\":null}",
        "{\"flags\":5000000000,\"exptime\":1,"
        "\"cmd\":\"a\\\"b\\\\c\\u000a\\u0009\\u0001\\u001f\x7f\xc3\xa9\xf0\x9f\x98\x80"
        "\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffdz\","
        "\"ms_mode\":null,"
        "\"answer\":\"a\\\"b\\\\c\\u000a\\u0009\\u0001\\u001f\x7f\xc3\xa9\xf0\x9f\x98\x80"
        "\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffdz\","
        "\"key_len\":null}" } },
    { "sizes too large",
      { .cmd_id = 3,
        .cmd = "delete",
        .cmd_len = 6,
        .answer_id = 0,
        .answer = "",
        .answer_len = 0,
        .key_len = { true, 3 },
        .value_len = { true, INT64_C(1) << 40 },
        .latency_ns = { true, INT64_MAX } },
      49155,
      0,
      0,
      { "{\"answer\":\"\",\"value_len\":1099511627776,\"latency_ns\":9223372036854775807}",
        "{\"answer\":\"\",\"value_len\":1099511627776,\"latency_ns\":9223372036854775807}" } },
};

static void test_cases(void)
{
    /* one buffer per mode, reused row after row as the stores do */
    struct buf b[2];
    buf_init(&b[0], BUF_UNBOUNDED);
    buf_init(&b[1], BUF_UNBOUNDED);
    for (int mode = ROWCODE_TEXT_BYTES; mode <= ROWCODE_TEXT_UTF8; mode++) {
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            const struct rc_case *c = &cases[i];
            struct rowcode_out o;
            int rc = rowcode_encode(&c->in, (enum rowcode_text)mode, &b[mode], &o);
            CHECK(rc == 0, "%s (mode %d): rc %d", c->name, mode, rc);
            CHECK(o.op == c->op && o.sizes == c->sizes && o.fe == c->fe,
                  "%s (mode %d): op %lld sizes %lld fe %lld", c->name, mode, (long long)o.op,
                  (long long)o.sizes, (long long)o.fe);
            const char *want = c->json[mode];
            CHECK(o.json == (want != NULL), "%s (mode %d): json %d", c->name, mode, o.json);
            if (want && o.json)
                CHECK_MEM(b[mode].data, b[mode].len, want, strlen(want), "%s (mode %d)", c->name,
                          mode);
        }
    }
    buf_free(&b[0]);
    buf_free(&b[1]);
}

static void test_max(void)
{
    /* "nothing fits" needs 116 bytes of JSON */
    const struct rc_case *c = &cases[0];
    size_t need = strlen(c->json[0]);
    struct buf b;
    buf_init(&b, need);
    struct rowcode_out o;
    CHECK_INT(rowcode_encode(&c->in, ROWCODE_TEXT_BYTES, &b, &o), -1);
    buf_free(&b);
    buf_init(&b, need + 1); /* and its NUL */
    CHECK_INT(rowcode_encode(&c->in, ROWCODE_TEXT_BYTES, &b, &o), 0);
    CHECK_MEM(b.data, b.len, c->json[0], need, "at max");
    /* the failed row does not stick: the next one encodes */
    CHECK_INT(rowcode_encode(&cases[1].in, ROWCODE_TEXT_BYTES, &b, &o), -1);
    CHECK_INT(rowcode_encode(&c->in, ROWCODE_TEXT_BYTES, &b, &o), 0);
    CHECK_MEM(b.data, b.len, c->json[0], need, "after a failed row");
    buf_free(&b);
}

int main(void)
{
    test_fe();
    test_cases();
    test_max();
    return check_done("test_rowcode");
}
