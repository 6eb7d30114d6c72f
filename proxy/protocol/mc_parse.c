/* mc_parse: incremental parsers for memcached's text and meta protocols.
 *
 * Owns the rules, taken from memcached 1.6's proto_text.c, for how many bytes
 * a request consumes and which answer it gets -- including for malformed
 * requests, because the proxy must pair every answer memcached sends.
 * Must never do I/O, allocate, or write into the caller's buffer. */
#include "protocol/mc_parse.h"

#include <ctype.h>
#include <limits.h>
#include <stddef.h>
#include <string.h>

static const char *const cmd_names[] = {
#define MC_CMD_NAME(id, name) name,
    MC_CMDS(MC_CMD_NAME)
#undef MC_CMD_NAME
};

static const char *const code_names[] = {
#define MC_CODE_NAME(id, name) name,
    MC_CODES(MC_CODE_NAME)
#undef MC_CODE_NAME
};

const char *mc_cmd_name(enum mc_cmd cmd)
{
    return (unsigned)cmd < MC_CMD_COUNT ? cmd_names[cmd] : "?";
}

const char *mc_code_name(enum mc_code code)
{
    return (unsigned)code < MC_CODE_COUNT ? code_names[code] : "?";
}

/* --- tokens, exactly as memcached's tokenize_command sees them ----------- */

struct token {
    const char *s;
    size_t len;
};

/* Splits on ' ' only, at most MC_MAX_TOKENS - 1 tokens plus a terminal one;
 * *rest is set when tokens were left unscanned (memcached then continues a
 * get with the rest, and every other command sees too many tokens). */
static size_t tokenize(const char *line, size_t len, struct token *tok, const char **rest)
{
    size_t n = 0;
    size_t i = 0, start = 0;
    *rest = NULL;
    for (; i < len; i++) {
        if (line[i] != ' ')
            continue;
        if (i > start) {
            tok[n].s = line + start;
            tok[n].len = i - start;
            n++;
            if (n == MC_MAX_TOKENS - 1) {
                start = i + 1;
                i = len; /* stop scanning */
                if (start < len)
                    *rest = line + start;
                break;
            }
        }
        start = i + 1;
    }
    if (!*rest && start < len) {
        tok[n].s = line + start;
        tok[n].len = len - start;
        n++;
    }
    tok[n].s = NULL;
    tok[n].len = 0;
    return n + 1;
}

static bool tok_is(const struct token *t, const char *word)
{
    size_t wl = strlen(word);
    return t->s && t->len == wl && memcmp(t->s, word, wl) == 0;
}

/* memcached's safe_strto* (util.c) run strtol / strtoul / strtoull (base 10,
 * 64-bit long) on a NUL-terminated token. scan_num reproduces what those
 * see, without copying: leading isspace, one sign, the digits, and success
 * only when nothing but isspace follows the digits. Tokens never hold ' '
 * but may hold \t \v \f \r, which strto* skip in front and memcached
 * accepts behind ("1\t9" reads as 1). Any number of leading zeros is fine. */
struct num_scan {
    bool ok; /* a conversion, and only isspace after it */
    bool neg;
    bool range; /* magnitude above UINT64_MAX */
    uint64_t mag;
    bool has_minus; /* memcached's strchr(str, '-') over the whole token */
};

static struct num_scan scan_num(const struct token *t, size_t skip)
{
    struct num_scan n = { false, false, false, 0, false };
    if (!t->s || t->len < skip)
        return n;
    const char *s = t->s + skip, *end = t->s + t->len;
    n.has_minus = memchr(s, '-', (size_t)(end - s)) != NULL;
    while (s < end && isspace((unsigned char)*s))
        s++;
    if (s < end && (*s == '+' || *s == '-')) {
        n.neg = *s == '-';
        s++;
    }
    const char *digits = s;
    for (; s < end && *s >= '0' && *s <= '9'; s++) {
        unsigned d = (unsigned)(*s - '0');
        if (n.range || n.mag > (UINT64_MAX - d) / 10)
            n.range = true;
        else
            n.mag = n.mag * 10 + d;
    }
    if (s == digits)
        return n; /* no conversion: endptr == str */
    n.ok = s == end || isspace((unsigned char)*s);
    return n;
}

/* safe_strtoul / safe_strtoull: strtoul wraps a negative number; memcached
 * refuses it only when the wrapped value looks negative as signed, so
 * "-18446744073709551615" reads as 1, and a 32-bit flags value keeps the low
 * 32 bits of what strtoul gave ("4294967296" reads as 0). */
static bool safe_u64(const struct token *t, size_t skip, uint64_t *out)
{
    struct num_scan n = scan_num(t, skip);
    if (!n.ok || n.range)
        return false;
    uint64_t l = n.neg ? 0 - n.mag : n.mag;
    if ((int64_t)l < 0 && n.has_minus)
        return false;
    *out = l;
    return true;
}

static bool safe_u32(const struct token *t, size_t skip, uint32_t *out)
{
    uint64_t l;
    if (!safe_u64(t, skip, &l))
        return false;
    *out = (uint32_t)l;
    return true;
}

/* safe_strtol: strtol fails only outside the 64-bit long range, and memcached
 * then stores the long into an int32_t, so "4294967297" reads as 1 and
 * "2147483648" as INT32_MIN (memcached 1.6.18: "set k 0 0 4294967297" takes
 * a 1-byte data block; "set k 0 2147483648 1" is STORED). */
static bool safe_i32(const struct token *t, size_t skip, int32_t *out)
{
    struct num_scan n = scan_num(t, skip);
    if (!n.ok || n.range || (n.neg ? n.mag > (uint64_t)INT64_MAX + 1 : n.mag > (uint64_t)INT64_MAX))
        return false;
    uint32_t low = (uint32_t)(n.neg ? 0 - n.mag : n.mag);
    /* the two's complement wrap gcc gives (int32_t)(long), spelled portably */
    *out = low <= (uint32_t)INT32_MAX ? (int32_t)low
                                      : (int32_t)(low - (uint32_t)INT32_MAX - 1) + INT32_MIN;
    return true;
}

static bool base64_char(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
           c == '/' || c == '=';
}

/* Decoded length of a base64 key, 0 when memcached's decoder fails. Like
 * memcached's base64_decode: other bytes are skipped, the base64 bytes ('='
 * included) must come in fours, and decoding stops after the first four
 * holding a '=' (one '=' drops a byte, two drop two, more fail), so
 * "Zm==Zm9v" decodes to the single byte "f". */
static size_t base64_decoded_len(const char *s, size_t len)
{
    size_t count = 0, out = 0;
    unsigned block = 0, pad = 0;
    for (size_t i = 0; i < len; i++)
        count += base64_char((unsigned char)s[i]);
    if (count == 0 || count % 4)
        return 0;
    for (size_t i = 0; i < len; i++) {
        if (!base64_char((unsigned char)s[i]))
            continue;
        pad += s[i] == '=';
        if (++block < 4)
            continue;
        block = 0;
        out += 3;
        if (pad) {
            if (pad > 2)
                return 0;
            out -= pad;
            break;
        }
    }
    return out;
}

static void set_key(struct mc_request *r, const struct token *t)
{
    size_t n = t->len > MC_KEY_MAX ? MC_KEY_MAX : t->len;
    memcpy(r->key, t->s, n);
    r->key[n] = '\0';
    r->key_len_raw = (uint8_t)n;
    r->key_len = (uint16_t)t->len;
}

static bool last_is_noreply(const struct token *tok, size_t ntokens)
{
    return ntokens >= 2 && tok_is(&tok[ntokens - 2], "noreply");
}

/* --- text protocol commands ------------------------------------------------ */

static void parse_update(struct mc_request *r, const struct token *tok, size_t ntokens, bool cas)
{
    int32_t exptime, vlen;
    uint64_t cas_id;
    r->is_write = true;
    r->noreply = last_is_noreply(tok, ntokens);
    r->reply = r->noreply ? MC_REPLY_SILENT : MC_REPLY_LINE;
    set_key(r, &tok[1]);
    /* refused before the data block: 1.6.18 reads the block as commands,
     * 1.6.45 skips it (docs/shared-connections.md) */
    r->version_dependent = true;
    if (tok[1].len > MC_KEY_MAX)
        return;
    if (!safe_u32(&tok[2], 0, &r->flags) || !safe_i32(&tok[3], 0, &exptime) ||
        !safe_i32(&tok[4], 0, &vlen))
        return;
    if (cas && !safe_u64(&tok[5], 0, &cas_id))
        return;
    if (vlen < 0 || vlen > INT_MAX - 2)
        return;
    r->version_dependent = false;
    r->exptime = exptime;
    r->value_len = vlen;
}

static bool want_tokens(size_t ntokens, size_t lo, size_t hi)
{
    return ntokens >= lo && ntokens <= hi;
}

/* Is t a proper prefix of one of names (1.6.45 takes a prefix of a
 * subcommand for the subcommand; 1.6.18 wants the whole word)? */
static bool tok_is_short_for(const struct token *t, const char *const *names, size_t n)
{
    bool short_for = false;
    for (size_t i = 0; i < n; i++) {
        if (tok_is(t, names[i]))
            return false;
        short_for = short_for || (t->len < strlen(names[i]) && !strncmp(t->s, names[i], t->len));
    }
    return short_for;
}

static void parse_stats(struct mc_request *r, const struct token *tok, size_t ntokens)
{
    static const char *const subs[] = { "reset",    "detail",       "settings",     "items",
                                        "slabs",    "sizes",        "cachedump",    "conns",
                                        "extstore", "sizes_enable", "sizes_disable" };
    static const char *const detail[] = { "on", "off", "dump" };
    r->cmd = MC_CMD_STATS;
    r->reply = MC_REPLY_MULTI;
    if (ntokens == 2)
        return;
    r->version_dependent = tok_is_short_for(&tok[1], subs, sizeof subs / sizeof subs[0]) ||
                           (tok_is(&tok[1], "detail") && ntokens >= 4 &&
                            tok_is_short_for(&tok[2], detail, sizeof detail / sizeof detail[0]));
    if (tok_is(&tok[1], "reset"))
        r->reply = MC_REPLY_LINE;
    else if (tok_is(&tok[1], "sizes_enable") || tok_is(&tok[1], "sizes_disable"))
        r->reply = MC_REPLY_SIZES; /* items.c: STAT lines without an END */
    else if (tok_is(&tok[1], "detail")) {
        r->exclusive = ntokens >= 4 && tok_is(&tok[2], "dump");
        r->reply = r->exclusive ? MC_REPLY_MULTI : MC_REPLY_LINE;
    }
}

static void parse_get(struct mc_request *r, const struct token *tok, size_t ntokens,
                      const char *rest, const char *end, enum mc_cmd cmd, bool touch)
{
    int32_t exptime;
    r->cmd = cmd;
    r->reply = MC_REPLY_MULTI;
    size_t first = touch ? 2 : 1;
    bool exptime_ok = !touch || safe_i32(&tok[1], 0, &exptime);
    if (touch && exptime_ok)
        r->exptime = exptime;
    if (first < ntokens - 1)
        set_key(r, &tok[first]);
    r->nkeys = ntokens - 1 > first ? (uint32_t)(ntokens - 1 - first) : 0;
    /* process_get_command refuses the whole request for one key too long */
    for (size_t i = first; i + 1 < ntokens; i++)
        r->key_too_long = r->key_too_long || tok[i].len > MC_KEY_MAX;
    /* keys past the tokenizer's window: count the remaining words */
    for (const char *s = rest; s && s < end;) {
        while (s < end && *s == ' ')
            s++;
        if (s == end)
            break;
        const char *w = s;
        r->nkeys++;
        while (s < end && *s != ' ')
            s++;
        r->key_too_long = r->key_too_long || (size_t)(s - w) > MC_KEY_MAX;
    }
    /* process_touch_command (gat/gats) refuses a bad exptime first: one
     * "CLIENT_ERROR invalid exptime argument", keys never looked at */
    if (!exptime_ok)
        r->key_too_long = false;
}

/* Simple commands whose only variation is a token count and noreply. */
static void parse_simple(struct mc_request *r, const struct token *tok, size_t ntokens,
                         enum mc_cmd cmd, size_t lo, size_t hi, bool keyed)
{
    r->cmd = cmd;
    if (!want_tokens(ntokens, lo, hi)) {
        /* ERROR, one line; 1.6.45 silences it with noreply */
        r->version_dependent = last_is_noreply(tok, ntokens);
        return;
    }
    /* process_delete_command looks for noreply only past the key: `delete
     * noreply` deletes the key "noreply" and is answered */
    r->noreply = (cmd != MC_CMD_DELETE || ntokens > 3) && last_is_noreply(tok, ntokens);
    r->reply = r->noreply ? MC_REPLY_SILENT : MC_REPLY_LINE;
    if (keyed)
        set_key(r, &tok[1]);
    /* 1.6.45 reads noreply at any place of delete, incr, decr and touch,
     * and runs a request with a bad number silently that 1.6.18 answers */
    uint64_t u;
    int32_t t;
    if (last_is_noreply(tok, ntokens) &&
        ((cmd == MC_CMD_DELETE && ntokens == 3) ||
         ((cmd == MC_CMD_INCR || cmd == MC_CMD_DECR) && !safe_u64(&tok[2], 0, &u)) ||
         (cmd == MC_CMD_TOUCH && !safe_i32(&tok[2], 0, &t))))
        r->version_dependent = true;
    int32_t e;
    if ((cmd == MC_CMD_TOUCH) && ntokens >= 4) {
        if (safe_i32(&tok[2], 0, &e))
            r->exptime = e;
    }
    /* process_flush_all_command reads a delay unless only noreply follows */
    if (cmd == MC_CMD_FLUSH_ALL && ntokens != (r->noreply ? 3u : 2u) && safe_i32(&tok[1], 0, &e))
        r->exptime = e;
}

/* A command whose handler calls set_noreply_maybe: a last token "noreply"
 * suppresses every answer out_string() would send, errors included. */
static void noreply_maybe(struct mc_request *r, const struct token *tok, size_t ntokens)
{
    r->noreply = last_is_noreply(tok, ntokens);
    if (r->noreply)
        r->reply = MC_REPLY_SILENT;
}

/* process_watch_command: noreply silences the ERROR that "noreply", never a
 * watch name, brings; an unknown name gets ERROR and the connection goes on
 * (memcached 1.6.18: "watch foo\r\nmn\r\n" answers ERROR, MN); otherwise
 * OK and the log stream. */
static void parse_watch(struct mc_request *r, const struct token *tok, size_t ntokens)
{
    static const char *const names[] = {
        "rawcmds",    "evictions", "fetchers",    "mutations", "sysevents",
        "connevents", "proxyreqs", "proxyevents", "proxyuser",
    };
    r->cmd = MC_CMD_WATCH;
    noreply_maybe(r, tok, ntokens);
    if (r->noreply) {
        r->version_dependent = true; /* 1.6.18 silent, 1.6.45 ERROR */
        return;
    }
    for (size_t i = 1; i + 1 < ntokens; i++) {
        bool known = false;
        for (size_t n = 0; n < sizeof names / sizeof names[0]; n++)
            known = known || tok_is(&tok[i], names[n]);
        if (!known) {
            /* ERROR, one line (1.6.45: a prefix of a name is that name) */
            r->version_dependent = true;
            return;
        }
    }
    r->reply = MC_REPLY_STREAM;
    r->exclusive = true;
}

/* --- meta commands ------------------------------------------------------- */

#define META_MAX_TOKENS 20       /* memcached's MFLAG_MAX_OPT_LENGTH */
#define META_OPAQUE_TOKEN_MAX 32 /* MFLAG_MAX_OPAQUE_LENGTH, the 'O' included */

/* memcached's _meta_flag_preparse, plus the O length check each meta
 * command makes afterwards: false when the flags are refused. *mode gets
 * the M flag's character (0 when absent). */
static bool meta_flags(struct mc_request *r, const struct token *tok, size_t start, char *mode)
{
    bool seen[128] = { false };
    bool ok = true;
    *mode = 0;
    for (size_t i = start; tok[i].len; i++) {
        unsigned char o = (unsigned char)tok[i].s[0];
        uint32_t u32;
        uint64_t u64;
        int32_t i32;
        if (o >= 127 || seen[o])
            return false;
        seen[o] = true;
        switch (o) {
        case 'b':
            r->key_b64 = true;
            r->key_len = (uint16_t)base64_decoded_len(r->key, r->key_len_raw);
            if (r->key_len == 0)
                ok = false;
            break;
        case 'N':
        case 'T':
        case 'R':
            if (!safe_i32(&tok[i], 1, &i32))
                ok = false;
            else if (o == 'T')
                r->exptime = i32;
            if (o == 'N')
                r->vivify = true;
            break;
        case 'F':
            if (!safe_u32(&tok[i], 1, &u32))
                ok = false;
            else
                r->flags = u32;
            break;
        case 'C':
        case 'J':
        case 'D':
            if (!safe_u64(&tok[i], 1, &u64))
                ok = false;
            break;
        case 'M':
            if (tok[i].len != 2)
                ok = false;
            else
                *mode = tok[i].s[1];
            break;
        case 'O':
            /* memcached 1.6.18: "mg k O" + 32 bytes -> CLIENT_ERROR opaque
             * token too long; "O" + 31 bytes is echoed */
            if (tok[i].len <= META_OPAQUE_TOKEN_MAX) {
                r->has_opaque = true;
                r->opaque_len = (uint8_t)(tok[i].len - 1);
                memcpy(r->opaque, tok[i].s + 1, r->opaque_len);
                r->opaque[r->opaque_len] = '\0';
            } else {
                ok = false; /* "opaque token too long", reported later */
            }
            break;
        case 'k': r->want_key = true; break;
        case 'q': r->noreply = true; break;
        case 'l':
        case 'P':
        case 'L':
        case 's':
        case 't':
        case 'c':
        case 'f':
        case 'v':
        case 'h':
        case 'u':
        case 'I': break;
        default: return false;
        }
    }
    return ok;
}

static void parse_meta(struct mc_request *r, const struct token *tok, size_t ntokens, char which)
{
    switch (which) {
    case 'g': r->cmd = MC_CMD_MG; break;
    case 's':
        r->cmd = MC_CMD_MS;
        r->is_write = true;
        break;
    case 'd': r->cmd = MC_CMD_MD; break;
    case 'a': r->cmd = MC_CMD_MA; break;
    case 'n': r->cmd = MC_CMD_MN; return;
    case 'e':
        /* process_meta_command: one line (ME, EN or CLIENT_ERROR); a
         * "b" right after the key decodes it */
        r->cmd = MC_CMD_ME;
        if (ntokens >= 3 && tok[1].len <= MC_KEY_MAX) {
            set_key(r, &tok[1]);
            if (ntokens >= 4 && tok_is(&tok[2], "b")) {
                r->key_b64 = true;
                r->key_len = (uint16_t)base64_decoded_len(r->key, r->key_len_raw);
            }
        }
        return;
    default: r->cmd = MC_CMD_INVALID; return;
    }
    if (ntokens < 3) {
        r->is_write = false; /* ERROR before anything is parsed */
        return;
    }
    set_key(r, &tok[1]);
    if (tok[1].len > MC_KEY_MAX || ntokens > META_MAX_TOKENS) {
        /* ms: 1.6.18 reads the data block as commands, 1.6.45 skips it */
        r->version_dependent = r->cmd == MC_CMD_MS;
        return;
    }
    size_t flags_from = 2;
    int32_t vlen = -1;
    if (r->cmd == MC_CMD_MS) {
        /* no data block follows any of these refusals */
        if (ntokens == 3 || !safe_i32(&tok[2], 0, &vlen) || vlen < 0 || vlen > INT_MAX - 2)
            return;
        flags_from = 3;
    }
    char mode;
    bool ok = meta_flags(r, tok, flags_from, &mode);
    if (r->cmd == MC_CMD_MS) {
        r->value_len = vlen;
        r->ms_mode = mode;
        if (mode && !strchr("EAPRS", mode))
            ok = false;
        r->swallowed = !ok;
        /* a refused ms is answered and framed differently by 1.6.18 and
         * 1.6.45, and 1.6.45 takes E<n> and x, which 1.6.18 refuses */
        r->version_dependent = !ok;
        for (size_t i = flags_from; tok[i].len; i++)
            if (tok[i].s[0] == 'E' || tok[i].s[0] == 'x')
                r->version_dependent = true;
    } else if (r->cmd == MC_CMD_MA && mode && !strchr("I+D-", mode)) {
        ok = false; /* "CLIENT_ERROR invalid mode for ma M token", even with q */
    }
    /* errors are always sent; only a nominal answer is suppressed */
    if (ok && r->noreply)
        r->reply = MC_REPLY_SILENT;
    else
        r->noreply = false;
}

static void parse_line_cmd(struct mc_request *r, const char *line, size_t len);

/* One request line: its command, then the HTTP defence both versions
 * have in different places (a line that ends in an HTTP/ token and that
 * memcached does not close on here may close on the other version, or
 * where misbehave and debugtime are not built in: it moves). */
static void parse_line(struct mc_request *r, const char *line, size_t len)
{
    parse_line_cmd(r, line, len);
    if (r->reply == MC_REPLY_CLOSE)
        return;
    /* any word after the first that starts with HTTP/: the last word, or
     * the start of the tokenizer's last token (the rest of a line of more
     * than 23 words), which is what memcached looks at */
    const char *nul = memchr(line, '\0', len);
    size_t n = nul ? (size_t)(nul - line) : len;
    for (const char *h = memchr(line, 'H', n); h && !r->version_dependent;
         h = memchr(h + 1, 'H', n - (size_t)(h + 1 - line)))
        r->version_dependent =
            h > line && h[-1] == ' ' && (size_t)(line + n - h) >= 5 && !memcmp(h, "HTTP/", 5);
}

static void parse_line_cmd(struct mc_request *r, const char *line, size_t len)
{
    struct token tok[MC_MAX_TOKENS + 1];
    const char *rest;
    size_t ntokens;

    const char *nul = memchr(line, '\0', len);
    if (nul)
        len = (size_t)(nul - line); /* memcached's line ends at a NUL byte */
    ntokens = tokenize(line, len, tok, &rest);
    r->cmd = MC_CMD_INVALID;
    r->reply = MC_REPLY_LINE;
    if (ntokens < 2 || tok[0].len < 2) {
        /* 1.6.45 closes on "x HTTP/1.1", 1.6.18 answers ERROR */
        r->version_dependent =
            ntokens >= 3 && tok[ntokens - 2].len >= 5 && !memcmp(tok[ntokens - 2].s, "HTTP/", 5);
        return;
    }
    const struct token *c = &tok[0];
    if (c->s[0] == 'm' && c->len == 2) {
        parse_meta(r, tok, ntokens, c->s[1]);
    } else if (tok_is(c, "get") || tok_is(c, "bget") || tok_is(c, "gets") || tok_is(c, "gat") ||
               tok_is(c, "gats")) {
        if (ntokens < 3)
            return;
        if (tok_is(c, "gets"))
            parse_get(r, tok, ntokens, rest, line + len, MC_CMD_GETS, false);
        else if (tok_is(c, "gat"))
            parse_get(r, tok, ntokens, rest, line + len, MC_CMD_GAT, true);
        else if (tok_is(c, "gats"))
            parse_get(r, tok, ntokens, rest, line + len, MC_CMD_GATS, true);
        else
            parse_get(r, tok, ntokens, rest, line + len, MC_CMD_GET, false);
    } else if (tok_is(c, "set") || tok_is(c, "add") || tok_is(c, "replace") ||
               tok_is(c, "append") || tok_is(c, "prepend")) {
        r->cmd = tok_is(c, "set")       ? MC_CMD_SET
                 : tok_is(c, "add")     ? MC_CMD_ADD
                 : tok_is(c, "replace") ? MC_CMD_REPLACE
                 : tok_is(c, "append")  ? MC_CMD_APPEND
                                        : MC_CMD_PREPEND;
        if (want_tokens(ntokens, 6, 7))
            parse_update(r, tok, ntokens, false);
        else /* 1.6.18 ERROR (any block read as commands), 1.6.45 may read it */
            r->version_dependent = true;
    } else if (tok_is(c, "cas")) {
        r->cmd = MC_CMD_CAS;
        if (want_tokens(ntokens, 7, 8))
            parse_update(r, tok, ntokens, true);
        else
            r->version_dependent = true;
    } else if (tok_is(c, "stats")) {
        parse_stats(r, tok, ntokens);
    } else if (tok_is(c, "delete")) {
        parse_simple(r, tok, ntokens, MC_CMD_DELETE, 3, 5, true);
    } else if (tok_is(c, "incr") || tok_is(c, "decr")) {
        parse_simple(r, tok, ntokens, tok_is(c, "incr") ? MC_CMD_INCR : MC_CMD_DECR, 4, 5, true);
    } else if (tok_is(c, "touch")) {
        parse_simple(r, tok, ntokens, MC_CMD_TOUCH, 4, 5, true);
    } else if (tok_is(c, "flush_all")) {
        parse_simple(r, tok, ntokens, MC_CMD_FLUSH_ALL, 2, 4, false);
    } else if (tok_is(c, "verbosity")) {
        parse_simple(r, tok, ntokens, MC_CMD_VERBOSITY, 3, 4, false);
    } else if (tok_is(c, "cache_memlimit")) {
        parse_simple(r, tok, ntokens, MC_CMD_OTHER, 3, 4, false);
    } else if (tok_is(c, "version")) {
        r->cmd = MC_CMD_VERSION;
    } else if (tok_is(c, "quit")) {
        r->cmd = MC_CMD_QUIT;
        r->reply = MC_REPLY_CLOSE;
    } else if (tok_is(c, "watch")) {
        parse_watch(r, tok, ntokens);
    } else if (tok_is(c, "lru_crawler")) {
        r->cmd = MC_CMD_OTHER;
        if (ntokens == 4 && tok_is(&tok[1], "metadump")) {
            r->reply = MC_REPLY_MULTI;
            r->exclusive = true;
        } else if (ntokens >= 3 && tok[1].s[0] == 'm') {
            /* 1.6.45: mgdump, and prefixes of metadump/mgdump, hand the
             * connection to the crawler */
            r->version_dependent = true;
        }
        r->version_dependent = r->version_dependent || last_is_noreply(tok, ntokens);
    } else if (tok_is(c, "slabs")) {
        /* only the automove branch reads noreply ("slabs automove 1 noreply"
         * answers nothing; "slabs reassign 1 noreply" a CLIENT_ERROR) */
        r->cmd = MC_CMD_OTHER;
        if (ntokens >= 4 && tok_is(&tok[1], "automove"))
            noreply_maybe(r, tok, ntokens);
        else /* 1.6.45 silences the others' answers with noreply too */
            r->version_dependent = last_is_noreply(tok, ntokens);
    } else if (tok_is(c, "lru") || tok_is(c, "extstore")) {
        /* WANT_TOKENS_MIN(3), then set_noreply_maybe (Debian's memcached is
         * built with extstore: "extstore noreply" answers nothing) */
        r->cmd = MC_CMD_OTHER;
        if (ntokens >= 3)
            noreply_maybe(r, tok, ntokens);
    } else if (tok_is(c, "shutdown")) {
        /* with -A memcached closes every connection and exits; without it,
         * "ERROR: shutdown not enabled" */
        r->cmd = MC_CMD_OTHER;
        r->stops_server = true;
    } else if (tok_is(c, "misbehave") || tok_is(c, "debugtime") || tok_is(c, "refresh_certs")) {
        r->cmd = MC_CMD_OTHER;
        r->version_dependent = last_is_noreply(tok, ntokens); /* 1.6.45 silent */
    } else if (tok[ntokens - 2].len >= 5 && !memcmp(tok[ntokens - 2].s, "HTTP/", 5)) {
        /* process_command_ascii: an unknown command whose last token starts
         * with HTTP/ is an HTTP request line (cross-protocol defence):
         * memcached closes the connection without a word -- 1.6.18 only
         * past its first-letter dispatch (a command of two bytes or more,
         * not g s a c i d t, not a two-byte m?), 1.6.45 only with a command
         * before it */
        bool both = ntokens >= 3 && !strchr("gsacidt", c->s[0]) && !(c->len == 2 && c->s[0] == 'm');
        if (both)
            r->reply = MC_REPLY_CLOSE;
        else
            r->version_dependent = true;
    } else {
        /* an unknown command: ERROR; 1.6.45 silences it with noreply */
        r->version_dependent = last_is_noreply(tok, ntokens);
    }
}

/* --- request stream ------------------------------------------------------ */

void mc_req_init(struct mc_req_parser *p)
{
    memset(p, 0, sizeof *p);
    p->state = MC_REQ_LINE;
}

bool mc_req_shareable(const struct mc_request *r)
{
    return r->reply != MC_REPLY_CLOSE && r->reply != MC_REPLY_STREAM && !r->exclusive &&
           !r->key_too_long && !r->long_line && !r->version_dependent && !r->stops_server &&
           !r->binary_magic;
}

bool mc_req_at_boundary(const struct mc_req_parser *p)
{
    return p->state == MC_REQ_LINE && p->line_len == 0 && p->bytes == 0;
}

/* Every field: flags, exptime, opaque and k of one request must not leak
 * into the next (an "ms a 1 F5 T9 O1 k" then "ms b 1" was recorded with
 * flags 5, exptime 9, and paired as if b had asked for O1 and k). */
static void req_reset(struct mc_request *r)
{
    memset(r, 0, sizeof *r);
    r->value_len = -1;
}

/* A line with no '\n' after MC_LINE_MAX bytes: memcached keeps reading only a
 * multiget that starts within 100 bytes of leading spaces. */
static bool long_line_allowed(const struct mc_req_parser *p)
{
    if (p->lead > 100)
        return false;
    const char *s = p->line + (p->lead ? 1 : 0); /* the leading run is one space */
    size_t n = p->kept - (p->lead ? 1 : 0);
    return (n >= 4 && !memcmp(s, "get ", 4)) || (n >= 5 && !memcmp(s, "gets ", 5));
}

/* Finishes a request line; returns true when a data block follows. */
static bool req_line_done(struct mc_req_parser *p)
{
    size_t len = p->kept + p->ov_bytes;
    /* memcached counts every byte before the '\n', the '\r' included */
    bool long_line = p->line_len > MC_LINE_MAX && !long_line_allowed(p);
    /* memcached strips a '\r' only from a line of two or more bytes */
    if (p->line_len > 1 && p->line_last == '\r')
        len--;
    bool whole = len <= MC_LINE_MAX;
    if (!whole)
        len = MC_LINE_MAX; /* the first MC_LINE_MAX bytes, and a word count */
    p->line[len] = '\0';
    req_reset(&p->req);
    parse_line(&p->req, p->line, len);
    p->req.long_line = long_line;
    /* a request starting with 0x80 is text on a connection that has seen
     * other bytes, but the first bytes of a new shared connection make
     * memcached speak the binary protocol */
    p->req.binary_magic = p->kept > 0 && (unsigned char)p->line[0] == 0x80;
    if (!whole && (p->req.cmd == MC_CMD_GET || p->req.cmd == MC_CMD_GETS ||
                   p->req.cmd == MC_CMD_GAT || p->req.cmd == MC_CMD_GATS)) {
        uint32_t extra = p->ov_words;
        uint32_t long_words = p->ov_long_words;
        /* the stripped '\r' was counted as a word of its own */
        if (!p->ov_nul && p->line_last == '\r' && p->ov_in_word && p->ov_word_len == 1)
            extra--;
        /* ... or as the last byte of the last word */
        if (!p->ov_nul && p->line_last == '\r' && p->ov_in_word &&
            p->ov_cur_len == MC_KEY_MAX + 2 - 1 && long_words)
            long_words--;
        p->req.key_too_long = p->req.key_too_long || long_words;
        p->req.nkeys += extra;
    }
    p->line_len = 0;
    p->line_last = 0;
    p->kept = 0;
    p->ov_bytes = 0;
    p->lead = 0;
    p->nonspace = false;
    if (p->req.value_len < 0)
        return false;
    p->data_left = (size_t)p->req.value_len + 2;
    p->data_tail[0] = p->data_tail[1] = 0;
    return true;
}

/* Counts the words (memcached's tokens) of a line's bytes past the
 * MC_LINE_MAX kept, so a long multiget's nkeys counts all its keys. */
static void req_overflow(struct mc_req_parser *p, const char *s, size_t n)
{
    for (size_t i = 0; i < n && !p->ov_nul; i++) {
        if (s[i] == '\0') {
            p->ov_nul = true; /* memcached's line ends at a NUL byte */
        } else if (s[i] == ' ') {
            p->ov_in_word = false;
            p->ov_word_len = 0;
            p->ov_cur_len = 0;
        } else {
            if (!p->ov_in_word) {
                p->ov_in_word = true;
                p->ov_words++;
            }
            if (p->ov_word_len < 2)
                p->ov_word_len++;
            if (p->ov_cur_len < MC_KEY_MAX + 2 && ++p->ov_cur_len == MC_KEY_MAX + 1)
                p->ov_long_words++;
        }
    }
}

/* Appends take bytes of the current line: the first MC_LINE_MAX are kept,
 * the words of the rest are counted. */
static void req_line_append(struct mc_req_parser *p, const char *s, size_t take)
{
    if (take == 0)
        return;
    size_t i = 0;
    for (; i < take && !p->nonspace; i++) {
        if (s[i] != ' ') {
            p->nonspace = true;
            break;
        }
        if (p->lead <= 100)
            p->lead++;
        if (p->kept == 0)
            p->line[p->kept++] = ' ';
    }
    while (i < take && p->kept < MC_LINE_MAX) {
        char ch = s[i++];
        if (ch != ' ' || p->line[p->kept - 1] != ' ')
            p->line[p->kept++] = ch;
    }
    /* spaces that would only continue the run kept are not bytes past it */
    while (i < take && p->ov_bytes == 0 && s[i] == ' ' && p->line[MC_LINE_MAX - 1] == ' ')
        i++;
    size_t kept = i;
    if (kept < take) {
        if (p->ov_bytes == 0) {
            /* the line overflows now: carry the state at the cut over */
            p->ov_words = 0;
            p->ov_nul = memchr(p->line, '\0', MC_LINE_MAX) != NULL;
            p->ov_in_word = p->line[MC_LINE_MAX - 1] != ' ';
            p->ov_word_len = p->ov_in_word ? 2 : 0;
            /* a word cut in two: its kept part counts towards its length */
            size_t tail = 0;
            while (tail < MC_LINE_MAX && p->line[MC_LINE_MAX - 1 - tail] != ' ')
                tail++;
            p->ov_cur_len = (uint16_t)(tail > MC_KEY_MAX + 1 ? MC_KEY_MAX + 1 : tail);
            p->ov_long_words = 0;
        }
        req_overflow(p, s + kept, take - kept);
        p->ov_bytes += take - kept;
    }
    p->line_len += take;
    p->line_last = s[take - 1];
}

static enum mc_result req_complete(struct mc_req_parser *p, struct mc_request *out)
{
    *out = p->req;
    out->bytes = p->bytes;
    p->bytes = 0;
    p->state = (out->reply == MC_REPLY_CLOSE || out->reply == MC_REPLY_STREAM) ? MC_REQ_CLOSED
                                                                               : MC_REQ_LINE;
    return MC_OK;
}

static void data_tail_push(struct mc_req_parser *p, const char *s, size_t n)
{
    if (n >= 2) {
        p->data_tail[0] = s[n - 2];
        p->data_tail[1] = s[n - 1];
    } else if (n == 1) {
        p->data_tail[0] = p->data_tail[1];
        p->data_tail[1] = s[0];
    }
}

enum mc_result mc_req_parse(struct mc_req_parser *p, const char *buf, size_t len, size_t *used,
                            struct mc_request *out)
{
    size_t pos = 0;
    enum mc_result res = MC_NEED_MORE;

    if (!p->started && len > 0) {
        p->started = true;
        /* memcached picks the binary protocol for a connection whose first
         * byte is 0x80 (PROTOCOL_BINARY_REQ); its answers are not lines */
        if ((unsigned char)buf[0] == 0x80) {
            p->state = MC_REQ_CLOSED;
            *used = 0;
            return MC_ERROR;
        }
    }
    while (pos < len) {
        if (p->state == MC_REQ_CLOSED) {
            pos = len; /* memcached reads nothing after quit or watch */
            break;
        }
        if (p->state == MC_REQ_DATA) {
            size_t n = len - pos < p->data_left ? len - pos : p->data_left;
            data_tail_push(p, buf + pos, n);
            p->data_left -= n;
            p->bytes += n;
            pos += n;
            if (p->data_left == 0) {
                p->req.bad_data = !(p->data_tail[0] == '\r' && p->data_tail[1] == '\n');
                if (p->req.bad_data && p->req.cmd == MC_CMD_MS) {
                    /* complete_nread_ascii: "metaset mode always returns
                     * errors" -- ms q gets CLIENT_ERROR bad data chunk (text
                     * noreply stays silent) */
                    p->req.noreply = false;
                    p->req.reply = MC_REPLY_LINE;
                }
                res = req_complete(p, out);
                break;
            }
            continue;
        }
        const char *nl = memchr(buf + pos, '\n', len - pos);
        size_t take = nl ? (size_t)(nl - (buf + pos)) : len - pos;
        req_line_append(p, buf + pos, take);
        p->bytes += take + (nl ? 1 : 0);
        pos += take + (nl ? 1 : 0);
        if (!nl) {
            if (p->line_len > MC_LINE_MAX && p->state == MC_REQ_LINE) {
                if (!long_line_allowed(p)) {
                    p->state = MC_REQ_CLOSED;
                    res = MC_ERROR;
                    break;
                }
                p->state = MC_REQ_LONG_GET;
            }
            continue;
        }
        p->state = MC_REQ_LINE;
        if (req_line_done(p)) {
            p->state = MC_REQ_DATA;
            if (pos == len)
                break;
            continue;
        }
        res = req_complete(p, out);
        break;
    }
    *used = pos;
    return res;
}

/* --- response stream ----------------------------------------------------- */

void mc_resp_init(struct mc_resp_parser *p)
{
    memset(p, 0, sizeof *p);
    p->state = MC_RESP_LINE;
}

bool mc_resp_at_boundary(const struct mc_resp_parser *p)
{
    return p->state == MC_RESP_LINE && p->wire_len == 0;
}

static bool all_digits(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return false;
    return true;
}

/* Parses the n-th space separated word of a line as a length. */
static int64_t word_as_len(const char *s, size_t len, unsigned nth)
{
    size_t i = 0;
    for (unsigned w = 0; w < nth; w++) {
        while (i < len && s[i] != ' ')
            i++;
        while (i < len && s[i] == ' ')
            i++;
    }
    int64_t v = 0;
    size_t start = i;
    while (i < len && isdigit((unsigned char)s[i]) && v < ((int64_t)1 << 40))
        v = v * 10 + (s[i++] - '0');
    return i > start ? v : -1;
}

static enum mc_code classify(const char *s, size_t len)
{
    size_t w = 0;
    while (w < len && s[w] != ' ')
        w++;
    for (int c = MC_CODE_STORED; c < MC_CODE_COUNT; c++) {
        if (c == MC_CODE_NUMBER)
            continue;
        size_t n = strlen(code_names[c]);
        if (n == w && !memcmp(s, code_names[c], n))
            return (enum mc_code)c;
    }
    if (w >= 5 && !memcmp(s, "ERROR", 5))
        return MC_CODE_ERROR; /* "ERROR: shutdown not enabled" and kin */
    if (all_digits(s, w) && w == len)
        return MC_CODE_NUMBER;
    return MC_CODE_UNKNOWN;
}

static void resp_line_done(struct mc_resp_parser *p, struct mc_line *l)
{
    size_t len = p->line_len > MC_LINE_MAX ? MC_LINE_MAX : p->line_len;
    if (!p->truncated && len > 0 && p->line[len - 1] == '\r')
        len--;
    p->line[len] = '\0';
    l->text = p->line;
    l->len = len;
    l->truncated = p->truncated;
    l->code = classify(p->line, len);
    l->bytes = p->wire_len;
    l->data_len = -1;
    if (l->code == MC_CODE_VALUE)
        l->data_len = word_as_len(p->line, len, 3);
    else if (l->code == MC_CODE_VA)
        l->data_len = word_as_len(p->line, len, 1);
    p->line_len = 0;
    p->wire_len = 0;
    p->truncated = false;
}

enum mc_result mc_resp_parse(struct mc_resp_parser *p, const char *buf, size_t len, size_t *used,
                             struct mc_line *out)
{
    size_t pos = 0;
    enum mc_result res = MC_NEED_MORE;

    while (pos < len) {
        if (p->state == MC_RESP_DATA) {
            size_t n = len - pos < p->data_left ? len - pos : p->data_left;
            /* the last two bytes of the block must be \r\n */
            if ((p->data_left >= 2 && p->data_left - 2 < n &&
                 buf[pos + p->data_left - 2] != '\r') ||
                (p->data_left - 1 < n && buf[pos + p->data_left - 1] != '\n')) {
                res = MC_ERROR;
                goto out;
            }
            p->data_left -= n;
            p->pending.bytes += n;
            pos += n;
            if (p->data_left == 0) {
                p->state = MC_RESP_LINE;
                *out = p->pending;
                out->text = p->line;
                res = MC_OK;
                break;
            }
            continue;
        }
        const char *nl = memchr(buf + pos, '\n', len - pos);
        size_t take = nl ? (size_t)(nl - (buf + pos)) : len - pos;
        if (p->line_len < MC_LINE_MAX) {
            size_t room = MC_LINE_MAX - p->line_len;
            memcpy(p->line + p->line_len, buf + pos, take < room ? take : room);
        }
        if (p->line_len + take > MC_LINE_MAX)
            p->truncated = true;
        p->line_len += take;
        p->wire_len += take + (nl ? 1 : 0);
        pos += take + (nl ? 1 : 0);
        if (!nl)
            continue;
        resp_line_done(p, &p->pending);
        if (p->pending.data_len >= 0) {
            p->data_left = (size_t)p->pending.data_len + 2;
            p->state = MC_RESP_DATA;
            continue;
        }
        *out = p->pending;
        res = MC_OK;
        break;
    }
out:
    *used = pos;
    return res;
}

/* --- pairing rules ------------------------------------------------------- */

bool mc_answer_ends(const struct mc_request *r, const struct mc_line *line, bool first)
{
    static const char sizes_error[] = "STAT sizes_status error";
    switch (r->reply) {
    case MC_REPLY_MULTI: return mc_line_ends_multi(line);
    case MC_REPLY_SIZES:
        /* item_stats_sizes_enable: "sizes_status error" is followed by one
         * "sizes_error" line; every other answer is one line */
        return !first || line->len != sizeof sizes_error - 1 ||
               memcmp(line->text, sizes_error, sizeof sizes_error - 1) != 0;
    default: return true;
    }
}

bool mc_line_is_error(const struct mc_line *l)
{
    return l->code == MC_CODE_ERROR || l->code == MC_CODE_CLIENT_ERROR ||
           l->code == MC_CODE_SERVER_ERROR;
}

static bool line_starts(const struct mc_line *l, const char *word)
{
    size_t n = strlen(word);
    return l->len >= n && !memcmp(l->text, word, n);
}

bool mc_line_ends_multi(const struct mc_line *l)
{
    /* lru_crawler metadump refuses with one line that is no error line
     * (memcached 1.6.18: "lru_crawler metadump 99" -> BADCLASS invalid
     * class id); no line of a get, stats or dump answer starts so */
    return l->code == MC_CODE_END || mc_line_is_error(l) || line_starts(l, "BUSY ") ||
           line_starts(l, "BADCLASS ") || line_starts(l, "NOTSTARTED ");
}

/* Finds the meta return flag starting with c ("O123", "kfoo"), if any. */
static bool meta_flag(const struct mc_line *l, char c, const char **val, size_t *vlen)
{
    const char *s = l->text, *end = l->text + l->len;
    while (s < end && *s != ' ')
        s++; /* skip the code */
    while (s < end) {
        while (s < end && *s == ' ')
            s++;
        const char *w = s;
        while (s < end && *s != ' ')
            s++;
        if (s > w && *w == c) {
            *val = w + 1;
            *vlen = (size_t)(s - w - 1);
            return true;
        }
    }
    return false;
}

/* memcached 1.6 echoes O and k on every meta status line of a request that
 * asked for them, and never otherwise (1.6.18: "NS O2 kqb", "NF O5 knozz",
 * "EN knox O9"). A base64 key is echoed re-encoded from the decoded bytes,
 * so its text may differ from the one sent: only its presence counts. */
static bool meta_echo_matches(const struct mc_line *l, char c, bool asked, const char *want,
                              size_t want_len, bool compare)
{
    const char *v;
    size_t vl;
    if (!meta_flag(l, c, &v, &vl))
        return !asked;
    if (!asked)
        return false;
    return !compare || (vl == want_len && !memcmp(v, want, vl));
}

bool mc_reply_is_mine(const struct mc_request *r, const struct mc_line *l)
{
    if (r->reply != MC_REPLY_SILENT)
        return true;
    if (r->cmd != MC_CMD_MS && r->cmd != MC_CMD_MG && r->cmd != MC_CMD_MD && r->cmd != MC_CMD_MA) {
        /* text noreply: memcached 1.6's out_string() drops every answer,
         * errors included, and out_of_memory() goes through it (1.6.18 -M:
         * "set k 0 0 N noreply" past the memory limit answers nothing) */
        return false;
    }
    /* run-time failures are sent despite q: out of memory, too large for
     * the cache, refcount overflow, ma on a non-numeric value. A line the
     * parser accepted cannot bring a CLIENT_ERROR otherwise (an ms q data
     * block without \r\n already made the request loud). */
    if (l->code == MC_CODE_SERVER_ERROR)
        return true;
    if (l->code == MC_CODE_CLIENT_ERROR)
        return r->cmd == MC_CMD_MA;
    bool possible = false;
    enum mc_code c = l->code;
    switch (r->cmd) {
    case MC_CMD_MS: /* HD suppressed */
        possible = c == MC_CODE_NS || c == MC_CODE_EX || c == MC_CODE_NF;
        break;
    case MC_CMD_MG: /* EN suppressed; a hit answers (1.6.18: "mg k q" -> HD) */
        possible = c == MC_CODE_HD || c == MC_CODE_VA;
        break;
    case MC_CMD_MD: /* HD suppressed, also when I marks the item stale */
        possible = c == MC_CODE_NF || c == MC_CODE_EX;
        break;
    default: /* MA: an update's HD or VA suppressed (1.6.18: "ma n q v" answers
                nothing); an item N created answers HD / VA despite q ("ma ctr
                N0 q" -> HD). Without O or k the line names nobody, but the
                proxy puts a barrier behind every such quiet request, so the
                only other line that can come next is that barrier's MN. */
        possible = c == MC_CODE_NF || c == MC_CODE_NS || c == MC_CODE_EX ||
                   ((c == MC_CODE_HD || c == MC_CODE_VA) && r->vivify);
        break;
    }
    if (!possible)
        return false;
    return meta_echo_matches(l, 'O', r->has_opaque, r->opaque, r->opaque_len, true) &&
           meta_echo_matches(l, 'k', r->want_key, r->key, r->key_len_raw, !r->key_b64);
}
