/* test_buf: core/buf.h -- appends as a table (bytes in, text and length
 * out), growth across many appends (the bytes survive every move, the
 * block doubles), the max (an append that would pass it appends nothing,
 * fails the buffer, and every later append is refused), printf past the
 * first block, take/reset/free, and buf_grow for arrays (doubling, reuse,
 * overflow refused with the array untouched). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/buf.h"

struct append_case {
    size_t max;
    const char *parts[4]; /* appended in order, NULL ends */
    const char *want;     /* NULL: failed */
};

static const struct append_case appends[] = {
    { BUF_UNBOUNDED, { "", NULL }, "" },
    { BUF_UNBOUNDED, { "a", "bc", "", "def" }, "abcdef" },
    { 7, { "abc", "def", NULL }, "abcdef" },   /* exactly max with the NUL */
    { 6, { "abc", "def", NULL }, NULL },       /* one byte over */
    { 6, { "abc", "defg", "h", NULL }, NULL }, /* failed stays failed */
    { 1, { "", NULL }, "" },                   /* only the NUL fits */
    { 1, { "x", NULL }, NULL },
    { 4, { "abcd", "", NULL }, NULL },
};

static void test_append_table(void)
{
    for (size_t i = 0; i < sizeof appends / sizeof appends[0]; i++) {
        const struct append_case *c = &appends[i];
        struct buf b;
        buf_init(&b, c->max);
        for (size_t k = 0; k < 4 && c->parts[k]; k++)
            buf_puts(&b, c->parts[k]);
        CHECK(b.failed == !c->want, "case %zu: failed %d", i, b.failed);
        if (c->want) {
            CHECK(b.len == strlen(c->want), "case %zu: len %zu", i, b.len);
            CHECK(b.data && !strcmp(b.data, c->want), "case %zu: \"%s\"", i,
                  b.data ? b.data : "(null)");
            CHECK(b.cap <= c->max, "case %zu: cap %zu past max %zu", i, b.cap, c->max);
        }
        char *t = buf_take(&b);
        if (c->want)
            CHECK_STR(t, c->want);
        else
            CHECK(!t, "case %zu: a failed buffer gave text", i);
        CHECK(!b.data && !b.len && !b.failed && b.max == c->max, "case %zu: not empty after take",
              i);
        free(t);
    }
}

static void test_growth(void)
{
    struct buf b;
    buf_init(&b, BUF_UNBOUNDED);
    size_t reallocs = 0, cap = 0, refused = 0;
    for (unsigned i = 0; i < 100000; i++) {
        char c = (char)('a' + i % 26);
        refused += buf_append(&b, &c, 1) != 0;
        if (b.cap != cap) {
            CHECK(cap == 0 || b.cap == 2 * cap, "cap %zu after %zu", b.cap, cap);
            cap = b.cap;
            reallocs++;
        }
    }
    CHECK_INT(refused, 0);
    CHECK_INT(b.len, 100000);
    CHECK(reallocs <= 10, "%zu blocks for 100000 bytes", reallocs);
    size_t bad = 0;
    for (unsigned i = 0; i < 100000; i++)
        bad += b.data[i] != (char)('a' + i % 26);
    CHECK_INT(bad, 0);
    CHECK_INT(b.data[b.len], '\0');
    /* reset keeps the block: the same bytes again allocate nothing */
    char *block = b.data;
    buf_reset(&b);
    CHECK_INT(b.len, 0);
    CHECK_STR(b.data, "");
    for (unsigned i = 0; i < 100000; i++)
        buf_append(&b, "z", 1);
    CHECK(b.data == block && b.cap == cap, "reset buffer moved (cap %zu, was %zu)", b.cap, cap);
    buf_free(&b);
    CHECK(!b.data && !b.len && !b.cap && b.max == BUF_UNBOUNDED, "buf_free left %zu", b.cap);
}

static void test_max(void)
{
    /* the block never exceeds max, however the doubling falls */
    struct buf b;
    buf_init(&b, 1000);
    char part[100];
    memset(part, 'q', sizeof part);
    for (int i = 0; i < 9; i++)
        CHECK_INT(buf_append(&b, part, sizeof part), 0);
    CHECK_INT(b.len, 900);
    CHECK(b.cap <= 1000, "cap %zu", b.cap);
    CHECK_INT(buf_append(&b, part, 99), 0); /* 999 + NUL */
    CHECK_INT(buf_append(&b, "x", 1), -1);
    CHECK_TRUE(b.failed);
    CHECK_INT(b.len, 999);
    buf_printf(&b, "%d", 1);
    CHECK_INT(b.len, 999);
    CHECK_INT(buf_reserve(&b, 0), -1);
    /* reset clears failed: the buffer takes bytes again */
    buf_reset(&b);
    CHECK_INT(buf_append(&b, "ok", 2), 0);
    CHECK_STR(b.data, "ok");
    buf_free(&b);
    /* printf past max: nothing appended */
    buf_init(&b, 16);
    buf_puts(&b, "ab");
    buf_printf(&b, "%s", "0123456789abcdef");
    CHECK_TRUE(b.failed);
    CHECK_STR(b.data, "ab");
    CHECK_INT(b.len, 2);
    CHECK(!buf_take(&b), "a failed buffer gave text");
}

static void test_printf(void)
{
    struct buf b;
    buf_init(&b, BUF_UNBOUNDED);
    buf_printf(&b, "%d-%s", 42, "x");
    CHECK_STR(b.data, "42-x");
    /* longer than the first block: written in a second pass */
    char big[3001];
    memset(big, 'w', 3000);
    big[3000] = '\0';
    buf_printf(&b, "[%s]%u", big, 7u);
    CHECK_INT(b.len, 4 + 3002 + 1);
    CHECK(b.data[4] == '[' && b.data[3005] == ']' && b.data[3006] == '7' && !b.data[3007],
          "printf bytes wrong");
    CHECK_INT(strlen(b.data), b.len);
    char *t = buf_take(&b);
    CHECK(t && strlen(t) == 3007, "take lost bytes");
    free(t);
    /* empty: take gives "", not NULL */
    t = buf_take(&b);
    CHECK_STR(t, "");
    free(t);
}

struct pair {
    uint64_t a, b;
};

static void test_grow(void)
{
    struct pair *v = NULL;
    size_t cap = 0, n = 0, moves = 0;
    for (uint64_t i = 0; i < 5000; i++) {
        size_t before = cap;
        CHECK_TRUE(BUF_GROW(v, cap, n + 1));
        moves += cap != before;
        v[n++] = (struct pair){ i, ~i };
    }
    CHECK(cap >= 5000 && cap < 10000, "cap %zu", cap);
    CHECK(moves <= 10, "%zu moves for 5000 elements", moves);
    size_t bad = 0;
    for (uint64_t i = 0; i < 5000; i++)
        bad += v[i].a != i || v[i].b != ~i;
    CHECK_INT(bad, 0);
    /* room already: the same block, cap unchanged */
    struct pair *same = v;
    size_t cap0 = cap;
    CHECK_TRUE(BUF_GROW(v, cap, 10));
    CHECK(v == same && cap == cap0, "grow with room moved the array");
    /* overflow refused, the array untouched */
    CHECK(!buf_grow(v, &cap, SIZE_MAX / 8, sizeof *v), "need * elem overflow accepted");
    CHECK(!buf_grow(v, &cap, SIZE_MAX, 1), "SIZE_MAX elements accepted");
    CHECK_TRUE(!BUF_GROW(v, cap, SIZE_MAX / 4));
    CHECK(v == same && cap == cap0, "a failed grow changed the array");
    CHECK(v[4999].a == 4999, "a failed grow lost elements");
    free(v);
    /* first growth: at least 16, or need */
    uint32_t *w = NULL;
    size_t wc = 0;
    CHECK_TRUE(BUF_GROW(w, wc, 1));
    CHECK_INT(wc, 16);
    CHECK_TRUE(BUF_GROW(w, wc, 100));
    CHECK_INT(wc, 128);
    free(w);
}

int main(void)
{
    test_append_table();
    test_growth();
    test_max();
    test_printf();
    test_grow();
    return check_done("test_buf");
}
