/* webui: the page of the admin endpoint (GET / and /assets/NAME): web/'s
 * index.html, app.js, app.css and the chart library (Chart.js, from
 * Debian's libjs-chart.js), embedded at build time by
 * cmake/embed_asset.cmake and served from memory.
 *
 * Owns: the asset table, each answer's content type, its ETag (a 304 for
 * an If-None-Match that names it) and Cache-Control, and the
 * Content-Security-Policy that lets the page load and run nothing but this
 * endpoint's own scripts, styles and JSON.
 * Must never: read a file at run time, serve a path that is not in the
 * table, or decide who may see the page -- the caller admits each request
 * first (server/routes.c's routes_admit), as for every other route.
 */
#ifndef SLABTAP_WEBUI_H
#define SLABTAP_WEBUI_H

#include <stddef.h>

#include "server/admin_http.h"

/* One embedded file: the route that serves it and its bytes. */
struct webui_asset {
    const char *path;          /* "/", "/assets/app.js", ... */
    const unsigned char *data; /* NUL-terminated, len bytes before it */
    size_t len;
    const char *etag; /* "\"<16 hex digits of the SHA-256>\"" */
};

/* Defined by the generated webui_assets.c. */
extern const struct webui_asset webui_assets[];
extern const size_t webui_nassets;

/* Every route of the page, for the caller's route table (admin_http
 * matches paths exactly): X(path) once per embedded file; CMakeLists.txt
 * embeds the same list. */
#define WEBUI_PATHS(X) X("/") X("/assets/app.js") X("/assets/app.css") X("/assets/chart.min.js")

/* The header the page's answers carry: scripts, styles, images and
 * fetches from this origin only, no inline script, no framing. */
#define WEBUI_CSP \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " \
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

/* The asset served at path, or NULL. */
const struct webui_asset *webui_find(const char *path);
/* Content type by the path's extension ("/" is the HTML page). */
const char *webui_content_type(const char *path);
/* Answers a GET (or HEAD) of req->path: 200 with the bytes, 304 when
 * If-None-Match names the ETag, 404 when the path is not an asset.
 * Returns an enum admin_http_err value. */
int webui_serve(const struct admin_http_request *req, struct admin_http_response *resp);

#endif
