/* test_addr: the address parser as a table -- every spelling (HOST:PORT,
 * :PORT, [IPv6]:PORT, unix:PATH, names) with the parts addr_split gives and
 * what addr_resolve makes of them (formatted back), and every mistake with
 * its exact message. Names are only the machine's own (localhost) and one
 * that cannot resolve (.invalid, RFC 6761). */
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/un.h>

#include "check.h"
#include "core/addr.h"

struct split_case {
    const char *text;
    int rc;
    enum addr_kind kind;
    const char *host;
    unsigned port;
    const char *resolved; /* the addresses, formatted, joined by ' ' (NULL: skip) */
    const char *err;      /* rc -1: the exact message */
};

#define WANT "want HOST:PORT, :PORT, [IPv6]:PORT or unix:PATH"

static const struct split_case cases[] = {
    { "127.0.0.1:11211", 0, ADDR_INET, "127.0.0.1", 11211, "127.0.0.1:11211", NULL },
    { "0.0.0.0:0", 0, ADDR_INET, "0.0.0.0", 0, "0.0.0.0:0", NULL },
    { "10.1.2.3:65535", 0, ADDR_INET, "10.1.2.3", 65535, "10.1.2.3:65535", NULL },
    { ":11311", 0, ADDR_ANY, "", 11311, "0.0.0.0:11311 [::]:11311", NULL },
    { ":0", 0, ADDR_ANY, "", 0, "0.0.0.0:0 [::]:0", NULL },
    { "[::1]:11211", 0, ADDR_IPV6, "::1", 11211, "[::1]:11211", NULL },
    { "[::]:11311", 0, ADDR_IPV6, "::", 11311, "[::]:11311", NULL },
    { "[fe80::1:2]:1", 0, ADDR_IPV6, "fe80::1:2", 1, "[fe80::1:2]:1", NULL },
    { "[::ffff:127.0.0.1]:5", 0, ADDR_IPV6, "::ffff:127.0.0.1", 5, "[::ffff:127.0.0.1]:5", NULL },
    { "unix:/run/memcached/mc.sock", 0, ADDR_UNIX, "/run/memcached/mc.sock", 0,
      "unix:/run/memcached/mc.sock", NULL },
    { "unix:mc.sock", 0, ADDR_UNIX, "mc.sock", 0, "unix:mc.sock", NULL },
    { "unix:./a:b", 0, ADDR_UNIX, "./a:b", 0, "unix:./a:b", NULL },
    { "localhost:11211", 0, ADDR_INET, "localhost", 11211, NULL, NULL },
    { "memcached:11211", 0, ADDR_INET, "memcached", 11211, NULL, NULL }, /* split only */
    /* mistakes */
    { "", -1, ADDR_INET, NULL, 0, NULL, "empty address (" WANT ")" },
    { "localhost", -1, ADDR_INET, NULL, 0, NULL, "'localhost' has no port (" WANT ")" },
    { "11211", -1, ADDR_INET, NULL, 0, NULL, "'11211' has no port (" WANT ")" },
    { "127.0.0.1:", -1, ADDR_INET, NULL, 0, NULL,
      "'127.0.0.1:': port '' is not a number from 0 to 65535" },
    { "127.0.0.1:65536", -1, ADDR_INET, NULL, 0, NULL,
      "'127.0.0.1:65536': port '65536' is not a number from 0 to 65535" },
    { "127.0.0.1:-1", -1, ADDR_INET, NULL, 0, NULL,
      "'127.0.0.1:-1': port '-1' is not a number from 0 to 65535" },
    { "127.0.0.1:+80", -1, ADDR_INET, NULL, 0, NULL,
      "'127.0.0.1:+80': port '+80' is not a number from 0 to 65535" },
    { "127.0.0.1:11211x", -1, ADDR_INET, NULL, 0, NULL,
      "'127.0.0.1:11211x': port '11211x' is not a number from 0 to 65535" },
    { "127.0.0.1:000080", -1, ADDR_INET, NULL, 0, NULL,
      "'127.0.0.1:000080': port '000080' is not a number from 0 to 65535" },
    { "host:http", -1, ADDR_INET, NULL, 0, NULL,
      "'host:http': port 'http' is not a number from 0 to 65535" },
    { ":", -1, ADDR_INET, NULL, 0, NULL, "':': port '' is not a number from 0 to 65535" },
    { "::1:11211", -1, ADDR_INET, NULL, 0, NULL,
      "'::1:11211': an IPv6 address goes in brackets ([::1]:11211)" },
    { "[::1:11211", -1, ADDR_INET, NULL, 0, NULL,
      "'[::1:11211': '[' without ']' (want [IPv6]:PORT)" },
    { "[::1]11211", -1, ADDR_INET, NULL, 0, NULL, "'[::1]11211': want ':PORT' right after ']'" },
    { "[::1]", -1, ADDR_INET, NULL, 0, NULL, "'[::1]': want ':PORT' right after ']'" },
    { "[]:11211", -1, ADDR_INET, NULL, 0, NULL,
      "'[]:11211': no IPv6 address between the brackets" },
    { "[::1]:", -1, ADDR_INET, NULL, 0, NULL, "'[::1]:': port '' is not a number from 0 to 65535" },
    { "unix:", -1, ADDR_INET, NULL, 0, NULL,
      "'unix:': no path after unix: (unix:/run/memcached.sock)" },
};

/* split, then resolve (the literal ones), both byte for byte */
static void run_case(const struct split_case *c)
{
    struct addr_spec s;
    char err[512] = "";
    int rc = addr_split(c->text, &s, err, sizeof err);
    CHECK(rc == c->rc, "'%s': addr_split %d, want %d (%s)", c->text, rc, c->rc, err);
    if (rc != 0) {
        CHECK_STR(err, c->err);
        struct addr_list l;
        char err2[512] = "";
        CHECK(addr_resolve(c->text, &l, err2, sizeof err2) == -1, "'%s': resolves", c->text);
        CHECK_STR(err2, c->err);
        return;
    }
    CHECK(s.kind == c->kind, "'%s': kind %d, want %d", c->text, (int)s.kind, (int)c->kind);
    CHECK_STR(s.host, c->host);
    CHECK_INT(s.port, c->port);
    if (!c->resolved)
        return;
    struct addr_list l;
    char got[512] = "", one[ADDR_TEXT_MAX];
    CHECK(addr_resolve(c->text, &l, err, sizeof err) == 0, "'%s': %s", c->text, err);
    for (size_t i = 0; i < l.n; i++) {
        size_t at = strlen(got);
        snprintf(got + at, sizeof got - at, "%s%s", i ? " " : "",
                 addr_format((const struct sockaddr *)&l.a[i], one, sizeof one));
    }
    CHECK_STR(got, c->resolved);
}

static void test_long_names(void)
{
    char text[400], want[600], err[600];
    struct addr_spec s;
    /* a path of exactly 107 bytes fits sun_path; 108 does not */
    memcpy(text, "unix:/", 6);
    memset(text + 6, 'p', 106);
    text[112] = '\0';
    CHECK_INT(addr_split(text, &s, err, sizeof err), 0);
    CHECK_INT(strlen(s.host), ADDR_UNIX_PATH_MAX);
    struct addr_list l;
    CHECK_INT(addr_resolve(text, &l, err, sizeof err), 0);
    CHECK_INT(l.a[0].ss_family, AF_UNIX);
    CHECK_STR(((struct sockaddr_un *)&l.a[0])->sun_path, s.host);
    CHECK_INT(addr_len((const struct sockaddr *)&l.a[0]), sizeof(struct sockaddr_un));
    text[112] = 'p';
    text[113] = '\0';
    snprintf(want, sizeof want, "'%s': a unix socket path is at most 107 bytes", text);
    CHECK_INT(addr_split(text, &s, err, sizeof err), -1);
    CHECK_STR(err, want);
    /* a host of 255 bytes is split (then resolved or not); 256 is refused */
    memset(text, 'h', 256);
    memcpy(text + 255, ":1", 3);
    CHECK_INT(addr_split(text, &s, err, sizeof err), 0);
    memset(text, 'h', 256);
    memcpy(text + 256, ":1", 3);
    snprintf(want, sizeof want, "'%s': a host name is at most 255 bytes", text);
    CHECK_INT(addr_split(text, &s, err, sizeof err), -1);
    CHECK_STR(err, want);
}

static void test_resolve(void)
{
    struct addr_list l;
    char err[512], one[ADDR_TEXT_MAX];
    /* a name that cannot resolve says so, with getaddrinfo's words */
    CHECK_INT(addr_resolve("memcached.invalid:11211", &l, err, sizeof err), -1);
    const char *want = "'memcached.invalid:11211': the name 'memcached.invalid' does not resolve (";
    CHECK(!strncmp(err, want, strlen(want)), "got '%s'", err);
    CHECK(err[strlen(err) - 1] == ')', "got '%s'", err);
    /* a bad literal in brackets */
    CHECK_INT(addr_resolve("[::g]:1", &l, err, sizeof err), -1);
    CHECK_STR(err, "'[::g]:1': '::g' is not an IPv6 address");
    CHECK_INT(addr_resolve("[127.0.0.1]:1", &l, err, sizeof err), -1);
    CHECK_STR(err, "'[127.0.0.1]:1': '127.0.0.1' is not an IPv6 address");
    /* the machine's own name: at least one address, each with the port */
    CHECK_INT(addr_resolve("localhost:11211", &l, err, sizeof err), 0);
    CHECK(l.n >= 1 && l.n <= ADDR_LIST_MAX, "localhost: %zu addresses", l.n);
    for (size_t i = 0; i < l.n; i++) {
        addr_format((const struct sockaddr *)&l.a[i], one, sizeof one);
        size_t n = strlen(one);
        CHECK(n > 6 && !strcmp(one + n - 6, ":11211"), "localhost gave %s", one);
        for (size_t j = 0; j < i; j++)
            CHECK(memcmp(&l.a[i], &l.a[j], sizeof l.a[i]), "localhost: %s twice", one);
    }
    /* addr_parse: the first of them */
    struct sockaddr_storage ss;
    CHECK_INT(addr_parse(":80", &ss), 0);
    CHECK_STR(addr_format((const struct sockaddr *)&ss, one, sizeof one), "0.0.0.0:80");
    CHECK_INT(addr_parse("nonsense", &ss), -1);
    /* wildcards */
    CHECK_INT(addr_resolve(":1", &l, err, sizeof err), 0);
    CHECK_TRUE(addr_is_wildcard((const struct sockaddr *)&l.a[0]));
    CHECK_TRUE(addr_is_wildcard((const struct sockaddr *)&l.a[1]));
    CHECK_INT(addr_resolve("[::1]:1", &l, err, sizeof err), 0);
    CHECK_TRUE(!addr_is_wildcard((const struct sockaddr *)&l.a[0]));
    /* names are names; literals and paths are not */
    struct addr_spec s;
    const char *names[] = { "localhost:1", "memcached:1" };
    const char *not_names[] = { "127.0.0.1:1", ":1", "[::1]:1", "unix:/x" };
    for (size_t i = 0; i < 2; i++) {
        addr_split(names[i], &s, err, sizeof err);
        CHECK(addr_is_name(&s), "%s is a name", names[i]);
    }
    for (size_t i = 0; i < 4; i++) {
        addr_split(not_names[i], &s, err, sizeof err);
        CHECK(!addr_is_name(&s), "%s is not a name", not_names[i]);
    }
    /* addr_list_add drops duplicates and stops at ADDR_LIST_MAX */
    struct addr_list m = { 0 };
    for (int i = 0; i < 3 * ADDR_LIST_MAX; i++) {
        struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons((uint16_t)(i % 10)) };
        addr_list_add(&m, (struct sockaddr *)&in, sizeof in);
    }
    CHECK_INT(m.n, ADDR_LIST_MAX);
    /* formatting: unknown families and a short buffer */
    struct sockaddr_storage none = { .ss_family = AF_UNSPEC };
    CHECK_STR(addr_format((const struct sockaddr *)&none, one, sizeof one), "?");
    CHECK_STR(addr_format(NULL, one, sizeof one), "?");
}

int main(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i]);
    test_long_names();
    test_resolve();
    return check_done("test_addr");
}
