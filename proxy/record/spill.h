/* spill: a bounded local SQLite file that holds the recorder's batches while
 * a remote store (PostgreSQL) fails, oldest first, until they are shipped.
 *
 * Owns the file (exclusively, as store.c holds its own), its one table
 * `spill` (batch_id, run_id, batch_no, rows, writes, bytes, data: the
 * batch's rows and jobs serialized) and the backlog's counts. The bound is
 * --spill-max bytes of batch data; a batch that would pass it is refused
 * (SPILL_FULL), never cut. Must never reorder batches (batch_id is their
 * order), run on the event loop thread (the writer thread owns it), nor
 * print: failures return -1 with the reason in err. The data is this
 * build's struct rec_row layout: a file written by another build is
 * refused at open with a clear message. */
#ifndef SLABTAP_SPILL_H
#define SLABTAP_SPILL_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

struct rec_row;
struct rec_job;

#define SPILL_DEFAULT_MAX_BYTES (256ull * 1024 * 1024)
#define SPILL_FORMAT 2 /* 2: jobs carry a shadow's target and counts (issue 23) */

enum spill_put_result { SPILL_OK = 0, SPILL_FULL = 1, SPILL_ERROR = -1 };

struct spill {
    sqlite3 *db;
    sqlite3_stmt *ins, *first, *del;
    uint64_t max_bytes;
    /* the backlog: what is in the file now (read at open, kept up to date) */
    uint64_t batches, rows, writes, bytes;
    char path[1024];
    /* set by spill_open when it found the file damaged (not a database,
     * corrupt) and moved it aside: where to, and why */
    char moved[1100], moved_why[512];
};

/* One batch read back: rows into the caller's array (cap rows), jobs as a
 * list the caller frees (rec_job_free each). */
struct spill_batch {
    int64_t id, run_id, batch_no;
    size_t n;
    uint64_t writes, bytes;
    struct rec_job *jobs;
};

/* Opens (creating) the file; what an earlier process left is backlog. A
 * file that is not a database or is corrupt is moved aside (sp->moved, for
 * the caller to warn) and a fresh one opened; other failures are -1. */
int spill_open(struct spill *sp, const char *path, uint64_t max_bytes, char *err, size_t errlen);
void spill_close(struct spill *sp);
/* Appends a batch: SPILL_OK, SPILL_FULL (nothing written), or SPILL_ERROR
 * with the reason in err. */
enum spill_put_result spill_put(struct spill *sp, int64_t run_id, int64_t batch_no,
                                const struct rec_row *rows, size_t n, const struct rec_job *jobs,
                                char *err, size_t errlen);
/* The oldest batch: 1 (rows in rows[0..b->n), cap at least its count), 0
 * when the file is empty, -1 with the reason in err; -2 when it cannot be
 * read back (damaged: b->id and b->writes say which and how much, for the
 * caller to drop and count). */
int spill_first(struct spill *sp, struct spill_batch *b, struct rec_row *rows, size_t cap,
                char *err, size_t errlen);
/* Removes a shipped batch (b from spill_first). */
int spill_drop(struct spill *sp, const struct spill_batch *b, char *err, size_t errlen);

#endif
