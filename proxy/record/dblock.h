/* dblock: the one-writer guarantee of a SQLite file that readers may read
 * while it is written -- PATH.lock beside the database, locked with a POSIX
 * record lock (fcntl F_SETLK) by the process that records into PATH, so
 * the lock dies with that process (kill -9 included), and holding who it
 * is: pid, host, start time (UTC) and command line, for a second writer's
 * error and for every reader's "database is locked by ..." message.
 *
 * Owns the lock file's format (dblock_format, dblock_describe: pure, unit
 * tested) and its life: taken before the store opens the database,
 * removed (while still locked, so no one can take a file that is being
 * removed) when it closes. A taker that locked a file that was removed
 * meanwhile sees another inode at the path and tries again.
 * Must never: block (F_SETLK, not F_SETLKW), take a lock to find out who
 * holds one (readers ask with F_GETLK, which takes nothing), open a lock
 * file twice in the holding process (a POSIX lock goes with the first
 * close of any descriptor of the file), nor print: errors go into err. */
#ifndef SLABTAP_RECORD_DBLOCK_H
#define SLABTAP_RECORD_DBLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DBLOCK_SUFFIX ".lock"
#define DBLOCK_TEXT_MAX 1024 /* the lock file's text, at most */
#define DBLOCK_CMD_MAX 200   /* of the command line, shown in messages */

struct dblock {
    int fd;          /* -1: not held */
    char path[1040]; /* PATH.lock while held, else empty (a zeroed struct holds nothing) */
};

/* Whether path names a file that gets a lock file (not ":memory:", "",
 * nor a "file:" URI). */
bool dblock_applies(const char *db);
/* Takes db's lock file. 0, or -1 with why in err: another process records
 * into db ("DB is being recorded by slabtap proxy pid N ...; use another
 * --db"), the folder of db does not exist, or the lock file cannot be
 * made. l->fd is -1 after a failure (and for a db that gets none). */
int dblock_take(struct dblock *l, const char *db, char *err, size_t errlen);
/* Removes and unlocks the lock file; a lock not held is left alone. */
void dblock_release(struct dblock *l);
/* Who records into db now: true with a description into who ("slabtap
 * proxy pid 1234 (started 2026-12-02 03:12:44 UTC: slabtap proxy --listen
 * ...)"), false when nobody holds its lock file. Takes no lock. */
bool dblock_holder(const char *db, char *who, size_t wholen);

/* Another process for a message: "pid N (its command line)", the command
 * line when /proc tells it. */
void dblock_process(long pid, char *out, size_t outlen);

/* --- pure --------------------------------------------------------------- */

/* The lock file's text: "pid N\nhost H\nstarted S\ncommand C\n" (S:
 * seconds since the epoch, C the command line, newlines made spaces).
 * Returns the length (it is cut at outlen - 1). */
size_t dblock_format(char *out, size_t outlen, long pid, const char *host, int64_t started_s,
                     const char *cmd);
/* A holder's description from the lock file's text (it may be empty or cut
 * short: what is there is used): "PROGRAM pid N [on HOST] (started DATE
 * UTC: COMMAND)", PROGRAM the command's first word ("slabtap proxy": two
 * for slabtap; "slabtap" when there is no command); lock_pid: the pid F_GETLK reported (0:
 * none), used when the text has none; my_host: ours, the host is named
 * when it is another. Returns the length written. */
size_t dblock_describe(const char *text, long lock_pid, const char *my_host, char *who,
                       size_t wholen);

#endif
