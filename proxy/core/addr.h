/* addr: network addresses as operators type them -- HOST:PORT (an IPv4
 * address or a name), :PORT (every address), [IPv6]:PORT, unix:PATH -- and
 * back to text for logs.
 *
 * Owns the one parser every subcommand uses for --listen, --upstream,
 * --http, --target and --memcached: addr_split (pure: the text into its
 * parts, every mistake named) and addr_resolve (the parts into every
 * address they mean). Must never be called on the event loop once it
 * runs: a name is resolved with getaddrinfo, which blocks. Never opens a
 * socket. */
#ifndef SLABTAP_CORE_ADDR_H
#define SLABTAP_CORE_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

/* "unix:" and a 107-byte path, or "[ffff:...:ffff]:65535", with room */
#define ADDR_TEXT_MAX 120
/* the longest unix socket path (sun_path less its NUL) */
#define ADDR_UNIX_PATH_MAX 107
#define ADDR_HOST_MAX 255
/* addresses kept of a name that resolves to more */
#define ADDR_LIST_MAX 8

enum addr_kind {
    ADDR_INET, /* HOST:PORT with an IPv4 address or a name */
    ADDR_ANY,  /* :PORT -- every address of the machine */
    ADDR_IPV6, /* [IPv6]:PORT */
    ADDR_UNIX, /* unix:PATH */
};

/* What the operator typed, split. */
struct addr_spec {
    enum addr_kind kind;
    char host[ADDR_HOST_MAX + 1]; /* the name or address (no brackets); the
                                     path for ADDR_UNIX; "" for ADDR_ANY */
    unsigned port;                /* 0 for ADDR_UNIX */
};

/* Every address a text means, in the order they are tried. */
struct addr_list {
    size_t n;
    struct sockaddr_storage a[ADDR_LIST_MAX];
};

/* text into spec: 0, or -1 with the mistake in err (without the flag's
 * name: the caller says which flag). Pure. */
int addr_split(const char *text, struct addr_spec *spec, char *err, size_t errlen);
/* Every address text means (a name through getaddrinfo, at most
 * ADDR_LIST_MAX, duplicates dropped; :PORT is 0.0.0.0:PORT then
 * [::]:PORT). 0, or -1 with why in err (a name that does not resolve says
 * so with getaddrinfo's words). */
int addr_resolve(const char *text, struct addr_list *out, char *err, size_t errlen);
/* sa (len bytes) at the end of out unless there already or out is full. */
void addr_list_add(struct addr_list *out, const struct sockaddr *sa, socklen_t len);
struct addrinfo;
/* out becomes the IPv4 and IPv6 addresses of a getaddrinfo answer (a name
 * resolved again, asynchronously, by the caller). */
void addr_list_from_addrinfo(struct addr_list *out, const struct addrinfo *res);
/* The first address of addr_resolve: 0, or -1 (not an address, or a name
 * that does not resolve). */
int addr_parse(const char *text, struct sockaddr_storage *out);
/* true when text names a host to be resolved (a name, not a literal or a
 * path): its addresses can change while a process runs. */
bool addr_is_name(const struct addr_spec *spec);
/* The length connect/bind want for sa (AF_INET, AF_INET6, AF_UNIX). */
socklen_t addr_len(const struct sockaddr *sa);
/* true for 0.0.0.0 and [::] */
bool addr_is_wildcard(const struct sockaddr *sa);
/* "127.0.0.1:11211" / "[::1]:11211" / "unix:/run/mc.sock" for a
 * connected or bound socket address; "?" for anything else. Returns out. */
const char *addr_format(const struct sockaddr *sa, char *out, size_t len);

#endif
