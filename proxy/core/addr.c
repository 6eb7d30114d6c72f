#include "core/addr.h"

#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <uv.h>

#define ADDR_WANT "want HOST:PORT, :PORT, [IPv6]:PORT or unix:PATH"

static int addr_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int addr_fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* "0".."65535", digits only */
static int addr_port(const char *p, unsigned *port)
{
    unsigned long v = 0;
    if (!*p || strlen(p) > 5)
        return -1;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        v = v * 10 + (unsigned long)(*p - '0');
    }
    if (v > 65535)
        return -1;
    *port = (unsigned)v;
    return 0;
}

int addr_split(const char *text, struct addr_spec *spec, char *err, size_t errlen)
{
    memset(spec, 0, sizeof *spec);
    if (!*text)
        return addr_fail(err, errlen, "empty address (%s)", ADDR_WANT);
    if (!strncmp(text, "unix:", 5)) {
        const char *path = text + 5;
        if (!*path)
            return addr_fail(err, errlen, "'%s': no path after unix: (unix:/run/memcached.sock)",
                             text);
        if (strlen(path) > ADDR_UNIX_PATH_MAX)
            return addr_fail(err, errlen, "'%s': a unix socket path is at most %d bytes", text,
                             ADDR_UNIX_PATH_MAX);
        spec->kind = ADDR_UNIX;
        memcpy(spec->host, path, strlen(path) + 1);
        return 0;
    }
    const char *colon = strrchr(text, ':');
    if (!colon)
        return addr_fail(err, errlen, "'%s' has no port (%s)", text, ADDR_WANT);
    size_t hl = (size_t)(colon - text);
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (!close)
            return addr_fail(err, errlen, "'%s': '[' without ']' (want [IPv6]:PORT)", text);
        if (close + 1 != colon)
            return addr_fail(err, errlen, "'%s': want ':PORT' right after ']'", text);
        if (close == text + 1)
            return addr_fail(err, errlen, "'%s': no IPv6 address between the brackets", text);
        spec->kind = ADDR_IPV6;
        hl = (size_t)(close - text - 1);
        memcpy(spec->host, text + 1, hl);
    } else if (memchr(text, ':', hl)) {
        return addr_fail(err, errlen, "'%s': an IPv6 address goes in brackets ([::1]:11211)", text);
    } else if (hl > ADDR_HOST_MAX) {
        return addr_fail(err, errlen, "'%s': a host name is at most %d bytes", text, ADDR_HOST_MAX);
    } else {
        spec->kind = hl ? ADDR_INET : ADDR_ANY;
        memcpy(spec->host, text, hl);
    }
    if (addr_port(colon + 1, &spec->port))
        return addr_fail(err, errlen, "'%s': port '%s' is not a number from 0 to 65535", text,
                         colon + 1);
    return 0;
}

bool addr_is_name(const struct addr_spec *spec)
{
    struct sockaddr_in in;
    return spec->kind == ADDR_INET && uv_ip4_addr(spec->host, 0, &in) != 0;
}

void addr_list_add(struct addr_list *out, const struct sockaddr *sa, socklen_t len)
{
    for (size_t i = 0; i < out->n; i++)
        if (!memcmp(&out->a[i], sa, len))
            return;
    if (out->n < ADDR_LIST_MAX) {
        memset(&out->a[out->n], 0, sizeof out->a[out->n]);
        memcpy(&out->a[out->n++], sa, len);
    }
}

void addr_list_from_addrinfo(struct addr_list *out, const struct addrinfo *res)
{
    out->n = 0;
    for (const struct addrinfo *ai = res; ai; ai = ai->ai_next)
        if ((ai->ai_family == AF_INET || ai->ai_family == AF_INET6) &&
            ai->ai_addrlen <= sizeof out->a[0])
            addr_list_add(out, ai->ai_addr, ai->ai_addrlen);
}

int addr_resolve(const char *text, struct addr_list *out, char *err, size_t errlen)
{
    struct addr_spec s;
    struct sockaddr_storage ss;
    memset(out, 0, sizeof *out);
    if (addr_split(text, &s, err, errlen))
        return -1;
    memset(&ss, 0, sizeof ss);
    switch (s.kind) {
    case ADDR_UNIX: {
        struct sockaddr_un *un = (struct sockaddr_un *)&ss;
        un->sun_family = AF_UNIX;
        memcpy(un->sun_path, s.host, strlen(s.host) + 1);
        addr_list_add(out, (struct sockaddr *)un, sizeof *un);
        return 0;
    }
    case ADDR_ANY:
        uv_ip4_addr("0.0.0.0", (int)s.port, (struct sockaddr_in *)&ss);
        addr_list_add(out, (struct sockaddr *)&ss, sizeof(struct sockaddr_in));
        uv_ip6_addr("::", (int)s.port, (struct sockaddr_in6 *)&ss);
        addr_list_add(out, (struct sockaddr *)&ss, sizeof(struct sockaddr_in6));
        return 0;
    case ADDR_IPV6:
        if (uv_ip6_addr(s.host, (int)s.port, (struct sockaddr_in6 *)&ss))
            return addr_fail(err, errlen, "'%s': '%s' is not an IPv6 address", text, s.host);
        addr_list_add(out, (struct sockaddr *)&ss, sizeof(struct sockaddr_in6));
        return 0;
    case ADDR_INET: break;
    }
    if (uv_ip4_addr(s.host, (int)s.port, (struct sockaddr_in *)&ss) == 0) {
        addr_list_add(out, (struct sockaddr *)&ss, sizeof(struct sockaddr_in));
        return 0;
    }
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res = NULL;
    char port[8];
    snprintf(port, sizeof port, "%u", s.port);
    int rc = getaddrinfo(s.host, port, &hints, &res);
    if (rc || !res) {
        char why[160];
        snprintf(why, sizeof why, "%s", rc ? gai_strerror(rc) : "no address");
        snprintf(err, errlen, "'%s': the name '%s' does not resolve (%s)", text, s.host, why);
        return -1;
    }
    addr_list_from_addrinfo(out, res);
    freeaddrinfo(res);
    if (!out->n)
        return addr_fail(err, errlen, "'%s': the name '%s' has no IPv4 or IPv6 address", text,
                         s.host);
    return 0;
}

int addr_parse(const char *text, struct sockaddr_storage *out)
{
    struct addr_list l;
    char err[8];
    if (addr_resolve(text, &l, err, sizeof err))
        return -1;
    *out = l.a[0];
    return 0;
}

socklen_t addr_len(const struct sockaddr *sa)
{
    switch (sa->sa_family) {
    case AF_INET6: return sizeof(struct sockaddr_in6);
    case AF_UNIX: return sizeof(struct sockaddr_un);
    default: return sizeof(struct sockaddr_in);
    }
}

bool addr_is_wildcard(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY);
    if (sa->sa_family == AF_INET6)
        return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)sa)->sin6_addr);
    return false;
}

const char *addr_format(const struct sockaddr *sa, char *out, size_t len)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    if (!sa || !len) {
        if (len)
            snprintf(out, len, "?");
        return out;
    }
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        uv_ip4_name(in, ip, sizeof ip);
        snprintf(out, len, "%s:%u", ip, (unsigned)ntohs(in->sin_port));
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        uv_ip6_name(in6, ip, sizeof ip);
        snprintf(out, len, "[%s]:%u", ip, (unsigned)ntohs(in6->sin6_port));
    } else if (sa->sa_family == AF_UNIX) {
        const struct sockaddr_un *un = (const struct sockaddr_un *)sa;
        snprintf(out, len, "unix:%.*s", (int)sizeof un->sun_path, un->sun_path);
    } else {
        snprintf(out, len, "?");
    }
    return out;
}
