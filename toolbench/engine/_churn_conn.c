/* One worker's keep-alive-off connections: connect, send, read, frame, time, close (see _churn.c). */
#include "_churn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

static const char *KIND_NAMES[K_COUNT] = {"connect_refused", "connect_timeout", "connect_other", "timeout",
                                          "reset", "closed", "malformed"};
PyObject *churn_kinds[K_COUNT];
static PyObject *s_budget, *s_stopped, *s_last_done_ns, *s_connects, *s_connect_sum_ns, *s_connect_max_ns,
    *s_gap_ns, *s_received_bytes;

int churn_intern(void) {
    for (int k = 0; k < K_COUNT; k++)
        if ((churn_kinds[k] = PyUnicode_InternFromString(KIND_NAMES[k])) == NULL) return -1;
    if (!(s_budget = PyUnicode_InternFromString("budget")) || !(s_stopped = PyUnicode_InternFromString("stopped")) ||
        !(s_last_done_ns = PyUnicode_InternFromString("last_done_ns")) ||
        !(s_connects = PyUnicode_InternFromString("connects")) ||
        !(s_connect_sum_ns = PyUnicode_InternFromString("connect_sum_ns")) ||
        !(s_connect_max_ns = PyUnicode_InternFromString("connect_max_ns")) ||
        !(s_gap_ns = PyUnicode_InternFromString("gap_ns")) ||
        !(s_received_bytes = PyUnicode_InternFromString("received_bytes")))
        return -1;
    return 0;
}

int churn_connect_kind(int err) {
    return err == ECONNREFUSED ? K_REFUSED : err == ETIMEDOUT ? K_CONNECT_TIMEOUT : K_CONNECT_OTHER;
}

/* attr += delta (or = max(attr, value) when `keep_max`), on a Python object. */
int churn_add_attr(PyObject *obj, PyObject *name, int64_t value, int keep_max) {
    PyObject *old = PyObject_GetAttr(obj, name);
    if (old == NULL) return -1;
    long long cur = PyLong_AsLongLong(old);
    Py_DECREF(old);
    if (cur == -1 && PyErr_Occurred()) return -1;
    if (keep_max && value <= cur) return 0;
    PyObject *v = PyLong_FromLongLong(keep_max ? value : cur + value);
    if (v == NULL) return -1;
    int rc = PyObject_SetAttr(obj, name, v);
    Py_DECREF(v);
    return rc;
}

static int call_append(PyObject *append, int64_t value) {
    PyObject *v = PyLong_FromLongLong(value);
    if (v == NULL) return -1;
    PyObject *r = PyObject_CallOneArg(append, v);
    Py_DECREF(v);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

void churn_reset_slot(Slot *s) {
    s->fd = -1;
    s->connecting = 0;
    s->sent = 0;
    s->t_first = s->rx = 0;
    framing_reset(&s->fr);
}

static int epoll_set(Core *c, int op, int fd, uint32_t i, uint32_t events) {
    struct epoll_event ev = {.events = events, .data.u64 = ((uint64_t)(uint32_t)fd << 32) | i};
    if (epoll_ctl(c->epfd, op, fd, &ev) == 0) return 0;
    PyErr_SetFromErrno(PyExc_OSError);
    return -1;
}

int churn_connected(PyObject *rec, int64_t elapsed) {
    if (churn_add_attr(rec, s_connects, 1, 0) < 0 || churn_add_attr(rec, s_connect_sum_ns, elapsed, 0) < 0)
        return -1;
    return churn_add_attr(rec, s_connect_max_ns, elapsed, 1);
}

int churn_drop(Core *c, Slot *s) {
    int64_t rx = s->rx;
    if (s->fd >= 0) close(s->fd); /* and out of the epoll set with it */
    churn_reset_slot(s);
    return churn_add_attr(c->rec, s_received_bytes, rx, 0);
}

int churn_call_back(PyObject *fn, Py_ssize_t i, PyObject *arg) {
    PyObject *r = PyObject_CallFunction(fn, "nO", i, arg);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

static int fail(Core *c, Py_ssize_t i, int kind) {
    if (churn_drop(c, &c->slots[i]) < 0) return -1;
    return churn_call_back(c->failed, i, churn_kinds[kind]); /* counts it and ends the request, in Python */
}

/* May the slot go on by itself (the closed model, budget left)? Takes one request of the budget. */
int churn_take_budget(PyObject *load) {
    PyObject *stopped = PyObject_GetAttr(load, s_stopped);
    if (stopped == NULL) return -1;
    int is_stopped = PyObject_IsTrue(stopped);
    Py_DECREF(stopped);
    if (is_stopped) return is_stopped < 0 ? -1 : 0;
    PyObject *budget = PyObject_GetAttr(load, s_budget);
    if (budget == NULL) return -1;
    long long left = PyLong_AsLongLong(budget);
    Py_DECREF(budget);
    if (left == -1 && PyErr_Occurred()) return -1;
    if (left <= 0) return 0;
    return churn_add_attr(load, s_budget, -1, 0) < 0 ? -1 : 1;
}

static int complete(Core *c, Py_ssize_t i, int64_t now) {
    Slot *s = &c->slots[i];
    int code = s->fr.final_code;
    if (code != 200) { /* 200s are the responses not counted here (Recorder.codes_by_status) */
        PyObject *old = PyList_GetItem(c->codes, code);
        if (old == NULL) return -1;
        PyObject *v = PyLong_FromLongLong(PyLong_AsLongLong(old) + 1);
        if (v == NULL || PyList_SetItem(c->codes, code, v) < 0) return -1;
    }
    if (call_append(c->lat, now - s->t_sched) < 0) return -1;
    if (c->ulat != Py_None && call_append(c->ulat, now - s->t_start) < 0) return -1;
    if (churn_add_attr(c->rec, s_gap_ns, (s->t_sent - s->t_sched) + (now - s->t_first), 0) < 0) return -1;
    if (churn_drop(c, s) < 0) return -1;
    PyObject *t = PyLong_FromLongLong(now);
    if (t == NULL) return -1;
    int rc = PyObject_SetAttr(c->load, s_last_done_ns, t);
    if (rc == 0) {
        int go_on = c->closed ? churn_take_budget(c->load) : 0;
        rc = go_on < 0 ? -1 : go_on ? churn_send(c, i, now) : churn_call_back(c->done, i, t);
    }
    Py_DECREF(t);
    return rc;
}

static int eof(Core *c, Py_ssize_t i, int64_t now) {
    Slot *s = &c->slots[i];
    if (s->t_first && framing_ends_at_close(&s->fr)) return complete(c, i, now);
    return fail(c, i, K_CLOSED);
}

static int readable(Core *c, Py_ssize_t i) {
    Slot *s = &c->slots[i];
    ssize_t r = recv(s->fd, c->rbuf, READ_SIZE, 0);
    if (r < 0) {
        if (errno == EAGAIN || errno == EINTR) return 0;
        return fail(c, i, errno == ECONNRESET ? K_RESET : K_CLOSED);
    }
    int64_t now = churn_now_ns();
    if (r == 0) return eof(c, i, now);
    if (!s->t_first) s->t_first = now;
    s->rx += r;
    int st = framing_feed(&s->fr, c->head, c->rbuf, (size_t)r);
    if (st < 0) return fail(c, i, K_MALFORMED);
    return st ? complete(c, i, now) : 0;
}

/* The first send(), begun at `at` (read before it: a pause after it belongs to the wait for the
   response, not to the connect), put `sent` bytes out. */
static int after_send(Core *c, Py_ssize_t i, Py_ssize_t sent, int op, int64_t at) {
    Slot *s = &c->slots[i];
    s->t_sent = at;
    s->sent = sent;
    if (churn_connected(c->rec, s->t_sent - s->t_start) < 0) return -1;
    return epoll_set(c, op, s->fd, (uint32_t)i, sent == PyBytes_GET_SIZE(c->request) ? EPOLLIN : EPOLLOUT);
}

static int writable(Core *c, Py_ssize_t i) {
    Slot *s = &c->slots[i];
    const char *req = PyBytes_AS_STRING(c->request);
    Py_ssize_t len = PyBytes_GET_SIZE(c->request);
    if (s->connecting) {
        int err = 0;
        socklen_t elen = sizeof(err);
        if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0) err = errno;
        if (err) return fail(c, i, churn_connect_kind(err));
        s->connecting = 0;
        int64_t at = churn_now_ns();
        ssize_t n = send(s->fd, req, (size_t)len, MSG_NOSIGNAL);
        if (n < 0 && errno != EAGAIN) return fail(c, i, churn_connect_kind(errno));
        return after_send(c, i, n < 0 ? 0 : n, EPOLL_CTL_MOD, at);
    }
    ssize_t n = send(s->fd, req + s->sent, (size_t)(len - s->sent), MSG_NOSIGNAL);
    if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) return 0;
        return fail(c, i, errno == ECONNRESET ? K_RESET : K_CLOSED);
    }
    s->sent += n;
    return s->sent == len ? epoll_set(c, EPOLL_CTL_MOD, s->fd, (uint32_t)i, EPOLLIN) : 0;
}

int churn_send(Core *c, Py_ssize_t i, int64_t scheduled) {
    Slot *s = &c->slots[i];
    int64_t started = churn_now_ns();
    int fd = socket(c->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        PyErr_SetFromErrno(PyExc_OSError); /* out of descriptors: the run crashes, saying so */
        return -1;
    }
    churn_reset_slot(s);
    s->t_start = started;
    /* Closed model: the request began when the slot started it, connect included (as ab counts). */
    s->t_sched = c->closed || scheduled > started ? started : scheduled;
    int err = connect(fd, (struct sockaddr *)&c->addr, c->addrlen) == 0 ? 0 : errno;
    ssize_t n = -1;
    if (err == 0 || err == EINPROGRESS || err == EAGAIN) {
        s->fd = fd;
        int64_t at = churn_now_ns();
        n = send(fd, PyBytes_AS_STRING(c->request), (size_t)PyBytes_GET_SIZE(c->request), MSG_NOSIGNAL);
        if (n >= 0) return after_send(c, i, n, EPOLL_CTL_ADD, at);
        if (errno == EAGAIN) { /* the handshake is not over: wait until writable */
            s->connecting = 1;
            return epoll_set(c, EPOLL_CTL_ADD, fd, (uint32_t)i, EPOLLOUT);
        }
        err = errno;
    }
    close(fd);
    s->fd = -1;
    /* Counted from the loop (call_soon), so a slot refused again and again never recurses. */
    return churn_call_back(c->failed_soon, i, churn_kinds[churn_connect_kind(err)]);
}

int churn_ready(Core *c) {
    struct epoll_event evs[BATCH];
    int n = epoll_wait(c->epfd, evs, BATCH, 0);
    if (n < 0) {
        if (errno == EINTR) return 0;
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    for (int k = 0; k < n && c->epfd >= 0; k++) { /* a callback may have stopped the run */
        Py_ssize_t i = (Py_ssize_t)(uint32_t)evs[k].data.u64;
        Slot *s = &c->slots[i];
        if (s->fd != (int)(evs[k].data.u64 >> 32)) continue; /* that connection is gone */
        int rc = s->connecting || s->sent < PyBytes_GET_SIZE(c->request) ? writable(c, i) : readable(c, i);
        if (rc < 0) return -1;
    }
    return 0;
}

int churn_sweep(Core *c, int64_t limit, int64_t connect_limit) {
    for (Py_ssize_t i = 0; i < c->nslots && c->epfd >= 0; i++) {
        Slot *s = &c->slots[i];
        if (s->fd >= 0 && (s->connecting ? s->t_start < connect_limit : s->t_sent < limit) &&
            fail(c, i, s->connecting ? K_CONNECT_TIMEOUT : K_TIMEOUT) < 0)
            return -1;
    }
    return 0;
}
