/* Keep-alive off in C: the per-connection path of churn.py without a Python frame.

Profiled against ab (bench/README.md): with keep-alive off the kernel's share of a
request was the same for the engine and for ab, and the engine's user time was
2.5-3.5x ab's, all of it the Python interpreter around six system calls. Here the
connect, send, read, framing of the response, timing and close of a connection run
in C; Python is called only when a slot cannot go on by itself (the open model's
schedule, the end of the budget, a failure), exactly where churn.py calls it.

Every response is still timed into the recorder's latency array (its append method,
so the recorder is the same for both paths), and every connect into its connect
figures. The framing follows HTTP/1.1 (RFC 9112 section 6.3): HEAD, 1xx, 204 and
304 have no body; chunked; Content-Length; otherwise the close ends the body. Bytes
that are not an HTTP/1.x status line, a bad length or a bad chunk are "malformed". */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define READ_SIZE 65536
#define BATCH 256
#define HEAD_MAX (256 * 1024) /* a head (or chunk line) longer than this is malformed (llhttp has no limit) */

enum { P_HEAD, P_BODY_LEN, P_CHUNK_SIZE, P_CHUNK_DATA, P_CHUNK_END, P_TRAILER, P_BODY_EOF };
enum { K_REFUSED, K_CONNECT_TIMEOUT, K_CONNECT_OTHER, K_TIMEOUT, K_RESET, K_CLOSED, K_MALFORMED, K_COUNT };
static const char *KIND_NAMES[K_COUNT] = {"connect_refused", "connect_timeout", "connect_other", "timeout",
                                          "reset", "closed", "malformed"};
static PyObject *kinds[K_COUNT];
static PyObject *s_budget, *s_stopped, *s_last_done_ns, *s_connects, *s_connect_sum_ns, *s_connect_max_ns,
    *s_gap_ns, *s_received_bytes;

typedef struct {
    int fd;              /* -1: no connection */
    int connecting;      /* waiting for the socket to turn writable */
    Py_ssize_t sent;     /* bytes of the request sent */
    int64_t t_sched, t_start, t_sent, t_first, rx;
    int pstate, code, final_code, line_ok; /* line_ok: the status line's end was a CRLF */
    int64_t remaining;   /* body or chunk bytes still to come */
    int has_length, chunked, until_close;
    char *buf;           /* a head or chunk line that spans reads */
    size_t len, cap;
} Slot;

typedef struct {
    PyObject_HEAD
    int epfd;
    struct sockaddr_storage addr;
    socklen_t addrlen;
    int family, head, closed;
    PyObject *request;
    Py_ssize_t nslots;
    Slot *slots;
    char *rbuf;
    PyObject *load, *rec, *lat, *ulat, *codes, *done, *failed, *failed_soon;
} Core;

static inline int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* = time.perf_counter_ns(), the engine's clock */
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int connect_kind(int err) {
    return err == ECONNREFUSED ? K_REFUSED : err == ETIMEDOUT ? K_CONNECT_TIMEOUT : K_CONNECT_OTHER;
}

/* attr += delta (or = max(attr, value) when `keep_max`), on a Python object. */
static int add_attr(PyObject *obj, PyObject *name, int64_t value, int keep_max) {
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

static void reset_slot(Slot *s) {
    s->fd = -1;
    s->connecting = 0;
    s->sent = 0;
    s->t_first = s->rx = 0;
    s->pstate = P_HEAD;
    s->code = s->final_code = s->line_ok = 0;
    s->remaining = 0;
    s->has_length = s->chunked = s->until_close = 0;
    s->len = 0;
}

/* Appends to the slot's line buffer; -1 when it would outgrow HEAD_MAX. */
static int keep(Slot *s, const char *p, size_t n) {
    if (s->len + n > HEAD_MAX) return -1;
    if (s->len + n > s->cap) {
        size_t cap = s->cap ? s->cap : 1024;
        while (cap < s->len + n) cap *= 2;
        char *grown = PyMem_Realloc(s->buf, cap);
        if (grown == NULL) return -1;
        s->buf = grown;
        s->cap = cap;
    }
    memcpy(s->buf + s->len, p, n);
    s->len += n;
    return 0;
}

static int header_is(const char *line, size_t n, const char *name, const char **value, size_t *vlen) {
    size_t k = strlen(name);
    if (n <= k || line[k] != ':' || strncasecmp(line, name, k) != 0) return 0;
    const char *v = line + k + 1, *end = line + n;
    while (v < end && (*v == ' ' || *v == '\t')) v++;
    while (end > v && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r')) end--;
    *value = v;
    *vlen = (size_t)(end - v);
    return 1;
}

/* A header line's name is a token followed by ':' (as llhttp requires). */
static int valid_name(const char *line, size_t n) {
    const char *colon = memchr(line, ':', n);
    if (colon == NULL || colon == line) return 0;
    for (const char *c = line; c < colon; c++)
        if (*c <= ' ' || *c >= 127 || strchr("\"(),/;<=>?@[\\]{}", *c)) return 0;
    return 1;
}

/* Parses a complete head (status line and headers, up to its empty line): 0, or -1 if malformed.
   Held to what llhttp (the Python path's parser) accepts, so both paths count the same. */
static int parse_head(Slot *s, const char *p, size_t n) {
    if (n < 13 || memcmp(p, "HTTP/", 5) != 0 || p[5] < '0' || p[5] > '9' || p[6] != '.' || p[7] < '0' ||
        p[7] > '9' || p[8] != ' ' || (p[12] != ' ' && p[12] != '\r'))
        return -1;
    int code = 0;
    for (int k = 9; k < 12; k++) {
        if (p[k] < '0' || p[k] > '9') return -1;
        code = code * 10 + (p[k] - '0');
    }
    if (code < 100) return -1;
    s->code = code;
    s->has_length = s->chunked = s->until_close = 0;
    const char *line = memchr(p, '\n', n);
    const char *end = p + n;
    while (line != NULL && ++line < end) {
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        size_t len = eol ? (size_t)(eol - line) : (size_t)(end - line);
        const char *v;
        size_t vlen;
        if (len == 0 || line[len - 1] != '\r') return -1; /* a bare LF */
        if (len == 1) break; /* the empty line */
        if (!valid_name(line, len)) return -1;
        if (header_is(line, len, "content-length", &v, &vlen)) {
            if (vlen == 0 || vlen > 18) return -1;
            int64_t length = 0;
            for (size_t k = 0; k < vlen; k++) {
                if (v[k] < '0' || v[k] > '9') return -1;
                length = length * 10 + (v[k] - '0');
            }
            if (s->has_length) return -1; /* a duplicate, even an equal one */
            s->has_length = 1;
            s->remaining = length;
        } else if (header_is(line, len, "transfer-encoding", &v, &vlen)) {
            s->chunked = vlen >= 7 && strncasecmp(v + vlen - 7, "chunked", 7) == 0;
            s->until_close = !s->chunked; /* another coding last: the close ends the body */
        }
        line = eol;
    }
    return s->has_length && (s->chunked || s->until_close) ? -1 : 0; /* both: a smuggler's answer */
}

/* The state after a head: 1 if the response is complete, 0 if a body follows. */
static int after_head(Core *c, Slot *s) {
    s->line_ok = 0; /* the next head's, after an interim one */
    if (s->code < 200) { /* interim: the real response follows */
        s->pstate = P_HEAD;
        return 0;
    }
    s->final_code = s->code;
    if (c->head || s->code == 204 || s->code == 304) return 1;
    if (s->chunked) s->pstate = P_CHUNK_SIZE;
    else if (s->has_length && !s->until_close) s->pstate = P_BODY_LEN;
    else s->pstate = P_BODY_EOF;
    return s->pstate == P_BODY_LEN && s->remaining == 0;
}

static int chunk_line(Slot *s, const char *line, size_t n) {
    while (n && (line[n - 1] == '\r')) n--;
    if (s->pstate == P_CHUNK_END) {
        if (n) return -1;
        s->pstate = P_CHUNK_SIZE;
        return 0;
    }
    if (s->pstate == P_TRAILER) return n == 0 ? 1 : 0;
    int64_t size = 0;
    size_t k = 0;
    for (; k < n && k < 15; k++) { /* 15 hex digits at most: no overflow */
        char ch = line[k];
        int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
              : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
        if (d < 0) break;
        size = size * 16 + d;
    }
    if (k == 0 || (k < n && line[k] != ';' && line[k] != ' ' && line[k] != '\t')) return -1;
    s->remaining = size;
    s->pstate = size ? P_CHUNK_DATA : P_TRAILER;
    return 0;
}

/* Feeds received bytes: 1 when the response is complete, 0 for more, -1 if malformed. */
static int feed(Core *c, Slot *s, const char *p, size_t n) {
    while (n) {
        switch (s->pstate) {
        case P_HEAD: {
            size_t had = s->len, check = had + n < 5 ? had + n : 5;
            for (size_t k = had; k < check; k++) /* not HTTP: say so at once, not at a head's end */
                if (p[k - had] != "HTTP/"[k]) return -1;
            const char *end = NULL;
            if (!s->line_ok) { /* llhttp refuses a bare LF at once: say so then, not at the head's end */
                const char *lf = memchr(p, '\n', n);
                if (lf != NULL) {
                    char before = lf > p ? lf[-1] : had ? s->buf[had - 1] : 0;
                    if (before != '\r') return -1;
                    s->line_ok = 1;
                }
            }
            if (had == 0) {
                end = memmem(p, n, "\r\n\r\n", 4);
                if (end != NULL) {
                    size_t used = (size_t)(end - p) + 4;
                    if (parse_head(s, p, used - 2) < 0) return -1;
                    p += used;
                    n -= used;
                    if (after_head(c, s)) return 1;
                    continue;
                }
            }
            size_t from = had > 3 ? had - 3 : 0, take = n < HEAD_MAX - had ? n : HEAD_MAX - had;
            if (keep(s, p, take) < 0) return -1;
            end = memmem(s->buf + from, s->len - from, "\r\n\r\n", 4);
            if (end == NULL) return take < n ? -1 : 0; /* a head longer than HEAD_MAX */
            size_t head_len = (size_t)(end - s->buf) + 4, used = head_len - had;
            s->len = 0;
            if (parse_head(s, s->buf, head_len - 2) < 0) return -1;
            p += used;
            n -= used;
            if (after_head(c, s)) return 1;
            continue;
        }
        case P_BODY_LEN:
        case P_CHUNK_DATA: {
            size_t take = (int64_t)n < s->remaining ? n : (size_t)s->remaining;
            s->remaining -= take;
            p += take;
            n -= take;
            if (s->remaining == 0) {
                if (s->pstate == P_BODY_LEN) return 1;
                s->pstate = P_CHUNK_END;
            }
            continue;
        }
        case P_BODY_EOF:
            return 0; /* the close ends it */
        default: { /* a chunk's size line, the CRLF after its data, or a trailer line */
            const char *eol = memchr(p, '\n', n);
            size_t take = eol ? (size_t)(eol - p) + 1 : n;
            if (keep(s, p, take) < 0) return -1;
            p += take;
            n -= take;
            if (eol == NULL) return 0;
            int rc = chunk_line(s, s->buf, s->len - 1);
            s->len = 0;
            if (rc) return rc;
        }
        }
    }
    return 0;
}

static int epoll_set(Core *c, int op, int fd, uint32_t i, uint32_t events) {
    struct epoll_event ev = {.events = events, .data.u64 = ((uint64_t)(uint32_t)fd << 32) | i};
    if (epoll_ctl(c->epfd, op, fd, &ev) == 0) return 0;
    PyErr_SetFromErrno(PyExc_OSError);
    return -1;
}

static int connected(Core *c, int64_t elapsed) {
    if (add_attr(c->rec, s_connects, 1, 0) < 0 || add_attr(c->rec, s_connect_sum_ns, elapsed, 0) < 0)
        return -1;
    return add_attr(c->rec, s_connect_max_ns, elapsed, 1);
}

/* Drops the slot's connection, its bytes counted. */
static int drop(Core *c, Slot *s) {
    int64_t rx = s->rx;
    if (s->fd >= 0) close(s->fd); /* and out of the epoll set with it */
    reset_slot(s);
    return add_attr(c->rec, s_received_bytes, rx, 0);
}

static int call_back(PyObject *fn, Py_ssize_t i, PyObject *arg) {
    PyObject *r = PyObject_CallFunction(fn, "nO", i, arg);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

static int fail(Core *c, Py_ssize_t i, int kind) {
    if (drop(c, &c->slots[i]) < 0) return -1;
    return call_back(c->failed, i, kinds[kind]); /* counts it and ends the request, in Python */
}

static int send_request(Core *c, Py_ssize_t i, int64_t scheduled);

/* May the slot go on by itself (the closed model, budget left)? Takes one request of the budget. */
static int take_budget(Core *c) {
    PyObject *stopped = PyObject_GetAttr(c->load, s_stopped);
    if (stopped == NULL) return -1;
    int is_stopped = PyObject_IsTrue(stopped);
    Py_DECREF(stopped);
    if (is_stopped) return is_stopped < 0 ? -1 : 0;
    PyObject *budget = PyObject_GetAttr(c->load, s_budget);
    if (budget == NULL) return -1;
    long long left = PyLong_AsLongLong(budget);
    Py_DECREF(budget);
    if (left == -1 && PyErr_Occurred()) return -1;
    if (left <= 0) return 0;
    return add_attr(c->load, s_budget, -1, 0) < 0 ? -1 : 1;
}

static int complete(Core *c, Py_ssize_t i, int64_t now) {
    Slot *s = &c->slots[i];
    int code = s->final_code;
    if (code != 200) { /* 200s are the responses not counted here (Recorder.codes_by_status) */
        PyObject *old = PyList_GetItem(c->codes, code);
        if (old == NULL) return -1;
        PyObject *v = PyLong_FromLongLong(PyLong_AsLongLong(old) + 1);
        if (v == NULL || PyList_SetItem(c->codes, code, v) < 0) return -1;
    }
    if (call_append(c->lat, now - s->t_sched) < 0) return -1;
    if (c->ulat != Py_None && call_append(c->ulat, now - s->t_start) < 0) return -1;
    if (add_attr(c->rec, s_gap_ns, (s->t_sent - s->t_sched) + (now - s->t_first), 0) < 0) return -1;
    if (drop(c, s) < 0) return -1;
    PyObject *t = PyLong_FromLongLong(now);
    if (t == NULL) return -1;
    int rc = PyObject_SetAttr(c->load, s_last_done_ns, t);
    if (rc == 0) {
        int go_on = c->closed ? take_budget(c) : 0;
        rc = go_on < 0 ? -1 : go_on ? send_request(c, i, now) : call_back(c->done, i, t);
    }
    Py_DECREF(t);
    return rc;
}

static int eof(Core *c, Py_ssize_t i, int64_t now) {
    Slot *s = &c->slots[i];
    if (s->t_first && s->pstate == P_BODY_EOF) return complete(c, i, now);
    return fail(c, i, K_CLOSED);
}

static int readable(Core *c, Py_ssize_t i) {
    Slot *s = &c->slots[i];
    ssize_t r = recv(s->fd, c->rbuf, READ_SIZE, 0);
    if (r < 0) {
        if (errno == EAGAIN || errno == EINTR) return 0;
        return fail(c, i, errno == ECONNRESET ? K_RESET : K_CLOSED);
    }
    int64_t now = now_ns();
    if (r == 0) return eof(c, i, now);
    if (!s->t_first) s->t_first = now;
    s->rx += r;
    int st = feed(c, s, c->rbuf, (size_t)r);
    if (st < 0) return fail(c, i, K_MALFORMED);
    return st ? complete(c, i, now) : 0;
}

static int after_send(Core *c, Py_ssize_t i, Py_ssize_t sent, int op) {
    Slot *s = &c->slots[i];
    s->t_sent = now_ns();
    s->sent = sent;
    if (connected(c, s->t_sent - s->t_start) < 0) return -1;
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
        if (err) return fail(c, i, connect_kind(err));
        s->connecting = 0;
        ssize_t n = send(s->fd, req, (size_t)len, MSG_NOSIGNAL);
        if (n < 0 && errno != EAGAIN) return fail(c, i, connect_kind(errno));
        return after_send(c, i, n < 0 ? 0 : n, EPOLL_CTL_MOD);
    }
    ssize_t n = send(s->fd, req + s->sent, (size_t)(len - s->sent), MSG_NOSIGNAL);
    if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) return 0;
        return fail(c, i, errno == ECONNRESET ? K_RESET : K_CLOSED);
    }
    s->sent += n;
    return s->sent == len ? epoll_set(c, EPOLL_CTL_MOD, s->fd, (uint32_t)i, EPOLLIN) : 0;
}

/* Opens a connection and sends the request; `scheduled` is when it was meant to start. */
static int send_request(Core *c, Py_ssize_t i, int64_t scheduled) {
    Slot *s = &c->slots[i];
    int64_t started = now_ns();
    int fd = socket(c->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        PyErr_SetFromErrno(PyExc_OSError); /* out of descriptors: the run crashes, saying so */
        return -1;
    }
    reset_slot(s);
    s->t_start = started;
    /* Closed model: the request began when the slot started it, connect included (as ab counts). */
    s->t_sched = c->closed || scheduled > started ? started : scheduled;
    int err = connect(fd, (struct sockaddr *)&c->addr, c->addrlen) == 0 ? 0 : errno;
    ssize_t n = -1;
    if (err == 0 || err == EINPROGRESS || err == EAGAIN) {
        s->fd = fd;
        n = send(fd, PyBytes_AS_STRING(c->request), (size_t)PyBytes_GET_SIZE(c->request), MSG_NOSIGNAL);
        if (n >= 0) return after_send(c, i, n, EPOLL_CTL_ADD);
        if (errno == EAGAIN) { /* the handshake is not over: wait until writable */
            s->connecting = 1;
            return epoll_set(c, EPOLL_CTL_ADD, fd, (uint32_t)i, EPOLLOUT);
        }
        err = errno;
    }
    close(fd);
    s->fd = -1;
    /* Counted from the loop (call_soon), so a slot refused again and again never recurses. */
    return call_back(c->failed_soon, i, kinds[connect_kind(err)]);
}

static PyObject *Core_send(Core *c, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) return PyErr_Format(PyExc_TypeError, "send(slot, scheduled_ns)");
    Py_ssize_t i = PyLong_AsSsize_t(args[0]);
    long long scheduled = PyLong_AsLongLong(args[1]);
    if (PyErr_Occurred()) return NULL;
    if (i < 0 || i >= c->nslots) return PyErr_Format(PyExc_IndexError, "no slot %zd", i);
    if (c->epfd < 0) Py_RETURN_NONE; /* stopped */
    return send_request(c, i, scheduled) < 0 ? NULL : Py_NewRef(Py_None);
}

/* The loop's callback: the epoll set has ready sockets. */
static PyObject *Core_ready(Core *c, PyObject *unused) {
    struct epoll_event evs[BATCH];
    if (c->epfd < 0) Py_RETURN_NONE;
    int n = epoll_wait(c->epfd, evs, BATCH, 0);
    if (n < 0) return errno == EINTR ? Py_NewRef(Py_None) : PyErr_SetFromErrno(PyExc_OSError);
    for (int k = 0; k < n && c->epfd >= 0; k++) { /* a callback may have stopped the run */
        Py_ssize_t i = (Py_ssize_t)(uint32_t)evs[k].data.u64;
        Slot *s = &c->slots[i];
        if (s->fd != (int)(evs[k].data.u64 >> 32)) continue; /* that connection is gone */
        int rc = s->connecting || s->sent < PyBytes_GET_SIZE(c->request) ? writable(c, i) : readable(c, i);
        if (rc < 0) return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *Core_sweep(Core *c, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) return PyErr_Format(PyExc_TypeError, "sweep(limit_ns, connect_limit_ns)");
    long long limit = PyLong_AsLongLong(args[0]), connect_limit = PyLong_AsLongLong(args[1]);
    if (PyErr_Occurred()) return NULL;
    for (Py_ssize_t i = 0; i < c->nslots && c->epfd >= 0; i++) {
        Slot *s = &c->slots[i];
        if (s->fd < 0) continue;
        if (s->connecting ? s->t_start < connect_limit : s->t_sent < limit) {
            if (fail(c, i, s->connecting ? K_CONNECT_TIMEOUT : K_TIMEOUT) < 0) return NULL;
        }
    }
    Py_RETURN_NONE;
}

static PyObject *Core_window_starts(Core *c, PyObject *unused) {
    Py_ssize_t busy = 0;
    for (Py_ssize_t i = 0; i < c->nslots; i++) {
        if (c->slots[i].fd >= 0) {
            c->slots[i].rx = 0; /* the bytes of the requests in flight count from now */
            busy++;
        }
    }
    return PyLong_FromSsize_t(busy);
}

static PyObject *Core_busy(Core *c, PyObject *arg) {
    Py_ssize_t i = PyLong_AsSsize_t(arg);
    if (i == -1 && PyErr_Occurred()) return NULL;
    if (i < 0 || i >= c->nslots) return PyErr_Format(PyExc_IndexError, "no slot %zd", i);
    return PyBool_FromLong(c->slots[i].fd >= 0);
}

static PyObject *Core_stop(Core *c, PyObject *unused) {
    for (Py_ssize_t i = 0; i < c->nslots; i++)
        if (c->slots[i].fd >= 0 && drop(c, &c->slots[i]) < 0) return NULL;
    if (c->epfd >= 0) {
        close(c->epfd);
        c->epfd = -1;
    }
    Py_RETURN_NONE;
}

static PyObject *Core_fileno(Core *c, PyObject *unused) { return PyLong_FromLong(c->epfd); }

static int Core_init(Core *c, PyObject *args, PyObject *kw) {
    static char *names[] = {"address", "port", "request", "slots", "head", "closed", "load", "rec",
                            "done", "failed", "failed_soon", NULL};
    const char *address;
    int port, head, closed;
    PyObject *request, *load, *rec, *done, *failed, *failed_soon;
    Py_ssize_t nslots;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "siSnppOOOOO", names, &address, &port, &request, &nslots, &head,
                                     &closed, &load, &rec, &done, &failed, &failed_soon))
        return -1;
    if (nslots < 1 || nslots > UINT32_MAX || port < 1 || port > 65535) {
        PyErr_SetString(PyExc_ValueError, "slots or port out of range");
        return -1;
    }
    memset(&c->addr, 0, sizeof(c->addr));
    struct sockaddr_in *v4 = (struct sockaddr_in *)&c->addr;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&c->addr;
    if (inet_pton(AF_INET, address, &v4->sin_addr) == 1) {
        v4->sin_family = c->family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        c->addrlen = sizeof(*v4);
    } else if (inet_pton(AF_INET6, address, &v6->sin6_addr) == 1) {
        v6->sin6_family = c->family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        c->addrlen = sizeof(*v6);
    } else {
        PyErr_Format(PyExc_ValueError, "not an IP address: %s", address);
        return -1;
    }
    PyObject *lat = PyObject_GetAttrString(rec, "lat"), *ulat = PyObject_GetAttrString(rec, "ulat");
    PyObject *codes = PyObject_GetAttrString(rec, "codes");
    int ok = lat && ulat && codes && PyList_Check(codes) && PyList_GET_SIZE(codes) == 1000;
    if (ok) {
        c->lat = PyObject_GetAttrString(lat, "append");
        c->ulat = ulat == Py_None ? Py_NewRef(Py_None) : PyObject_GetAttrString(ulat, "append");
        ok = c->lat && c->ulat;
    }
    Py_XDECREF(lat);
    Py_XDECREF(ulat);
    if (!ok) {
        Py_XDECREF(codes);
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "rec.codes: a list of 1000 counts");
        return -1;
    }
    c->codes = codes;
    c->head = head;
    c->closed = closed;
    c->request = Py_NewRef(request);
    c->load = Py_NewRef(load);
    c->rec = Py_NewRef(rec);
    c->done = Py_NewRef(done);
    c->failed = Py_NewRef(failed);
    c->failed_soon = Py_NewRef(failed_soon);
    c->slots = PyMem_Calloc((size_t)nslots, sizeof(Slot));
    c->rbuf = PyMem_Malloc(READ_SIZE);
    if (c->slots == NULL || c->rbuf == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    c->nslots = nslots;
    for (Py_ssize_t i = 0; i < nslots; i++) reset_slot(&c->slots[i]);
    c->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (c->epfd < 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    return 0;
}

static PyObject *Core_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    Core *c = (Core *)type->tp_alloc(type, 0);
    if (c != NULL) c->epfd = -1;
    return (PyObject *)c;
}

static int Core_traverse(Core *c, visitproc visit, void *arg) {
    Py_VISIT(c->request);
    Py_VISIT(c->load);
    Py_VISIT(c->rec);
    Py_VISIT(c->lat);
    Py_VISIT(c->ulat);
    Py_VISIT(c->codes);
    Py_VISIT(c->done);
    Py_VISIT(c->failed);
    Py_VISIT(c->failed_soon);
    return 0;
}

static int Core_clear(Core *c) {
    Py_CLEAR(c->request);
    Py_CLEAR(c->load);
    Py_CLEAR(c->rec);
    Py_CLEAR(c->lat);
    Py_CLEAR(c->ulat);
    Py_CLEAR(c->codes);
    Py_CLEAR(c->done);
    Py_CLEAR(c->failed);
    Py_CLEAR(c->failed_soon);
    return 0;
}

static void Core_dealloc(Core *c) {
    PyObject_GC_UnTrack(c);
    for (Py_ssize_t i = 0; c->slots != NULL && i < c->nslots; i++) {
        if (c->slots[i].fd >= 0) close(c->slots[i].fd);
        PyMem_Free(c->slots[i].buf);
    }
    if (c->epfd >= 0) close(c->epfd);
    PyMem_Free(c->slots);
    PyMem_Free(c->rbuf);
    Core_clear(c);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static PyMethodDef Core_methods[] = {
    {"send", (PyCFunction)(void (*)(void))Core_send, METH_FASTCALL, "send(slot, scheduled_ns): a new request"},
    {"ready", (PyCFunction)Core_ready, METH_NOARGS, "the epoll set has ready sockets: handle a batch"},
    {"sweep", (PyCFunction)(void (*)(void))Core_sweep, METH_FASTCALL,
     "sweep(limit_ns, connect_limit_ns): fail requests sent before limit, connects begun before connect_limit"},
    {"window_starts", (PyCFunction)Core_window_starts, METH_NOARGS, "zero in-flight bytes; return how many in flight"},
    {"busy", (PyCFunction)Core_busy, METH_O, "busy(slot): whether the slot has a connection"},
    {"stop", (PyCFunction)Core_stop, METH_NOARGS, "drop every connection (their bytes counted), close the set"},
    {"fileno", (PyCFunction)Core_fileno, METH_NOARGS, "the epoll set's descriptor (-1 once stopped)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "toolbench.engine._churn.Core",
    .tp_basicsize = sizeof(Core),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "One worker's keep-alive-off connections, in an epoll set the event loop watches.",
    .tp_new = Core_new,
    .tp_init = (initproc)Core_init,
    .tp_dealloc = (destructor)Core_dealloc,
    .tp_traverse = (traverseproc)Core_traverse,
    .tp_clear = (inquiry)Core_clear,
    .tp_methods = Core_methods,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_churn", "Keep-alive off, in C (see churn_native.py).",
                                    -1, NULL};

PyMODINIT_FUNC PyInit__churn(void) {
    if (PyType_Ready(&CoreType) < 0) return NULL;
    for (int k = 0; k < K_COUNT; k++)
        if ((kinds[k] = PyUnicode_InternFromString(KIND_NAMES[k])) == NULL) return NULL;
    if (!(s_budget = PyUnicode_InternFromString("budget")) || !(s_stopped = PyUnicode_InternFromString("stopped")) ||
        !(s_last_done_ns = PyUnicode_InternFromString("last_done_ns")) ||
        !(s_connects = PyUnicode_InternFromString("connects")) ||
        !(s_connect_sum_ns = PyUnicode_InternFromString("connect_sum_ns")) ||
        !(s_connect_max_ns = PyUnicode_InternFromString("connect_max_ns")) ||
        !(s_gap_ns = PyUnicode_InternFromString("gap_ns")) ||
        !(s_received_bytes = PyUnicode_InternFromString("received_bytes")))
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddObjectRef(m, "Core", (PyObject *)&CoreType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
