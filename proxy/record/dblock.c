#include "record/dblock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

bool dblock_applies(const char *db)
{
    return db && db[0] && strcmp(db, ":memory:") != 0 && strncmp(db, "file:", 5) != 0;
}

/* src into dst (dstlen bytes), newlines made spaces: one field per line */
static void one_line(char *dst, size_t dstlen, const char *src)
{
    snprintf(dst, dstlen, "%s", src ? src : "");
    for (char *p = dst; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
}

size_t dblock_format(char *out, size_t outlen, long pid, const char *host, int64_t started_s,
                     const char *cmd)
{
    char h[256], c[DBLOCK_TEXT_MAX];
    if (!outlen)
        return 0;
    one_line(h, sizeof h, host);
    one_line(c, sizeof c, cmd);
    int n = snprintf(out, outlen, "pid %ld\nhost %s\nstarted %lld\ncommand %s\n", pid, h,
                     (long long)started_s, c);
    return n < 0 ? 0 : (size_t)n >= outlen ? outlen - 1 : (size_t)n;
}

/* The value of "name " at the start of a line of text, into v (empty when
 * absent). */
static void field(const char *text, const char *name, char *v, size_t vlen)
{
    size_t nl = strlen(name);
    v[0] = '\0';
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, name, nl) || p[nl] != ' ')
            continue;
        const char *e = strchr(p + nl + 1, '\n');
        size_t n = e ? (size_t)(e - (p + nl + 1)) : strlen(p + nl + 1);
        if (n >= vlen)
            n = vlen - 1;
        memcpy(v, p + nl + 1, n);
        v[n] = '\0';
        return;
    }
}

size_t dblock_describe(const char *text, long lock_pid, const char *my_host, char *who,
                       size_t wholen)
{
    char pid[32], host[256], started[32], cmd[DBLOCK_CMD_MAX + 4], when[48] = "";
    if (!wholen)
        return 0;
    field(text ? text : "", "pid", pid, sizeof pid);
    field(text ? text : "", "host", host, sizeof host);
    field(text ? text : "", "started", started, sizeof started);
    field(text ? text : "", "command", cmd, sizeof cmd);
    if (strlen(cmd) > DBLOCK_CMD_MAX)
        strcpy(cmd + DBLOCK_CMD_MAX - 3, "...");
    char *end;
    long long t = strtoll(started, &end, 10);
    struct tm tm;
    time_t tt = (time_t)t;
    if (started[0] && !*end && t > 0 && gmtime_r(&tt, &tm))
        strftime(when, sizeof when, "started %Y-%m-%d %H:%M:%S UTC", &tm);
    if (!pid[0] && lock_pid > 0)
        snprintf(pid, sizeof pid, "%ld", lock_pid);
    bool other_host = host[0] && my_host && strcmp(host, my_host) != 0;
    /* the program: "slabtap proxy" (its first two words when it is
     * slabtap, else its first), "slabtap" when the text has no command */
    char prog[64] = "slabtap";
    if (cmd[0]) {
        size_t w1 = strcspn(cmd, " "), w2 = w1;
        if (!strncmp(cmd, "slabtap ", 8))
            w2 = w1 + 1 + strcspn(cmd + w1 + 1, " ");
        snprintf(prog, sizeof prog, "%.*s", (int)w2, cmd);
    }
    int n = snprintf(who, wholen, "%s%s%s%s%s%s%s%s%s", prog, pid[0] ? " pid " : "", pid,
                     other_host ? " on " : "", other_host ? host : "",
                     when[0] || cmd[0] ? " (" : "", when, when[0] && cmd[0] ? ": " : "", cmd);
    if (n >= 0 && (when[0] || cmd[0]) && (size_t)n + 1 < wholen)
        n += snprintf(who + n, wholen - (size_t)n, ")");
    return n < 0 ? 0 : (size_t)n >= wholen ? wholen - 1 : (size_t)n;
}

/* A process's command line, from /proc/PID/cmdline (pid 0: ours):
 * arguments joined by spaces, the program's folder left out; empty when
 * the system does not tell. */
static void proc_command(long pid, char *out, size_t outlen)
{
    char path[64];
    out[0] = '\0';
    if (pid > 0)
        snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
    else
        snprintf(path, sizeof path, "/proc/self/cmdline");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t got = read(fd, out, outlen - 1);
    close(fd);
    if (got <= 0)
        return;
    out[got] = '\0';
    while (got > 0 && out[got - 1] == '\0')
        got--;
    for (ssize_t i = 0; i < got; i++)
        if (out[i] == '\0' || out[i] == '\n')
            out[i] = ' ';
    out[got] = '\0';
    char *space = strchr(out, ' '), *slash = NULL;
    for (char *p = out; *p && (!space || p < space); p++)
        if (*p == '/')
            slash = p;
    if (slash)
        memmove(out, slash + 1, strlen(slash + 1) + 1);
}

void dblock_process(long pid, char *out, size_t outlen)
{
    char cmd[DBLOCK_CMD_MAX + 4];
    proc_command(pid, cmd, sizeof cmd);
    if (strlen(cmd) > DBLOCK_CMD_MAX)
        strcpy(cmd + DBLOCK_CMD_MAX - 3, "...");
    snprintf(out, outlen, "pid %ld%s%s%s", pid, cmd[0] ? " (" : "", cmd, cmd[0] ? ")" : "");
}

static void my_host(char *out, size_t outlen)
{
    if (gethostname(out, outlen - 1))
        snprintf(out, outlen, "?");
    out[outlen - 1] = '\0';
}

/* The holder of the lock on fd (F_GETLK: nothing taken): its pid, 0 when
 * nobody holds it. */
static long lock_holder_pid(int fd)
{
    struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
    if (fcntl(fd, F_GETLK, &fl) != 0 || fl.l_type == F_UNLCK)
        return 0;
    return fl.l_pid > 0 ? (long)fl.l_pid : -1;
}

static void describe_fd(int fd, long pid, char *who, size_t wholen)
{
    char text[DBLOCK_TEXT_MAX + 1], host[256];
    ssize_t got = pread(fd, text, DBLOCK_TEXT_MAX, 0);
    text[got > 0 ? got : 0] = '\0';
    my_host(host, sizeof host);
    dblock_describe(text, pid, host, who, wholen);
}

bool dblock_holder(const char *db, char *who, size_t wholen)
{
    char path[1040];
    if (!dblock_applies(db))
        return false;
    snprintf(path, sizeof path, "%s%s", db, DBLOCK_SUFFIX);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    long pid = lock_holder_pid(fd);
    if (pid)
        describe_fd(fd, pid, who, wholen);
    close(fd);
    return pid != 0;
}

/* The folder db is in: "." when it names none. */
static void folder_of(const char *db, char *out, size_t outlen)
{
    const char *slash = strrchr(db, '/');
    if (!slash)
        snprintf(out, outlen, ".");
    else if (slash == db)
        snprintf(out, outlen, "/");
    else
        snprintf(out, outlen, "%.*s", (int)(slash - db), db);
}

int dblock_take(struct dblock *l, const char *db, char *err, size_t errlen)
{
    l->fd = -1;
    l->path[0] = '\0';
    if (!dblock_applies(db))
        return 0;
    char path[sizeof l->path];
    if ((size_t)snprintf(path, sizeof path, "%s%s", db, DBLOCK_SUFFIX) >= sizeof path) {
        snprintf(err, errlen, "%s: the path is too long", db);
        return -1;
    }
    for (int tries = 0; tries < 8; tries++) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) {
            int e = errno;
            char dir[1040];
            struct stat st;
            folder_of(db, dir, sizeof dir);
            if (e == ENOENT && stat(dir, &st) != 0)
                snprintf(err, errlen, "%s: the directory %s does not exist (create it first)", db,
                         dir);
            else if (e == ENOTDIR || (e == ENOENT && !S_ISDIR(st.st_mode)))
                snprintf(err, errlen, "%s: %s is not a directory", db, dir);
            else
                snprintf(err, errlen, "%s: cannot make its lock file %s: %s", db, path,
                         strerror(e));
            return -1;
        }
        struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
        if (fcntl(fd, F_SETLK, &fl) != 0) {
            int e = errno;
            char who[DBLOCK_TEXT_MAX];
            if (e == EACCES || e == EAGAIN) {
                describe_fd(fd, lock_holder_pid(fd), who, sizeof who);
                snprintf(err, errlen, "%s is being recorded by %s; use another --db", db, who);
            } else {
                snprintf(err, errlen, "%s: cannot lock %s: %s", db, path, strerror(e));
            }
            close(fd);
            return -1;
        }
        /* the file locked is still the one at the path (not removed by a
         * holder that was closing meanwhile) */
        struct stat a, b;
        if (fstat(fd, &a) != 0 || stat(path, &b) != 0 || a.st_dev != b.st_dev ||
            a.st_ino != b.st_ino) {
            close(fd);
            continue;
        }
        char text[DBLOCK_TEXT_MAX], host[256], cmd[DBLOCK_TEXT_MAX / 2];
        my_host(host, sizeof host);
        proc_command(0, cmd, sizeof cmd);
        size_t n = dblock_format(text, sizeof text, (long)getpid(), host, (int64_t)time(NULL), cmd);
        if (ftruncate(fd, 0) != 0 || pwrite(fd, text, n, 0) != (ssize_t)n) {
            /* the lock holds without its text: readers name the pid alone */
        }
        l->fd = fd;
        snprintf(l->path, sizeof l->path, "%s", path);
        return 0;
    }
    snprintf(err, errlen, "%s: its lock file %s keeps being replaced", db, path);
    return -1;
}

void dblock_release(struct dblock *l)
{
    if (!l->path[0] || l->fd < 0) /* a zeroed struct holds nothing either */
        return;
    unlink(l->path); /* while locked: a taker that opened it sees another inode */
    close(l->fd);
    l->fd = -1;
    l->path[0] = '\0';
}
