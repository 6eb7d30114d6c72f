/* test_mc_binary: byte-exact tables for mc_binary.c, the binary-protocol
 * request / response parsers and the pairing of responses with requests.
 *
 * Ground truth is memcached 1.6.18 (Debian's) and its proto_bin.c: every
 * response literal marked "1.6.18:" is the exact bytes that memcached sent
 * for the requests beside it, and every framing rule marked so was checked
 * by sending the same bytes to it. Each table row is fed whole, split in two
 * at every offset (an empty chunk included) and byte by byte, every chunk in
 * its own exact-size heap buffer (so ASan sees any read past a chunk), and
 * must give the same requests, the same error at the same byte and the same
 * end state. The rows that end between requests are also fed as one
 * pipelined batch, again split everywhere. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/mc_binary.h"

#include "check.h"

#define IN(s) .in = s, .len = sizeof(s) - 1
#define H0 "\x00\x00\x00\x00"
#define CAS0 "\x00\x00\x00\x00\x00\x00\x00\x00"
#define EXT0 CAS0 /* 8 bytes of zero extras: flags 0, exptime 0 */

/* --- request bytes --------------------------------------------------------- */

/* clang-format off */
/* magic opcode keylen | extlen datatype vbucket | bodylen | opaque | cas | extras key value */
#define R_SET "\x80\x01\x00\x03" "\x08\x00\x00\x00" "\x00\x00\x00\x0e" "\x01\x02\x03\x04" CAS0 \
              "\xde\xad\xbe\xef\x00\x00\x0e\x10" "foo" "bar"
#define R_SETQ_A1 "\x80\x11\x00\x01" "\x08\x00\x00\x00" "\x00\x00\x00\x0a" "\x00\x00\x00\x01" CAS0 \
                  EXT0 "a" "1"
#define R_SETQ_B2 "\x80\x11\x00\x01" "\x08\x00\x00\x00" "\x00\x00\x00\x0a" "\x00\x00\x00\x02" CAS0 \
                  EXT0 "b" "2"
#define R_SETQ_C3 "\x80\x11\x00\x01" "\x08\x00\x00\x00" "\x00\x00\x00\x0a" "\x00\x00\x00\x03" CAS0 \
                  EXT0 "c" "3"
#define R_ADDQ_K2 "\x80\x12\x00\x01" "\x08\x00\x00\x00" "\x00\x00\x00\x0b" "\x00\x00\x00\x02" CAS0 \
                  "\x00\x00\x00\x07\x00\x00\x00\x3c" "k" "vv"
#define R_ADDQ_A2 "\x80\x12\x00\x01" "\x08\x00\x00\x00" "\x00\x00\x00\x0a" "\x00\x00\x00\x02" CAS0 \
                  EXT0 "a" "2"
#define R_REPLACEQ "\x80\x13\x00\x01" "\x08\x00\x00\x00" "\x00\x00\x00\x09" "\x00\x00\x00\x03" CAS0 \
                   EXT0 "k"
#define R_APPENDQ "\x80\x19\x00\x01" "\x00\x00\x00\x00" "\x00\x00\x00\x05" "\x00\x00\x00\x04" CAS0 \
                  "k" "tail"
#define R_PREPENDQ "\x80\x1a\x00\x01" "\x00\x00\x00\x00" "\x00\x00\x00\x05" "\x00\x00\x00\x05" CAS0 \
                   "k" "head"
#define R_ADD "\x80\x02\x00\x03" "\x08\x00\x00\x00" "\x00\x00\x00\x0e" H0 CAS0 \
              "\x00\x00\x00\x01\x00\x00\x00\x02" "key" "xyz"
#define R_REPLACE "\x80\x03\x00\x03" "\x08\x00\x00\x00" "\x00\x00\x00\x0c" H0 CAS0 \
                  "\xff\xff\xff\xff\xff\xff\xff\xff" "key" "x"
#define R_APPEND "\x80\x0e\x00\x03" "\x00\x00\x00\x00" "\x00\x00\x00\x05" H0 CAS0 "key" "+1"
#define R_PREPEND "\x80\x0f\x00\x03" "\x00\x00\x00\x00" "\x00\x00\x00\x05" H0 CAS0 "key" "-1"
#define R_CAS "\x80\x01\x00\x01" "\x08\x00\x00\x00" "\x00\x00\x00\x0a" H0 \
              "\x01\x02\x03\x04\x05\x06\x07\x08" EXT0 "c" "v"
#define R_APPEND_CAS "\x80\x0e\x00\x01" "\x00\x00\x00\x00" "\x00\x00\x00\x02" H0 \
                     "\x00\x00\x00\x00\x00\x00\x00\x09" "c" "v"
#define R_SET_DT "\x80\x01\x00\x01" "\x08\x12\x00\x07" "\x00\x00\x00\x0a" H0 CAS0 EXT0 "d" "v"
#define R_SET_EMPTY "\x80\x01\x00\x01" "\x08\x00\x00\x00" "\x00\x00\x00\x09" H0 CAS0 EXT0 "e"
#define R_GET "\x80\x00\x00\x03" "\x00\x00\x00\x00" "\x00\x00\x00\x03" "\x00\x00\x00\x06" CAS0 "foo"
#define R_GETQ "\x80\x09\x00\x03" "\x00\x00\x00\x00" "\x00\x00\x00\x03" "\x00\x00\x00\x07" CAS0 "foo"
#define R_GETK "\x80\x0c\x00\x03" "\x00\x00\x00\x00" "\x00\x00\x00\x03" H0 CAS0 "foo"
#define R_GETKQ "\x80\x0d\x00\x03" "\x00\x00\x00\x00" "\x00\x00\x00\x03" H0 CAS0 "foo"
#define R_NOOP(op) "\x80\x0a\x00\x00" "\x00\x00\x00\x00" "\x00\x00\x00\x00" "\x00\x00\x00" op CAS0
#define R_VERSION "\x80\x0b\x00\x00" "\x00\x00\x00\x00" "\x00\x00\x00\x00" H0 CAS0
#define R_DELETE "\x80\x04\x00\x03" "\x00\x00\x00\x00" "\x00\x00\x00\x03" H0 \
                 "\x00\x00\x00\x00\x00\x00\x00\x05" "foo"
#define R_DELETEQ "\x80\x14\x00\x03" "\x00\x00\x00\x00" "\x00\x00\x00\x03" H0 CAS0 "foo"
#define R_INCR "\x80\x05\x00\x03" "\x14\x00\x00\x00" "\x00\x00\x00\x17" H0 CAS0 \
               "\x00\x00\x00\x00\x00\x00\x00\x02" "\x00\x00\x00\x00\x00\x00\x00\x0a" \
               "\x00\x00\x01\x2c" "cnt"
#define R_DECRQ "\x80\x16\x00\x03" "\x14\x00\x00\x00" "\x00\x00\x00\x17" H0 CAS0 \
                "\x00\x00\x00\x00\x00\x00\x00\x01" CAS0 "\xff\xff\xff\xff" "cnt"
#define R_FLUSH "\x80\x08\x00\x00" "\x00\x00\x00\x00" "\x00\x00\x00\x00" H0 CAS0
#define R_FLUSH_EXP "\x80\x08\x00\x00" "\x04\x00\x00\x00" "\x00\x00\x00\x04" H0 CAS0 "\x00\x00\x00\x0a"
#define R_FLUSHQ "\x80\x18\x00\x00" "\x00\x00\x00\x00" "\x00\x00\x00\x00" H0 CAS0
#define R_TOUCH "\x80\x1c\x00\x01" "\x04\x00\x00\x00" "\x00\x00\x00\x05" H0 CAS0 "\x00\x00\x00\x64" "t"
#define R_GAT "\x80\x1d\x00\x01" "\x04\x00\x00\x00" "\x00\x00\x00\x05" H0 CAS0 "\x00\x00\x00\xc8" "t"
#define R_GATQ "\x80\x1e\x00\x01" "\x04\x00\x00\x00" "\x00\x00\x00\x05" H0 CAS0 H0 "t"
#define R_GATK "\x80\x23\x00\x01" "\x04\x00\x00\x00" "\x00\x00\x00\x05" H0 CAS0 H0 "t"
#define R_GATKQ "\x80\x24\x00\x01" "\x04\x00\x00\x00" "\x00\x00\x00\x05" H0 CAS0 H0 "t"
#define R_STAT "\x80\x10\x00\x00" "\x00\x00\x00\x00" "\x00\x00\x00\x00" "\x00\x00\x00\x1e" CAS0
#define R_STAT_ITEMS "\x80\x10\x00\x05" "\x00\x00\x00\x00" "\x00\x00\x00\x05" H0 CAS0 "items"
#define R_STAT_SIZES_EN(op) \
    "\x80\x10\x00\x0c" "\x00\x00\x00\x00" "\x00\x00\x00\x0c" "\x00\x00\x00" op CAS0 "sizes_enable"
#define R_STAT_SIZES_DIS(op) \
    "\x80\x10\x00\x0d" "\x00\x00\x00\x00" "\x00\x00\x00\x0d" "\x00\x00\x00" op CAS0 "sizes_disable"
#define R_STAT_SIZES_ENX "\x80\x10\x00\x0d" "\x00\x00\x00\x00" "\x00\x00\x00\x0d" H0 CAS0 "sizes_enablex"
#define R_QUIT "\x80\x07\x00\x00" "\x00\x00\x00\x00" "\x00\x00\x00\x00" H0 CAS0
#define R_QUITQ(op) "\x80\x17\x00\x00" "\x00\x00\x00\x00" "\x00\x00\x00\x00" "\x00\x00\x00" op CAS0
#define R_UNKNOWN "\x80\x50\x00\x03" "\x02\x00\x00\x00" "\x00\x00\x00\x08" "\x00\x00\x00\x28" CAS0 \
                  "EE" "abc" "XYZ"
#define R_UNKNOWN_NOEXT "\x80\x1b\x00\x00" "\x00\x00\x00\x00" "\x00\x00\x00\x03" H0 CAS0 "XYZ"
/* bodylen 29 = key "items" + the 24 bytes of the noop that follows */
#define R_STAT_EXCESS "\x80\x10\x00\x05" "\x00\x00\x00\x00" "\x00\x00\x00\x1d" "\x00\x00\x00\x32" CAS0 \
                      "items"
#define R_GAT_EXCESS "\x80\x1d\x00\x01" "\x04\x00\x00\x00" "\x00\x00\x00\x1d" "\x00\x00\x00\x35" CAS0 \
                     H0 "a"
#define R_SET_EXT4 "\x80\x01\x00\x03" "\x04\x00\x00\x00" "\x00\x00\x00\x08" "\x00\x00\x00\x40" CAS0 \
                   H0 "abc" "v"
#define R_SETQ_EXT4 "\x80\x11\x00\x03" "\x04\x00\x00\x00" "\x00\x00\x00\x08" "\x00\x00\x00\x40" CAS0 \
                    H0 "abc" "v"
#define R_NOOP_BODY1 "\x80\x0a\x00\x00" "\x00\x00\x00\x00" "\x00\x00\x00\x01" "\x00\x00\x00\x63" CAS0
#define R_GET_BODY "\x80\x00\x00\x01" "\x00\x00\x00\x00" "\x00\x00\x00\x02" "\x00\x00\x00\x2f" CAS0 \
                   "a" "v"
#define R_SET_NOKEY "\x80\x01\x00\x00" "\x08\x00\x00\x00" "\x00\x00\x00\x09" "\x00\x00\x00\x2d" CAS0 \
                    EXT0 "v"
#define R_APPEND_EXT8 "\x80\x0e\x00\x01" "\x08\x00\x00\x00" "\x00\x00\x00\x0a" "\x00\x00\x00\x2e" CAS0 \
                      EXT0 "a" "v"
/* bodylen 5 < key 3 + extras 8 */
#define R_BODY_SHORT "\x80\x01\x00\x03" "\x08\x00\x00\x00" "\x00\x00\x00\x05" "\x00\x00\x00\x3e" CAS0 \
                     EXT0 "abc"
#define R_BODY_HUGE "\x80\x01\x00\x01" "\x08\x00\x00\x00" "\xff\xff\xff\xff" H0 CAS0 EXT0 "k"
#define R_SASL_LIST "\x80\x20\x00\x00" "\x00\x00\x00\x00" "\x00\x00\x00\x00" "\x00\x00\x00\x5e" CAS0
#define R_SASL_AUTH "\x80\x21\x00\x05" "\x00\x00\x00\x00" "\x00\x00\x00\x07" "\x00\x00\x00\x5f" CAS0 \
                    "PLAIN" "xx"
/* for the pairing scenarios */
#define R_GETQ_ZZ4 "\x80\x09\x00\x02" "\x00\x00\x00\x00" "\x00\x00\x00\x02" "\x00\x00\x00\x04" CAS0 "zz"
#define R_GETKQ_A5 "\x80\x0d\x00\x01" "\x00\x00\x00\x00" "\x00\x00\x00\x01" "\x00\x00\x00\x05" CAS0 "a"
#define R_GET_ZZ6 "\x80\x00\x00\x02" "\x00\x00\x00\x00" "\x00\x00\x00\x02" "\x00\x00\x00\x06" CAS0 "zz"
#define R_GETK_ZZ7 "\x80\x0c\x00\x02" "\x00\x00\x00\x00" "\x00\x00\x00\x02" "\x00\x00\x00\x07" CAS0 "zz"
#define R_STAT_DON9 "\x80\x10\x00\x09" "\x00\x00\x00\x00" "\x00\x00\x00\x09" "\x00\x00\x00\x09" CAS0 \
                    "detail on"
#define R_STAT_BOGUS10 "\x80\x10\x00\x05" "\x00\x00\x00\x00" "\x00\x00\x00\x05" "\x00\x00\x00\x0a" \
                       CAS0 "bogus"
#define R_REPLACE_NX12 "\x80\x03\x00\x02" "\x08\x00\x00\x00" "\x00\x00\x00\x0b" "\x00\x00\x00\x0c" \
                       CAS0 EXT0 "nx" "v"
#define R_APPENDQ_NX13 "\x80\x19\x00\x02" "\x00\x00\x00\x00" "\x00\x00\x00\x03" "\x00\x00\x00\x0d" \
                       CAS0 "nx" "v"
#define R_INCR_CNT14 "\x80\x05\x00\x03" "\x14\x00\x00\x00" "\x00\x00\x00\x17" "\x00\x00\x00\x0e" CAS0 \
                     "\x00\x00\x00\x00\x00\x00\x00\x01" "\x00\x00\x00\x00\x00\x00\x00\x0a" H0 "cnt"
#define R_DELETEQ_NX15 "\x80\x14\x00\x02" "\x00\x00\x00\x00" "\x00\x00\x00\x02" "\x00\x00\x00\x0f" \
                       CAS0 "nx"
#define R_VERSION16 "\x80\x0b\x00\x00" "\x00\x00\x00\x00" "\x00\x00\x00\x00" "\x00\x00\x00\x10" CAS0
#define R_GETQ_X4 "\x80\x09\x00\x01" "\x00\x00\x00\x00" "\x00\x00\x00\x01" "\x00\x00\x00\x04" CAS0 "x"
#define R_SETQ_S0 "\x80\x11\x00\x02" "\x08\x00\x00\x00" "\x00\x00\x00\x0b" H0 CAS0 EXT0 "s1" "v"
#define R_ADDQ_S0 "\x80\x12\x00\x02" "\x08\x00\x00\x00" "\x00\x00\x00\x0b" H0 CAS0 EXT0 "s1" "v"
#define R_TOUCH_NX90 "\x80\x1c\x00\x02" "\x04\x00\x00\x00" "\x00\x00\x00\x06" "\x00\x00\x00\x5a" CAS0 \
                     H0 "nx"
#define R_GATQ_NX91 "\x80\x1e\x00\x02" "\x04\x00\x00\x00" "\x00\x00\x00\x06" "\x00\x00\x00\x5b" CAS0 \
                    H0 "nx"
#define R_GATKQ_T92 "\x80\x24\x00\x01" "\x04\x00\x00\x00" "\x00\x00\x00\x05" "\x00\x00\x00\x5c" CAS0 \
                    H0 "t"
#define R_GET_G2 "\x80\x00\x00\x01" "\x00\x00\x00\x00" "\x00\x00\x00\x01" "\x00\x00\x00\x02" CAS0 "g"

/* --- response bytes (1.6.18's own, unless marked) -------------------------- */

#define A_SET_OK "\x81\x01\x00\x00" "\x00\x00\x00\x00" "\x00\x00\x00\x00" "\x01\x02\x03\x04" \
                 "\x00\x00\x00\x00\x00\x00\x00\x01"
#define A_ADDQ_EXISTS(op) "\x81\x12\x00\x00" "\x00\x00\x00\x02" "\x00\x00\x00\x14" "\x00\x00\x00" op \
                          CAS0 "Data exists for key."
#define A_NOOP(op) "\x81\x0a\x00\x00" "\x00\x00\x00\x00" "\x00\x00\x00\x00" "\x00\x00\x00" op CAS0
#define A_GETKQ_HIT "\x81\x0d\x00\x01" "\x04\x00\x00\x00" "\x00\x00\x00\x06" "\x00\x00\x00\x05" \
                    "\x00\x00\x00\x00\x00\x00\x00\x02" H0 "a" "1"
#define A_GET_MISS "\x81\x00\x00\x00" "\x00\x00\x00\x01" "\x00\x00\x00\x09" "\x00\x00\x00\x06" CAS0 \
                   "Not found"
#define A_GETK_MISS "\x81\x0c\x00\x02" "\x00\x00\x00\x01" "\x00\x00\x00\x02" "\x00\x00\x00\x07" CAS0 \
                    "zz"
#define A_STAT_END(op) "\x81\x10\x00\x00" "\x00\x00\x00\x00" "\x00\x00\x00\x00" "\x00\x00\x00" op CAS0
#define A_STAT_BOGUS "\x81\x10\x00\x00" "\x00\x00\x00\x01" "\x00\x00\x00\x09" "\x00\x00\x00\x0a" CAS0 \
                     "Not found"
#define A_SIZES_DISABLED "\x81\x10\x00\x0c" "\x00\x00\x00\x00" "\x00\x00\x00\x14" "\x00\x00\x00\x0b" \
                         CAS0 "sizes_status" "disabled"
/* 1.6.18 -C (no cas): stat sizes_enable */
#define A_SIZES_ERROR "\x81\x10\x00\x0c" "\x00\x00\x00\x00" "\x00\x00\x00\x11" "\x00\x00\x00\x07" CAS0 \
                      "sizes_status" "error"
#define A_SIZES_ERROR2 "\x81\x10\x00\x0b" "\x00\x00\x00\x00" "\x00\x00\x00\x1f" "\x00\x00\x00\x07" \
                       CAS0 "sizes_error" "cas_support_disabled"
#define A_REPLACE_MISS "\x81\x03\x00\x00" "\x00\x00\x00\x01" "\x00\x00\x00\x09" "\x00\x00\x00\x0c" \
                       CAS0 "Not found"
#define A_APPENDQ_NOT_STORED "\x81\x19\x00\x00" "\x00\x00\x00\x05" "\x00\x00\x00\x0b" \
                             "\x00\x00\x00\x0d" CAS0 "Not stored."
#define A_INCR_10 "\x81\x05\x00\x00" "\x00\x00\x00\x00" "\x00\x00\x00\x08" "\x00\x00\x00\x0e" \
                  "\x00\x00\x00\x00\x00\x00\x00\x03" "\x00\x00\x00\x00\x00\x00\x00\x0a"
#define A_DELETEQ_MISS "\x81\x14\x00\x00" "\x00\x00\x00\x01" "\x00\x00\x00\x09" "\x00\x00\x00\x0f" \
                       CAS0 "Not found"
#define A_VERSION "\x81\x0b\x00\x00" "\x00\x00\x00\x00" "\x00\x00\x00\x06" "\x00\x00\x00\x10" CAS0 \
                  "1.6.18"
#define A_SETQ_E2BIG "\x81\x11\x00\x00" "\x00\x00\x00\x03" "\x00\x00\x00\x0a" "\x00\x00\x00\x02" CAS0 \
                     "Too large."
#define A_SETQ_EINVAL "\x81\x11\x00\x00" "\x00\x00\x00\x04" "\x00\x00\x00\x11" "\x00\x00\x00\x40" \
                      CAS0 "Invalid arguments"
#define A_UNKNOWN "\x81\x50\x00\x00" "\x00\x00\x00\x81" "\x00\x00\x00\x0f" "\x00\x00\x00\x28" CAS0 \
                  "Unknown command"
#define A_STAT_PID "\x81\x10\x00\x03" "\x00\x00\x00\x00" "\x00\x00\x00\x08" "\x00\x00\x00\x1e" CAS0 \
                   "pid" "15985"
#define A_STAT_UPTIME "\x81\x10\x00\x06" "\x00\x00\x00\x00" "\x00\x00\x00\x07" "\x00\x00\x00\x1e" \
                      CAS0 "uptime" "5"
#define A_GETQ_HIT "\x81\x09\x00\x00" "\x04\x00\x00\x00" "\x00\x00\x00\x05" "\x00\x00\x00\x04" \
                   "\x00\x00\x00\x00\x00\x00\x00\x09" H0 "x"
#define A_TOUCH_MISS "\x81\x1c\x00\x00" "\x00\x00\x00\x01" "\x00\x00\x00\x09" "\x00\x00\x00\x5a" CAS0 \
                     "Not found"
#define A_GATKQ_HIT "\x81\x24\x00\x01" "\x04\x00\x00\x00" "\x00\x00\x00\x07" "\x00\x00\x00\x5c" \
                    "\x00\x00\x00\x00\x00\x00\x00\x07" H0 "t" "tv"
/* made up: a get hit whose value is longer than MCB_VALUE_HEAD */
#define A_GET_HIT_LONG "\x81\x00\x00\x00" "\x04\x00\x00\x00" "\x00\x00\x00\x18" "\x00\x00\x00\x11" \
                       "\x00\x00\x00\x00\x00\x00\x00\x04" "\x00\x00\xca\xfe" \
                       "0123456789abcdefXYZW"
/* clang-format on */

/* --- request table ---------------------------------------------------------- */

enum { Q = 1, W = 2, CAS = 4, INV = 8, CLOSE = 16, TRUNC = 32, UNK = 64 };

/* One expected request; fields left out are 0 / NULL / MCB_REPLY_ONE. */
struct xreq {
    uint8_t op;
    const char *key; /* the bytes kept; NULL: no key */
    int key_len;     /* as sent; 0: strlen(key) */
    uint8_t extlen;
    uint8_t datatype;
    uint16_t vbucket;
    uint32_t flags;
    int64_t exptime;
    uint64_t delta, initial;
    uint32_t value_len;
    uint32_t opaque;
    uint64_t cas;
    enum mcb_reply reply;
    unsigned bits;  /* Q W CAS INV CLOSE TRUNC UNK */
    uint64_t bytes; /* 0 ends the list */
};

#define MAX_REQS 8

struct req_case {
    const char *name;
    const char *in;
    size_t len;
    struct xreq want[MAX_REQS];
    enum mcb_error err;
    size_t err_at;      /* bytes consumed in all when err */
    uint64_t skip_left; /* value bytes still to come when the input ends */
    bool mid;           /* the input ends inside a request */
    uint32_t body_max;  /* 0: MCB_BODY_MAX_DEFAULT */
};

static const struct req_case req_cases[] = {
    /* --- writes ---------------------------------------------------------- */
    { .name = "set",
      IN(R_SET),
      .want = { { .op = 0x01,
                  .key = "foo",
                  .extlen = 8,
                  .flags = 0xdeadbeef,
                  .exptime = 3600,
                  .value_len = 3,
                  .opaque = 0x01020304,
                  .bits = W,
                  .bytes = 38 } } },
    { .name = "setq",
      IN(R_SETQ_A1),
      .want = { { .op = 0x11,
                  .key = "a",
                  .extlen = 8,
                  .value_len = 1,
                  .opaque = 1,
                  .reply = MCB_REPLY_ON_ERROR,
                  .bits = Q | W,
                  .bytes = 34 } } },
    { .name = "addq",
      IN(R_ADDQ_K2),
      .want = { { .op = 0x12,
                  .key = "k",
                  .extlen = 8,
                  .flags = 7,
                  .exptime = 60,
                  .value_len = 2,
                  .opaque = 2,
                  .reply = MCB_REPLY_ON_ERROR,
                  .bits = Q | W,
                  .bytes = 35 } } },
    { .name = "replaceq, empty value",
      IN(R_REPLACEQ),
      .want = { { .op = 0x13,
                  .key = "k",
                  .extlen = 8,
                  .opaque = 3,
                  .reply = MCB_REPLY_ON_ERROR,
                  .bits = Q | W,
                  .bytes = 33 } } },
    { .name = "appendq",
      IN(R_APPENDQ),
      .want = { { .op = 0x19,
                  .key = "k",
                  .value_len = 4,
                  .opaque = 4,
                  .reply = MCB_REPLY_ON_ERROR,
                  .bits = Q | W,
                  .bytes = 29 } } },
    { .name = "prependq",
      IN(R_PREPENDQ),
      .want = { { .op = 0x1a,
                  .key = "k",
                  .value_len = 4,
                  .opaque = 5,
                  .reply = MCB_REPLY_ON_ERROR,
                  .bits = Q | W,
                  .bytes = 29 } } },
    { .name = "add",
      IN(R_ADD),
      .want = { { .op = 0x02,
                  .key = "key",
                  .extlen = 8,
                  .flags = 1,
                  .exptime = 2,
                  .value_len = 3,
                  .bits = W,
                  .bytes = 38 } } },
    { .name = "replace, flags and exptime 2^32-1",
      IN(R_REPLACE),
      .want = { { .op = 0x03,
                  .key = "key",
                  .extlen = 8,
                  .flags = 0xffffffffu,
                  .exptime = 4294967295LL,
                  .value_len = 1,
                  .bits = W,
                  .bytes = 36 } } },
    { .name = "append",
      IN(R_APPEND),
      .want = { { .op = 0x0e, .key = "key", .value_len = 2, .bits = W, .bytes = 29 } } },
    { .name = "prepend",
      IN(R_PREPEND),
      .want = { { .op = 0x0f, .key = "key", .value_len = 2, .bits = W, .bytes = 29 } } },
    { .name = "set with cas",
      IN(R_CAS),
      .want = { { .op = 0x01,
                  .key = "c",
                  .extlen = 8,
                  .value_len = 1,
                  .cas = 0x0102030405060708ULL,
                  .bits = W | CAS,
                  .bytes = 34 } } },
    { .name = "append with cas",
      IN(R_APPEND_CAS),
      .want = { { .op = 0x0e,
                  .key = "c",
                  .value_len = 1,
                  .cas = 9,
                  .bits = W | CAS,
                  .bytes = 26 } } },
    { .name = "datatype and vbucket kept",
      IN(R_SET_DT),
      .want = { { .op = 0x01,
                  .key = "d",
                  .extlen = 8,
                  .datatype = 0x12,
                  .vbucket = 7,
                  .value_len = 1,
                  .bits = W,
                  .bytes = 34 } } },
    { .name = "set, empty value",
      IN(R_SET_EMPTY),
      .want = { { .op = 0x01, .key = "e", .extlen = 8, .bits = W, .bytes = 33 } } },
    /* --- reads and the rest ------------------------------------------------ */
    { .name = "get",
      IN(R_GET),
      .want = { { .op = 0x00, .key = "foo", .opaque = 6, .bytes = 27 } } },
    { .name = "getq",
      IN(R_GETQ),
      .want = { { .op = 0x09,
                  .key = "foo",
                  .opaque = 7,
                  .reply = MCB_REPLY_ON_HIT,
                  .bits = Q,
                  .bytes = 27 } } },
    { .name = "getk", IN(R_GETK), .want = { { .op = 0x0c, .key = "foo", .bytes = 27 } } },
    { .name = "getkq",
      IN(R_GETKQ),
      .want = { { .op = 0x0d, .key = "foo", .reply = MCB_REPLY_ON_HIT, .bits = Q, .bytes = 27 } } },
    { .name = "noop", IN(R_NOOP("\x08")), .want = { { .op = 0x0a, .opaque = 8, .bytes = 24 } } },
    { .name = "version", IN(R_VERSION), .want = { { .op = 0x0b, .bytes = 24 } } },
    { .name = "delete with cas (not a write)",
      IN(R_DELETE),
      .want = { { .op = 0x04, .key = "foo", .cas = 5, .bytes = 27 } } },
    { .name = "deleteq",
      IN(R_DELETEQ),
      .want = { { .op = 0x14,
                  .key = "foo",
                  .reply = MCB_REPLY_ON_ERROR,
                  .bits = Q,
                  .bytes = 27 } } },
    { .name = "increment",
      IN(R_INCR),
      .want = { { .op = 0x05,
                  .key = "cnt",
                  .extlen = 20,
                  .delta = 2,
                  .initial = 10,
                  .exptime = 300,
                  .bytes = 47 } } },
    { .name = "decrementq, exptime 0xffffffff (no create)",
      IN(R_DECRQ),
      .want = { { .op = 0x16,
                  .key = "cnt",
                  .extlen = 20,
                  .delta = 1,
                  .exptime = 4294967295LL,
                  .reply = MCB_REPLY_ON_ERROR,
                  .bits = Q,
                  .bytes = 47 } } },
    { .name = "flush", IN(R_FLUSH), .want = { { .op = 0x08, .bytes = 24 } } },
    { .name = "flush with a delay",
      IN(R_FLUSH_EXP),
      .want = { { .op = 0x08, .extlen = 4, .exptime = 10, .bytes = 28 } } },
    { .name = "flushq",
      IN(R_FLUSHQ),
      .want = { { .op = 0x18, .reply = MCB_REPLY_ON_ERROR, .bits = Q, .bytes = 24 } } },
    { .name = "touch",
      IN(R_TOUCH),
      .want = { { .op = 0x1c, .key = "t", .extlen = 4, .exptime = 100, .bytes = 29 } } },
    { .name = "gat",
      IN(R_GAT),
      .want = { { .op = 0x1d, .key = "t", .extlen = 4, .exptime = 200, .bytes = 29 } } },
    { .name = "gatq",
      IN(R_GATQ),
      .want = { { .op = 0x1e,
                  .key = "t",
                  .extlen = 4,
                  .reply = MCB_REPLY_ON_HIT,
                  .bits = Q,
                  .bytes = 29 } } },
    { .name = "gatk",
      IN(R_GATK),
      .want = { { .op = 0x23, .key = "t", .extlen = 4, .bytes = 29 } } },
    { .name = "gatkq",
      IN(R_GATKQ),
      .want = { { .op = 0x24,
                  .key = "t",
                  .extlen = 4,
                  .reply = MCB_REPLY_ON_HIT,
                  .bits = Q,
                  .bytes = 29 } } },
    { .name = "stat",
      IN(R_STAT),
      .want = { { .op = 0x10, .opaque = 30, .reply = MCB_REPLY_STAT, .bytes = 24 } } },
    { .name = "stat items",
      IN(R_STAT_ITEMS),
      .want = { { .op = 0x10, .key = "items", .reply = MCB_REPLY_STAT, .bytes = 29 } } },
    { .name = "stat sizes_enable: no terminator",
      IN(R_STAT_SIZES_EN("\x00")),
      .want = { { .op = 0x10,
                  .key = "sizes_enable",
                  .reply = MCB_REPLY_STAT_SIZES,
                  .bytes = 36 } } },
    { .name = "stat sizes_disable: no terminator",
      IN(R_STAT_SIZES_DIS("\x00")),
      .want = { { .op = 0x10,
                  .key = "sizes_disable",
                  .reply = MCB_REPLY_STAT_SIZES,
                  .bytes = 37 } } },
    { .name = "stat sizes_enablex: compared whole",
      IN(R_STAT_SIZES_ENX),
      .want = { { .op = 0x10, .key = "sizes_enablex", .reply = MCB_REPLY_STAT, .bytes = 37 } } },
    /* 1.6.18 with SASL off: UNKNOWN_COMMAND, the value discarded */
    { .name = "sasl_list_mechs",
      IN(R_SASL_LIST),
      .want = { { .op = 0x20, .opaque = 94, .bytes = 24 } } },
    { .name = "sasl_auth",
      IN(R_SASL_AUTH),
      .want = { { .op = 0x21, .key = "PLAIN", .value_len = 2, .opaque = 95, .bytes = 31 } } },
    /* --- memcached's framing quirks (1.6.18) -------------------------------- */
    { .name = "unknown opcode: body length discarded after the key",
      IN(R_UNKNOWN "PAD45" R_NOOP("\x29")),
      .want = { { .op = 0x50,
                  .key = "abc",
                  .extlen = 2,
                  .value_len = 3,
                  .opaque = 40,
                  .bits = UNK,
                  .bytes = 37 },
                { .op = 0x0a, .opaque = 41, .bytes = 24 } } },
    { .name = "unknown opcode 0x1b without key or extras",
      IN(R_UNKNOWN_NOEXT R_NOOP("\x29")),
      .want = { { .op = 0x1b, .value_len = 3, .bits = UNK, .bytes = 27 },
                { .op = 0x0a, .opaque = 41, .bytes = 24 } } },
    { .name = "stat: the body past the key is the next request",
      IN(R_STAT_EXCESS R_NOOP("\x33") R_NOOP("\x34")),
      .want = { { .op = 0x10,
                  .key = "items",
                  .value_len = 24,
                  .opaque = 50,
                  .reply = MCB_REPLY_STAT,
                  .bytes = 29 },
                { .op = 0x0a, .opaque = 51, .bytes = 24 },
                { .op = 0x0a, .opaque = 52, .bytes = 24 } } },
    { .name = "gat: the body past the key is the next request",
      IN(R_GAT_EXCESS R_NOOP("\x33")),
      .want = { { .op = 0x1d, .key = "a", .extlen = 4, .value_len = 24, .opaque = 53, .bytes = 29 },
                { .op = 0x0a, .opaque = 51, .bytes = 24 } } },
    /* --- EINVAL and close (1.6.18): the rest is ignored ---------------------- */
    { .name = "set with 4 bytes of extras",
      IN(R_SET_EXT4 R_NOOP("\x41")),
      .want = { { .op = 0x01,
                  .key = "abc",
                  .extlen = 4,
                  .value_len = 1,
                  .opaque = 64,
                  .bits = W | INV | CLOSE,
                  .bytes = 31 } } },
    { .name = "setq with 4 bytes of extras: answered",
      IN(R_SETQ_EXT4 R_NOOP("\x41")),
      .want = { { .op = 0x11,
                  .key = "abc",
                  .extlen = 4,
                  .value_len = 1,
                  .opaque = 64,
                  .bits = Q | W | INV | CLOSE,
                  .bytes = 31 } } },
    { .name = "noop with a body",
      IN(R_NOOP_BODY1 "Z" R_NOOP("\x64")),
      .want = { { .op = 0x0a, .value_len = 1, .opaque = 99, .bits = INV | CLOSE, .bytes = 24 } } },
    { .name = "get with a value",
      IN(R_GET_BODY R_NOOP("\x00")),
      .want = { { .op = 0x00,
                  .key = "a",
                  .value_len = 1,
                  .opaque = 47,
                  .bits = INV | CLOSE,
                  .bytes = 25 } } },
    { .name = "set without key",
      IN(R_SET_NOKEY R_NOOP("\x00")),
      .want = { { .op = 0x01,
                  .extlen = 8,
                  .value_len = 1,
                  .opaque = 45,
                  .bits = W | INV | CLOSE,
                  .bytes = 32 } } },
    { .name = "append with extras",
      IN(R_APPEND_EXT8 R_NOOP("\x00")),
      .want = { { .op = 0x0e,
                  .key = "a",
                  .extlen = 8,
                  .value_len = 1,
                  .opaque = 46,
                  .bits = W | INV | CLOSE,
                  .bytes = 33 } } },
    { .name = "quit: nothing read after it",
      IN(R_QUIT "\x00junk" R_NOOP("\x01")),
      .want = { { .op = 0x07, .bits = CLOSE, .bytes = 24 } } },
    { .name = "quitq",
      IN(R_QUITQ("\x03") R_NOOP("\x01")),
      .want = { { .op = 0x17,
                  .opaque = 3,
                  .reply = MCB_REPLY_NONE,
                  .bits = Q | CLOSE,
                  .bytes = 24 } } },
    /* --- errors ---------------------------------------------------------------- */
    { .name = "bad magic 0x81",
      IN("\x81\x0a\x00\x00" H0 H0 H0 CAS0),
      .err = MCB_ERR_MAGIC,
      .err_at = 1 },
    { .name = "bad magic 0x00 after a noop",
      IN(R_NOOP("\x01") "\x00\x0a\x00\x00" H0 H0 H0 CAS0),
      .want = { { .op = 0x0a, .opaque = 1, .bytes = 24 } },
      .err = MCB_ERR_MAGIC,
      .err_at = 25 },
    { .name = "text protocol", IN("get foo\r\n"), .err = MCB_ERR_MAGIC, .err_at = 1 },
    /* 1.6.18: UNKNOWN_COMMAND, then close */
    { .name = "body shorter than key + extras",
      IN(R_BODY_SHORT),
      .err = MCB_ERR_BODY_SHORT,
      .err_at = 24 },
    { .name = "body over the default bound",
      IN(R_BODY_HUGE),
      .err = MCB_ERR_BODY_LIMIT,
      .err_at = 24 },
    { .name = "body 65 over a bound of 64",
      IN("\x80\x01\x00\x01"
         "\x08\x00\x00\x00"
         "\x00\x00\x00\x41" H0 CAS0 EXT0 "k"),
      .err = MCB_ERR_BODY_LIMIT,
      .err_at = 24,
      .body_max = 64 },
    { .name = "body 64 within a bound of 64",
      IN("\x80\x01\x00\x01"
         "\x08\x00\x00\x00"
         "\x00\x00\x00\x40" H0 CAS0 EXT0 "k"),
      .want = { { .op = 0x01, .key = "k", .extlen = 8, .value_len = 55, .bits = W, .bytes = 88 } },
      .skip_left = 55,
      .mid = true,
      .body_max = 64 },
    /* --- input ending inside a request ----------------------------------------- */
    { .name = "header cut",
      IN("\x80\x01\x00\x03"
         "\x08\x00\x00\x00"
         "\x00\x00"),
      .mid = true },
    { .name = "extras cut",
      IN("\x80\x01\x00\x03"
         "\x08\x00\x00\x00"
         "\x00\x00\x00\x0e" H0 CAS0 "\xde\xad"),
      .mid = true },
    { .name = "key cut",
      IN("\x80\x01\x00\x03"
         "\x08\x00\x00\x00"
         "\x00\x00\x00\x0e" H0 CAS0 EXT0 "fo"),
      .mid = true },
    { .name = "value cut",
      IN("\x80\x01\x00\x03"
         "\x08\x00\x00\x00"
         "\x00\x00\x00\x0e" H0 CAS0 EXT0 "foo"
         "b"),
      .want = { { .op = 0x01, .key = "foo", .extlen = 8, .value_len = 3, .bits = W, .bytes = 38 } },
      .skip_left = 2,
      .mid = true },
    { .name = "value not started",
      IN("\x80\x01\x00\x03"
         "\x08\x00\x00\x00"
         "\x00\x00\x00\x0e" H0 CAS0 EXT0 "foo"),
      .want = { { .op = 0x01, .key = "foo", .extlen = 8, .value_len = 3, .bits = W, .bytes = 38 } },
      .skip_left = 3,
      .mid = true },
    { .name = "empty input", IN("") },
    /* --- pipelines ------------------------------------------------------------- */
    { .name = "quiet sets, then noop",
      IN(R_SETQ_A1 R_SETQ_B2 R_SETQ_C3 R_NOOP("\x09")),
      .want = { { .op = 0x11,
                  .key = "a",
                  .extlen = 8,
                  .value_len = 1,
                  .opaque = 1,
                  .reply = MCB_REPLY_ON_ERROR,
                  .bits = Q | W,
                  .bytes = 34 },
                { .op = 0x11,
                  .key = "b",
                  .extlen = 8,
                  .value_len = 1,
                  .opaque = 2,
                  .reply = MCB_REPLY_ON_ERROR,
                  .bits = Q | W,
                  .bytes = 34 },
                { .op = 0x11,
                  .key = "c",
                  .extlen = 8,
                  .value_len = 1,
                  .opaque = 3,
                  .reply = MCB_REPLY_ON_ERROR,
                  .bits = Q | W,
                  .bytes = 34 },
                { .op = 0x0a, .opaque = 9, .bytes = 24 } } },
    { .name = "getq getkq get getk",
      IN(R_GETQ_ZZ4 R_GETKQ_A5 R_GET_ZZ6 R_GETK_ZZ7),
      .want = { { .op = 0x09,
                  .key = "zz",
                  .opaque = 4,
                  .reply = MCB_REPLY_ON_HIT,
                  .bits = Q,
                  .bytes = 26 },
                { .op = 0x0d,
                  .key = "a",
                  .opaque = 5,
                  .reply = MCB_REPLY_ON_HIT,
                  .bits = Q,
                  .bytes = 25 },
                { .op = 0x00, .key = "zz", .opaque = 6, .bytes = 26 },
                { .op = 0x0c, .key = "zz", .opaque = 7, .bytes = 26 } } },
};

/* What one feeding of a request stream gave. */
struct got_req {
    struct mcb_request r;
    char key[MCB_KEY_MAX + 1];
};

#define GOT_MAX 128

struct req_run {
    struct got_req reqs[GOT_MAX];
    size_t n;
    bool broken;        /* an invariant of the API failed (message printed) */
    enum mcb_error err; /* MCB_ERR_NONE when no MCB_ERROR came */
    size_t consumed;    /* bytes consumed in all */
    bool closed, boundary;
    uint64_t skip_left;
};

/* Feeds in[0..len) in chunks ending at cuts[] (ascending), each chunk copied
 * into its own exact-size heap buffer. */
static void run_reqs(const char *ctx, const char *in, size_t len, const size_t *cuts, size_t ncuts,
                     uint32_t body_max, struct req_run *out)
{
    static struct mcb_req_parser p;
    size_t start = 0;

    memset(out, 0, sizeof *out);
    mcb_req_init(&p, body_max);
    for (size_t c = 0; c <= ncuts; c++) {
        size_t end = c < ncuts ? cuts[c] : len, n = end - start, pos = 0;
        char *chunk = malloc(n ? n : 1);
        memcpy(chunk, in + start, n);
        for (;;) {
            struct mcb_request r;
            size_t used = (size_t)-1;
            enum mcb_result res = mcb_req_feed(&p, chunk + pos, n - pos, &used, &r);
            if (used > n - pos) {
                fprintf(stderr, "FAIL %s: consumed %zu of %zu\n", ctx, used, n - pos);
                out->broken = true;
                break;
            }
            pos += used;
            out->consumed += used;
            if (res == MCB_ERROR) {
                size_t again = 1;
                out->err = mcb_req_error(&p);
                /* sticky: nothing more is consumed */
                if (mcb_req_feed(&p, chunk + pos, n - pos, &again, &r) != MCB_ERROR || again != 0 ||
                    out->err == MCB_ERR_NONE) {
                    fprintf(stderr, "FAIL %s: error not sticky\n", ctx);
                    out->broken = true;
                }
                break;
            }
            if (res == MCB_NEED_MORE) {
                if (pos != n) {
                    fprintf(stderr, "FAIL %s: need-more left %zu bytes\n", ctx, n - pos);
                    out->broken = true;
                }
                break;
            }
            if (used == 0) {
                fprintf(stderr, "FAIL %s: a request from no bytes\n", ctx);
                out->broken = true;
                break;
            }
            if (out->n < GOT_MAX) {
                struct got_req *g = &out->reqs[out->n++];
                g->r = r;
                memcpy(g->key, r.key, r.key_kept);
                g->key[r.key_kept] = '\0';
                if (r.key[r.key_kept] != '\0') {
                    fprintf(stderr, "FAIL %s: key not NUL-terminated\n", ctx);
                    out->broken = true;
                }
            }
        }
        free(chunk);
        start = end;
        if (out->err != MCB_ERR_NONE || out->broken)
            break;
    }
    out->closed = mcb_req_closed(&p);
    out->boundary = mcb_req_at_boundary(&p);
    out->skip_left = mcb_req_skip_left(&p);
}

#define DIFF(field, got, want) \
    do { \
        unsigned long long g_ = (unsigned long long)(got), w_ = (unsigned long long)(want); \
        if (g_ != w_) { \
            fprintf(stderr, "FAIL %s: request %zu: %s = %llu (0x%llx), want %llu (0x%llx)\n", ctx, \
                    i, field, g_, g_, w_, w_); \
            ok = false; \
        } \
    } while (0)

static bool req_equal(const char *ctx, size_t i, const struct got_req *g, const struct xreq *w)
{
    const struct mcb_request *r = &g->r;
    const char *wkey = w->key ? w->key : "";
    size_t wkey_len = w->key_len ? (size_t)w->key_len : strlen(wkey);
    bool ok = true;

    DIFF("opcode", r->opcode, w->op);
    if (strcmp(g->key, wkey) != 0) {
        fprintf(stderr, "FAIL %s: request %zu: key \"%s\", want \"%s\"\n", ctx, i, g->key, wkey);
        ok = false;
    }
    DIFF("key_len", r->key_len, wkey_len);
    DIFF("key_kept", r->key_kept, strlen(wkey));
    DIFF("extlen", r->extlen, w->extlen);
    DIFF("datatype", r->datatype, w->datatype);
    DIFF("vbucket", r->vbucket, w->vbucket);
    DIFF("flags", r->flags, w->flags);
    DIFF("exptime", r->exptime, w->exptime);
    DIFF("delta", r->delta, w->delta);
    DIFF("initial", r->initial, w->initial);
    DIFF("value_len", r->value_len, w->value_len);
    DIFF("body_len", r->body_len, wkey_len + w->extlen + w->value_len);
    DIFF("opaque", r->opaque, w->opaque);
    DIFF("cas", r->cas, w->cas);
    DIFF("reply", r->reply, w->reply);
    DIFF("quiet", r->quiet, !!(w->bits & Q));
    DIFF("is_write", r->is_write, !!(w->bits & W));
    DIFF("is_cas", r->is_cas, !!(w->bits & CAS));
    DIFF("invalid", r->invalid, !!(w->bits & INV));
    DIFF("closes", r->closes, !!(w->bits & CLOSE));
    DIFF("key_truncated", r->key_truncated, !!(w->bits & TRUNC));
    DIFF("known", r->known, !(w->bits & UNK));
    DIFF("bytes", r->bytes, w->bytes);
    return ok;
}

static size_t xreq_count(const struct xreq *w)
{
    size_t n = 0;
    while (n < MAX_REQS && w[n].bytes != 0)
        n++;
    return n;
}

/* Does a run give what the case wants (the requests may be a batch: want,
 * nwant)? */
static bool req_run_ok(const char *ctx, const struct req_run *run, const struct xreq *want,
                       size_t nwant, const struct req_case *c)
{
    bool ok = !run->broken;
    bool closes = nwant > 0 && (want[nwant - 1].bits & CLOSE);

    if (run->n != nwant) {
        fprintf(stderr, "FAIL %s: %zu requests, want %zu\n", ctx, run->n, nwant);
        ok = false;
    }
    for (size_t i = 0; i < run->n && i < nwant; i++)
        ok = req_equal(ctx, i, &run->reqs[i], &want[i]) && ok;
    if (run->err != c->err) {
        fprintf(stderr, "FAIL %s: error %s, want %s\n", ctx, mcb_error_name(run->err),
                mcb_error_name(c->err));
        ok = false;
    }
    if (run->consumed != (c->err ? c->err_at : c->len)) {
        fprintf(stderr, "FAIL %s: consumed %zu, want %zu\n", ctx, run->consumed,
                c->err ? c->err_at : c->len);
        ok = false;
    }
    if (!c->err) {
        size_t sum = 0;
        for (size_t i = 0; i < run->n; i++)
            sum += run->reqs[i].r.bytes;
        if (run->closed != closes || run->skip_left != c->skip_left ||
            run->boundary != (!c->mid && !closes)) {
            fprintf(stderr, "FAIL %s: closed %d skip_left %llu boundary %d, want %d %llu %d\n", ctx,
                    run->closed, (unsigned long long)run->skip_left, run->boundary, closes,
                    (unsigned long long)c->skip_left, !c->mid && !closes);
            ok = false;
        }
        /* between requests, the bytes of the requests are the input */
        if (!c->mid && !closes && sum != c->len) {
            fprintf(stderr, "FAIL %s: requests sum to %zu bytes, input is %zu\n", ctx, sum, c->len);
            ok = false;
        }
    }
    return ok;
}

/* Whole, split in two everywhere (empty chunks included), byte by byte. */
static void req_all_splits(const struct req_case *c, const struct xreq *want, size_t nwant)
{
    static struct req_run run;
    static size_t cuts[4096];
    uint32_t body_max = c->body_max ? c->body_max : MCB_BODY_MAX_DEFAULT;
    char ctx[200];

    snprintf(ctx, sizeof ctx, "%s (whole)", c->name);
    run_reqs(ctx, c->in, c->len, NULL, 0, body_max, &run);
    CHECK(req_run_ok(ctx, &run, want, nwant, c), "%s", ctx);
    for (size_t at = 0; at <= c->len; at++) {
        snprintf(ctx, sizeof ctx, "%s (split at %zu)", c->name, at);
        run_reqs(ctx, c->in, c->len, &at, 1, body_max, &run);
        CHECK(req_run_ok(ctx, &run, want, nwant, c), "%s", ctx);
    }
    if (c->len <= sizeof cuts / sizeof cuts[0]) {
        for (size_t i = 0; i < c->len; i++)
            cuts[i] = i + 1;
        snprintf(ctx, sizeof ctx, "%s (byte by byte)", c->name);
        run_reqs(ctx, c->in, c->len, cuts, c->len, body_max, &run);
        CHECK(req_run_ok(ctx, &run, want, nwant, c), "%s", ctx);
    }
}

static void test_request_table(void)
{
    for (size_t i = 0; i < sizeof req_cases / sizeof req_cases[0]; i++) {
        const struct req_case *c = &req_cases[i];
        req_all_splits(c, c->want, xreq_count(c->want));
    }
}

/* Every row that ends between requests, one after the other in one buffer. */
static void test_request_batch(void)
{
    static char buf[8192];
    static struct xreq want[GOT_MAX];
    struct req_case batch = { .name = "batch of all rows" };
    size_t len = 0, n = 0;

    for (size_t i = 0; i < sizeof req_cases / sizeof req_cases[0]; i++) {
        const struct req_case *c = &req_cases[i];
        size_t k = xreq_count(c->want);
        if (c->err || c->mid || c->body_max || k == 0 || (c->want[k - 1].bits & CLOSE))
            continue;
        if (len + c->len > sizeof buf || n + k > GOT_MAX)
            break;
        memcpy(buf + len, c->in, c->len);
        len += c->len;
        memcpy(want + n, c->want, k * sizeof want[0]);
        n += k;
    }
    CHECK(n >= 40, "the batch holds %zu requests", n);
    batch.in = buf;
    batch.len = len;
    req_all_splits(&batch, want, n);
}

/* --- requests built at run time: long keys, long values, big extras ------- */

static size_t put_header(char *b, uint8_t magic, uint8_t op, uint16_t keylen, uint8_t extlen,
                         uint32_t body, uint32_t opaque)
{
    memset(b, 0, MCB_HEADER_LEN);
    b[0] = (char)magic;
    b[1] = (char)op;
    b[2] = (char)(keylen >> 8);
    b[3] = (char)keylen;
    b[4] = (char)extlen;
    b[8] = (char)(body >> 24);
    b[9] = (char)(body >> 16);
    b[10] = (char)(body >> 8);
    b[11] = (char)body;
    b[12] = (char)(opaque >> 24);
    b[13] = (char)(opaque >> 16);
    b[14] = (char)(opaque >> 8);
    b[15] = (char)opaque;
    return MCB_HEADER_LEN;
}

static size_t put_fill(char *b, int c, size_t n)
{
    memset(b, c, n);
    return n;
}

static size_t put_noop(char *b, uint32_t opaque)
{
    return put_header(b, MCB_MAGIC_REQ, MCB_OP_NOOP, 0, 0, 0, opaque);
}

static void test_long_keys(void)
{
    static char buf[2048], k250[MCB_KEY_MAX + 1], a250[MCB_KEY_MAX + 1];
    struct req_case c = { .in = buf };
    size_t n;

    memset(k250, 'k', MCB_KEY_MAX);
    memset(a250, 'a', MCB_KEY_MAX);

    /* 250 bytes: the longest key memcached takes */
    n = put_header(buf, MCB_MAGIC_REQ, MCB_OP_GET, 250, 0, 250, 1);
    n += put_fill(buf + n, 'k', 250);
    n += put_noop(buf + n, 2);
    c.name = "get, key of 250 bytes";
    c.len = n;
    c.want[0] = (struct xreq){ .op = 0x00, .key = k250, .opaque = 1, .bytes = 274 };
    c.want[1] = (struct xreq){ .op = 0x0a, .opaque = 2, .bytes = 24 };
    req_all_splits(&c, c.want, 2);

    /* 251 bytes, 1.6.18: EINVAL, then close */
    memset(c.want, 0, sizeof c.want);
    n = put_header(buf, MCB_MAGIC_REQ, MCB_OP_GET, 251, 0, 251, 3);
    n += put_fill(buf + n, 'a', 250);
    n += put_fill(buf + n, 'Z', 1);
    n += put_noop(buf + n, 4);
    c.name = "get, key of 251 bytes";
    c.len = n;
    c.want[0] = (struct xreq){ .op = 0x00,
                               .key = a250,
                               .key_len = 251,
                               .opaque = 3,
                               .bits = TRUNC | INV | CLOSE,
                               .bytes = 275 };
    req_all_splits(&c, c.want, 1);

    /* a set with a key of 300 bytes and a value: the value is not counted */
    memset(c.want, 0, sizeof c.want);
    n = put_header(buf, MCB_MAGIC_REQ, MCB_OP_SETQ, 300, 8, 8 + 300 + 5, 5);
    n += put_fill(buf + n, 0, 8);
    n += put_fill(buf + n, 'k', 300);
    n += put_fill(buf + n, 'v', 5);
    n += put_noop(buf + n, 6);
    c.name = "setq, key of 300 bytes";
    c.len = n;
    c.want[0] = (struct xreq){ .op = 0x11,
                               .key = k250,
                               .key_len = 300,
                               .extlen = 8,
                               .value_len = 5,
                               .opaque = 5,
                               .bits = Q | W | TRUNC | INV | CLOSE,
                               .bytes = 332 };
    req_all_splits(&c, c.want, 1);

    /* 255 bytes of extras on an opcode memcached does not know: it then
     * discards 255 more bytes (the body length, counted after the key) */
    memset(c.want, 0, sizeof c.want);
    n = put_header(buf, MCB_MAGIC_REQ, 0x60, 0, 255, 255, 7);
    n += put_fill(buf + n, 0xee, 255);
    n += put_fill(buf + n, 0xaa, 255);
    n += put_noop(buf + n, 8);
    c.name = "unknown opcode, 255 bytes of extras";
    c.len = n;
    c.want[0] = (struct xreq){ .op = 0x60, .extlen = 255, .opaque = 7, .bits = UNK, .bytes = 534 };
    c.want[1] = (struct xreq){ .op = 0x0a, .opaque = 8, .bytes = 24 };
    req_all_splits(&c, c.want, 2);
}

static void test_long_value(void)
{
    static char buf[4096];
    static struct mcb_req_parser p;
    struct req_case c = { .name = "set, value of 3000 bytes", .in = buf };
    struct mcb_request r;
    size_t n, used;

    n = put_header(buf, MCB_MAGIC_REQ, MCB_OP_SET, 1, 8, 8 + 1 + 3000, 1);
    n += put_fill(buf + n, 0, 8);
    n += put_fill(buf + n, 'k', 1);
    /* the value looks like requests: it must be skipped, not parsed */
    for (size_t i = 0; i < 125; i++)
        n += put_noop(buf + n, 99);
    n += put_noop(buf + n, 2);
    c.len = n;
    c.want[0] = (struct xreq){ .op = 0x01,
                               .key = "k",
                               .extlen = 8,
                               .value_len = 3000,
                               .opaque = 1,
                               .bits = W,
                               .bytes = 3033 };
    c.want[1] = (struct xreq){ .op = 0x0a, .opaque = 2, .bytes = 24 };
    req_all_splits(&c, c.want, 2);

    /* the value's bytes still to come, as they arrive */
    mcb_req_init(&p, MCB_BODY_MAX_DEFAULT);
    CHECK_INT(mcb_req_feed(&p, buf, 33, &used, &r), MCB_OK);
    CHECK_INT(used, 33);
    CHECK_INT(mcb_req_skip_left(&p), 3000);
    CHECK_TRUE(!mcb_req_at_boundary(&p));
    CHECK_INT(mcb_req_feed(&p, buf + 33, 1000, &used, &r), MCB_NEED_MORE);
    CHECK_INT(used, 1000);
    CHECK_INT(mcb_req_skip_left(&p), 2000);
    CHECK_INT(mcb_req_feed(&p, buf + 1033, 2000, &used, &r), MCB_NEED_MORE);
    CHECK_INT(mcb_req_skip_left(&p), 0);
    CHECK_TRUE(mcb_req_at_boundary(&p));
    CHECK_INT(mcb_req_feed(&p, buf + 3033, 24, &used, &r), MCB_OK);
    CHECK_INT(r.opcode, MCB_OP_NOOP);
    CHECK_INT(r.opaque, 2);
}

/* --- response table ------------------------------------------------------- */

struct xresp {
    uint8_t op;
    uint16_t status;
    const char *key;
    int key_len; /* 0: strlen(key) */
    uint8_t extlen;
    uint32_t flags;
    uint32_t value_len;
    const char *head;
    size_t head_len;
    uint32_t opaque;
    uint64_t cas;
    bool has_number;
    uint64_t number;
    uint64_t bytes; /* 0 ends the list */
};

#define HEAD(s) .head = s, .head_len = sizeof(s) - 1

struct resp_case {
    const char *name;
    const char *in;
    size_t len;
    struct xresp want[MAX_REQS];
    enum mcb_error err;
    size_t err_at;
    uint64_t skip_left;
    bool mid;
    uint32_t body_max;
};

static const struct resp_case resp_cases[] = {
    { .name = "1.6.18: set",
      IN(A_SET_OK),
      .want = { { .op = 0x01, .opaque = 0x01020304, .cas = 1, .bytes = 24 } } },
    { .name = "1.6.18: addq exists",
      IN(A_ADDQ_EXISTS("\x02")),
      .want = { { .op = 0x12,
                  .status = 2,
                  .value_len = 20,
                  HEAD("Data exists for "),
                  .opaque = 2,
                  .bytes = 44 } } },
    { .name = "1.6.18: getkq hit",
      IN(A_GETKQ_HIT),
      .want = { { .op = 0x0d,
                  .key = "a",
                  .extlen = 4,
                  .value_len = 1,
                  HEAD("1"),
                  .opaque = 5,
                  .cas = 2,
                  .bytes = 30 } } },
    { .name = "1.6.18: get miss",
      IN(A_GET_MISS),
      .want = { { .op = 0x00,
                  .status = 1,
                  .value_len = 9,
                  HEAD("Not found"),
                  .opaque = 6,
                  .bytes = 33 } } },
    { .name = "1.6.18: getk miss echoes the key",
      IN(A_GETK_MISS),
      .want = { { .op = 0x0c, .status = 1, .key = "zz", .opaque = 7, .bytes = 26 } } },
    { .name = "1.6.18: stat terminator",
      IN(A_STAT_END("\x09")),
      .want = { { .op = 0x10, .opaque = 9, .bytes = 24 } } },
    { .name = "1.6.18: stat sizes_disable",
      IN(A_SIZES_DISABLED),
      .want = { { .op = 0x10,
                  .key = "sizes_status",
                  .value_len = 8,
                  HEAD("disabled"),
                  .opaque = 11,
                  .bytes = 44 } } },
    { .name = "1.6.18 -C: stat sizes_enable",
      IN(A_SIZES_ERROR A_SIZES_ERROR2),
      .want = { { .op = 0x10,
                  .key = "sizes_status",
                  .value_len = 5,
                  HEAD("error"),
                  .opaque = 7,
                  .bytes = 41 },
                { .op = 0x10,
                  .key = "sizes_error",
                  .value_len = 20,
                  HEAD("cas_support_disa"),
                  .opaque = 7,
                  .bytes = 55 } } },
    { .name = "1.6.18: increment",
      IN(A_INCR_10),
      .want = { { .op = 0x05,
                  .value_len = 8,
                  HEAD("\0\0\0\0\0\0\0\x0a"),
                  .opaque = 14,
                  .cas = 3,
                  .has_number = true,
                  .number = 10,
                  .bytes = 32 } } },
    { .name = "1.6.18: version",
      IN(A_VERSION),
      .want = { { .op = 0x0b, .value_len = 6, HEAD("1.6.18"), .opaque = 16, .bytes = 30 } } },
    { .name = "get hit, flags, value over the head",
      IN(A_GET_HIT_LONG),
      .want = { { .op = 0x00,
                  .extlen = 4,
                  .flags = 0xcafe,
                  .value_len = 20,
                  HEAD("0123456789abcdef"),
                  .opaque = 17,
                  .cas = 4,
                  .bytes = 48 } } },
    { .name = "1.6.18: set, addq fails, noop (one stream)",
      IN(A_SET_OK A_ADDQ_EXISTS("\x02") A_NOOP("\x03")),
      .want = { { .op = 0x01, .opaque = 0x01020304, .cas = 1, .bytes = 24 },
                { .op = 0x12,
                  .status = 2,
                  .value_len = 20,
                  HEAD("Data exists for "),
                  .opaque = 2,
                  .bytes = 44 },
                { .op = 0x0a, .opaque = 3, .bytes = 24 } } },
    { .name = "1.6.18: stat, several",
      IN(A_STAT_PID A_STAT_UPTIME A_STAT_END("\x1e")),
      .want = { { .op = 0x10,
                  .key = "pid",
                  .value_len = 5,
                  HEAD("15985"),
                  .opaque = 30,
                  .bytes = 32 },
                { .op = 0x10,
                  .key = "uptime",
                  .value_len = 1,
                  HEAD("5"),
                  .opaque = 30,
                  .bytes = 31 },
                { .op = 0x10, .opaque = 30, .bytes = 24 } } },
    { .name = "request magic", IN(R_NOOP("\x01")), .err = MCB_ERR_MAGIC, .err_at = 1 },
    { .name = "bad magic after a response",
      IN(A_NOOP("\x03") "\x82"),
      .want = { { .op = 0x0a, .opaque = 3, .bytes = 24 } },
      .err = MCB_ERR_MAGIC,
      .err_at = 25 },
    { .name = "body shorter than the key",
      IN("\x81\x0c\x00\x03"
         "\x00\x00\x00\x01"
         "\x00\x00\x00\x02" H0 CAS0 "abc"),
      .err = MCB_ERR_BODY_SHORT,
      .err_at = 24 },
    { .name = "body over a bound of 64",
      IN("\x81\x00\x00\x00"
         "\x04\x00\x00\x00"
         "\x00\x00\x00\x41" H0 CAS0 H0),
      .err = MCB_ERR_BODY_LIMIT,
      .err_at = 24,
      .body_max = 64 },
    { .name = "value head cut: no response yet",
      IN("\x81\x00\x00\x00"
         "\x04\x00\x00\x00"
         "\x00\x00\x00\x18"
         "\x00\x00\x00\x11"
         "\x00\x00\x00\x00\x00\x00\x00\x04"
         "\x00\x00\xca\xfe"
         "0123456789"),
      .mid = true },
    { .name = "value cut after the head",
      IN("\x81\x00\x00\x00"
         "\x04\x00\x00\x00"
         "\x00\x00\x00\x18"
         "\x00\x00\x00\x11"
         "\x00\x00\x00\x00\x00\x00\x00\x04"
         "\x00\x00\xca\xfe"
         "0123456789abcdefX"),
      .want = { { .op = 0x00,
                  .extlen = 4,
                  .flags = 0xcafe,
                  .value_len = 20,
                  HEAD("0123456789abcdef"),
                  .opaque = 17,
                  .cas = 4,
                  .bytes = 48 } },
      .skip_left = 3,
      .mid = true },
};

struct got_resp {
    struct mcb_response r;
    char key[MCB_KEY_MAX + 1];
    uint8_t head[MCB_VALUE_HEAD];
};

struct resp_run {
    struct got_resp resps[GOT_MAX];
    size_t n;
    bool broken;
    enum mcb_error err;
    size_t consumed;
    bool boundary;
    uint64_t skip_left;
};

static void run_resps(const char *ctx, const char *in, size_t len, const size_t *cuts, size_t ncuts,
                      uint32_t body_max, struct resp_run *out)
{
    static struct mcb_resp_parser p;
    size_t start = 0;

    memset(out, 0, sizeof *out);
    mcb_resp_init(&p, body_max);
    for (size_t c = 0; c <= ncuts; c++) {
        size_t end = c < ncuts ? cuts[c] : len, n = end - start, pos = 0;
        char *chunk = malloc(n ? n : 1);
        memcpy(chunk, in + start, n);
        for (;;) {
            struct mcb_response r;
            size_t used = (size_t)-1;
            enum mcb_result res = mcb_resp_feed(&p, chunk + pos, n - pos, &used, &r);
            if (used > n - pos) {
                fprintf(stderr, "FAIL %s: consumed %zu of %zu\n", ctx, used, n - pos);
                out->broken = true;
                break;
            }
            pos += used;
            out->consumed += used;
            if (res == MCB_ERROR) {
                size_t again = 1;
                out->err = mcb_resp_error(&p);
                if (mcb_resp_feed(&p, chunk + pos, n - pos, &again, &r) != MCB_ERROR ||
                    again != 0 || out->err == MCB_ERR_NONE) {
                    fprintf(stderr, "FAIL %s: error not sticky\n", ctx);
                    out->broken = true;
                }
                break;
            }
            if (res == MCB_NEED_MORE) {
                if (pos != n) {
                    fprintf(stderr, "FAIL %s: need-more left %zu bytes\n", ctx, n - pos);
                    out->broken = true;
                }
                break;
            }
            if (used == 0) {
                fprintf(stderr, "FAIL %s: a response from no bytes\n", ctx);
                out->broken = true;
                break;
            }
            if (out->n < GOT_MAX) {
                struct got_resp *g = &out->resps[out->n++];
                g->r = r;
                memcpy(g->key, r.key, r.key_kept);
                g->key[r.key_kept] = '\0';
                memcpy(g->head, r.value_head, r.value_head_len);
            }
        }
        free(chunk);
        start = end;
        if (out->err != MCB_ERR_NONE || out->broken)
            break;
    }
    out->boundary = mcb_resp_at_boundary(&p);
    out->skip_left = mcb_resp_skip_left(&p);
}

static bool resp_equal(const char *ctx, size_t i, const struct got_resp *g, const struct xresp *w)
{
    const struct mcb_response *r = &g->r;
    const char *wkey = w->key ? w->key : "";
    size_t wkey_len = w->key_len ? (size_t)w->key_len : strlen(wkey);
    bool ok = true;

    DIFF("opcode", r->opcode, w->op);
    DIFF("status", r->status, w->status);
    if (strcmp(g->key, wkey) != 0) {
        fprintf(stderr, "FAIL %s: response %zu: key \"%s\", want \"%s\"\n", ctx, i, g->key, wkey);
        ok = false;
    }
    DIFF("key_len", r->key_len, wkey_len);
    DIFF("key_kept", r->key_kept, strlen(wkey));
    DIFF("key_truncated", r->key_truncated, wkey_len > MCB_KEY_MAX);
    DIFF("extlen", r->extlen, w->extlen);
    DIFF("flags", r->flags, w->flags);
    DIFF("value_len", r->value_len, w->value_len);
    DIFF("body_len", r->body_len, wkey_len + w->extlen + w->value_len);
    DIFF("opaque", r->opaque, w->opaque);
    DIFF("cas", r->cas, w->cas);
    DIFF("has_number", r->has_number, w->has_number);
    DIFF("number", r->number, w->number);
    DIFF("bytes", r->bytes, w->bytes);
    if (r->value_head_len != w->head_len ||
        (w->head_len > 0 && memcmp(g->head, w->head, w->head_len) != 0)) {
        CHECK_MEM(g->head, r->value_head_len, w->head, w->head_len, "%s: response %zu: head", ctx,
                  i);
        ok = false;
    }
    return ok;
}

static size_t xresp_count(const struct xresp *w)
{
    size_t n = 0;
    while (n < MAX_REQS && w[n].bytes != 0)
        n++;
    return n;
}

static bool resp_run_ok(const char *ctx, const struct resp_run *run, const struct xresp *want,
                        size_t nwant, const struct resp_case *c)
{
    bool ok = !run->broken;

    if (run->n != nwant) {
        fprintf(stderr, "FAIL %s: %zu responses, want %zu\n", ctx, run->n, nwant);
        ok = false;
    }
    for (size_t i = 0; i < run->n && i < nwant; i++)
        ok = resp_equal(ctx, i, &run->resps[i], &want[i]) && ok;
    if (run->err != c->err) {
        fprintf(stderr, "FAIL %s: error %s, want %s\n", ctx, mcb_error_name(run->err),
                mcb_error_name(c->err));
        ok = false;
    }
    if (run->consumed != (c->err ? c->err_at : c->len)) {
        fprintf(stderr, "FAIL %s: consumed %zu, want %zu\n", ctx, run->consumed,
                c->err ? c->err_at : c->len);
        ok = false;
    }
    if (!c->err && (run->boundary != !c->mid || run->skip_left != c->skip_left)) {
        fprintf(stderr, "FAIL %s: boundary %d skip_left %llu, want %d %llu\n", ctx, run->boundary,
                (unsigned long long)run->skip_left, !c->mid, (unsigned long long)c->skip_left);
        ok = false;
    }
    return ok;
}

static void resp_all_splits(const struct resp_case *c, const struct xresp *want, size_t nwant)
{
    static struct resp_run run;
    static size_t cuts[4096];
    uint32_t body_max = c->body_max ? c->body_max : MCB_BODY_MAX_DEFAULT;
    char ctx[200];

    snprintf(ctx, sizeof ctx, "%s (whole)", c->name);
    run_resps(ctx, c->in, c->len, NULL, 0, body_max, &run);
    CHECK(resp_run_ok(ctx, &run, want, nwant, c), "%s", ctx);
    for (size_t at = 0; at <= c->len; at++) {
        snprintf(ctx, sizeof ctx, "%s (split at %zu)", c->name, at);
        run_resps(ctx, c->in, c->len, &at, 1, body_max, &run);
        CHECK(resp_run_ok(ctx, &run, want, nwant, c), "%s", ctx);
    }
    if (c->len <= sizeof cuts / sizeof cuts[0]) {
        for (size_t i = 0; i < c->len; i++)
            cuts[i] = i + 1;
        snprintf(ctx, sizeof ctx, "%s (byte by byte)", c->name);
        run_resps(ctx, c->in, c->len, cuts, c->len, body_max, &run);
        CHECK(resp_run_ok(ctx, &run, want, nwant, c), "%s", ctx);
    }
}

static void test_response_table(void)
{
    static char buf[8192];
    static struct xresp want[GOT_MAX];
    struct resp_case batch = { .name = "batch of all response rows" };
    size_t len = 0, n = 0;

    for (size_t i = 0; i < sizeof resp_cases / sizeof resp_cases[0]; i++) {
        const struct resp_case *c = &resp_cases[i];
        size_t k = xresp_count(c->want);
        resp_all_splits(c, c->want, k);
        if (c->err || c->mid || c->body_max || len + c->len > sizeof buf || n + k > GOT_MAX)
            continue;
        memcpy(buf + len, c->in, c->len);
        len += c->len;
        memcpy(want + n, c->want, k * sizeof want[0]);
        n += k;
    }
    CHECK(n >= 15, "the batch holds %zu responses", n);
    batch.in = buf;
    batch.len = len;
    resp_all_splits(&batch, want, n);
}

static void test_response_long_key(void)
{
    static char buf[1024], k250[MCB_KEY_MAX + 1];
    struct resp_case c = { .name = "getk hit, key of 260 bytes", .in = buf };
    size_t n;

    memset(k250, 'k', MCB_KEY_MAX);
    n = put_header(buf, MCB_MAGIC_RES, MCB_OP_GETK, 260, 4, 4 + 260 + 2, 9);
    n += put_fill(buf + n, 0, 4);
    n += put_fill(buf + n, 'k', 260);
    n += put_fill(buf + n, 'v', 2);
    c.len = n;
    c.want[0] = (struct xresp){ .op = 0x0c,
                                .key = k250,
                                .key_len = 260,
                                .extlen = 4,
                                .value_len = 2,
                                HEAD("vv"),
                                .opaque = 9,
                                .bytes = 290 };
    resp_all_splits(&c, c.want, 1);
}

/* --- pairing ---------------------------------------------------------------- */

struct xev {
    int req; /* 1-based index of the request; 0 ends the list */
    enum mcb_outcome out;
    uint16_t status;
    uint32_t responses;
    bool ambiguous;
};

#define MAX_EVENTS 12

struct pair_case {
    const char *name;
    const char *reqs;
    size_t reqs_len;
    const char *resps;
    size_t resps_len;
    bool close;    /* the connection ends after the responses */
    int desync_at; /* 1-based response that pairs with nothing; 0: none */
    struct xev want[MAX_EVENTS];
};

#define REQS(s) .reqs = s, .reqs_len = sizeof(s) - 1
#define RESPS(s) .resps = s, .resps_len = sizeof(s) - 1
#define ANS(i, st, n) \
    { \
        .req = i, .out = MCB_ANSWERED, .status = st, .responses = n \
    }
#define SOK(i) \
    { \
        .req = i, .out = MCB_SILENT_OK \
    }
#define SMISS(i) \
    { \
        .req = i, .out = MCB_SILENT_MISS, .status = MCB_STATUS_KEY_ENOENT \
    }
#define LOST(i, n) \
    { \
        .req = i, .out = MCB_UNANSWERED, .responses = n \
    }

static const struct pair_case pair_cases[] = {
    { .name = "quiet sets, then noop: all succeeded",
      REQS(R_SETQ_A1 R_SETQ_B2 R_SETQ_C3 R_NOOP("\x09")),
      RESPS(A_NOOP("\x09")),
      .want = { SOK(1), SOK(2), SOK(3), ANS(4, 0, 1) } },
    { .name = "1.6.18: set, setq, addq fails, noop",
      REQS(R_SET R_SETQ_A1 R_ADDQ_A2 R_NOOP("\x03")),
      RESPS(A_SET_OK A_ADDQ_EXISTS("\x02") A_NOOP("\x03")),
      .want = { ANS(1, 0, 1), SOK(2), ANS(3, MCB_STATUS_KEY_EEXISTS, 1), ANS(4, 0, 1) } },
    { .name = "a failing setq in the middle, a getq hit",
      REQS(R_SETQ_A1 R_SETQ_B2 R_SETQ_C3 R_GETQ_X4 R_NOOP("\x05")),
      RESPS(A_SETQ_E2BIG A_GETQ_HIT A_NOOP("\x05")),
      .want = { SOK(1), ANS(2, MCB_STATUS_E2BIG, 1), SOK(3), ANS(4, 0, 1), ANS(5, 0, 1) } },
    { .name = "1.6.18: getq miss, getkq hit, get miss, getk miss",
      REQS(R_GETQ_ZZ4 R_GETKQ_A5 R_GET_ZZ6 R_GETK_ZZ7),
      RESPS(A_GETKQ_HIT A_GET_MISS A_GETK_MISS),
      .want = { SMISS(1), ANS(2, 0, 1), ANS(3, 1, 1), ANS(4, 1, 1) } },
    { .name = "getq without an answer yet: waits", REQS(R_GETQ_ZZ4), RESPS("") },
    { .name = "1.6.18: stat detail on, stat bogus, stat sizes_disable",
      REQS(R_STAT_DON9 R_STAT_BOGUS10 R_STAT_SIZES_DIS("\x0b")),
      RESPS(A_STAT_END("\x09") A_STAT_BOGUS A_SIZES_DISABLED),
      .want = { ANS(1, 0, 1), ANS(2, MCB_STATUS_KEY_ENOENT, 1), ANS(3, 0, 1) } },
    { .name = "stat: responses until the empty key",
      REQS(R_STAT R_NOOP("\x05")),
      RESPS(A_STAT_PID A_STAT_UPTIME A_STAT_END("\x1e") A_NOOP("\x05")),
      .want = { ANS(1, 0, 3), ANS(2, 0, 1) } },
    { .name = "stat between quiet sets",
      REQS(R_SETQ_A1 R_STAT R_SETQ_B2 R_NOOP("\x05")),
      RESPS(A_STAT_PID A_STAT_END("\x1e") A_NOOP("\x05")),
      .want = { SOK(1), ANS(2, 0, 2), SOK(3), ANS(4, 0, 1) } },
    { .name = "stat not finished: waits", REQS(R_STAT), RESPS(A_STAT_PID A_STAT_UPTIME) },
    { .name = "stat not finished when the connection ends",
      REQS(R_STAT),
      RESPS(A_STAT_PID A_STAT_UPTIME),
      .close = true,
      .want = { LOST(1, 2) } },
    { .name = "1.6.18 -C: stat sizes_enable: status error, then the error",
      REQS(R_STAT_SIZES_EN("\x07") R_NOOP("\x08")),
      RESPS(A_SIZES_ERROR A_SIZES_ERROR2 A_NOOP("\x08")),
      .want = { ANS(1, 0, 2), ANS(2, 0, 1) } },
    { .name = "1.6.18: replace miss, appendq fails, incr, deleteq fails, version",
      REQS(R_REPLACE_NX12 R_APPENDQ_NX13 R_INCR_CNT14 R_DELETEQ_NX15 R_VERSION16),
      RESPS(A_REPLACE_MISS A_APPENDQ_NOT_STORED A_INCR_10 A_DELETEQ_MISS A_VERSION),
      .want = { ANS(1, MCB_STATUS_KEY_ENOENT, 1), ANS(2, MCB_STATUS_NOT_STORED, 1), ANS(3, 0, 1),
                ANS(4, MCB_STATUS_KEY_ENOENT, 1), ANS(5, 0, 1) } },
    { .name = "1.6.18: touch miss, gatq miss, gatkq hit, noop",
      REQS(R_TOUCH_NX90 R_GATQ_NX91 R_GATKQ_T92 R_NOOP("\x5d")),
      RESPS(A_TOUCH_MISS A_GATKQ_HIT A_NOOP("\x5d")),
      .want = { ANS(1, MCB_STATUS_KEY_ENOENT, 1), SMISS(2), ANS(3, 0, 1), ANS(4, 0, 1) } },
    /* 1.6.18 answers both addq: the first goes to the earliest candidate */
    { .name = "1.6.18: quiet writes sharing opcode and opaque",
      REQS(R_SETQ_S0 R_ADDQ_S0 R_ADDQ_S0 R_NOOP("\x09")),
      RESPS(A_ADDQ_EXISTS("\x00") A_ADDQ_EXISTS("\x00") A_NOOP("\x09")),
      .want = { SOK(1),
                { .req = 2, .out = MCB_ANSWERED, .status = 2, .responses = 1, .ambiguous = true },
                ANS(3, 2, 1),
                ANS(4, 0, 1) } },
    { .name = "1.6.18: setq with bad extras is answered (EINVAL)",
      REQS(R_SETQ_A1 R_SETQ_EXT4),
      RESPS(A_SETQ_EINVAL),
      .want = { SOK(1), ANS(2, MCB_STATUS_EINVAL, 1) } },
    { .name = "1.6.18: unknown opcode, noop",
      REQS(R_UNKNOWN "PAD45" R_NOOP("\x29")),
      RESPS(A_UNKNOWN A_NOOP("\x29")),
      .want = { ANS(1, MCB_STATUS_UNKNOWN_COMMAND, 1), ANS(2, 0, 1) } },
    { .name = "1.6.18: addq fails, quitq, close",
      REQS(R_SETQ_A1 R_ADDQ_A2 R_QUITQ("\x03")),
      RESPS(A_ADDQ_EXISTS("\x02")),
      .close = true,
      .want = { SOK(1), ANS(2, MCB_STATUS_KEY_EEXISTS, 1), SOK(3) } },
    { .name = "getq, quitq, close",
      REQS(R_GETQ_ZZ4 R_QUITQ("\x03")),
      RESPS(""),
      .close = true,
      .want = { SMISS(1), SOK(2) } },
    { .name = "connection lost, no quitq",
      REQS(R_SETQ_A1 R_GET_G2),
      RESPS(""),
      .close = true,
      .want = { LOST(1, 0), LOST(2, 0) } },
    { .name = "noop answered with another opaque",
      REQS(R_NOOP("\x08")),
      RESPS(A_NOOP("\x09")),
      .desync_at = 1 },
    { .name = "a response before any request", REQS(""), RESPS(A_NOOP("\x09")), .desync_at = 1 },
    { .name = "a get cannot be silent",
      REQS(R_GET_G2 R_NOOP("\x09")),
      RESPS(A_NOOP("\x09")),
      .desync_at = 1 },
    { .name = "events before a desync still come",
      REQS(R_SETQ_A1 R_NOOP("\x03") R_NOOP("\x05")),
      RESPS(A_NOOP("\x03") A_NOOP("\x09")),
      .desync_at = 2,
      .want = { SOK(1), ANS(2, 0, 1) } },
};

struct pair_run {
    struct mcb_event ev[64];
    size_t nev;
    int desync_at;
    size_t pushed;
    bool broken;
};

static void take_events(struct mcb_pairing *q, struct pair_run *run)
{
    struct mcb_event ev;
    while (mcb_pairing_next(q, &ev))
        if (run->nev < 64)
            run->ev[run->nev++] = ev;
}

/* Requests parsed whole and pushed, responses fed split at `at` (len: not
 * split); events taken after each response (eager) or at the end. */
static void run_pairing(const struct pair_case *c, size_t at, bool eager, struct pair_run *run)
{
    static struct mcb_req_parser rp;
    static struct mcb_resp_parser sp;
    static struct mcb_pending slots[32];
    struct mcb_pairing q;
    size_t pos = 0, used, nresp = 0;
    size_t bounds[2][2] = { { 0, at }, { at, c->resps_len } };

    memset(run, 0, sizeof *run);
    mcb_pairing_init(&q, slots, 32);
    mcb_req_init(&rp, MCB_BODY_MAX_DEFAULT);
    while (pos < c->reqs_len) {
        struct mcb_request r;
        if (mcb_req_feed(&rp, c->reqs + pos, c->reqs_len - pos, &used, &r) != MCB_OK) {
            pos += used;
            break;
        }
        pos += used;
        if (mcb_pairing_push(&q, r.opcode, r.opaque, r.reply, ++run->pushed) != MCB_OK)
            run->broken = true;
    }
    mcb_resp_init(&sp, MCB_BODY_MAX_DEFAULT);
    for (int part = 0; part < 2 && !run->desync_at; part++) {
        size_t n = bounds[part][1] - bounds[part][0];
        char *chunk = malloc(n ? n : 1);
        memcpy(chunk, c->resps + bounds[part][0], n);
        pos = 0;
        for (;;) {
            struct mcb_response r;
            enum mcb_result res = mcb_resp_feed(&sp, chunk + pos, n - pos, &used, &r);
            pos += used;
            if (res != MCB_OK) {
                if (res == MCB_ERROR)
                    run->broken = true;
                break;
            }
            nresp++;
            if (mcb_pairing_response(&q, &r) != MCB_OK) {
                run->desync_at = (int)nresp;
                break;
            }
            if (eager)
                take_events(&q, run);
        }
        free(chunk);
    }
    if (c->close)
        mcb_pairing_close(&q);
    take_events(&q, run);
    if (mcb_pairing_count(&q) != run->pushed - run->nev)
        run->broken = true;
}

static bool pair_run_ok(const char *ctx, const struct pair_run *run, const struct pair_case *c)
{
    size_t nwant = 0;
    bool ok = !run->broken;

    while (nwant < MAX_EVENTS && c->want[nwant].req != 0)
        nwant++;
    if (run->broken)
        fprintf(stderr, "FAIL %s: broken run\n", ctx);
    if (run->desync_at != c->desync_at) {
        fprintf(stderr, "FAIL %s: desync at response %d, want %d\n", ctx, run->desync_at,
                c->desync_at);
        ok = false;
    }
    if (run->nev != nwant) {
        fprintf(stderr, "FAIL %s: %zu events, want %zu\n", ctx, run->nev, nwant);
        ok = false;
    }
    for (size_t i = 0; i < run->nev && i < nwant; i++) {
        const struct mcb_event *g = &run->ev[i];
        const struct xev *w = &c->want[i];
        if (g->cookie != (uint64_t)w->req || g->outcome != w->out || g->status != w->status ||
            g->responses != w->responses || g->ambiguous != w->ambiguous) {
            fprintf(stderr,
                    "FAIL %s: event %zu: request %llu %s status 0x%04x responses %u%s, "
                    "want request %d %s status 0x%04x responses %u%s\n",
                    ctx, i, (unsigned long long)g->cookie, mcb_outcome_name(g->outcome), g->status,
                    g->responses, g->ambiguous ? " ambiguous" : "", w->req,
                    mcb_outcome_name(w->out), w->status, w->responses,
                    w->ambiguous ? " ambiguous" : "");
            ok = false;
        }
    }
    return ok;
}

static void test_pairing_table(void)
{
    static struct pair_run run;
    char ctx[200];

    for (size_t i = 0; i < sizeof pair_cases / sizeof pair_cases[0]; i++) {
        const struct pair_case *c = &pair_cases[i];
        for (size_t at = 0; at <= c->resps_len; at++) {
            for (int eager = 0; eager < 2; eager++) {
                snprintf(ctx, sizeof ctx, "%s (split at %zu, %s)", c->name, at,
                         eager ? "eager" : "lazy");
                run_pairing(c, at, eager, &run);
                CHECK(pair_run_ok(ctx, &run, c), "%s", ctx);
            }
        }
    }
}

static struct mcb_response resp_of(uint8_t op, uint32_t opaque, uint16_t status)
{
    struct mcb_response r;
    memset(&r, 0, sizeof r);
    r.opcode = op;
    r.opaque = opaque;
    r.status = status;
    r.key = "";
    return r;
}

static void test_pairing_bounds(void)
{
    struct mcb_pending slots[3];
    struct mcb_pairing q;
    struct mcb_event ev;
    struct mcb_response r;
    bool ok = true;

    /* full: the bound holds, taking an event frees a slot */
    mcb_pairing_init(&q, slots, 2);
    CHECK_INT(mcb_pairing_push(&q, MCB_OP_SETQ, 1, MCB_REPLY_ON_ERROR, 1), MCB_OK);
    CHECK_INT(mcb_pairing_push(&q, MCB_OP_NOOP, 2, MCB_REPLY_ONE, 2), MCB_OK);
    CHECK_INT(mcb_pairing_push(&q, MCB_OP_NOOP, 3, MCB_REPLY_ONE, 3), MCB_ERROR);
    CHECK_INT(mcb_pairing_count(&q), 2);
    CHECK_TRUE(!mcb_pairing_next(&q, &ev));
    /* a response that pairs with nothing leaves the queue as it was */
    r = resp_of(MCB_OP_NOOP, 9, 0);
    CHECK_INT(mcb_pairing_response(&q, &r), MCB_ERROR);
    CHECK_INT(mcb_pairing_count(&q), 2);
    CHECK_TRUE(!mcb_pairing_next(&q, &ev));
    r = resp_of(MCB_OP_NOOP, 2, 0);
    CHECK_INT(mcb_pairing_response(&q, &r), MCB_OK);
    CHECK_INT(mcb_pairing_count(&q), 2); /* resolved, not taken: still held */
    CHECK_INT(mcb_pairing_push(&q, MCB_OP_NOOP, 3, MCB_REPLY_ONE, 3), MCB_ERROR);
    CHECK_TRUE(mcb_pairing_next(&q, &ev));
    CHECK_INT(ev.cookie, 1);
    CHECK_INT(ev.outcome, MCB_SILENT_OK);
    CHECK_INT(mcb_pairing_push(&q, MCB_OP_NOOP, 3, MCB_REPLY_ONE, 3), MCB_OK);
    CHECK_TRUE(mcb_pairing_next(&q, &ev));
    CHECK_INT(ev.cookie, 2);
    CHECK_INT(ev.outcome, MCB_ANSWERED);
    CHECK_TRUE(!mcb_pairing_next(&q, &ev));

    /* the ring wraps many times */
    mcb_pairing_init(&q, slots, 3);
    for (uint32_t i = 0; i < 100 && ok; i++) {
        ok = mcb_pairing_push(&q, MCB_OP_SETQ, i, MCB_REPLY_ON_ERROR, 2 * i) == MCB_OK &&
             mcb_pairing_push(&q, MCB_OP_GETQ, i, MCB_REPLY_ON_HIT, 2 * i + 1) == MCB_OK;
        r = resp_of(i % 2 ? MCB_OP_SETQ : MCB_OP_GETQ, i, i % 2 ? MCB_STATUS_NOT_STORED : 0);
        ok = ok && mcb_pairing_response(&q, &r) == MCB_OK;
        if (i % 2) {
            /* the setq failed; the getq still waits */
            ok = ok && mcb_pairing_next(&q, &ev) && ev.cookie == 2 * i &&
                 ev.outcome == MCB_ANSWERED && ev.status == MCB_STATUS_NOT_STORED &&
                 !mcb_pairing_next(&q, &ev);
            r = resp_of(MCB_OP_GETQ, i, 0);
            ok = ok && mcb_pairing_response(&q, &r) == MCB_OK;
        } else {
            ok = ok && mcb_pairing_next(&q, &ev) && ev.cookie == 2 * i &&
                 ev.outcome == MCB_SILENT_OK;
        }
        ok = ok && mcb_pairing_next(&q, &ev) && ev.cookie == 2 * i + 1 &&
             ev.outcome == MCB_ANSWERED && mcb_pairing_count(&q) == 0;
    }
    CHECK(ok, "ring of 3 slots, 100 rounds");
}

/* --- names ------------------------------------------------------------------ */

static void test_names(void)
{
    int known = 0, quiet = 0, writes = 0;
    bool ok = true;

    for (int op = 0; op < 256; op++) {
        uint8_t o = (uint8_t)op, b = mcb_opcode_base(o);
        known += mcb_opcode_known(o);
        quiet += mcb_opcode_quiet(o);
        writes += mcb_opcode_is_write(o);
        if (mcb_opcode_known(o) != (mcb_opcode_name(o) != NULL))
            ok = false;
        /* a quiet opcode's twin is a known, non-quiet one */
        if (mcb_opcode_quiet(o) && (!mcb_opcode_known(b) || mcb_opcode_quiet(b) || b == o))
            ok = false;
        if (mcb_opcode_is_write(o) != mcb_opcode_is_write(b))
            ok = false;
    }
    CHECK(ok, "opcode names, twins and write flags agree");
    CHECK_INT(known, 35);
    CHECK_INT(quiet, 14);
    CHECK_INT(writes, 10);
    CHECK_STR(mcb_opcode_name(0x11), "setq");
    CHECK_STR(mcb_opcode_name(0x24), "gatkq");
    CHECK_TRUE(mcb_opcode_name(0x1b) == NULL);
    CHECK_TRUE(mcb_opcode_name(0x30) == NULL);
    CHECK_INT(mcb_opcode_base(MCB_OP_STAT), MCB_OP_STAT);
    /* protocol_binary.h / dispatch_bin_command: each quiet opcode's twin */
    static const uint8_t twins[][2] = {
        { MCB_OP_GETQ, MCB_OP_GET },
        { MCB_OP_GETKQ, MCB_OP_GETK },
        { MCB_OP_SETQ, MCB_OP_SET },
        { MCB_OP_ADDQ, MCB_OP_ADD },
        { MCB_OP_REPLACEQ, MCB_OP_REPLACE },
        { MCB_OP_DELETEQ, MCB_OP_DELETE },
        { MCB_OP_INCREMENTQ, MCB_OP_INCREMENT },
        { MCB_OP_DECREMENTQ, MCB_OP_DECREMENT },
        { MCB_OP_QUITQ, MCB_OP_QUIT },
        { MCB_OP_FLUSHQ, MCB_OP_FLUSH },
        { MCB_OP_APPENDQ, MCB_OP_APPEND },
        { MCB_OP_PREPENDQ, MCB_OP_PREPEND },
        { MCB_OP_GATQ, MCB_OP_GAT },
        { MCB_OP_GATKQ, MCB_OP_GATK },
    };
    for (size_t i = 0; i < sizeof twins / sizeof twins[0]; i++)
        CHECK(mcb_opcode_base(twins[i][0]) == twins[i][1], "base(0x%02x) = 0x%02x, want 0x%02x",
              twins[i][0], mcb_opcode_base(twins[i][0]), twins[i][1]);

    CHECK_STR(mcb_status_name(0x0000), "SUCCESS");
    CHECK_STR(mcb_status_name(0x0001), "KEY_ENOENT");
    CHECK_STR(mcb_status_name(0x0002), "KEY_EEXISTS");
    CHECK_STR(mcb_status_name(0x0005), "NOT_STORED");
    CHECK_STR(mcb_status_name(0x0081), "UNKNOWN_COMMAND");
    CHECK_STR(mcb_status_name(0x0082), "ENOMEM");
    CHECK_TRUE(mcb_status_name(0x0007) == NULL);

    static const struct {
        uint8_t op;
        uint16_t status;
        const char *label;
    } labels[] = {
        { MCB_OP_SET, 0, "STORED" },
        { MCB_OP_SETQ, 0, "STORED" },
        { MCB_OP_ADDQ, 0, "STORED" },
        { MCB_OP_APPENDQ, 0, "STORED" },
        { MCB_OP_PREPEND, 0, "STORED" },
        { MCB_OP_DELETE, 0, "DELETED" },
        { MCB_OP_DELETEQ, 0, "DELETED" },
        { MCB_OP_TOUCH, 0, "TOUCHED" },
        { MCB_OP_GAT, 0, "VALUE" },
        { MCB_OP_GETKQ, 0, "VALUE" },
        { MCB_OP_INCREMENT, 0, "NUMBER" },
        { MCB_OP_DECREMENTQ, 0, "NUMBER" },
        { MCB_OP_VERSION, 0, "VERSION" },
        { MCB_OP_STAT, 0, "END" },
        { MCB_OP_NOOP, 0, "OK" },
        { MCB_OP_FLUSHQ, 0, "OK" },
        { MCB_OP_REPLACE, MCB_STATUS_KEY_ENOENT, "NOT_FOUND" },
        { MCB_OP_SET, MCB_STATUS_KEY_ENOENT, "NOT_FOUND" },
        { MCB_OP_ADDQ, MCB_STATUS_KEY_EEXISTS, "EXISTS" },
        { MCB_OP_SET, MCB_STATUS_KEY_EEXISTS, "EXISTS" },
        { MCB_OP_APPENDQ, MCB_STATUS_NOT_STORED, "NOT_STORED" },
        { MCB_OP_SETQ, MCB_STATUS_E2BIG, "SERVER_ERROR E2BIG" },
        { MCB_OP_SET, MCB_STATUS_EINVAL, "CLIENT_ERROR EINVAL" },
        { MCB_OP_INCREMENT, MCB_STATUS_DELTA_BADVAL, "CLIENT_ERROR DELTA_BADVAL" },
        { MCB_OP_SET, MCB_STATUS_UNKNOWN_COMMAND, "ERROR" },
        { MCB_OP_SET, MCB_STATUS_ENOMEM, "SERVER_ERROR ENOMEM" },
        { MCB_OP_SET, MCB_STATUS_AUTH_ERROR, "SERVER_ERROR AUTH_ERROR" },
        { MCB_OP_SET, 0x0007, "SERVER_ERROR UNKNOWN_STATUS" },
        { 0x50, 0, "OK" },
    };
    for (size_t i = 0; i < sizeof labels / sizeof labels[0]; i++)
        CHECK(!strcmp(mcb_answer_label(labels[i].op, labels[i].status), labels[i].label),
              "label(0x%02x, 0x%04x) = %s, want %s", labels[i].op, labels[i].status,
              mcb_answer_label(labels[i].op, labels[i].status), labels[i].label);

    CHECK_STR(mcb_error_name(MCB_ERR_MAGIC), "bad magic");
    CHECK_STR(mcb_error_name(MCB_ERR_BODY_SHORT), "body length smaller than key + extras");
    CHECK_STR(mcb_error_name(MCB_ERR_BODY_LIMIT), "body length above the bound");
    CHECK_STR(mcb_outcome_name(MCB_SILENT_MISS), "silent_miss");
    CHECK_STR(mcb_outcome_name(MCB_UNANSWERED), "unanswered");
}

int main(void)
{
    test_request_table();
    test_request_batch();
    test_long_keys();
    test_long_value();
    test_response_table();
    test_response_long_key();
    test_pairing_table();
    test_pairing_bounds();
    test_names();
    return check_done("test_mc_binary");
}
