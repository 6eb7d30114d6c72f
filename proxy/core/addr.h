/* addr: network addresses as operators type them -- HOST:PORT with an IPv4
 * address, [IPv6]:PORT, or a name -- and back to text for logs.
 *
 * Owns the one parser every subcommand uses for --listen, --upstream,
 * --http and --target. Must never be called on the event loop once it
 * runs: a name is resolved with getaddrinfo, which blocks. */
#ifndef SLABTAP_CORE_ADDR_H
#define SLABTAP_CORE_ADDR_H

#include <stddef.h>
#include <sys/socket.h>

/* "[ffff:...:ffff]:65535" with room to spare */
#define ADDR_TEXT_MAX 64

/* HOST:PORT into out. 0, or -1 when the text is not an address or the name
 * does not resolve. */
int addr_parse(const char *text, struct sockaddr_storage *out);
/* "127.0.0.1:11211" / "[::1]:11211" for a connected or bound socket
 * address; "?" for anything else. Returns out. */
const char *addr_format(const struct sockaddr *sa, char *out, size_t len);

#endif
