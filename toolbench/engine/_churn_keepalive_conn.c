/* One worker's keep-alive connections: open, send, read, frame, time, reuse or reopen
   (see _churn_keepalive.c). Where a slot's request ends is held to the Python path's
   (client.py Conn, llhttp): the same responses complete, fail or close the connection. */
#include "_churn_keepalive.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define IN_EVENTS (EPOLLIN | EPOLLRDHUP) /* RDHUP: the peer's close, seen with the bytes before it */

/* Edge-triggered: a socket is reported once per change, not again at every epoll_wait while it
   stays ready (the kernel polls each reported socket anew otherwise); so a read goes on until
   the socket has no more, and a send until the request is out or the socket is full. */
static int epoll_set(KeepAlive *c, int op, KSlot *s, Py_ssize_t i, uint32_t events) {
    struct epoll_event ev = {.events = events | EPOLLET, .data.u64 = ((uint64_t)(uint32_t)s->fd << 32) | (uint32_t)i};
    s->events = events;
    if (epoll_ctl(c->epfd, op, s->fd, &ev) == 0) return 0;
    PyErr_SetFromErrno(PyExc_OSError);
    return -1;
}

static int so_error(int fd) {
    int err = 0;
    socklen_t len = sizeof(err);
    return getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 ? errno : err;
}

void ka_reset_slot(KSlot *s) {
    s->fd = -1;
    s->state = KS_NONE;
    s->events = 0;
    s->sent = 0;
    s->t_first = s->opened = s->rx = 0;
    framing_reset(&s->fr);
}

void ka_drop(KeepAlive *c, KSlot *s) {
    if (s->fd >= 0) close(s->fd); /* and out of the epoll set with it */
    c->rx += s->rx;
    if (s->opened && !s->rx && s->opened < c->window_ns) c->silent++; /* open all through the window, unanswered */
    ka_reset_slot(s);
}

/* A new non-blocking socket for slot s, its connect begun: 0 (s->fd set, or *err the errno of
   a connect that failed at once), or -1 with an exception set (out of descriptors: the run
   crashes, saying so). */
static int new_connection(KeepAlive *c, KSlot *s, int64_t started, int *err) {
    int fd = socket(c->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    int one = 1; /* as uvloop's connections (the Python path): a body's last piece is not held back */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (c->coalesce_ns) setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
    ka_reset_slot(s);
    s->t_start = started;
    *err = connect(fd, (struct sockaddr *)&c->addr, c->addrlen) == 0 ? 0 : errno;
    if (*err == EINPROGRESS || *err == EAGAIN) *err = 0;
    if (*err) close(fd);
    else s->fd = fd;
    return 0;
}

/* fn(i, arg): Python takes over the slot. It may have given the loop work (call_soon), so a
   held callback hands the loop back after this batch (ka_ready). */
static int call_back(KeepAlive *c, PyObject *fn, Py_ssize_t i, PyObject *arg) {
    c->called = 1;
    return churn_call_back(fn, i, arg);
}

static int call_back_int(KeepAlive *c, PyObject *fn, Py_ssize_t i, int64_t value) {
    PyObject *v = PyLong_FromLongLong(value);
    if (v == NULL) return -1;
    int rc = call_back(c, fn, i, v);
    Py_DECREF(v);
    return rc;
}

/* The request in flight failed: count it (in Python, which ends the request), drop the connection. */
static int fail(KeepAlive *c, Py_ssize_t i, int kind) {
    KSlot *s = &c->slots[i];
    if (s->state == KS_SENDING || s->state == KS_WAITING) c->gap -= s->t_sent - s->t_sched; /* no latency: back */
    ka_drop(c, s);
    return call_back(c, c->failed, i, churn_kinds[kind]);
}

/* As fail(), counted from the loop (call_soon): for a failure met while sending, so that a slot
   failing again and again never recurses and the loop's timers (the stop) still run. */
static int fail_soon(KeepAlive *c, Py_ssize_t i, int kind) {
    KSlot *s = &c->slots[i];
    if (s->state == KS_SENDING || s->state == KS_WAITING) c->gap -= s->t_sent - s->t_sched;
    ka_drop(c, s);
    return call_back(c, c->failed_soon, i, churn_kinds[kind]);
}

/* The request's bytes went out up to s->sent, the last send() having returned `n` (-1: errno
   says why): wait for the response, or for the socket to take the rest. The socket is
   registered anew only when that changes. */
static int after_send(KeepAlive *c, Py_ssize_t i, ssize_t n, int op) {
    KSlot *s = &c->slots[i];
    s->state = KS_SENDING;
    if (n < 0 && errno != EAGAIN && errno != EINTR) return fail_soon(c, i, errno == ECONNRESET ? K_RESET : K_CLOSED);
    if (s->sent == PyBytes_GET_SIZE(c->request)) s->state = KS_WAITING;
    uint32_t want = s->state == KS_WAITING ? IN_EVENTS : IN_EVENTS | EPOLLOUT;
    return op == EPOLL_CTL_ADD || want != s->events ? epoll_set(c, op, s, i, want) : 0;
}

/* Sends what is left of the request (from s->sent) until it is out or the socket is full. */
static ssize_t send_rest(KeepAlive *c, KSlot *s) {
    const char *req = PyBytes_AS_STRING(c->request);
    Py_ssize_t len = PyBytes_GET_SIZE(c->request);
    ssize_t n;
    do {
        n = send(s->fd, req + s->sent, (size_t)(len - s->sent), MSG_NOSIGNAL);
        if (n > 0) s->sent += n;
    } while (n > 0 && s->sent < len);
    return n;
}

/* A connect for a request is over, and its first send(), begun at `at`, put `n` bytes out: count
   the connect, send the rest. The clock is read before that send, not after: a pause between the
   two would otherwise come off the request's latency. */
static int connected(KeepAlive *c, Py_ssize_t i, ssize_t n, int op, int64_t at) {
    KSlot *s = &c->slots[i];
    s->t_sent = s->opened = at;
    c->gap += s->t_sent - s->t_sched; /* the connect is latency, not waiting for the first byte */
    if (churn_connected(c->rec, s->t_sent - s->t_start) < 0) return -1;
    s->sent = n;
    return after_send(c, i, s->sent < PyBytes_GET_SIZE(c->request) ? send_rest(c, s) : n, op);
}

int ka_open(KeepAlive *c, Py_ssize_t i) {
    KSlot *s = &c->slots[i];
    int err;
    if (new_connection(c, s, churn_now_ns(), &err) < 0) return -1;
    if (err) return err;
    s->state = KS_OPENING;
    return epoll_set(c, EPOLL_CTL_ADD, s, i, EPOLLOUT);
}

/* A connect begun before the clock started is over. */
static int opened(KeepAlive *c, Py_ssize_t i) {
    KSlot *s = &c->slots[i];
    int err = so_error(s->fd);
    if (err) {
        ka_drop(c, s);
    } else {
        s->opened = churn_now_ns();
        s->state = KS_IDLE;
        if (churn_connected(c->rec, s->opened - s->t_start) < 0 || epoll_set(c, EPOLL_CTL_MOD, s, i, IN_EVENTS) < 0)
            return -1;
    }
    return call_back_int(c, c->opened, i, err);
}

int ka_send(KeepAlive *c, Py_ssize_t i, int64_t scheduled, int64_t now) {
    KSlot *s = &c->slots[i];
    if (s->state != KS_NONE && s->state != KS_IDLE) {
        PyErr_Format(PyExc_RuntimeError, "slot %zd: a request or connect is already in flight", i);
        return -1;
    }
    /* Closed model: the request began when the slot started it (its connect included, as on
       the Python path); open: when it was meant to start, never later. */
    int64_t sched = c->closed || scheduled > now ? now : scheduled;
    if (s->state == KS_IDLE) {
        s->t_sched = sched;
        s->t_start = s->t_sent = now;
        s->sent = 0;
        c->gap += now - sched;
        return after_send(c, i, send_rest(c, s), EPOLL_CTL_MOD);
    }
    int err;
    if (new_connection(c, s, now, &err) < 0) return -1;
    s->t_sched = sched;
    if (err) return call_back(c, c->failed_soon, i, churn_kinds[churn_connect_kind(err)]);
    /* On loopback the handshake is over when connect() returns: the request goes at once. */
    int64_t at = churn_now_ns();
    ssize_t n = send(s->fd, PyBytes_AS_STRING(c->request), (size_t)PyBytes_GET_SIZE(c->request), MSG_NOSIGNAL);
    if (n >= 0) return connected(c, i, n, EPOLL_CTL_ADD, at);
    if (errno == EAGAIN) { /* the handshake is not over: wait until writable */
        s->state = KS_CONNECTING;
        return epoll_set(c, EPOLL_CTL_ADD, s, i, EPOLLOUT);
    }
    err = errno;
    ka_drop(c, s);
    return call_back(c, c->failed_soon, i, churn_kinds[churn_connect_kind(err)]);
}

static int writable(KeepAlive *c, Py_ssize_t i) {
    KSlot *s = &c->slots[i];
    if (s->state == KS_SENDING) return after_send(c, i, send_rest(c, s), EPOLL_CTL_MOD);
    int err = so_error(s->fd); /* KS_CONNECTING */
    if (err) return fail(c, i, churn_connect_kind(err));
    int64_t at = churn_now_ns();
    ssize_t n = send(s->fd, PyBytes_AS_STRING(c->request), (size_t)PyBytes_GET_SIZE(c->request), MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN) return fail(c, i, churn_connect_kind(errno));
    return connected(c, i, n < 0 ? 0 : n, EPOLL_CTL_MOD, at);
}

static int count_code(KeepAlive *c, int code) {
    PyObject *old = PyList_GetItem(c->codes, code);
    if (old == NULL) return -1;
    PyObject *v = PyLong_FromLongLong(PyLong_AsLongLong(old) + 1);
    return v == NULL ? -1 : PyList_SetItem(c->codes, code, v);
}

/* The response is whole: time it, keep the connection if it can go on, start the next request
   (the closed model) or hand the slot back to Python (its schedule, the end of the budget).
   `at`: when the response's last bytes reached the socket (the kernel's time where reads are
   coalesced, else `now`); `now`: the clock as the core reads it, when the next request goes. */
static int complete(KeepAlive *c, Py_ssize_t i, int64_t at, int64_t now) {
    KSlot *s = &c->slots[i];
    int code = s->fr.final_code;
    if (code != 200 && count_code(c, code) < 0) return -1; /* 200s are the responses not counted here */
    c->lat[c->nlat] = at - s->t_sched;
    if (c->ulat != NULL) c->ulat[c->nlat] = at - s->t_start;
    if (++c->nlat == BATCH && ka_flush(c) < 0) return -1;
    c->gap += at - s->t_first;
    c->last_done = at;
    /* Reused as llhttp would keep it, if the whole request went out and nothing followed the response. */
    if (s->fr.keep_alive && s->state == KS_WAITING && !s->fr.unread) {
        s->state = KS_IDLE;
        s->t_first = 0;
        framing_reset(&s->fr);
    } else {
        ka_drop(c, s); /* the next request opens a new one, its connect counted */
    }
    if (c->alone) {
        c->sent_alone++;
        if (c->coalesce_ns) {
            c->linger_ns += now - at;
            c->linger_n++;
        }
        return ka_send(c, i, now, now);
    }
    int go_on = c->closed ? churn_take_budget(c->load) : 0;
    if (go_on) return go_on < 0 ? -1 : ka_send(c, i, now, now);
    return call_back_int(c, c->done, i, now);
}

/* One read. *arrived: when its last bytes reached the socket, on the engine's clock, by the
   kernel's receive timestamp where reads are coalesced; 0 where there is none. */
static ssize_t read_some(KeepAlive *c, KSlot *s, int64_t *arrived) {
    *arrived = 0;
    if (!c->coalesce_ns) return recv(s->fd, c->rbuf, READ_SIZE, 0);
    struct iovec iov = {.iov_base = c->rbuf, .iov_len = READ_SIZE};
    union {
        char buf[CMSG_SPACE(sizeof(struct timespec))];
        struct cmsghdr align;
    } control;
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                         .msg_controllen = sizeof(control.buf)};
    ssize_t r = recvmsg(s->fd, &msg, 0);
    if (r <= 0) return r;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm != NULL; cm = CMSG_NXTHDR(&msg, cm)) {
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS) {
            struct timespec ts;
            memcpy(&ts, CMSG_DATA(cm), sizeof(ts));
            *arrived = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec - c->rt_offset;
        }
    }
    return r;
}

/* Reads what the socket holds: all of it (edge-triggered), or up to the end of the response.
   `closing`: the peer's close came too, so read on to it even after a short read. */
static int readable(KeepAlive *c, Py_ssize_t i, int closing) {
    KSlot *s = &c->slots[i];
    for (;;) {
        ssize_t r;
        int64_t arrived;
        do r = read_some(c, s, &arrived);
        while (r < 0 && errno == EINTR);
        if (r < 0 && errno == EAGAIN) return 0;
        if (s->state == KS_IDLE) { /* closed by the server, or bytes nobody asked for: let it go, uncounted */
            if (r > 0) s->rx += r;
            ka_drop(c, s);
            return 0;
        }
        if (r < 0) return fail(c, i, errno == ECONNRESET ? K_RESET : K_CLOSED);
        int64_t now = churn_now_ns();
        /* Held between the send and now: the two clocks are read apart, and the wall clock may step. */
        int64_t at = arrived == 0 || arrived > now ? now : arrived < s->t_sent ? s->t_sent : arrived;
        if (r == 0) return s->t_first && framing_ends_at_close(&s->fr) ? complete(c, i, now, now) : fail(c, i, K_CLOSED);
        if (!s->t_first) s->t_first = at;
        s->rx += r;
        int st = framing_feed(&s->fr, c->head, c->rbuf, (size_t)r);
        if (st < 0) return fail(c, i, K_MALFORMED);
        if (st) {
            if (closing) s->fr.keep_alive = 0; /* closed right after its response: the next one opens anew */
            return complete(c, i, at, now);
        }
        if (r < READ_SIZE && !closing) return 0; /* empty now: what comes next is a new edge */
    }
}

int ka_handle(KeepAlive *c, const struct epoll_event *e) {
    Py_ssize_t i = (Py_ssize_t)(uint32_t)e->data.u64;
    KSlot *s = &c->slots[i];
    int fd = (int)(e->data.u64 >> 32);
    uint32_t ev = e->events;
    if (s->fd != fd) return 0; /* that connection is gone */
    if (s->state == KS_OPENING) return opened(c, i);
    if (s->state == KS_CONNECTING) return writable(c, i);
    int rc = s->state == KS_SENDING && ev & (EPOLLOUT | EPOLLERR) ? writable(c, i) : 0;
    /* A response may come before the request is all sent (a server refusing a large body). */
    if (rc == 0 && s->fd == fd && ev & (IN_EVENTS | EPOLLHUP | EPOLLERR) &&
        (s->state == KS_SENDING || s->state == KS_WAITING || s->state == KS_IDLE))
        rc = readable(c, i, (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0);
    return rc;
}

int ka_sweep(KeepAlive *c, int64_t limit, int64_t connect_limit) {
    for (Py_ssize_t i = 0; i < c->nslots && c->epfd >= 0; i++) {
        KSlot *s = &c->slots[i];
        int rc = 0;
        if (s->state == KS_CONNECTING && s->t_start < connect_limit) rc = fail(c, i, K_CONNECT_TIMEOUT);
        else if ((s->state == KS_SENDING || s->state == KS_WAITING) && s->t_sent < limit) rc = fail(c, i, K_TIMEOUT);
        if (rc < 0) return -1;
    }
    return 0;
}

static int add_values(PyObject *frombytes, int64_t *values, Py_ssize_t n) {
    /* bytes, not a view of the buffer: nothing can keep hold of memory the core reuses */
    PyObject *raw = PyBytes_FromStringAndSize((const char *)values, n * (Py_ssize_t)sizeof(int64_t));
    if (raw == NULL) return -1;
    PyObject *r = PyObject_CallOneArg(frombytes, raw);
    Py_DECREF(raw);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

int ka_flush(KeepAlive *c) {
    Py_ssize_t n = c->nlat;
    if (n == 0) return 0;
    c->nlat = 0;
    if (add_values(c->lat_add, c->lat, n) < 0) return -1;
    return c->ulat != NULL ? add_values(c->ulat_add, c->ulat, n) : 0;
}
