/* test_dblock: the one-writer lock file beside a SQLite database
 * (record/dblock.h) -- its text byte for byte (dblock_format), the holder's
 * description from whole, cut and empty texts (dblock_describe), and the
 * lock itself between two processes: the second taker is refused with the
 * first's pid, a reader learns the holder without taking anything, the
 * lock dies with its process, and a missing folder is said so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record/dblock.h"

#include "check.h"

static void test_format(void)
{
    char out[256];
    size_t n = dblock_format(out, sizeof out, 1234, "vm", 1796184245,
                             "slabtap proxy --listen 127.0.0.1:11311 --db runs.db");
    const char *want = "pid 1234\nhost vm\nstarted 1796184245\n"
                       "command slabtap proxy --listen 127.0.0.1:11311 --db runs.db\n";
    CHECK_MEM(out, n, want, strlen(want), "whole");
    /* a newline in a field cannot start a field of its own */
    n = dblock_format(out, sizeof out, 7, "a\nb", 0, "x\npid 9");
    want = "pid 7\nhost a b\nstarted 0\ncommand x pid 9\n";
    CHECK_MEM(out, n, want, strlen(want), "newlines");
    /* cut at the buffer */
    n = dblock_format(out, 12, 1234, "vm", 0, "c");
    CHECK_MEM(out, n, "pid 1234\nho", 11, "cut");
}

static void test_describe(void)
{
    static const struct {
        const char *text;
        long lock_pid;
        const char *host, *want;
    } cases[] = {
        { "pid 1234\nhost vm\nstarted 1796184245\ncommand slabtap proxy --listen 127.0.0.1:11311\n",
          1234, "vm",
          "slabtap proxy pid 1234 (started 2026-12-02 04:04:05 UTC: slabtap proxy --listen "
          "127.0.0.1:11311)" },
        /* another host is named */
        { "pid 1234\nhost db1\nstarted 1796184245\ncommand slabtap proxy\n", 0, "vm",
          "slabtap proxy pid 1234 on db1 (started 2026-12-02 04:04:05 UTC: slabtap proxy)" },
        /* an empty file (the holder has not written it yet): the lock's pid */
        { "", 99, "vm", "slabtap pid 99" },
        /* cut short in the start time: what is whole is used */
        { "pid 5\nhost vm\nstart", 5, "vm", "slabtap pid 5" },
        { "pid 5\nhost vm\nstarted x\ncommand python3 hold.py\n", 5, "vm",
          "python3 pid 5 (python3 hold.py)" },
        { "", 0, "vm", "slabtap" },
        { "command slabtap experiment --db x.db\n", 0, "vm",
          "slabtap experiment (slabtap experiment --db x.db)" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char who[512];
        size_t n =
            dblock_describe(cases[i].text, cases[i].lock_pid, cases[i].host, who, sizeof who);
        CHECK_STR(who, cases[i].want);
        CHECK_INT(n, strlen(cases[i].want));
    }
    char small[8];
    CHECK_INT(dblock_describe("pid 123456\n", 0, "vm", small, sizeof small), 7);
    CHECK_STR(small, "slabtap");
}

static void test_two_processes(void)
{
    char dir[] = "/tmp/test_dblock.XXXXXX", db[128], err[1024], who[512], want[512];
    struct dblock l;
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp");
        return;
    }
    snprintf(db, sizeof db, "%s/runs.db", dir);
    CHECK_TRUE(!dblock_holder(db, who, sizeof who));
    int to_child[2], to_parent[2];
    if (pipe(to_child) || pipe(to_parent)) {
        CHECK(0, "pipe");
        return;
    }
    pid_t child = fork();
    if (child == 0) {
        char c = 'x';
        struct dblock cl;
        close(to_child[1]);
        close(to_parent[0]);
        if (dblock_take(&cl, db, err, sizeof err))
            c = 'e';
        if (write(to_parent[1], &c, 1) != 1 || read(to_child[0], &c, 1) < 0)
            _exit(2);
        _exit(0); /* the lock dies with the process */
    }
    close(to_child[0]);
    close(to_parent[1]);
    char c = 0;
    CHECK_INT(read(to_parent[0], &c, 1), 1);
    CHECK_INT(c, 'x');
    CHECK_INT(dblock_take(&l, db, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s is being recorded by test_dblock pid %ld (started ", db,
             (long)child);
    CHECK(strstr(err, want) != NULL, "refused: %s (want %s)", err, want);
    CHECK(strstr(err, "; use another --db") != NULL, "%s", err);
    CHECK_TRUE(dblock_holder(db, who, sizeof who));
    snprintf(want, sizeof want, "pid %ld (", (long)child);
    CHECK(strstr(who, want) != NULL, "holder: %s", who);
    CHECK_INT(write(to_child[1], "q", 1), 1);
    int status = 0;
    waitpid(child, &status, 0);
    CHECK_INT(WEXITSTATUS(status), 0);
    /* the file stays (the child exited without releasing): nobody holds it */
    CHECK_TRUE(!dblock_holder(db, who, sizeof who));
    CHECK_INT(dblock_take(&l, db, err, sizeof err), 0);
    char lockpath[160];
    snprintf(lockpath, sizeof lockpath, "%s.lock", db);
    struct stat st;
    CHECK_INT(stat(lockpath, &st), 0);
    dblock_release(&l);
    CHECK_INT(stat(lockpath, &st), -1);
    dblock_release(&l); /* twice: nothing */
    close(to_child[1]);
    close(to_parent[0]);
    /* a folder that does not exist */
    snprintf(db, sizeof db, "%s/nosuch/runs.db", dir);
    CHECK_INT(dblock_take(&l, db, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: the directory %s/nosuch does not exist", db, dir);
    CHECK(strstr(err, want) == err, "missing folder: %s", err);
    /* no lock file for what is not a file */
    CHECK_INT(dblock_take(&l, ":memory:", err, sizeof err), 0);
    CHECK_INT(l.fd, -1);
    rmdir(dir);
}

int main(void)
{
    test_format();
    test_describe();
    test_two_processes();
    return check_done("test_dblock");
}
