/* The keep-alive core's types (see _churn_keepalive.c): one worker's persistent connections. */
#ifndef TOOLBENCH_CHURN_KEEPALIVE_H
#define TOOLBENCH_CHURN_KEEPALIVE_H

#include "_churn.h"

#include <sys/epoll.h>

/* A slot's connection: none; being opened before the clock starts (no request yet); being
   opened for a request; sending one; waiting for its response; open with nothing in flight. */
enum { KS_NONE, KS_OPENING, KS_CONNECTING, KS_SENDING, KS_WAITING, KS_IDLE };

typedef struct {
    int fd;              /* -1: no connection */
    int state;           /* KS_* */
    uint32_t events;     /* what it waits for in the epoll set */
    Py_ssize_t sent;     /* bytes of the request in flight sent */
    int64_t t_sched, t_start, t_sent, t_first;
    int64_t opened;      /* when the connection was established (0: not yet) */
    int64_t rx;          /* bytes received on it since it opened or the window began */
    Framing fr;          /* where the response ends, and whether the connection can go on */
} KSlot;

typedef struct {
    PyObject_HEAD
    int epfd;
    struct sockaddr_storage addr;
    socklen_t addrlen;
    int family, head, closed;
    int alone;           /* closed model, run by time: a slot sends its next request without Python */
    PyObject *request;
    Py_ssize_t nslots, nlat;
    KSlot *slots;
    char *rbuf;
    int64_t *lat, *ulat; /* latencies not in the recorder's arrays yet (flushed before Python runs) */
    /* Since the window began, for the recorder at the stop: bytes of closed connections, latency
       not spent waiting for a first byte, connections closed without a byte in the window, and
       requests sent by the core alone. When the last response ended (for a counted run's end). */
    int64_t rx, gap, silent, sent_alone, last_done, window_ns;
    /* Coalesced reads (closed model run by time, `alone`): after a batch the core waits, on no
       timer, for the response to a request a little younger than the oldest in flight (at most
       coalesce_ns younger: _churn_keepalive_wait.c), so that it wakes once per several responses;
       each response is timed by the kernel's receive timestamp (SO_TIMESTAMPNS, CLOCK_REALTIME:
       rt_offset, read bracketed, turns it into the engine's clock without ever making it earlier),
       so the wait is not in its latency. linger:
       the time from a response's arrival to the next request on its connection, summed, and
       how many (the result says it). */
    int64_t coalesce_ns, rt_offset, linger_ns, linger_n;
    /* Held callbacks (`alone`): the core waits in its own epoll set until the loop's next timer
       (hold_until, the engine's clock; 0: none) and hands the loop back early when wake_fd (the
       worker's pipe, in the set) turns readable or Python was called back (`called`). */
    int64_t hold_until;
    int wake_fd, called;
    PyObject *load, *rec, *lat_add, *ulat_add, *codes, *done, *failed, *failed_soon, *opened;
} KeepAlive;

extern PyTypeObject KeepAliveType;

static inline int ka_in_flight(const KSlot *s) {
    return s->state == KS_CONNECTING || s->state == KS_SENDING || s->state == KS_WAITING;
}

void ka_reset_slot(KSlot *s);
/* Closes the slot's connection (if any), its bytes and silence counted. */
void ka_drop(KeepAlive *c, KSlot *s);
/* Starts opening slot i's connection before the clock starts: 0, errno if it failed at once,
   or -1 with an exception set. The `opened` callback says how it went. */
int ka_open(KeepAlive *c, Py_ssize_t i);
/* Sends slot i's next request, on its connection or a new one; `scheduled`: when it was meant
   to start, `now`: the clock now. */
int ka_send(KeepAlive *c, Py_ssize_t i, int64_t scheduled, int64_t now);
/* Handles one ready socket's event (_churn_keepalive_conn.c). */
int ka_handle(KeepAlive *c, const struct epoll_event *e);
/* Handles the ready sockets: one batch, or on until the hold ends (_churn_keepalive_wait.c). */
int ka_ready(KeepAlive *c);
/* Fails the requests sent before `limit`, and the connects begun before `connect_limit`. */
int ka_sweep(KeepAlive *c, int64_t limit, int64_t connect_limit);
/* Until when a callback may hold the loop, and the descriptor that ends a hold early (-1: none;
   registered once): 0, or -1 with an exception set. */
int ka_hold(KeepAlive *c, int64_t until, int wake_fd);
/* Moves the buffered latencies into the recorder's arrays. */
int ka_flush(KeepAlive *c);

#endif
