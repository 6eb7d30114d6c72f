#include "core/addr.h"

#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

/* HOST:PORT into a sockaddr: IPv4, [IPv6], or a name resolved once, here
 * at start-up (getaddrinfo blocks; the loop is not running yet), so
 * `--upstream memcached:11211` works inside docker compose. */
int addr_parse(const char *text, struct sockaddr_storage *out)
{
    char host[256];
    const char *colon = strrchr(text, ':');
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res = NULL;
    if (!colon || colon == text || strlen(colon + 1) == 0)
        return -1;
    size_t hl = (size_t)(colon - text);
    if (hl >= sizeof host)
        return -1;
    memcpy(host, text, hl);
    host[hl] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 0 || port > 65535)
        return -1;
    memset(out, 0, sizeof *out);
    if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') {
        host[hl - 1] = '\0';
        return uv_ip6_addr(host + 1, (int)port, (struct sockaddr_in6 *)out) ? -1 : 0;
    }
    if (uv_ip4_addr(host, (int)port, (struct sockaddr_in *)out) == 0)
        return 0;
    if (getaddrinfo(host, colon + 1, &hints, &res) || !res)
        return -1;
    memcpy(out, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return 0;
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
    } else {
        snprintf(out, len, "?");
    }
    return out;
}
