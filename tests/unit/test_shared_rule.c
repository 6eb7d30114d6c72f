/* test_shared_rule: the shared-connection rule, mc_req_shareable(), as a
 * table of requests and the verdict docs/shared-connections.md gives them.
 *
 * Each row is the bytes of one request. It is parsed whole, cut in two at
 * every offset 1..len-1 and fed byte by byte, every piece in its own
 * exact-size heap buffer, and must give the same verdict every way (memcached
 * decides by the bytes, not by how they arrive): shareable, or not -- where
 * an MC_ERROR (memcached would close the connection: a non-get line over
 * 2048 bytes arriving without its '\n') counts as "not shareable".
 *
 * Where the doc allows forwarding (with a barrier) or a move, and where
 * 1.6.18 and 1.6.45 agree on a refusal, slabtap moves: a move is always
 * safe, and a refused request is no one's hot path. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/mc_parse.h"

#include "check.h"

struct row {
    const char *doc; /* the row of docs/shared-connections.md */
    const char *name;
    char *in;
    size_t len;
    bool share; /* the doc's verdict */
};

#define MAX_ROWS 256

struct table {
    struct row r[MAX_ROWS];
    size_t n;
};

static struct table rows;

static void add_bytes(struct table *t, const char *doc, const char *name, const char *in,
                      size_t len, bool share)
{
    if (t->n == MAX_ROWS) {
        CHECK(false, "table full at %s", name);
        return;
    }
    struct row *r = &t->r[t->n++];
    r->doc = doc;
    r->name = name;
    r->in = malloc(len);
    memcpy(r->in, in, len);
    r->len = len;
    r->share = share;
}

#define ADD(t, doc, s, share) add_bytes(t, doc, #s, s, sizeof(s) - 1, share)

/* A growing byte string for the long rows. */
struct str {
    char *s;
    size_t n;
};

static void str_add(struct str *b, const char *s, size_t n)
{
    b->s = realloc(b->s, b->n + n + 1);
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
}

static void str_rep(struct str *b, char c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        str_add(b, &c, 1);
}

#define STR_LIT(b, lit) str_add(b, lit, sizeof(lit) - 1)

static void add_str(struct table *t, const char *doc, const char *name, struct str *b, bool share)
{
    add_bytes(t, doc, name, b->s, b->n, share);
    free(b->s);
    b->s = NULL;
    b->n = 0;
}

/* "set k 0 0 1" padded with spaces to a line of line_len bytes (the '\r'
 * included, as memcached counts it), then its 1-byte data block */
static void padded_set(struct table *t, const char *name, size_t line_len, bool share)
{
    struct str b = { 0 };
    STR_LIT(&b, "set k 0 0 1");
    str_rep(&b, ' ', line_len - b.n - 1);
    STR_LIT(&b, "\r\nx\r\n");
    add_str(t, "a3/a4", name, &b, share);
}

/* spaces leading spaces, cmd, then 8-byte keys up to about len bytes */
static void long_get(struct table *t, const char *doc, const char *name, size_t spaces,
                     const char *cmd, size_t len, bool share)
{
    struct str b = { 0 };
    char key[16];
    str_rep(&b, ' ', spaces);
    str_add(&b, cmd, strlen(cmd));
    for (unsigned i = 0; b.n < len; i++) {
        snprintf(key, sizeof key, " key%05u", i % 100000);
        str_add(&b, key, strlen(key));
    }
    STR_LIT(&b, "\r\n");
    add_str(t, doc, name, &b, share);
}

/* cmd, then a key of key_len bytes, then tail */
static void keyed(struct table *t, const char *doc, const char *name, const char *cmd,
                  size_t key_len, const char *tail, bool share)
{
    struct str b = { 0 };
    str_add(&b, cmd, strlen(cmd));
    str_rep(&b, 'a', key_len);
    str_add(&b, tail, strlen(tail));
    add_str(t, doc, name, &b, share);
}

static void build_rows(void)
{
    struct table *t = &rows;
    struct str b = { 0 };

    /* --- forwarded: memcached answers on the connection, same framing in
     * 1.6.18 and 1.6.45 ------------------------------------------------- */
    ADD(t, "-", "version\r\n", true);
    ADD(t, "-", "set k 0 0 5\r\nhello\r\n", true);
    ADD(t, "b", "set k 0 0 9\r\n\r\nquit\r\nx\r\n", true); /* "\r\nquit\r\n" in the block */
    ADD(t, "b", "set k 0 0 22 noreply\r\nquit\r\nGET / HTTP/1.1\r\n\r\n", true);
    ADD(t, "-", "set k 5 100 3 noreply\r\nabc\r\n", true);
    ADD(t, "-", "add k 1 2 3\r\nabc\r\n", true);
    ADD(t, "-", "replace k 0 0 2\r\nab\r\n", true);
    ADD(t, "-", "append k 0 0 2 noreply\r\nab\r\n", true);
    ADD(t, "-", "prepend k 0 0 2\r\nab\r\n", true);
    ADD(t, "-", "cas k 0 0 1 99\r\na\r\n", true);
    ADD(t, "-", "cas k 7 8 1 99 noreply\r\na\r\n", true);
    ADD(t, "-", "get k\r\n", true);
    ADD(t, "-", "gets a b c\r\n", true);
    ADD(t, "-", "gat 10 k\r\n", true);
    ADD(t, "-", "gats 10 k l\r\n", true);
    ADD(t, "-", "gat x k\r\n", true); /* CLIENT_ERROR invalid exptime argument */
    /* a key named HTTP/...: moved, as every line ending in an HTTP/ token */
    ADD(t, "a2", "get / HTTP/1.1\r\n", false);
    ADD(t, "a2", "foo HTTP/1.0 bar\r\n", false); /* any HTTP/ word moves */
    ADD(t, "-", "delete k\r\n", true);
    ADD(t, "-", "delete k noreply\r\n", true);
    ADD(t, "-", "incr k 1\r\n", true);
    ADD(t, "-", "decr k 1 noreply\r\n", true);
    ADD(t, "-", "touch k 10\r\n", true);
    ADD(t, "c8", "mn\r\n", true);
    ADD(t, "-", "mg k v\r\n", true);
    ADD(t, "c9", "mg k q v\r\n", true);
    ADD(t, "-", "mg k O1234567890123456789012345678901 k v t f\r\n", true);
    ADD(t, "-", "ms k 2\r\nhi\r\n", true);
    ADD(t, "c9", "ms k 2 q T0 F5\r\nhi\r\n", true);
    ADD(t, "-", "ms k 2 MS I\r\nhi\r\n", true);
    ADD(t, "-", "md k\r\n", true);
    ADD(t, "c9", "md k q\r\n", true);
    ADD(t, "-", "ma k\r\n", true);
    ADD(t, "c9", "ma k q\r\n", true);
    ADD(t, "-", "ma k N0 J1 D1 MI\r\n", true);
    ADD(t, "-", "me k\r\n", true);
    ADD(t, "d", "flush_all\r\n", true);
    ADD(t, "d", "flush_all 10 noreply\r\n", true);
    ADD(t, "d", "verbosity 0\r\n", true);
    ADD(t, "c11", "verbosity 0 noreply\r\n", true);
    ADD(t, "d", "cache_memlimit 64\r\n", true);
    ADD(t, "-", "stats\r\n", true);
    ADD(t, "-", "stats items\r\n", true);
    ADD(t, "d", "stats reset\r\n", true);
    ADD(t, "c6", "stats detail on\r\n", true);
    ADD(t, "c6", "stats detail off\r\n", true);
    ADD(t, "d", "lru_crawler crawl all\r\n", true);
    ADD(t, "d", "slabs automove 1\r\n", true);
    ADD(t, "d", "slabs reassign 1 2\r\n", true);
    ADD(t, "c11", "slabs automove 1 noreply\r\n", true);
    ADD(t, "a5", "shutdown foo\r\n", false); /* CLIENT_ERROR invalid shutdown mode */
    ADD(t, "c12", "misbehave\r\n", true);
    ADD(t, "c12", "debugtime 1\r\n", true);
    ADD(t, "c13", "refresh_certs\r\n", true);
    ADD(t, "c15", "\r\n", true);
    ADD(t, "c15", "x\r\n", true);
    ADD(t, "-", "foo\r\n", true);
    ADD(t, "b4", "set k 0 0 1\r\nabc", true); /* CLIENT_ERROR bad data chunk */
    ADD(t, "b4", "ms k 1 q\r\nabc", true);
    /* refused before a data block: moved (the versions frame them apart) */
    ADD(t, "b5", "set k 0 0 -1\r\n", false);
    ADD(t, "b5", "set k 0 0 x\r\n", false);
    ADD(t, "b5", "ms k -1\r\n", true);
    ADD(t, "b5", "ms k x\r\n", true);
    ADD(t, "b5", "ms k\r\n", true);
    ADD(t, "b5", "set k 0 0 4294967297\r\nx\r\n", true);
    ADD(t, "b10", "ms k 2 Z\r\nhi\r\n", false);
    ADD(t, "b10", "ms k 2 MX\r\nhi\r\n", false);
    ADD(t, "b10", "ms k 2 T1 T2\r\nhi\r\n", false);
    ADD(t, "b10", "ms k 2 Tx\r\nhi\r\n", false);
    ADD(t, "b10", "ms k 2 O12345678901234567890123456789012\r\nhi\r\n", false);
    keyed(t, "c7", "get with a 250-byte key", "get ", 250, "\r\n", true);
    keyed(t, "c7", "mg with a 250-byte key", "mg ", 250, " v\r\n", true);
    padded_set(t, "set line of 2048 bytes", 2048, true);
    long_get(t, "a3", "get line of 20,000 bytes", 0, "get", 20000, true);
    long_get(t, "a3", "gets line of 5,000 bytes", 0, "gets", 5000, true);
    long_get(t, "a3", "100 spaces + get line of 3,000 bytes", 100, "get", 3000, true);
    long_get(t, "a6", "get line of 17,000 bytes", 0, "get", 17000, true);

    /* --- not shared: memcached closes, changes mode, drops held answers,
     * or its read may cut the line ---------------------------------------- */
    ADD(t, "a1", "quit\r\n", false);
    ADD(t, "a1", "quit x\r\n", false);
    ADD(t, "a2", "GET / HTTP/1.1\r\n", false);
    ADD(t, "a2", "GET HTTP/1.0\r\n", false);
    ADD(t, "a2", "dfoo HTTP/1.1\r\n", false); /* 1.6.18 ERROR, 1.6.45 closes */
    ADD(t, "a2", "sx HTTP/1.1\r\n", false);
    ADD(t, "a2", "memlimit HTTP/1.1\r\n", false); /* 1.6.18 closes (live) */
    STR_LIT(&b, "foo");
    for (int i = 0; i < 21; i++)
        STR_LIT(&b, " a");
    STR_LIT(&b, " HTTP/1.1 b c\r\n");
    add_str(t, "a2", "HTTP/1.1 as the 23rd token", &b, false);
    padded_set(t, "set line of 2049 bytes", 2049, false);
    padded_set(t, "set line of 3,400 bytes", 3400, false);
    keyed(t, "a4", "delete + 3,000-byte key", "delete ", 3000, "\r\n", false);
    keyed(t, "a4", "delete + 20,000-byte key", "delete ", 20000, "\r\n", false);
    long_get(t, "a3", "101 spaces + get line of 3,000 bytes", 101, "get", 3000, false);
    long_get(t, "a3", "gat line of 3,000 bytes", 0, "gat 0", 3000, false);
    long_get(t, "a3", "gats line of 3,000 bytes", 0, "gats 0", 3000, false);
    long_get(t, "a3", "bget line of 3,000 bytes", 0, "bget", 3000, false);
    keyed(t, "c7", "get with a 251-byte key", "get ", 251, "\r\n", false);
    keyed(t, "c7", "get a + a 251-byte key", "get a ", 251, " b\r\n", false);
    keyed(t, "c7", "gets with a 251-byte key", "gets ", 251, "\r\n", false);
    keyed(t, "c7", "gat with a 251-byte key", "gat 10 ", 251, "\r\n", false);
    /* a 251-byte key past the first 2048 bytes of a long get */
    long_get(t, "c7", "(scratch)", 0, "get", 3000, false);
    {
        struct row *r = &t->r[--t->n];
        STR_LIT(&b, "get");
        str_add(&b, r->in + 3, r->len - 5);
        STR_LIT(&b, " ");
        str_rep(&b, 'z', 251);
        STR_LIT(&b, "\r\n");
        free(r->in);
        add_str(t, "c7", "get line of 3,000 bytes, then a 251-byte key", &b, false);
    }
    ADD(t, "c2", "watch\r\n", false);
    ADD(t, "c2", "watch rawcmds\r\n", false);
    ADD(t, "c2", "watch evictions fetchers\r\n", false);
    ADD(t, "c3", "lru_crawler metadump all\r\n", false);
    ADD(t, "c3", "lru_crawler metadump 1\r\n", false);
    ADD(t, "c3", "lru_crawler metadump hash\r\n", false);
    ADD(t, "c5", "stats detail dump\r\n", false);

    /* --- 1.6.45 framing, shutdown, HTTP lines either version closes on ---- */
    ADD(t, "a2", "HTTP/1.1\r\n", false);   /* 1.6.18 closes, 1.6.45 ERROR */
    ADD(t, "a2", "x HTTP/1.1\r\n", false); /* 1.6.18 ERROR, 1.6.45 closes */
    ADD(t, "a2", "mx HTTP/1.1\r\n", false);
    /* memcached 1.6.18 (live): closes at once, drops the VERSION it held
     * for "version\r\nmisbehave HTTP/1.1\r\n" (a non-debug build's final
     * else); today's parser takes misbehave as a command and forwards it */
    ADD(t, "a2", "misbehave HTTP/1.1\r\n", false);
    /* 1.6.18 ERROR / END (live), 1.6.45 has neither command: closes */
    ADD(t, "a2", "debugtime HTTP/1.1\r\n", false);
    ADD(t, "a2", "bget k HTTP/1.1\r\n", false);
    ADD(t, "a5", "shutdown\r\n", false);
    ADD(t, "a5", "shutdown graceful\r\n", false);
    ADD(t, "a5", "shutdown g\r\n", false); /* 1.6.45 prefix of graceful */
    ADD(t, "a5", "shutdown gr\r\n", false);
    ADD(t, "b6", "set k 0 0 1 a b\r\n", false); /* 1.6.18 ERROR, 1.6.45 reads a block */
    ADD(t, "b6", "cas k 0 0 1\r\n", false);
    keyed(t, "b7", "set with a 251-byte key", "set ", 251, " 0 0 3\r\n", false);
    ADD(t, "b7", "set k x 0 3\r\n", false);
    ADD(t, "b7", "cas k 0 0 3 x\r\n", false);
    keyed(t, "b8", "ms with a 251-byte key", "ms ", 251, " 2\r\n", false);
    STR_LIT(&b, "ms k 2");
    for (int i = 0; i < 18; i++)
        STR_LIT(&b, " T1");
    STR_LIT(&b, "\r\n");
    add_str(t, "b8", "ms with 20 words after ms", &b, false);
    ADD(t, "b9", "ms k 2 !\r\nhi\r\n", false);
    ADD(t, "b10", "ms k 2 E5\r\nhi\r\n", false);
    ADD(t, "b10", "ms k 2 x\r\nhi\r\n", false);
    ADD(t, "b10", "ms k 2 MSX\r\nhi\r\n", false);
    ADD(t, "c2", "watch foo\r\n", false); /* MOVE, all forms of watch */
    ADD(t, "c2", "watch r\r\n", false);   /* 1.6.45: watch rawcmds */
    ADD(t, "c2", "watch fetch\r\n", false);
    ADD(t, "c2", "watch deletions\r\n", false);
    ADD(t, "c2", "watch noreply\r\n", false);
    ADD(t, "c3", "lru_crawler m all\r\n", false); /* 1.6.45: metadump */
    ADD(t, "c3", "lru_crawler met all\r\n", false);
    ADD(t, "c4", "lru_crawler mgdump all\r\n", false);
    ADD(t, "c4", "lru_crawler mg all\r\n", false);
    ADD(t, "c6", "stats d on\r\n", false); /* 1.6.45 OK, 1.6.18 ERROR */
    ADD(t, "c6", "stats detail o\r\n", false);
    ADD(t, "c6", "stats r\r\n", false); /* 1.6.45 RESET, 1.6.18 ERROR */
    ADD(t, "c6", "stats res\r\n", false);

    /* --- the doc allows FORWARD+MN or MOVE: slabtap moves ---------------- */
    ADD(t, "c10", "foo noreply\r\n", false);
    ADD(t, "c10", "delete noreply\r\n", false);
    ADD(t, "c10", "slabs reassign 1 noreply\r\n", false);
    ADD(t, "c10", "lru_crawler crawl noreply\r\n", false);
    ADD(t, "c10", "shutdown noreply\r\n", false);
    ADD(t, "c10", "incr k 1 x noreply\r\n", false);
    ADD(t, "c10", "touch k 1 x noreply\r\n", false);
    ADD(t, "c10", "misbehave noreply\r\n", false);
    ADD(t, "c10", "debugtime noreply\r\n", false);
    ADD(t, "c10", "refresh_certs noreply\r\n", false);
    ADD(t, "c5", "stats d d\r\n", false); /* 1.6.45 stats detail dump */
    ADD(t, "c5", "stats det dump\r\n", false);
}

/* What parsing in, cut as the pieces say, gives. */
enum verdict { V_SHARE, V_NOT, V_BAD };

struct outcome {
    enum verdict v;
    bool error; /* MC_ERROR */
    enum mc_cmd cmd;
    char why[160]; /* V_BAD */
};

/* cuts: offsets where a new piece starts (ascending, inside (0, len)) */
static void parse_cut(const struct row *row, const size_t *cuts, size_t ncuts, bool bytewise,
                      struct outcome *o)
{
    struct mc_req_parser *p = malloc(sizeof *p);
    struct mc_request r;
    size_t off = 0, ci = 0;
    bool done = false;
    memset(o, 0, sizeof *o);
    o->v = V_BAD;
    snprintf(o->why, sizeof o->why, "no request came out");
    mc_req_init(p);
    while (off < row->len && !done) {
        size_t end = bytewise ? off + 1 : ci < ncuts ? cuts[ci++] : row->len;
        size_t clen = end - off, pos = 0;
        char *chunk = malloc(clen);
        memcpy(chunk, row->in + off, clen);
        while (pos < clen) {
            size_t used = (size_t)-1;
            enum mc_result res = mc_req_parse(p, chunk + pos, clen - pos, &used, &r);
            if (used > clen - pos) {
                snprintf(o->why, sizeof o->why, "used %zu of %zu", used, clen - pos);
                done = true;
                break;
            }
            pos += used;
            if (res == MC_ERROR) {
                o->v = V_NOT;
                o->error = true;
                done = true;
                break;
            }
            if (res == MC_NEED_MORE) {
                if (pos != clen) {
                    snprintf(o->why, sizeof o->why, "MC_NEED_MORE left %zu bytes", clen - pos);
                    done = true;
                }
                break;
            }
            if (r.bytes != row->len || off + pos != row->len) {
                snprintf(o->why, sizeof o->why, "a request of %zu bytes ends at %zu of %zu",
                         r.bytes, off + pos, row->len);
            } else {
                o->v = mc_req_shareable(&r) ? V_SHARE : V_NOT;
                o->cmd = r.cmd;
            }
            done = true;
            break;
        }
        free(chunk);
        off = end;
    }
    free(p);
}

static const char *vname(const struct outcome *o)
{
    return o->v == V_BAD ? o->why : o->v == V_SHARE ? "shareable" : o->error ? "MC_ERROR" : "not";
}

static bool same(const struct outcome *a, const struct outcome *b)
{
    /* MC_ERROR comes only when a long line arrives cut, so it may replace
     * a whole parse's "not shareable"; the command must agree otherwise */
    return a->v == b->v && (a->error || b->error || a->cmd == b->cmd);
}

/* Checks a row every way; returns whether all agreed with the doc, and
 * with report prints each disagreement as a failed check. */
static bool run_row(const struct row *row, bool report, struct outcome *whole)
{
    struct outcome o;
    bool ok = true;
    char label[96];
    snprintf(label, sizeof label, "[%s] %.60s (%zu bytes)", row->doc, row->name, row->len);

    parse_cut(row, NULL, 0, false, whole);
    bool want = row->share;
    bool whole_ok = whole->v == (want ? V_SHARE : V_NOT);
    if (report)
        CHECK(whole_ok, "%s: whole: %s, want %s", label, vname(whole),
              want ? "shareable" : "not shareable");
    ok = ok && whole_ok;

    size_t bad = 0, first_bad = 0;
    struct outcome first_o = { 0 };
    for (size_t cut = 1; cut < row->len; cut++) {
        parse_cut(row, &cut, 1, false, &o);
        if (!same(&o, whole) || o.v == V_BAD) {
            if (bad++ == 0) {
                first_bad = cut;
                first_o = o;
            }
        }
    }
    if (report)
        CHECK(bad == 0, "%s: %zu of %zu cuts differ from whole (%s), first at %zu: %s", label, bad,
              row->len ? row->len - 1 : 0, vname(whole), first_bad, vname(&first_o));
    ok = ok && bad == 0;

    parse_cut(row, NULL, 0, true, &o);
    bool bytes_ok = same(&o, whole) && o.v != V_BAD;
    if (report)
        CHECK(bytes_ok, "%s: byte by byte: %s, whole %s", label, vname(&o), vname(whole));
    return ok && bytes_ok;
}

int main(void)
{
    struct outcome whole;
    build_rows();
    for (size_t i = 0; i < rows.n; i++)
        run_row(&rows.r[i], true, &whole);
    for (size_t i = 0; i < rows.n; i++)
        free(rows.r[i].in);
    return check_done("test_shared_rule");
}
