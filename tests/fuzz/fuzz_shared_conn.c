/* libFuzzer target: the shared-connection rule (mc_req_shareable,
 * docs/shared-connections.md) with several clients on one memcached
 * connection.
 *
 * Input:
 *   byte 0      K = 2 + byte % 7 clients (2..8)
 *   byte 1      bit i set: client i had requests before, on an earlier
 *               upstream (its parser has seen its first byte, as slabtap's
 *               does after a move or a reconnect), so its first byte here is
 *               no protocol choice
 *   byte 2      C, then C control bytes: every choice below (each client's
 *               read cuts, the interleaving, memcached's read cuts) takes the
 *               next one, then a xorshift stream seeded from them
 *   the rest    the K client streams, separated by 0xff bytes (missing
 *               streams are empty)
 *
 * Each client's stream goes through its own mc_req_parser in reads cut at
 * chosen points (as slabtap parses each client). Its whole requests for
 * which mc_req_shareable() is true are kept, up to the first one that is
 * not (the client would move to a private upstream, or be answered and
 * closed here) or an MC_ERROR (slabtap closes it). Those requests are
 * appended, in a chosen interleaving of the clients that keeps each
 * client's order, to one "shared connection" stream, which a fresh parser
 * -- memcached reading that connection, in reads of at most 16384 bytes
 * (READ_BUFFER_SIZE) cut at chosen points -- must read as:
 *   - never MC_ERROR;
 *   - exactly the same requests, in the interleaved order: same command,
 *     bytes on the wire, reply kind, noreply, key, data block (no request
 *     swallows or splits another client's bytes), each shareable again;
 *   - no request line (bytes before its '\n') over 2048 bytes unless it
 *     starts, after at most 100 spaces, with "get " or "gets " (memcached
 *     closes a connection whose read ends inside any other such line);
 *   - all of the stream consumed, the parser between two requests.
 * A violation is __builtin_trap(). Build with -DSLABTAP_FUZZ=ON (clang);
 * run: build-fuzz/fuzz_shared_conn -max_len=32768 corpus-dir */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "protocol/mc_parse.h"

#define MAX_CLIENTS 8
#define MAX_REQS 8192
#define READ_BUFFER_SIZE 16384 /* memcached's read buffer */
#define SEP 0xff

#define VIOLATION() __builtin_trap()
#define REQUIRE(cond) \
    do { \
        if (!(cond)) \
            VIOLATION(); \
    } while (0)

/* Choices: the control bytes first, then a deterministic stream. */
struct chooser {
    const uint8_t *ctl;
    size_t n, i;
    uint32_t x;
};

static uint8_t choose(struct chooser *ch)
{
    if (ch->i < ch->n)
        return ch->ctl[ch->i++];
    ch->x ^= ch->x << 13;
    ch->x ^= ch->x >> 17;
    ch->x ^= ch->x << 5;
    return (uint8_t)(ch->x >> 24);
}

/* The length of the next read of left bytes: tiny reads (cut lines,
 * words, "qu" + "it"), reads around MC_LINE_MAX, a few KB, big ones, all
 * that is left; never more than cap. */
static size_t read_len(struct chooser *ch, size_t left, size_t cap)
{
    uint8_t c = choose(ch);
    size_t n;
    if (c < 64)
        n = 1 + c;
    else if (c < 128)
        n = 1 + (size_t)(c - 64) * 64;
    else if (c < 192)
        n = MC_LINE_MAX - 32 + (size_t)(c - 128);
    else if (c < 240)
        n = (size_t)(c - 191) * 512;
    else
        n = left;
    if (n > left)
        n = left;
    if (n > cap)
        n = cap;
    return n;
}

/* One whole shareable request of a client, as the client's parser saw it. */
struct rec {
    const uint8_t *at; /* its bytes in the client's stream */
    size_t bytes;
    enum mc_cmd cmd;
    enum mc_reply reply;
    bool noreply, bad_data, swallowed, is_write;
    int64_t value_len;
    uint32_t nkeys;
    uint16_t key_len;
    uint8_t key_len_raw;
    char key[MC_KEY_MAX + 1];
};

static struct rec recs[MAX_REQS];
static size_t nrecs;
static uint8_t shared[1 << 20];
static const struct rec *order[MAX_REQS];

static void rec_from(struct rec *x, const struct mc_request *r, const uint8_t *at)
{
    memset(x, 0, sizeof *x);
    x->at = at;
    x->bytes = r->bytes;
    x->cmd = r->cmd;
    x->reply = r->reply;
    x->noreply = r->noreply;
    x->bad_data = r->bad_data;
    x->swallowed = r->swallowed;
    x->is_write = r->is_write;
    x->value_len = r->value_len;
    x->nkeys = r->nkeys;
    x->key_len = r->key_len;
    x->key_len_raw = r->key_len_raw;
    REQUIRE(r->key_len_raw <= MC_KEY_MAX);
    memcpy(x->key, r->key, r->key_len_raw);
}

/* One client: its shareable requests until it stops contributing. Returns
 * how many were added to recs. */
static size_t client_requests(const uint8_t *s, size_t n, bool started, struct chooser *ch)
{
    static struct mc_req_parser p;
    struct mc_request r;
    size_t pos = 0, req_start = 0, added = 0;
    mc_req_init(&p);
    p.started = started;
    while (pos < n) {
        size_t end = pos + read_len(ch, n - pos, n);
        while (pos < end) {
            size_t used = 0;
            enum mc_result res = mc_req_parse(&p, (const char *)s + pos, end - pos, &used, &r);
            REQUIRE(used <= end - pos);
            pos += used;
            if (res == MC_ERROR)
                return added; /* slabtap closes the client */
            if (res == MC_NEED_MORE) {
                REQUIRE(pos == end);
                break;
            }
            /* every byte since the last request is this request's */
            REQUIRE(r.bytes > 0 && r.bytes == pos - req_start);
            if (!mc_req_shareable(&r) || nrecs == MAX_REQS)
                return added; /* off the shared connection from here on */
            REQUIRE(mc_req_at_boundary(&p));
            rec_from(&recs[nrecs++], &r, s + req_start);
            added++;
            req_start = pos;
        }
    }
    return added;
}

/* Would memcached read on when its buffer holds more than 2048 bytes of
 * this line and no '\n' (try_read_command_ascii)? */
static bool long_line_ok(const uint8_t *line, size_t len)
{
    size_t i = 0;
    while (i < len && line[i] == ' ')
        i++;
    if (i > 100)
        return false;
    return (len - i >= 4 && !memcmp(line + i, "get ", 4)) ||
           (len - i >= 5 && !memcmp(line + i, "gets ", 5));
}

/* An oracle of its own for the rows of docs/shared-connections.md that
 * close the connection, from the line's words as memcached splits them
 * (on ' ', the line ending at '\r\n', '\n' or a NUL, at most 23 words
 * looked at). */
struct words {
    const uint8_t *w[MC_MAX_TOKENS];
    size_t len[MC_MAX_TOKENS];
    size_t n; /* words looked at, at most MC_MAX_TOKENS - 1 */
};

static void split_words(const uint8_t *line, size_t len, struct words *ws)
{
    if (len > 1 && line[len - 1] == '\r')
        len--;
    const uint8_t *nul = memchr(line, '\0', len);
    if (nul)
        len = (size_t)(nul - line);
    ws->n = 0;
    for (size_t i = 0; i < len && ws->n < MC_MAX_TOKENS - 1;) {
        while (i < len && line[i] == ' ')
            i++;
        if (i == len)
            break;
        size_t from = i;
        while (i < len && line[i] != ' ')
            i++;
        ws->w[ws->n] = line + from;
        ws->len[ws->n++] = i - from;
    }
}

static bool word_is(const struct words *ws, size_t i, const char *s)
{
    return i < ws->n && ws->len[i] == strlen(s) && !memcmp(ws->w[i], s, ws->len[i]);
}

static void check_not_closing(const uint8_t *line, size_t len)
{
    struct words ws;
    split_words(line, len, &ws);
    /* a1: quit, with any words after it, closes in both versions */
    REQUIRE(!word_is(&ws, 0, "quit"));
    /* a2: the last word looked at starts with HTTP/ -- 1.6.18 closes for a
     * command its final else reaches (live: "misbehave HTTP/1.1",
     * "memlimit HTTP/1.1", "HTTP/1.1"), 1.6.45 for any command not in its
     * tables ("x HTTP/1.1", "bget k HTTP/1.1", "debugtime HTTP/1.1"). Only
     * the commands both versions know are safe with it. */
    static const char *const known[] = {
        "get",         "gets",
        "gat",         "gats",
        "set",         "add",
        "replace",     "append",
        "prepend",     "cas",
        "delete",      "incr",
        "decr",        "touch",
        "stats",       "flush_all",
        "version",     "verbosity",
        "watch",       "slabs",
        "lru_crawler", "lru",
        "extstore",    "cache_memlimit",
        "shutdown",    "refresh_certs",
        "mg",          "ms",
        "md",          "ma",
        "mn",          "me",
    };
    if (ws.n >= 1 && ws.len[ws.n - 1] >= 5 && !memcmp(ws.w[ws.n - 1], "HTTP/", 5)) {
        bool safe = false;
        for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
            safe = safe || (ws.n >= 2 && word_is(&ws, 0, known[i]));
        REQUIRE(safe);
    }
}

static void check_same(const struct rec *want, const struct mc_request *got, const uint8_t *at)
{
    REQUIRE(mc_req_shareable(got));
    REQUIRE(got->bytes == want->bytes);
    REQUIRE(got->cmd == want->cmd);
    REQUIRE(got->reply == want->reply);
    REQUIRE(got->noreply == want->noreply);
    REQUIRE(got->bad_data == want->bad_data);
    REQUIRE(got->swallowed == want->swallowed);
    REQUIRE(got->is_write == want->is_write);
    REQUIRE(got->value_len == want->value_len);
    REQUIRE(got->nkeys == want->nkeys);
    REQUIRE(got->key_len == want->key_len);
    REQUIRE(got->key_len_raw == want->key_len_raw);
    REQUIRE(memcmp(got->key, want->key, want->key_len_raw) == 0);
    /* memcached must never hold an unfinished non-get line of over 2048
     * bytes: wherever its read ends, it would close the connection */
    const uint8_t *nl = memchr(at, '\n', got->bytes);
    REQUIRE(nl != NULL);
    size_t line = (size_t)(nl - at);
    REQUIRE(line <= MC_LINE_MAX || long_line_ok(at, line));
    check_not_closing(at, line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    size_t k = 2 + data[0] % 7;
    uint8_t started = data[1];
    size_t c = data[2];
    if (c > size - 3)
        c = size - 3;
    struct chooser ch = { data + 3, c, 0, 0x9e3779b9u };
    for (size_t i = 0; i < c; i++)
        ch.x = (ch.x ^ data[3 + i]) * 0x01000193u;
    if (ch.x == 0)
        ch.x = 1;
    const uint8_t *body = data + 3 + c, *body_end = data + size;

    /* every client's shareable requests, in its own order */
    size_t first[MAX_CLIENTS + 1], count[MAX_CLIENTS];
    nrecs = 0;
    for (size_t i = 0; i < k; i++) {
        const uint8_t *sep = i + 1 < k ? memchr(body, SEP, (size_t)(body_end - body)) : NULL;
        const uint8_t *end = sep ? sep : body_end;
        first[i] = nrecs;
        count[i] = client_requests(body, (size_t)(end - body), (started >> i) & 1, &ch);
        body = sep ? sep + 1 : body_end;
    }

    /* a chosen interleaving, each client's order kept */
    size_t next[MAX_CLIENTS] = { 0 }, total = 0, norder = 0;
    for (;;) {
        size_t live[MAX_CLIENTS], nlive = 0;
        for (size_t i = 0; i < k; i++)
            if (next[i] < count[i])
                live[nlive++] = i;
        if (nlive == 0)
            break;
        size_t i = live[choose(&ch) % nlive];
        const struct rec *x = &recs[first[i] + next[i]++];
        REQUIRE(total + x->bytes <= sizeof shared);
        memcpy(shared + total, x->at, x->bytes);
        total += x->bytes;
        order[norder++] = x;
    }

    /* memcached reads the shared connection from its first byte */
    static struct mc_req_parser m;
    struct mc_request r;
    size_t pos = 0, seen = 0, req_start = 0;
    mc_req_init(&m);
    while (pos < total) {
        size_t end = pos + read_len(&ch, total - pos, READ_BUFFER_SIZE);
        while (pos < end) {
            size_t used = 0;
            enum mc_result res = mc_req_parse(&m, (const char *)shared + pos, end - pos, &used, &r);
            REQUIRE(used <= end - pos);
            REQUIRE(res != MC_ERROR);
            pos += used;
            if (res == MC_NEED_MORE) {
                REQUIRE(pos == end);
                break;
            }
            REQUIRE(seen < norder);
            REQUIRE(r.bytes == pos - req_start);
            check_same(order[seen], &r, shared + req_start);
            seen++;
            req_start = pos;
        }
    }
    REQUIRE(seen == norder);
    REQUIRE(mc_req_at_boundary(&m));
    return 0;
}
