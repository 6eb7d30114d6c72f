/* mcflags: does a memcached someone else started run with the flags a spec
 * run needs? The flags (`-m 1024 -f 1.08 -o slab_automove=2`) against its
 * `stats settings`, with memcached's defaults for what the flags leave
 * out (a run that says nothing about -f needs 1.25).
 *
 * Owns the flag -> setting table and the wording of every difference.
 * Must never do I/O or allocate; a flag it cannot check against `stats
 * settings` is a refusal, never a guess. */
#ifndef SLABTAP_EXPERIMENT_MCFLAGS_H
#define SLABTAP_EXPERIMENT_MCFLAGS_H

#include <stddef.h>

#define MCFLAGS_KV_MAX 256
#define MCFLAGS_NAME_MAX 64
#define MCFLAGS_VALUE_MAX 128

struct mcflags_kv {
    char name[MCFLAGS_NAME_MAX], value[MCFLAGS_VALUE_MAX];
};

/* "STAT name value" lines: one `stats` or `stats settings` answer. */
struct mcflags_stats {
    size_t n;
    struct mcflags_kv kv[MCFLAGS_KV_MAX];
};

/* Adds every "STAT name value\r\n" line of text (others are ignored;
 * names and values too long, or more than MCFLAGS_KV_MAX, are dropped).
 * Returns the number of lines added. */
size_t mcflags_stats_parse(struct mcflags_stats *s, const char *text, size_t len);
const char *mcflags_stats_get(const struct mcflags_stats *s, const char *name);

/* 0 when settings agree with every setting args decide; -1 with each
 * difference ("growth_factor is 1.08, the run needs 1.25 (-f 1.25)"),
 * or the flag that cannot be checked, in msg. */
int mcflags_check(const char *args, const struct mcflags_stats *settings, char *msg, size_t msglen);

#endif
