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

/* --- LtMatmul: one cuBLASLt algorithm for one product ----------------------------------- */

/* The driver's graph calls, in the order LtMatmul takes their addresses. */
enum { G_LAUNCH, G_IS_CAPTURING, G_STREAM_CREATE, G_STREAM_DESTROY, G_BEGIN, G_END,
       G_INSTANTIATE, G_GRAPH_DESTROY, G_EXEC_DESTROY, G_CALLS };
typedef int (*graph_launch_t)(void *exec, void *stream);
typedef int (*is_capturing_t)(void *stream, int *status);
typedef int (*stream_create_t)(void **stream, unsigned flags);
typedef int (*destroy_t)(void *object);
typedef int (*begin_capture_t)(void *stream, int mode);
typedef int (*end_capture_t)(void *stream, void **graph);
typedef int (*instantiate_t)(void **exec, void *graph, unsigned long long flags);

#define GRAPH_SLOTS 8          /* distinct repeated calls kept per algorithm */
#define CU_STREAM_NON_BLOCKING 1
#define CAPTURE_MODE_RELAXED 2 /* our capture forbids nothing to other threads */
/* Calls that never repeat would each be captured once and evicted: after this many
 * captures, an algorithm whose replays are fewer than two a capture stops capturing. */
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

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    lt_matmul_t matmul;
    void *handle, *desc, *a_layout, *b_layout, *c_layout, *algo;
    size_t workspace_size;
    int is_double;
    /* Graph replay (graphs == 0: none). The GIL is held from lookup to launch, so no other
     * thread evicts a graph in between. */
    int graphs, capturing;
    void *calls[G_CALLS];
    void *capture_stream;
    CallKey keys[GRAPH_SLOTS], recent[GRAPH_SLOTS]; /* graphs' calls; calls seen lately */
    void *execs[GRAPH_SLOTS];
    int next_slot, next_recent, recent_count;
    unsigned long long captures, replays;
} LtMatmul;

static int
lt_direct(LtMatmul *self, const CallKey *key, const void *alpha_p, const void *beta_p)
{
    return self->matmul(self->handle, self->desc, alpha_p, key->a, self->a_layout, key->b,
                        self->b_layout, beta_p, key->c, self->c_layout, key->c, self->c_layout,
                        self->algo, key->workspace, self->workspace_size, key->stream);
}

/* The slot of the graph of `key`'s call, captured now; -1 where capture fails (graphs are
 * then off for this algorithm, and the caller calls cuBLASLt directly). */
static int
lt_capture(LtMatmul *self, const CallKey *key, const void *alpha_p, const void *beta_p)
{
    void **g = self->calls;
    if (self->capture_stream == NULL &&
        ((stream_create_t)g[G_STREAM_CREATE])(&self->capture_stream, CU_STREAM_NON_BLOCKING)) {
        self->capture_stream = NULL;
        self->graphs = 0;
        return -1;
    }
    if (((begin_capture_t)g[G_BEGIN])(self->capture_stream, CAPTURE_MODE_RELAXED)) {
        self->graphs = 0;
        return -1;
    }
    CallKey on_capture = *key;
    on_capture.stream = self->capture_stream;
    int status = lt_direct(self, &on_capture, alpha_p, beta_p);
    void *graph = NULL, *exec = NULL;
    int ended = ((end_capture_t)g[G_END])(self->capture_stream, &graph);
    int made = status || ended || graph == NULL
                   ? -1
                   : ((instantiate_t)g[G_INSTANTIATE])(&exec, graph, 0);
    if (graph != NULL)
        ((destroy_t)g[G_GRAPH_DESTROY])(graph); /* the executable graph is a copy */
    if (made != 0) {
        self->graphs = 0;
        return -1;
    }
    int slot = self->next_slot;
    if (self->execs[slot] != NULL)
        ((destroy_t)g[G_EXEC_DESTROY])(self->execs[slot]);
    self->execs[slot] = exec;
    self->keys[slot] = *key;
    self->next_slot = (slot + 1) % GRAPH_SLOTS;
    if (++self->captures >= CAPTURES_BEFORE_CHECK && self->replays < 2 * self->captures)
        self->capturing = 0;
    return slot;
}

/* 1 where the call was queued as a graph (*status: the launch's CUresult), else 0. */
static int
lt_replay(LtMatmul *self, const CallKey *key, const void *alpha_p, const void *beta_p,
          int *status)
{
    int slot = -1;
    for (int i = 0; i < GRAPH_SLOTS; i++)
        if (self->execs[i] != NULL && same_call(&self->keys[i], key)) {
            slot = i;
            break;
        }
    if (slot < 0) {
        int seen = 0;
        for (int i = 0; i < self->recent_count && !seen; i++)
            seen = same_call(&self->recent[i], key);
        if (!seen) {
            self->recent[self->next_recent] = *key;
            self->next_recent = (self->next_recent + 1) % GRAPH_SLOTS;
            if (self->recent_count < GRAPH_SLOTS)
                self->recent_count++;
        }
        if (!(seen && self->capturing))
            return 0;
    }
    /* A stream being captured (the caller's own graph) records the direct call instead. */
    int capture_status = 0;
    if (((is_capturing_t)self->calls[G_IS_CAPTURING])(key->stream, &capture_status) ||
        capture_status != 0)
        return 0;
    if (slot < 0 && (slot = lt_capture(self, key, alpha_p, beta_p)) < 0)
        return 0;
    *status = ((graph_launch_t)self->calls[G_LAUNCH])(self->execs[slot], key->stream);
    if (*status != 0) { /* never again for this algorithm; the direct call reports errors */
        self->graphs = 0;
        return 0;
    }
    self->replays++;
    return 1;
}

/* lt(a, b, c, alpha, beta, workspace, stream) -> status: D = C in place (0 on success).
 * alpha and beta are host scalars, which cuBLASLt reads before it returns: they live on
 * this stack (a captured call holds their values). */
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
    float alpha_f = (float)key.alpha, beta_f = (float)key.beta;
    const void *alpha_p = self->is_double ? (const void *)&key.alpha : (const void *)&alpha_f;
    const void *beta_p = self->is_double ? (const void *)&key.beta : (const void *)&beta_f;
    int status;
    if (self->graphs && lt_replay(self, &key, alpha_p, beta_p, &status))
        return PyLong_FromLong(status);
    Py_BEGIN_ALLOW_THREADS
    status = lt_direct(self, &key, alpha_p, beta_p);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(status);
}

/* lt.graph_counts() -> (captures, replays, on): what graph replay has done so far. */
static PyObject *
lt_graph_counts(PyObject *self_object, PyObject *unused)
{
    (void)unused;
    LtMatmul *self = (LtMatmul *)self_object;
    return Py_BuildValue("(KKO)", self->captures, self->replays,
                         self->graphs ? Py_True : Py_False);
}

static PyMethodDef lt_methods[] = {
    {"graph_counts", lt_graph_counts, METH_NOARGS,
     "(captures, replays, on): the graphs captured and replayed so far, and whether replay "
     "is still on."},
    {NULL, NULL, 0, NULL},
};

static void
lt_dealloc(PyObject *self_object)
{
    LtMatmul *self = (LtMatmul *)self_object;
    for (int i = 0; i < GRAPH_SLOTS; i++)
        if (self->execs[i] != NULL)
            ((destroy_t)self->calls[G_EXEC_DESTROY])(self->execs[i]);
    if (self->capture_stream != NULL)
        ((destroy_t)self->calls[G_STREAM_DESTROY])(self->capture_stream);
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
    if (graph_calls != Py_None &&
        (!PyTuple_Check(graph_calls) || PyTuple_GET_SIZE(graph_calls) != G_CALLS)) {
        PyErr_Format(PyExc_TypeError, "graph_calls: None or a tuple of %d addresses", G_CALLS);
        return NULL;
    }
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
    if (graph_calls != Py_None) {
        for (int i = 0; i < G_CALLS; i++)
            if (address(PyTuple_GET_ITEM(graph_calls, i), &self->calls[i]) < 0) {
                Py_DECREF(self);
                return NULL;
            }
        self->graphs = self->capturing = 1;
        for (int i = 0; i < G_CALLS; i++)
            if (self->calls[i] == NULL)
                self->graphs = 0;
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
    .tp_methods = lt_methods,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "tunedgemm._fastlaunch",
    "cuLaunchKernel and cublasLtMatmul (or its captured graph) called from C (see tunedgemm/_fastlaunch.c).", -1, NULL,
};

PyMODINIT_FUNC
PyInit__fastlaunch(void)
{
    if (PyType_Ready(&KernelType) < 0 || PyType_Ready(&LtMatmulType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "Kernel", (PyObject *)&KernelType) < 0 ||
        PyModule_AddObjectRef(m, "LtMatmul", (PyObject *)&LtMatmulType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
