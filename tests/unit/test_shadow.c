/* test_shadow: the pure parts of server/shadow.h -- a --shadow value into
 * its spec (flags, "1/N " sample, flags slabtap sets itself refused), the
 * classification of a shadow's one-line answers, and a shadow's memory
 * with the too-small rule (the message the proxy exits with). */
#include <stdio.h>
#include <string.h>

#include "server/shadow.h"

#include "check.h"

static void test_spec_parse(void)
{
    struct shadow_spec s;
    char err[512];
    CHECK_INT(shadow_spec_parse(&s, "-f 1.08", err, sizeof err), 0);
    CHECK_STR(s.flags, "-f 1.08");
    CHECK_STR(s.text, "-f 1.08");
    CHECK_INT(s.sample, 1);
    CHECK_INT(s.kind, SHADOW_STARTED);

    CHECK_INT(shadow_spec_parse(&s, "  1/64 -f 1.08 -o slab_automove=2 ", err, sizeof err), 0);
    CHECK_STR(s.flags, "-f 1.08 -o slab_automove=2");
    CHECK_STR(s.text, "1/64 -f 1.08 -o slab_automove=2");
    CHECK_INT(s.sample, 64);

    CHECK_INT(shadow_spec_parse(&s, "1/4", err, sizeof err), 0);
    CHECK_STR(s.flags, "");
    CHECK_INT(s.sample, 4);

    CHECK_INT(shadow_spec_parse(&s, "", err, sizeof err), 0); /* memcached's defaults */
    CHECK_STR(s.flags, "");

    static const char *const bad[] = {
        "1/0 -f 1.08", "1/x -f 1.08",        "1/4-f 1.08", "f 1.08", "-s /tmp/x",
        "-p 11211",    "-f 1.08 -l 0.0.0.0", "--port=1",   "-d"
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        CHECK(shadow_spec_parse(&s, bad[i], err, sizeof err) == -1, "'%s' accepted", bad[i]);
        CHECK(strstr(err, "--shadow") != NULL, "'%s': no reason (%s)", bad[i], err);
    }
    /* -m and -t are the operator's: kept */
    CHECK_INT(shadow_spec_parse(&s, "-m 32 -t 2", err, sizeof err), 0);
}

static void test_classify(void)
{
    static const struct {
        const char *line;
        enum shadow_answer a;
    } cases[] = {
        { "HD", SHADOW_A_HIT },
        { "HD kfoo", SHADOW_A_HIT },
        { "EN", SHADOW_A_MISS },
        { "EN kfoo b", SHADOW_A_MISS },
        { "NS", SHADOW_A_NOT_STORED },
        { "EX", SHADOW_A_NOT_STORED },
        { "NF", SHADOW_A_NOT_STORED },
        { "OK", SHADOW_A_HIT },
        { "ERROR", SHADOW_A_ERROR },
        { "CLIENT_ERROR bad data chunk", SHADOW_A_ERROR },
        { "SERVER_ERROR out of memory storing object", SHADOW_A_ERROR },
        { "HDX", SHADOW_A_OTHER },
        { "", SHADOW_A_OTHER },
        { "VA 5", SHADOW_A_OTHER },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(shadow_answer_classify(cases[i].line, strlen(cases[i].line)) == cases[i].a,
              "'%s' classified %d, want %d", cases[i].line,
              (int)shadow_answer_classify(cases[i].line, strlen(cases[i].line)), (int)cases[i].a);
}

static void test_memory(void)
{
    struct shadow_spec s;
    char err[512];
    uint64_t mb = 0;
    shadow_spec_parse(&s, "-f 1.08", err, sizeof err);
    CHECK_INT(shadow_memory(&s, 64, 12, &mb, err, sizeof err), 0);
    CHECK_INT(mb, 64);
    shadow_spec_parse(&s, "-m 32 -f 1.08", err, sizeof err);
    CHECK_INT(shadow_memory(&s, 64, 12, &mb, err, sizeof err), 0);
    CHECK_INT(mb, 32);
    shadow_spec_parse(&s, "1/4 -f 1.08", err, sizeof err);
    CHECK_INT(shadow_memory(&s, 64, 8, &mb, err, sizeof err), 0);
    CHECK_INT(mb, 16);
    shadow_spec_parse(&s, "1/3 -m100", err, sizeof err);
    CHECK_INT(shadow_memory(&s, 64, 0, &mb, err, sizeof err), 0);
    CHECK_INT(mb, 34); /* ceil(100/3) */
    /* 1/100 of 64 MB: 1 page for 12 classes (24 needed): refused, with the
     * largest sample that fits (64/24 -> 1/2) */
    shadow_spec_parse(&s, "1/100 -f 1.08", err, sizeof err);
    CHECK_INT(shadow_memory(&s, 64, 12, &mb, err, sizeof err), -1);
    CHECK_INT(mb, 1);
    CHECK(strstr(err, "--shadow '1/100 -f 1.08': 1/100 of 64 MB is 1 page for 12 slab classes") ==
              err,
          "message: %s", err);
    CHECK(strstr(err, "at most 1/2") != NULL, "message: %s", err);
    /* never fewer than SHADOW_MIN_PAGES, even with no class in use */
    shadow_spec_parse(&s, "1/16", err, sizeof err);
    CHECK_INT(shadow_memory(&s, 64, 0, &mb, err, sizeof err), -1);
    CHECK_INT(mb, 4);
    CHECK(strstr(err, "at most 1/8") != NULL, "message: %s", err);
    shadow_spec_parse(&s, "1/8", err, sizeof err);
    CHECK_INT(shadow_memory(&s, 64, 0, &mb, err, sizeof err), 0);
    /* nothing fits */
    shadow_spec_parse(&s, "1/2 -m 8", err, sizeof err);
    CHECK_INT(shadow_memory(&s, 64, 20, &mb, err, sizeof err), -1);
    CHECK(strstr(err, "more memory") != NULL, "message: %s", err);
}

int main(void)
{
    test_spec_parse();
    test_classify();
    test_memory();
    return check_done("test_shadow");
}
