/* ladder_source: one ladder from `stats settings`, the known flags and the
 * chunk sizes memcached showed (see ladder_source.h). Pure. */
#include "model/ladder_source.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ladder_observed_init(struct ladder_observed *o)
{
    memset(o, 0, sizeof *o);
}

int ladder_observed_add(struct ladder_observed *o, uint32_t class_id, uint64_t chunk_size)
{
    if (class_id < 1 || class_id > SLAB_MODEL_MAX_CLASSES || chunk_size == 0 ||
        chunk_size > UINT32_MAX)
        return -1;
    if (o->chunk[class_id] == chunk_size)
        return 0;
    if (o->chunk[class_id]) {
        if (!o->contradiction)
            o->contradiction = class_id;
        return -1;
    }
    o->chunk[class_id] = (uint32_t)chunk_size;
    if (class_id > o->max_class)
        o->max_class = class_id;
    return 1;
}

uint32_t ladder_check(const struct slab_ladder *l, const struct ladder_observed *o)
{
    if (!o)
        return 0;
    for (uint32_t c = 1; c <= o->max_class; c++)
        if (o->chunk[c] && (c > l->n_classes || l->cls[c].chunk_size != o->chunk[c]))
            return c;
    return 0;
}

const char *ladder_origin_str(enum ladder_origin o)
{
    switch (o) {
    case LADDER_SETTINGS: return "stats settings";
    case LADDER_FLAGS: return "memcached's flags";
    case LADDER_RECOVERED: return "growth factor recovered from memcached's chunk sizes";
    case LADDER_OBSERVED: return "memcached's chunk sizes (a -o slab_sizes server)";
    case LADDER_CONFLICT: return "stats settings, DISAGREEING with memcached's chunk sizes";
    }
    return "?";
}

const char *ladder_origin_key(enum ladder_origin o)
{
    switch (o) {
    case LADDER_SETTINGS: return "settings";
    case LADDER_FLAGS: return "flags";
    case LADDER_RECOVERED: return "recovered";
    case LADDER_OBSERVED: return "observed";
    case LADDER_CONFLICT: return "conflict";
    }
    return "?";
}

int ladder_choice_flags(const struct ladder_choice *c, char *out, size_t len)
{
    char f[32];
    if (c->settings.n_slab_sizes)
        return (int)slab_sizes_flag(&c->settings, out, len);
    slab_factor_text(c->settings.growth_factor, f, sizeof f);
    return snprintf(out, len, "-n %u -f %s", c->settings.chunk_size_min, f);
}

static void note_add(struct ladder_choice *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void note_add(struct ladder_choice *c, const char *fmt, ...)
{
    size_t n = strlen(c->note);
    va_list ap;
    if (n + 1 >= sizeof c->note)
        return;
    if (n) {
        c->note[n++] = ' ';
        c->note[n] = '\0';
    }
    va_start(ap, fmt);
    vsnprintf(c->note + n, sizeof c->note - n, fmt, ap);
    va_end(ap);
}

/* --- the flags ----------------------------------------------------------- */

/* What the flags add to what memcached reported: -o slab_sizes, and -f
 * where it prints as the reported one. Disagreements are noted; stats
 * settings win them. True when the flags changed the ladder's settings. */
static bool apply_flags(struct slab_settings *base, const char *flags, const char *version,
                        struct ladder_choice *c)
{
    struct slab_settings fl;
    unsigned given = 0;
    char err[160] = "", a[32], b[32];
    bool changed = false;
    if (!flags || !*flags)
        return false;
    if (slab_settings_from_flags(&fl, &given, flags, version, err, sizeof err) != SLAB_OK) {
        note_add(c, "The memcached flags \"%.100s\" were not understood (%s) and are ignored.",
                 flags, err);
        return false;
    }
    if (given & SLAB_GIVEN_FACTOR) {
        snprintf(a, sizeof a, "%.2f", fl.growth_factor);
        snprintf(b, sizeof b, "%.2f", base->growth_factor);
        if (!strcmp(a, b)) {
            changed = fl.growth_factor != base->growth_factor;
            base->growth_factor = fl.growth_factor;
        } else {
            slab_factor_text(fl.growth_factor, a, sizeof a);
            note_add(c,
                     "The flags say -f %s but memcached reports growth_factor %s: its own "
                     "value is used.",
                     a, b);
        }
    }
    if ((given & SLAB_GIVEN_MIN) && fl.chunk_size_min != base->chunk_size_min)
        note_add(c,
                 "The flags say -n %u but memcached reports chunk_size %u: its own value is used.",
                 fl.chunk_size_min, base->chunk_size_min);
    if ((given & SLAB_GIVEN_ITEM_MAX) && fl.item_size_max != base->item_size_max)
        note_add(c,
                 "The flags say -I %u but memcached reports item_size_max %u: its own value is "
                 "used.",
                 fl.item_size_max, base->item_size_max);
    if ((given & SLAB_GIVEN_CHUNK_MAX) && fl.slab_chunk_max != base->slab_chunk_max)
        note_add(c,
                 "The flags give slab_chunk_max %u bytes (read in %s) but memcached reports %u: "
                 "its own value is used.",
                 fl.slab_chunk_max, slab_chunk_max_in_kb(version) ? "kilobytes" : "bytes",
                 base->slab_chunk_max);
    if ((given & SLAB_GIVEN_NO_CAS) && base->use_cas)
        note_add(c, "The flags say -C but memcached reports cas_enabled yes: CAS stays on.");
    if (given & SLAB_GIVEN_SIZES) {
        memcpy(base->slab_sizes, fl.slab_sizes, sizeof base->slab_sizes);
        base->n_slab_sizes = fl.n_slab_sizes;
        changed = true;
    }
    return changed;
}

/* --- growth factor recovery --------------------------------------------- */

#define RECOVER_STEPS 1000 /* -f candidates 0.00001 apart across +-0.005 */

static int decimals_of(long units)
{
    int d = 5;
    while (d > 0 && units % 10 == 0) {
        units /= 10;
        d--;
    }
    return d;
}

/* Candidate u (in units of 0.00001): its ladder when memcached would
 * print it as base's factor and it fits every observed chunk size. */
static bool candidate(const struct slab_settings *base, const char *want, long u,
                      const struct ladder_observed *obs, struct slab_ladder *l)
{
    struct slab_settings s = *base;
    char got[32];
    s.growth_factor = (double)u / 100000.0;
    snprintf(got, sizeof got, "%.2f", s.growth_factor);
    return !strcmp(got, want) && slab_ladder_build(&s, l, NULL, 0) == SLAB_OK &&
           !ladder_check(l, obs);
}

/* Two ladders that fit the observations put some item in different
 * classes when they differ at or below the largest observed class. */
static bool differ_below(const struct slab_ladder *a, const struct slab_ladder *b, uint32_t top)
{
    for (uint32_t c = 1; c <= top; c++) {
        uint32_t x = c <= a->n_classes ? a->cls[c].chunk_size : 0;
        uint32_t y = c <= b->n_classes ? b->cls[c].chunk_size : 0;
        if (x != y)
            return true;
    }
    return false;
}

/* Every -f that memcached prints as base's and that fits every observed
 * chunk size: runs of neighbouring candidates with one ladder are one
 * choice; the choice is the -f with the fewest decimals (then the closest
 * to the printed value). Ambiguous when another fitting -f gives a ladder
 * that differs from it below the largest observed class. */
static bool try_recover(const struct slab_settings *base, const struct ladder_observed *obs,
                        struct ladder_choice *c)
{
    struct slab_ladder l, prev = { 0 }, best;
    char want[32], f[32], lo[32], hi[32];
    long center = lround(base->growth_factor * 100.0) * 1000, best_u = 0, best_lo = 0, best_hi = 0,
         run_lo = 0;
    int best_d = 99;
    bool have_prev = false, found = false, in_best = false;
    snprintf(want, sizeof want, "%.2f", base->growth_factor);
    for (long u = center - RECOVER_STEPS / 2; u <= center + RECOVER_STEPS / 2; u++) {
        if (!candidate(base, want, u, obs, &l)) {
            have_prev = in_best = false;
            continue;
        }
        if (!have_prev || !slab_ladder_same(&prev, &l)) {
            run_lo = u;
            in_best = false;
        }
        int d = decimals_of(u);
        if (d < best_d || (d == best_d && labs(u - center) < labs(best_u - center))) {
            best_d = d;
            best_u = u;
            best_lo = run_lo;
            best = l;
            found = in_best = true;
        }
        if (in_best)
            best_hi = u;
        prev = l;
        have_prev = true;
    }
    if (!found)
        return false;
    /* (searched over -f 1.01 .. 2.00 with -n 48: fitting factors never
     * differ below the largest observed class; kept as a guard) */
    bool above = false;
    for (long u = center - RECOVER_STEPS / 2; u <= center + RECOVER_STEPS / 2 && !c->ambiguous;
         u++) {
        if (!candidate(base, want, u, obs, &l))
            continue;
        c->ambiguous |= differ_below(&l, &best, obs->max_class);
        above |= !slab_ladder_same(&l, &best);
    }
    c->settings = *base;
    c->settings.growth_factor = (double)best_u / 100000.0;
    c->ladder = best;
    c->origin = LADDER_RECOVERED;
    c->factor_lo = (double)best_lo / 100000.0;
    c->factor_hi = (double)best_hi / 100000.0;
    c->trusted = !c->ambiguous;
    slab_factor_text(c->settings.growth_factor, f, sizeof f);
    snprintf(lo, sizeof lo, "%.5f", c->factor_lo);
    snprintf(hi, sizeof hi, "%.5f", c->factor_hi);
    note_add(c,
             "memcached prints growth_factor with two decimals (%.2f); -f %s fits every chunk "
             "size it shows (the -f with the fewest decimals that does; -f %s to %s give the "
             "same ladder).",
             base->growth_factor, f, lo, hi);
    if (above && !c->ambiguous)
        note_add(c,
                 "Other -f values that print as %.2f fit too but give other classes above class "
                 "%u, where no item has gone yet.",
                 base->growth_factor, obs->max_class);
    if (c->ambiguous)
        note_add(c,
                 "AMBIGUOUS: other -f values that print as %.2f fit the chunk sizes seen too and "
                 "put items below class %u elsewhere; give memcached's flags "
                 "(--memcached-flags \"-f ...\") to settle it.",
                 base->growth_factor, obs->max_class);
    return true;
}

/* --- the ladder of a -o slab_sizes server, from its chunk sizes ---------- */

static bool try_observed(const struct slab_settings *base, const struct ladder_observed *obs,
                         struct ladder_choice *c)
{
    uint32_t k = obs->max_class, prev = 0;
    if (k == 0 || obs->contradiction)
        return false;
    for (uint32_t i = 1; i <= k; i++) {
        uint32_t ch = obs->chunk[i];
        if (!ch || ch <= prev || ch > base->slab_chunk_max || ch % SLAB_MODEL_CHUNK_ALIGN)
            return false;
        prev = ch;
    }
    bool has_last = obs->chunk[k] == base->slab_chunk_max;
    uint32_t nsizes = has_last ? k - 1 : k;
    if (nsizes == 0 || nsizes > SLAB_MODEL_MAX_CUSTOM_SIZES)
        return false;
    c->settings = *base;
    c->settings.n_slab_sizes = nsizes;
    memcpy(c->settings.slab_sizes, &obs->chunk[1], nsizes * sizeof(uint32_t));
    /* built directly: memcached's own checks of a slab_sizes list compare
     * the sizes as given, before alignment, which the chunk sizes no
     * longer show */
    memset(&c->ladder, 0, sizeof c->ladder);
    for (uint32_t i = 1; i <= nsizes; i++) {
        c->ladder.cls[i].chunk_size = obs->chunk[i];
        c->ladder.cls[i].perslab = base->slab_page_size / obs->chunk[i];
    }
    c->ladder.n_classes = nsizes + 1;
    c->ladder.cls[nsizes + 1].chunk_size = base->slab_chunk_max;
    c->ladder.cls[nsizes + 1].perslab = base->slab_page_size / base->slab_chunk_max;
    c->ladder.item_size_max = base->item_size_max;
    c->ladder.slab_chunk_max = base->slab_chunk_max;
    c->ladder.slab_page_size = base->slab_page_size;
    c->ladder.use_cas = base->use_cas;
    c->origin = LADDER_OBSERVED;
    c->partial = !has_last;
    c->trusted = true;
    note_add(c,
             "The ladder is read from the chunk sizes memcached shows for classes 1-%u (%s "
             "server)%s.",
             k, "a -o slab_sizes",
             c->partial ? "; classes above them are not known yet (no item went there)" : "");
    return true;
}

enum slab_status ladder_choose(const struct slab_settings *reported, const char *flags,
                               const char *version, const struct ladder_observed *obs,
                               struct ladder_choice *out, char *err, size_t errlen)
{
    struct slab_settings base;
    struct slab_ladder cand;
    char what[160], why[160] = "";
    enum slab_status st;
    if (!reported || !out)
        return SLAB_ERR_ARG;
    memset(out, 0, sizeof *out);
    base = *reported;
    bool from_flags = apply_flags(&base, flags, version, out);
    if (base.n_slab_sizes && slab_ladder_build(&base, &cand, why, sizeof why) != SLAB_OK) {
        note_add(out,
                 "The flags' -o slab_sizes does not give a ladder under memcached's other "
                 "settings (%s) and is ignored.",
                 why);
        base.n_slab_sizes = 0;
        from_flags = base.growth_factor != reported->growth_factor;
    }
    st = slab_ladder_build(&base, &cand, err, errlen);
    if (st != SLAB_OK)
        return st;
    out->settings = base;
    out->ladder = cand;
    out->origin = from_flags ? LADDER_FLAGS : LADDER_SETTINGS;
    uint32_t bad = ladder_check(&cand, obs);
    if (!bad && (!obs || !obs->contradiction)) {
        out->trusted = true;
        return SLAB_OK;
    }
    if (bad) {
        out->mismatch_class = bad;
        out->mismatch_observed = obs->chunk[bad];
        out->mismatch_ladder = bad <= cand.n_classes ? cand.cls[bad].chunk_size : 0;
        struct ladder_choice tmp = *out;
        ladder_choice_flags(&tmp, what, sizeof what);
        note_add(out,
                 "The ladder of %s (%s) disagrees with memcached: class %u has %u-byte chunks "
                 "there, %u in that ladder.",
                 from_flags ? "the flags" : "stats settings", what, bad, out->mismatch_observed,
                 out->mismatch_ladder);
    }
    if (obs->contradiction) {
        note_add(out,
                 "memcached showed class %u with two chunk sizes (restarted with other "
                 "settings?).",
                 obs->contradiction);
    } else if ((!base.n_slab_sizes && try_recover(&base, obs, out)) ||
               try_observed(&base, obs, out)) {
        return SLAB_OK;
    } else {
        note_add(out, "No ladder fits: classes without a page leave gaps in what memcached "
                      "shows; give its flags (--slab-sizes or --memcached-flags).");
    }
    out->settings = base;
    out->ladder = cand;
    out->origin = LADDER_CONFLICT;
    out->trusted = false;
    return SLAB_OK;
}
