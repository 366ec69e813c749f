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

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    lt_matmul_t matmul;
    void *handle, *desc, *a_layout, *b_layout, *c_layout, *algo;
    size_t workspace_size;
    int is_double;
} LtMatmul;

/* lt(a, b, c, alpha, beta, workspace, stream) -> cublasStatus_t: D = C in place. alpha and
 * beta are host scalars, which cuBLASLt reads before it returns: they live on this stack. */
static PyObject *
lt_call(PyObject *self_object, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    LtMatmul *self = (LtMatmul *)self_object;
    if (PyVectorcall_NARGS(nargsf) != 7 || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "lt(a, b, c, alpha, beta, workspace, stream)");
        return NULL;
    }
    void *a, *b, *c, *workspace, *stream;
    if (address(args[0], &a) < 0 || address(args[1], &b) < 0 || address(args[2], &c) < 0 ||
        address(args[5], &workspace) < 0 || address(args[6], &stream) < 0)
        return NULL;
    double alpha = PyFloat_AsDouble(args[3]), beta = PyFloat_AsDouble(args[4]);
    if (PyErr_Occurred())
        return NULL;
    float alpha_f = (float)alpha, beta_f = (float)beta;
    const void *alpha_p = self->is_double ? (const void *)&alpha : (const void *)&alpha_f;
    const void *beta_p = self->is_double ? (const void *)&beta : (const void *)&beta_f;
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = self->matmul(self->handle, self->desc, alpha_p, a, self->a_layout, b,
                          self->b_layout, beta_p, c, self->c_layout, c, self->c_layout,
                          self->algo, workspace, self->workspace_size, stream);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(status);
}

static PyObject *
lt_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *objects[7];
    unsigned long long workspace_size;
    int is_double;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0) {
        PyErr_SetString(PyExc_TypeError, "LtMatmul takes positional arguments only");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OOOOOOOKp", &objects[0], &objects[1], &objects[2],
                          &objects[3], &objects[4], &objects[5], &objects[6], &workspace_size,
                          &is_double))
        return NULL;
    LtMatmul *self = (LtMatmul *)type->tp_alloc(type, 0);
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
              "algo address, workspace_size, is_double): call as lt(a, b, c, alpha, beta, "
              "workspace, stream) -> status.",
    .tp_basicsize = sizeof(LtMatmul),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(LtMatmul, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = lt_new,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "tunedgemm._fastlaunch",
    "cuLaunchKernel and cublasLtMatmul called from C (see tunedgemm/_fastlaunch.c).", -1, NULL,
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
