/* The keep-alive core's waits (see _churn_keepalive.c): a callback's loop over ready sockets,
   the coalesced reads' wait between batches, and the hold until the loop's next timer. */
#include "_churn_keepalive.h"

#include <errno.h>
#include <poll.h>
#include <sys/epoll.h>
#include <time.h>

#define LINGER_ROUND_NS 1000000 /* waited per callback beyond its first wait, unless held: the loop's timers run */
#define WAKE_MARK UINT64_MAX    /* the wake descriptor's event (a slot's holds its fd and index) */

/* How long the core may go on by itself before it hands the loop back: until the loop's next
   timer (hold_until, set by the worker), in the closed model run by time only (`alone`), where
   nothing else needs Python between two timers. 0: hand it back after this batch. */
static int64_t hold_left(const KeepAlive *c) {
    if (!c->alone || c->hold_until == 0) return 0;
    int64_t left = c->hold_until - churn_now_ns();
    return left > 0 ? left : 0;
}

static struct timespec timespec_of(int64_t ns) {
    return (struct timespec){.tv_sec = (time_t)(ns / 1000000000), .tv_nsec = (long)(ns % 1000000000)};
}

/* The wall clock less the engine's, to put the kernel's receive timestamps on the engine's clock.
   Read as the narrowest of three brackets (engine, wall, engine) and taken at the bracket's end:
   a pause inside it can then only lengthen a latency, by at most its width, never shorten one.
   (It was one unbracketed pair, its reads in whichever order the compiler chose: with the send
   time read after the send, one of the two timed a 40 ms response at 39.65 ms in CI.) */
static int64_t wall_offset(void) {
    int64_t best = 0, width = INT64_MAX;
    for (int k = 0; k < 3 && width > 2000; k++) {
        int64_t before = churn_now_ns();
        int64_t wall = churn_clock_ns(CLOCK_REALTIME);
        int64_t after = churn_now_ns();
        if (after - before < width) {
            width = after - before;
            best = wall - after;
        }
    }
    return best;
}

/* The ready sockets, waiting for one up to block_ns (0: what is ready now). */
static int wait_events(KeepAlive *c, struct epoll_event *evs, int64_t block_ns) {
    if (block_ns <= 0) return epoll_wait(c->epfd, evs, BATCH, 0);
    struct timespec wait = timespec_of(block_ns);
    int n;
    Py_BEGIN_ALLOW_THREADS /* a wait of up to the next timer: the process's other threads run */
    n = epoll_pwait2(c->epfd, evs, BATCH, &wait, NULL);
    Py_END_ALLOW_THREADS
    return n;
}

/* Coalesced reads: the request in flight to wait for, -1 if none. Responses come back about in
   the order their requests went, so when the one sent first at or after the oldest's send plus a
   quarter of the span in flight (at most coalesce_ns) is answered, so are about the ones before
   it: one wake-up reads them all. *span: from the oldest send to the newest. */
static Py_ssize_t wait_slot(const KeepAlive *c, int64_t *span) {
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (Py_ssize_t i = 0; i < c->nslots; i++) {
        const KSlot *s = &c->slots[i];
        if (s->state != KS_WAITING) continue;
        if (s->t_sent < lo) lo = s->t_sent;
        if (s->t_sent > hi) hi = s->t_sent;
    }
    if (lo > hi) return -1;
    *span = hi - lo;
    int64_t ahead = *span / 4 < c->coalesce_ns ? *span / 4 : c->coalesce_ns;
    int64_t mark = lo + ahead, best = INT64_MAX;
    Py_ssize_t pick = -1;
    for (Py_ssize_t i = 0; i < c->nslots; i++) {
        const KSlot *s = &c->slots[i];
        if (s->state == KS_WAITING && s->t_sent >= mark && s->t_sent < best) {
            best = s->t_sent;
            pick = i;
        }
    }
    return pick;
}

/* Waits until that request's socket turns readable (its response, or the peer's close) or the
   wake descriptor does: on no timer, which on a busy VM fires late and would leave the server
   without requests. A timer only as a backstop, should that response be slow or lost: twice the
   span in flight (or coalesce_ns), and never past `limit`. */
static void wait_coalesced(KeepAlive *c, int64_t limit) {
    int64_t span = 0;
    Py_ssize_t i = wait_slot(c, &span);
    if (i < 0) return;
    int64_t bound = 2 * (span > c->coalesce_ns ? span : c->coalesce_ns);
    if (bound > limit) bound = limit;
    struct pollfd fds[2] = {{.fd = c->slots[i].fd, .events = POLLIN | POLLRDHUP},
                            {.fd = c->wake_fd, .events = POLLIN}};
    struct timespec wait = timespec_of(bound);
    Py_BEGIN_ALLOW_THREADS
    ppoll(fds, c->wake_fd >= 0 ? 2 : 1, &wait, NULL);
    Py_END_ALLOW_THREADS
}

int ka_ready(KeepAlive *c) {
    struct epoll_event evs[BATCH];
    int64_t waited = 0, block = 0; /* the first wait: what is ready now (the loop saw the set ready) */
    c->called = 0;
    for (;;) {
        if (c->coalesce_ns) c->rt_offset = wall_offset();
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
        int64_t left = hold_left(c);
        if (c->coalesce_ns && (left > 0 || waited < LINGER_ROUND_NS)) {
            /* Responses arriving meanwhile wait in their sockets, timed by the kernel. */
            int64_t t0 = churn_now_ns();
            wait_coalesced(c, left > 0 ? left : LINGER_ROUND_NS - waited);
            waited += churn_now_ns() - t0;
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
