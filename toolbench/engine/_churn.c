/* Keep-alive off in C: the per-connection path of churn.py without a Python frame.

Profiled against ab (bench/README.md): with keep-alive off the kernel's share of a
request was the same for the engine and for ab, and the engine's user time was
2.5-3.5x ab's, all of it the Python interpreter around six system calls. Here the
connect, send, read, framing of the response, timing and close of a connection run
in C; Python is called only when a slot cannot go on by itself (the open model's
schedule, the end of the budget, a failure), exactly where churn.py calls it.

Every response is still timed into the recorder's latency array (its append method,
so the recorder is the same for both paths), and every connect into its connect
figures. Here: the Python type and the module; the connections are in _churn_conn.c,
and where a response ends (held to llhttp's verdicts) in _churn_framing.c. */
#include "_churn.h"
#include "_churn_keepalive.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

static PyObject *Core_send(Core *c, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) return PyErr_Format(PyExc_TypeError, "send(slot, scheduled_ns)");
    Py_ssize_t i = PyLong_AsSsize_t(args[0]);
    long long scheduled = PyLong_AsLongLong(args[1]);
    if (PyErr_Occurred()) return NULL;
    if (i < 0 || i >= c->nslots) return PyErr_Format(PyExc_IndexError, "no slot %zd", i);
    if (c->epfd < 0) Py_RETURN_NONE; /* stopped */
    return churn_send(c, i, scheduled) < 0 ? NULL : Py_NewRef(Py_None);
}

/* The loop's callback: the epoll set has ready sockets. */
static PyObject *Core_ready(Core *c, PyObject *unused) {
    if (c->epfd < 0) Py_RETURN_NONE; /* stopped */
    return churn_ready(c) < 0 ? NULL : Py_NewRef(Py_None);
}

static PyObject *Core_sweep(Core *c, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) return PyErr_Format(PyExc_TypeError, "sweep(limit_ns, connect_limit_ns)");
    long long limit = PyLong_AsLongLong(args[0]), connect_limit = PyLong_AsLongLong(args[1]);
    if (PyErr_Occurred()) return NULL;
    return churn_sweep(c, limit, connect_limit) < 0 ? NULL : Py_NewRef(Py_None);
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
        if (c->slots[i].fd >= 0 && churn_drop(c, &c->slots[i]) < 0) return NULL;
    if (c->epfd >= 0) {
        close(c->epfd);
        c->epfd = -1;
    }
    Py_RETURN_NONE;
}

static PyObject *Core_fileno(Core *c, PyObject *unused) { return PyLong_FromLong(c->epfd); }

int churn_address(const char *address, int port, struct sockaddr_storage *addr, socklen_t *addrlen, int *family) {
    memset(addr, 0, sizeof(*addr));
    struct sockaddr_in *v4 = (struct sockaddr_in *)addr;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)addr;
    if (inet_pton(AF_INET, address, &v4->sin_addr) == 1) {
        v4->sin_family = *family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        *addrlen = sizeof(*v4);
    } else if (inet_pton(AF_INET6, address, &v6->sin6_addr) == 1) {
        v6->sin6_family = *family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        *addrlen = sizeof(*v6);
    } else {
        PyErr_Format(PyExc_ValueError, "not an IP address: %s", address);
        return -1;
    }
    return 0;
}

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
    if (churn_address(address, port, &c->addr, &c->addrlen, &c->family) < 0) return -1;
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
    for (Py_ssize_t i = 0; i < nslots; i++) churn_reset_slot(&c->slots[i]);
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
        framing_free(&c->slots[i].fr);
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

/* For the tests: frames `chunks` (bytes, read one after the other) as the core does. */
static PyObject *frame(PyObject *module, PyObject *args) {
    PyObject *chunks;
    int head;
    if (!PyArg_ParseTuple(args, "Op", &chunks, &head)) return NULL;
    PyObject *seq = PySequence_Fast(chunks, "frame(chunks, head): chunks is a sequence of bytes");
    if (seq == NULL) return NULL;
    Framing f = {0};
    framing_reset(&f);
    int state = 0;
    for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(seq) && state == 0; k++) {
        PyObject *chunk = PySequence_Fast_GET_ITEM(seq, k);
        if (!PyBytes_Check(chunk)) {
            Py_DECREF(seq);
            framing_free(&f);
            return PyErr_Format(PyExc_TypeError, "chunk %zd is not bytes", k);
        }
        state = framing_feed(&f, head, PyBytes_AS_STRING(chunk), (size_t)PyBytes_GET_SIZE(chunk));
    }
    Py_DECREF(seq);
    PyObject *result = Py_BuildValue("iiOOn", state, f.final_code, framing_ends_at_close(&f) ? Py_True : Py_False,
                                     state == 1 && f.keep_alive ? Py_True : Py_False, (Py_ssize_t)f.unread);
    framing_free(&f);
    return result;
}

static PyMethodDef module_functions[] = {
    {"frame", frame, METH_VARARGS,
     "frame(chunks, head) -> (state, status, ends_at_close, keep_alive, unread): state 1 complete, 0 more to "
     "come, -1 malformed; keep_alive: the connection can carry the next request; unread: bytes after the response"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_churn",
                                    "The engine's connections in C (see churn_native.py).", -1, module_functions};

PyMODINIT_FUNC PyInit__churn(void) {
    if (PyType_Ready(&CoreType) < 0 || PyType_Ready(&KeepAliveType) < 0) return NULL;
    if (churn_intern() < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && (PyModule_AddObjectRef(m, "Core", (PyObject *)&CoreType) < 0 ||
                      PyModule_AddObjectRef(m, "KeepAlive", (PyObject *)&KeepAliveType) < 0)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
