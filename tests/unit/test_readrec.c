/* test_readrec: the keys of a get-family request line as readrec_split
 * finds them in the parser's kept line (server/readrec.h): the command
 * and gat's exptime skipped, runs of spaces, a leading space, keys joined
 * by '|' in the order found. */
#include <stdio.h>
#include <string.h>

#include "protocol/mc_parse.h"
#include "server/readrec.h"

#include "check.h"

struct joined {
    char buf[256];
    size_t len;
};

static void join(void *ud, const char *key, size_t len)
{
    struct joined *j = ud;
    if (j->len)
        j->buf[j->len++] = '|';
    memcpy(j->buf + j->len, key, len);
    j->len += len;
    j->buf[j->len] = '\0';
}

int main(void)
{
    static const struct {
        const char *line;
        enum mc_cmd cmd;
        size_t n;
        const char *keys;
    } cases[] = {
        { "get a", MC_CMD_GET, 1, "a" },
        { "get a b c", MC_CMD_GET, 3, "a|b|c" },
        { "gets  k:1 k:2 ", MC_CMD_GETS, 2, "k:1|k:2" },
        { " get x y", MC_CMD_GET, 2, "x|y" },
        { "gat 100 a b", MC_CMD_GAT, 2, "a|b" },
        { "gats -1 a", MC_CMD_GATS, 1, "a" },
        { "gat 100", MC_CMD_GAT, 0, "" },
        { "get", MC_CMD_GET, 0, "" },
        { "get a a a", MC_CMD_GET, 3, "a|a|a" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct joined j = { .len = 0 };
        j.buf[0] = '\0';
        size_t n = readrec_split(cases[i].line, strlen(cases[i].line), cases[i].cmd, join, &j);
        CHECK(n == cases[i].n, "'%s': %zu keys, want %zu", cases[i].line, n, cases[i].n);
        CHECK(!strcmp(j.buf, cases[i].keys), "'%s': keys '%s', want '%s'", cases[i].line, j.buf,
              cases[i].keys);
        CHECK_INT(readrec_split(cases[i].line, strlen(cases[i].line), cases[i].cmd, NULL, NULL),
                  (long long)cases[i].n);
    }
    return check_done("test_readrec");
}
