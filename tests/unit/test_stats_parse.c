/* test_stats_parse: byte-exact tests of the stats_parse module against
 * replies captured from Debian's memcached 1.6.18 on this machine (see the
 * literals below: real bytes, not hand-written). Owns nothing but the test;
 * must never start a server or touch the network. Exits non-zero on any
 * failed check.
 *
 * The input buffers are mapped read-only and end right before an
 * inaccessible page, so a parser that writes into the caller's buffer or
 * reads one byte past it crashes the test instead of passing. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "protocol/stats_parse.h"

#include "check.h"

/* ---- captured from memcached 1.6.18 (memcached -p PORT -l 127.0.0.1 -U 0) ----
 * How: a python3 socket script started memcached on a free port, sent
 *   set k0..k2 0 0 10      (3 x 10 B values   -> class 1,  96 B chunks)
 *   set m0..m1 5 0 200     (2 x 200 B, flags  -> class 6,  304 B chunks)
 *   set big 0 0 1000       (1 x 1000 B        -> class 12, 1184 B chunks)
 * and wrote each reply's raw bytes to a file; the literals below are those
 * bytes, one line per literal. `stats settings` shows that server's random
 * tcpport. Expected: bytes 1805 = 213 + 530 + 1062 (mem_requested). */

/* `stats slabs` after 3 x 10 B (class 1), 2 x 200 B with flags (class 6), 1 x 1000 B (class 12) (1069 bytes) */
static const char cap_slabs[] = "STAT 1:chunk_size 96\r\n"
                                "STAT 1:chunks_per_page 10922\r\n"
                                "STAT 1:total_pages 1\r\n"
                                "STAT 1:total_chunks 10922\r\n"
                                "STAT 1:used_chunks 3\r\n"
                                "STAT 1:free_chunks 10919\r\n"
                                "STAT 1:free_chunks_end 0\r\n"
                                "STAT 1:get_hits 0\r\n"
                                "STAT 1:cmd_set 3\r\n"
                                "STAT 1:delete_hits 0\r\n"
                                "STAT 1:incr_hits 0\r\n"
                                "STAT 1:decr_hits 0\r\n"
                                "STAT 1:cas_hits 0\r\n"
                                "STAT 1:cas_badval 0\r\n"
                                "STAT 1:touch_hits 0\r\n"
                                "STAT 6:chunk_size 304\r\n"
                                "STAT 6:chunks_per_page 3449\r\n"
                                "STAT 6:total_pages 1\r\n"
                                "STAT 6:total_chunks 3449\r\n"
                                "STAT 6:used_chunks 2\r\n"
                                "STAT 6:free_chunks 3447\r\n"
                                "STAT 6:free_chunks_end 0\r\n"
                                "STAT 6:get_hits 0\r\n"
                                "STAT 6:cmd_set 2\r\n"
                                "STAT 6:delete_hits 0\r\n"
                                "STAT 6:incr_hits 0\r\n"
                                "STAT 6:decr_hits 0\r\n"
                                "STAT 6:cas_hits 0\r\n"
                                "STAT 6:cas_badval 0\r\n"
                                "STAT 6:touch_hits 0\r\n"
                                "STAT 12:chunk_size 1184\r\n"
                                "STAT 12:chunks_per_page 885\r\n"
                                "STAT 12:total_pages 1\r\n"
                                "STAT 12:total_chunks 885\r\n"
                                "STAT 12:used_chunks 1\r\n"
                                "STAT 12:free_chunks 884\r\n"
                                "STAT 12:free_chunks_end 0\r\n"
                                "STAT 12:get_hits 0\r\n"
                                "STAT 12:cmd_set 1\r\n"
                                "STAT 12:delete_hits 0\r\n"
                                "STAT 12:incr_hits 0\r\n"
                                "STAT 12:decr_hits 0\r\n"
                                "STAT 12:cas_hits 0\r\n"
                                "STAT 12:cas_badval 0\r\n"
                                "STAT 12:touch_hits 0\r\n"
                                "STAT active_slabs 3\r\n"
                                "STAT total_malloced 3145728\r\n"
                                "END\r\n";

/* `stats items` of the same server, same moment (2491 bytes) */
static const char cap_items[] = "STAT items:1:number 3\r\n"
                                "STAT items:1:number_hot 3\r\n"
                                "STAT items:1:number_warm 0\r\n"
                                "STAT items:1:number_cold 0\r\n"
                                "STAT items:1:age_hot 0\r\n"
                                "STAT items:1:age_warm 0\r\n"
                                "STAT items:1:age 0\r\n"
                                "STAT items:1:mem_requested 213\r\n"
                                "STAT items:1:evicted 0\r\n"
                                "STAT items:1:evicted_nonzero 0\r\n"
                                "STAT items:1:evicted_time 0\r\n"
                                "STAT items:1:outofmemory 0\r\n"
                                "STAT items:1:tailrepairs 0\r\n"
                                "STAT items:1:reclaimed 0\r\n"
                                "STAT items:1:expired_unfetched 0\r\n"
                                "STAT items:1:evicted_unfetched 0\r\n"
                                "STAT items:1:evicted_active 0\r\n"
                                "STAT items:1:crawler_reclaimed 0\r\n"
                                "STAT items:1:crawler_items_checked 0\r\n"
                                "STAT items:1:lrutail_reflocked 0\r\n"
                                "STAT items:1:moves_to_cold 0\r\n"
                                "STAT items:1:moves_to_warm 0\r\n"
                                "STAT items:1:moves_within_lru 0\r\n"
                                "STAT items:1:direct_reclaims 0\r\n"
                                "STAT items:1:hits_to_hot 0\r\n"
                                "STAT items:1:hits_to_warm 0\r\n"
                                "STAT items:1:hits_to_cold 0\r\n"
                                "STAT items:1:hits_to_temp 0\r\n"
                                "STAT items:6:number 2\r\n"
                                "STAT items:6:number_hot 2\r\n"
                                "STAT items:6:number_warm 0\r\n"
                                "STAT items:6:number_cold 0\r\n"
                                "STAT items:6:age_hot 0\r\n"
                                "STAT items:6:age_warm 0\r\n"
                                "STAT items:6:age 0\r\n"
                                "STAT items:6:mem_requested 530\r\n"
                                "STAT items:6:evicted 0\r\n"
                                "STAT items:6:evicted_nonzero 0\r\n"
                                "STAT items:6:evicted_time 0\r\n"
                                "STAT items:6:outofmemory 0\r\n"
                                "STAT items:6:tailrepairs 0\r\n"
                                "STAT items:6:reclaimed 0\r\n"
                                "STAT items:6:expired_unfetched 0\r\n"
                                "STAT items:6:evicted_unfetched 0\r\n"
                                "STAT items:6:evicted_active 0\r\n"
                                "STAT items:6:crawler_reclaimed 0\r\n"
                                "STAT items:6:crawler_items_checked 0\r\n"
                                "STAT items:6:lrutail_reflocked 0\r\n"
                                "STAT items:6:moves_to_cold 0\r\n"
                                "STAT items:6:moves_to_warm 0\r\n"
                                "STAT items:6:moves_within_lru 0\r\n"
                                "STAT items:6:direct_reclaims 0\r\n"
                                "STAT items:6:hits_to_hot 0\r\n"
                                "STAT items:6:hits_to_warm 0\r\n"
                                "STAT items:6:hits_to_cold 0\r\n"
                                "STAT items:6:hits_to_temp 0\r\n"
                                "STAT items:12:number 1\r\n"
                                "STAT items:12:number_hot 1\r\n"
                                "STAT items:12:number_warm 0\r\n"
                                "STAT items:12:number_cold 0\r\n"
                                "STAT items:12:age_hot 0\r\n"
                                "STAT items:12:age_warm 0\r\n"
                                "STAT items:12:age 0\r\n"
                                "STAT items:12:mem_requested 1062\r\n"
                                "STAT items:12:evicted 0\r\n"
                                "STAT items:12:evicted_nonzero 0\r\n"
                                "STAT items:12:evicted_time 0\r\n"
                                "STAT items:12:outofmemory 0\r\n"
                                "STAT items:12:tailrepairs 0\r\n"
                                "STAT items:12:reclaimed 0\r\n"
                                "STAT items:12:expired_unfetched 0\r\n"
                                "STAT items:12:evicted_unfetched 0\r\n"
                                "STAT items:12:evicted_active 0\r\n"
                                "STAT items:12:crawler_reclaimed 0\r\n"
                                "STAT items:12:crawler_items_checked 0\r\n"
                                "STAT items:12:lrutail_reflocked 0\r\n"
                                "STAT items:12:moves_to_cold 0\r\n"
                                "STAT items:12:moves_to_warm 0\r\n"
                                "STAT items:12:moves_within_lru 0\r\n"
                                "STAT items:12:direct_reclaims 0\r\n"
                                "STAT items:12:hits_to_hot 0\r\n"
                                "STAT items:12:hits_to_warm 0\r\n"
                                "STAT items:12:hits_to_cold 0\r\n"
                                "STAT items:12:hits_to_temp 0\r\n"
                                "END\r\n";

/* `stats slabs` of a fresh memcached (49 bytes) */
static const char cap_empty_slabs[] = "STAT active_slabs 0\r\n"
                                      "STAT total_malloced 0\r\n"
                                      "END\r\n";

/* `stats items` of a fresh memcached (5 bytes) */
static const char cap_empty_items[] = "END\r\n";

/* one pipelined "stats\r\nstats slabs\r\nstats items\r\nstats settings\r\nversion\r\n" reply (7676 bytes),
 * with the `stats items` block moved before the `stats slabs` block: the
 * order slabtap asks in since issue 18 (each block is as captured) */
static const char cap_batch[] = "STAT pid 17920\r\n"
                                "STAT uptime 2\r\n"
                                "STAT time 1795977075\r\n"
                                "STAT version 1.6.18\r\n"
                                "STAT libevent 2.1.12-stable\r\n"
                                "STAT pointer_size 64\r\n"
                                "STAT rusage_user 0.010650\r\n"
                                "STAT rusage_system 0.014200\r\n"
                                "STAT max_connections 1024\r\n"
                                "STAT curr_connections 1\r\n"
                                "STAT total_connections 2\r\n"
                                "STAT rejected_connections 0\r\n"
                                "STAT connection_structures 2\r\n"
                                "STAT response_obj_oom 0\r\n"
                                "STAT response_obj_count 1\r\n"
                                "STAT response_obj_bytes 16384\r\n"
                                "STAT read_buf_count 2\r\n"
                                "STAT read_buf_bytes 32768\r\n"
                                "STAT read_buf_bytes_free 0\r\n"
                                "STAT read_buf_oom 0\r\n"
                                "STAT reserved_fds 20\r\n"
                                "STAT cmd_get 0\r\n"
                                "STAT cmd_set 6\r\n"
                                "STAT cmd_flush 0\r\n"
                                "STAT cmd_touch 0\r\n"
                                "STAT cmd_meta 0\r\n"
                                "STAT get_hits 0\r\n"
                                "STAT get_misses 0\r\n"
                                "STAT get_expired 0\r\n"
                                "STAT get_flushed 0\r\n"
                                "STAT delete_misses 0\r\n"
                                "STAT delete_hits 0\r\n"
                                "STAT incr_misses 0\r\n"
                                "STAT incr_hits 0\r\n"
                                "STAT decr_misses 0\r\n"
                                "STAT decr_hits 0\r\n"
                                "STAT cas_misses 0\r\n"
                                "STAT cas_hits 0\r\n"
                                "STAT cas_badval 0\r\n"
                                "STAT touch_hits 0\r\n"
                                "STAT touch_misses 0\r\n"
                                "STAT store_too_large 0\r\n"
                                "STAT store_no_memory 0\r\n"
                                "STAT auth_cmds 0\r\n"
                                "STAT auth_errors 0\r\n"
                                "STAT bytes_read 1647\r\n"
                                "STAT bytes_written 3662\r\n"
                                "STAT limit_maxbytes 67108864\r\n"
                                "STAT accepting_conns 1\r\n"
                                "STAT listen_disabled_num 0\r\n"
                                "STAT time_in_listen_disabled_us 0\r\n"
                                "STAT threads 4\r\n"
                                "STAT conn_yields 0\r\n"
                                "STAT hash_power_level 16\r\n"
                                "STAT hash_bytes 524288\r\n"
                                "STAT hash_is_expanding 0\r\n"
                                "STAT slab_reassign_rescues 0\r\n"
                                "STAT slab_reassign_chunk_rescues 0\r\n"
                                "STAT slab_reassign_evictions_nomem 0\r\n"
                                "STAT slab_reassign_inline_reclaim 0\r\n"
                                "STAT slab_reassign_busy_items 0\r\n"
                                "STAT slab_reassign_busy_deletes 0\r\n"
                                "STAT slab_reassign_running 0\r\n"
                                "STAT slabs_moved 0\r\n"
                                "STAT lru_crawler_running 0\r\n"
                                "STAT lru_crawler_starts 1\r\n"
                                "STAT lru_maintainer_juggles 31\r\n"
                                "STAT malloc_fails 0\r\n"
                                "STAT log_worker_dropped 0\r\n"
                                "STAT log_worker_written 0\r\n"
                                "STAT log_watcher_skipped 0\r\n"
                                "STAT log_watcher_sent 0\r\n"
                                "STAT log_watchers 0\r\n"
                                "STAT unexpected_napi_ids 0\r\n"
                                "STAT round_robin_fallback 0\r\n"
                                "STAT bytes 1805\r\n"
                                "STAT curr_items 6\r\n"
                                "STAT total_items 6\r\n"
                                "STAT slab_global_page_pool 0\r\n"
                                "STAT expired_unfetched 0\r\n"
                                "STAT evicted_unfetched 0\r\n"
                                "STAT evicted_active 0\r\n"
                                "STAT evictions 0\r\n"
                                "STAT reclaimed 0\r\n"
                                "STAT crawler_reclaimed 0\r\n"
                                "STAT crawler_items_checked 0\r\n"
                                "STAT lrutail_reflocked 0\r\n"
                                "STAT moves_to_cold 0\r\n"
                                "STAT moves_to_warm 0\r\n"
                                "STAT moves_within_lru 0\r\n"
                                "STAT direct_reclaims 0\r\n"
                                "STAT lru_bumps_dropped 0\r\n"
                                "END\r\n"
                                "STAT items:1:number 3\r\n"
                                "STAT items:1:number_hot 3\r\n"
                                "STAT items:1:number_warm 0\r\n"
                                "STAT items:1:number_cold 0\r\n"
                                "STAT items:1:age_hot 0\r\n"
                                "STAT items:1:age_warm 0\r\n"
                                "STAT items:1:age 0\r\n"
                                "STAT items:1:mem_requested 213\r\n"
                                "STAT items:1:evicted 0\r\n"
                                "STAT items:1:evicted_nonzero 0\r\n"
                                "STAT items:1:evicted_time 0\r\n"
                                "STAT items:1:outofmemory 0\r\n"
                                "STAT items:1:tailrepairs 0\r\n"
                                "STAT items:1:reclaimed 0\r\n"
                                "STAT items:1:expired_unfetched 0\r\n"
                                "STAT items:1:evicted_unfetched 0\r\n"
                                "STAT items:1:evicted_active 0\r\n"
                                "STAT items:1:crawler_reclaimed 0\r\n"
                                "STAT items:1:crawler_items_checked 0\r\n"
                                "STAT items:1:lrutail_reflocked 0\r\n"
                                "STAT items:1:moves_to_cold 0\r\n"
                                "STAT items:1:moves_to_warm 0\r\n"
                                "STAT items:1:moves_within_lru 0\r\n"
                                "STAT items:1:direct_reclaims 0\r\n"
                                "STAT items:1:hits_to_hot 0\r\n"
                                "STAT items:1:hits_to_warm 0\r\n"
                                "STAT items:1:hits_to_cold 0\r\n"
                                "STAT items:1:hits_to_temp 0\r\n"
                                "STAT items:6:number 2\r\n"
                                "STAT items:6:number_hot 2\r\n"
                                "STAT items:6:number_warm 0\r\n"
                                "STAT items:6:number_cold 0\r\n"
                                "STAT items:6:age_hot 0\r\n"
                                "STAT items:6:age_warm 0\r\n"
                                "STAT items:6:age 0\r\n"
                                "STAT items:6:mem_requested 530\r\n"
                                "STAT items:6:evicted 0\r\n"
                                "STAT items:6:evicted_nonzero 0\r\n"
                                "STAT items:6:evicted_time 0\r\n"
                                "STAT items:6:outofmemory 0\r\n"
                                "STAT items:6:tailrepairs 0\r\n"
                                "STAT items:6:reclaimed 0\r\n"
                                "STAT items:6:expired_unfetched 0\r\n"
                                "STAT items:6:evicted_unfetched 0\r\n"
                                "STAT items:6:evicted_active 0\r\n"
                                "STAT items:6:crawler_reclaimed 0\r\n"
                                "STAT items:6:crawler_items_checked 0\r\n"
                                "STAT items:6:lrutail_reflocked 0\r\n"
                                "STAT items:6:moves_to_cold 0\r\n"
                                "STAT items:6:moves_to_warm 0\r\n"
                                "STAT items:6:moves_within_lru 0\r\n"
                                "STAT items:6:direct_reclaims 0\r\n"
                                "STAT items:6:hits_to_hot 0\r\n"
                                "STAT items:6:hits_to_warm 0\r\n"
                                "STAT items:6:hits_to_cold 0\r\n"
                                "STAT items:6:hits_to_temp 0\r\n"
                                "STAT items:12:number 1\r\n"
                                "STAT items:12:number_hot 1\r\n"
                                "STAT items:12:number_warm 0\r\n"
                                "STAT items:12:number_cold 0\r\n"
                                "STAT items:12:age_hot 0\r\n"
                                "STAT items:12:age_warm 0\r\n"
                                "STAT items:12:age 0\r\n"
                                "STAT items:12:mem_requested 1062\r\n"
                                "STAT items:12:evicted 0\r\n"
                                "STAT items:12:evicted_nonzero 0\r\n"
                                "STAT items:12:evicted_time 0\r\n"
                                "STAT items:12:outofmemory 0\r\n"
                                "STAT items:12:tailrepairs 0\r\n"
                                "STAT items:12:reclaimed 0\r\n"
                                "STAT items:12:expired_unfetched 0\r\n"
                                "STAT items:12:evicted_unfetched 0\r\n"
                                "STAT items:12:evicted_active 0\r\n"
                                "STAT items:12:crawler_reclaimed 0\r\n"
                                "STAT items:12:crawler_items_checked 0\r\n"
                                "STAT items:12:lrutail_reflocked 0\r\n"
                                "STAT items:12:moves_to_cold 0\r\n"
                                "STAT items:12:moves_to_warm 0\r\n"
                                "STAT items:12:moves_within_lru 0\r\n"
                                "STAT items:12:direct_reclaims 0\r\n"
                                "STAT items:12:hits_to_hot 0\r\n"
                                "STAT items:12:hits_to_warm 0\r\n"
                                "STAT items:12:hits_to_cold 0\r\n"
                                "STAT items:12:hits_to_temp 0\r\n"
                                "END\r\n"
                                "STAT 1:chunk_size 96\r\n"
                                "STAT 1:chunks_per_page 10922\r\n"
                                "STAT 1:total_pages 1\r\n"
                                "STAT 1:total_chunks 10922\r\n"
                                "STAT 1:used_chunks 3\r\n"
                                "STAT 1:free_chunks 10919\r\n"
                                "STAT 1:free_chunks_end 0\r\n"
                                "STAT 1:get_hits 0\r\n"
                                "STAT 1:cmd_set 3\r\n"
                                "STAT 1:delete_hits 0\r\n"
                                "STAT 1:incr_hits 0\r\n"
                                "STAT 1:decr_hits 0\r\n"
                                "STAT 1:cas_hits 0\r\n"
                                "STAT 1:cas_badval 0\r\n"
                                "STAT 1:touch_hits 0\r\n"
                                "STAT 6:chunk_size 304\r\n"
                                "STAT 6:chunks_per_page 3449\r\n"
                                "STAT 6:total_pages 1\r\n"
                                "STAT 6:total_chunks 3449\r\n"
                                "STAT 6:used_chunks 2\r\n"
                                "STAT 6:free_chunks 3447\r\n"
                                "STAT 6:free_chunks_end 0\r\n"
                                "STAT 6:get_hits 0\r\n"
                                "STAT 6:cmd_set 2\r\n"
                                "STAT 6:delete_hits 0\r\n"
                                "STAT 6:incr_hits 0\r\n"
                                "STAT 6:decr_hits 0\r\n"
                                "STAT 6:cas_hits 0\r\n"
                                "STAT 6:cas_badval 0\r\n"
                                "STAT 6:touch_hits 0\r\n"
                                "STAT 12:chunk_size 1184\r\n"
                                "STAT 12:chunks_per_page 885\r\n"
                                "STAT 12:total_pages 1\r\n"
                                "STAT 12:total_chunks 885\r\n"
                                "STAT 12:used_chunks 1\r\n"
                                "STAT 12:free_chunks 884\r\n"
                                "STAT 12:free_chunks_end 0\r\n"
                                "STAT 12:get_hits 0\r\n"
                                "STAT 12:cmd_set 1\r\n"
                                "STAT 12:delete_hits 0\r\n"
                                "STAT 12:incr_hits 0\r\n"
                                "STAT 12:decr_hits 0\r\n"
                                "STAT 12:cas_hits 0\r\n"
                                "STAT 12:cas_badval 0\r\n"
                                "STAT 12:touch_hits 0\r\n"
                                "STAT active_slabs 3\r\n"
                                "STAT total_malloced 3145728\r\n"
                                "END\r\n"
                                "STAT maxbytes 67108864\r\n"
                                "STAT maxconns 1024\r\n"
                                "STAT tcpport 32947\r\n"
                                "STAT udpport 0\r\n"
                                "STAT inter 127.0.0.1\r\n"
                                "STAT verbosity 0\r\n"
                                "STAT oldest 0\r\n"
                                "STAT evictions on\r\n"
                                "STAT domain_socket NULL\r\n"
                                "STAT umask 700\r\n"
                                "STAT shutdown_command no\r\n"
                                "STAT growth_factor 1.25\r\n"
                                "STAT chunk_size 48\r\n"
                                "STAT num_threads 4\r\n"
                                "STAT num_threads_per_udp 4\r\n"
                                "STAT stat_key_prefix :\r\n"
                                "STAT detail_enabled no\r\n"
                                "STAT reqs_per_event 20\r\n"
                                "STAT cas_enabled yes\r\n"
                                "STAT tcp_backlog 1024\r\n"
                                "STAT binding_protocol auto-negotiate\r\n"
                                "STAT auth_enabled_sasl no\r\n"
                                "STAT auth_enabled_ascii no\r\n"
                                "STAT item_size_max 1048576\r\n"
                                "STAT maxconns_fast yes\r\n"
                                "STAT hashpower_init 0\r\n"
                                "STAT slab_reassign yes\r\n"
                                "STAT slab_automove 1\r\n"
                                "STAT slab_automove_ratio 0.80\r\n"
                                "STAT slab_automove_window 30\r\n"
                                "STAT slab_chunk_max 524288\r\n"
                                "STAT lru_crawler yes\r\n"
                                "STAT lru_crawler_sleep 100\r\n"
                                "STAT lru_crawler_tocrawl 0\r\n"
                                "STAT tail_repair_time 0\r\n"
                                "STAT flush_enabled yes\r\n"
                                "STAT dump_enabled yes\r\n"
                                "STAT hash_algorithm murmur3\r\n"
                                "STAT lru_maintainer_thread yes\r\n"
                                "STAT lru_segmented yes\r\n"
                                "STAT hot_lru_pct 20\r\n"
                                "STAT warm_lru_pct 40\r\n"
                                "STAT hot_max_factor 0.20\r\n"
                                "STAT warm_max_factor 2.00\r\n"
                                "STAT temp_lru no\r\n"
                                "STAT temporary_ttl 61\r\n"
                                "STAT idle_timeout 0\r\n"
                                "STAT watcher_logbuf_size 262144\r\n"
                                "STAT worker_logbuf_size 65536\r\n"
                                "STAT read_buf_mem_limit 0\r\n"
                                "STAT track_sizes no\r\n"
                                "STAT inline_ascii_response no\r\n"
                                "STAT ext_item_size 512\r\n"
                                "STAT ext_item_age 4294967295\r\n"
                                "STAT ext_low_ttl 0\r\n"
                                "STAT ext_recache_rate 2000\r\n"
                                "STAT ext_wbuf_size 4194304\r\n"
                                "STAT ext_compact_under 0\r\n"
                                "STAT ext_drop_under 0\r\n"
                                "STAT ext_max_sleep 1000000\r\n"
                                "STAT ext_max_frag 0.80\r\n"
                                "STAT slab_automove_freeratio 0.010\r\n"
                                "STAT ext_drop_unread no\r\n"
                                "STAT ssl_enabled no\r\n"
                                "STAT ssl_chain_cert (null)\r\n"
                                "STAT ssl_key (null)\r\n"
                                "STAT ssl_verify_mode 0\r\n"
                                "STAT ssl_keyformat 1\r\n"
                                "STAT ssl_ciphers NULL\r\n"
                                "STAT ssl_ca_cert NULL\r\n"
                                "STAT ssl_wbuf_size 16384\r\n"
                                "STAT ssl_session_cache no\r\n"
                                "STAT ssl_kernel_tls no\r\n"
                                "STAT ssl_min_version tlsv1.2\r\n"
                                "STAT num_napi_ids (null)\r\n"
                                "STAT memory_file (null)\r\n"
                                "END\r\n"
                                "VERSION 1.6.18\r\n";

/* reply to `stats bogus` (7 bytes) */
static const char cap_error[] = "ERROR\r\n";

/* reply to `stats detail bogus` (46 bytes) */
static const char cap_client_error[] = "CLIENT_ERROR usage: stats detail on|off|dump\r\n";

/* ---- helpers ---------------------------------------------------------- */

/* A read-only copy of data whose last byte is the last byte of a page,
 * followed by an inaccessible page. */
struct ro_buf {
    char *map;
    size_t map_len;
    const char *data;
    size_t len;
};

static struct ro_buf ro_open(const char *data, size_t len)
{
    struct ro_buf b = { 0 };
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t data_pages = (len + page - 1) / page + 1;

    b.map_len = (data_pages + 1) * page;
    b.map = mmap(NULL, b.map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (b.map == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    b.data = b.map + data_pages * page - len;
    memcpy(b.map + data_pages * page - len, data, len);
    if (mprotect(b.map, data_pages * page, PROT_READ) ||
        mprotect(b.map + data_pages * page, page, PROT_NONE)) {
        perror("mprotect");
        exit(2);
    }
    b.len = len;
    return b;
}

static void ro_close(struct ro_buf *b)
{
    munmap(b->map, b->map_len);
}

struct text {
    char *s;
    size_t len, cap;
};

static void text_add(struct text *t, const char *s, size_t n)
{
    if (t->len + n + 1 > t->cap) {
        t->cap = (t->len + n + 1) * 2;
        t->s = realloc(t->s, t->cap);
        if (!t->s)
            exit(2);
    }
    memcpy(t->s + t->len, s, n);
    t->len += n;
    t->s[t->len] = '\0';
}

static void text_adds(struct text *t, const char *s)
{
    text_add(t, s, strlen(s));
}

/* Writes an event back as the protocol line it came from, so a parse can be
 * compared byte for byte with its input. */
static void text_event(struct text *t, const struct stats_parse_event *ev)
{
    static const char *const kinds[] = { "ERROR", "CLIENT_ERROR", "SERVER_ERROR" };

    switch (ev->kind) {
    case STATS_EV_STAT:
        text_adds(t, "STAT ");
        text_add(t, ev->name, ev->name_len);
        text_adds(t, " ");
        text_add(t, ev->value, ev->value_len);
        break;
    case STATS_EV_END: text_adds(t, "END"); break;
    case STATS_EV_VERSION:
        text_adds(t, "VERSION ");
        text_add(t, ev->value, ev->value_len);
        break;
    case STATS_EV_ERROR_REPLY:
        text_adds(t, kinds[ev->error_reply]);
        if (ev->value_len) {
            text_adds(t, " ");
            text_add(t, ev->value, ev->value_len);
        }
        break;
    }
    text_adds(t, "\r\n");
}

/* Feeds buf to p, appending every event to out; returns NEED_MORE when all
 * was consumed without error, else ERROR. Checks the consumed contract. */
static enum stats_parse_result feed_lines(struct stats_parser *p, const char *buf, size_t len,
                                          struct text *out)
{
    size_t off = 0;
    enum stats_parse_result r = STATS_PARSE_NEED_MORE;

    while (off < len) {
        struct stats_parse_event ev;
        size_t used = 12345;
        r = stats_parse_next(p, buf + off, len - off, &used, &ev);
        if (r == STATS_PARSE_ERROR)
            break;
        CHECK_TRUE(used > 0 && used <= len - off);
        off += used;
        if (r == STATS_PARSE_NEED_MORE) {
            CHECK_TRUE(off == len);
            break;
        }
        CHECK_TRUE(ev.name[ev.name_len] == '\0' && ev.value[ev.value_len] == '\0');
        text_event(out, &ev);
        r = STATS_PARSE_NEED_MORE;
    }
    return r;
}

static bool sample_equal(const struct stats_sample *a, const struct stats_sample *b)
{
    if (!stats_kv_equal(&a->stats, &b->stats) ||
        !stats_kv_equal(&a->slab_globals, &b->slab_globals) || a->has_settings != b->has_settings ||
        !stats_kv_equal(&a->settings, &b->settings) || a->has_version != b->has_version ||
        strcmp(a->version, b->version) || a->n_classes != b->n_classes ||
        a->max_class_id != b->max_class_id || a->fields_dropped != b->fields_dropped ||
        a->classes_partial != b->classes_partial)
        return false;
    for (unsigned i = 0; i < STATS_CLASS_ID_LIMIT; i++) {
        if (a->classes[i].present != b->classes[i].present ||
            a->classes[i].sources != b->classes[i].sources ||
            !stats_kv_equal(&a->classes[i].kv, &b->classes[i].kv))
            return false;
    }
    return true;
}

static uint32_t sample_fields(const struct stats_sample *s)
{
    uint32_t n = s->stats.n + s->settings.n + s->slab_globals.n;
    for (unsigned i = 0; i < STATS_CLASS_ID_LIMIT; i++)
        n += s->classes[i].kv.n;
    return n;
}

static size_t count_substr(const char *s, size_t len, const char *needle)
{
    size_t n = 0, nl = strlen(needle);
    for (size_t i = 0; i + nl <= len; i++)
        if (!memcmp(s + i, needle, nl))
            n++;
    return n;
}

/* Runs one batch over buf in the pieces given by cuts (ascending offsets,
 * 0 < cut < len); returns the final result and how many bytes it took. */
static enum stats_parse_result run_batch(struct stats_sample *s, unsigned which, const char *buf,
                                         size_t len, const size_t *cuts, size_t ncuts,
                                         size_t *taken)
{
    struct stats_parse_batch b;
    enum stats_parse_result r = STATS_PARSE_NEED_MORE;
    size_t start = 0;

    *taken = 0;
    stats_parse_batch_begin(&b, s, which);
    for (size_t i = 0; i <= ncuts && r == STATS_PARSE_NEED_MORE; i++) {
        size_t end = i < ncuts ? cuts[i] : len;
        size_t used = 0;
        r = stats_parse_batch_feed(&b, buf + start, end - start, &used);
        *taken += used;
        start = end;
    }
    return r;
}

/* ---- tests ------------------------------------------------------------ */

/* Parsing at once reproduces the input byte for byte, and so does every
 * split into two pieces and a byte-at-a-time feed. */
static void test_roundtrip_every_split(const char *name, const char *data, size_t len)
{
    struct ro_buf rb = ro_open(data, len);
    struct stats_parser p;
    struct text whole = { 0 };

    stats_parse_init(&p);
    CHECK_TRUE(feed_lines(&p, rb.data, rb.len, &whole) == STATS_PARSE_NEED_MORE);
    CHECK_TRUE(whole.len == len && !memcmp(whole.s, data, len));
    CHECK_TRUE(p.len == 0 && !p.in_block);

    size_t bad_cut = len + 1; /* the first split that differs; none */
    for (size_t cut = 0; cut <= len && bad_cut > len; cut++) {
        struct text t = { 0 };
        stats_parse_init(&p);
        enum stats_parse_result r1 = feed_lines(&p, rb.data, cut, &t);
        enum stats_parse_result r2 = feed_lines(&p, rb.data + cut, len - cut, &t);
        if (r1 != STATS_PARSE_NEED_MORE || r2 != STATS_PARSE_NEED_MORE || t.len != len ||
            memcmp(t.s, data, len))
            bad_cut = cut;
        free(t.s);
    }
    CHECK(bad_cut > len, "%s: split at %zu differs", name, bad_cut);

    struct text bytewise = { 0 };
    stats_parse_init(&p);
    for (size_t i = 0; i < len; i++)
        CHECK_TRUE(feed_lines(&p, rb.data + i, 1, &bytewise) == STATS_PARSE_NEED_MORE);
    CHECK_TRUE(bytewise.len == len && !memcmp(bytewise.s, data, len));
    free(bytewise.s);
    free(whole.s);
    ro_close(&rb);
}

static void test_line_events(void)
{
    static const char in[] = "STAT pid 3332\r\n"
                             "STAT inter 127.0.0.1\r\n"
                             "STAT stat_key_prefix :\r\n"
                             "STAT odd value with spaces\r\n"
                             "STAT empty \r\n"
                             "END\r\n"
                             "VERSION 1.6.18\r\n"
                             "ERROR\r\n"
                             "CLIENT_ERROR usage: stats detail on|off|dump\r\n"
                             "SERVER_ERROR out of memory writing stats\r\n"
                             "STAT bare_lf 7\n";
    static const struct {
        enum stats_parse_event_kind kind;
        const char *name, *value;
    } want[] = {
        { STATS_EV_STAT, "pid", "3332" },
        { STATS_EV_STAT, "inter", "127.0.0.1" },
        { STATS_EV_STAT, "stat_key_prefix", ":" },
        { STATS_EV_STAT, "odd", "value with spaces" },
        { STATS_EV_STAT, "empty", "" },
        { STATS_EV_END, "", "" },
        { STATS_EV_VERSION, "", "1.6.18" },
        { STATS_EV_ERROR_REPLY, "", "" },
        { STATS_EV_ERROR_REPLY, "", "usage: stats detail on|off|dump" },
        { STATS_EV_ERROR_REPLY, "", "out of memory writing stats" },
        { STATS_EV_STAT, "bare_lf", "7" },
    };
    static const enum stats_error_reply want_err[] = { STATS_REPLY_ERROR, STATS_REPLY_CLIENT_ERROR,
                                                       STATS_REPLY_SERVER_ERROR };
    struct ro_buf rb = ro_open(in, sizeof in - 1);
    struct stats_parser p;
    size_t off = 0, n = 0;

    stats_parse_init(&p);
    while (off < rb.len) {
        struct stats_parse_event ev;
        size_t used;
        enum stats_parse_result r = stats_parse_next(&p, rb.data + off, rb.len - off, &used, &ev);
        CHECK_TRUE(r == STATS_PARSE_OK);
        if (r != STATS_PARSE_OK || n >= sizeof want / sizeof want[0])
            break;
        off += used;
        CHECK_INT(ev.kind, want[n].kind);
        CHECK_STR(ev.name, want[n].name);
        CHECK_STR(ev.value, want[n].value);
        CHECK_INT(ev.name_len, strlen(want[n].name));
        CHECK_INT(ev.value_len, strlen(want[n].value));
        if (ev.kind == STATS_EV_ERROR_REPLY)
            CHECK_INT(ev.error_reply, want_err[n - 7]);
        n++;
    }
    CHECK_INT(n, sizeof want / sizeof want[0]);
    CHECK_INT(off, rb.len);
    ro_close(&rb);
}

static enum stats_parse_error parse_error_of(const char *in, size_t len)
{
    struct stats_parser p;
    struct text t = { 0 };

    stats_parse_init(&p);
    enum stats_parse_result r = feed_lines(&p, in, len, &t);
    free(t.s);
    return r == STATS_PARSE_ERROR ? p.error : STATS_PARSE_E_NONE;
}

static void test_line_errors(void)
{
    static const struct {
        const char *in;
        enum stats_parse_error want;
    } cases[] = {
        { "HELLO\r\n", STATS_PARSE_E_UNKNOWN_LINE },
        { "STAT\r\n", STATS_PARSE_E_UNKNOWN_LINE },
        { "STAT  1\r\n", STATS_PARSE_E_BAD_STAT },
        { "ENDX\r\n", STATS_PARSE_E_UNKNOWN_LINE },
        { "END \r\n", STATS_PARSE_E_UNKNOWN_LINE },
        { "ERRORS\r\n", STATS_PARSE_E_UNKNOWN_LINE },
        { "VERSION\r\n", STATS_PARSE_E_UNKNOWN_LINE },
        { "STAT a 1\r\nVERSION 1.6.18\r\n", STATS_PARSE_E_UNEXPECTED },
        { "\r\n", STATS_PARSE_E_UNKNOWN_LINE },
        { "STAT a 1\r\nEND\r\nVERSION 1.6.18\r\n", STATS_PARSE_E_NONE },
        { "STAT a 1\r\nERROR\r\nVERSION 1.6.18\r\n", STATS_PARSE_E_NONE },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        enum stats_parse_error got = parse_error_of(cases[i].in, strlen(cases[i].in));
        if (got != cases[i].want)
            fprintf(stderr, "case %zu: \"%s\"\n", i, cases[i].in);
        CHECK_INT(got, cases[i].want);
    }
    CHECK_INT(parse_error_of("STAT a\0b 1\r\n", 12), STATS_PARSE_E_NUL_BYTE);

    /* The text table covers every code. */
    for (int e = 0; e < STATS_PARSE_E_COUNT; e++)
        CHECK_TRUE(stats_parse_error_str((enum stats_parse_error)e) != NULL);
    CHECK_STR(stats_parse_error_str(STATS_PARSE_E_LINE_TOO_LONG),
              "line longer than STATS_PARSE_LINE_MAX");
    CHECK_TRUE(stats_parse_error_str((enum stats_parse_error)999) != NULL);
}

/* A line of exactly STATS_PARSE_LINE_MAX bytes (CRLF included) parses; one
 * byte more is an error, whether it arrives at once or a byte at a time,
 * and the error is sticky until reset. */
static void test_line_bound(void)
{
    char *line = malloc(STATS_PARSE_LINE_MAX + 16);
    size_t len;

    for (int extra = 0; extra <= 1; extra++) {
        len = STATS_PARSE_LINE_MAX + (size_t)extra;
        memcpy(line, "STAT long ", 10);
        memset(line + 10, 'v', len - 12);
        memcpy(line + len - 2, "\r\n", 2);
        struct ro_buf rb = ro_open(line, len);
        for (int bytewise = 0; bytewise <= 1; bytewise++) {
            struct stats_parser p;
            struct text t = { 0 };
            enum stats_parse_result r = STATS_PARSE_NEED_MORE;
            stats_parse_init(&p);
            if (bytewise) {
                for (size_t i = 0; i < len && r == STATS_PARSE_NEED_MORE; i++)
                    r = feed_lines(&p, rb.data + i, 1, &t);
            } else {
                r = feed_lines(&p, rb.data, len, &t);
            }
            if (extra) {
                CHECK_TRUE(r == STATS_PARSE_ERROR);
                CHECK_INT(p.error, STATS_PARSE_E_LINE_TOO_LONG);
                /* sticky */
                struct stats_parse_event ev;
                size_t used = 99;
                CHECK_TRUE(stats_parse_next(&p, "END\r\n", 5, &used, &ev) == STATS_PARSE_ERROR);
                CHECK_INT(used, 0);
                stats_parse_reset(&p);
                CHECK_TRUE(stats_parse_next(&p, "END\r\n", 5, &used, &ev) == STATS_PARSE_OK);
                CHECK_TRUE(ev.kind == STATS_EV_END);
            } else {
                CHECK_TRUE(r == STATS_PARSE_NEED_MORE);
                CHECK_TRUE(t.len == len && !memcmp(t.s, line, len));
            }
            free(t.s);
        }
        ro_close(&rb);
    }
    /* Without any newline the bound still holds: no unbounded buffering. */
    memset(line, 'x', STATS_PARSE_LINE_MAX + 1);
    struct ro_buf rb = ro_open(line, STATS_PARSE_LINE_MAX + 1);
    CHECK_INT(parse_error_of(rb.data, STATS_PARSE_LINE_MAX), STATS_PARSE_E_NONE);
    CHECK_INT(parse_error_of(rb.data, STATS_PARSE_LINE_MAX + 1), STATS_PARSE_E_LINE_TOO_LONG);
    ro_close(&rb);
    free(line);
}

static void test_int64(void)
{
    static const struct {
        const char *s;
        bool ok;
        int64_t v;
    } cases[] = {
        { "0", true, 0 },
        { "1805", true, 1805 },
        { "-1", true, -1 },
        { "00012", true, 12 },
        { "9223372036854775807", true, INT64_MAX },
        { "-9223372036854775808", true, INT64_MIN },
        { "9223372036854775808", false, 0 },
        { "18446744073709551615", false, 0 },
        { "4294967295", true, 4294967295LL },
        { "1.25", false, 0 },
        { "0.013499", false, 0 },
        { "", false, 0 },
        { "-", false, 0 },
        { "+1", false, 0 },
        { "12a", false, 0 },
        { " 1", false, 0 },
        { "(null)", false, 0 },
        { "2.1.12-stable", false, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t v = 777;
        bool ok = stats_parse_int64(cases[i].s, strlen(cases[i].s), &v);
        CHECK_INT(ok, cases[i].ok);
        if (ok && cases[i].ok)
            CHECK_INT(v, cases[i].v);
        if (!ok)
            CHECK_INT(v, 777);
    }
}

static void test_class_name(void)
{
    static const struct {
        const char *name;
        bool ok;
        unsigned long id;
        const char *field;
    } cases[] = {
        { "12:used_chunks", true, 12, "used_chunks" },
        { "1:chunk_size", true, 1, "chunk_size" },
        { "items:12:mem_requested", true, 12, "mem_requested" },
        { "items:1:number", true, 1, "number" },
        { "300:chunk_size", true, 300, "chunk_size" },
        { "0:x", true, 0, "x" },
        { "1:a:b", true, 1, "a:b" },
        { "active_slabs", false, 0, "" },
        { "total_malloced", false, 0, "" },
        { "items:x:y", false, 0, "" },
        { "items:12", false, 0, "" },
        { "items:12:", false, 0, "" },
        { "1:", false, 0, "" },
        { ":x", false, 0, "" },
        { "12", false, 0, "" },
        { "99999999999:x", false, 0, "" },
        { "x1:y", false, 0, "" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsigned long id = 0;
        const char *field = NULL;
        size_t fl = 0;
        bool ok = stats_parse_class_name(cases[i].name, strlen(cases[i].name), &id, &field, &fl);
        if (ok != cases[i].ok)
            fprintf(stderr, "class name case \"%s\"\n", cases[i].name);
        CHECK_INT(ok, cases[i].ok);
        if (ok && cases[i].ok) {
            CHECK_INT(id, cases[i].id);
            CHECK_TRUE(fl == strlen(cases[i].field) && !memcmp(field, cases[i].field, fl));
        }
    }
}

static void test_batch_command(void)
{
    char buf[STATS_BATCH_CMD_MAX];
    size_t n;

    n = stats_parse_batch_command(STATS_R_REQUIRED, buf, sizeof buf);
    CHECK_STR(buf, "stats\r\nstats items\r\nstats slabs\r\n");
    CHECK_INT(n, strlen(buf));
    n = stats_parse_batch_command(STATS_R_ALL, buf, sizeof buf);
    CHECK_STR(buf, "stats\r\nstats items\r\nstats slabs\r\nstats settings\r\nversion\r\n");
    CHECK_INT(n, strlen(buf));
    CHECK_INT(stats_parse_batch_command(STATS_R_ALL, buf, 10), 0);
    CHECK_INT(stats_parse_batch_command(0, buf, sizeof buf), 0);
}

/* The merge of the captured pair: mem_requested, which 1.6.18 prints only in
 * `stats items`, lands in the same class as the `stats slabs` fields. */
static void test_merge_captured(void)
{
    static const struct {
        unsigned cls;
        const char *field;
        int64_t v;
    } want[] = {
        { 1, "chunk_size", 96 },
        { 1, "chunks_per_page", 10922 },
        { 1, "total_pages", 1 },
        { 1, "total_chunks", 10922 },
        { 1, "used_chunks", 3 },
        { 1, "free_chunks", 10919 },
        { 1, "cmd_set", 3 },
        { 1, "mem_requested", 213 },
        { 1, "number", 3 },
        { 1, "number_hot", 3 },
        { 1, "hits_to_temp", 0 },
        { 6, "chunk_size", 304 },
        { 6, "used_chunks", 2 },
        { 6, "mem_requested", 530 },
        { 6, "number", 2 },
        { 6, "total_chunks", 3449 },
        { 12, "chunk_size", 1184 },
        { 12, "chunks_per_page", 885 },
        { 12, "used_chunks", 1 },
        { 12, "free_chunks", 884 },
        { 12, "mem_requested", 1062 },
        { 12, "number", 1 },
    };
    size_t len = strlen(cap_slabs) + strlen(cap_items);
    char *both = malloc(len + 1);
    struct stats_sample s;
    size_t taken;
    int64_t v;

    strcpy(both, cap_items); /* the batch's order: items, then slabs */
    strcat(both, cap_slabs);
    struct ro_buf rb = ro_open(both, len);
    stats_sample_init(&s);
    CHECK_TRUE(run_batch(&s, STATS_R_SLABS | STATS_R_ITEMS, rb.data, rb.len, NULL, 0, &taken) ==
               STATS_PARSE_OK);
    CHECK_INT(taken, len);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        v = -999;
        CHECK_TRUE(stats_sample_get(&s, want[i].cls, want[i].field, &v));
        if (v != want[i].v)
            fprintf(stderr, "class %u %s\n", want[i].cls, want[i].field);
        CHECK_INT(v, want[i].v);
    }
    CHECK_INT(s.n_classes, 3);
    CHECK_INT(s.max_class_id, 12);
    for (unsigned c = 0; c < STATS_CLASS_ID_LIMIT; c++) {
        bool want_present = c == 1 || c == 6 || c == 12;
        CHECK_INT(stats_sample_class(&s, c) != NULL, want_present);
        if (want_present) {
            /* 15 slabs fields + 28 items fields in 1.6.18, all kept */
            CHECK_INT(s.classes[c].kv.n, 15 + 28);
            CHECK_INT(s.classes[c].sources, STATS_R_SLABS | STATS_R_ITEMS);
            /* items first, then slabs, in arrival order */
            CHECK_STR(stats_kv_name(&s.classes[c].kv, 0), "number");
            CHECK_STR(stats_kv_name(&s.classes[c].kv, 28), "chunk_size");
        }
    }
    /* Global fields of stats slabs stay global, not in any class. */
    CHECK_TRUE(stats_sample_global(&s, "active_slabs", &v) && v == 3);
    CHECK_TRUE(stats_sample_global(&s, "total_malloced", &v) && v == 3145728);
    CHECK_INT(s.slab_globals.n, 2);
    CHECK_TRUE(!stats_sample_get(&s, 1, "active_slabs", &v));
    CHECK_TRUE(!stats_sample_get(&s, 2, "chunk_size", &v));
    CHECK_TRUE(!stats_sample_get(&s, 1, "no_such_field", &v));
    CHECK_TRUE(!stats_sample_get(&s, 100000, "chunk_size", &v));
    CHECK_INT(sample_fields(&s), 47 + 84);
    CHECK_INT(s.fields_dropped, 0);
    /* used = total - free, the invariant the slab model relies on */
    for (unsigned c = 0; c <= s.max_class_id; c++) {
        int64_t tot, fr, used;
        if (!stats_sample_class(&s, c))
            continue;
        CHECK_TRUE(stats_sample_get(&s, c, "total_chunks", &tot) &&
                   stats_sample_get(&s, c, "free_chunks", &fr) &&
                   stats_sample_get(&s, c, "used_chunks", &used) && used == tot - fr);
    }
    stats_sample_fini(&s);
    ro_close(&rb);
    free(both);
}

static void test_empty_server(void)
{
    size_t len = strlen(cap_empty_slabs) + strlen(cap_empty_items);
    char both[256];
    struct stats_sample s;
    size_t taken;
    int64_t v;

    snprintf(both, sizeof both, "%s%s", cap_empty_items, cap_empty_slabs);
    stats_sample_init(&s);
    CHECK_TRUE(run_batch(&s, STATS_R_SLABS | STATS_R_ITEMS, both, len, NULL, 0, &taken) ==
               STATS_PARSE_OK);
    CHECK_INT(s.n_classes, 0);
    CHECK_INT(s.max_class_id, 0);
    CHECK_TRUE(stats_sample_global(&s, "active_slabs", &v) && v == 0);
    CHECK_TRUE(stats_sample_class(&s, 0) == NULL);
    stats_sample_fini(&s);
}

/* The real pipelined batch: every field is kept, the sums agree, and every
 * split point and a byte-wise feed build the very same sample. */
static void test_batch_captured(void)
{
    size_t len = strlen(cap_batch);
    struct ro_buf rb = ro_open(cap_batch, len);
    struct stats_sample ref, s;
    size_t taken;
    int64_t v, sum = 0, bytes = -1;

    stats_sample_init(&ref);
    stats_sample_init(&s);
    CHECK_TRUE(run_batch(&ref, STATS_R_ALL, rb.data, len, NULL, 0, &taken) == STATS_PARSE_OK);
    CHECK_INT(taken, len);
    CHECK_INT(sample_fields(&ref), count_substr(cap_batch, len, "STAT "));
    CHECK_INT(ref.fields_dropped, 0);
    CHECK_TRUE(ref.has_version);
    CHECK_STR(ref.version, "1.6.18");
    CHECK_STR(stats_sample_global_text(&ref, "version"), "1.6.18");
    CHECK_STR(stats_sample_global_text(&ref, "libevent"), "2.1.12-stable");
    CHECK_STR(stats_sample_global_text(&ref, "rusage_user"), "0.010650");
    CHECK_TRUE(!stats_sample_global(&ref, "rusage_user", &v));
    CHECK_TRUE(ref.has_settings);
    CHECK_STR(stats_sample_setting_text(&ref, "growth_factor"), "1.25");
    CHECK_STR(stats_sample_setting_text(&ref, "stat_key_prefix"), ":");
    CHECK_STR(stats_sample_setting_text(&ref, "ssl_chain_cert"), "(null)");
    CHECK_TRUE(stats_sample_setting(&ref, "chunk_size", &v) && v == 48);
    CHECK_TRUE(stats_sample_setting(&ref, "slab_chunk_max", &v) && v == 524288);
    CHECK_TRUE(stats_sample_setting(&ref, "item_size_max", &v) && v == 1048576);
    CHECK_TRUE(stats_sample_global(&ref, "bytes", &bytes));
    CHECK_INT(bytes, 1805);
    for (unsigned c = 0; c <= ref.max_class_id; c++)
        if (stats_sample_get(&ref, c, "mem_requested", &v))
            sum += v;
    CHECK_INT(sum, bytes);
    CHECK_TRUE(stats_sample_global(&ref, "curr_items", &v) && v == 6);
    /* `stats` and `stats settings` both have fields the other lacks */
    CHECK_TRUE(stats_kv_find(&ref.stats, "maxbytes") == NULL);
    CHECK_TRUE(stats_kv_find(&ref.settings, "limit_maxbytes") == NULL);

    size_t bad_cut = 0; /* the first split that differs; none */
    int bad_r = STATS_PARSE_OK;
    for (size_t cut = 1; cut < len && bad_cut == 0; cut++) {
        enum stats_parse_result r = run_batch(&s, STATS_R_ALL, rb.data, len, &cut, 1, &taken);
        if (r != STATS_PARSE_OK || taken != len || !sample_equal(&s, &ref)) {
            bad_cut = cut;
            bad_r = (int)r;
        }
    }
    CHECK(bad_cut == 0, "batch split at %zu differs (r=%d)", bad_cut, bad_r);

    size_t *cuts = malloc(len * sizeof *cuts);
    for (size_t i = 0; i + 1 < len; i++)
        cuts[i] = i + 1;
    CHECK_TRUE(run_batch(&s, STATS_R_ALL, rb.data, len, cuts, len - 1, &taken) == STATS_PARSE_OK);
    CHECK_INT(taken, len);
    CHECK_TRUE(sample_equal(&s, &ref));
    free(cuts);

    /* A copy is equal, and independent of the original. */
    struct stats_sample cp;
    stats_sample_init(&cp);
    CHECK_TRUE(stats_sample_copy(&cp, &ref) == 0);
    CHECK_TRUE(sample_equal(&cp, &ref));
    stats_sample_clear(&ref, STATS_R_ALL);
    CHECK_TRUE(stats_sample_get(&cp, 12, "mem_requested", &v) && v == 1062);
    CHECK_TRUE(!stats_sample_get(&ref, 12, "mem_requested", &v));
    stats_sample_fini(&cp);

    /* Extra bytes after the last expected reply are left to the caller. */
    char *more = malloc(len + 6);
    memcpy(more, cap_batch, len);
    memcpy(more + len, "END\r\n", 5);
    CHECK_TRUE(run_batch(&s, STATS_R_ALL, more, len + 5, NULL, 0, &taken) == STATS_PARSE_OK);
    CHECK_INT(taken, len);
    free(more);

    stats_sample_fini(&s);
    stats_sample_fini(&ref);
    ro_close(&rb);
}

/* Names this code has never heard of are kept, numeric or not, wherever
 * they appear; class ids beyond the table stay global under their full
 * name; nothing is lost but the class `stats items` names and `stats
 * slabs` does not (7 here), which is left out and counted (issue 18). */
static void test_unknown_fields(void)
{
    static const char in[] = "STAT brand_new_counter 42\r\n"
                             "STAT brand_new_text hello world\r\n"
                             "END\r\n"
                             "STAT items:1:mem_requested 71\r\n"
                             "STAT items:1:future_item_field abc\r\n"
                             "STAT items:7:number 1\r\n"
                             "STAT items:future_items_global 3\r\n"
                             "STAT 1:not_items_prefixed 4\r\n"
                             "END\r\n"
                             "STAT 1:chunk_size 96\r\n"
                             "STAT 1:future_slab_field 9\r\n"
                             "STAT 255:chunk_size 524288\r\n"
                             "STAT 300:chunk_size 1\r\n"
                             "STAT future_global 5\r\n"
                             "END\r\n";
    struct stats_sample s;
    size_t taken;
    int64_t v;

    stats_sample_init(&s);
    CHECK_TRUE(run_batch(&s, STATS_R_REQUIRED, in, sizeof in - 1, NULL, 0, &taken) ==
               STATS_PARSE_OK);
    CHECK_TRUE(stats_sample_global(&s, "brand_new_counter", &v) && v == 42);
    CHECK_STR(stats_sample_global_text(&s, "brand_new_text"), "hello world");
    CHECK_TRUE(!stats_sample_global(&s, "brand_new_text", &v));
    CHECK_TRUE(stats_sample_get(&s, 1, "future_slab_field", &v) && v == 9);
    CHECK_STR(stats_sample_get_text(&s, 1, "future_item_field"), "abc");
    CHECK_TRUE(stats_sample_get(&s, 1, "mem_requested", &v) && v == 71);
    CHECK_TRUE(stats_sample_get(&s, 255, "chunk_size", &v) && v == 524288);
    CHECK_TRUE(!stats_sample_get(&s, 7, "number", &v)); /* items only: left out */
    CHECK_TRUE(stats_sample_class(&s, 7) == NULL);
    CHECK_INT(s.classes_partial, 1);
    CHECK_INT(s.classes[1].sources, STATS_R_SLABS | STATS_R_ITEMS);
    CHECK_INT(s.classes[255].sources, STATS_R_SLABS);
    CHECK_TRUE(stats_sample_global(&s, "300:chunk_size", &v) && v == 1);
    CHECK_TRUE(stats_sample_global(&s, "future_global", &v) && v == 5);
    CHECK_TRUE(stats_sample_global(&s, "items:future_items_global", &v) && v == 3);
    /* an unprefixed name inside `stats items` is not a class field */
    CHECK_TRUE(stats_sample_global(&s, "1:not_items_prefixed", &v) && v == 4);
    CHECK_TRUE(!stats_sample_get(&s, 1, "not_items_prefixed", &v));
    CHECK_INT(s.n_classes, 2);
    CHECK_INT(s.max_class_id, 255);
    CHECK_INT(sample_fields(&s), 11);
    CHECK_INT(s.fields_dropped, 0);
    CHECK_TRUE(!s.has_settings && !s.has_version);
    stats_sample_fini(&s);
}

/* A class's allocated chunk bytes and their waste: mem_requested counted
 * when `stats items` has it, 0 when not; nothing without used_chunks. */
static void test_class_waste(void)
{
    static const char in[] = "STAT uptime 1\r\n"
                             "END\r\n"
                             "STAT items:1:number 2\r\n"
                             "STAT items:1:mem_requested 150\r\n"
                             "END\r\n"
                             "STAT 1:chunk_size 96\r\n"
                             "STAT 1:used_chunks 2\r\n"
                             "STAT 2:chunk_size 120\r\n"
                             "STAT 2:used_chunks 3\r\n"
                             "STAT 3:chunk_size 152\r\n"
                             "END\r\n";
    struct stats_sample s;
    size_t taken;
    int64_t allocated = -1, waste = -1;

    stats_sample_init(&s);
    CHECK_TRUE(run_batch(&s, STATS_R_REQUIRED, in, sizeof in - 1, NULL, 0, &taken) ==
               STATS_PARSE_OK);
    CHECK_TRUE(stats_sample_class_waste(&s, 1, &allocated, &waste));
    CHECK_INT(allocated, 192);
    CHECK_INT(waste, 42);
    CHECK_TRUE(stats_sample_class_waste(&s, 2, &allocated, &waste));
    CHECK_INT(allocated, 360);
    CHECK_INT(waste, 360);
    CHECK_TRUE(!stats_sample_class_waste(&s, 3, &allocated, &waste)); /* no used_chunks */
    CHECK_TRUE(!stats_sample_class_waste(&s, 4, &allocated, &waste)); /* no class */
    stats_sample_fini(&s);
}

/* An error line instead of a block keeps the pipeline in step. */
static void test_error_replies(void)
{
    struct stats_parse_batch b;
    struct stats_sample s;
    struct text t = { 0 };
    size_t used;
    int64_t v;

    stats_sample_init(&s);
    /* required reply refused: REFUSED, every byte consumed, reason kept */
    text_adds(&t, cap_error);
    text_adds(&t, cap_items);
    text_adds(&t, cap_slabs);
    stats_parse_batch_begin(&b, &s, STATS_R_REQUIRED);
    CHECK_TRUE(stats_parse_batch_feed(&b, t.s, t.len, &used) == STATS_PARSE_REFUSED);
    CHECK_INT(used, t.len);
    CHECK_INT(b.refused, STATS_R_GENERAL);
    CHECK_INT(b.error, STATS_PARSE_E_ERROR_REPLY);
    CHECK_STR(b.refusal, "ERROR");
    CHECK_TRUE(stats_sample_get(&s, 12, "mem_requested", &v) && v == 1062);

    /* settings refused (the real CLIENT_ERROR line): still OK, no settings */
    t.len = 0;
    text_adds(&t, "STAT pid 1\r\nEND\r\n");
    text_adds(&t, cap_items);
    text_adds(&t, cap_slabs);
    text_adds(&t, cap_client_error);
    text_adds(&t, "VERSION 1.6.18\r\n");
    stats_parse_batch_begin(&b, &s, STATS_R_ALL);
    CHECK_TRUE(stats_parse_batch_feed(&b, t.s, t.len, &used) == STATS_PARSE_OK);
    CHECK_INT(used, t.len);
    CHECK_INT(b.refused, STATS_R_SETTINGS);
    CHECK_STR(b.refusal, "CLIENT_ERROR usage: stats detail on|off|dump");
    CHECK_TRUE(!s.has_settings);
    CHECK_TRUE(stats_sample_setting_text(&s, "growth_factor") == NULL);
    CHECK_TRUE(s.has_version);

    /* SERVER_ERROR for items (asked second, before slabs) */
    t.len = 0;
    text_adds(&t, "END\r\nSERVER_ERROR out of memory\r\nEND\r\n");
    stats_parse_batch_begin(&b, &s, STATS_R_REQUIRED);
    CHECK_TRUE(stats_parse_batch_feed(&b, t.s, t.len, &used) == STATS_PARSE_REFUSED);
    CHECK_INT(b.refused, STATS_R_ITEMS);
    CHECK_STR(b.refusal, "SERVER_ERROR out of memory");

    /* out of step: a VERSION where a stats block was due, a STAT where
     * VERSION was due */
    stats_parse_batch_begin(&b, &s, STATS_R_REQUIRED);
    CHECK_TRUE(stats_parse_batch_feed(&b, "VERSION 1.6.18\r\n", 16, &used) == STATS_PARSE_ERROR);
    CHECK_INT(b.error, STATS_PARSE_E_UNEXPECTED);
    CHECK_TRUE(stats_parse_batch_feed(&b, "END\r\n", 5, &used) == STATS_PARSE_ERROR);
    stats_parse_batch_begin(&b, &s, STATS_R_VERSION);
    CHECK_TRUE(stats_parse_batch_feed(&b, "STAT a 1\r\n", 10, &used) == STATS_PARSE_ERROR);
    CHECK_INT(b.error, STATS_PARSE_E_UNEXPECTED);
    stats_parse_batch_begin(&b, &s, STATS_R_VERSION);
    CHECK_TRUE(stats_parse_batch_feed(&b, "END\r\n", 5, &used) == STATS_PARSE_ERROR);
    /* a broken line inside a batch */
    stats_parse_batch_begin(&b, &s, STATS_R_REQUIRED);
    CHECK_TRUE(stats_parse_batch_feed(&b, "STAT a 1\r\nGARBAGE\r\n", 19, &used) ==
               STATS_PARSE_ERROR);
    CHECK_INT(b.error, STATS_PARSE_E_UNKNOWN_LINE);
    stats_parse_batch_begin(&b, &s, 0);
    CHECK_TRUE(stats_parse_batch_feed(&b, "END\r\n", 5, &used) == STATS_PARSE_ERROR);
    CHECK_INT(b.error, STATS_PARSE_E_BAD_BATCH);

    free(t.s);
    stats_sample_fini(&s);
}

/* The bounds hold: a class with more fields than STATS_CLASS_FIELDS_MAX
 * keeps the first ones and counts the rest. */
static void test_bounds(void)
{
    struct stats_sample s;
    char name[64];

    stats_sample_init(&s);
    stats_sample_clear(&s, STATS_R_ALL);
    for (int i = 0; i < STATS_CLASS_FIELDS_MAX + 10; i++) {
        int n = snprintf(name, sizeof name, "items:3:f%d", i);
        (void)stats_sample_add(&s, STATS_R_ITEMS, name, (size_t)n, "1", 1);
    }
    CHECK_INT(s.classes[3].kv.n, STATS_CLASS_FIELDS_MAX);
    CHECK_INT(s.fields_dropped, 10);
    CHECK_TRUE(stats_sample_get_text(&s, 3, "f0") != NULL);
    CHECK_TRUE(stats_sample_get_text(&s, 3, "f127") != NULL);
    CHECK_TRUE(stats_sample_get_text(&s, 3, "f128") == NULL);
    stats_sample_fini(&s);
}

int main(void)
{
    test_line_events();
    test_line_errors();
    test_line_bound();
    test_int64();
    test_class_name();
    test_batch_command();
    test_roundtrip_every_split("stats slabs", cap_slabs, strlen(cap_slabs));
    test_roundtrip_every_split("stats items", cap_items, strlen(cap_items));
    test_roundtrip_every_split("batch", cap_batch, strlen(cap_batch));
    test_roundtrip_every_split("error", cap_error, strlen(cap_error));
    test_roundtrip_every_split("client error", cap_client_error, strlen(cap_client_error));
    test_merge_captured();
    test_empty_server();
    test_batch_captured();
    test_unknown_fields();
    test_class_waste();
    test_error_replies();
    test_bounds();
    return check_done("test_stats_parse");
}
