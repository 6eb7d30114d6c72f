/* retain: the pure pieces -- the delete planner (size, age, keeping up,
 * vacuum), the step size it adapts, and the --db pattern. */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "record/retain.h"

#define MB (UINT64_C(1) << 20)

static struct retain_obs obs(uint64_t pages, uint64_t free_pages, int64_t oldest_ns)
{
    struct retain_obs o = { .now_ns = INT64_C(1000) * 1000000000, .page_size = 4096 };
    o.page_count = pages;
    o.free_pages = free_pages;
    o.oldest_ns = oldest_ns;
    return o;
}

static void test_size(void)
{
    struct retain_cfg cfg = { .max_bytes = 8 * MB };
    struct retain_planner p;
    struct retain_plan pl;
    retain_planner_init(&p);
    CHECK_INT(retain_slack(8 * MB, 4096), 1 * MB);
    CHECK_INT(retain_slack(1 * MB, 4096), 128 * 1024);
    CHECK_INT(retain_slack(64 * 4096, 4096), 16 * 4096);      /* at least 16 pages */
    CHECK_INT(retain_slack(UINT64_C(1) << 40, 4096), 8 * MB); /* at most 8 MiB */
    /* under max - slack: nothing */
    struct retain_obs o = obs(7 * MB / 4096, 0, 5);
    CHECK_TRUE(!retain_plan(&cfg, &p, &o, &pl));
    /* in use past it: delete down to max - 2 slack, bounded by the step */
    o = obs(7 * MB / 4096 + 10, 0, 5);
    CHECK_TRUE(retain_plan(&cfg, &p, &o, &pl));
    CHECK_TRUE(pl.over_size);
    CHECK_INT(pl.cutoff_ns, INT64_MAX);
    CHECK_INT(pl.rows, RETAIN_STEP_START); /* ~1 MiB / 36 bytes is more than a step */
    /* free pages count as room: the same file with a freelist is fine */
    o = obs(7 * MB / 4096 + 10, 20, 5);
    CHECK_TRUE(!retain_plan(&cfg, &p, &o, &pl));
    /* just over: the rows that free the difference */
    p.bytes_per_row = 4096;
    o = obs(7 * MB / 4096 + 1, 0, 5);
    CHECK_TRUE(retain_plan(&cfg, &p, &o, &pl));
    CHECK_INT(pl.rows, 1 * MB / 4096 + 1);
    /* keeping up: 5/4 of the rows written since the last step, whatever
     * the step size learned */
    p.bytes_per_row = 1;
    p.step_rows = RETAIN_STEP_MIN;
    o = obs(7 * MB / 4096 + 10, 0, 5);
    o.rows_in = 4096;
    CHECK_TRUE(retain_plan(&cfg, &p, &o, &pl));
    CHECK_INT(pl.rows, 5120);
    o = obs(100 * MB / 4096, 0, 5); /* far over: bounded by RETAIN_STEP_MAX */
    o.rows_in = 1000000;
    CHECK_TRUE(retain_plan(&cfg, &p, &o, &pl));
    CHECK_INT(pl.rows, RETAIN_STEP_MAX);
    /* no rows left: nothing to delete, however full */
    o = obs(100 * MB / 4096, 0, -1);
    CHECK_TRUE(!retain_plan(&cfg, &p, &o, &pl));
    /* a file over the bound with free pages: vacuumed when incremental */
    o = obs(9 * MB / 4096, 600, -1);
    CHECK_TRUE(!retain_plan(&cfg, &p, &o, &pl));
    o.incremental = true;
    CHECK_TRUE(retain_plan(&cfg, &p, &o, &pl));
    CHECK_INT(pl.rows, 0);
    CHECK_INT(pl.vacuum_pages, 1 * MB / 4096 + 1); /* what brings it under */
    o.page_count = 20 * MB / 4096;
    CHECK_TRUE(retain_plan(&cfg, &p, &o, &pl));
    CHECK_INT(pl.vacuum_pages, RETAIN_VACUUM_PAGES); /* at most this per step */
    o.free_pages = 10;
    CHECK_TRUE(retain_plan(&cfg, &p, &o, &pl));
    CHECK_INT(pl.vacuum_pages, 10);
}

static void test_age(void)
{
    struct retain_cfg cfg = { .retain_ns = INT64_C(60) * 1000000000 };
    struct retain_planner p;
    struct retain_plan pl;
    retain_planner_init(&p);
    struct retain_obs o = obs(100, 0, INT64_C(950) * 1000000000); /* 50 s old */
    CHECK_TRUE(!retain_plan(&cfg, &p, &o, &pl));
    o.oldest_ns = INT64_C(900) * 1000000000; /* 100 s old */
    CHECK_TRUE(retain_plan(&cfg, &p, &o, &pl));
    CHECK_INT(pl.cutoff_ns, INT64_C(940) * 1000000000);
    CHECK_INT(pl.rows, RETAIN_STEP_START);
    CHECK_TRUE(!pl.over_size);
    o.oldest_ns = -1;
    CHECK_TRUE(!retain_plan(&cfg, &p, &o, &pl));
    /* both bounds: the size decides the rows, the age still cuts */
    cfg.max_bytes = 8 * MB;
    o = obs(8 * MB / 4096, 0, INT64_C(900) * 1000000000);
    CHECK_TRUE(retain_plan(&cfg, &p, &o, &pl));
    CHECK_TRUE(pl.over_size);
    CHECK_INT(pl.cutoff_ns, INT64_C(940) * 1000000000);
}

static void test_feedback(void)
{
    struct retain_planner p;
    retain_planner_init(&p);
    retain_feedback(&p, RETAIN_STEP_START, 64, 4096, 100000); /* quick, full step */
    CHECK_INT(p.step_rows, RETAIN_STEP_START * 2);
    /* measured 32 (64 pages for 8192 rows), averaged with the guess of 36 */
    CHECK(p.bytes_per_row == 34, "bytes per row %f", p.bytes_per_row);
    retain_feedback(&p, 100, 0, 4096, 100000); /* quick, but not full: no change */
    CHECK_INT(p.step_rows, RETAIN_STEP_START * 2);
    for (int i = 0; i < 40; i++)
        retain_feedback(&p, 10, 0, 4096, (int64_t)RETAIN_STEP_MS * 2000000);
    CHECK_INT(p.step_rows, RETAIN_STEP_MIN);
    for (int i = 0; i < 40; i++)
        retain_feedback(&p, p.step_rows, 0, 4096, 1000);
    CHECK_INT(p.step_rows, RETAIN_STEP_MAX);
}

static void test_pattern(void)
{
    char out[256];
    time_t t = 1796083199; /* 2026-11-30T23:59:59Z */
    CHECK_TRUE(retain_path_rotates("runs-%Y%m%d.db"));
    CHECK_TRUE(retain_path_rotates("/var/lib/slabtap/%H.db"));
    CHECK_TRUE(!retain_path_rotates("runs.db"));
    CHECK_TRUE(!retain_path_rotates("100%%.db"));
    CHECK_TRUE(!retain_path_rotates("50%.db"));
    CHECK_TRUE(!retain_path_rotates(NULL));
    CHECK_INT(retain_path_expand("runs-%Y%m%d.db", t, out, sizeof out), 0);
    CHECK_STR(out, "runs-20261130.db");
    CHECK_INT(retain_path_expand("runs-%Y%m%d.db", t + 1, out, sizeof out), 0);
    CHECK_STR(out, "runs-20261201.db"); /* UTC, whatever TZ says */
    CHECK_INT(retain_path_expand("r-%H%M%S-100%%.db", t, out, sizeof out), 0);
    CHECK_STR(out, "r-235959-100%.db");
    CHECK_INT(retain_path_expand("runs-%Y%m%d.db", t, out, 8), -1); /* does not fit */
    CHECK_INT(retain_path_expand("", t, out, sizeof out), -1);
}

/* a full disk: a step and free pages back, under the bound or not */
static void test_disk_full(void)
{
    struct retain_cfg cfg = { 0, 6 * MB };
    struct retain_planner p;
    struct retain_plan pl;
    retain_planner_init(&p);
    struct retain_obs o = {
        .now_ns = 1, .page_size = 4096, .page_count = 256, .oldest_ns = 0, .incremental = true
    };
    CHECK_TRUE(!retain_plan(&cfg, &p, &o, &pl)); /* 1 MiB of a 6 MiB bound */
    o.disk_full = true;
    CHECK_TRUE(retain_plan(&cfg, &p, &o, &pl));
    CHECK_INT(pl.rows, RETAIN_STEP_START / 4);
    CHECK_INT(pl.vacuum_pages, RETAIN_VACUUM_PAGES);
    o.oldest_ns = -1; /* no row left: only the free pages */
    CHECK_TRUE(retain_plan(&cfg, &p, &o, &pl));
    CHECK_INT(pl.rows, 0);
    o.incremental = false;
    CHECK_TRUE(!retain_plan(&cfg, &p, &o, &pl));
}

/* the bound and SQLite's WAL on a file system with room for them */
static void test_room(void)
{
    unsigned pages;
    CHECK_INT(retain_room_plan(6 * MB, 100 * MB, 4096, &pages), RETAIN_ROOM_OK);
    CHECK_INT(retain_room_plan(0, 1 * MB, 4096, &pages), RETAIN_ROOM_OK); /* no bound */
    /* 9 MiB for a 6 MiB bound: half of the 3 MiB left for the WAL */
    CHECK_INT(retain_room_plan(6 * MB, 9 * MB, 4096, &pages), RETAIN_ROOM_SMALL_WAL);
    CHECK_INT(pages, 3 * MB / 2 / 4096);
    CHECK_INT(retain_room_plan(6 * MB, 6 * MB + 256 * 1024, 4096, &pages), RETAIN_ROOM_NO);
    CHECK_INT(pages, RETAIN_WAL_MIN_PAGES);
    CHECK_INT(retain_room_plan(6 * MB, 5 * MB, 4096, &pages), RETAIN_ROOM_NO);
    CHECK_STR(retain_room_label(RETAIN_ROOM_NO), "cannot be met");
}

int main(void)
{
    test_size();
    test_disk_full();
    test_room();
    test_age();
    test_feedback();
    test_pattern();
    return check_done("test_retain");
}
