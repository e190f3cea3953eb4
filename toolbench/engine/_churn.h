/* The keep-alive-off core's shared types (see _churn.c): one worker's connections. */
#ifndef TOOLBENCH_CHURN_H
#define TOOLBENCH_CHURN_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

#include "_churn_framing.h"

#define READ_SIZE 65536
#define BATCH 256 /* ready sockets handled per callback; the loop calls again while more are ready */

/* Failure kinds, in recorder.FAILURE_KINDS' order. */
enum { K_REFUSED, K_CONNECT_TIMEOUT, K_CONNECT_OTHER, K_TIMEOUT, K_RESET, K_CLOSED, K_MALFORMED, K_COUNT };

typedef struct {
    int fd;              /* -1: no connection */
    int connecting;      /* waiting for the socket to turn writable */
    Py_ssize_t sent;     /* bytes of the request sent */
    int64_t t_sched, t_start, t_sent, t_first, rx;
    Framing fr;          /* where the response ends */
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

/* An IPv4 or IPv6 address and port as a socket address: 0, or -1 with an exception set. */
int churn_address(const char *address, int port, struct sockaddr_storage *addr, socklen_t *addrlen, int *family);
/* Interns the names the core uses; 0, or -1 with an exception set. */
int churn_intern(void);

/* Shared with the keep-alive core (_churn_keepalive*.c). */
extern PyObject *churn_kinds[K_COUNT]; /* the failure kinds' names, interned */
static inline int64_t churn_clock_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
static inline int64_t churn_now_ns(void) {
    return churn_clock_ns(CLOCK_MONOTONIC); /* = time.perf_counter_ns(), the engine's clock */
}
/* The failure kind of a connect that failed with `err`. */
int churn_connect_kind(int err);
/* attr += value (or = max(attr, value) when `keep_max`), on a Python object. */
int churn_add_attr(PyObject *obj, PyObject *name, int64_t value, int keep_max);
/* fn(i, arg), its result dropped. */
int churn_call_back(PyObject *fn, Py_ssize_t i, PyObject *arg);
/* Counts a connect that took `elapsed` ns into the recorder (Recorder.connected). */
int churn_connected(PyObject *rec, int64_t elapsed);
/* May a closed-model slot go on by itself (not stopped, budget left)? Takes one request of
   the budget: 1, 0, or -1 with an exception set. */
int churn_take_budget(PyObject *load);
/* Opens a connection for slot i and sends the request; `scheduled`: when it was meant to start. */
int churn_send(Core *c, Py_ssize_t i, int64_t scheduled);
/* Handles one batch of ready sockets. */
int churn_ready(Core *c);
/* Fails the requests sent before `limit`, and the connects begun before `connect_limit`. */
int churn_sweep(Core *c, int64_t limit, int64_t connect_limit);
/* Drops the slot's connection, its bytes counted. */
int churn_drop(Core *c, Slot *s);
void churn_reset_slot(Slot *s);

#endif
