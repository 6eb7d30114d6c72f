/* test_mclog: the parser of memcached's watch lines and metadump listing.
 *
 * The table's lines are what memcached 1.6.18 printed on this machine
 * (`watch mutations evictions`, `lru_crawler metadump all|hash|1`, the
 * refusals of -W / -X / -o no_lru_crawler, skipped=N under -o
 * watcher_logbuf_size=1), except where a line says "(format)": those are
 * built from the format strings of other versions (1.5.x/1.6.0-1.6.10
 * without size=, the `watch deletions` lines and metadump flags= of 1.6.20+),
 * which 1.6.18 cannot print. Every line is fed whole, cut at every split
 * point and byte by byte, with LF and CRLF ends; all of them in one buffer
 * at every split point; an over-long line then a good one (resync). */
#include "check.h"
#include "protocol/mclog.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define S 1000000000LL /* ns per s */

struct tcase {
    const char *in; /* one line with its end */
    enum mclog_result res;
    struct mclog_event want; /* key_len 0 with key set: strlen(key) */
};

#define STORE(...) \
    { \
        .kind = MCLOG_EV_STORE, .has_cmd = true, __VA_ARGS__ \
    }

static const struct tcase cases[] = {
    /* watch mutations, 1.6.18 */
    { "ts=1796212812.191331 gid=2 type=item_store key=k1 status=stored cmd=set ttl=0 clsid=1 "
      "cfd=24 size=5\n",
      MCLOG_OK,
      STORE(.ts_ns = 1796212812 * S + 191331000, .gid = 2, .key = "k1",
            .status = MCLOG_STATUS_STORED, .cmd = MC_CMD_SET, .ttl = 0, .clsid = 1, .cfd = 24,
            .size = 5, .has_size = true) },
    { "ts=1796212812.391897 gid=3 type=item_store key=k2 status=stored cmd=set ttl=100 clsid=1 "
      "cfd=24 size=3\n",
      MCLOG_OK,
      STORE(.ts_ns = 1796212812 * S + 391897000, .gid = 3, .key = "k2",
            .status = MCLOG_STATUS_STORED, .cmd = MC_CMD_SET, .ttl = 100, .clsid = 1, .cfd = 24,
            .size = 3, .has_size = true) },
    { "ts=1796212812.592359 gid=4 type=item_store key=k1 status=not_stored cmd=add ttl=0 clsid=1 "
      "cfd=24 size=1\n",
      MCLOG_OK,
      STORE(.ts_ns = 1796212812 * S + 592359000, .gid = 4, .key = "k1",
            .status = MCLOG_STATUS_NOT_STORED, .cmd = MC_CMD_ADD, .clsid = 1, .cfd = 24, .size = 1,
            .has_size = true) },
    { "ts=1796212812.793236 gid=5 type=item_store key=nokey status=not_stored cmd=replace ttl=0 "
      "clsid=1 cfd=24 size=1\n",
      MCLOG_OK,
      STORE(.ts_ns = 1796212812 * S + 793236000, .gid = 5, .key = "nokey",
            .status = MCLOG_STATUS_NOT_STORED, .cmd = MC_CMD_REPLACE, .clsid = 1, .cfd = 24,
            .size = 1, .has_size = true) },
    { "ts=1796212813.194474 gid=7 type=item_store key=k1 status=stored cmd=append ttl=0 clsid=1 "
      "cfd=24 size=4\n",
      MCLOG_OK,
      STORE(.ts_ns = 1796212813 * S + 194474000, .gid = 7, .key = "k1",
            .status = MCLOG_STATUS_STORED, .cmd = MC_CMD_APPEND, .clsid = 1, .cfd = 24, .size = 4,
            .has_size = true) },
    { "ts=1796212813.394880 gid=8 type=item_store key=k1 status=stored cmd=prepend ttl=0 clsid=1 "
      "cfd=24 size=6\n",
      MCLOG_OK,
      STORE(.ts_ns = 1796212813 * S + 394880000, .gid = 8, .key = "k1",
            .status = MCLOG_STATUS_STORED, .cmd = MC_CMD_PREPEND, .clsid = 1, .cfd = 24, .size = 6,
            .has_size = true) },
    { "ts=1796212813.796305 gid=10 type=item_store key=k1 status=exists cmd=cas ttl=0 clsid=1 "
      "cfd=24 size=1\n",
      MCLOG_OK,
      STORE(.ts_ns = 1796212813 * S + 796305000, .gid = 10, .key = "k1",
            .status = MCLOG_STATUS_EXISTS, .cmd = MC_CMD_CAS, .clsid = 1, .cfd = 24, .size = 1,
            .has_size = true) },
    { "ts=1796212814.399317 gid=12 type=item_store key=nokey status=not_found cmd=cas ttl=0 "
      "clsid=1 cfd=24 size=1\n",
      MCLOG_OK,
      STORE(.ts_ns = 1796212814 * S + 399317000, .gid = 12, .key = "nokey",
            .status = MCLOG_STATUS_NOT_FOUND, .cmd = MC_CMD_CAS, .clsid = 1, .cfd = 24, .size = 1,
            .has_size = true) },
    /* a 2,000,000-byte set over -I 1m: clsid and cfd are whatever memcached
       had at hand (cfd uninitialised), size 0 */
    { "ts=1796212814.662559 gid=13 type=item_store key=big status=too_large cmd=set ttl=0 clsid=24 "
      "cfd=513911456 size=0\n",
      MCLOG_OK,
      STORE(.ts_ns = 1796212814 * S + 662559000, .gid = 13, .key = "big",
            .status = MCLOG_STATUS_TOO_LARGE, .cmd = MC_CMD_SET, .clsid = 24, .cfd = 513911456,
            .size = 0, .has_size = true) },
    /* -M -m 2, full: SERVER_ERROR out of memory storing object */
    { "ts=1796213048.228678 gid=1580 type=item_store key=nm01919 status=no_memory cmd=set ttl=0 "
      "clsid=24 cfd=0 size=0\n",
      MCLOG_OK,
      STORE(.ts_ns = 1796213048 * S + 228678000, .gid = 1580, .key = "nm01919",
            .status = MCLOG_STATUS_NO_MEMORY, .cmd = MC_CMD_SET, .clsid = 24, .cfd = 0, .size = 0,
            .has_size = true) },
    /* the key sent was the 12 bytes "k%20sp%25%0A": '%' is encoded */
    { "ts=1796212814.869985 gid=14 type=item_store key=k%2520sp%2525%250A status=stored cmd=set "
      "ttl=0 clsid=1 cfd=24 size=1\n",
      MCLOG_OK,
      STORE(.ts_ns = 1796212814 * S + 869985000, .gid = 14, .key = "k%20sp%25%0A",
            .status = MCLOG_STATUS_STORED, .cmd = MC_CMD_SET, .clsid = 1, .cfd = 24, .size = 1,
            .has_size = true) },
    /* usec printed with %d: ".79332" is 79,332 us, not 0.79332 s */
    { "ts=1796212815.79332 gid=15 type=item_store key=k%C3%A9%2F%3A%3F%3D%26 status=stored "
      "cmd=set ttl=0 clsid=1 cfd=24 size=1\n",
      MCLOG_OK,
      STORE(.ts_ns = 1796212815 * S + 79332000, .gid = 15, .key = "k\xc3\xa9/:?=&",
            .status = MCLOG_STATUS_STORED, .cmd = MC_CMD_SET, .clsid = 1, .cfd = 24, .size = 1,
            .has_size = true) },
    /* ms ... MA (append mode) is logged as cmd=append */
    { "ts=1796212815.480809 gid=17 type=item_store key=mkey status=stored cmd=append ttl=60 "
      "clsid=1 cfd=24 size=6\n",
      MCLOG_OK,
      STORE(.ts_ns = 1796212815 * S + 480809000, .gid = 17, .key = "mkey",
            .status = MCLOG_STATUS_STORED, .cmd = MC_CMD_APPEND, .ttl = 60, .clsid = 1, .cfd = 24,
            .size = 6, .has_size = true) },
    /* a 600,000-byte value: chunked (over slab_chunk_max), class 39 */
    { "ts=1796212816.510727 gid=18 type=item_store key=chunked status=stored cmd=set ttl=0 "
      "clsid=39 cfd=24 size=600000\n",
      MCLOG_OK,
      STORE(.ts_ns = 1796212816 * S + 510727000, .gid = 18, .key = "chunked",
            .status = MCLOG_STATUS_STORED, .cmd = MC_CMD_SET, .clsid = 39, .cfd = 24,
            .size = 600000, .has_size = true) },
    /* set neg 0 -1 1: an exptime already past, printed %u (-66) */
    { "ts=1796212816.915326 gid=20 type=item_store key=neg status=stored cmd=set ttl=4294967230 "
      "clsid=1 cfd=24 size=1\n",
      MCLOG_OK,
      STORE(.ts_ns = 1796212816 * S + 915326000, .gid = 20, .key = "neg",
            .status = MCLOG_STATUS_STORED, .cmd = MC_CMD_SET, .ttl = -66, .clsid = 1, .cfd = 24,
            .size = 1, .has_size = true) },
    /* an absolute exptime: ttl= is what is left */
    { "ts=1796212817.116211 gid=21 type=item_store key=abs status=stored cmd=set ttl=1001 clsid=1 "
      "cfd=24 size=1\n",
      MCLOG_OK,
      STORE(.ts_ns = 1796212817 * S + 116211000, .gid = 21, .key = "abs",
            .status = MCLOG_STATUS_STORED, .cmd = MC_CMD_SET, .ttl = 1001, .clsid = 1, .cfd = 24,
            .size = 1, .has_size = true) },
    /* (format) a command memcached has no name for: "na" */
    { "ts=1796212817.1 gid=22 type=item_store key=x status=stored cmd=na ttl=0 clsid=1 cfd=24 "
      "size=1\n",
      MCLOG_OK,
      { .kind = MCLOG_EV_STORE,
        .ts_ns = 1796212817 * S + 1000,
        .gid = 22,
        .key = "x",
        .status = MCLOG_STATUS_STORED,
        .clsid = 1,
        .cfd = 24,
        .size = 1,
        .has_size = true } },
    /* (format) 1.6.0-1.6.10: no size= */
    { "ts=1700000000.5 gid=7 type=item_store key=old status=stored cmd=set ttl=0 clsid=2 cfd=30\n",
      MCLOG_OK,
      STORE(.ts_ns = 1700000000 * S + 5000, .gid = 7, .key = "old", .status = MCLOG_STATUS_STORED,
            .cmd = MC_CMD_SET, .clsid = 2, .cfd = 30) },
    /* (format) 1.5.x: no cfd= and no size= */
    { "ts=1600000000.999999 gid=1 type=item_store key=old status=exists cmd=cas ttl=5 clsid=3\n",
      MCLOG_OK,
      STORE(.ts_ns = 1600000000 * S + 999999000, .gid = 1, .key = "old",
            .status = MCLOG_STATUS_EXISTS, .cmd = MC_CMD_CAS, .ttl = 5, .clsid = 3, .cfd = -1) },

    /* watch evictions, 1.6.18 (-m 8, 4000 x 1000 bytes) */
    { "ts=1796212817.891432 gid=970 type=eviction key=ev00000 fetch=no ttl=-1 la=1 clsid=12 "
      "size=1000\n",
      MCLOG_OK,
      { .kind = MCLOG_EV_EVICTION,
        .ts_ns = 1796212817 * S + 891432000,
        .gid = 970,
        .key = "ev00000",
        .ttl = -1,
        .la = 1,
        .clsid = 12,
        .size = 1000,
        .has_size = true } },
    /* (format) fetched, a TTL left; and a 1.5.x line without size= */
    { "ts=1796212817.2 gid=971 type=eviction key=hot fetch=yes ttl=3599 la=12 clsid=5 size=90\n",
      MCLOG_OK,
      { .kind = MCLOG_EV_EVICTION,
        .ts_ns = 1796212817 * S + 2000,
        .gid = 971,
        .key = "hot",
        .fetched = true,
        .ttl = 3599,
        .la = 12,
        .clsid = 5,
        .size = 90,
        .has_size = true } },
    { "ts=1600000000.0 gid=9 type=eviction key=e fetch=no ttl=-1 la=300 clsid=1\n",
      MCLOG_OK,
      { .kind = MCLOG_EV_EVICTION,
        .ts_ns = 1600000000 * S,
        .gid = 9,
        .key = "e",
        .ttl = -1,
        .la = 300,
        .clsid = 1 } },
    /* (format) watch deletions, 1.6.20+ (1.6.18 answers "ERROR") */
    { "ts=1796212900.5 gid=40 type=deleted key=k1 cmd=delete clsid=1 size=5\n",
      MCLOG_OK,
      { .kind = MCLOG_EV_DELETION,
        .ts_ns = 1796212900 * S + 5000,
        .gid = 40,
        .key = "k1",
        .cmd = MC_CMD_DELETE,
        .has_cmd = true,
        .clsid = 1,
        .size = 5,
        .has_size = true } },
    { "ts=1796212900.600001 gid=41 type=deleted key=a%20b cmd=md clsid=2 size=300\n",
      MCLOG_OK,
      { .kind = MCLOG_EV_DELETION,
        .ts_ns = 1796212900 * S + 600001000,
        .gid = 41,
        .key = "a b",
        .cmd = MC_CMD_MD,
        .has_cmd = true,
        .clsid = 2,
        .size = 300,
        .has_size = true } },

    /* -o watcher_logbuf_size=1, a watcher that does not read */
    { "skipped=5284\n", MCLOG_OK, { .kind = MCLOG_EV_SKIPPED, .skipped = 5284 } },
    { "OK\r\n", MCLOG_OK, { .kind = MCLOG_EV_OK } },

    /* lru_crawler metadump all|hash, 1.6.18: '\n' ends, "END\r\n" */
    { "key=ev01345 exp=-1 la=1796212816 cas=1360 fetch=no cls=12 size=1066\n",
      MCLOG_OK,
      { .kind = MCLOG_EV_ITEM,
        .key = "ev01345",
        .exp = -1,
        .la = 1796212816,
        .cas = 1360,
        .clsid = 12,
        .size = 1066,
        .has_size = true } },
    { "key=ev03999 exp=-1 la=1796212817 cas=4014 fetch=yes cls=12 size=1066\n",
      MCLOG_OK,
      { .kind = MCLOG_EV_ITEM,
        .key = "ev03999",
        .exp = -1,
        .la = 1796212817,
        .cas = 4014,
        .fetched = true,
        .clsid = 12,
        .size = 1066,
        .has_size = true } },
    { "key=chunked exp=-1 la=1796212815 cas=11 fetch=no cls=39 size=600066\n",
      MCLOG_OK,
      { .kind = MCLOG_EV_ITEM,
        .key = "chunked",
        .exp = -1,
        .la = 1796212815,
        .cas = 11,
        .clsid = 39,
        .size = 600066,
        .has_size = true } },
    { "key=k%C3%A9%2F%3A%3F%3D%26 exp=-1 la=1796212814 cas=8 fetch=no cls=1 size=68\n",
      MCLOG_OK,
      { .kind = MCLOG_EV_ITEM,
        .key = "k\xc3\xa9/:?=&",
        .exp = -1,
        .la = 1796212814,
        .cas = 8,
        .clsid = 1,
        .size = 68,
        .has_size = true } },
    { "key=mkey exp=1796212874 la=1796212814 cas=10 fetch=no cls=1 size=73\n",
      MCLOG_OK,
      { .kind = MCLOG_EV_ITEM,
        .key = "mkey",
        .exp = 1796212874,
        .la = 1796212814,
        .cas = 10,
        .clsid = 1,
        .size = 73,
        .has_size = true } },
    /* (format) 1.6.20+: flags=, a trailing space, extstore fields */
    { "key=f exp=-1 la=1796212814 cas=3 fetch=no cls=1 size=60 flags=4294967295 \n",
      MCLOG_OK,
      { .kind = MCLOG_EV_ITEM,
        .key = "f",
        .exp = -1,
        .la = 1796212814,
        .cas = 3,
        .clsid = 1,
        .size = 60,
        .has_size = true,
        .flags = 4294967295u,
        .has_flags = true } },
    { "key=g exp=5 la=6 cas=7 fetch=yes cls=2 size=70 flags=0 ext_page=3 ext_offset=128 \n",
      MCLOG_OK,
      { .kind = MCLOG_EV_ITEM,
        .key = "g",
        .exp = 5,
        .la = 6,
        .cas = 7,
        .fetched = true,
        .clsid = 2,
        .size = 70,
        .has_size = true,
        .has_flags = true } },
    /* a binary key (meta b flag): NUL and space bytes */
    { "key=%00%20%FF exp=-1 la=1 cas=1 fetch=no cls=1 size=50\n",
      MCLOG_OK,
      { .kind = MCLOG_EV_ITEM,
        .key = "\0 \xff",
        .key_len = 3,
        .exp = -1,
        .la = 1,
        .cas = 1,
        .clsid = 1,
        .size = 50,
        .has_size = true } },
    { "END\r\n", MCLOG_OK, { .kind = MCLOG_EV_END } },

    /* refusals, 1.6.18 */
    { "CLIENT_ERROR watch commands not allowed\r\n",
      MCLOG_OK,
      { .kind = MCLOG_EV_REFUSED, .line = "CLIENT_ERROR watch commands not allowed" } },
    { "ERROR metadump not allowed\r\n",
      MCLOG_OK,
      { .kind = MCLOG_EV_REFUSED, .line = "ERROR metadump not allowed" } },
    { "CLIENT_ERROR lru crawler disabled\r\n",
      MCLOG_OK,
      { .kind = MCLOG_EV_REFUSED, .line = "CLIENT_ERROR lru crawler disabled" } },
    { "BUSY currently processing crawler request\r\n",
      MCLOG_OK,
      { .kind = MCLOG_EV_REFUSED, .line = "BUSY currently processing crawler request" } },
    { "BADCLASS invalid class id\r\n",
      MCLOG_OK,
      { .kind = MCLOG_EV_REFUSED, .line = "BADCLASS invalid class id" } },
    { "ERROR cannot pipeline other commands before metadump\r\n",
      MCLOG_OK,
      { .kind = MCLOG_EV_REFUSED,
        .line = "ERROR cannot pipeline other commands before metadump" } },
    /* `watch deletions` (or any word it does not know) on 1.6.18 */
    { "ERROR\r\n", MCLOG_OK, { .kind = MCLOG_EV_REFUSED, .line = "ERROR" } },
    { "WATCHER_TOO_MANY log watcher limit reached\r\n",
      MCLOG_OK,
      { .kind = MCLOG_EV_REFUSED, .line = "WATCHER_TOO_MANY log watcher limit reached" } },

    /* other lines: counted, never errors */
    { "ts=1796212812.1 gid=3 type=item_get key=k1 status=found clsid=1 cfd=24 size=5\n",
      MCLOG_OK,
      { .kind = MCLOG_EV_OTHER,
        .line = "ts=1796212812.1 gid=3 type=item_get key=k1 status=found clsid=1 cfd=24 size=5" } },
    { "ts=1796212812.2 gid=4 type=conn_new rip=127.0.0.1 rport=5555 transport=tcp cfd=24\n",
      MCLOG_OK,
      { .kind = MCLOG_EV_OTHER,
        .line = "ts=1796212812.2 gid=4 type=conn_new rip=127.0.0.1 rport=5555 transport=tcp "
                "cfd=24" } },
    { "ts=1796212812.3 gid=5 some text without a type\n",
      MCLOG_OK,
      { .kind = MCLOG_EV_OTHER, .line = "ts=1796212812.3 gid=5 some text without a type" } },
    { "\n", MCLOG_OK, { .kind = MCLOG_EV_OTHER } },
    { "VERSION 1.6.18\r\n", MCLOG_OK, { .kind = MCLOG_EV_OTHER, .line = "VERSION 1.6.18" } },

    /* every error reason */
    { "ts=1.1 gid=1 type=item_store key=k cmd=set ttl=0 clsid=1\n",
      MCLOG_ERROR,
      { .kind = MCLOG_EV_ERROR,
        .err = MCLOG_ERR_MISSING_FIELD,
        .line = "ts=1.1 gid=1 type=item_store key=k cmd=set ttl=0 clsid=1" } },
    { "ts=1.1 type=eviction key=k fetch=no ttl=-1 la=1 clsid=1\n",
      MCLOG_ERROR,
      { .kind = MCLOG_EV_ERROR,
        .err = MCLOG_ERR_MISSING_FIELD,
        .line = "ts=1.1 type=eviction key=k fetch=no ttl=-1 la=1 clsid=1" } },
    { "key=k exp=-1 la=1 cas=1 fetch=no cls=1\n",
      MCLOG_ERROR,
      { .kind = MCLOG_EV_ERROR,
        .err = MCLOG_ERR_MISSING_FIELD,
        .line = "key=k exp=-1 la=1 cas=1 fetch=no cls=1" } },
    { "ts=1.1 gid=1 type=deleted key=k clsid=1 size=1\n",
      MCLOG_ERROR,
      { .kind = MCLOG_EV_ERROR,
        .err = MCLOG_ERR_MISSING_FIELD,
        .line = "ts=1.1 gid=1 type=deleted key=k clsid=1 size=1" } },
    { "ts=1.1234567 gid=1 type=item_store key=k status=stored cmd=set ttl=0 clsid=1\n",
      MCLOG_ERROR,
      { .kind = MCLOG_EV_ERROR,
        .err = MCLOG_ERR_BAD_NUMBER,
        .line = "ts=1.1234567 gid=1 type=item_store key=k status=stored cmd=set ttl=0 clsid=1" } },
    { "ts=1. gid=1 type=item_store key=k status=stored cmd=set ttl=0 clsid=1\n",
      MCLOG_ERROR,
      { .kind = MCLOG_EV_ERROR,
        .err = MCLOG_ERR_BAD_NUMBER,
        .line = "ts=1. gid=1 type=item_store key=k status=stored cmd=set ttl=0 clsid=1" } },
    { "ts=1.1 gid=18446744073709551616 type=eviction key=k fetch=no ttl=-1 la=1 clsid=1\n",
      MCLOG_ERROR,
      { .kind = MCLOG_EV_ERROR,
        .err = MCLOG_ERR_BAD_NUMBER,
        .line = "ts=1.1 gid=18446744073709551616 type=eviction key=k fetch=no ttl=-1 la=1 "
                "clsid=1" } },
    { "ts=1.1 gid=1 type=item_store key=k status=stored cmd=set ttl=x clsid=1\n",
      MCLOG_ERROR,
      { .kind = MCLOG_EV_ERROR,
        .err = MCLOG_ERR_BAD_NUMBER,
        .line = "ts=1.1 gid=1 type=item_store key=k status=stored cmd=set ttl=x clsid=1" } },
    { "ts=1.1 gid=1 type=item_store key=k status=stored cmd=set ttl=0 clsid=-1\n",
      MCLOG_ERROR,
      { .kind = MCLOG_EV_ERROR,
        .err = MCLOG_ERR_BAD_NUMBER,
        .line = "ts=1.1 gid=1 type=item_store key=k status=stored cmd=set ttl=0 clsid=-1" } },
    { "ts=1.1 gid=1 type=item_store key=k status=stored cmd=set ttl=0 clsid=1 size=-2\n",
      MCLOG_ERROR,
      { .kind = MCLOG_EV_ERROR,
        .err = MCLOG_ERR_BAD_NUMBER,
        .line = "ts=1.1 gid=1 type=item_store key=k status=stored cmd=set ttl=0 clsid=1 "
                "size=-2" } },
    { "key=k exp=-1 la=1 cas=1 fetch=no cls=1 size=1 flags=\n",
      MCLOG_ERROR,
      { .kind = MCLOG_EV_ERROR,
        .err = MCLOG_ERR_BAD_NUMBER,
        .line = "key=k exp=-1 la=1 cas=1 fetch=no cls=1 size=1 flags=" } },
    { "skipped=x\n",
      MCLOG_ERROR,
      { .kind = MCLOG_EV_ERROR, .err = MCLOG_ERR_BAD_NUMBER, .line = "skipped=x" } },
    { "key= exp=-1 la=1 cas=1 fetch=no cls=1 size=1\n",
      MCLOG_ERROR,
      { .kind = MCLOG_EV_ERROR,
        .err = MCLOG_ERR_BAD_KEY,
        .line = "key= exp=-1 la=1 cas=1 fetch=no cls=1 size=1" } },
    { "key=a%G1 exp=-1 la=1 cas=1 fetch=no cls=1 size=1\n",
      MCLOG_ERROR,
      { .kind = MCLOG_EV_ERROR,
        .err = MCLOG_ERR_BAD_KEY,
        .line = "key=a%G1 exp=-1 la=1 cas=1 fetch=no cls=1 size=1" } },
    { "key=a%4 exp=-1 la=1 cas=1 fetch=no cls=1 size=1\n",
      MCLOG_ERROR,
      { .kind = MCLOG_EV_ERROR,
        .err = MCLOG_ERR_BAD_KEY,
        .line = "key=a%4 exp=-1 la=1 cas=1 fetch=no cls=1 size=1" } },
    { "ts=1.1 gid=1 type=item_store key=k status=maybe cmd=set ttl=0 clsid=1\n",
      MCLOG_ERROR,
      { .kind = MCLOG_EV_ERROR,
        .err = MCLOG_ERR_BAD_WORD,
        .line = "ts=1.1 gid=1 type=item_store key=k status=maybe cmd=set ttl=0 clsid=1" } },
    { "ts=1.1 gid=1 type=item_store key=k status=stored cmd=incr ttl=0 clsid=1\n",
      MCLOG_ERROR,
      { .kind = MCLOG_EV_ERROR,
        .err = MCLOG_ERR_BAD_WORD,
        .line = "ts=1.1 gid=1 type=item_store key=k status=stored cmd=incr ttl=0 clsid=1" } },
    { "ts=1.1 gid=1 type=eviction key=k fetch=maybe ttl=-1 la=1 clsid=1\n",
      MCLOG_ERROR,
      { .kind = MCLOG_EV_ERROR,
        .err = MCLOG_ERR_BAD_WORD,
        .line = "ts=1.1 gid=1 type=eviction key=k fetch=maybe ttl=-1 la=1 clsid=1" } },
    { "ts=1.1 gid=1 type=deleted key=k cmd=set clsid=1 size=1\n",
      MCLOG_ERROR,
      { .kind = MCLOG_EV_ERROR,
        .err = MCLOG_ERR_BAD_WORD,
        .line = "ts=1.1 gid=1 type=deleted key=k cmd=set clsid=1 size=1" } },
};
#define NCASES (sizeof cases / sizeof cases[0])

static size_t want_key_len(const struct mclog_event *w)
{
    return w->key_len ? w->key_len : strlen(w->key);
}

/* every field; where says which case and how it was fed */
static void check_event(const struct mclog_event *g, const struct mclog_event *w, const char *where)
{
    CHECK(g->kind == w->kind, "%s: kind %s, want %s", where, mclog_event_text(g->kind),
          mclog_event_text(w->kind));
    CHECK(g->err == w->err, "%s: err %s, want %s", where, mclog_err_text(g->err),
          mclog_err_text(w->err));
    CHECK(g->ts_ns == w->ts_ns, "%s: ts_ns %lld, want %lld", where, (long long)g->ts_ns,
          (long long)w->ts_ns);
    CHECK(g->gid == w->gid, "%s: gid %llu", where, (unsigned long long)g->gid);
    CHECK(g->key_len == want_key_len(w) && !memcmp(g->key, w->key, want_key_len(w)) &&
              g->key[g->key_len] == '\0',
          "%s: key \"%s\" (%zu)", where, g->key, g->key_len);
    CHECK(g->status == w->status, "%s: status %s", where, mclog_status_word(g->status));
    CHECK(g->cmd == w->cmd && g->has_cmd == w->has_cmd, "%s: cmd %s/%d", where, mc_cmd_name(g->cmd),
          g->has_cmd);
    CHECK(g->ttl == w->ttl, "%s: ttl %lld, want %lld", where, (long long)g->ttl, (long long)w->ttl);
    CHECK(g->la == w->la, "%s: la %lld", where, (long long)g->la);
    CHECK(g->exp == w->exp, "%s: exp %lld", where, (long long)g->exp);
    CHECK(g->clsid == w->clsid, "%s: clsid %u", where, g->clsid);
    CHECK(g->cfd == w->cfd, "%s: cfd %d, want %d", where, g->cfd, w->cfd);
    CHECK(g->size == w->size && g->has_size == w->has_size, "%s: size %lld/%d", where,
          (long long)g->size, g->has_size);
    CHECK(g->fetched == w->fetched, "%s: fetched %d", where, g->fetched);
    CHECK(g->cas == w->cas, "%s: cas %llu", where, (unsigned long long)g->cas);
    CHECK(g->flags == w->flags && g->has_flags == w->has_flags, "%s: flags %llu/%d", where,
          (unsigned long long)g->flags, g->has_flags);
    CHECK(g->skipped == w->skipped, "%s: skipped %llu", where, (unsigned long long)g->skipped);
    CHECK(!strcmp(g->line, w->line), "%s: line \"%s\", want \"%s\"", where, g->line, w->line);
}

#define MAX_EV 256

struct fed {
    struct mclog_event ev[MAX_EV];
    enum mclog_result res[MAX_EV];
    size_t n;
    size_t bytes; /* consumed in all */
    uint64_t lines;
};

/* Feeds in[0..len) in pieces ending at cuts[] (ascending, < len), then the
 * rest; checks the framing contract on every call: used <= what was given,
 * NEED_MORE takes it all, OK/ERROR take at least one byte. */
static void feed(const char *in, size_t len, const size_t *cuts, size_t ncuts, struct fed *out,
                 const char *where)
{
    static struct mclog_parser p;
    size_t start = 0;

    mclog_init(&p);
    out->n = 0;
    out->bytes = 0;
    for (size_t c = 0; c <= ncuts; c++) {
        size_t end = c < ncuts ? cuts[c] : len;
        size_t at = start;
        for (int guard = 0; guard < 100000; guard++) {
            struct mclog_event ev;
            size_t used = (size_t)-1;
            enum mclog_result r = mclog_next(&p, in + at, end - at, &used, &ev);
            if (used > end - at) {
                CHECK(0, "%s: used %zu of %zu", where, used, end - at);
                return;
            }
            at += used;
            out->bytes += used;
            if (r == MCLOG_NEED_MORE) {
                CHECK(at == end, "%s: NEED_MORE left %zu bytes", where, end - at);
                break;
            }
            CHECK(used > 0, "%s: an event without progress", where);
            CHECK(ev.key[ev.key_len] == '\0' && ev.key_len <= MC_KEY_MAX &&
                      memchr(ev.line, '\0', sizeof ev.line),
                  "%s: key/line not terminated", where);
            if (out->n < MAX_EV) {
                out->ev[out->n] = ev;
                out->res[out->n] = r;
            }
            out->n++;
            if (at == end)
                break;
        }
        start = end;
    }
    out->lines = p.lines;
}

static void check_same(const struct fed *a, const struct fed *b, const char *where)
{
    CHECK(a->n == b->n, "%s: %zu events, want %zu", where, a->n, b->n);
    for (size_t i = 0; i < a->n && i < b->n && i < MAX_EV; i++) {
        CHECK(a->res[i] == b->res[i], "%s: event %zu result %d, want %d", where, i, a->res[i],
              b->res[i]);
        check_event(&a->ev[i], &b->ev[i], where);
    }
}

static struct fed whole, split;

/* One input at every split point (one cut), byte by byte, and its CRLF twin
 * (LF ends swapped for CRLF, CRLF ends for LF) likewise, all giving the
 * events of `want` (n of them). */
static void check_all_ways(const char *in, size_t len, const struct fed *want, const char *name)
{
    char where[128];
    static size_t cuts[1 << 16];

    for (size_t k = 1; k < len; k++) {
        snprintf(where, sizeof where, "%s cut at %zu", name, k);
        cuts[0] = k;
        feed(in, len, cuts, 1, &split, where);
        check_same(&split, want, where);
        CHECK(split.bytes == len, "%s: consumed %zu of %zu", where, split.bytes, len);
    }
    for (size_t k = 0; k + 1 < len && k < sizeof cuts / sizeof cuts[0]; k++)
        cuts[k] = k + 1;
    snprintf(where, sizeof where, "%s byte by byte", name);
    feed(in, len, cuts, len - 1, &split, where);
    check_same(&split, want, where);
    /* two cuts, for one line at a time (a stride keeps it in bounds and
       still cuts each field twice) */
    if (len > 512)
        return;
    for (size_t a = 1; a < len; a += 3) {
        for (size_t b = a + 1; b < len; b += 5) {
            snprintf(where, sizeof where, "%s cut at %zu,%zu", name, a, b);
            cuts[0] = a;
            cuts[1] = b;
            feed(in, len, cuts, 2, &split, where);
            check_same(&split, want, where);
        }
    }
}

/* LF <-> CRLF at every line end */
static size_t swap_ends(const char *in, size_t len, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (in[i] == '\n' && !(i > 0 && in[i - 1] == '\r'))
            out[o++] = '\r';
        if (in[i] == '\r' && i + 1 < len && in[i + 1] == '\n')
            continue;
        out[o++] = in[i];
    }
    return o;
}

static void test_table(void)
{
    static char buf[1 << 15], crlf[1 << 15];
    static struct fed want;

    for (size_t i = 0; i < NCASES; i++) {
        const struct tcase *t = &cases[i];
        size_t len = strlen(t->in);
        char name[64];

        snprintf(name, sizeof name, "case %zu (%.20s)", i, t->in);
        feed(t->in, len, NULL, 0, &whole, name);
        CHECK(whole.n == 1, "%s: %zu events", name, whole.n);
        CHECK(whole.bytes == len, "%s: consumed %zu of %zu", name, whole.bytes, len);
        CHECK(whole.lines == 1, "%s: lines %llu", name, (unsigned long long)whole.lines);
        if (whole.n >= 1) {
            CHECK(whole.res[0] == t->res, "%s: result %d, want %d", name, whole.res[0], t->res);
            check_event(&whole.ev[0], &t->want, name);
        }
        check_all_ways(t->in, len, &whole, name);
        size_t n2 = swap_ends(t->in, len, crlf);
        snprintf(name, sizeof name, "case %zu swapped ends", i);
        feed(crlf, n2, NULL, 0, &split, name);
        check_same(&split, &whole, name);
    }

    /* all of them in one buffer, then with the ends swapped */
    size_t len = 0;
    want.n = 0;
    for (size_t i = 0; i < NCASES; i++) {
        size_t n = strlen(cases[i].in);
        memcpy(buf + len, cases[i].in, n);
        len += n;
        want.ev[want.n] = cases[i].want;
        want.res[want.n++] = cases[i].res;
    }
    /* the table's want has key_len 0 for text keys: take the parsed ones */
    feed(buf, len, NULL, 0, &whole, "all lines");
    CHECK(whole.n == NCASES, "all lines: %zu events", whole.n);
    for (size_t i = 0; i < NCASES && i < whole.n; i++)
        check_event(&whole.ev[i], &cases[i].want, "all lines");
    check_all_ways(buf, len, &whole, "all lines");
    size_t n2 = swap_ends(buf, len, crlf);
    feed(crlf, n2, NULL, 0, &split, "all lines swapped ends");
    check_same(&split, &whole, "all lines swapped ends");
}

/* A line over MCLOG_LINE_MAX: one LINE_TOO_LONG error, then the next line
 * parses (resync), however the bytes arrive; a line of exactly
 * MCLOG_LINE_MAX bytes with its '\n' is not too long. */
static void test_long_lines(void)
{
    static char buf[3 * MCLOG_LINE_MAX];
    const char *good = "skipped=7\n";
    static struct fed want;

    for (size_t extra = 0; extra <= 2; extra++) {
        size_t line = MCLOG_LINE_MAX + extra; /* with its '\n' */
        size_t len = 0;
        memset(buf, 'x', line - 1);
        memcpy(buf, "ts=1.1 gid=1 type=item_store key=", 33);
        len = line - 1;
        buf[len++] = '\n';
        memcpy(buf + len, good, strlen(good));
        len += strlen(good);

        char name[64];
        snprintf(name, sizeof name, "line of %zu bytes", line);
        feed(buf, len, NULL, 0, &want, name);
        CHECK(want.n == 2, "%s: %zu events", name, want.n);
        if (want.n == 2) {
            if (extra == 0) {
                /* fits: a store line without its other fields */
                CHECK(want.res[0] == MCLOG_ERROR && want.ev[0].err == MCLOG_ERR_MISSING_FIELD,
                      "%s: err %s", name, mclog_err_text(want.ev[0].err));
            } else {
                CHECK(want.res[0] == MCLOG_ERROR && want.ev[0].err == MCLOG_ERR_LINE_TOO_LONG,
                      "%s: err %s", name, mclog_err_text(want.ev[0].err));
                CHECK(strlen(want.ev[0].line) == sizeof want.ev[0].line - 1 &&
                          !memcmp(want.ev[0].line, buf, sizeof want.ev[0].line - 1),
                      "%s: the line's head", name);
            }
            CHECK(want.res[1] == MCLOG_OK && want.ev[1].kind == MCLOG_EV_SKIPPED &&
                      want.ev[1].skipped == 7,
                  "%s: the line after", name);
        }
        CHECK(want.bytes == len, "%s: consumed %zu of %zu", name, want.bytes, len);
        check_all_ways(buf, len, &want, name);
    }

    /* no '\n' for far longer than the buffer: one error, everything consumed */
    memset(buf, 'y', sizeof buf);
    feed(buf, sizeof buf, NULL, 0, &want, "endless line");
    CHECK(want.n == 1 && want.ev[0].err == MCLOG_ERR_LINE_TOO_LONG, "endless line: %zu events",
          want.n);
    CHECK(want.bytes == sizeof buf, "endless line: consumed %zu", want.bytes);
}

static void test_keys(void)
{
    static char line[1024];
    struct mclog_parser p;
    struct mclog_event ev;
    size_t used;

    /* the longest key, 250 bytes, as memcached prints it: all encoded */
    int n = snprintf(line, sizeof line, "key=");
    for (int i = 0; i < MC_KEY_MAX; i++)
        n += snprintf(line + n, sizeof line - (size_t)n, "%%%02X", (unsigned)(i & 0xff));
    n += snprintf(line + n, sizeof line - (size_t)n, " exp=-1 la=1 cas=1 fetch=no cls=1 size=1\n");
    mclog_init(&p);
    CHECK_INT(mclog_next(&p, line, (size_t)n, &used, &ev), MCLOG_OK);
    CHECK_INT(used, n);
    CHECK_INT(ev.key_len, MC_KEY_MAX);
    CHECK_INT((unsigned char)ev.key[249], 249);
    CHECK_INT(ev.key[MC_KEY_MAX], 0);

    /* 251 bytes: too long */
    n = snprintf(line, sizeof line, "key=");
    for (int i = 0; i <= MC_KEY_MAX; i++)
        line[n++] = 'K';
    n += snprintf(line + n, sizeof line - (size_t)n, " exp=-1 la=1 cas=1 fetch=no cls=1 size=1\n");
    CHECK_INT(mclog_next(&p, line, (size_t)n, &used, &ev), MCLOG_ERROR);
    CHECK_INT(ev.err, MCLOG_ERR_BAD_KEY);
    CHECK_INT(used, n);

    /* 250 plain bytes, in a store line as 1.6.18 printed it */
    n = snprintf(line, sizeof line, "ts=1796212816.714755 gid=19 type=item_store key=");
    for (int i = 0; i < MC_KEY_MAX; i++)
        line[n++] = 'K';
    n += snprintf(line + n, sizeof line - (size_t)n,
                  " status=stored cmd=set ttl=0 clsid=7 cfd=24 size=1\n");
    CHECK_INT(mclog_next(&p, line, (size_t)n, &used, &ev), MCLOG_OK);
    CHECK_INT(ev.kind, MCLOG_EV_STORE);
    CHECK_INT(ev.key_len, MC_KEY_MAX);
    CHECK_INT(ev.clsid, 7);
    CHECK_INT(p.lines, 3);
}

static void test_tables_and_request(void)
{
    char out[64];

    CHECK_STR(mclog_event_text(MCLOG_EV_STORE), "item_store");
    CHECK_STR(mclog_event_text(MCLOG_EV__COUNT), "?");
    CHECK_STR(mclog_status_word(MCLOG_STATUS_TOO_LARGE), "too_large");
    CHECK_STR(mclog_status_answer(MCLOG_STATUS_STORED), "STORED");
    CHECK_STR(mclog_status_answer(MCLOG_STATUS_NO_MEMORY),
              "SERVER_ERROR out of memory storing object");
    CHECK_STR(mclog_status_answer(MCLOG_STATUS_TOO_LARGE),
              "SERVER_ERROR object too large for cache");
    CHECK_STR(mclog_status_answer(MCLOG_STATUS_NONE), "");
    CHECK_STR(mclog_err_text(MCLOG_ERR_BAD_KEY), "the key is empty, too long or badly encoded");
    for (int e = 0; e < MCLOG_ERR__COUNT; e++)
        CHECK(mclog_err_text((enum mclog_err)e) && *mclog_err_text((enum mclog_err)e),
              "err %d has a text", e);

    size_t n = mclog_watch_request(out, sizeof out, true, true, true);
    CHECK_MEM(out, n, "watch mutations evictions deletions\r\n", 37, "request");
    n = mclog_watch_request(out, sizeof out, true, false, false);
    CHECK_MEM(out, n, "watch mutations\r\n", 17, "request");
    n = mclog_watch_request(out, sizeof out, false, true, false);
    CHECK_MEM(out, n, "watch evictions\r\n", 17, "request");
    CHECK_INT(mclog_watch_request(out, sizeof out, false, false, false), 0);
    CHECK_INT(mclog_watch_request(out, 17, true, false, false), 0); /* no room for the NUL */
    CHECK_INT(mclog_watch_request(out, 18, true, false, false), 17);
}

int main(void)
{
    test_table();
    test_long_lines();
    test_keys();
    test_tables_and_request();
    return check_done("test_mclog");
}
