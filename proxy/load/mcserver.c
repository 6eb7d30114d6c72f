/* mcserver: start, wait for and stop a memcached of our own. The waits are
 * blocking on purpose: they happen before the proxy's loop has anything to
 * serve, or after it has stopped. */
#include "load/mcserver.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/log.h"
#include "model/slab_model.h"

extern char **environ;

/* memcached binds port 0 itself (-p -1) and writes "TCP INET: PORT" to
 * $MEMCACHED_PORT_FILENAME once it listens (the file appears by rename, so
 * it is whole when seen); docker publishes on a port the kernel picks
 * (-p 127.0.0.1::11211) and `docker port` says which. No port is chosen
 * by binding and closing: nothing can take it between us and memcached. */
static int port_from_file(const char *path)
{
    char line[128];
    int port = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "TCP INET: ");
        if (p) {
            port = atoi(p + 10);
            break;
        }
    }
    fclose(f);
    return port > 0 && port < 65536 ? port : 0;
}

static int port_from_docker(const char *container)
{
    char cmd[160], line[128];
    int port = 0;
    snprintf(cmd, sizeof cmd, "docker port %s 11211/tcp 2>/dev/null", container);
    FILE *p = popen(cmd, "r");
    if (!p)
        return 0;
    while (fgets(line, sizeof line, p)) { /* "127.0.0.1:49153" */
        const char *colon = strrchr(line, ':');
        if (colon && !port)
            port = atoi(colon + 1);
    }
    pclose(p);
    return port > 0 && port < 65536 ? port : 0;
}

static int connect_port(int port, int timeout_ms)
{
    struct sockaddr_in a = { .sin_family = AF_INET,
                             .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&a, sizeof a)) {
        close(fd);
        return -1;
    }
    return fd;
}

static bool answers_version(int port)
{
    char buf[128];
    int fd = connect_port(port, 500);
    bool ok = false;
    if (fd < 0)
        return false;
    if (write(fd, "version\r\n", 9) == 9) {
        ssize_t n = read(fd, buf, sizeof buf - 1);
        ok = n > 8 && !memcmp(buf, "VERSION ", 8);
    }
    close(fd);
    return ok;
}

static void on_exit_cb(uv_process_t *p, int64_t status, int sig)
{
    struct mcserver *m = p->data;
    m->exited = true;
    m->exit_status = status;
    m->term_signal = sig;
}

static void on_close_cb(uv_handle_t *h)
{
    struct mcserver *m = h->data;
    m->closed = true;
}

/* Splits args on blanks into argv[from..]; returns the new count or -1. */
static int split_args(char *args, char **argv, int from)
{
    int n = from;
    for (char *tok = strtok(args, " \t"); tok; tok = strtok(NULL, " \t")) {
        if (n >= MCSERVER_ARGS_MAX - 12)
            return -1;
        argv[n++] = tok;
    }
    return n;
}

static int build_argv(struct mcserver *m, const char *binary, bool docker, const char *image,
                      char *args, char **argv, char *port, char *publish)
{
    static unsigned containers;
    int n = 0;
    snprintf(port, 16, "-1"); /* memcached binds port 0 and says which it got */
    if (docker) {
        snprintf(m->container, sizeof m->container, "slabtap-mc-%d-%u", (int)getpid(),
                 ++containers);
        snprintf(publish, 64, "127.0.0.1::11211");
        argv[n++] = "docker";
        argv[n++] = "run";
        argv[n++] = "--rm";
        argv[n++] = "--name";
        argv[n++] = m->container;
        argv[n++] = "-p";
        argv[n++] = publish;
        argv[n++] = (char *)image;
        argv[n++] = "memcached";
        if ((n = split_args(args, argv, n)) < 0)
            return -1;
    } else {
        argv[n++] = (char *)(binary ? binary : "memcached");
        if ((n = split_args(args, argv, n)) < 0)
            return -1;
        argv[n++] = "-p";
        argv[n++] = port;
        argv[n++] = "-l";
        argv[n++] = "127.0.0.1";
        argv[n++] = "-U";
        argv[n++] = "0";
        if (geteuid() == 0) { /* memcached refuses to run as root without -u */
            argv[n++] = "-u";
            argv[n++] = "root";
        }
    }
    argv[n] = NULL;
    return n;
}

/* The command line for run metadata and the runner's "== run" line, with
 * the port memcached bound in place of the -1 asked (an equivalent
 * command line to start it again). */
static void argv_text_set(struct mcserver *m, char **argv, char *port, char *publish)
{
    size_t len = 0;
    if (m->docker)
        snprintf(publish, 64, "127.0.0.1:%d:11211", m->port);
    else
        snprintf(port, 16, "%d", m->port);
    m->argv_text[0] = '\0';
    for (int i = 0; argv[i] && len < sizeof m->argv_text; i++)
        len += (size_t)snprintf(m->argv_text + len, sizeof m->argv_text - len, "%s%s", i ? " " : "",
                                argv[i]);
}

/* The environment memcached is started with: ours plus
 * MEMCACHED_PORT_FILENAME=path (NULL when out of memory). */
static char **env_with_port_file(const char *path, char *entry, size_t entrylen)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 2, sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "MEMCACHED_PORT_FILENAME=", 24))
            env[k++] = environ[i];
    snprintf(entry, entrylen, "MEMCACHED_PORT_FILENAME=%s", path);
    env[k] = entry;
    return env;
}

static int mcserver_start_once(struct mcserver *m, uv_loop_t *loop, const char *binary, bool docker,
                               const char *image, const char *args, char *err, size_t errlen)
{
    static unsigned started;
    char *argv[MCSERVER_ARGS_MAX], port[16], publish[64], portfile[128], entry[160];
    char *copy = strdup(args ? args : "");
    char **env = NULL;
    uv_process_options_t opt = { 0 };
    uv_stdio_container_t stdio[3];
    int rc = -1;

    memset(m, 0, sizeof *m);
    m->loop = loop;
    m->docker = docker;
    const char *tmp = getenv("TMPDIR");
    snprintf(portfile, sizeof portfile, "%s/slabtap-mc-%d-%u.port", tmp && *tmp ? tmp : "/tmp",
             (int)getpid(), ++started);
    unlink(portfile);
    if (!docker && !(env = env_with_port_file(portfile, entry, sizeof entry))) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (!copy || build_argv(m, binary, docker, image, copy, argv, port, publish) < 0) {
        snprintf(err, errlen, "cannot prepare memcached's command line (too many arguments?)");
        goto out;
    }
    stdio[0].flags = UV_IGNORE;
    stdio[1].flags = UV_INHERIT_FD;
    stdio[1].data.fd = 2; /* memcached's own messages go to our stderr */
    stdio[2].flags = UV_INHERIT_FD;
    stdio[2].data.fd = 2;
    opt.file = argv[0];
    opt.args = argv;
    opt.env = env; /* NULL (docker): ours */
    opt.exit_cb = on_exit_cb;
    opt.stdio = stdio;
    opt.stdio_count = 3;
    m->proc.data = m;
    int e = uv_spawn(loop, &m->proc, &opt);
    if (e) {
        snprintf(err, errlen, "cannot start %s: %s", argv[0], uv_strerror(e));
        /* the handle is initialised even when the spawn fails: close it, or
         * the loop stays busy and cannot be closed */
        uv_close((uv_handle_t *)&m->proc, on_close_cb);
        while (!m->closed)
            uv_run(loop, UV_RUN_ONCE);
        goto out;
    }
    m->spawned = true;
    for (int waited = 0; waited < MCSERVER_READY_MS; waited += 20) {
        uv_run(loop, UV_RUN_NOWAIT);
        if (m->exited) {
            snprintf(err, errlen, "%s exited with status %lld before answering (flags: %s)",
                     argv[0], (long long)m->exit_status, args ? args : "");
            goto out;
        }
        if (!m->port)
            m->port = docker ? port_from_docker(m->container) : port_from_file(portfile);
        if (m->port && answers_version(m->port)) {
            argv_text_set(m, argv, port, publish);
            rc = 0;
            goto out;
        }
        usleep(20 * 1000);
    }
    snprintf(err, errlen, "%s did not answer within %d ms (port %s)", argv[0], MCSERVER_READY_MS,
             m->port ? "known" : "never reported");
out:
    if (rc && m->spawned)
        mcserver_stop(m);
    if (!docker)
        unlink(portfile);
    free(env);
    free(copy);
    return rc;
}

int mcserver_version(const char *binary, bool docker, const char *image, char *out, size_t len,
                     char *err, size_t errlen)
{
    char *argv[8], buf[256];
    int fds[2], n = 0, status = 0;
    size_t got = 0;
    pid_t pid;
    posix_spawn_file_actions_t fa;
    if (docker) {
        argv[n++] = "docker";
        argv[n++] = "run";
        argv[n++] = "--rm";
        argv[n++] = (char *)image;
        argv[n++] = "memcached";
    } else {
        argv[n++] = (char *)(binary ? binary : "memcached");
    }
    argv[n++] = "-V";
    argv[n] = NULL;
    if (pipe(fds)) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        return -1;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    int e = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (e) {
        close(fds[0]);
        snprintf(err, errlen, "cannot run %s -V: %s", argv[0], strerror(e));
        return -1;
    }
    for (int waited = 0; got + 1 < sizeof buf && waited < MCSERVER_READY_MS;) {
        struct pollfd p = { .fd = fds[0], .events = POLLIN };
        int r = poll(&p, 1, 100);
        if (r == 0) {
            waited += 100;
            continue;
        }
        ssize_t k = r > 0 ? read(fds[0], buf + got, sizeof buf - 1 - got) : -1;
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    close(fds[0]);
    if (waitpid(pid, &status, WNOHANG) == 0) { /* still running: not a memcached -V */
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    buf[got] = '\0';
    /* "memcached 1.6.18\n" */
    char *v = strstr(buf, "memcached ");
    if (!v || slab_version_at_least(v, 0, 0, 0) < 0) {
        snprintf(err, errlen, "%s -V printed no memcached version (\"%.60s\")", argv[0], buf);
        return -1;
    }
    v += 10;
    v[strcspn(v, " \r\n")] = '\0';
    snprintf(out, len, "%s", v);
    return 0;
}

bool mcserver_chunk_max_unit_suspect(const char *version, const char *args, char *msg,
                                     size_t msglen)
{
    const char *p = args ? strstr(args, "slab_chunk_max=") : NULL;
    char *end;
    if (!p)
        return false;
    unsigned long v = strtoul(p + 15, &end, 10);
    if (end == p + 15 || v == 0)
        return false;
    if (slab_chunk_max_in_kb(version) && v > 1024) {
        snprintf(msg, msglen,
                 "memcached %s takes -o slab_chunk_max in kilobytes (since 1.6.24): %lu looks "
                 "like bytes (slab_chunk_max=%lu)",
                 version, v, v / 1024);
        return true;
    }
    if (!slab_chunk_max_in_kb(version) && v <= 1024) {
        snprintf(msg, msglen,
                 "memcached %s takes -o slab_chunk_max in BYTES (kilobytes only from 1.6.24): "
                 "%lu is %lu bytes, did you mean slab_chunk_max=%lu?",
                 version ? version : "(version unknown)", v, v, v * 1024);
        return true;
    }
    return false;
}

int mcserver_start(struct mcserver *m, uv_loop_t *loop, const char *binary, bool docker,
                   const char *image, const char *args, char *err, size_t errlen)
{
    char version[64], msg[256];
    if (args && strstr(args, "slab_chunk_max=") &&
        mcserver_version(binary, docker, image, version, sizeof version, msg, sizeof msg) == 0 &&
        mcserver_chunk_max_unit_suspect(version, args, msg, sizeof msg))
        log_warn("%s", msg);
    return mcserver_start_once(m, loop, binary, docker, image, args, err, errlen);
}

void mcserver_stop(struct mcserver *m)
{
    if (!m->spawned)
        return;
    if (!m->exited)
        uv_process_kill(&m->proc, SIGTERM);
    for (int waited = 0; !m->exited && waited < MCSERVER_STOP_MS; waited += 10) {
        uv_run(m->loop, UV_RUN_NOWAIT);
        if (!m->exited)
            usleep(10 * 1000);
    }
    if (!m->exited) {
        uv_process_kill(&m->proc, SIGKILL);
        while (!m->exited)
            uv_run(m->loop, UV_RUN_ONCE);
    }
    if (m->docker && m->container[0]) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "docker rm -f %s >/dev/null 2>&1", m->container);
        /* -f: gone already (or never created) is fine */
        if (system(cmd) == -1)
            log_warn("could not run docker rm for %s", m->container);
    }
    uv_close((uv_handle_t *)&m->proc, on_close_cb);
    while (!m->closed)
        uv_run(m->loop, UV_RUN_ONCE);
    m->spawned = false;
}

int mcserver_stats(int port, struct stats_sample *s, char *err, size_t errlen)
{
    struct stats_parse_batch *b = malloc(sizeof *b);
    char cmd[STATS_BATCH_CMD_MAX], buf[16384];
    int rc = -1, fd = connect_port(port, 5000);
    if (!b || fd < 0) {
        snprintf(err, errlen, "cannot connect to 127.0.0.1:%d", port);
        goto out;
    }
    size_t len = stats_parse_batch_command(STATS_R_ALL, cmd, sizeof cmd);
    stats_parse_batch_begin(b, s, STATS_R_ALL);
    if (write(fd, cmd, len) != (ssize_t)len) {
        snprintf(err, errlen, "write to memcached failed: %s", strerror(errno));
        goto out;
    }
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        size_t used;
        if (n <= 0) {
            snprintf(err, errlen, "memcached closed or timed out during stats");
            goto out;
        }
        enum stats_parse_result r = stats_parse_batch_feed(b, buf, (size_t)n, &used);
        if (r == STATS_PARSE_OK) {
            rc = 0;
            break;
        }
        if (r != STATS_PARSE_NEED_MORE) {
            snprintf(err, errlen, "bad stats reply: %s", stats_parse_error_str(b->error));
            break;
        }
    }
out:
    if (fd >= 0)
        close(fd);
    free(b);
    return rc;
}
