/* dial: one stream handle for any address slabtap connects to or listens
 * on -- TCP (IPv4, IPv6) or a unix socket -- so the proxy's listener, its
 * clients, its upstream connections, the stats poller and the load
 * generator's connections treat both alike. OS glue over libuv: no server
 * logic.
 *
 * Owns nothing (the caller owns the handle and closes it). Must never
 * block: connecting is libuv's (a unix socket's too). */
#ifndef SLABTAP_CORE_DIAL_H
#define SLABTAP_CORE_DIAL_H

#include <stddef.h>
#include <sys/socket.h>
#include <uv.h>

/* uv_tcp_t and uv_pipe_t begin with the same stream fields: a pointer to
 * this is a uv_stream_t / uv_handle_t pointer for either. */
union dial_stream {
    uv_handle_t handle;
    uv_stream_t stream;
    uv_tcp_t tcp;
    uv_pipe_t pipe;
};

/* A handle for family (AF_UNIX: a pipe; else TCP with TCP_NODELAY: small
 * pipelined requests, latency matters). A libuv error (<0) or 0. */
int dial_init(uv_loop_t *loop, union dial_stream *s, int family);
/* Connects s (dial_init'ed for sa's family) to sa; cb gets the status (a
 * unix socket's errors arrive there too). A libuv error (<0) or 0. */
int dial_connect(uv_connect_t *req, union dial_stream *s, const struct sockaddr *sa,
                 uv_connect_cb cb);
/* Bytes queued to be written. */
size_t dial_queued(const union dial_stream *s);

#endif
