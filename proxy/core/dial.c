#include "core/dial.h"

#include <sys/un.h>

int dial_init(uv_loop_t *loop, union dial_stream *s, int family)
{
    if (family == AF_UNIX)
        return uv_pipe_init(loop, &s->pipe, 0);
    int rc = uv_tcp_init(loop, &s->tcp);
    if (rc == 0)
        (void)uv_tcp_nodelay(&s->tcp, 1);
    return rc;
}

int dial_connect(uv_connect_t *req, union dial_stream *s, const struct sockaddr *sa,
                 uv_connect_cb cb)
{
    if (sa->sa_family != AF_UNIX)
        return uv_tcp_connect(req, &s->tcp, sa, cb);
    uv_pipe_connect(req, &s->pipe, ((const struct sockaddr_un *)sa)->sun_path, cb);
    return 0;
}

size_t dial_queued(const union dial_stream *s)
{
    return uv_stream_get_write_queue_size(&s->stream);
}
