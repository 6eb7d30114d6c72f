/* store: the SQLite database -- schema, upgrades, prepared statements,
 * batched transactions.
 * Must never be called from the event loop thread once the recorder owns
 * it (only the writer thread touches the connection after rec_open). */
#ifndef SLABTAP_STORE_H
#define SLABTAP_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

struct rec_row;

#define STORE_SCHEMA_VERSION 1

struct store {
    sqlite3 *db;
    sqlite3_stmt *ins_set;
    sqlite3_stmt *ins_gets;
    char path[1024];
};

/* Opens (creating if needed) the database at path, applies schema.sql and
 * upgrades older files. Returns 0, or -1 with a message in err. */
int store_open(struct store *s, const char *path, char *err, size_t errlen);
void store_close(struct store *s);

int64_t store_run_begin(struct store *s, const char *name, const char *upstream,
                        const char *options, const char *key_mode);
int store_run_end(struct store *s, int64_t run_id, uint64_t recorded, uint64_t dropped);
/* Writes n rows in one transaction. Returns 0 or -1. */
int store_write_rows(struct store *s, int64_t run_id, const struct rec_row *rows, size_t n);

int64_t store_now_ns(void);

#endif
