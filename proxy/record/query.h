/* query: read-only questions about recorded runs (the live page's JSON
 * API). On SQLite answered by the recorder's writer thread on its own
 * connection between write batches: the loop thread must never run SQL,
 * and the aggregates a query reads are written first on that connection
 * (other processes read the file on their own connections:
 * docs/live-sql.md). On PostgreSQL (MVCC: readers never block the writer)
 * answered by a query thread on a connection of its own, the same steps,
 * budget (statement_timeout), cache and answers; SQL texts are SQLite's,
 * PostgreSQL's derived by record/qsql.h's rule where it can be.
 *
 * Owns: the bounded queue of pending queries (QUERY_QUEUE_MAX; full: the
 * caller answers 503), every SQL text of the web API (aggregating in SQL:
 * time buckets, size buckets, GROUP BY; never a row per write in an
 * answer), the time budget of each step (sqlite3_progress_handler, or
 * statement_timeout; over it the step is interrupted and the query answers
 * QUERY_BUSY), the
 * slicing of scans over a run's writes into steps of QUERY_SLICE_ROWS rows
 * so recording goes on between them, the cache of answers about finished
 * runs, and handing answers back to the loop (uv_async); the advice of
 * a run (QUERY_ADVICE), on the basis `slabtap model advise` takes
 * (record/advice.h: advice_basis): its write aggregates read by the writer
 * in one budgeted step, or its rows read by the advice thread on a
 * read-only connection of its own (never the writer's; WAL readers never
 * block it) and replayed in sequence (record/rowseq.h), its candidates
 * (model/advise.h, the same as `slabtap model advise`) evaluated on that
 * thread, one run at a time, with progress, kept
 * per run (QUERY_ADVICE_RUNS) until a live run has grown by
 * QUERY_ADVICE_REGROW_PCT.
 * Must never: take SQL text from its caller (a query is a kind plus
 * validated integers), run SQL on any thread but the writer's
 * (query_step) or the query thread (PostgreSQL) except the advice
 * thread's reads on its own connection, hold the writer for more than one
 * budget per step, call a
 * caller's callback on any thread but the loop's, or print (errors are
 * answered, the caller logs). */
#ifndef SLABTAP_RECORD_QUERY_H
#define SLABTAP_RECORD_QUERY_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "record/qsql.h"

#define QUERY_QUEUE_MAX 16        /* queries waiting or in progress; more: QUERY_FULL */
#define QUERY_BUDGET_MS 300       /* one step's time on the writer thread */
#define QUERY_SLICE_ROWS 250000   /* rowids of `writes` one step of a scan covers */
#define QUERY_CACHE_MAX 32        /* answers about finished runs kept */
#define QUERY_ADVICE_TTL_MS 30000 /* the live run's advice is served without a look this long */
#define QUERY_ADVICE_RUNS 8       /* runs whose advice is kept */
#define QUERY_ADVICE_REGROW_PCT \
    10 /* a live run's advice is computed again once it has grown this much */
#define QUERY_ADVICE_READ_MS 1000 /* the one step that reads advice's inputs (the aggregates) */
#define QUERY_RUNS_MAX 500        /* runs listed by /api/runs */
#define QUERY_TOP_MAX 50
#define QUERY_POINTS_MIN 10
#define QUERY_POINTS_MAX 2000
#define QUERY_BUCKETS_MIN 8
#define QUERY_BUCKETS_MAX 512

/* QUERY_READS: reads, hits and misses per slab class over time (agg_reads,
 * a row per run, minute and class): every class's totals, and a line per
 * minute bucket for the `top` classes with the most reads plus one for the
 * other classes summed. QUERY_REPORTS: the reports `slabtap model advise
 * --objective hits --save` and `slabtap model mrc --save` stored in the
 * run's run_meta ('hits_advice', 'hits_mrc'), as stored (null when absent
 * or not valid JSON), and the commands that make them. */
enum query_kind {
    QUERY_SIZES,
    QUERY_CLASSES,
    QUERY_SERIES,
    QUERY_TRAFFIC,
    QUERY_ADVICE,
    QUERY_READS,
    QUERY_REPORTS,
    /* issue 22, from the tables slabtap watch / snapshot / proxy
     * --watch-evictions fill: */
    QUERY_EVICTIONS, /* item_events: evictions per class over time (points
                        buckets of whole minutes), per class, the top key
                        prefixes, deletions */
    QUERY_SNAPSHOT,  /* a snapshot (snap, 0: the latest): the run's snapshots,
                        per class resident items, sizes and waste, idle and
                        age histograms per class, the top prefixes by bytes */
    /* issue 23: the primary and its shadow memcacheds side by side, with a
     * verdict per shadow (record/query_targets.h, /api/run/targets) */
    QUERY_TARGETS
};

/* What is asked: validated by the caller (server/webapi.c), checked again
 * here (QUERY_BAD). */
struct query_params {
    enum query_kind kind;
    int64_t run_id;         /* 0: the current run */
    int64_t from_ns, to_ns; /* series: 0 = the run's start / end (or now) */
    int points;             /* series, traffic, reads: QUERY_POINTS_MIN..MAX */
    int buckets;            /* sizes: QUERY_BUCKETS_MIN..MAX */
    int top;                /* traffic, reads, evictions, snapshot: 1..QUERY_TOP_MAX */
    int64_t snap;           /* snapshot: its number, 0: the latest */
};

enum query_status {
    QUERY_OK,        /* text: the JSON answer */
    QUERY_NOT_FOUND, /* no such run */
    QUERY_BAD,       /* parameters out of range */
    QUERY_FULL,      /* no room in the queue (never queued) */
    QUERY_BUSY,      /* over its time budget, or advice still being computed */
    QUERY_FAILED,    /* SQLite or memory failed; text says why */
    QUERY_CANCELLED  /* the recorder stopped first */
};

/* Loop thread. text (may be NULL) is the caller's to free: the JSON answer
 * for QUERY_OK, otherwise a message. */
typedef void (*query_done_fn)(void *ud, enum query_status st, char *text);

struct query_job;
struct query_cache_ent;
struct query_advice_slot;

struct query_queue {
    pthread_mutex_t mu;
    struct query_job *pending_head, *pending_tail; /* under mu */
    struct query_job *done_head, *done_tail;       /* under mu */
    size_t queued;                                 /* under mu: pending + in progress */
    uv_async_t done;                               /* writer -> loop: answers ready */
    void (*wake)(void *ud);                        /* wakes the writer thread */
    void *wake_ud;
    int64_t current_run;
    unsigned budget_ms; /* QUERY_BUDGET_MS; settable before the first query */
    bool open;
    /* writer thread only */
    struct query_cache_ent *cache; /* QUERY_CACHE_MAX entries */
    uint64_t cache_clock;
    int64_t step_deadline_ns;
    bool interrupted;
    /* advice (answer_advice): per run, under mu; its thread (one at a
     * time) started and joined by the writer thread, then by query_close */
    struct query_advice_slot *advice; /* QUERY_ADVICE_RUNS */
    uint64_t advice_clock;
    bool advice_stop;
    pthread_t advice_thread;
    bool advice_thread_live;
    /* counters, under mu */
    uint64_t answered, busy, full;
    /* PostgreSQL (query_open_pg): the query thread and its connection */
    struct qsql_db pgdb;
    char *pg_uri; /* as given: the advice thread's reader connects with it */
    pthread_t pg_thread;
    pthread_cond_t pg_cv; /* with mu: a query is queued, or pg_stop */
    bool pg_thread_live;
    bool pg_stop; /* under mu */
};

/* Loop thread. wake(wake_ud) is called after a query is queued, to wake
 * the writer (recorder.h: rec_wake_writer). 0, or -1 with err. */
int query_open(struct query_queue *q, uv_loop_t *loop, int64_t current_run, void (*wake)(void *),
               void *wake_ud, char *err, size_t errlen);
/* Loop thread: query_open for a store on PostgreSQL (uri): the queries
 * run on a thread of their own with a read-only connection of their own
 * (record/qsql.h's qsql_open_pg), each statement within the budget
 * (statement_timeout); a run's advice read through record/reader.h on a
 * connection of the advice thread's own. *runs (when runs is not NULL): the /api/runs items of
 * the store's runs but current_run, as query_runs_json. 0, or -1 with err
 * (the password never in it). */
int query_open_pg(struct query_queue *q, uv_loop_t *loop, int64_t current_run, const char *uri,
                  char **runs, char *err, size_t errlen);
/* Loop thread: queues p; done(ud, ...) runs on the loop once answered.
 * QUERY_OK when queued, QUERY_FULL or QUERY_BAD (then done is not called). */
enum query_status query_submit(struct query_queue *q, const struct query_params *p,
                               query_done_fn done, void *ud);
/* Any thread: whether a query waits for the writer. */
bool query_pending(struct query_queue *q);
/* Writer thread, outside any transaction (SQLite; on PostgreSQL the query
 * thread runs them): one step of the oldest query (at most one budget). A
 * scan that is not finished goes back to the queue. */
void query_step(struct query_queue *q, sqlite3 *db);
/* Loop thread, once the writer has stopped (the query thread is stopped
 * and joined here): every query not answered gets
 * QUERY_CANCELLED, answers not delivered are delivered as cancelled, the
 * async handle is closed (its close callback needs one more loop turn). */
void query_close(struct query_queue *q);

/* Loop thread: run_id's advice (0: the current run) without the writer,
 * when it is known: QUERY_OK with the answer kept (the run finished, or
 * computed less than QUERY_ADVICE_TTL_MS ago, or a new one is being
 * computed), QUERY_BUSY with its progress in words while the first one is
 * computed (*retry_s: when to ask again, 1..8); -1: ask the writer
 * (query_submit). *text is the caller's to free. */
int query_advice_peek(struct query_queue *q, int64_t run_id, char **text, int *retry_s);

/* JSON array items (no brackets) of up to max runs, newest first, in the
 * /api/runs "runs" format (with the run's node: run_meta 'node' in a
 * file); run_id skip excluded. Before the writer thread owns db (at
 * open). NULL when out of memory. */
char *query_runs_json(sqlite3 *db, int64_t skip, size_t max);

#endif
