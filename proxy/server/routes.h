/* routes: the admin endpoint's route table -- the page (server/webui.h),
 * /health, /metrics (server/scrape.h), /api/runs, /api/slabs, POST
 * /api/phase and /api/run/... (server/webapi.h) -- for admin_http_open, with
 * a struct app as every request's ud.
 *
 * Owns: who is admitted (with --http-token every route but /health and the
 * page needs "Authorization: Bearer TOKEN"; without one, a Host that names
 * another site is refused, and so is a POST from another origin), what
 * /health calls healthy, and the JSON of /health, /api/runs, /api/slabs and
 * /api/phase.
 * Must never: block the loop or read the store (what the routes show is
 * in memory: the app's last sample, the recorder's counters, the runs read
 * at open; /api/run/... queries go to the writer thread through webapi),
 * answer a request it did not admit, or start or stop anything (app.c's
 * lifecycle does). */
#ifndef SLABTAP_ROUTES_H
#define SLABTAP_ROUTES_H

#include <stddef.h>

#include "server/admin_http.h"

extern const struct admin_http_route routes_table[];
extern const size_t routes_count;

#endif
