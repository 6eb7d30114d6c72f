/* jobs: stats samples, settings, phases and run_meta entries as recorder
 * jobs; the ladder writes are tagged with. */
#include "server/jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonb.h"
#include "core/log.h"
#include "protocol/stats_json.h"

void jobs_init(struct jobs *j, struct recorder *rec, struct proxy *px, const char *memcached_flags)
{
    memset(j, 0, sizeof *j);
    j->rec = rec;
    j->px = px;
    j->memcached_flags = memcached_flags;
}

static struct rec_job *jobs_new(enum rec_job_kind kind, int64_t t_ns)
{
    struct rec_job *j = calloc(1, sizeof *j);
    if (j) {
        j->kind = kind;
        j->t_ns = t_ns;
    }
    return j;
}

static struct rec_job *jobs_sample_job(const struct stats_sample *s, int64_t phase_id, bool final)
{
    struct rec_job *j = jobs_new(REC_JOB_SAMPLE, s->t_ns);
    struct buf b;
    if (!j)
        return NULL;
    j->phase_id = phase_id;
    j->final = final;
    buf_init(&b, JSONB_MAX);
    stats_json_object(&b, &s->stats);
    j->text = buf_take(&b);
    j->class_ids = calloc(s->n_classes ? s->n_classes : 1, sizeof *j->class_ids);
    j->class_json = calloc(s->n_classes ? s->n_classes : 1, sizeof *j->class_json);
    if (!j->text || !j->class_ids || !j->class_json)
        goto fail;
    for (unsigned id = 0; id <= s->max_class_id; id++) {
        const struct stats_kv_list *kv = stats_sample_class(s, id);
        if (!kv || j->nclasses == s->n_classes)
            continue;
        stats_json_object(&b, kv);
        j->class_json[j->nclasses] = buf_take(&b);
        if (!j->class_json[j->nclasses])
            goto fail;
        j->class_ids[j->nclasses++] = id;
    }
    return j;
fail:
    rec_job_free(j);
    return NULL;
}

static void jobs_settings(struct jobs *jobs, const struct stats_sample *s, const char *target)
{
    struct rec_job *j = jobs_new(REC_JOB_SETTINGS, s->t_ns);
    struct buf b;
    if (!j)
        return;
    if (target && !(j->target = strdup(target))) {
        rec_job_free(j);
        return;
    }
    buf_init(&b, JSONB_MAX);
    stats_json_object(&b, &s->settings);
    j->text = buf_take(&b);
    j->version = strdup(s->has_version ? s->version : "");
    if (!j->text || !j->version) {
        rec_job_free(j);
        return;
    }
    rec_push_job(jobs->rec, j);
}

void jobs_meta(struct jobs *jobs, int64_t t_ns, const char *key, char *value)
{
    struct rec_job *j = jobs_new(REC_JOB_META, t_ns);
    if (!j || !value || !(j->version = strdup(key))) {
        free(value);
        rec_job_free(j);
        return;
    }
    j->text = value;
    rec_push_job(jobs->rec, j);
}

bool jobs_phase(struct jobs *jobs, int64_t id, int64_t t_ns, const char *name, size_t name_max)
{
    struct rec_job *j = jobs_new(REC_JOB_PHASE, t_ns);
    if (!j)
        return false;
    j->phase_id = id;
    j->text = strndup(name, name_max);
    if (!j->text) {
        rec_job_free(j);
        return false;
    }
    return rec_push_job(jobs->rec, j);
}

const struct slab_settings *jobs_reported(const struct jobs *j)
{
    return j->have_reported ? &j->reported : NULL;
}

/* --- the ladder writes are tagged with ---------------------------------- */

/* run_meta 'ladder': what the writes are tagged with from now on, read
 * back by the view run_ladder and checked by `model predict`. */
static char *jobs_ladder_json(const struct ladder_choice *c)
{
    struct buf b;
    char flags[1024];
    ladder_choice_flags(c, flags, sizeof flags);
    buf_init(&b, JSONB_MAX);
    buf_printf(&b, "{\"origin\":\"%s\",\"trusted\":%s,\"partial\":%s,\"flags\":",
               ladder_origin_key(c->origin), c->trusted ? "true" : "false",
               c->partial ? "true" : "false");
    jsonb_string(&b, flags, strlen(flags));
    buf_puts(&b, ",\"chunk_sizes\":[");
    for (uint32_t id = 1; id <= c->ladder.n_classes; id++)
        buf_printf(&b, "%s%u", id > 1 ? "," : "", c->ladder.cls[id].chunk_size);
    buf_puts(&b, "],\"note\":");
    jsonb_string(&b, c->note, strlen(c->note));
    buf_puts(&b, "}");
    return buf_take(&b);
}

/* The chunk sizes of the classes with a page, into j->seen; true when one
 * is new. A class with another size than before means memcached restarted
 * with another ladder: what was seen before is forgotten. */
static bool jobs_ladder_observe(struct jobs *j, const struct stats_sample *s)
{
    bool fresh = false;
    for (int pass = 0; pass < 2; pass++) {
        bool contradicted = false;
        for (unsigned id = 1; id <= s->max_class_id && id <= SLAB_MODEL_MAX_CLASSES; id++) {
            int64_t chunk;
            if (!stats_sample_get(s, id, "chunk_size", &chunk) || chunk <= 0)
                continue;
            int r = ladder_observed_add(&j->seen, id, (uint64_t)chunk);
            fresh |= r == 1;
            contradicted |= r < 0;
        }
        if (!contradicted)
            break;
        ladder_observed_init(&j->seen);
        fresh = true;
    }
    return fresh;
}

/* The ladder each write is tagged with: memcached's `stats settings`, the
 * flags the proxy knows (memcached_flags) and the chunk sizes memcached
 * shows, through the same rule `model predict` applies to the recorded run
 * (model/ladder_source.h); chosen again when the settings change or a class
 * shows a chunk size for the first time. A ladder that disagrees with
 * memcached is logged as a warning, and recorded (run_meta 'ladder'). */
static void jobs_ladder_update(struct jobs *j, const struct stats_sample *s, bool new_settings)
{
    struct ladder_choice c;
    char err[160] = "";
    bool redo = false;
    if (new_settings) {
        if (slab_settings_from_stats(&j->reported, stats_sample_setting_lookup, (void *)s, err,
                                     sizeof err) != SLAB_OK) {
            j->have_reported = false;
            j->px->ladder = NULL;
            log_warn("memcached's settings give no ladder (%s); writes stay untagged", err);
            return;
        }
        if (j->have_reported) /* restarted with other settings */
            ladder_observed_init(&j->seen);
        j->have_reported = true;
        redo = true;
    }
    if (!j->have_reported)
        return;
    redo |= jobs_ladder_observe(j, s);
    if (!redo)
        return;
    if (ladder_choose(&j->reported, j->memcached_flags, s->has_version ? s->version : NULL,
                      &j->seen, &c, err, sizeof err) != SLAB_OK) {
        j->px->ladder = NULL;
        log_warn("memcached's settings give no ladder (%s); writes stay untagged", err);
        return;
    }
    bool had = j->px->ladder != NULL;
    bool same_ladder = had && slab_ladder_same(&c.ladder, &j->ladder);
    bool same = same_ladder && c.origin == j->choice.origin && c.trusted == j->choice.trusted &&
                !strcmp(c.note, j->choice.note);
    j->choice = c;
    j->ladder = c.ladder;
    j->px->ladder = &j->ladder;
    if (same)
        return;
    char flags[1024];
    ladder_choice_flags(&c, flags, sizeof flags);
    if (!c.trusted || (c.mismatch_class && !same_ladder))
        log_warn("slab ladder %s (%u classes) from %s: %s", flags, c.ladder.n_classes,
                 ladder_origin_str(c.origin), c.note);
    else if (c.origin == LADDER_SETTINGS && !c.note[0])
        log_debug("slab ladder %s (%u classes) from %s", flags, c.ladder.n_classes,
                  ladder_origin_str(c.origin));
    else
        log_info("slab ladder %s (%u classes) from %s%s%s", flags, c.ladder.n_classes,
                 ladder_origin_str(c.origin), c.note[0] ? ": " : "", c.note);
    jobs_meta(j, s->t_ns, "ladder", jobs_ladder_json(&j->choice));
}

void jobs_sample(struct jobs *j, const struct stats_sample *s, int64_t phase_id, bool final)
{
    struct rec_job *job;
    bool new_settings = s->has_settings && (s->settings_changed || !j->have_reported);
    if (new_settings)
        jobs_settings(j, s, NULL);
    jobs_ladder_update(j, s, new_settings);
    if ((job = jobs_sample_job(s, phase_id, final)))
        rec_push_job(j->rec, job);
}

/* --- shadows (issue 23) --------------------------------------------------- */

/* true the first time target is seen here (its settings not yet queued) */
static bool jobs_shadow_first(struct jobs *j, const char *target)
{
    for (unsigned i = 0; i < j->n_shadow_settled; i++)
        if (!strcmp(j->shadow_settled[i], target))
            return false;
    if (j->n_shadow_settled < JOBS_SHADOW_TARGETS) {
        snprintf(j->shadow_settled[j->n_shadow_settled++], JOBS_TARGET_MAX, "%s", target);
        return true;
    }
    return false;
}

void jobs_shadow_sample(struct jobs *j, const char *target, const struct stats_sample *s,
                        bool final)
{
    struct rec_job *job;
    if (s->has_settings) {
        bool first = jobs_shadow_first(j, target);
        if (first || s->settings_changed)
            jobs_settings(j, s, target);
    }
    if (!(job = jobs_sample_job(s, 0, final)))
        return;
    if (!(job->target = strdup(target))) {
        rec_job_free(job);
        return;
    }
    rec_push_job(j->rec, job);
}

void jobs_shadow_event(struct jobs *j, const char *target, int64_t t_ns, const char *event,
                       const char *detail)
{
    struct rec_job *job = jobs_new(REC_JOB_SHADOW_EVENT, t_ns);
    if (!job)
        return;
    job->target = strdup(target);
    job->text = strdup(event);
    job->version = detail ? strdup(detail) : NULL;
    if (!job->target || !job->text || (detail && !job->version)) {
        rec_job_free(job);
        return;
    }
    rec_push_job(j->rec, job);
}

void jobs_shadow_counts(struct jobs *j, const char *target, int64_t second,
                        const int64_t counts[REC_SHADOW_NCOUNTS])
{
    struct rec_job *job = jobs_new(REC_JOB_SHADOW_COUNTS, second * 1000000000LL);
    if (!job)
        return;
    if (!(job->target = strdup(target))) {
        rec_job_free(job);
        return;
    }
    memcpy(job->counts, counts, sizeof job->counts);
    rec_push_job(j->rec, job);
}
