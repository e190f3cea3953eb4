/* Keep-alive on in C: client.py's Conn path (a protocol per connection around uvloop) without
   a Python frame per request.

Measured on the Python path: about 15 µs of CPU per request against wrk's 11.5 (c50, pinned),
the difference the interpreter and uvloop around the two system calls a request needs. Here a
worker's connections live in one epoll set of its own, which the event loop watches (one
callback per batch of ready sockets): the response is read and framed (_churn_framing.c, held
to llhttp's verdicts, its keep-alive too), timed, and the next request sent on the same
connection with one send(), no epoll_ctl. Python is called only where client.py leaves its fast
path: the open model's schedule, a request count's budget, a failure. A connection the server
closes (Connection: close after nginx's keepalive_requests, a body the close ends) is reopened
for the next request, its connect counted, as load.Slot does.

Held callbacks (the closed model run by time, `alone`): a callback does not hand the loop back
after its batch. The worker tells the core when the loop's next timer is due (hold(): the tick,
the sweep, the stop) and the core waits in its own set for the next responses until then
(epoll_pwait2, the GIL released), so the loop's own epoll_wait, its Python call and the batch's
hand-over are paid a few times a second instead of once per wake-up. It hands the loop back at
once when the worker's pipe turns readable (the parent's stop, registered in the set) or Python
was called back (a failure: its call_soon must run). TOOLBENCH_ENGINE_HOLD=0 turns it off.

The latencies go into the recorder's arrays every BATCH responses and whenever the loop gets
control back (array.frombytes), the status
codes into its list as they come; the bytes received, the time-to-first-byte gap and the silent
connections are handed over at the stop (churn_native.NativeKeepAlive), where Load.totals()
would have read them off the live connections. Here: the Python type; the connections are in
_churn_keepalive_conn.c.

Coalesced reads (`coalesce_ns`, the closed model run by time; off unless asked, options.py says
why): nginx on its own core sends the responses one at a time, and a core that reads each as it
comes wakes for one or two, each wake-up paid by the server's core too. So after a batch the
core waits for the response to a request sent a little after the oldest in flight (at most
coalesce_ns after it, a quarter of the span in flight), by which time about the ones before it
have come too, and reads them all; each is timed by the kernel's receive timestamp, which the
wait does not move. The wait is on that socket, not on a timer: on this VM timers fired late
when the host was busy, and a timed wait then left nginx short of requests (bench/README.md).
What the closed model gains is a short pause between a response and the next request on its
connection, summed here and said in the result. */
#include "_churn_keepalive.h"

#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

static int slot_index(KeepAlive *c, PyObject *arg, Py_ssize_t *i) {
    *i = PyLong_AsSsize_t(arg);
    if (*i == -1 && PyErr_Occurred()) return -1;
    if (*i < 0 || *i >= c->nslots) {
        PyErr_Format(PyExc_IndexError, "no slot %zd", *i);
        return -1;
    }
    return 0;
}

static PyObject *KA_open(KeepAlive *c, PyObject *arg) {
    Py_ssize_t i;
    if (slot_index(c, arg, &i) < 0) return NULL;
    if (c->epfd < 0) return PyErr_Format(PyExc_RuntimeError, "stopped");
    int rc = ka_open(c, i);
    if (rc < 0) return NULL;
    return rc == 0 ? Py_NewRef(Py_None) : PyLong_FromLong(rc);
}

static PyObject *KA_send(KeepAlive *c, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) return PyErr_Format(PyExc_TypeError, "send(slot, scheduled_ns)");
    Py_ssize_t i;
    if (slot_index(c, args[0], &i) < 0) return NULL;
    long long scheduled = PyLong_AsLongLong(args[1]);
    if (scheduled == -1 && PyErr_Occurred()) return NULL;
    if (c->epfd < 0) Py_RETURN_NONE; /* stopped */
    return ka_send(c, i, scheduled, churn_now_ns()) < 0 ? NULL : Py_NewRef(Py_None);
}

/* The loop's callback: the epoll set has ready sockets. */
static PyObject *KA_ready(KeepAlive *c, PyObject *unused) {
    if (c->epfd < 0) Py_RETURN_NONE; /* stopped */
    return ka_ready(c) < 0 ? NULL : Py_NewRef(Py_None);
}

static PyObject *KA_hold(KeepAlive *c, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) return PyErr_Format(PyExc_TypeError, "hold(until_ns, wake_fd)");
    long long until = PyLong_AsLongLong(args[0]);
    long wake_fd = PyLong_AsLong(args[1]);
    if (PyErr_Occurred()) return NULL;
    if (until < 0 || wake_fd < -1 || wake_fd > INT_MAX) return PyErr_Format(PyExc_ValueError, "hold: out of range");
    if (c->epfd < 0) Py_RETURN_NONE; /* stopped */
    return ka_hold(c, until, (int)wake_fd) < 0 ? NULL : Py_NewRef(Py_None);
}

static PyObject *KA_sweep(KeepAlive *c, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) return PyErr_Format(PyExc_TypeError, "sweep(limit_ns, connect_limit_ns)");
    long long limit = PyLong_AsLongLong(args[0]), connect_limit = PyLong_AsLongLong(args[1]);
    if (PyErr_Occurred()) return NULL;
    return ka_sweep(c, limit, connect_limit) < 0 ? NULL : Py_NewRef(Py_None);
}

static PyObject *KA_abandon(KeepAlive *c, PyObject *unused) {
    PyObject *gone = PyList_New(0);
    for (Py_ssize_t i = 0; gone != NULL && i < c->nslots; i++) {
        if (c->slots[i].state != KS_OPENING) continue;
        ka_drop(c, &c->slots[i]);
        PyObject *index = PyLong_FromSsize_t(i);
        if (index == NULL || PyList_Append(gone, index) < 0) Py_CLEAR(gone);
        Py_XDECREF(index);
    }
    return gone;
}

static PyObject *KA_window_starts(KeepAlive *c, PyObject *unused) {
    Py_ssize_t busy = 0;
    for (Py_ssize_t i = 0; i < c->nslots; i++) {
        c->slots[i].rx = 0; /* the bytes on the open connections count from now */
        busy += ka_in_flight(&c->slots[i]);
    }
    c->rx = c->gap = c->silent = c->sent_alone = c->linger_ns = c->linger_n = 0;
    c->window_ns = churn_now_ns();
    return PyLong_FromSsize_t(busy);
}

static PyObject *KA_busy(KeepAlive *c, PyObject *arg) {
    Py_ssize_t i;
    if (slot_index(c, arg, &i) < 0) return NULL;
    return PyBool_FromLong(ka_in_flight(&c->slots[i]));
}

static PyObject *KA_stop(KeepAlive *c, PyObject *unused) {
    for (Py_ssize_t i = 0; i < c->nslots; i++) ka_drop(c, &c->slots[i]); /* in flight: dropped uncounted */
    if (c->epfd >= 0) {
        close(c->epfd);
        c->epfd = -1;
    }
    if (ka_flush(c) < 0) return NULL;
    return Py_BuildValue("LLLLLLL", (long long)c->rx, (long long)c->gap, (long long)c->silent,
                         (long long)c->sent_alone, (long long)c->last_done, (long long)c->linger_ns,
                         (long long)c->linger_n);
}

static PyObject *KA_fileno(KeepAlive *c, PyObject *unused) { return PyLong_FromLong(c->epfd); }

/* rec.<name>.frombytes, checked to hold 8-byte integers (array('q')); Py_None for None. */
static PyObject *adder(PyObject *rec, const char *name) {
    PyObject *arr = PyObject_GetAttrString(rec, name);
    if (arr == NULL || arr == Py_None) return arr;
    PyObject *size = PyObject_GetAttrString(arr, "itemsize");
    long itemsize = size != NULL ? PyLong_AsLong(size) : -1;
    Py_XDECREF(size);
    PyObject *add = itemsize == (long)sizeof(int64_t) ? PyObject_GetAttrString(arr, "frombytes") : NULL;
    if (add == NULL && !PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "rec.%s: an array('q')", name);
    Py_DECREF(arr);
    return add;
}

static int KA_init(KeepAlive *c, PyObject *args, PyObject *kw) {
    static char *names[] = {"address", "port", "request", "slots", "head", "closed", "counted", "load", "rec",
                            "done", "failed", "failed_soon", "opened", "coalesce_ns", NULL};
    const char *address;
    int port, head, closed, counted;
    long long coalesce = 0;
    PyObject *request, *load, *rec, *done, *failed, *failed_soon, *opened;
    Py_ssize_t nslots;
    if (c->slots != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "already initialised");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kw, "siSnpppOOOOOO|L", names, &address, &port, &request, &nslots, &head,
                                     &closed, &counted, &load, &rec, &done, &failed, &failed_soon, &opened,
                                     &coalesce))
        return -1;
    if (nslots < 1 || nslots > UINT32_MAX || port < 1 || port > 65535 || PyBytes_GET_SIZE(request) == 0 ||
        coalesce < 0 || coalesce > 1000000000LL) {
        PyErr_SetString(PyExc_ValueError, "slots, port, request or coalesce_ns out of range");
        return -1;
    }
    if (churn_address(address, port, &c->addr, &c->addrlen, &c->family) < 0) return -1;
    PyObject *codes = PyObject_GetAttrString(rec, "codes");
    if (codes == NULL) return -1;
    c->codes = codes;
    if (!PyList_Check(codes) || PyList_GET_SIZE(codes) != 1000) {
        PyErr_SetString(PyExc_TypeError, "rec.codes: a list of 1000 counts");
        return -1;
    }
    if ((c->lat_add = adder(rec, "lat")) == NULL || (c->ulat_add = adder(rec, "ulat")) == NULL) return -1;
    c->head = head;
    c->closed = closed;
    c->alone = closed && !counted;
    c->coalesce_ns = c->alone ? coalesce : 0; /* elsewhere Python sends the next request: nothing to gain */
    c->request = Py_NewRef(request);
    c->load = Py_NewRef(load);
    c->rec = Py_NewRef(rec);
    c->done = Py_NewRef(done);
    c->failed = Py_NewRef(failed);
    c->failed_soon = Py_NewRef(failed_soon);
    c->opened = Py_NewRef(opened);
    c->slots = PyMem_Calloc((size_t)nslots, sizeof(KSlot));
    c->rbuf = PyMem_Malloc(READ_SIZE);
    c->lat = PyMem_Malloc(BATCH * sizeof(int64_t));
    c->ulat = c->ulat_add != Py_None ? PyMem_Malloc(BATCH * sizeof(int64_t)) : NULL;
    if (c->slots == NULL || c->rbuf == NULL || c->lat == NULL || (c->ulat_add != Py_None && c->ulat == NULL)) {
        PyErr_NoMemory();
        return -1;
    }
    c->nslots = nslots;
    for (Py_ssize_t i = 0; i < nslots; i++) ka_reset_slot(&c->slots[i]);
    c->window_ns = INT64_MAX; /* no window yet: every connection closed before it is silent in it */
    c->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (c->epfd < 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    return 0;
}

static PyObject *KA_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    KeepAlive *c = (KeepAlive *)type->tp_alloc(type, 0);
    if (c != NULL) c->epfd = c->wake_fd = -1;
    return (PyObject *)c;
}

static int KA_traverse(KeepAlive *c, visitproc visit, void *arg) {
    Py_VISIT(c->request);
    Py_VISIT(c->load);
    Py_VISIT(c->rec);
    Py_VISIT(c->lat_add);
    Py_VISIT(c->ulat_add);
    Py_VISIT(c->codes);
    Py_VISIT(c->done);
    Py_VISIT(c->failed);
    Py_VISIT(c->failed_soon);
    Py_VISIT(c->opened);
    return 0;
}

static int KA_clear(KeepAlive *c) {
    Py_CLEAR(c->request);
    Py_CLEAR(c->load);
    Py_CLEAR(c->rec);
    Py_CLEAR(c->lat_add);
    Py_CLEAR(c->ulat_add);
    Py_CLEAR(c->codes);
    Py_CLEAR(c->done);
    Py_CLEAR(c->failed);
    Py_CLEAR(c->failed_soon);
    Py_CLEAR(c->opened);
    return 0;
}

static void KA_dealloc(KeepAlive *c) {
    PyObject_GC_UnTrack(c);
    for (Py_ssize_t i = 0; c->slots != NULL && i < c->nslots; i++) {
        if (c->slots[i].fd >= 0) close(c->slots[i].fd);
        framing_free(&c->slots[i].fr);
    }
    if (c->epfd >= 0) close(c->epfd);
    PyMem_Free(c->slots);
    PyMem_Free(c->rbuf);
    PyMem_Free(c->lat);
    PyMem_Free(c->ulat);
    KA_clear(c);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static PyMethodDef KA_methods[] = {
    {"open", (PyCFunction)KA_open, METH_O,
     "open(slot): start opening its connection before the clock; None, or the errno of a connect failed at once"},
    {"send", (PyCFunction)(void (*)(void))KA_send, METH_FASTCALL, "send(slot, scheduled_ns): its next request"},
    {"ready", (PyCFunction)KA_ready, METH_NOARGS, "the epoll set has ready sockets: handle a batch, or go on until a hold (hold()) ends"},
    {"hold", (PyCFunction)(void (*)(void))KA_hold, METH_FASTCALL,
     "hold(until_ns, wake_fd): a callback may wait for sockets until then (the loop's next timer), handing the loop "
     "back early when wake_fd (-1: none) turns readable; the closed model run by time only"},
    {"sweep", (PyCFunction)(void (*)(void))KA_sweep, METH_FASTCALL,
     "sweep(limit_ns, connect_limit_ns): fail requests sent before limit, connects begun before connect_limit"},
    {"abandon", (PyCFunction)KA_abandon, METH_NOARGS, "close the connections still opening; return their slots"},
    {"window_starts", (PyCFunction)KA_window_starts, METH_NOARGS,
     "count from now (bytes, gap, silent connections); return how many requests are in flight"},
    {"busy", (PyCFunction)KA_busy, METH_O, "busy(slot): whether it has a request (or its connect) in flight"},
    {"stop", (PyCFunction)KA_stop, METH_NOARGS,
     "drop every connection, close the set; return (received_bytes, gap_ns, silent_conns, sent_alone, last_done_ns, "
     "linger_ns, lingered)"},
    {"fileno", (PyCFunction)KA_fileno, METH_NOARGS, "the epoll set's descriptor (-1 once stopped)"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject KeepAliveType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "toolbench.engine._churn.KeepAlive",
    .tp_basicsize = sizeof(KeepAlive),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "One worker's keep-alive connections, in an epoll set the event loop watches.",
    .tp_new = KA_new,
    .tp_init = (initproc)KA_init,
    .tp_dealloc = (destructor)KA_dealloc,
    .tp_traverse = (traverseproc)KA_traverse,
    .tp_clear = (inquiry)KA_clear,
    .tp_methods = KA_methods,
};
