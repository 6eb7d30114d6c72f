/* mcserver: a memcached that slabtap starts itself -- the binary on PATH,
 * another binary, or a digest-pinned Docker image -- on a free loopback
 * port, and stops again on every path out (done, error, Ctrl-C).
 *
 * Owns the child process (uv_spawn) and the blocking helpers the experiment
 * runner needs around it: the port memcached bound, waiting until it answers, one
 * stats snapshot, the binary's version (whose flag units differ: see
 * mcserver_version). Must never leave a memcached running after
 * mcserver_stop, and never bind anything but 127.0.0.1. */
#ifndef SLABTAP_MCSERVER_H
#define SLABTAP_MCSERVER_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "protocol/stats_parse.h"

#define MCSERVER_ARGS_MAX 48
#define MCSERVER_READY_MS 10000
#define MCSERVER_STOP_MS 5000
#define MCSERVER_ERR_MAX 512

struct mcserver {
    uv_loop_t *loop;
    uv_process_t proc;
    bool spawned, exited, closed, docker;
    int64_t exit_status;
    int term_signal;
    int port;
    char container[64];
    char argv_text[1024]; /* the command line, for run metadata */
};

/* Starts `binary ARGS -p -1 -l 127.0.0.1 -U 0` (plus `-u root` when run
 * as root; memcached binds a port the kernel picks and writes it to
 * $MEMCACHED_PORT_FILENAME, a file of ours), or with docker=true `docker run
 * --rm -p 127.0.0.1::11211 IMAGE ARGS` (the port read back with `docker
 * port`), and waits until it answers `version` on that port (m->port).
 * No port is picked by binding and closing. 0, or -1 with err. */
int mcserver_start(struct mcserver *m, uv_loop_t *loop, const char *binary, bool docker,
                   const char *image, const char *args, char *err, size_t errlen);
/* What `memcached -V` prints for the binary mcserver_start would run
 * (NULL: memcached on PATH; docker: in image), as the version alone
 * ("1.6.18") into out. Blocking, bounded (MCSERVER_READY_MS). Flags that
 * change unit between versions (-o slab_chunk_max: bytes before 1.6.24,
 * kilobytes since) are built for it (slab_settings_flags_for). 0, or -1
 * with err. */
int mcserver_version(const char *binary, bool docker, const char *image, char *out, size_t len,
                     char *err, size_t errlen);
/* A -o slab_chunk_max in args that looks like the other unit for memcached
 * version (bytes given to 1.6.24+, which refuses them; a kilobyte-sized
 * number given to an older one, which reads it as bytes): true, with what
 * to write instead in msg. */
bool mcserver_chunk_max_unit_suspect(const char *version, const char *args, char *msg,
                                     size_t msglen);
/* SIGTERM, then SIGKILL after MCSERVER_STOP_MS; waits for the exit. */
void mcserver_stop(struct mcserver *m);
/* One blocking `stats` + `stats slabs` + `stats items` + `stats settings` +
 * `version` round trip into s (initialised by the caller). 0 or -1. */
int mcserver_stats(int port, struct stats_sample *s, char *err, size_t errlen);

#endif
