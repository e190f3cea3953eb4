/* The keep-alive core's waits (see _churn_keepalive.c): a callback's loop over ready sockets,
   the coalesced reads' pause between batches, and the hold until the loop's next timer. */
#include "_churn_keepalive.h"

#include <errno.h>
#include <sys/epoll.h>
#include <time.h>

#define LINGER_ROUND_NS 1000000 /* waited per callback beyond its first wait, unless held: the loop's timers run */
#define WAKE_MARK UINT64_MAX    /* the wake descriptor's event (a slot's holds its fd and index) */

/* How long to wait before reading again: an eighth of the time the server needs for the requests
   in flight (every slot has one in the closed model), at most coalesce_ns; 0 until the time
   between responses is known. So the server is never left without work, and a connection waits
   on average a sixteenth of that time before its next request (the result says how long). */
static int64_t linger_for(const KeepAlive *c) {
    int64_t d = (int64_t)c->nslots * c->tau_ns / 8;
    return d < c->coalesce_ns ? d : c->coalesce_ns;
}

/* How long the core may go on by itself before it hands the loop back: until the loop's next
   timer (hold_until, set by the worker), in the closed model run by time only (`alone`), where
   nothing else needs Python between two timers. 0: hand it back after this batch. */
static int64_t hold_left(const KeepAlive *c) {
    if (!c->alone || c->hold_until == 0) return 0;
    int64_t left = c->hold_until - churn_now_ns();
    return left > 0 ? left : 0;
}

/* The ready sockets, waiting for one up to block_ns (0: what is ready now). */
static int wait_events(KeepAlive *c, struct epoll_event *evs, int64_t block_ns) {
    if (block_ns <= 0) return epoll_wait(c->epfd, evs, BATCH, 0);
    struct timespec wait = {.tv_sec = (time_t)(block_ns / 1000000000), .tv_nsec = (long)(block_ns % 1000000000)};
    int n;
    Py_BEGIN_ALLOW_THREADS /* a wait of up to the next timer: the process's other threads run */
    n = epoll_pwait2(c->epfd, evs, BATCH, &wait, NULL);
    Py_END_ALLOW_THREADS
    return n;
}

int ka_ready(KeepAlive *c) {
    struct epoll_event evs[BATCH];
    int64_t waited = 0, block = 0; /* the first wait: what is ready now (the loop saw the set ready) */
    c->called = 0;
    for (;;) {
        if (c->coalesce_ns) c->rt_offset = churn_clock_ns(CLOCK_REALTIME) - churn_now_ns();
        int n = wait_events(c, evs, block);
        if (n < 0 && errno != EINTR) {
            PyErr_SetFromErrno(PyExc_OSError);
            return -1;
        }
        if (n <= 0) break; /* nothing ready, the loop's next timer is due, or a signal */
        int woken = 0;
        for (int k = 0; k < n && c->epfd >= 0; k++) { /* a callback may have stopped the run */
            if (evs[k].data.u64 == WAKE_MARK) woken = 1;
            else if (ka_handle(c, &evs[k]) < 0) return -1;
        }
        if (woken || c->called || c->epfd < 0) break; /* the loop has something to do */
        int64_t d = c->coalesce_ns ? linger_for(c) : 0, left = hold_left(c);
        if (d > 0 && (left > d || waited == 0 || waited + d <= LINGER_ROUND_NS)) {
            /* Responses arriving meanwhile wait in their sockets, timed by the kernel. */
            struct timespec pause = {.tv_sec = 0, .tv_nsec = (long)d};
            nanosleep(&pause, NULL);
            waited += d;
            left = hold_left(c);
        } else if (left == 0) {
            break;
        }
        block = left;
    }
    return ka_flush(c);
}

int ka_hold(KeepAlive *c, int64_t until, int wake_fd) {
    c->hold_until = until;
    if (wake_fd < 0 || c->wake_fd >= 0) return 0;
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = WAKE_MARK};
    if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, wake_fd, &ev) < 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    c->wake_fd = wake_fd;
    return 0;
}
