/* The short route of small host calls, in C: tunedgemm/_small_host.py's screen and product,
 * run before any Python frame.
 *
 * Why C: a small product takes NumPy about a microsecond, and the Python route's checks cost
 * 0.5-1 us more (the same checks here cost tens of ns). A Route wraps one public routine
 * (sgemm, dgemm, gemm or matmul, written in Python): a plain call that the crossover sends to
 * NumPy anyway is computed here, by the BLAS call the Python route makes; every other call,
 * and every call this file has a doubt about, goes to the wrapped Python function unchanged,
 * which decides it and gives every error message. This file never raises an error of its own
 * for a call: what it refuses, Python sees.
 *
 * The Python side (tunedgemm/_small_host.py) hands over what the route reads: the crossover
 * size per dtype once it is known (0 until then: such calls go to Python, which fills it),
 * the process environment's dict and the setting names whose presence sends every call to
 * Python, np.matmul, and the size below which np.dot's core is called instead. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <fenv.h>
#include <float.h>
#include <math.h>
#include <stddef.h> /* offsetof */

enum kind { SGEMM, DGEMM, GEMM, MATMUL, KIND_COUNT };

/* Filled by configure(); the route stays shut (every call to Python) until then. */
static PyObject *environ_dict = NULL;  /* os.environ._data */
static PyObject *override_keys = NULL; /* tuple of encoded names */
static PyObject *matmul_function = NULL;
static double dot_limit = 0.0;
/* The crossover size per dtype (index 0 float32, 1 float64; 0: not known yet, ask Python). */
static double crossover_size[2] = {0.0, 0.0};
static PyArray_Descr *descr_f32 = NULL, *descr_f64 = NULL;

static PyObject *gemm_names[9]; /* alpha a b beta c trans_a trans_b overwrite_c stream */
static PyObject *matmul_names[4]; /* a b out stream */
#define GEMM_POSITIONAL 8 /* stream is keyword-only */
#define MATMUL_POSITIONAL 3

typedef struct {
    PyObject_HEAD
    PyObject *function; /* the Python routine: every call not served here */
    PyObject *dict;     /* __wrapped__, __doc__, __name__, ... (functools.update_wrapper) */
    PyObject *weakrefs;
    vectorcallfunc vectorcall;
    int kind;
} Route;

/* Sort the call's arguments into slots by name; 0 when the call is not one to read here
 * (too many, unknown or repeated names: Python raises the right TypeError). */
static int
sort_arguments(PyObject *const *args, size_t nargsf, PyObject *kwnames, PyObject **names,
               int count, int positional, PyObject **slots)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs > positional)
        return 0;
    for (int i = 0; i < count; i++)
        slots[i] = i < nargs ? args[i] : NULL;
    if (kwnames == NULL)
        return 1;
    Py_ssize_t nkw = PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t j = 0; j < nkw; j++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, j);
        int found = -1;
        if (!PyUnicode_CheckExact(key)) /* a str subclass may compare as it likes */
            return 0;
        for (int i = 0; i < count && found < 0; i++)
            if (key == names[i])
                found = i;
        for (int i = 0; i < count && found < 0; i++) /* a name not interned */
            if (PyUnicode_Compare(key, names[i]) == 0)
                found = i;
        if (found < 0 || slots[found] != NULL)
            return 0;
        slots[found] = args[nargs + j];
    }
    return 1;
}

static int
is_absent(PyObject *value)
{
    return value == NULL || value == Py_None;
}

/* A float or int (exactly, as the Python route: bool and NumPy scalars go there) as a double;
 * 0 when it is not one, or does not fit. */
static int
plain_scalar(PyObject *value, double *out)
{
    if (PyFloat_CheckExact(value)) {
        *out = PyFloat_AS_DOUBLE(value);
        return 1;
    }
    if (PyLong_CheckExact(value)) {
        *out = PyLong_AsDouble(value);
        if (*out == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
        return 1;
    }
    return 0;
}

/* A trans flag: absent (0) or an exact int 0, 1 or 2; -1 otherwise. */
static int
trans_flag(PyObject *value)
{
    if (value == NULL)
        return 0;
    if (!PyLong_CheckExact(value))
        return -1;
    int overflow = 0;
    long flag = PyLong_AsLongAndOverflow(value, &overflow);
    if (overflow || flag < 0 || flag > 2) {
        PyErr_Clear();
        return -1;
    }
    return (int)flag;
}

/* The operand as a 2-D NumPy array (exactly ndarray, as the Python route), or NULL. */
static PyArrayObject *
matrix(PyObject *value)
{
    if (value == NULL || Py_TYPE(value) != &PyArray_Type)
        return NULL;
    PyArrayObject *array = (PyArrayObject *)value;
    return PyArray_NDIM(array) == 2 ? array : NULL;
}

/* Whether the crossover sends the product (m, n, k) of this dtype to NumPy: _small_host.py's
 * _numpy_owns under the default settings (below the crossover's work, or moving much data
 * for little work). 0 also where Python is to decide: another dtype, the size not known yet,
 * or a setting that changes the choice is present. */
static int
numpy_owns(PyArray_Descr *descr, double m, double n, double k)
{
    double size = descr == descr_f32 ? crossover_size[0]
                : descr == descr_f64 ? crossover_size[1] : 0.0;
    if (size <= 0.0 || environ_dict == NULL)
        return 0;
    Py_ssize_t settings = PyTuple_GET_SIZE(override_keys);
    for (Py_ssize_t i = 0; i < settings; i++) {
        int present = PyDict_Contains(environ_dict, PyTuple_GET_ITEM(override_keys, i));
        if (present != 0) {
            if (present < 0)
                PyErr_Clear();
            return 0;
        }
    }
    double work = m * n * k;
    return work < size * size * size || 3.0 * work < (m * k + k * n + m * n) * size;
}

/* left @ right by NumPy: np.dot's core for tiny operands (less dispatch), np.matmul above
 * dot_limit (np.dot was slower there; see DOT_LIMIT in _small_host.py). */
static PyObject *
numpy_product(PyObject *left, PyObject *right, double work)
{
    if (work < dot_limit)
        return PyArray_MatrixProduct2(left, right, NULL);
    PyObject *matmul = matmul_function; /* held: configure() may run while BLAS drops the GIL */
    Py_INCREF(matmul);
    PyObject *product = PyObject_CallFunctionObjArgs(matmul, left, right, NULL);
    Py_DECREF(matmul);
    return product;
}

static PyObject *
transposed(PyArrayObject *array)
{
    return PyArray_Transpose(array, NULL);
}

/* GCC judges the code after a string of early returns cold, and leaves a loop there unvectorised
 * (2.5 us for a 64 x 64 product): the loops live in functions of their own, marked hot. */
#if defined(__GNUC__)
#define HOT_LOOP __attribute__((hot, noinline))
#else
#define HOT_LOOP
#endif

static HOT_LOOP void
scale_floats(float *data, npy_intp count, float factor)
{
    for (npy_intp i = 0; i < count; i++)
        data[i] *= factor;
}

static HOT_LOOP void
scale_doubles(double *data, npy_intp count, double factor)
{
    for (npy_intp i = 0; i < count; i++)
        data[i] *= factor;
}

/* The floating-point exceptions np.multiply reports (through np.errstate: warn, raise, ...). */
#define FP_EXCEPTIONS (FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID | FE_DIVBYZERO)

/* product *= alpha, in the product's dtype, as np.multiply(product, dtype.type(alpha),
 * out=product) rounds, without a ufunc call's microsecond. 0 when done; 1 when the Python
 * route must redo the call: the product (an ndarray) is not the plain array expected, or the
 * scaling raised a floating-point exception (overflow, say), which NumPy would report as
 * np.errstate says. alpha is finite, and within float32's range for a float32 product. */
static int
scale(PyArrayObject *array, double alpha)
{
    PyArray_Descr *descr = PyArray_DESCR(array);
    if (!PyArray_ISONESEGMENT(array) || !PyArray_ISWRITEABLE(array) ||
        (descr != descr_f32 && descr != descr_f64))
        return 1;
    npy_intp count = PyArray_SIZE(array);
    feclearexcept(FP_EXCEPTIONS);
    if (descr == descr_f32)
        scale_floats((float *)PyArray_DATA(array), count, (float)alpha);
    else
        scale_doubles((double *)PyArray_DATA(array), count, alpha);
    return fetestexcept(FP_EXCEPTIONS) != 0;
}

#define NOT_HERE ((PyObject *)1) /* a call for the Python routine */

/* sgemm, dgemm, gemm: alpha * op(a) @ op(b) as a new Fortran-ordered array, or NOT_HERE. */
static PyObject *
gemm_product(int kind, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyObject *slot[9];
    if (!sort_arguments(args, nargsf, kwnames, gemm_names, 9, GEMM_POSITIONAL, slot))
        return NOT_HERE;
    PyObject *alpha_object = slot[0], *beta_object = slot[3];
    if (alpha_object == NULL || !is_absent(slot[4]) || !is_absent(slot[8]))
        return NOT_HERE;
    PyArrayObject *a = matrix(slot[1]), *b = matrix(slot[2]);
    if (a == NULL || b == NULL)
        return NOT_HERE;
    PyArray_Descr *descr = PyArray_DESCR(a);
    if (PyArray_DESCR(b) != descr)
        return NOT_HERE;
    if ((kind == SGEMM && descr != descr_f32) || (kind == DGEMM && descr != descr_f64))
        return NOT_HERE;
    double alpha, beta = 0.0;
    if (!plain_scalar(alpha_object, &alpha) || alpha == 0.0) /* alpha 0 reads neither */
        return NOT_HERE;
    /* inf or NaN, or beyond float32 (its cast warns): Python applies it, and reports */
    if (!isfinite(alpha) || (descr == descr_f32 && fabs(alpha) > FLT_MAX))
        return NOT_HERE;
    if (beta_object != NULL && (!plain_scalar(beta_object, &beta) || beta != 0.0))
        return NOT_HERE;
    int trans_a = trans_flag(slot[5]), trans_b = trans_flag(slot[6]);
    if (trans_a < 0 || trans_b < 0)
        return NOT_HERE;
    npy_intp k = PyArray_DIM(a, trans_a ? 0 : 1), k_b = PyArray_DIM(b, trans_b ? 1 : 0);
    if (k != k_b) /* Python says why */
        return NOT_HERE;
    npy_intp m = PyArray_DIM(a, trans_a ? 1 : 0), n = PyArray_DIM(b, trans_b ? 0 : 1);
    if (!numpy_owns(descr, (double)m, (double)n, (double)k))
        return NOT_HERE;
    double work = (double)PyArray_SIZE(a) * (double)PyArray_SIZE(b);

    /* op(b)^T op(a)^T, transposed back: BLAS writes straight into a Fortran-ordered result. */
    PyObject *a_t = trans_a ? (Py_INCREF(a), (PyObject *)a) : transposed(a);
    PyObject *b_t = trans_b ? (Py_INCREF(b), (PyObject *)b) : transposed(b);
    PyObject *product = NULL, *result = NULL;
    if (a_t != NULL && b_t != NULL)
        product = numpy_product(b_t, a_t, work);
    Py_XDECREF(a_t);
    Py_XDECREF(b_t);
    if (product == NULL)
        return NULL;
    if (!PyArray_CheckExact(product) ||
        (alpha != 1.0 && scale((PyArrayObject *)product, alpha) != 0)) {
        Py_DECREF(product); /* Python redoes the call and reports what it meets */
        return NOT_HERE;
    }
    result = transposed((PyArrayObject *)product);
    Py_DECREF(product);
    return result;
}

/* matmul: a @ b for 2-D operands of one GEMM dtype, or NOT_HERE. */
static PyObject *
matmul_product(PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyObject *slot[4];
    if (!sort_arguments(args, nargsf, kwnames, matmul_names, 4, MATMUL_POSITIONAL, slot))
        return NOT_HERE;
    if (!is_absent(slot[2]) || !is_absent(slot[3]))
        return NOT_HERE;
    PyArrayObject *a = matrix(slot[0]), *b = matrix(slot[1]);
    if (a == NULL || b == NULL || PyArray_DESCR(b) != PyArray_DESCR(a))
        return NOT_HERE;
    if (PyArray_DIM(a, 1) != PyArray_DIM(b, 0))
        return NOT_HERE;
    double m = (double)PyArray_DIM(a, 0), k = (double)PyArray_DIM(a, 1);
    if (!numpy_owns(PyArray_DESCR(a), m, (double)PyArray_DIM(b, 1), k))
        return NOT_HERE;
    double work = (double)PyArray_SIZE(a) * (double)PyArray_SIZE(b);
    return numpy_product((PyObject *)a, (PyObject *)b, work);
}

static PyObject *
route_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Route *route = (Route *)self;
    PyObject *result = route->kind == MATMUL ? matmul_product(args, nargsf, kwnames)
                                             : gemm_product(route->kind, args, nargsf, kwnames);
    if (result != NOT_HERE)
        return result;
    return PyObject_Vectorcall(route->function, args, nargsf, kwnames);
}

static PyObject *
route_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *function;
    int kind;
    static char *keywords[] = {"function", "kind", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Oi:Route", keywords, &function, &kind))
        return NULL;
    if (!PyCallable_Check(function)) {
        PyErr_SetString(PyExc_TypeError, "Route: function must be callable");
        return NULL;
    }
    if (kind < 0 || kind >= KIND_COUNT) {
        PyErr_Format(PyExc_ValueError, "Route: kind must be 0 to %d, not %d", KIND_COUNT - 1,
                     kind);
        return NULL;
    }
    Route *route = (Route *)type->tp_alloc(type, 0);
    if (route == NULL)
        return NULL;
    route->dict = PyDict_New();
    if (route->dict == NULL) {
        Py_DECREF(route);
        return NULL;
    }
    Py_INCREF(function);
    route->function = function;
    route->kind = kind;
    route->vectorcall = route_vectorcall;
    return (PyObject *)route;
}

static int
route_traverse(Route *route, visitproc visit, void *arg)
{
    Py_VISIT(route->function);
    Py_VISIT(route->dict);
    return 0;
}

static int
route_clear(Route *route)
{
    Py_CLEAR(route->function);
    Py_CLEAR(route->dict);
    return 0;
}

static void
route_dealloc(Route *route)
{
    PyObject_GC_UnTrack(route);
    if (route->weakrefs != NULL)
        PyObject_ClearWeakRefs((PyObject *)route);
    route_clear(route);
    Py_TYPE(route)->tp_free((PyObject *)route);
}

/* Bound as a method where a class holds it, as the Python function it stands for would be. */
static PyObject *
route_get(PyObject *self, PyObject *instance, PyObject *owner)
{
    if (instance == NULL || instance == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, instance);
}

static PyObject *
route_repr(Route *route)
{
    return PyUnicode_FromFormat("<routine %R, short route in C>", route->function);
}

/* Pickled by name, as functions are: the module's attribute of that name. */
static PyObject *
route_reduce(Route *route, PyObject *unused)
{
    return PyObject_GetAttrString((PyObject *)route, "__qualname__");
}

static PyMethodDef route_methods[] = {
    {"__reduce__", (PyCFunction)route_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef route_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject RouteType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tunedgemm._short_route.compiled_function", /* help() heads its page with this */
    .tp_doc = "Route(function, kind): a public routine with its short route in C.",
    .tp_basicsize = sizeof(Route),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_new = route_new,
    .tp_dealloc = (destructor)route_dealloc,
    .tp_traverse = (traverseproc)route_traverse,
    .tp_clear = (inquiry)route_clear,
    .tp_repr = (reprfunc)route_repr,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Route, vectorcall),
    .tp_dictoffset = offsetof(Route, dict),
    .tp_weaklistoffset = offsetof(Route, weakrefs),
    .tp_descr_get = route_get,
    .tp_methods = route_methods,
    .tp_getset = route_getset,
};

static PyObject *
configure(PyObject *module, PyObject *args)
{
    PyObject *environ, *keys, *matmul;
    double limit;
    if (!PyArg_ParseTuple(args, "O!O!Od:configure", &PyDict_Type, &environ, &PyTuple_Type,
                          &keys, &matmul, &limit))
        return NULL;
    Py_INCREF(environ);
    Py_INCREF(keys);
    Py_INCREF(matmul);
    Py_XSETREF(environ_dict, environ);
    Py_XSETREF(override_keys, keys);
    Py_XSETREF(matmul_function, matmul);
    dot_limit = limit;
    Py_RETURN_NONE;
}

static PyObject *
set_crossover(PyObject *module, PyObject *args)
{
    PyObject *dtype;
    double size;
    if (!PyArg_ParseTuple(args, "Od:set_crossover", &dtype, &size))
        return NULL;
    if (dtype == (PyObject *)descr_f32)
        crossover_size[0] = size;
    else if (dtype == (PyObject *)descr_f64)
        crossover_size[1] = size;
    else {
        PyErr_SetString(PyExc_ValueError, "set_crossover: dtype must be float32 or float64");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
forget(PyObject *module, PyObject *unused)
{
    crossover_size[0] = crossover_size[1] = 0.0;
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(environ_dict, override_keys, matmul, dot_limit): what every route reads."},
    {"set_crossover", set_crossover, METH_VARARGS,
     "set_crossover(dtype, size): the CPU/GPU crossover size for a dtype (inf: all NumPy)."},
    {"forget", forget, METH_NOARGS, "Drop the crossover sizes: calls go to Python until set."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT, "_short_route",
    "The short route of small host calls, in C (see tunedgemm/_small_host.py).", -1,
    module_methods,
};

static int
intern_names(PyObject **names, const char *const *texts, int count)
{
    for (int i = 0; i < count; i++) {
        names[i] = PyUnicode_InternFromString(texts[i]);
        if (names[i] == NULL)
            return -1;
    }
    return 0;
}

PyMODINIT_FUNC
PyInit__short_route(void)
{
    import_array();
    static const char *const gemm_texts[] = {"alpha", "a", "b", "beta", "c",
                                             "trans_a", "trans_b", "overwrite_c", "stream"};
    static const char *const matmul_texts[] = {"a", "b", "out", "stream"};
    if (intern_names(gemm_names, gemm_texts, 9) < 0 ||
        intern_names(matmul_names, matmul_texts, 4) < 0)
        return NULL;
    descr_f32 = PyArray_DescrFromType(NPY_FLOAT32);
    descr_f64 = PyArray_DescrFromType(NPY_FLOAT64);
    if (descr_f32 == NULL || descr_f64 == NULL || PyType_Ready(&RouteType) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&module_definition);
    if (module == NULL)
        return NULL;
    Py_INCREF(&RouteType);
    if (PyModule_AddObject(module, "Route", (PyObject *)&RouteType) < 0 ||
        PyModule_AddIntConstant(module, "SGEMM", SGEMM) < 0 ||
        PyModule_AddIntConstant(module, "DGEMM", DGEMM) < 0 ||
        PyModule_AddIntConstant(module, "GEMM", GEMM) < 0 ||
        PyModule_AddIntConstant(module, "MATMUL", MATMUL) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
