/* The two calls a planned device call makes, from C: cuLaunchKernel for an own kernel and
 * cublasLtMatmul for a cuBLAS algorithm.
 *
 * Through ctypes these cost 1-2 us each on the development machine (and more on the GPU
 * machine's host) in argument conversion alone: struct packing, ctypes scalars for alpha and
 * beta, sixteen converted arguments. At 256^3-512^3 a device call is bound by its host cost,
 * so that was a fifth of a call. Here the constant parts are kept once per kernel or
 * algorithm and a call converts only what changes (grid, stream, addresses, scalars), into a
 * buffer on the C stack, so that calls from several threads share nothing.
 *
 * cublasLtMatmul itself then still took 5-12 us of host time a call on the H100 machine,
 * where replaying the same call captured as a CUDA graph took 1.7
 * (benchmarks/probe_graph_launch.py, 2026-11-26). So an LtMatmul given the driver's graph
 * calls keeps the graphs of its last few distinct calls (operands, scalars, workspace,
 * stream) and replays one when a call repeats it; a call is captured when it repeats one of
 * the last few seen, on a stream of the object's own.
 *
 * No CUDA header or library is needed to build this: the functions' addresses are handed in
 * by tunedgemm/_driver.py and tunedgemm/cublaslt.py, which load libcuda and cuBLASLt with
 * ctypes. Without this extension they fall back to their ctypes calls. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define MAX_ARGS 24
#define MAX_BUFFER 256

typedef int (*launch_kernel_t)(void *function, unsigned gx, unsigned gy, unsigned gz,
                               unsigned bx, unsigned by, unsigned bz, unsigned smem,
                               void *stream, void **params, void **extra);

typedef int (*lt_matmul_t)(void *handle, void *desc, const void *alpha, const void *a,
                           void *a_layout, const void *b, void *b_layout, const void *beta,
                           const void *c, void *c_layout, void *d, void *d_layout,
                           const void *algo, void *workspace, size_t workspace_size,
                           void *stream);

/* An address from a Python int or any object with __index__ (PyCUDA allocations, tunedgemm's
 * ScratchBuffer); -1 with an exception set where it is neither. */
static int
address(PyObject *value, void **out)
{
    if (value == Py_None) {
        *out = NULL;
        return 0;
    }
    PyObject *number = PyLong_Check(value) ? (Py_INCREF(value), value) : PyNumber_Index(value);
    if (number == NULL)
        return -1;
    unsigned long long raw = PyLong_AsUnsignedLongLong(number);
    Py_DECREF(number);
    if (raw == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    *out = (void *)(uintptr_t)raw;
    return 0;
}

static int
unsigned_arg(PyObject *value, unsigned *out)
{
    unsigned long raw = PyLong_AsUnsignedLong(value);
    if (raw == (unsigned long)-1 && PyErr_Occurred())
        return -1;
    if (raw > 0xffffffffUL) {
        PyErr_SetString(PyExc_OverflowError, "launch dimension out of range");
        return -1;
    }
    *out = (unsigned)raw;
    return 0;
}

/* An integer argument in [low, high], stored in `bytes` (4 or 8) at slot as the C type of
 * that size and sign would hold it; -1 with an exception set otherwise. */
static int
pack_integer(PyObject *value, long long low, long long high, unsigned char *slot, int bytes)
{
    long long raw = PyLong_AsLongLong(value);
    if (raw == -1 && PyErr_Occurred())
        return -1;
    if (raw < low || raw > high) {
        PyErr_Format(PyExc_OverflowError, "kernel argument %lld out of range [%lld, %lld]", raw,
                     low, high);
        return -1;
    }
    if (bytes == 4) {
        uint32_t v = (uint32_t)raw; /* int32 and uint32 alike: the low 32 bits */
        memcpy(slot, &v, sizeof v);
    }
    else
        memcpy(slot, &raw, sizeof raw);
    return 0;
}

/* --- Kernel: one CUfunction with its argument layout ------------------------------------ */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    launch_kernel_t launch;
    void *function;
    unsigned block[3], smem;
    int count;                   /* arguments */
    char codes[MAX_ARGS];        /* 'i' int32, 'I' uint32, 'q' int64, 'f' float, 'd' double,
                                  * 'P' (or 'Q') 64-bit address */
    unsigned offsets[MAX_ARGS];  /* each at its natural alignment, as the C compiler puts it */
    unsigned size;
} Kernel;

/* kernel(grid, stream, values) -> CUresult: cuLaunchKernel with `values` packed at their C
 * offsets; grid is (x, y, z), stream a raw handle, values a tuple in the kernel's order. */
static PyObject *
kernel_call(PyObject *self_object, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Kernel *self = (Kernel *)self_object;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 3 || kwnames != NULL || !PyTuple_Check(args[0]) ||
        PyTuple_GET_SIZE(args[0]) != 3 || !PyTuple_Check(args[2]) ||
        PyTuple_GET_SIZE(args[2]) != self->count) {
        PyErr_SetString(PyExc_TypeError, "kernel(grid, stream, values): a 3-tuple grid and a "
                                         "tuple of the kernel's arguments");
        return NULL;
    }
    unsigned grid[3];
    for (int i = 0; i < 3; i++)
        if (unsigned_arg(PyTuple_GET_ITEM(args[0], i), &grid[i]) < 0)
            return NULL;
    void *stream;
    if (address(args[1], &stream) < 0)
        return NULL;
    _Alignas(16) unsigned char buffer[MAX_BUFFER];
    void *params[MAX_ARGS];
    for (int i = 0; i < self->count; i++) {
        PyObject *value = PyTuple_GET_ITEM(args[2], i);
        unsigned char *slot = buffer + self->offsets[i];
        params[i] = slot;
        switch (self->codes[i]) {
        case 'i': /* int32 */
            if (pack_integer(value, INT32_MIN, INT32_MAX, slot, 4) < 0)
                return NULL;
            break;
        case 'I': /* uint32 */
            if (pack_integer(value, 0, UINT32_MAX, slot, 4) < 0)
                return NULL;
            break;
        case 'q': /* int64 */
            if (pack_integer(value, INT64_MIN, INT64_MAX, slot, 8) < 0)
                return NULL;
            break;
        case 'f': {
            double raw = PyFloat_AsDouble(value);
            if (raw == -1.0 && PyErr_Occurred())
                return NULL;
            float v = (float)raw;
            memcpy(slot, &v, sizeof v);
            break;
        }
        case 'd': {
            double v = PyFloat_AsDouble(value);
            if (v == -1.0 && PyErr_Occurred())
                return NULL;
            memcpy(slot, &v, sizeof v);
            break;
        }
        default: { /* 'P' */
            void *v;
            if (address(value, &v) < 0)
                return NULL;
            memcpy(slot, &v, sizeof v);
        }
        }
    }
    int code;
    Py_BEGIN_ALLOW_THREADS
    code = self->launch(self->function, grid[0], grid[1], grid[2], self->block[0],
                        self->block[1], self->block[2], self->smem, stream, params, NULL);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(code);
}

static PyObject *
kernel_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *launch_object, *function_object;
    unsigned bx, by, bz, smem;
    const char *codes;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0) {
        PyErr_SetString(PyExc_TypeError, "Kernel takes positional arguments only");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OO(III)Is", &launch_object, &function_object, &bx, &by, &bz,
                          &smem, &codes))
        return NULL;
    size_t count = strlen(codes);
    if (count > MAX_ARGS) {
        PyErr_SetString(PyExc_ValueError, "too many kernel arguments");
        return NULL;
    }
    Kernel *self = (Kernel *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    void *launch, *function;
    if (address(launch_object, &launch) < 0 || address(function_object, &function) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    unsigned end = 0;
    for (size_t i = 0; i < count; i++) {
        char code = codes[i] == 'Q' ? 'P' : codes[i];
        unsigned size = code == 'i' || code == 'I' || code == 'f'   ? 4
                        : code == 'd' || code == 'P' || code == 'q' ? 8
                                                                    : 0;
        if (size == 0) {
            Py_DECREF(self);
            PyErr_Format(PyExc_ValueError, "unknown argument code %c", codes[i]);
            return NULL;
        }
        unsigned start = (end + size - 1) / size * size;
        self->codes[i] = code;
        self->offsets[i] = start;
        end = start + size;
    }
    if (end > MAX_BUFFER) {
        Py_DECREF(self);
        PyErr_SetString(PyExc_ValueError, "kernel arguments too large");
        return NULL;
    }
    self->vectorcall = kernel_call;
    self->launch = (launch_kernel_t)launch;
    self->function = function;
    self->block[0] = bx, self->block[1] = by, self->block[2] = bz;
    self->smem = smem;
    self->count = (int)count;
    self->size = end;
    return (PyObject *)self;
}

static PyTypeObject KernelType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tunedgemm._fastlaunch.Kernel",
    .tp_doc = "Kernel(cuLaunchKernel address, CUfunction, (bx, by, bz), smem, codes): call as "
              "kernel((gx, gy, gz), stream, values) -> CUresult.",
    .tp_basicsize = sizeof(Kernel),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Kernel, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = kernel_new,
};

/* --- Graphs: the last few distinct repeated calls of one launcher, as CUDA graphs ------- */

/* The driver's graph calls, in the order LtMatmul and Replay take their addresses. */
enum { G_LAUNCH, G_IS_CAPTURING, G_STREAM_CREATE, G_STREAM_DESTROY, G_BEGIN, G_END,
       G_INSTANTIATE, G_GRAPH_DESTROY, G_EXEC_DESTROY, G_CALLS };
typedef int (*graph_launch_t)(void *exec, void *stream);
typedef int (*is_capturing_t)(void *stream, int *status);
typedef int (*stream_create_t)(void **stream, unsigned flags);
typedef int (*destroy_t)(void *object);
typedef int (*begin_capture_t)(void *stream, int mode);
typedef int (*end_capture_t)(void *stream, void **graph);
typedef int (*instantiate_t)(void **exec, void *graph, unsigned long long flags);

#define GRAPH_SLOTS 8          /* distinct repeated calls kept per launcher */
#define CU_STREAM_NON_BLOCKING 1
#define CAPTURE_MODE_RELAXED 2 /* our capture forbids nothing to other threads */
/* Calls that never repeat would each be captured once and evicted: after this many
 * captures, a launcher whose replays are fewer than two a capture stops capturing. */
#define CAPTURES_BEFORE_CHECK 64

typedef struct {
    void *a, *b, *c, *workspace, *stream;
    double alpha, beta;
} CallKey;

static int
same_call(const CallKey *x, const CallKey *y)
{
    return x->a == y->a && x->b == y->b && x->c == y->c && x->workspace == y->workspace &&
           x->stream == y->stream && memcmp(&x->alpha, &y->alpha, sizeof x->alpha) == 0 &&
           memcmp(&x->beta, &y->beta, sizeof x->beta) == 0;
}

/* Queues key's call on `stream` (the capture stream while capturing, else key's own);
 * 0 on success. Called with the GIL held. */
typedef int (*queue_call_t)(PyObject *owner, const CallKey *key, void *stream);

/* The graphs of one launcher (graphs == 0: none). The GIL is held from lookup to launch, so
 * no other thread evicts a graph in between; `busy` keeps a second thread from capturing
 * while one does (a queue written in Python may let other threads run). */
typedef struct {
    int graphs, capturing, busy;
    void *calls[G_CALLS];
    void *capture_stream;
    CallKey keys[GRAPH_SLOTS], recent[GRAPH_SLOTS]; /* graphs' calls; calls seen lately */
    void *execs[GRAPH_SLOTS];
    int next_slot, next_recent, recent_count;
    unsigned long long captures, replays;
} Graphs;

/* Takes the addresses of graph_calls (None: replay off); -1 with an exception set where it is
 * neither None nor a tuple of G_CALLS addresses. */
static int
graphs_init(Graphs *g, PyObject *graph_calls)
{
    if (graph_calls == Py_None)
        return 0;
    if (!PyTuple_Check(graph_calls) || PyTuple_GET_SIZE(graph_calls) != G_CALLS) {
        PyErr_Format(PyExc_TypeError, "graph_calls: None or a tuple of %d addresses", G_CALLS);
        return -1;
    }
    for (int i = 0; i < G_CALLS; i++)
        if (address(PyTuple_GET_ITEM(graph_calls, i), &g->calls[i]) < 0)
            return -1;
    g->graphs = g->capturing = 1;
    for (int i = 0; i < G_CALLS; i++)
        if (g->calls[i] == NULL)
            g->graphs = 0;
    return 0;
}

/* The slot of the graph of `key`'s call, captured now; -1 where capture fails (graphs are
 * then off for this launcher, and the caller makes the call directly). */
static int
graphs_capture(Graphs *g, const CallKey *key, queue_call_t queue, PyObject *owner)
{
    void **calls = g->calls;
    if (g->capture_stream == NULL &&
        ((stream_create_t)calls[G_STREAM_CREATE])(&g->capture_stream, CU_STREAM_NON_BLOCKING)) {
        g->capture_stream = NULL;
        g->graphs = 0;
        return -1;
    }
    if (((begin_capture_t)calls[G_BEGIN])(g->capture_stream, CAPTURE_MODE_RELAXED)) {
        g->graphs = 0;
        return -1;
    }
    g->busy = 1;
    int status = queue(owner, key, g->capture_stream);
    g->busy = 0;
    void *graph = NULL, *exec = NULL;
    int ended = ((end_capture_t)calls[G_END])(g->capture_stream, &graph);
    int made = status || ended || graph == NULL
                   ? -1
                   : ((instantiate_t)calls[G_INSTANTIATE])(&exec, graph, 0);
    if (graph != NULL)
        ((destroy_t)calls[G_GRAPH_DESTROY])(graph); /* the executable graph is a copy */
    if (made != 0) {
        g->graphs = 0;
        return -1;
    }
    int slot = g->next_slot;
    if (g->execs[slot] != NULL)
        ((destroy_t)calls[G_EXEC_DESTROY])(g->execs[slot]);
    g->execs[slot] = exec;
    g->keys[slot] = *key;
    g->next_slot = (slot + 1) % GRAPH_SLOTS;
    if (++g->captures >= CAPTURES_BEFORE_CHECK && g->replays < 2 * g->captures)
        g->capturing = 0;
    return slot;
}

/* 1 where the call was queued as a graph (*status: the launch's CUresult), else 0. */
static int
graphs_replay(Graphs *g, const CallKey *key, queue_call_t queue, PyObject *owner, int *status)
{
    if (g->busy)
        return 0;
    int slot = -1;
    for (int i = 0; i < GRAPH_SLOTS; i++)
        if (g->execs[i] != NULL && same_call(&g->keys[i], key)) {
            slot = i;
            break;
        }
    if (slot < 0) {
        int seen = 0;
        for (int i = 0; i < g->recent_count && !seen; i++)
            seen = same_call(&g->recent[i], key);
        if (!seen) {
            g->recent[g->next_recent] = *key;
            g->next_recent = (g->next_recent + 1) % GRAPH_SLOTS;
            if (g->recent_count < GRAPH_SLOTS)
                g->recent_count++;
        }
        if (!(seen && g->capturing))
            return 0;
    }
    /* A stream being captured (the caller's own graph) records the direct call instead. */
    int capture_status = 0;
    if (((is_capturing_t)g->calls[G_IS_CAPTURING])(key->stream, &capture_status) ||
        capture_status != 0)
        return 0;
    if (slot < 0 && (slot = graphs_capture(g, key, queue, owner)) < 0)
        return 0;
    *status = ((graph_launch_t)g->calls[G_LAUNCH])(g->execs[slot], key->stream);
    if (*status != 0) { /* never again for this launcher; the direct call reports errors */
        g->graphs = 0;
        return 0;
    }
    g->replays++;
    return 1;
}

/* The head LtMatmul and Replay start with, so that one method serves both. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    Graphs graphs;
} GraphsHead;

/* x.graph_counts() -> (captures, replays, on): what graph replay has done so far. */
static PyObject *
graph_counts(PyObject *self_object, PyObject *unused)
{
    (void)unused;
    const Graphs *g = &((GraphsHead *)self_object)->graphs;
    return Py_BuildValue("(KKO)", g->captures, g->replays, g->graphs ? Py_True : Py_False);
}

static PyMethodDef graphs_methods[] = {
    {"graph_counts", graph_counts, METH_NOARGS,
     "(captures, replays, on): the graphs captured and replayed so far, and whether replay "
     "is still on."},
    {NULL, NULL, 0, NULL},
};

static void
graphs_free(Graphs *g)
{
    for (int i = 0; i < GRAPH_SLOTS; i++)
        if (g->execs[i] != NULL) {
            ((destroy_t)g->calls[G_EXEC_DESTROY])(g->execs[i]);
            g->execs[i] = NULL;
        }
    if (g->capture_stream != NULL) {
        ((destroy_t)g->calls[G_STREAM_DESTROY])(g->capture_stream);
        g->capture_stream = NULL;
    }
}

/* --- LtMatmul: one cuBLASLt algorithm for one product ----------------------------------- */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    Graphs graphs; /* (GraphsHead's fields first) */
    lt_matmul_t matmul;
    void *handle, *desc, *a_layout, *b_layout, *c_layout, *algo;
    size_t workspace_size;
    int is_double;
} LtMatmul;

/* cublasLtMatmul of key's call on `stream`. alpha and beta are host scalars, which cuBLASLt
 * reads before it returns: a captured call holds their values. */
static int
lt_direct(LtMatmul *self, const CallKey *key, void *stream)
{
    float alpha_f = (float)key->alpha, beta_f = (float)key->beta;
    const void *alpha_p = self->is_double ? (const void *)&key->alpha : (const void *)&alpha_f;
    const void *beta_p = self->is_double ? (const void *)&key->beta : (const void *)&beta_f;
    return self->matmul(self->handle, self->desc, alpha_p, key->a, self->a_layout, key->b,
                        self->b_layout, beta_p, key->c, self->c_layout, key->c, self->c_layout,
                        self->algo, key->workspace, self->workspace_size, stream);
}

static int
lt_queue(PyObject *owner, const CallKey *key, void *stream)
{
    return lt_direct((LtMatmul *)owner, key, stream);
}

/* lt(a, b, c, alpha, beta, workspace, stream) -> status: D = C in place (0 on success). */
static PyObject *
lt_call(PyObject *self_object, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    LtMatmul *self = (LtMatmul *)self_object;
    if (PyVectorcall_NARGS(nargsf) != 7 || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "lt(a, b, c, alpha, beta, workspace, stream)");
        return NULL;
    }
    CallKey key;
    if (address(args[0], &key.a) < 0 || address(args[1], &key.b) < 0 ||
        address(args[2], &key.c) < 0 || address(args[5], &key.workspace) < 0 ||
        address(args[6], &key.stream) < 0)
        return NULL;
    key.alpha = PyFloat_AsDouble(args[3]);
    key.beta = PyFloat_AsDouble(args[4]);
    if (PyErr_Occurred())
        return NULL;
    int status;
    if (self->graphs.graphs && graphs_replay(&self->graphs, &key, lt_queue, self_object, &status))
        return PyLong_FromLong(status);
    Py_BEGIN_ALLOW_THREADS
    status = lt_direct(self, &key, key.stream);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(status);
}

static void
lt_dealloc(PyObject *self_object)
{
    graphs_free(&((LtMatmul *)self_object)->graphs);
    Py_TYPE(self_object)->tp_free(self_object);
}

static PyObject *
lt_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *objects[7], *graph_calls = Py_None;
    unsigned long long workspace_size;
    int is_double;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0) {
        PyErr_SetString(PyExc_TypeError, "LtMatmul takes positional arguments only");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OOOOOOOKp|O", &objects[0], &objects[1], &objects[2],
                          &objects[3], &objects[4], &objects[5], &objects[6], &workspace_size,
                          &is_double, &graph_calls))
        return NULL;
    LtMatmul *self = (LtMatmul *)type->tp_alloc(type, 0); /* zeroed: no graphs yet */
    if (self == NULL)
        return NULL;
    void *matmul;
    if (address(objects[0], &matmul) < 0 || address(objects[1], &self->handle) < 0 ||
        address(objects[2], &self->desc) < 0 || address(objects[3], &self->a_layout) < 0 ||
        address(objects[4], &self->b_layout) < 0 || address(objects[5], &self->c_layout) < 0 ||
        address(objects[6], &self->algo) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    if (graphs_init(&self->graphs, graph_calls) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    self->vectorcall = lt_call;
    self->matmul = (lt_matmul_t)matmul;
    self->workspace_size = (size_t)workspace_size;
    self->is_double = is_double;
    return (PyObject *)self;
}

static PyTypeObject LtMatmulType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tunedgemm._fastlaunch.LtMatmul",
    .tp_doc = "LtMatmul(cublasLtMatmul address, handle, desc, a_layout, b_layout, c_layout, "
              "algo address, workspace_size, is_double[, graph_calls]): call as lt(a, b, c, "
              "alpha, beta, workspace, stream) -> status. graph_calls: the addresses of "
              "cuGraphLaunch, cuStreamIsCapturing, cuStreamCreate, cuStreamDestroy_v2, "
              "cuStreamBeginCapture_v2, cuStreamEndCapture, cuGraphInstantiateWithFlags, "
              "cuGraphDestroy and cuGraphExecDestroy, to replay repeated calls as graphs.",
    .tp_basicsize = sizeof(LtMatmul),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(LtMatmul, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = lt_new,
    .tp_dealloc = lt_dealloc,
    .tp_methods = graphs_methods,
};

/* --- Replay: an own kernel's launches for one product, replayed as graphs -------------- */

/* The launches are queued by a Python callable, queue(a, b, c, alpha, beta, stream, home):
 * the product's kernels on `stream` with the workspace of stream `home` (the stream the
 * call was made on: while capturing, `stream` is the capture stream, and the graph, replayed
 * on `home`, must use home's workspace). */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    Graphs graphs; /* (GraphsHead's fields first) */
    PyObject *queue;
} Replay;

static int
replay_queue(PyObject *owner, const CallKey *key, void *stream)
{
    PyObject *args[7] = {PyLong_FromVoidPtr(key->a), PyLong_FromVoidPtr(key->b),
                         PyLong_FromVoidPtr(key->c), PyFloat_FromDouble(key->alpha),
                         PyFloat_FromDouble(key->beta), PyLong_FromVoidPtr(stream),
                         PyLong_FromVoidPtr(key->stream)};
    PyObject *result = NULL;
    int made = 1;
    for (int i = 0; i < 7; i++)
        made = made && args[i] != NULL;
    if (made)
        result = PyObject_Vectorcall(((Replay *)owner)->queue, args, 7, NULL);
    for (int i = 0; i < 7; i++)
        Py_XDECREF(args[i]);
    if (result == NULL) { /* capture fails; the direct call that follows raises it again */
        PyErr_Clear();
        return -1;
    }
    Py_DECREF(result);
    return 0;
}

/* replay(a, b, c, alpha, beta, stream[, workspace]) -> None: the product's launches on
 * `stream`, replayed from a graph where the call (workspace included) repeats one of the last
 * few; otherwise queue(a, b, c, alpha, beta, stream, stream). */
static PyObject *
replay_call(PyObject *self_object, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Replay *self = (Replay *)self_object;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if ((nargs != 6 && nargs != 7) || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "replay(a, b, c, alpha, beta, stream[, workspace])");
        return NULL;
    }
    if (self->graphs.graphs) {
        CallKey key;
        key.workspace = NULL;
        if (address(args[0], &key.a) < 0 || address(args[1], &key.b) < 0 ||
            address(args[2], &key.c) < 0 || address(args[5], &key.stream) < 0 ||
            (nargs == 7 && address(args[6], &key.workspace) < 0))
            return NULL;
        key.alpha = PyFloat_AsDouble(args[3]);
        key.beta = PyFloat_AsDouble(args[4]);
        if (PyErr_Occurred())
            return NULL;
        int status;
        if (graphs_replay(&self->graphs, &key, replay_queue, self_object, &status))
            Py_RETURN_NONE;
    }
    PyObject *direct[7] = {args[0], args[1], args[2], args[3], args[4], args[5], args[5]};
    return PyObject_Vectorcall(self->queue, direct, 7, NULL);
}

/* The queue may hold the object that holds this one (a plan's launcher): a cycle that
 * Python's collector must see. */
static int
replay_traverse(PyObject *self_object, visitproc visit, void *arg)
{
    Py_VISIT(((Replay *)self_object)->queue);
    return 0;
}

static int
replay_clear(PyObject *self_object)
{
    Py_CLEAR(((Replay *)self_object)->queue);
    return 0;
}

static void
replay_dealloc(PyObject *self_object)
{
    PyObject_GC_UnTrack(self_object);
    graphs_free(&((Replay *)self_object)->graphs);
    replay_clear(self_object);
    Py_TYPE(self_object)->tp_free(self_object);
}

static PyObject *
replay_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *queue, *graph_calls = Py_None;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0) {
        PyErr_SetString(PyExc_TypeError, "Replay takes positional arguments only");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O|O", &queue, &graph_calls))
        return NULL;
    if (!PyCallable_Check(queue)) {
        PyErr_SetString(PyExc_TypeError, "Replay: queue must be callable");
        return NULL;
    }
    Replay *self = (Replay *)type->tp_alloc(type, 0); /* zeroed: no graphs yet */
    if (self == NULL)
        return NULL;
    self->vectorcall = replay_call;
    self->queue = Py_NewRef(queue);
    if (graphs_init(&self->graphs, graph_calls) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static PyTypeObject ReplayType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tunedgemm._fastlaunch.Replay",
    .tp_doc = "Replay(queue[, graph_calls]): call as replay(a, b, c, alpha, beta, stream"
              "[, workspace]); queue(a, b, c, alpha, beta, stream, home) queues the product's "
              "launches on stream with home's workspace. graph_calls: as LtMatmul's.",
    .tp_basicsize = sizeof(Replay),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_HAVE_GC,
    .tp_vectorcall_offset = offsetof(Replay, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = replay_new,
    .tp_dealloc = replay_dealloc,
    .tp_traverse = replay_traverse,
    .tp_clear = replay_clear,
    .tp_methods = graphs_methods,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "tunedgemm._fastlaunch",
    "cuLaunchKernel and cublasLtMatmul, or their captured graphs, called from C (see tunedgemm/_fastlaunch.c).", -1, NULL,
};

PyMODINIT_FUNC
PyInit__fastlaunch(void)
{
    if (PyType_Ready(&KernelType) < 0 || PyType_Ready(&LtMatmulType) < 0 ||
        PyType_Ready(&ReplayType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "Kernel", (PyObject *)&KernelType) < 0 ||
        PyModule_AddObjectRef(m, "LtMatmul", (PyObject *)&LtMatmulType) < 0 ||
        PyModule_AddObjectRef(m, "Replay", (PyObject *)&ReplayType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
