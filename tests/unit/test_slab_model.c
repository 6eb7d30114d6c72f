/* test_slab_model: slab_model against numbers captured from a running
 * memcached 1.6.18 (Debian 1.6.18-1+deb12u1, x86-64): `memcached -vv`
 * ladder lines, its start-up refusals, and `stats slabs` / `stats items`
 * after storing the items listed below. None of the expected values come
 * from slab_model itself. Prints every failing case; exits 1 if any.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "model/slab_model.h"

#include "check.h"

/* ---- ladders: `memcached -u nobody -vv -p 0 -U 0 <flags>`, stderr ---- */

struct expect_class {
    uint32_t chunk_size;
    uint32_t perslab;
};

static const struct expect_class ladder_default[] = {
    { 96, 10922 }, { 120, 8738 },  { 152, 6898 }, { 192, 5461 }, { 240, 4369 }, { 304, 3449 },
    { 384, 2730 }, { 480, 2184 },  { 600, 1747 }, { 752, 1394 }, { 944, 1110 }, { 1184, 885 },
    { 1480, 708 }, { 1856, 564 },  { 2320, 451 }, { 2904, 361 }, { 3632, 288 }, { 4544, 230 },
    { 5680, 184 }, { 7104, 147 },  { 8880, 118 }, { 11104, 94 }, { 13880, 75 }, { 17352, 60 },
    { 21696, 48 }, { 27120, 38 },  { 33904, 30 }, { 42384, 24 }, { 52984, 19 }, { 66232, 15 },
    { 82792, 12 }, { 103496, 10 }, { 129376, 8 }, { 161720, 6 }, { 202152, 5 }, { 252696, 4 },
    { 315872, 3 }, { 394840, 2 },  { 524288, 2 },
};

static const struct expect_class ladder_f108[] = {
    { 96, 10922 }, { 104, 10082 }, { 112, 9362 }, { 120, 8738 },  { 136, 7710 },  { 152, 6898 },
    { 168, 6241 }, { 184, 5698 },  { 200, 5242 }, { 216, 4854 },  { 240, 4369 },  { 264, 3971 },
    { 288, 3640 }, { 312, 3360 },  { 336, 3120 }, { 368, 2849 },  { 400, 2621 },  { 432, 2427 },
    { 472, 2221 }, { 512, 2048 },  { 552, 1899 }, { 600, 1747 },  { 648, 1618 },  { 704, 1489 },
    { 760, 1379 }, { 824, 1272 },  { 896, 1170 }, { 968, 1083 },  { 1048, 1000 }, { 1136, 923 },
    { 1232, 851 }, { 1336, 784 },  { 1448, 724 }, { 1568, 668 },  { 1696, 618 },  { 1832, 572 },
    { 1984, 528 }, { 2144, 489 },  { 2320, 451 }, { 2512, 417 },  { 2712, 386 },  { 2928, 358 },
    { 3168, 330 }, { 3424, 306 },  { 3704, 283 }, { 4000, 262 },  { 4320, 242 },  { 4672, 224 },
    { 5048, 207 }, { 5456, 192 },  { 5896, 177 }, { 6368, 164 },  { 6880, 152 },  { 7432, 141 },
    { 8032, 130 }, { 8680, 120 },  { 9376, 111 }, { 10128, 103 }, { 10944, 95 },  { 11824, 88 },
    { 12776, 82 }, { 13800, 75 },  { 524288, 2 },
};

static const struct expect_class ladder_n5_f105[] = {
    { 56, 18724 },  { 64, 16384 }, { 72, 14563 }, { 80, 13107 }, { 88, 11915 },  { 96, 10922 },
    { 104, 10082 }, { 112, 9362 }, { 120, 8738 }, { 128, 8192 }, { 136, 7710 },  { 144, 7281 },
    { 152, 6898 },  { 160, 6553 }, { 168, 6241 }, { 176, 5957 }, { 184, 5698 },  { 200, 5242 },
    { 216, 4854 },  { 232, 4519 }, { 248, 4228 }, { 264, 3971 }, { 280, 3744 },  { 296, 3542 },
    { 312, 3360 },  { 328, 3196 }, { 344, 3048 }, { 368, 2849 }, { 392, 2674 },  { 416, 2520 },
    { 440, 2383 },  { 464, 2259 }, { 488, 2148 }, { 512, 2048 }, { 544, 1927 },  { 576, 1820 },
    { 608, 1724 },  { 640, 1638 }, { 672, 1560 }, { 712, 1472 }, { 752, 1394 },  { 792, 1323 },
    { 832, 1260 },  { 880, 1191 }, { 928, 1129 }, { 976, 1074 }, { 1024, 1024 }, { 1080, 970 },
    { 1136, 923 },  { 1192, 879 }, { 1256, 834 }, { 1320, 794 }, { 1392, 753 },  { 1464, 716 },
    { 1544, 679 },  { 1624, 645 }, { 1712, 612 }, { 1800, 582 }, { 1896, 553 },  { 1992, 526 },
    { 2096, 500 },  { 2200, 476 }, { 524288, 2 },
};

static const struct expect_class ladder_scm16k[] = {
    { 96, 10922 }, { 120, 8738 }, { 152, 6898 }, { 192, 5461 }, { 240, 4369 }, { 304, 3449 },
    { 384, 2730 }, { 480, 2184 }, { 600, 1747 }, { 752, 1394 }, { 944, 1110 }, { 1184, 885 },
    { 1480, 708 }, { 1856, 564 }, { 2320, 451 }, { 2904, 361 }, { 3632, 288 }, { 4544, 230 },
    { 5680, 184 }, { 7104, 147 }, { 8880, 118 }, { 11104, 94 }, { 16384, 64 },
};

static const struct expect_class ladder_sizes_4[] = {
    { 104, 10082 }, { 200, 5242 }, { 1000, 1048 }, { 9000, 116 }, { 524288, 2 },
};

static const struct expect_class ladder_I2m_scm256k[] = {
    { 96, 10922 }, { 120, 8738 },  { 152, 6898 }, { 192, 5461 }, { 240, 4369 }, { 304, 3449 },
    { 384, 2730 }, { 480, 2184 },  { 600, 1747 }, { 752, 1394 }, { 944, 1110 }, { 1184, 885 },
    { 1480, 708 }, { 1856, 564 },  { 2320, 451 }, { 2904, 361 }, { 3632, 288 }, { 4544, 230 },
    { 5680, 184 }, { 7104, 147 },  { 8880, 118 }, { 11104, 94 }, { 13880, 75 }, { 17352, 60 },
    { 21696, 48 }, { 27120, 38 },  { 33904, 30 }, { 42384, 24 }, { 52984, 19 }, { 66232, 15 },
    { 82792, 12 }, { 103496, 10 }, { 129376, 8 }, { 161720, 6 }, { 202152, 5 }, { 262144, 4 },
};

static const struct expect_class ladder_n10_f2[] = {
    { 64, 16384 }, { 128, 8192 }, { 256, 4096 }, { 512, 2048 }, { 1024, 1024 },
    { 2048, 512 }, { 4096, 256 }, { 8192, 128 }, { 16384, 64 }, { 32768, 32 },
    { 65536, 16 }, { 131072, 8 }, { 524288, 2 },
};

static const struct expect_class ladder_n600000[] = {
    { 524288, 2 },
};

static const struct expect_class ladder_sizes_62[] = {
    { 104, 10082 }, { 112, 9362 }, { 120, 8738 }, { 136, 7710 }, { 144, 7281 }, { 152, 6898 },
    { 160, 6553 },  { 176, 5957 }, { 184, 5698 }, { 192, 5461 }, { 200, 5242 }, { 216, 4854 },
    { 224, 4681 },  { 232, 4519 }, { 240, 4369 }, { 256, 4096 }, { 264, 3971 }, { 272, 3855 },
    { 280, 3744 },  { 296, 3542 }, { 304, 3449 }, { 312, 3360 }, { 320, 3276 }, { 336, 3120 },
    { 344, 3048 },  { 352, 2978 }, { 360, 2912 }, { 376, 2788 }, { 384, 2730 }, { 392, 2674 },
    { 400, 2621 },  { 416, 2520 }, { 424, 2473 }, { 432, 2427 }, { 440, 2383 }, { 456, 2299 },
    { 464, 2259 },  { 472, 2221 }, { 480, 2184 }, { 496, 2114 }, { 504, 2080 }, { 512, 2048 },
    { 520, 2016 },  { 536, 1956 }, { 544, 1927 }, { 552, 1899 }, { 560, 1872 }, { 576, 1820 },
    { 584, 1795 },  { 592, 1771 }, { 600, 1747 }, { 616, 1702 }, { 624, 1680 }, { 632, 1659 },
    { 640, 1638 },  { 656, 1598 }, { 664, 1579 }, { 672, 1560 }, { 680, 1542 }, { 696, 1506 },
    { 704, 1489 },  { 712, 1472 }, { 524288, 2 },
};

/* Every line memcached -vv printed for default settings. */
static const char ladder_default_text[] = "slab class   1: chunk size        96 perslab   10922\n"
                                          "slab class   2: chunk size       120 perslab    8738\n"
                                          "slab class   3: chunk size       152 perslab    6898\n"
                                          "slab class   4: chunk size       192 perslab    5461\n"
                                          "slab class   5: chunk size       240 perslab    4369\n"
                                          "slab class   6: chunk size       304 perslab    3449\n"
                                          "slab class   7: chunk size       384 perslab    2730\n"
                                          "slab class   8: chunk size       480 perslab    2184\n"
                                          "slab class   9: chunk size       600 perslab    1747\n"
                                          "slab class  10: chunk size       752 perslab    1394\n"
                                          "slab class  11: chunk size       944 perslab    1110\n"
                                          "slab class  12: chunk size      1184 perslab     885\n"
                                          "slab class  13: chunk size      1480 perslab     708\n"
                                          "slab class  14: chunk size      1856 perslab     564\n"
                                          "slab class  15: chunk size      2320 perslab     451\n"
                                          "slab class  16: chunk size      2904 perslab     361\n"
                                          "slab class  17: chunk size      3632 perslab     288\n"
                                          "slab class  18: chunk size      4544 perslab     230\n"
                                          "slab class  19: chunk size      5680 perslab     184\n"
                                          "slab class  20: chunk size      7104 perslab     147\n"
                                          "slab class  21: chunk size      8880 perslab     118\n"
                                          "slab class  22: chunk size     11104 perslab      94\n"
                                          "slab class  23: chunk size     13880 perslab      75\n"
                                          "slab class  24: chunk size     17352 perslab      60\n"
                                          "slab class  25: chunk size     21696 perslab      48\n"
                                          "slab class  26: chunk size     27120 perslab      38\n"
                                          "slab class  27: chunk size     33904 perslab      30\n"
                                          "slab class  28: chunk size     42384 perslab      24\n"
                                          "slab class  29: chunk size     52984 perslab      19\n"
                                          "slab class  30: chunk size     66232 perslab      15\n"
                                          "slab class  31: chunk size     82792 perslab      12\n"
                                          "slab class  32: chunk size    103496 perslab      10\n"
                                          "slab class  33: chunk size    129376 perslab       8\n"
                                          "slab class  34: chunk size    161720 perslab       6\n"
                                          "slab class  35: chunk size    202152 perslab       5\n"
                                          "slab class  36: chunk size    252696 perslab       4\n"
                                          "slab class  37: chunk size    315872 perslab       3\n"
                                          "slab class  38: chunk size    394840 perslab       2\n"
                                          "slab class  39: chunk size    524288 perslab       2\n";

struct ladder_case {
    const char *flags;    /* the memcached flags the capture used */
    uint32_t n;           /* -n, 0 = default */
    double f;             /* -f, 0 = default */
    const char *item_max; /* -I, NULL = default */
    uint32_t chunk_max;   /* -o slab_chunk_max (bytes), 0 = default */
    const char *sizes;    /* -o slab_sizes, NULL = none */
    const struct expect_class *expect;
    uint32_t count;
};

#define N(a) (uint32_t)(sizeof(a) / sizeof((a)[0]))

/* seq -s- 100 10 710: 62 sizes, the most memcached accepts */
static const char sizes_62[] =
    "100-110-120-130-140-150-160-170-180-190-200-210-220-230-240-250-260-270-280-290-"
    "300-310-320-330-340-350-360-370-380-390-400-410-420-430-440-450-460-470-480-490-"
    "500-510-520-530-540-550-560-570-580-590-600-610-620-630-640-650-660-670-680-690-"
    "700-710";

static const struct ladder_case ladder_cases[] = {
    { "(defaults)", 0, 0, NULL, 0, NULL, ladder_default, N(ladder_default) },
    { "-f 1.08", 0, 1.08, NULL, 0, NULL, ladder_f108, N(ladder_f108) },
    { "-n 5 -f 1.05", 5, 1.05, NULL, 0, NULL, ladder_n5_f105, N(ladder_n5_f105) },
    { "-o slab_chunk_max=16384", 0, 0, NULL, 16384, NULL, ladder_scm16k, N(ladder_scm16k) },
    { "-I 4m", 0, 0, "4m", 0, NULL, ladder_default, N(ladder_default) },
    { "-I 512k", 0, 0, "512k", 0, NULL, ladder_default, N(ladder_default) },
    { "-I 32m", 0, 0, "32m", 0, NULL, ladder_default, N(ladder_default) },
    { "-o slab_sizes=100-200-1000-9000", 0, 0, NULL, 0, "100-200-1000-9000", ladder_sizes_4,
      N(ladder_sizes_4) },
    { "-I 2m -o slab_chunk_max=262144", 0, 0, "2m", 262144, NULL, ladder_I2m_scm256k,
      N(ladder_I2m_scm256k) },
    { "-n 10 -f 2", 10, 2.0, NULL, 0, NULL, ladder_n10_f2, N(ladder_n10_f2) },
    { "-n 600000", 600000, 0, NULL, 0, NULL, ladder_n600000, N(ladder_n600000) },
    { "-o slab_sizes=<62 sizes>", 0, 0, NULL, 0, sizes_62, ladder_sizes_62, N(ladder_sizes_62) },
};

static enum slab_status settings_for(const struct ladder_case *c, struct slab_settings *s)
{
    enum slab_status st = SLAB_OK;
    slab_settings_default(s);
    if (c->n)
        s->chunk_size_min = c->n;
    if (c->f > 0)
        s->growth_factor = c->f;
    if (c->item_max)
        st = slab_parse_size(c->item_max, &s->item_size_max);
    if (c->chunk_max)
        s->slab_chunk_max = c->chunk_max;
    if (st == SLAB_OK && c->sizes)
        st = slab_parse_slab_sizes(c->sizes, s, NULL, 0);
    return st;
}

static void check_ladder_case(struct tally *t, const struct ladder_case *c)
{
    struct slab_settings s;
    struct slab_ladder l;
    char err[200] = "";
    enum slab_status st = settings_for(c, &s);
    if (st == SLAB_OK)
        st = slab_ladder_build(&s, &l, err, sizeof err);
    TALLY_CHECK(t, st == SLAB_OK, "[%s] build: %s %s", c->flags, slab_status_str(st), err);
    if (st != SLAB_OK)
        return;
    TALLY_CHECK(t, l.n_classes == c->count, "[%s] %u classes, memcached had %u", c->flags,
                l.n_classes, c->count);
    for (uint32_t i = 0; i < c->count && i < l.n_classes; i++) {
        const struct slab_class *k = &l.cls[i + 1];
        TALLY_CHECK(t,
                    k->chunk_size == c->expect[i].chunk_size && k->perslab == c->expect[i].perslab,
                    "[%s] class %u: chunk %u perslab %u, memcached %u/%u", c->flags, i + 1,
                    k->chunk_size, k->perslab, c->expect[i].chunk_size, c->expect[i].perslab);
    }
}

static void test_ladders(struct tally *t)
{
    for (size_t i = 0; i < sizeof ladder_cases / sizeof ladder_cases[0]; i++)
        check_ladder_case(t, &ladder_cases[i]);
}

static void test_ladder_text(struct tally *t)
{
    struct slab_settings s;
    struct slab_ladder l;
    char text[8192];
    slab_settings_default(&s);
    TALLY_CHECK(t, slab_ladder_build(&s, &l, NULL, 0) == SLAB_OK, "default ladder builds");
    size_t n = slab_ladder_format(&l, text, sizeof text);
    TALLY_CHECK(t, n == strlen(ladder_default_text) && !strcmp(text, ladder_default_text),
                "default ladder text differs from memcached -vv:\n%s", text);
    /* a short buffer gets whole lines only, and the full length back */
    char small[100];
    n = slab_ladder_format(&l, small, sizeof small);
    TALLY_CHECK(t, n == strlen(ladder_default_text), "format returns needed length, got %zu", n);
    TALLY_CHECK(t, !strcmp(small, "slab class   1: chunk size        96 perslab   10922\n"),
                "short buffer holds exactly the first line, got '%s'", small);
    char line[SLAB_MODEL_LINE_MAX];
    TALLY_CHECK(t, slab_ladder_format_line(&l, 40, line, sizeof line) == -1,
                "class 40 of 39 refused");
    TALLY_CHECK(t, slab_ladder_format_line(&l, 0, line, sizeof line) == -1, "class 0 refused");
}

/* ---- settings memcached refuses at start-up (exit 64 or 1) ---- */

struct refuse_case {
    const char *flags;
    const char *item_max;
    uint32_t n;
    double f;
    uint32_t chunk_max;
    const char *sizes;
    const char *message; /* memcached's stderr line */
};

static const struct refuse_case refuse_cases[] = {
    { "-I 1000", "1000", 0, 0, 0, NULL, "Item max size cannot be less than 1024 bytes." },
    { "-I 256k", "256k", 0, 0, 0, NULL,
      "slab_chunk_max (bytes: 524288) cannot be larger than -I (item_size_max 262144)" },
    { "-I 1500000", "1500000", 0, 0, 0, NULL,
      "-I (item_size_max: 1500000) must be evenly divisible by slab_chunk_max (bytes: 524288)" },
    { "-I 64m", "64m", 0, 0, 0, NULL, "Cannot set item size limit higher than 1/2 of memory max." },
    { "-I 33m", "33m", 0, 0, 0, NULL, "Cannot set item size limit higher than 1/2 of memory max." },
    { "-o slab_chunk_max=3000", NULL, 0, 0, 3000, NULL,
      "-I (item_size_max: 1048576) must be evenly divisible by slab_chunk_max (bytes: 3000)" },
    { "-o slab_sizes=40-100", NULL, 0, 0, 0, "40-100", "slab size 40 is out of valid range" },
    { "-o slab_sizes=100-105", NULL, 0, 0, 0, "100-105",
      "slab size 105 must be at least 8 bytes larger than previous class" },
    { "-o slab_sizes=100-108", NULL, 0, 0, 0, "100-108",
      "slab size 108 must be at least 8 bytes larger than previous class" },
    { "-o slab_sizes=200-100", NULL, 0, 0, 0, "200-100",
      "slab size 100 cannot be lower than or equal to a previous class size" },
    { "-o slab_sizes=100-600000", NULL, 0, 0, 0, "100-600000",
      "slab size 600000 is out of valid range" },
    { "-f 1.0", NULL, 0, 1.0, 0, NULL, "Factor must be greater than 1" },
};

static void test_refusals(struct tally *t)
{
    for (size_t i = 0; i < sizeof refuse_cases / sizeof refuse_cases[0]; i++) {
        const struct refuse_case *c = &refuse_cases[i];
        struct slab_settings s;
        struct slab_ladder l;
        char err[200] = "";
        slab_settings_default(&s);
        if (c->item_max)
            TALLY_CHECK(t, slab_parse_size(c->item_max, &s.item_size_max) == SLAB_OK, "[%s] parse",
                        c->flags);
        if (c->n)
            s.chunk_size_min = c->n;
        if (c->f > 0)
            s.growth_factor = c->f;
        if (c->chunk_max)
            s.slab_chunk_max = c->chunk_max;
        if (c->sizes)
            TALLY_CHECK(t, slab_parse_slab_sizes(c->sizes, &s, NULL, 0) == SLAB_OK, "[%s] parse",
                        c->flags);
        enum slab_status st = slab_ladder_build(&s, &l, err, sizeof err);
        TALLY_CHECK(t, st == SLAB_ERR_SETTINGS && !strcmp(err, c->message),
                    "[%s] got %s '%s', memcached said '%s'", c->flags, slab_status_str(st), err,
                    c->message);
    }
    /* -n 0: memcached "Chunk size must be greater than 0" */
    struct slab_settings s;
    char err[200] = "";
    slab_settings_default(&s);
    s.chunk_size_min = 0;
    TALLY_CHECK(t,
                slab_settings_validate(&s, err, sizeof err) == SLAB_ERR_SETTINGS &&
                    !strcmp(err, "Chunk size must be greater than 0"),
                "-n 0 refused, got '%s'", err);
    /* 63 sizes: memcached "too many slab classes specified" */
    char sizes_63[sizeof sizes_62 + 8];
    snprintf(sizes_63, sizeof sizes_63, "%s-720", sizes_62);
    slab_settings_default(&s);
    TALLY_CHECK(t,
                slab_parse_slab_sizes(sizes_63, &s, err, sizeof err) == SLAB_ERR_SETTINGS &&
                    !strcmp(err, "too many slab classes specified"),
                "63 slab sizes refused, got '%s'", err);
}

/* Accepted oddities, also captured from memcached -vv. */
static void test_odd_ladders(struct tally *t)
{
    struct slab_settings s;
    struct slab_ladder l;
    /* -n 10 -o slab_sizes=40-100: the lower bound is -n, not 48 + -n */
    slab_settings_default(&s);
    s.chunk_size_min = 10;
    slab_parse_slab_sizes("40-100", &s, NULL, 0);
    TALLY_CHECK(t,
                slab_ladder_build(&s, &l, NULL, 0) == SLAB_OK && l.n_classes == 3 &&
                    l.cls[1].chunk_size == 40 && l.cls[1].perslab == 26214 &&
                    l.cls[2].chunk_size == 104 && l.cls[2].perslab == 10082 &&
                    l.cls[3].chunk_size == 524288 && l.cls[3].perslab == 2,
                "-n 10 slab_sizes=40-100");
    /* -o slab_sizes=100-109: 109 > 100 + 8 is allowed, then aligned to 112 */
    slab_settings_default(&s);
    slab_parse_slab_sizes("100-109", &s, NULL, 0);
    TALLY_CHECK(t,
                slab_ladder_build(&s, &l, NULL, 0) == SLAB_OK && l.n_classes == 3 &&
                    l.cls[1].chunk_size == 104 && l.cls[2].chunk_size == 112 &&
                    l.cls[2].perslab == 9362,
                "slab_sizes=100-109");
    /* -o slab_chunk_max=1048576: 42 classes, 41 = 771184, 42 = 1 MiB */
    slab_settings_default(&s);
    s.slab_chunk_max = 1048576;
    TALLY_CHECK(t,
                slab_ladder_build(&s, &l, NULL, 0) == SLAB_OK && l.n_classes == 42 &&
                    l.cls[41].chunk_size == 771184 && l.cls[41].perslab == 1 &&
                    l.cls[42].chunk_size == 1048576 && l.cls[42].perslab == 1,
                "slab_chunk_max=1048576 gives 42 classes ending 771184, 1048576");
}

static void test_parse_size(struct tally *t)
{
    static const struct {
        const char *text;
        enum slab_status st;
        uint32_t value;
    } cases[] = {
        { "1m", SLAB_OK, 1048576 },   { "4M", SLAB_OK, 4194304 },  { "512k", SLAB_OK, 524288 },
        { "2K", SLAB_OK, 2048 },      { "1000", SLAB_OK, 1000 },   { "1.5m", SLAB_ERR_SYNTAX, 0 },
        { "", SLAB_ERR_SYNTAX, 0 },   { "m", SLAB_ERR_SYNTAX, 0 }, { "-1", SLAB_ERR_SYNTAX, 0 },
        { "4096m", SLAB_ERR_ARG, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint32_t v = 0;
        enum slab_status st = slab_parse_size(cases[i].text, &v);
        TALLY_CHECK(t, st == cases[i].st && (st != SLAB_OK || v == cases[i].value),
                    "parse_size('%s') = %s %u", cases[i].text, slab_status_str(st), v);
    }
}

/* ---- items: stats slabs / stats items after storing them, 1.6.18 ---- */

struct item_case {
    const char *what;
    bool cas;
    const char *item_max; /* -I */
    uint32_t key_len;
    uint32_t flags;
    uint64_t value_len;
    enum slab_status st;
    uint64_t ntotal;
    uint32_t lru_class;
    bool chunked;
    uint32_t hdr_class;
    uint64_t full_chunks;
    uint32_t full_class;
    uint32_t tail_class;
};

static const struct item_case item_cases[] = {
    /* key 10: ntotal = value + 69; 944 is the last byte of class 11 */
    { "k10 v875", true, "1m", 10, 0, 875, SLAB_OK, 944, 11, false, 0, 0, 0, 0 },
    { "k10 v876", true, "1m", 10, 0, 876, SLAB_OK, 945, 12, false, 0, 0, 0, 0 },
    { "k10 v876 flags 1", true, "1m", 10, 1, 876, SLAB_OK, 949, 12, false, 0, 0, 0, 0 },
    { "-C k10 v875", false, "1m", 10, 0, 875, SLAB_OK, 936, 11, false, 0, 0, 0, 0 },
    { "-C k10 v876", false, "1m", 10, 0, 876, SLAB_OK, 937, 11, false, 0, 0, 0, 0 },
    { "k10 v20 (class 1)", true, "1m", 10, 0, 20, SLAB_OK, 89, 1, false, 0, 0, 0, 0 },
    /* chunked: header in class 2 (120), data in 524288 chunks + a tail */
    { "k1 v600000", true, "1m", 1, 0, 600000, SLAB_OK, 600060, 39, true, 2, 1, 39, 31 },
    { "k1 v524238 (no tail)", true, "1m", 1, 0, 524238, SLAB_OK, 524298, 39, true, 2, 1, 39, 0 },
    { "k1 v524239 (1-byte tail)", true, "1m", 1, 0, 524239, SLAB_OK, 524299, 39, true, 2, 1, 39,
      1 },
    /* tail of 60 bytes + its 48-byte chunk header = 108: class 2, not 1 */
    { "k1 v524298 (60-byte tail)", true, "1m", 1, 0, 524298, SLAB_OK, 524358, 39, true, 2, 1, 39,
      2 },
    /* header = key + 1 + 96 (+4 flags) (+8 CAS): 121 needs class 3 (152) */
    { "k16 v600000 (header 121)", true, "1m", 16, 0, 600000, SLAB_OK, 600075, 39, true, 3, 1, 39,
      31 },
    { "-C k16 v600000 (header 113)", false, "1m", 16, 0, 600000, SLAB_OK, 600067, 39, true, 2, 1,
      39, 31 },
    { "k12 v600000 flags 7 (header 121)", true, "1m", 12, 7, 600000, SLAB_OK, 600075, 39, true, 3,
      1, 39, 31 },
    { "k10 v1048500", true, "1m", 10, 0, 1048500, SLAB_OK, 1048569, 39, true, 2, 2, 39, 1 },
    { "k10 v1048507 (= -I)", true, "1m", 10, 0, 1048507, SLAB_OK, 1048576, 39, true, 2, 2, 39, 1 },
    { "k10 v1048576", true, "1m", 10, 0, 1048576, SLAB_ERR_TOO_LARGE, 1048645, 0, false, 0, 0, 0,
      0 },
    { "-C k10 v1048000", false, "1m", 10, 0, 1048000, SLAB_OK, 1048061, 39, true, 2, 1, 39, 39 },
    { "-C k10 v1048576", false, "1m", 10, 0, 1048576, SLAB_ERR_TOO_LARGE, 1048637, 0, false, 0, 0,
      0, 0 },
    { "-I 2m k250 v1500000 flags 5", true, "2m", 250, 5, 1500000, SLAB_OK, 1500313, 39, true, 7, 2,
      39, 39 },
};

static bool build(struct slab_ladder *l, bool cas, const char *item_max)
{
    struct slab_settings s;
    slab_settings_default(&s);
    s.use_cas = cas;
    return slab_parse_size(item_max, &s.item_size_max) == SLAB_OK &&
           slab_ladder_build(&s, l, NULL, 0) == SLAB_OK;
}

static void test_items(struct tally *t)
{
    for (size_t i = 0; i < sizeof item_cases / sizeof item_cases[0]; i++) {
        const struct item_case *c = &item_cases[i];
        struct slab_ladder l;
        struct slab_item_layout it;
        TALLY_CHECK(t, build(&l, c->cas, c->item_max), "[%s] ladder", c->what);
        enum slab_status st = slab_item_layout(&l, c->key_len, c->flags, c->value_len, &it);
        TALLY_CHECK(t, st == c->st, "[%s] status %s", c->what, slab_status_str(st));
        TALLY_CHECK(t, it.ntotal == c->ntotal, "[%s] ntotal %" PRIu64 " want %" PRIu64, c->what,
                    it.ntotal, c->ntotal);
        TALLY_CHECK(t, slab_item_ntotal(c->cas, c->key_len, c->flags, c->value_len) == c->ntotal,
                    "[%s] slab_item_ntotal", c->what);
        if (st != SLAB_OK)
            continue;
        TALLY_CHECK(t, it.lru_class == c->lru_class && it.chunked == c->chunked,
                    "[%s] class %u chunked %d, want %u %d", c->what, it.lru_class, it.chunked,
                    c->lru_class, c->chunked);
        TALLY_CHECK(t,
                    it.hdr_class == c->hdr_class && it.full_chunks == c->full_chunks &&
                        it.full_class == c->full_class && it.tail_class == c->tail_class,
                    "[%s] hdr %u full %" PRIu64 "x%u tail %u, want hdr %u full %" PRIu64
                    "x%u tail %u",
                    c->what, it.hdr_class, it.full_chunks, it.full_class, it.tail_class,
                    c->hdr_class, c->full_chunks, c->full_class, c->tail_class);
    }
}

/* ---- counters: the same sets in one memcached, then its stats ---- */

struct expect_counters {
    uint32_t id;
    uint64_t used, pages, total_chunks, number, mem_requested;
};

static void check_counters(struct tally *t, const char *what, const struct slab_counters *c,
                           const struct expect_counters *e, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct slab_class_counters *k = &c->cls[e[i].id];
        TALLY_CHECK(t,
                    k->used_chunks == e[i].used && k->total_pages == e[i].pages &&
                        k->total_chunks == e[i].total_chunks && k->number == e[i].number &&
                        k->mem_requested == e[i].mem_requested,
                    "[%s] class %u: used %" PRIu64 " pages %" PRIu64 " chunks %" PRIu64
                    " number %" PRIu64 " mem_requested %" PRIu64,
                    what, e[i].id, k->used_chunks, k->total_pages, k->total_chunks, k->number,
                    k->mem_requested);
    }
}

static void add_item(struct tally *t, struct slab_counters *c, const struct slab_ladder *l,
                     uint32_t key_len, uint32_t flags, uint64_t value_len)
{
    struct slab_item_layout it;
    enum slab_status st = slab_item_layout(l, key_len, flags, value_len, &it);
    if (st == SLAB_ERR_TOO_LARGE)
        return; /* memcached answered SERVER_ERROR object too large for cache */
    TALLY_CHECK(t, st == SLAB_OK && slab_counters_add(c, l, &it) == SLAB_OK, "add k%u v%" PRIu64,
                key_len, value_len);
}

static void test_counters_mixed(struct tally *t)
{
    struct slab_ladder l;
    struct slab_counters c;
    build(&l, true, "1m");
    slab_counters_init(&c);
    add_item(t, &c, &l, 10, 0, 875);
    add_item(t, &c, &l, 10, 0, 876);
    add_item(t, &c, &l, 10, 1, 876);
    add_item(t, &c, &l, 10, 0, 1048576); /* refused */
    add_item(t, &c, &l, 10, 0, 1048500);
    add_item(t, &c, &l, 10, 0, 1048507);
    static const struct expect_counters e[] = {
        { 1, 2, 1, 10922, 0, 0 },   { 2, 2, 1, 8738, 0, 0 },     { 11, 1, 1, 1110, 1, 944 },
        { 12, 2, 1, 885, 2, 1894 }, { 39, 4, 2, 4, 2, 2097145 }, { 3, 0, 0, 0, 0, 0 },
    };
    check_counters(t, "mixed sets", &c, e, sizeof e / sizeof e[0]);

    struct slab_ladder l2;
    build(&l2, true, "2m");
    slab_counters_init(&c);
    add_item(t, &c, &l2, 250, 5, 1500000);
    static const struct expect_counters e2[] = {
        { 7, 1, 1, 2730, 0, 0 },
        { 39, 3, 2, 4, 1, 1500313 },
    };
    check_counters(t, "-I 2m chunked", &c, e2, sizeof e2 / sizeof e2[0]);

    /* -o slab_chunk_max=16384: 6 full chunks of 16384 + a 2034-byte tail,
     * and a 16368-byte item that just fits the last class unchunked */
    struct slab_settings s;
    struct slab_ladder l3;
    slab_settings_default(&s);
    s.slab_chunk_max = 16384;
    TALLY_CHECK(t, slab_ladder_build(&s, &l3, NULL, 0) == SLAB_OK, "scm 16384 ladder");
    slab_counters_init(&c);
    add_item(t, &c, &l3, 1, 0, 100000);
    add_item(t, &c, &l3, 5, 3, 16300);
    static const struct expect_counters e3[] = {
        { 2, 1, 1, 8738, 0, 0 },
        { 15, 1, 1, 451, 0, 0 },
        { 23, 7, 1, 64, 2, 116428 },
    };
    check_counters(t, "slab_chunk_max=16384", &c, e3, sizeof e3 / sizeof e3[0]);

    /* a 60-byte tail is asked for as 108 bytes: class 2 holds it */
    build(&l, true, "1m");
    slab_counters_init(&c);
    add_item(t, &c, &l, 1, 0, 524298);
    static const struct expect_counters e4[] = {
        { 1, 0, 0, 0, 0, 0 },
        { 2, 2, 1, 8738, 0, 0 },
        { 39, 1, 1, 2, 1, 524358 },
    };
    check_counters(t, "60-byte tail", &c, e4, sizeof e4 / sizeof e4[0]);
}

/* 10922 items fill class 1's page; overwriting one opens a second page
 * (new item allocated before the old is freed); deletes keep pages. */
static void test_counters_pages(struct tally *t)
{
    struct slab_ladder l;
    struct slab_counters c;
    struct slab_item_layout it;
    build(&l, true, "1m");
    slab_counters_init(&c);
    slab_item_layout(&l, 10, 0, 20, &it);
    for (int i = 0; i < 10922; i++)
        slab_counters_add(&c, &l, &it);
    static const struct expect_counters full[] = { { 1, 10922, 1, 10922, 10922, 10922 * 89 } };
    check_counters(t, "10922 distinct", &c, full, 1);
    slab_counters_add(&c, &l, &it);
    TALLY_CHECK(t, slab_counters_remove(&c, &l, &it) == SLAB_OK, "overwrite remove");
    static const struct expect_counters over[] = { { 1, 10922, 2, 21844, 10922, 10922 * 89 } };
    check_counters(t, "overwrite one", &c, over, 1);
    slab_counters_add(&c, &l, &it);
    TALLY_CHECK(t, slab_counters_remove(&c, &l, &it) == SLAB_OK, "delete");
    check_counters(t, "one more, one deleted", &c, over, 1);
}

static void test_counters_underflow(struct tally *t)
{
    struct slab_ladder l;
    struct slab_counters c, before;
    struct slab_item_layout small, big;
    build(&l, true, "1m");
    slab_counters_init(&c);
    slab_item_layout(&l, 10, 0, 20, &small);
    slab_item_layout(&l, 1, 0, 600000, &big);
    TALLY_CHECK(t, slab_counters_remove(&c, &l, &small) == SLAB_ERR_UNDERFLOW, "remove from empty");
    slab_counters_add(&c, &l, &small);
    before = c;
    TALLY_CHECK(t, slab_counters_remove(&c, &l, &big) == SLAB_ERR_UNDERFLOW, "remove unknown big");
    TALLY_CHECK(t, !memcmp(&c, &before, sizeof c), "failed remove changes nothing");
    slab_counters_add(&c, &l, &big);
    TALLY_CHECK(t, slab_counters_remove(&c, &l, &big) == SLAB_OK, "remove big");
    TALLY_CHECK(t,
                c.cls[31].used_chunks == 0 && c.cls[31].total_pages == 1 &&
                    c.cls[39].mem_requested == 0 && c.cls[2].used_chunks == 0,
                "big removed, its pages kept");
}

static void test_class_for(struct tally *t)
{
    struct slab_ladder l;
    build(&l, true, "1m");
    TALLY_CHECK(t, slab_ladder_class_for(&l, 0) == 0, "size 0");
    TALLY_CHECK(t, slab_ladder_class_for(&l, 1) == 1, "size 1");
    TALLY_CHECK(t, slab_ladder_class_for(&l, 96) == 1 && slab_ladder_class_for(&l, 97) == 2,
                "96/97");
    TALLY_CHECK(t, slab_ladder_class_for(&l, 524288) == 39, "524288");
    TALLY_CHECK(t, slab_ladder_class_for(&l, 524289) == 39, "above the largest class, within -I");
    TALLY_CHECK(t, slab_ladder_class_for(&l, 1048576) == 39, "= -I");
    TALLY_CHECK(t, slab_ladder_class_for(&l, 1048577) == 0, "above -I");
}

/* ---- memcached's command line: slab_settings_from_flags ---- */

struct flags_case {
    const char *flags, *version;
    enum slab_status st;
    unsigned given;
    double f;
    uint32_t n, item_max, scm, nsizes, first_size;
    uint64_t mem_mb;
    bool cas;
};

/* memcached.c 1.6.18 getopt string and longopts; -o slab_chunk_max as
 * 1.6.23 (bytes) and 1.6.24 (kilobytes) parse it. */
static const struct flags_case flags_cases[] = {
    { "", NULL, SLAB_OK, 0, 1.25, 48, 1048576, 524288, 0, 0, 64, true },
    { "-m 1024 -f 1.125", NULL, SLAB_OK, SLAB_GIVEN_MEM | SLAB_GIVEN_FACTOR, 1.125, 48, 1048576,
      524288, 0, 0, 1024, true },
    { "-f1.08 -n16", NULL, SLAB_OK, SLAB_GIVEN_FACTOR | SLAB_GIVEN_MIN, 1.08, 16, 1048576, 524288,
      0, 0, 64, true },
    { "--slab-growth-factor=1.5 --slab-min-size 32 --max-item-size=2m", NULL, SLAB_OK,
      SLAB_GIVEN_FACTOR | SLAB_GIVEN_MIN | SLAB_GIVEN_ITEM_MAX, 1.5, 32, 2097152, 524288, 0, 0, 64,
      true },
    { "-o slab_sizes=100-200-400-800-1600", NULL, SLAB_OK, SLAB_GIVEN_SIZES, 1.25, 48, 1048576,
      524288, 5, 100, 64, true },
    { "-o modern,slab_sizes=100-200,slab_chunk_max=16384", "1.6.18", SLAB_OK,
      SLAB_GIVEN_SIZES | SLAB_GIVEN_CHUNK_MAX, 1.25, 48, 1048576, 16384, 2, 100, 64, true },
    { "-o slab_chunk_max=16384", "1.6.23", SLAB_OK, SLAB_GIVEN_CHUNK_MAX, 1.25, 48, 1048576, 16384,
      0, 0, 64, true },
    { "-o slab_chunk_max=16", "1.6.24", SLAB_OK, SLAB_GIVEN_CHUNK_MAX, 1.25, 48, 1048576, 16384, 0,
      0, 64, true },
    { "--extended=slab_chunk_max=64", "memcached 1.6.45", SLAB_OK, SLAB_GIVEN_CHUNK_MAX, 1.25, 48,
      1048576, 65536, 0, 0, 64, true },
    { "-Cv -vv -t 4 -p 11211 -U 0 -l 127.0.0.1 -c 1024 -u nobody", NULL, SLAB_OK, SLAB_GIVEN_NO_CAS,
      1.25, 48, 1048576, 524288, 0, 0, 64, false },
    { "--disable-cas --threads=2 -M", NULL, SLAB_OK, SLAB_GIVEN_NO_CAS, 1.25, 48, 1048576, 524288,
      0, 0, 64, false },
    { "-Q", NULL, SLAB_ERR_SYNTAX, 0, 0, 0, 0, 0, 0, 0, 0, true },
    { "-f", NULL, SLAB_ERR_SYNTAX, 0, 0, 0, 0, 0, 0, 0, 0, true },
    { "-f 1.2x", NULL, SLAB_ERR_SYNTAX, 0, 0, 0, 0, 0, 0, 0, 0, true },
    { "-m lots", NULL, SLAB_ERR_SYNTAX, 0, 0, 0, 0, 0, 0, 0, 0, true },
    { "--no-such-option", NULL, SLAB_ERR_SYNTAX, 0, 0, 0, 0, 0, 0, 0, 0, true },
    { "1024", NULL, SLAB_ERR_SYNTAX, 0, 0, 0, 0, 0, 0, 0, 0, true },
    { "-o slab_sizes=100-x", NULL, SLAB_ERR_SYNTAX, 0, 0, 0, 0, 0, 0, 0, 0, true },
    { "-o slab_chunk_max=abc", NULL, SLAB_ERR_SYNTAX, 0, 0, 0, 0, 0, 0, 0, 0, true },
};

static void test_from_flags(struct tally *t)
{
    for (size_t i = 0; i < sizeof flags_cases / sizeof flags_cases[0]; i++) {
        const struct flags_case *c = &flags_cases[i];
        struct slab_settings s;
        unsigned given = 99;
        char err[200] = "";
        enum slab_status st =
            slab_settings_from_flags(&s, &given, c->flags, c->version, err, sizeof err);
        TALLY_CHECK(t, st == c->st, "flags \"%s\": status %s, want %s (%s)", c->flags,
                    slab_status_str(st), slab_status_str(c->st), err);
        if (st != SLAB_OK) {
            TALLY_CHECK(t, err[0] != '\0', "flags \"%s\": no message", c->flags);
            continue;
        }
        TALLY_CHECK(t,
                    given == c->given && s.growth_factor == c->f && s.chunk_size_min == c->n &&
                        s.item_size_max == c->item_max && s.slab_chunk_max == c->scm &&
                        s.n_slab_sizes == c->nsizes &&
                        (!c->nsizes || s.slab_sizes[0] == c->first_size) &&
                        s.mem_limit == c->mem_mb * 1024 * 1024 && s.use_cas == c->cas,
                    "flags \"%s\" (version %s): given %x f %g n %u I %u scm %u sizes %u mem %llu "
                    "cas %d",
                    c->flags, c->version ? c->version : "-", given, s.growth_factor,
                    s.chunk_size_min, s.item_size_max, s.slab_chunk_max, s.n_slab_sizes,
                    (unsigned long long)s.mem_limit, s.use_cas);
    }
}

/* ---- the -o slab_chunk_max unit boundary: 1.6.23 bytes, 1.6.24 kilobytes ---- */

static void test_versions(struct tally *t)
{
    static const struct {
        const char *v;
        int at_least_1_6_24;
    } cases[] = {
        { "1.6.18", 0 },     { "1.6.23", 0 },
        { "1.6.24", 1 },     { "1.6.25", 1 },
        { "1.6.45", 1 },     { "1.7.0", 1 },
        { "2.0.0", 1 },      { "1.5.99", 0 },
        { "1.6.24-rc1", 1 }, { "memcached 1.6.24", 1 },
        { "1.6", -1 },       { "", -1 },
        { "garbage", -1 },   { "1.6.x", -1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int got = slab_version_at_least(cases[i].v, 1, 6, 24);
        TALLY_CHECK(t, got == cases[i].at_least_1_6_24, "version \"%s\" >= 1.6.24: %d, want %d",
                    cases[i].v, got, cases[i].at_least_1_6_24);
        TALLY_CHECK(t, slab_chunk_max_in_kb(cases[i].v) == (cases[i].at_least_1_6_24 == 1),
                    "version \"%s\": slab_chunk_max in kilobytes", cases[i].v);
    }
    TALLY_CHECK(t, !slab_chunk_max_in_kb(NULL), "no version: bytes (1.6.18)");
}

/* ---- the flag builder, both sides of the boundary ---- */

static void test_flags_for(struct tally *t)
{
    static const struct {
        const char *settings, *version, *want; /* want NULL: refused */
    } cases[] = {
        { "", "1.6.18", "-m 64 -n 48 -f 1.25" },
        { "", "1.6.45", "-m 64 -n 48 -f 1.25" },
        { "-f 1.125", "1.6.18", "-m 64 -n 48 -f 1.125" },
        { "-f 1.08 -n 16 -C", "1.6.24", "-m 64 -n 16 -f 1.08 -C" },
        { "-o slab_chunk_max=16384", "1.6.23", "-m 64 -n 48 -f 1.25 -o slab_chunk_max=16384" },
        { "-o slab_chunk_max=16384", "1.6.24", "-m 64 -n 48 -f 1.25 -o slab_chunk_max=16" },
        { "-o slab_chunk_max=16384", NULL, "-m 64 -n 48 -f 1.25 -o slab_chunk_max=16384" },
        { "-I 2m -o slab_chunk_max=262144", "1.6.45",
          "-m 64 -n 48 -f 1.25 -I 2097152 -o slab_chunk_max=256" },
        { "-o slab_sizes=100-200-400,slab_chunk_max=16384", "1.6.18",
          "-m 64 -o slab_sizes=100-200-400 -o slab_chunk_max=16384" },
        { "-o slab_sizes=100-200-400,slab_chunk_max=16384", "1.6.45",
          "-m 64 -o slab_sizes=100-200-400 -o slab_chunk_max=16" },
        { "-o slab_chunk_max=16000", "1.6.18", "-m 64 -n 48 -f 1.25 -o slab_chunk_max=16000" },
        { "-o slab_chunk_max=16000", "1.6.24", NULL }, /* not a whole number of KB */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct slab_settings s;
        char out[256] = "", err[200] = "";
        TALLY_CHECK(t,
                    slab_settings_from_flags(&s, NULL, cases[i].settings, NULL, err, sizeof err) ==
                        SLAB_OK,
                    "settings \"%s\": %s", cases[i].settings, err);
        int rc =
            slab_settings_flags_for(&s, 64, cases[i].version, out, sizeof out, err, sizeof err);
        if (!cases[i].want) {
            TALLY_CHECK(t, rc == -1 && strstr(err, "kilobytes"),
                        "\"%s\" on %s: refused (%d, \"%s\", \"%s\")", cases[i].settings,
                        cases[i].version, rc, out, err);
            continue;
        }
        TALLY_CHECK(t, rc == 0 && !strcmp(out, cases[i].want),
                    "\"%s\" on %s: \"%s\", want \"%s\" (%s)", cases[i].settings,
                    cases[i].version ? cases[i].version : "-", out, cases[i].want, err);
        /* what the builder writes, the converter reads back the same */
        struct slab_settings back;
        TALLY_CHECK(t,
                    slab_settings_from_flags(&back, NULL, out, cases[i].version, err, sizeof err) ==
                            SLAB_OK &&
                        back.slab_chunk_max == s.slab_chunk_max &&
                        back.growth_factor == s.growth_factor &&
                        back.n_slab_sizes == s.n_slab_sizes && back.use_cas == s.use_cas,
                    "\"%s\" read back on %s", out, cases[i].version ? cases[i].version : "-");
    }
    /* the 1.6.18 wrapper: bytes */
    struct slab_settings s;
    char out[128];
    slab_settings_default(&s);
    s.slab_chunk_max = 32768;
    slab_settings_flags(&s, 100, out, sizeof out);
    TALLY_CHECK(t, !strcmp(out, "-m 100 -n 48 -f 1.25 -o slab_chunk_max=32768"), "wrapper: %s",
                out);
}

/* ---- -f text memcached reads back exactly ---- */

static void test_factor_text(struct tally *t)
{
    static const struct {
        double f;
        const char *want;
    } cases[] = {
        { 1.25, "1.25" }, { 1.125, "1.125" },   { 1.08, "1.08" },        { 1.1, "1.10" },
        { 2.0, "2.00" },  { 1.1242, "1.1242" }, { 109 / 100.0, "1.09" }, { 1.00001, "1.00001" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[32];
        slab_factor_text(cases[i].f, out, sizeof out);
        TALLY_CHECK(t, !strcmp(out, cases[i].want), "factor %.17g: \"%s\", want \"%s\"", cases[i].f,
                    out, cases[i].want);
    }
}

int main(void)
{
    struct tally t = { 0, 0 };
    test_ladders(&t);
    test_ladder_text(&t);
    test_refusals(&t);
    test_odd_ladders(&t);
    test_parse_size(&t);
    test_items(&t);
    test_class_for(&t);
    test_counters_mixed(&t);
    test_counters_pages(&t);
    test_counters_underflow(&t);
    test_from_flags(&t);
    test_versions(&t);
    test_flags_for(&t);
    test_factor_text(&t);
    return tally_done("test_slab_model", &t);
}
