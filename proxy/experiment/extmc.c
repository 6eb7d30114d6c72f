/* extmc: stats of someone else's memcached, blocking and bounded. */
#include "experiment/extmc.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "core/addr.h"

/* Reads until the answer holds `ends` lines "END\r\n"; 0 or -1. */
static int extmc_read(int fd, char *buf, size_t cap, size_t *len, int ends)
{
    *len = 0;
    for (;;) {
        int seen = 0;
        for (const char *p = buf; (p = strstr(p, "END\r\n")); p += 5)
            seen++;
        if (seen >= ends)
            return 0;
        if (*len + 1 >= cap)
            return -1;
        ssize_t n = read(fd, buf + *len, cap - 1 - *len);
        if (n <= 0)
            return -1;
        *len += (size_t)n;
        buf[*len] = '\0';
    }
}

int extmc_fetch(const char *hostport, struct mcflags_stats *settings, struct mcflags_stats *stats,
                char *err, size_t errlen)
{
    struct sockaddr_storage a;
    struct timeval tv = { EXTMC_TIMEOUT_MS / 1000, (EXTMC_TIMEOUT_MS % 1000) * 1000 };
    char *buf = NULL;
    size_t len;
    int fd = -1, rc = -1;
    settings->n = stats->n = 0;
    struct addr_list l;
    if (addr_resolve(hostport, &l, err, errlen))
        return -1;
    a = l.a[0];
    if ((fd = socket(a.ss_family, SOCK_STREAM, 0)) < 0) {
        snprintf(err, errlen, "%s: socket: %s", hostport, strerror(errno));
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    socklen_t alen = addr_len((const struct sockaddr *)&a);
    if (connect(fd, (struct sockaddr *)&a, alen)) {
        snprintf(err, errlen, "%s: no memcached answers there: %s", hostport, strerror(errno));
        goto out;
    }
    if (!(buf = malloc(EXTMC_ANSWER_MAX))) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    buf[0] = '\0';
    static const char req[] = "stats settings\r\n";
    if (write(fd, req, sizeof req - 1) != (ssize_t)(sizeof req - 1) ||
        extmc_read(fd, buf, EXTMC_ANSWER_MAX, &len, 1)) {
        snprintf(err, errlen, "%s: no answer to `stats settings` within %d ms", hostport,
                 EXTMC_TIMEOUT_MS);
        goto out;
    }
    mcflags_stats_parse(settings, buf, len);
    buf[0] = '\0';
    static const char req2[] = "stats\r\n";
    if (write(fd, req2, sizeof req2 - 1) != (ssize_t)(sizeof req2 - 1) ||
        extmc_read(fd, buf, EXTMC_ANSWER_MAX, &len, 1)) {
        snprintf(err, errlen, "%s: no answer to `stats` within %d ms", hostport, EXTMC_TIMEOUT_MS);
        goto out;
    }
    mcflags_stats_parse(stats, buf, len);
    if (!settings->n || !stats->n) {
        snprintf(err, errlen, "%s: does not answer like memcached", hostport);
        goto out;
    }
    rc = 0;
out:
    free(buf);
    if (fd >= 0)
        close(fd);
    return rc;
}
