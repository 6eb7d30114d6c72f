/* mcflags: spec flags against `stats settings`. */
#include "experiment/mcflags.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t mcflags_stats_parse(struct mcflags_stats *s, const char *text, size_t len)
{
    size_t added = 0;
    for (size_t i = 0; i < len;) {
        size_t end = i;
        while (end < len && text[end] != '\n')
            end++;
        size_t e = end;
        if (e > i && text[e - 1] == '\r')
            e--;
        if (e - i > 5 && !memcmp(text + i, "STAT ", 5)) {
            const char *name = text + i + 5;
            const char *sp = memchr(name, ' ', (size_t)(text + e - name));
            if (sp && s->n < MCFLAGS_KV_MAX && (size_t)(sp - name) < MCFLAGS_NAME_MAX &&
                (size_t)(text + e - sp - 1) < MCFLAGS_VALUE_MAX) {
                struct mcflags_kv *kv = &s->kv[s->n++];
                snprintf(kv->name, sizeof kv->name, "%.*s", (int)(sp - name), name);
                snprintf(kv->value, sizeof kv->value, "%.*s", (int)(text + e - sp - 1), sp + 1);
                added++;
            }
        }
        i = end + 1;
    }
    return added;
}

const char *mcflags_stats_get(const struct mcflags_stats *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->kv[i].name, name))
            return s->kv[i].value;
    return NULL;
}

/* What the run needs of one setting. */
struct mcflags_want {
    const char *setting;
    char value[MCFLAGS_VALUE_MAX];
    char flag[MCFLAGS_VALUE_MAX]; /* as the spec said it, or "default" */
    bool factor;                  /* compared to two decimals, as memcached prints it */
};

#define MCFLAGS_WANTS_MAX 24

struct mcflags_wants {
    size_t n;
    struct mcflags_want w[MCFLAGS_WANTS_MAX];
};

static struct mcflags_want *want_set(struct mcflags_wants *ws, const char *setting)
{
    for (size_t i = 0; i < ws->n; i++)
        if (!strcmp(ws->w[i].setting, setting))
            return &ws->w[i];
    if (ws->n == MCFLAGS_WANTS_MAX)
        return NULL;
    struct mcflags_want *w = &ws->w[ws->n++];
    memset(w, 0, sizeof *w);
    w->setting = setting;
    return w;
}

static int want(struct mcflags_wants *ws, const char *setting, const char *value, bool factor,
                const char *flag)
{
    struct mcflags_want *w = want_set(ws, setting);
    if (!w)
        return -1;
    snprintf(w->value, sizeof w->value, "%s", value);
    snprintf(w->flag, sizeof w->flag, "%s", flag);
    w->factor = factor;
    return 0;
}

/* "1m", "512k", "1048576" -> bytes; false when not a size. */
static bool size_value(const char *s, unsigned long long *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s)
        return false;
    if (*end == 'k' || *end == 'K')
        v *= 1024, end++;
    else if (*end == 'm' || *end == 'M')
        v *= 1024 * 1024, end++;
    *out = v;
    return *end == '\0';
}

/* One -o item ("slab_automove=2", "slab_reassign"). */
static int want_o(struct mcflags_wants *ws, const char *item, char *msg, size_t msglen)
{
    char key[MCFLAGS_NAME_MAX], flag[MCFLAGS_VALUE_MAX];
    const char *eq = strchr(item, '=');
    snprintf(key, sizeof key, "%.*s", (int)(eq ? (size_t)(eq - item) : strlen(item)), item);
    snprintf(flag, sizeof flag, "-o %s", item);
    static const char *const known[] = { "slab_automove", "slab_reassign",      "slab_chunk_max",
                                         "lru_crawler",   "lru_maintainer",     "hash_algorithm",
                                         "idle_timeout",  "slab_automove_ratio" };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(known[i], key))
            return want(ws, known[i], eq ? eq + 1 : "yes", false, flag);
    snprintf(msg, msglen, "cannot check %s against stats settings", flag);
    return -1;
}

/* The settings args decide, memcached's defaults first. */
static int mcflags_wants(const char *args, struct mcflags_wants *ws, char *msg, size_t msglen)
{
    char copy[1024], *save = NULL, num[64];
    ws->n = 0;
    want(ws, "maxbytes", "67108864", false, "default -m 64");
    want(ws, "growth_factor", "1.25", true, "default -f 1.25");
    want(ws, "chunk_size", "48", false, "default -n 48");
    want(ws, "item_size_max", "1048576", false, "default -I 1m");
    want(ws, "cas_enabled", "yes", false, "default: CAS on");
    want(ws, "evictions", "on", false, "default: evictions on");
    want(ws, "slab_automove", "1", false, "default -o slab_automove=1");
    snprintf(copy, sizeof copy, "%s", args);
    for (char *t = strtok_r(copy, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
        char flag[MCFLAGS_VALUE_MAX];
        const char *arg = NULL;
        bool takes = !strcmp(t, "-m") || !strcmp(t, "-f") || !strcmp(t, "-n") || !strcmp(t, "-I") ||
                     !strcmp(t, "-c") || !strcmp(t, "-t") || !strcmp(t, "-o") || !strcmp(t, "-p") ||
                     !strcmp(t, "-l") || !strcmp(t, "-U") || !strcmp(t, "-u");
        if (takes && !(arg = strtok_r(NULL, " \t", &save))) {
            snprintf(msg, msglen, "flag %s needs a value", t);
            return -1;
        }
        snprintf(flag, sizeof flag, "%s%s%s", t, arg ? " " : "", arg ? arg : "");
        unsigned long long v;
        int rc = 0;
        if (!strcmp(t, "-m") && size_value(arg, &v)) {
            snprintf(num, sizeof num, "%llu", v * 1024 * 1024);
            rc = want(ws, "maxbytes", num, false, flag);
        } else if (!strcmp(t, "-f"))
            rc = want(ws, "growth_factor", arg, true, flag);
        else if (!strcmp(t, "-n"))
            rc = want(ws, "chunk_size", arg, false, flag);
        else if (!strcmp(t, "-I") && size_value(arg, &v)) {
            snprintf(num, sizeof num, "%llu", v);
            rc = want(ws, "item_size_max", num, false, flag);
        } else if (!strcmp(t, "-c"))
            rc = want(ws, "maxconns", arg, false, flag);
        else if (!strcmp(t, "-t"))
            rc = want(ws, "num_threads", arg, false, flag);
        else if (!strcmp(t, "-C"))
            rc = want(ws, "cas_enabled", "no", false, flag);
        else if (!strcmp(t, "-M"))
            rc = want(ws, "evictions", "off", false, flag);
        else if (!strcmp(t, "-o")) {
            char items[512], *s2 = NULL;
            snprintf(items, sizeof items, "%s", arg);
            for (char *it = strtok_r(items, ",", &s2); it && !rc; it = strtok_r(NULL, ",", &s2))
                rc = want_o(ws, it, msg, msglen);
            if (rc)
                return -1;
        } else if (!strcmp(t, "-p") || !strcmp(t, "-l") || !strcmp(t, "-U") || !strcmp(t, "-u")) {
            /* where it listens, who it runs as: not the experiment's business */
        } else {
            snprintf(msg, msglen, "cannot check %s against stats settings", flag);
            return -1;
        }
        if (rc) {
            snprintf(msg, msglen, "cannot check %s against stats settings", flag);
            return -1;
        }
    }
    return 0;
}

int mcflags_check(const char *args, const struct mcflags_stats *settings, char *msg, size_t msglen)
{
    struct mcflags_wants ws;
    size_t used = 0;
    if (msglen)
        msg[0] = '\0';
    if (mcflags_wants(args, &ws, msg, msglen))
        return -1;
    for (size_t i = 0; i < ws.n; i++) {
        const struct mcflags_want *w = &ws.w[i];
        const char *have = mcflags_stats_get(settings, w->setting);
        bool same;
        if (!have)
            same = false;
        else if (w->factor)
            same = fabs(strtod(have, NULL) - strtod(w->value, NULL)) < 0.0051;
        else
            same = !strcmp(have, w->value);
        if (same)
            continue;
        int n = snprintf(msg + used, msglen > used ? msglen - used : 0,
                         "%s%s is %s, the run needs %s (%s)", used ? "; " : "", w->setting,
                         have ? have : "not shown", w->value, w->flag);
        if (n > 0)
            used += (size_t)n;
        if (used >= msglen)
            used = msglen ? msglen - 1 : 0;
    }
    return used ? -1 : 0;
}
