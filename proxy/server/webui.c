#include "server/webui.h"

#include <string.h>

const struct webui_asset *webui_find(const char *path)
{
    for (size_t i = 0; path != NULL && i < webui_nassets; i++)
        if (strcmp(webui_assets[i].path, path) == 0)
            return &webui_assets[i];
    return NULL;
}

static int webui_ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

const char *webui_content_type(const char *path)
{
    if (webui_ends_with(path, ".js"))
        return "text/javascript; charset=utf-8";
    if (webui_ends_with(path, ".css"))
        return "text/css; charset=utf-8";
    if (webui_ends_with(path, ".png"))
        return "image/png";
    if (webui_ends_with(path, ".svg"))
        return "image/svg+xml";
    return "text/html; charset=utf-8";
}

/* If-None-Match lists ETags ("a", W/"b") or is "*". */
static int webui_etag_matches(const char *header, const char *etag)
{
    return header != NULL && (strcmp(header, "*") == 0 || strstr(header, etag) != NULL);
}

int webui_serve(const struct admin_http_request *req, struct admin_http_response *resp)
{
    const struct webui_asset *a = webui_find(req->path);
    int err;

    if (a == NULL)
        return admin_http_respond(resp, 404, "text/plain; charset=utf-8", "not found\n", 10);
    /* no-cache: the browser keeps the bytes but asks each time (a 304 when
     * unchanged), so a new binary's page is never mixed with an old one */
    err = admin_http_add_header(resp, "ETag", a->etag);
    if (err == ADMIN_HTTP_OK)
        err = admin_http_add_header(resp, "Cache-Control", "no-cache");
    if (err == ADMIN_HTTP_OK)
        err = admin_http_add_header(resp, "Content-Security-Policy", WEBUI_CSP);
    if (err == ADMIN_HTTP_OK)
        err = admin_http_add_header(resp, "X-Content-Type-Options", "nosniff");
    if (err == ADMIN_HTTP_OK)
        err = admin_http_add_header(resp, "Referrer-Policy", "no-referrer");
    if (err != ADMIN_HTTP_OK)
        return err;
    if (webui_etag_matches(admin_http_header(req, "If-None-Match"), a->etag))
        return admin_http_respond(resp, 304, webui_content_type(a->path), "", 0);
    return admin_http_respond(resp, 200, webui_content_type(a->path), a->data, a->len);
}
