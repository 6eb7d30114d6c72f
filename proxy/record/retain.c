/* retain: the planner, the path pattern and one delete step. See retain.h. */
#include "record/retain.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "core/clock.h"
#include "core/log.h"

void retain_planner_init(struct retain_planner *p)
{
    p->step_rows = RETAIN_STEP_START;
    p->bytes_per_row = RETAIN_BYTES_PER_ROW;
}

uint64_t retain_slack(uint64_t max_bytes, uint64_t page_size)
{
    uint64_t slack = max_bytes / 8, lo = 16 * (page_size ? page_size : 4096);
    if (slack > (uint64_t)8 << 20)
        slack = (uint64_t)8 << 20;
    return slack < lo ? lo : slack;
}

bool retain_plan(const struct retain_cfg *cfg, const struct retain_planner *p,
                 const struct retain_obs *o, struct retain_plan *out)
{
    memset(out, 0, sizeof *out);
    out->cutoff_ns = INT64_MAX;
    uint64_t step = p->step_rows ? p->step_rows : RETAIN_STEP_START;
    if (cfg->max_bytes && o->page_size) {
        uint64_t used =
            (o->page_count - (o->free_pages < o->page_count ? o->free_pages : 0)) * o->page_size;
        uint64_t slack = retain_slack(cfg->max_bytes, o->page_size);
        uint64_t hi = cfg->max_bytes > slack ? cfg->max_bytes - slack : 0;
        uint64_t lo = hi > slack ? hi - slack : 0;
        if (used > hi && o->oldest_ns >= 0) {
            double bpr = p->bytes_per_row > 1 ? p->bytes_per_row : RETAIN_BYTES_PER_ROW;
            double rows = (double)(used - lo) / bpr;
            uint64_t keep_up = o->rows_in + o->rows_in / 4;
            if (step < keep_up)
                step = keep_up > RETAIN_STEP_MAX ? RETAIN_STEP_MAX : keep_up;
            out->rows = rows < 1 ? 1 : rows > (double)step ? step : (uint64_t)rows;
            out->over_size = true;
        }
        if (o->incremental && o->free_pages && o->page_count * o->page_size > cfg->max_bytes) {
            uint64_t over = (o->page_count * o->page_size - cfg->max_bytes) / o->page_size + 1;
            uint64_t n = over < o->free_pages ? over : o->free_pages;
            out->vacuum_pages = n > RETAIN_VACUUM_PAGES ? RETAIN_VACUUM_PAGES : n;
        }
    }
    if (o->disk_full) { /* room first, whatever the bounds say */
        uint64_t rows = step / 4 < RETAIN_STEP_MIN ? RETAIN_STEP_MIN : step / 4;
        if (o->oldest_ns >= 0 && out->rows < rows) {
            out->rows = rows;
            out->over_size = true;
        }
        if (o->incremental)
            out->vacuum_pages = RETAIN_VACUUM_PAGES;
        return out->rows > 0 || out->vacuum_pages > 0;
    }
    if (cfg->retain_ns > 0 && o->oldest_ns >= 0 && o->now_ns - cfg->retain_ns > o->oldest_ns) {
        out->cutoff_ns = o->now_ns - cfg->retain_ns;
        if (!out->over_size)
            out->rows = step;
    }
    return out->rows > 0 || out->vacuum_pages > 0;
}

void retain_feedback(struct retain_planner *p, uint64_t rows, uint64_t pages_freed,
                     uint64_t page_size, int64_t elapsed_ns)
{
    if (rows >= 1024 && pages_freed) {
        double bpr = (double)(pages_freed * page_size) / (double)rows;
        p->bytes_per_row = p->bytes_per_row * 0.5 + bpr * 0.5;
    }
    if (elapsed_ns > (int64_t)RETAIN_STEP_MS * 1000000) {
        p->step_rows /= 2;
    } else if (elapsed_ns < (int64_t)RETAIN_STEP_MS * 1000000 / 4 && rows >= p->step_rows) {
        p->step_rows *= 2;
    }
    if (p->step_rows < RETAIN_STEP_MIN)
        p->step_rows = RETAIN_STEP_MIN;
    if (p->step_rows > RETAIN_STEP_MAX)
        p->step_rows = RETAIN_STEP_MAX;
}

bool retain_path_rotates(const char *path)
{
    for (const char *c = path ? strchr(path, '%') : NULL; c; c = strchr(c, '%')) {
        if (c[1] == '%') {
            c += 2;
            continue;
        }
        if (isalpha((unsigned char)c[1]))
            return true;
        c++;
    }
    return false;
}

int retain_path_expand(const char *path, time_t t, char *out, size_t outlen)
{
    struct tm tm;
    if (!outlen || !gmtime_r(&t, &tm))
        return -1;
    out[0] = '\0';
    size_t n = strftime(out, outlen, path, &tm);
    return n > 0 && n < outlen - 1 ? 0 : -1;
}

/* --- the delete step ----------------------------------------------------------- */

void retain_init(struct retain *r, const struct retain_cfg *cfg)
{
    memset(r, 0, sizeof *r);
    r->cfg = *cfg;
    retain_planner_init(&r->plan);
    r->st.enabled = cfg->retain_ns > 0 || cfg->max_bytes > 0;
    r->st.retain_ns = cfg->retain_ns;
    r->st.max_bytes = cfg->max_bytes;
    r->st.oldest_ns = -1;
}

bool retain_enabled(const struct retain *r)
{
    return r->st.enabled;
}

static int64_t pragma_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* The oldest write: its rowid, time and run's rowid range. 1, 0 when there
 * is none, -1 on error. With no write left, the oldest read (reads: true;
 * a file whose last writes are gone still has its reads expired). */
struct oldest {
    int64_t rowid, t_ns, lo, hi, t0, run_id, base;
    bool reads;
};

static int oldest_row(sqlite3 *db, struct oldest *o, bool reads)
{
    sqlite3_stmt *st;
    int got = 0;
    o->reads = reads;
    if (sqlite3_prepare_v2(
            db,
            reads ? "SELECT w.rid, r.lo, r.hi, r.t0, r.t0 + coalesce((SELECT a.dt FROM"
                    " read_arrivals a WHERE a.rowid BETWEEN r.lo AND w.rid ORDER BY a.rowid DESC"
                    " LIMIT 1), 0), r.run_id, r.base"
                    " FROM (SELECT min(rowid) AS rid FROM read_rows) w"
                    " JOIN read_runs r ON w.rid >= r.lo AND w.rid < r.hi"
                    " ORDER BY r.lo DESC LIMIT 1"
                  : "SELECT w.rid, r.lo, r.hi, r.t0, r.t0 + coalesce((SELECT a.dt FROM arrivals a"
                    " WHERE a.rowid BETWEEN r.lo AND w.rid ORDER BY a.rowid DESC LIMIT 1), 0),"
                    " r.run_id, r.base"
                    " FROM (SELECT min(rowid) AS rid FROM writes) w"
                    " JOIN write_runs r ON w.rid >= r.lo AND w.rid < r.hi"
                    " ORDER BY r.lo DESC LIMIT 1",
            -1, &st, NULL) != SQLITE_OK)
        return reads ? 0 : -1; /* a file from before reads were recorded */
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        o->rowid = sqlite3_column_int64(st, 0);
        o->lo = sqlite3_column_int64(st, 1);
        o->hi = sqlite3_column_int64(st, 2);
        o->t0 = sqlite3_column_int64(st, 3);
        o->t_ns = sqlite3_column_int64(st, 4);
        o->run_id = sqlite3_column_int64(st, 5);
        o->base = sqlite3_column_int64(st, 6);
        got = 1;
    } else if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        got = -1;
    }
    sqlite3_finalize(st);
    return got;
}

static int oldest_write(sqlite3 *db, struct oldest *o)
{
    int got = oldest_row(db, o, false);
    return got == 0 ? oldest_row(db, o, true) : got;
}

/* One value of sql with up to three integer parameters: 1 with *v, 0 for
 * no row or NULL, -1 on error. */
static int query_int(sqlite3 *db, const char *sql, int64_t a, int64_t b, int64_t c, int64_t *v)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    int np = sqlite3_bind_parameter_count(st);
    if (np >= 1)
        sqlite3_bind_int64(st, 1, a);
    if (np >= 2)
        sqlite3_bind_int64(st, 2, b);
    if (np >= 3)
        sqlite3_bind_int64(st, 3, c);
    int rc = sqlite3_step(st), got = 0;
    if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        *v = sqlite3_column_int64(st, 0);
        got = 1;
    } else if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        got = -1;
    }
    sqlite3_finalize(st);
    return got;
}

static int exec_q(sqlite3 *db, const char *sql, int64_t a, int64_t b)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, a);
    if (sqlite3_bind_parameter_count(st) >= 2)
        sqlite3_bind_int64(st, 2, b);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

/* The file's pages; the oldest write too when want_old (else *have_old 0
 * and the last one seen is kept in the stats). */
static void observe(struct retain *r, sqlite3 *db, int64_t now_ns, struct retain_obs *o,
                    struct oldest *old, int *have_old, bool want_old)
{
    memset(o, 0, sizeof *o);
    o->now_ns = now_ns;
    int64_t ps = pragma_int(db, "PRAGMA page_size"), pc = pragma_int(db, "PRAGMA page_count"),
            fl = pragma_int(db, "PRAGMA freelist_count");
    o->page_size = ps > 0 ? (uint64_t)ps : 0;
    o->page_count = pc > 0 ? (uint64_t)pc : 0;
    o->free_pages = fl > 0 ? (uint64_t)fl : 0;
    o->incremental = pragma_int(db, "PRAGMA auto_vacuum") == 2;
    r->st.file_bytes = o->page_count * o->page_size;
    r->st.free_bytes = o->free_pages * o->page_size;
    *have_old = 0;
    o->oldest_ns = r->st.oldest_ns;
    if (!want_old)
        return;
    *have_old = oldest_write(db, old);
    o->oldest_ns = *have_old == 1 ? old->t_ns : -1;
    r->st.oldest_ns = o->oldest_ns;
}

void retain_observe(struct retain *r, sqlite3 *db, int64_t now_ns)
{
    struct retain_obs o;
    struct oldest old;
    int have;
    observe(r, db, now_ns, &o, &old, &have, true);
}

/* The reads that came before the oldest write go first, oldest first, at
 * most budget of them and none at or after cutoff_ns: those of older runs
 * and those of the oldest write's run read before it (its rowid is
 * old->rowid). A run's reads come in after_write order, so they are a
 * prefix of its read rowids. *n: reads deleted; *behind: some are left
 * (the step deletes no write then). 0, or -1. */
static int delete_reads_before(sqlite3 *db, const struct oldest *old, uint64_t budget,
                               int64_t cutoff_ns, uint64_t *n, bool *behind)
{
    int64_t rlo = 0, rhi = 0, rt0 = 0, cut = 0, first = 0, cover = 0, lim = 0, a = 0;
    *n = 0;
    *behind = false;
    int got = query_int(db, "SELECT min(rowid) FROM read_rows", 0, 0, 0, &first);
    if (got <= 0) /* no read in the file (--reads off): nothing more to look at */
        return got;
    got = query_int(db, "SELECT lo FROM read_runs WHERE run_id = ?1", old->run_id, 0, 0, &rlo);
    if (got <= 0) /* a run without reads */
        return got;
    if (query_int(db, "SELECT hi FROM read_runs WHERE run_id = ?1", old->run_id, 0, 0, &rhi) < 0 ||
        query_int(db, "SELECT t0 FROM read_runs WHERE run_id = ?1", old->run_id, 0, 0, &rt0) < 0)
        return -1;
    /* the last arrival at or before the oldest write, and in it the first
     * read whose after_write (the arrival's + op's delta) reaches it */
    int64_t keep_seq = old->rowid - old->base, arr = 0, arr_aw = 0, next = rhi;
    got = query_int(db,
                    "SELECT max(rowid) FROM read_arrivals WHERE rowid >= ?1 AND rowid < ?2"
                    " AND after_write <= ?3",
                    rlo, rhi, keep_seq, &arr);
    if (got < 0)
        return -1;
    if (!got) {
        cut = rlo; /* every read of the run came after it */
    } else {
        if (query_int(db, "SELECT after_write FROM read_arrivals WHERE rowid = ?1", arr, 0, 0,
                      &arr_aw) < 0 ||
            query_int(db, "SELECT min(rowid) FROM read_arrivals WHERE rowid > ?1 AND rowid < ?2",
                      arr, rhi, 0, &next) < 0)
            return -1;
        got = query_int(db,
                        "SELECT min(rowid) FROM read_rows WHERE rowid >= ?1 AND rowid < ?2"
                        " AND ((op >> 11) & 15) >= ?3",
                        arr, next, keep_seq - arr_aw, &cut);
        if (got < 0)
            return -1;
        if (!got)
            cut = next;
    }
    int64_t cut_pos = cut; /* every read before it came before the oldest write */
    /* the budget: the budget-th oldest read ends it */
    got = query_int(db,
                    "SELECT rowid FROM read_rows WHERE rowid < ?1 ORDER BY rowid LIMIT 1"
                    " OFFSET ?2",
                    cut, (int64_t)budget, 0, &lim);
    if (got < 0)
        return -1;
    if (got)
        cut = lim;
    if (cutoff_ns != INT64_MAX) { /* none at or after the cutoff */
        got = query_int(db,
                        "SELECT min(rowid) FROM read_arrivals WHERE rowid >= ?1 AND rowid < ?2"
                        " AND dt >= ?3",
                        rlo, cut, cutoff_ns - rt0, &a);
        if (got < 0)
            return -1;
        if (got && a < cut)
            cut = a;
    }
    if (exec_q(db, "DELETE FROM read_rows WHERE rowid < ?1", cut, 0))
        return -1;
    *n = (uint64_t)sqlite3_changes(db);
    if (exec_q(db, "DELETE FROM read_extra WHERE rowid < ?1", cut, 0))
        return -1;
    /* reads left before the oldest write: the writes wait for them */
    got = query_int(db, "SELECT min(rowid) FROM read_rows WHERE rowid >= ?1", cut, 0, 0, &first);
    if (got < 0)
        return -1;
    *behind = got && first < cut_pos;
    /* read_arrivals: every one below the arrival the first kept read needs */
    cover = cut;
    if (got) {
        got = query_int(db, "SELECT max(rowid) FROM read_arrivals WHERE rowid <= ?1", first, 0, 0,
                        &cover);
        if (got < 0)
            return -1;
        if (!got)
            cover = cut;
    }
    return exec_q(db, "DELETE FROM read_arrivals WHERE rowid < ?1", cover, 0);
}

/* Deletes the planned rows of the oldest run in the open transaction;
 * the number deleted into *n. 0, or -1. */
/* No write is left: the planned rows of the oldest reads, as
 * delete_oldest does for writes. */
static int delete_oldest_reads(sqlite3 *db, const struct oldest *old, const struct retain_plan *pl,
                               uint64_t *n)
{
    int64_t cut = 0, first = 0, cover = 0, a = 0;
    int got = query_int(db,
                        "SELECT rowid FROM read_rows WHERE rowid >= ?1 AND rowid < ?2"
                        " ORDER BY rowid LIMIT 1 OFFSET ?3",
                        old->rowid, old->hi, (int64_t)pl->rows, &cut);
    if (got < 0)
        return -1;
    if (!got) {
        if (query_int(db, "SELECT max(rowid) FROM read_rows WHERE rowid >= ?1 AND rowid < ?2",
                      old->rowid, old->hi, 0, &cut) < 0)
            return -1;
        cut++;
    }
    if (pl->cutoff_ns != INT64_MAX) {
        got = query_int(db,
                        "SELECT min(rowid) FROM read_arrivals WHERE rowid > ?1 AND rowid < ?2"
                        " AND dt >= ?3",
                        old->rowid, cut, pl->cutoff_ns - old->t0, &a);
        if (got < 0)
            return -1;
        if (got && a < cut)
            cut = a;
    }
    if (exec_q(db, "DELETE FROM read_rows WHERE rowid >= ?1 AND rowid < ?2", old->rowid, cut))
        return -1;
    *n = (uint64_t)sqlite3_changes(db);
    if (exec_q(db, "DELETE FROM read_extra WHERE rowid < ?1", cut, 0))
        return -1;
    got = query_int(db, "SELECT min(rowid) FROM read_rows WHERE rowid >= ?1", cut, 0, 0, &first);
    if (got < 0)
        return -1;
    cover = cut;
    if (got) {
        got = query_int(db, "SELECT max(rowid) FROM read_arrivals WHERE rowid <= ?1", first, 0, 0,
                        &cover);
        if (got < 0)
            return -1;
        if (!got)
            cover = cut;
    }
    return exec_q(db, "DELETE FROM read_arrivals WHERE rowid < ?1", cover, 0);
}

static int delete_oldest(sqlite3 *db, const struct oldest *old, const struct retain_plan *pl,
                         uint64_t *n)
{
    int64_t cut = 0, keep = 0, cover = 0, a = 0;
    uint64_t nr = 0;
    bool behind = false;
    if (old->reads)
        return delete_oldest_reads(db, old, pl, n);
    /* the reads before the oldest write first: oldest first, within the
     * step's rows */
    if (delete_reads_before(db, old, pl->rows, pl->cutoff_ns, &nr, &behind))
        return -1;
    *n = nr;
    if (behind || nr >= pl->rows)
        return 0;
    uint64_t rows = pl->rows - nr;
    /* the first row kept: the rows-th after the oldest, within its run */
    int got = query_int(db,
                        "SELECT rowid FROM writes WHERE rowid >= ?1 AND rowid < ?2"
                        " ORDER BY rowid LIMIT 1 OFFSET ?3",
                        old->rowid, old->hi, (int64_t)rows, &cut);
    if (got < 0)
        return -1;
    if (!got) { /* all of the run's rows */
        if (query_int(db, "SELECT max(rowid) FROM writes WHERE rowid >= ?1 AND rowid < ?2",
                      old->rowid, old->hi, 0, &cut) < 0)
            return -1;
        cut++;
    }
    if (pl->cutoff_ns != INT64_MAX) {
        /* none at or after the cutoff: the first arrival that late ends it */
        got = query_int(db,
                        "SELECT min(rowid) FROM arrivals WHERE rowid > ?1 AND rowid < ?2"
                        " AND dt >= ?3",
                        old->rowid, cut, pl->cutoff_ns - old->t0, &a);
        if (got < 0)
            return -1;
        if (got && a < cut)
            cut = a;
    }
    if (exec_q(db, "DELETE FROM writes WHERE rowid >= ?1 AND rowid < ?2", old->rowid, cut))
        return -1;
    *n += (uint64_t)sqlite3_changes(db);
    /* arrivals: every one below the arrival the first kept write needs */
    got = query_int(db, "SELECT min(rowid) FROM writes WHERE rowid >= ?1", cut, 0, 0, &keep);
    if (got < 0)
        return -1;
    if (got) {
        got =
            query_int(db, "SELECT max(rowid) FROM arrivals WHERE rowid <= ?1", keep, 0, 0, &cover);
        if (got < 0)
            return -1;
        if (!got)
            cover = cut;
    } else {
        cover = cut;
    }
    return exec_q(db, "DELETE FROM arrivals WHERE rowid < ?1", cover, 0);
}

/* --- taps without a proxy (issue 22): item_events, snapshots ----------------------
 * Evictions and deletions (item_events, in rowid order: the order they
 * came in, their time order) and snapshots (a snapshot's items, then its
 * snapshots row once none is left) older than a bound go oldest first, at
 * most budget rows a step, in the step's transaction. */

/* The time of the oldest tap row (an event, or a snapshot's start): 1
 * with *t, 0 when there is none (or a file without the tables). */
static int taps_oldest(sqlite3 *db, int64_t *t)
{
    int64_t e = 0, sn = 0;
    int ge = query_int(db, "SELECT t_ns FROM item_events ORDER BY rowid LIMIT 1", 0, 0, 0, &e);
    int gs = query_int(db, "SELECT min(t_ns) FROM snapshots", 0, 0, 0, &sn);
    if (ge <= 0 && gs <= 0)
        return 0;
    *t = ge <= 0 ? sn : gs <= 0 ? e : e < sn ? e : sn;
    return 1;
}

/* Deletes tap rows older than bound_ns, at most budget: *n deleted. 0, or -1. */
static int delete_old_taps(sqlite3 *db, int64_t bound_ns, uint64_t budget, uint64_t *n)
{
    int64_t cut = 0, late = 0, run = 0, snap = 0;
    *n = 0;
    if (!budget)
        return 0;
    /* events: below the budget-th, and below the first at or after the bound */
    int got = query_int(db, "SELECT rowid FROM item_events ORDER BY rowid LIMIT 1 OFFSET ?1",
                        (int64_t)budget, 0, 0, &cut);
    if (got < 0)
        return -1;
    if (!got && query_int(db, "SELECT max(rowid) + 1 FROM item_events", 0, 0, 0, &cut) < 0)
        return -1;
    got = query_int(db,
                    "SELECT min(rowid) FROM (SELECT rowid, t_ns FROM item_events WHERE rowid < ?1"
                    " ORDER BY rowid) WHERE t_ns >= ?2",
                    cut, bound_ns, 0, &late);
    if (got < 0)
        return -1;
    if (got && late < cut)
        cut = late;
    if (exec_q(db, "DELETE FROM item_events WHERE rowid < ?1", cut, 0))
        return -1;
    *n += (uint64_t)sqlite3_changes(db);
    /* the oldest snapshot older than the bound: its items, then itself */
    while (*n < budget) {
        got = query_int(db, "SELECT run_id FROM snapshots WHERE t_ns < ?1 ORDER BY t_ns LIMIT 1",
                        bound_ns, 0, 0, &run);
        if (got <= 0)
            return got;
        if (query_int(db,
                      "SELECT snap FROM snapshots WHERE t_ns < ?1 AND run_id = ?2"
                      " ORDER BY t_ns LIMIT 1",
                      bound_ns, run, 0, &snap) < 0)
            return -1;
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(db,
                               "DELETE FROM snapshot_items WHERE rowid IN (SELECT rowid FROM"
                               " snapshot_items WHERE run_id = ?1 AND snap = ?2 LIMIT ?3)",
                               -1, &st, NULL) != SQLITE_OK)
            return -1;
        sqlite3_bind_int64(st, 1, run);
        sqlite3_bind_int64(st, 2, snap);
        sqlite3_bind_int64(st, 3, (int64_t)(budget - *n));
        int rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
            return -1;
        uint64_t gone = (uint64_t)sqlite3_changes(db);
        *n += gone;
        if (*n >= budget)
            return 0; /* its items may not all be gone yet */
        if (exec_q(db, "DELETE FROM snapshots WHERE run_id = ?1 AND snap = ?2", run, snap))
            return -1;
        *n += (uint64_t)sqlite3_changes(db);
    }
    return 0;
}

static void retain_log_time(int64_t ns, char *out, size_t outlen)
{
    time_t t = (time_t)(ns / 1000000000);
    struct tm tm;
    if (ns < 0 || !gmtime_r(&t, &tm)) {
        snprintf(out, outlen, "none");
        return;
    }
    strftime(out, outlen, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int retain_step(struct retain *r, sqlite3 *db, int64_t now_ns, uint64_t rows_in, char *err,
                size_t errlen)
{
    struct retain_obs o;
    struct retain_plan pl;
    struct oldest old;
    int have;
    if (!r->st.enabled || !db)
        return 0;
    r->rows_in += rows_in;
    /* the age is looked at every RETAIN_AGE_CHECK_MS; the size (four
     * pragmas) after every batch, and the oldest row only when it asks */
    bool age_due = (r->cfg.retain_ns > 0 && now_ns >= r->next_age_check_ns) || r->make_room;
    if (!r->cfg.max_bytes && !age_due)
        return 0;
    if (age_due)
        r->next_age_check_ns = now_ns + (int64_t)RETAIN_AGE_CHECK_MS * 1000000;
    int64_t t0 = (int64_t)clock_mono_ns();
    observe(r, db, now_ns, &o, &old, &have, age_due);
    if (!age_due && r->cfg.max_bytes) {
        uint64_t used =
            (o.page_count - (o.free_pages < o.page_count ? o.free_pages : 0)) * o.page_size;
        uint64_t slack = retain_slack(r->cfg.max_bytes, o.page_size);
        bool over_file = o.incremental && o.page_count * o.page_size > r->cfg.max_bytes;
        if (used + slack <= r->cfg.max_bytes && !over_file) {
            r->rows_in = 0;
            return 0;
        }
        observe(r, db, now_ns, &o, &old, &have, true);
    }
    if (have < 0) {
        snprintf(err, errlen, "retention: reading the oldest row: %s", sqlite3_errmsg(db));
        return -1;
    }
    /* tap rows (issue 22) older than the oldest write count as the oldest */
    int64_t taps_t = 0;
    int taps = age_due || have != 1 || r->cfg.max_bytes ? taps_oldest(db, &taps_t) : 0;
    if (taps == 1 && (have != 1 || taps_t < o.oldest_ns))
        o.oldest_ns = taps_t;
    o.rows_in = r->rows_in;
    o.disk_full = r->make_room;
    if (!retain_plan(&r->cfg, &r->plan, &o, &pl)) {
        r->rows_in = 0;
        /* the bound is passed with no row left to expire: what is kept is over it */
        uint64_t used = (o.page_count - o.free_pages) * o.page_size;
        if (r->cfg.max_bytes && have == 0 && taps != 1 && used > r->cfg.max_bytes &&
            !r->logged_kept) {
            r->logged_kept = true;
            r->st.kept_over = true;
            log_warn("retention: %llu bytes of what is kept (runs, samples, shadows' samples, "
                     "aggregates) are over "
                     "--max-db-size %llu with no recorded write left to expire; recording goes on",
                     (unsigned long long)used, (unsigned long long)r->cfg.max_bytes);
        }
        return 0;
    }
    if (!r->logged_bound) {
        char when[32];
        r->logged_bound = true;
        retain_log_time(o.oldest_ns, when, sizeof when);
        if (pl.over_size)
            log_info("retention: the database reached --max-db-size %llu bytes (%llu in use): "
                     "the oldest recorded writes (from %s) are expired from now on, the "
                     "aggregates keep counting them",
                     (unsigned long long)r->cfg.max_bytes,
                     (unsigned long long)((o.page_count - o.free_pages) * o.page_size), when);
        else if (pl.rows)
            log_info("retention: recorded writes older than --retain %.0f s (from %s) are "
                     "expired from now on, the aggregates keep counting them",
                     (double)r->cfg.retain_ns / 1e9, when);
    }
    if (pl.rows)
        r->st.bound_reached = true;
    uint64_t n = 0;
    char *msg = NULL;
    if (pl.rows && (have == 1 || taps == 1)) {
        uint64_t nt = 0;
        if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, &msg) != SQLITE_OK)
            goto fail;
        /* tap rows older than the oldest write (and than the cutoff) first */
        int64_t bound = have == 1 && old.t_ns < pl.cutoff_ns ? old.t_ns : pl.cutoff_ns;
        if (taps == 1 && delete_old_taps(db, bound, pl.rows, &nt))
            goto fail;
        if (have == 1 && nt < pl.rows) {
            struct retain_plan rest = pl;
            rest.rows -= nt;
            if (delete_oldest(db, &old, &rest, &n))
                goto fail;
        }
        n += nt;
        if (sqlite3_exec(db, "COMMIT", NULL, NULL, &msg) != SQLITE_OK)
            goto fail;
    }
    int64_t free_after = pragma_int(db, "PRAGMA freelist_count");
    uint64_t freed = free_after > (int64_t)o.free_pages ? (uint64_t)free_after - o.free_pages : 0;
    if (pl.vacuum_pages) {
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA incremental_vacuum(%llu)",
                 (unsigned long long)pl.vacuum_pages);
        if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
            goto fail;
    }
    int64_t took = (int64_t)clock_mono_ns() - t0;
    log_debug("retention: step: %llu rows deleted (planned %llu), %llu pages freed, %llu "
              "vacuumed, %.1f ms",
              (unsigned long long)n, (unsigned long long)pl.rows, (unsigned long long)freed,
              (unsigned long long)pl.vacuum_pages, (double)took / 1e6);
    retain_feedback(&r->plan, n, freed, o.page_size, took);
    r->rows_in = 0;
    r->st.rows_expired += n;
    r->st.steps++;
    uint64_t us = (uint64_t)(took / 1000);
    r->st.step_total_us += us;
    if (us > r->st.step_max_us)
        r->st.step_max_us = us;
    observe(r, db, now_ns, &o, &old, &have, true);
    return 1;
fail:
    snprintf(err, errlen, "retention: %s", msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    if (!sqlite3_get_autocommit(db))
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return -1;
}

int retain_make_room(struct retain *r, sqlite3 *db, int64_t now_ns, char *err, size_t errlen)
{
    r->make_room = true;
    int rc = retain_step(r, db, now_ns, 0, err, errlen);
    r->make_room = false;
    return rc;
}

/* --- room on the file system --------------------------------------------------- */

static const char *const retain_room_labels[] = {
#define RETAIN_ROOM_LABEL(name, label) label,
    RETAIN_ROOM_RESULTS(RETAIN_ROOM_LABEL)
#undef RETAIN_ROOM_LABEL
};

const char *retain_room_label(enum retain_room r)
{
    return (unsigned)r < RETAIN_ROOM__COUNT ? retain_room_labels[r] : "?";
}

enum retain_room retain_room_plan(uint64_t max_bytes, uint64_t room, uint64_t page_size,
                                  unsigned *wal_pages)
{
    uint64_t ps = page_size ? page_size : 4096;
    *wal_pages = 0;
    if (!max_bytes || room >= max_bytes + RETAIN_WAL_PAGES * ps + RETAIN_WAL_STEP_BYTES)
        return RETAIN_ROOM_OK;
    uint64_t left = room > max_bytes ? room - max_bytes : 0;
    uint64_t pages = left / 2 / ps;
    if (pages < RETAIN_WAL_MIN_PAGES) {
        *wal_pages = RETAIN_WAL_MIN_PAGES;
        return RETAIN_ROOM_NO;
    }
    *wal_pages = pages > RETAIN_WAL_PAGES ? RETAIN_WAL_PAGES : (unsigned)pages;
    return RETAIN_ROOM_SMALL_WAL;
}

uint64_t retain_disk_bytes(const char *path)
{
    char wal[1040];
    struct stat st;
    uint64_t n = 0;
    if (stat(path, &st) == 0)
        n += (uint64_t)st.st_size;
    snprintf(wal, sizeof wal, "%s-wal", path);
    if (stat(wal, &st) == 0)
        n += (uint64_t)st.st_size;
    return n;
}

int retain_room(const char *path, uint64_t max_bytes, uint64_t *room, unsigned *wal_pages,
                enum retain_room *out)
{
    char dir[1024];
    struct statvfs vfs;
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    if (statvfs(dir, &vfs) != 0)
        return -1;
    *room = (uint64_t)vfs.f_bavail * vfs.f_frsize + retain_disk_bytes(path);
    *out = retain_room_plan(max_bytes, *room, 4096, wal_pages);
    return 0;
}
