/* The short route of small host calls, in C: tunedgemm/_small_host.py's screen and product,
 * run before any Python frame.
 *
 * Why C: a small product takes NumPy about a microsecond, and the Python route's checks cost
 * 0.5-1 us more (the same checks here cost tens of ns). A Route wraps one public routine
 * (sgemm, dgemm, gemm or matmul, written in Python): a call that the crossover sends to NumPy
 * anyway (gemm with or without c, in place or not; matmul with vectors, batches or out=) is
 * computed here, by the NumPy calls the Python route makes, to the bit; every other call,
 * and every call this file has a doubt about, goes to the wrapped Python function unchanged,
 * which decides it and gives every error message. This file never raises an error of its own
 * for a call: what it refuses, Python sees.
 *
 * The Python side (tunedgemm/_small_host.py) hands over what the route reads: the crossover
 * size per dtype once it is known (0 until then: such calls go to Python, which fills it),
 * the process environment's dict and the setting names whose presence sends every call to
 * Python, np.matmul, and the size below which np.dot's core is called instead; and, where SciPy
 * is installed, tunedgemm/_host_blas.py hands over its BLAS sgemm and dgemm
 * (scipy.linalg.cython_blas's capsules: the routines scipy.linalg.blas calls), which serve a
 * gemm whose operands BLAS takes as they lie (blas_gemm; gemm_into for the Python routes).
 * Nothing here links to BLAS at build time. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <fenv.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stddef.h> /* offsetof */
#include <string.h> /* memcpy */

enum kind { SGEMM, DGEMM, GEMM, MATMUL, KIND_COUNT };

/* Filled by configure(); the route stays shut (every call to Python) until then. */
static PyObject *environ_dict = NULL;  /* os.environ._data */
static PyObject *override_keys = NULL; /* tuple of encoded names */
static PyObject *matmul_function = NULL;
static double dot_limit = 0.0;
/* The crossover size per dtype (index 0 float32, 1 float64; 0: not known yet, ask Python). */
static double crossover_size[2] = {0.0, 0.0};
static PyArray_Descr *descr_f32 = NULL, *descr_f64 = NULL;

/* BLAS's sgemm and dgemm, Fortran's calling convention as scipy.linalg.cython_blas declares
 * them (LP64: int dimensions; no hidden lengths for the one-character flags); NULL where SciPy
 * is missing or its capsules have another signature: then NumPy computes every product. */
typedef void sgemm_routine(char *, char *, int *, int *, int *, float *, float *, int *, float *,
                           int *, float *, float *, int *);
typedef void dgemm_routine(char *, char *, int *, int *, int *, double *, double *, int *,
                           double *, int *, double *, double *, int *);
static sgemm_routine *blas_sgemm = NULL;
static dgemm_routine *blas_dgemm = NULL;
#define CYTHON_BLAS_TYPE(letter) "__pyx_t_5scipy_6linalg_11cython_blas_" letter " *"
#define CYTHON_GEMM_SIGNATURE(letter)                                                         \
    "void (char *, char *, int *, int *, int *, " CYTHON_BLAS_TYPE(letter) ", "               \
    CYTHON_BLAS_TYPE(letter) ", int *, " CYTHON_BLAS_TYPE(letter) ", int *, "                  \
    CYTHON_BLAS_TYPE(letter) ", " CYTHON_BLAS_TYPE(letter) ", int *)"
/* Above this much work (m n k) a BLAS call lets other threads run, as np.matmul does; below
 * it the 0.05-0.1 us of giving up and taking back the GIL would show (a 32^3 product takes
 * 1-3 us). */
#define BLAS_KEEPS_GIL_BELOW (48.0 * 48.0 * 48.0)

static PyObject *gemm_names[9]; /* alpha a b beta c trans_a trans_b overwrite_c stream */
static PyObject *matmul_names[4]; /* a b out stream */
static PyObject *out_kwnames = NULL; /* ("out",): np.matmul(a, b, out=out) */
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

/* The operand as a NumPy array (exactly ndarray, as the Python route) of ndim from 1 to 2, or
 * up to NPY_MAXDIMS where max_ndim says so; NULL otherwise. */
static PyArrayObject *
array_of(PyObject *value, int max_ndim)
{
    if (value == NULL || Py_TYPE(value) != &PyArray_Type)
        return NULL;
    PyArrayObject *array = (PyArrayObject *)value;
    int ndim = PyArray_NDIM(array);
    return ndim >= 1 && ndim <= max_ndim ? array : NULL;
}

/* The operand as a 2-D NumPy array, or NULL. */
static PyArrayObject *
matrix(PyObject *value)
{
    PyArrayObject *array = array_of(value, 2);
    return array != NULL && PyArray_NDIM(array) == 2 ? array : NULL;
}

/* Whether the crossover sends the product (m, n, k) of this dtype to NumPy: _small_host.py's
 * _numpy_owns under the default settings, crossover.prefer_numpy's rule (below the
 * crossover's work, or moving much data for little work). 0 also where Python is to decide:
 * another dtype, the size not known yet, or a setting that changes the choice is present. */
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

/* left @ right by NumPy, into out when given: np.dot's core for tiny operands (less
 * dispatch; its out must be an aligned C-contiguous array), np.matmul above dot_limit
 * (np.dot was slower there; see DOT_LIMIT in _small_host.py) or where `batched`. */
static PyObject *
numpy_product(PyObject *left, PyObject *right, PyObject *out, double work, int batched)
{
    if (!batched && work < dot_limit && (out == NULL || PyArray_ISCARRAY((PyArrayObject *)out)))
        return PyArray_MatrixProduct2(left, right, (PyArrayObject *)out);
    PyObject *matmul = matmul_function; /* held: configure() may run while BLAS drops the GIL */
    Py_INCREF(matmul);
    PyObject *call[3] = {left, right, out};
    PyObject *product = PyObject_Vectorcall(matmul, call, 2, out == NULL ? NULL : out_kwnames);
    Py_DECREF(matmul);
    return product;
}

static PyObject *
transposed(PyArrayObject *array)
{
    return PyArray_Transpose(array, NULL);
}

/* GCC judges the code after a string of early returns cold, and leaves a loop there unvectorised
 * (2.5 us for a 64 x 64 product): the loops live in functions of their own, marked hot. On
 * x86-64 each is also built for AVX2, chosen at load time where the CPU has it (the passes
 * over the result are a tenth of a 64^3 double product's time with SSE2 alone). */
#if defined(__GNUC__) && defined(__x86_64__) && defined(__linux__)
#define HOT_LOOP __attribute__((hot, noinline, target_clones("avx2", "default")))
#elif defined(__GNUC__)
#define HOT_LOOP __attribute__((hot, noinline))
#else
#define HOT_LOOP
#endif

/* One row of the result, in its dtype, rounded as NumPy's ufuncs round each step (setup.py
 * keeps the compiler from fusing a multiply and an add): p = alpha p (SCALE), p = alpha p +
 * beta c (SCALE_ADD), p = beta c (BETA_C: the product is not read). c's elements lie c_step
 * bytes apart. */
enum row_job { SCALE, SCALE_ADD, BETA_C };

#define ROW_LOOPS(TYPE, NAME)                                                                 \
    static HOT_LOOP void NAME##_contiguous(TYPE *restrict p, const TYPE *restrict c,          \
                                           npy_intp count, TYPE alpha, TYPE beta, int job)    \
    {                                                                                         \
        if (job == SCALE) /* + 0: a zero product scaled by a negative alpha is +0, as BLAS */ \
            for (npy_intp i = 0; i < count; i++)                                              \
                p[i] = alpha * p[i] + (TYPE)0;                                                \
        else if (job == SCALE_ADD)                                                            \
            for (npy_intp i = 0; i < count; i++)                                              \
                p[i] = alpha * p[i] + beta * c[i];                                            \
        else                                                                                  \
            for (npy_intp i = 0; i < count; i++)                                              \
                p[i] = beta * c[i];                                                           \
    }                                                                                         \
    static HOT_LOOP void NAME##_strided(TYPE *restrict p, const char *restrict c,              \
                                        npy_intp c_step, npy_intp count, TYPE alpha,          \
                                        TYPE beta, int job)                                   \
    {                                                                                         \
        for (npy_intp i = 0; i < count; i++) {                                                \
            TYPE element = *(const TYPE *)(c + i * c_step);                                   \
            p[i] = job == SCALE_ADD ? alpha * p[i] + beta * element : beta * element;         \
        }                                                                                     \
    }

ROW_LOOPS(float, floats)
ROW_LOOPS(double, doubles)


/* The floating-point exceptions np.multiply reports (through np.errstate: warn, raise, ...).
 * On x86-64 the loops above run on SSE/AVX, whose flags are MXCSR's: cleared and read there
 * directly (20 ns, where feclearexcept and fetestexcept, which also save and restore the
 * x87 state, took 110 ns). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(_MSC_VER))
#include <xmmintrin.h>
#define MXCSR_FLAGS 0x1D /* invalid, divide-by-zero, overflow, underflow (not denormal, inexact) */
static void
clear_fp_exceptions(void)
{
    _mm_setcsr(_mm_getcsr() & ~0x3Fu);
}
static int
fp_exceptions_raised(void)
{
    return (_mm_getcsr() & MXCSR_FLAGS) != 0;
}
#else
#define FP_EXCEPTIONS (FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID | FE_DIVBYZERO)
static void
clear_fp_exceptions(void)
{
    feclearexcept(FP_EXCEPTIONS);
}
static int
fp_exceptions_raised(void)
{
    return fetestexcept(FP_EXCEPTIONS) != 0;
}
#endif

/* One job over the whole product p, a fresh C-contiguous rows x cols array of the result's
 * dtype: c (for all but SCALE) holds the matching element of row r, column q at
 * c_data + r * c_row + q * c_col. Returns 0 when done; 1 when the Python route must redo
 * the call: a step raised a floating-point exception (an overflow, say), which NumPy reports
 * as np.errstate says. */
static int
run_rows(PyArrayObject *p, const char *c_data, npy_intp c_row, npy_intp c_col, double alpha,
         double beta, int job)
{
    int single = PyArray_DESCR(p) == descr_f32;
    npy_intp item = single ? 4 : 8;
    npy_intp rows = PyArray_DIM(p, 0), cols = PyArray_DIM(p, 1);
    char *p_data = PyArray_DATA(p);
    if (job == SCALE || (c_col == item && c_row == cols * item)) { /* one run of elements */
        cols *= rows;
        rows = cols > 0;
    }
    float alpha_f = (float)alpha, beta_f = (float)beta; /* (exact: rounded already) */
    clear_fp_exceptions();
    for (npy_intp r = 0; r < rows; r++) {
        char *p_row = p_data + r * cols * item;
        const char *c_here = c_data + r * c_row;
        if (single && (job == SCALE || c_col == item))
            floats_contiguous((float *)p_row, (const float *)c_here, cols, alpha_f, beta_f, job);
        else if (single)
            floats_strided((float *)p_row, c_here, c_col, cols, alpha_f, beta_f, job);
        else if (job == SCALE || c_col == item)
            doubles_contiguous((double *)p_row, (const double *)c_here, cols, alpha, beta, job);
        else
            doubles_strided((double *)p_row, c_here, c_col, cols, alpha, beta, job);
    }
    return fp_exceptions_raised();
}

/* c = p, the last step of an in-place call (it raises nothing): p as in run_rows. */
static void
copy_back(PyArrayObject *p, char *c_data, npy_intp c_row, npy_intp c_col)
{
    npy_intp item = PyArray_ITEMSIZE(p);
    npy_intp rows = PyArray_DIM(p, 0), cols = PyArray_DIM(p, 1);
    const char *p_data = PyArray_DATA(p);
    if (c_col == item && c_row == cols * item) {
        memcpy(c_data, p_data, (size_t)(rows * cols * item));
        return;
    }
    for (npy_intp r = 0; r < rows; r++) {
        const char *p_row = p_data + r * cols * item;
        char *c_here = c_data + r * c_row;
        if (c_col == item)
            memcpy(c_here, p_row, (size_t)(cols * item));
        else
            for (npy_intp q = 0; q < cols; q++)
                memcpy(c_here + q * c_col, p_row + q * item, (size_t)item);
    }
}

/* Whether no two elements of the 2-D array share memory: contiguous, or each axis's stride
 * (by size) clears the span of those below it. A sufficient test: what it cannot vouch for is
 * Python's (_small_host._distinct_elements, the same test). */
static int
distinct_elements(PyArrayObject *array)
{
    if (PyArray_IS_C_CONTIGUOUS(array) || PyArray_IS_F_CONTIGUOUS(array))
        return 1;
    npy_intp step[2], count[2];
    int axes = 0;
    for (int axis = 0; axis < 2; axis++)
        if (PyArray_DIM(array, axis) > 1) {
            npy_intp stride = PyArray_STRIDE(array, axis);
            step[axes] = stride < 0 ? -stride : stride;
            count[axes++] = PyArray_DIM(array, axis);
        }
    if (axes == 2 && step[1] < step[0]) {
        npy_intp s = step[0], n = count[0];
        step[0] = step[1], count[0] = count[1], step[1] = s, count[1] = n;
    }
    npy_intp span = PyArray_ITEMSIZE(array);
    for (int i = 0; i < axes; i++) {
        if (step[i] < span)
            return 0;
        span = step[i] * count[i];
    }
    return 1;
}

/* A scalar of the routine's dtype, as NumPy would round it (dtype.type(value)); 0 where the
 * Python route is to handle it: not finite, or beyond float32's range (the cast warns). */
static int
rounded(double value, int single, double *out)
{
    if (!isfinite(value) || (single && fabs(value) > FLT_MAX))
        return 0;
    *out = single ? (double)(float)value : value;
    return 1;
}

#define NOT_HERE ((PyObject *)1) /* a call for the Python routine */

/* A matrix operand as BLAS reads it without a copy: its data, its flag ('N' for op(x) = x as
 * it lies in Fortran order, 'T' for its transpose; trans 2, the conjugate transpose, is the
 * transpose of a real matrix) and its leading dimension. */
typedef struct {
    char *data;
    char trans;
    int lead;
} blas_operand;

/* x (op(x) its transpose where trans) as BLAS reads it: Fortran-ordered as it is, or C-ordered,
 * which is the transpose of a Fortran-ordered matrix (the flag flipped). 0 where BLAS cannot
 * read it as it lies: neither contiguous, unaligned, or too large for a Fortran int. The
 * Python route's _blas_operand makes the same choice (F-ordered first: a matrix of one row
 * or column may be both). */
static int
as_blas_operand(PyArrayObject *x, int trans, blas_operand *out)
{
    npy_intp rows = PyArray_DIM(x, 0), cols = PyArray_DIM(x, 1), lead;
    if (!PyArray_ISALIGNED(x) || rows > INT_MAX || cols > INT_MAX)
        return 0;
    if (PyArray_IS_F_CONTIGUOUS(x)) {
        out->trans = trans ? 'T' : 'N';
        lead = rows;
    }
    else if (PyArray_IS_C_CONTIGUOUS(x)) {
        out->trans = trans ? 'N' : 'T';
        lead = cols;
    }
    else
        return 0;
    out->lead = lead > 1 ? (int)lead : 1; /* BLAS asks for at least 1 */
    out->data = PyArray_DATA(x);
    return 1;
}

/* C = alpha op(A) op(B) + beta C by BLAS, C the Fortran-ordered rows x cols matrix at c_data.
 * beta == 0 does not read C: the reference BLAS sets C to alpha op(A) op(B) without reading
 * it, and OpenBLAS (SciPy's) follows it (tests/unit/test_short_route.py holds it to that,
 * with NaN in C); a new result is therefore left uninitialised. alpha and beta are rounded to
 * the routine's precision already. */
static void
call_blas(int single, const blas_operand *A, const blas_operand *B, npy_intp rows,
          npy_intp cols, npy_intp depth, double alpha, double beta, char *c_data)
{
    char trans_a = A->trans, trans_b = B->trans;
    int m = (int)rows, n = (int)cols, k = (int)depth, lda = A->lead, ldb = B->lead;
    int ldc = m > 1 ? m : 1;
    float alpha_f = (float)alpha, beta_f = (float)beta;
    sgemm_routine *sgemm = blas_sgemm; /* (configure() may run while the GIL is given up) */
    dgemm_routine *dgemm = blas_dgemm;
    int release = (double)m * (double)n * (double)k >= BLAS_KEEPS_GIL_BELOW;
    PyThreadState *saved = release ? PyEval_SaveThread() : NULL;
    if (single)
        sgemm(&trans_a, &trans_b, &m, &n, &k, &alpha_f, (float *)A->data, &lda,
              (float *)B->data, &ldb, &beta_f, (float *)c_data, &ldc);
    else
        dgemm(&trans_a, &trans_b, &m, &n, &k, &alpha, (double *)A->data, &lda,
              (double *)B->data, &ldb, &beta, (double *)c_data, &ldc);
    if (saved != NULL)
        PyEval_RestoreThread(saved);
}

static char
flipped(char trans)
{
    return trans == 'N' ? 'T' : 'N';
}

/* out = alpha op(a) op(b) + beta out by one BLAS call, as SciPy's sgemm/dgemm computes it
 * (beta fused, the result written once), where BLAS takes the operands as they lie
 * (as_blas_operand) and out is Fortran-ordered, or C-ordered as its transpose out^T =
 * op(b)^T op(a)^T; 0 (nothing done) otherwise. The caller has checked the rest: one dtype
 * (single: float32), out aligned of shape (m, n), the product read (k > 0, alpha != 0),
 * 0 < m, n. BLAS raises nothing, so NaN and Inf come out as SciPy's. */
/* Whether two contiguous arrays' bytes overlap (c passed as a or b too: BLAS must not write
 * the operands it still reads, so such a call is left to the route that computes the product
 * in an array of its own). */
static int
overlap(PyArrayObject *x, PyArrayObject *y)
{
    char *x0 = PyArray_BYTES(x), *y0 = PyArray_BYTES(y);
    return x0 < y0 + PyArray_NBYTES(y) && y0 < x0 + PyArray_NBYTES(x);
}

static int
blas_into(int single, PyArrayObject *a, PyArrayObject *b, int trans_a, int trans_b,
          PyArrayObject *out, npy_intp m, npy_intp n, npy_intp k, double alpha, double beta)
{
    blas_operand A, B;
    if ((single ? (void *)blas_sgemm : (void *)blas_dgemm) == NULL ||
        !as_blas_operand(a, trans_a, &A) || !as_blas_operand(b, trans_b, &B))
        return 0;
    if (overlap(out, a) || overlap(out, b)) /* (a, b and out are contiguous here) */
        return 0;
    if (PyArray_IS_F_CONTIGUOUS(out))
        call_blas(single, &A, &B, m, n, k, alpha, beta, PyArray_DATA(out));
    else if (PyArray_IS_C_CONTIGUOUS(out)) {
        A.trans = flipped(A.trans), B.trans = flipped(B.trans);
        call_blas(single, &B, &A, n, m, k, alpha, beta, PyArray_DATA(out));
    }
    else
        return 0;
    return 1;
}

/* The gemm by BLAS (blas_into) into c in place, or into a new Fortran-ordered array (c copied
 * in first where beta reads it); NOT_HERE where BLAS cannot take the operands as they lie (or
 * c in place is neither Fortran- nor C-ordered), NULL with an exception where the new array
 * cannot be made. c changes in the BLAS call alone. */
static PyObject *
blas_gemm(int single, PyArrayObject *a, PyArrayObject *b, PyArrayObject *c, int in_place,
          int trans_a, int trans_b, npy_intp m, npy_intp n, npy_intp k, double alpha,
          double beta)
{
    blas_operand A, B; /* (checked before a new array is made for nothing) */
    if ((single ? (void *)blas_sgemm : (void *)blas_dgemm) == NULL || m <= 0 || n <= 0 ||
        !as_blas_operand(a, trans_a, &A) || !as_blas_operand(b, trans_b, &B))
        return NOT_HERE;
    if (in_place) {
        if (!blas_into(single, a, b, trans_a, trans_b, c, m, n, k, alpha, beta))
            return NOT_HERE;
        Py_INCREF(c);
        return (PyObject *)c;
    }
    PyObject *result;
    if (beta != 0.0)
        result = PyArray_NewCopy(c, NPY_FORTRANORDER);
    else {
        npy_intp dims[2] = {m, n};
        result = PyArray_EMPTY(2, dims, PyArray_DESCR(a)->type_num, 1);
    }
    if (result == NULL)
        return NULL;
    blas_into(single, a, b, trans_a, trans_b, (PyArrayObject *)result, m, n, k, alpha, beta);
    return result;
}

/* sgemm, dgemm, gemm: alpha * op(a) @ op(b) + beta * c as BLAS defines it (alpha == 0 or
 * k == 0 reads neither a nor b, beta == 0 does not read c, both tested in the routine's
 * precision), into c where it is overwritten (a writeable ndarray of the dtype whose elements
 * do not overlap) or as a new Fortran-ordered array; or NOT_HERE. By BLAS where SciPy's is
 * handed over and takes the operands as they lie (blas_gemm); else by NumPy, the result made
 * in an array of its own first and copied into c last, so that nothing of the caller's
 * changes unless the call succeeds (a floating-point exception in the scaling sends the call
 * to Python, which reports it as np.errstate says). */
static PyObject *
gemm_product(int kind, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyObject *slot[9];
    if (!sort_arguments(args, nargsf, kwnames, gemm_names, 9, GEMM_POSITIONAL, slot))
        return NOT_HERE;
    PyObject *alpha_object = slot[0], *beta_object = slot[3];
    if (alpha_object == NULL || !is_absent(slot[8]))
        return NOT_HERE;
    PyArrayObject *a = matrix(slot[1]), *b = matrix(slot[2]), *c = NULL;
    if (a == NULL || b == NULL)
        return NOT_HERE;
    PyArray_Descr *descr = PyArray_DESCR(a);
    if (PyArray_DESCR(b) != descr)
        return NOT_HERE;
    if ((kind == SGEMM && descr != descr_f32) || (kind == DGEMM && descr != descr_f64))
        return NOT_HERE;
    double alpha, beta = 0.0;
    if (!plain_scalar(alpha_object, &alpha))
        return NOT_HERE;
    if (beta_object != NULL && !plain_scalar(beta_object, &beta))
        return NOT_HERE;
    int trans_a = trans_flag(slot[5]), trans_b = trans_flag(slot[6]);
    if (trans_a < 0 || trans_b < 0)
        return NOT_HERE;
    npy_intp k = PyArray_DIM(a, trans_a ? 0 : 1), k_b = PyArray_DIM(b, trans_b ? 1 : 0);
    if (k != k_b) /* Python says why */
        return NOT_HERE;
    npy_intp m = PyArray_DIM(a, trans_a ? 1 : 0), n = PyArray_DIM(b, trans_b ? 0 : 1);
    int in_place = 0;
    if (!is_absent(slot[4])) {
        c = matrix(slot[4]);
        PyObject *overwrite = slot[7];
        if (c == NULL || PyArray_DESCR(c) != descr || PyArray_DIM(c, 0) != m ||
            PyArray_DIM(c, 1) != n || !PyArray_ISALIGNED(c))
            return NOT_HERE;
        if (overwrite != NULL && !PyLong_CheckExact(overwrite) && !PyBool_Check(overwrite))
            return NOT_HERE;
        if (overwrite != NULL && PyObject_IsTrue(overwrite) && PyArray_ISWRITEABLE(c)) {
            if (!distinct_elements(c))
                return NOT_HERE;
            in_place = 1;
        }
    }
    else if (beta != 0.0) /* Python says c is needed */
        return NOT_HERE;
    if (!numpy_owns(descr, (double)m, (double)n, (double)k))
        return NOT_HERE;
    int single = descr == descr_f32;
    if (beta != 0.0 && !rounded(beta, single, &beta))
        return NOT_HERE;
    int product_read = k > 0; /* k == 0: alpha is not read either, whatever it is */
    if (product_read) {
        if (!rounded(alpha, single, &alpha))
            return NOT_HERE;
        product_read = alpha != 0.0;
    }
    if (!product_read)
        alpha = 0.0;
    else {
        PyObject *by_blas = blas_gemm(single, a, b, c, in_place, trans_a, trans_b, m, n, k,
                                      alpha, beta);
        if (by_blas != NOT_HERE)
            return by_blas;
    }

    /* The result is made as p = op(a) @ op(b) (C-ordered) for a C-ordered c written in place,
     * else as its transpose p = op(b)^T op(a)^T (C-ordered, so the result p^T is Fortran-
     * ordered: BLAS writes straight into sgemm's layout). */
    int direct = in_place && PyArray_IS_C_CONTIGUOUS(c) && !PyArray_IS_F_CONTIGUOUS(c);
    npy_intp dims[2] = {direct ? m : n, direct ? n : m};
    PyObject *p_object;
    if (product_read) {
        double work = (double)PyArray_SIZE(a) * (double)PyArray_SIZE(b);
        PyObject *left = direct ? (trans_a ? transposed(a) : (Py_INCREF(a), (PyObject *)a))
                                : (trans_b ? (Py_INCREF(b), (PyObject *)b) : transposed(b));
        PyObject *right = direct ? (trans_b ? transposed(b) : (Py_INCREF(b), (PyObject *)b))
                                 : (trans_a ? (Py_INCREF(a), (PyObject *)a) : transposed(a));
        p_object = NULL;
        if (left != NULL && right != NULL)
            p_object = numpy_product(left, right, NULL, work, 0);
        Py_XDECREF(left);
        Py_XDECREF(right);
    }
    else if (beta == 0.0)
        p_object = PyArray_ZEROS(2, dims, PyArray_DESCR(a)->type_num, 0);
    else
        p_object = PyArray_EMPTY(2, dims, PyArray_DESCR(a)->type_num, 0);
    if (p_object == NULL)
        return NULL;
    PyArrayObject *p = (PyArrayObject *)p_object;
    if (!PyArray_CheckExact(p_object) || PyArray_DESCR(p) != descr ||
        !PyArray_IS_C_CONTIGUOUS(p) || !PyArray_ISWRITEABLE(p) || !PyArray_ISALIGNED(p)) {
        Py_DECREF(p_object); /* not the plain array expected: Python redoes the call */
        return NOT_HERE;
    }
    /* c's element for p's row r, column q */
    char *c_data = c != NULL ? PyArray_DATA(c) : NULL;
    npy_intp c_row = 0, c_col = 0;
    if (c != NULL) {
        c_row = PyArray_STRIDE(c, direct ? 0 : 1);
        c_col = PyArray_STRIDE(c, direct ? 1 : 0);
    }
    int job = product_read ? (beta != 0.0 ? SCALE_ADD : alpha != 1.0 ? SCALE : -1)
                           : (beta != 0.0 ? BETA_C : -1);
    if (job >= 0 && run_rows(p, c_data, c_row, c_col, alpha, beta, job) != 0) {
        Py_DECREF(p_object); /* Python redoes the call and reports what it meets */
        return NOT_HERE;
    }
    if (in_place) {
        copy_back(p, c_data, c_row, c_col);
        Py_DECREF(p_object);
        Py_INCREF(c);
        return (PyObject *)c;
    }
    if (direct)
        return p_object;
    PyObject *result = transposed(p);
    Py_DECREF(p_object);
    return result;
}

/* matmul: np.matmul(a, b, out=out) for operands of one GEMM dtype whose every 2-D product
 * the crossover gives NumPy (vectors, batches broadcast as np.matmul does, an out of the
 * result's dtype and shape), or NOT_HERE. */
static PyObject *
matmul_product(PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyObject *slot[4];
    if (!sort_arguments(args, nargsf, kwnames, matmul_names, 4, MATMUL_POSITIONAL, slot))
        return NOT_HERE;
    if (!is_absent(slot[3]))
        return NOT_HERE;
    PyArrayObject *a = array_of(slot[0], NPY_MAXDIMS), *b = array_of(slot[1], NPY_MAXDIMS);
    if (a == NULL || b == NULL || PyArray_DESCR(b) != PyArray_DESCR(a))
        return NOT_HERE;
    int a_ndim = PyArray_NDIM(a), b_ndim = PyArray_NDIM(b);
    npy_intp *a_dims = PyArray_DIMS(a), *b_dims = PyArray_DIMS(b);
    npy_intp m = a_ndim > 1 ? a_dims[a_ndim - 2] : 1, k = a_dims[a_ndim - 1];
    npy_intp k_b = b_ndim > 1 ? b_dims[b_ndim - 2] : b_dims[0];
    npy_intp n = b_ndim > 1 ? b_dims[b_ndim - 1] : 1;
    if (k != k_b)
        return NOT_HERE;
    /* The result's shape: the batch dimensions broadcast, then m and n where they are there. */
    int a_batch = a_ndim > 2 ? a_ndim - 2 : 0, b_batch = b_ndim > 2 ? b_ndim - 2 : 0;
    int batch = a_batch > b_batch ? a_batch : b_batch;
    npy_intp shape[NPY_MAXDIMS + 2];
    for (int i = 0; i < batch; i++) {
        npy_intp from_a = i - (batch - a_batch) >= 0 ? a_dims[i - (batch - a_batch)] : 1;
        npy_intp from_b = i - (batch - b_batch) >= 0 ? b_dims[i - (batch - b_batch)] : 1;
        if (from_a != from_b && from_a != 1 && from_b != 1)
            return NOT_HERE; /* Python says they do not broadcast */
        shape[i] = from_a == 1 ? from_b : from_a;
    }
    int ndim = batch;
    if (a_ndim > 1)
        shape[ndim++] = m;
    if (b_ndim > 1)
        shape[ndim++] = n;
    if (!numpy_owns(PyArray_DESCR(a), (double)m, (double)n, (double)k))
        return NOT_HERE;
    PyArrayObject *out = NULL;
    if (!is_absent(slot[2])) {
        out = array_of(slot[2], NPY_MAXDIMS);
        if (out == NULL || PyArray_DESCR(out) != PyArray_DESCR(a) || !PyArray_ISWRITEABLE(out) ||
            PyArray_NDIM(out) != ndim)
            return NOT_HERE;
        for (int i = 0; i < ndim; i++)
            if (PyArray_DIM(out, i) != shape[i])
                return NOT_HERE;
    }
    double work = (double)PyArray_SIZE(a) * (double)PyArray_SIZE(b);
    return numpy_product((PyObject *)a, (PyObject *)b, (PyObject *)out, work, batch > 0);
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

/* The routine in a cython_blas capsule whose name (Cython's C signature) is the one expected,
 * or NULL (None, or another signature: an ILP64 build, say). */
static void *
routine_in(PyObject *capsule, const char *signature)
{
    if (!PyCapsule_CheckExact(capsule))
        return NULL;
    const char *name = PyCapsule_GetName(capsule);
    if (name == NULL || strcmp(name, signature) != 0) {
        PyErr_Clear();
        return NULL;
    }
    void *routine = PyCapsule_GetPointer(capsule, name);
    if (routine == NULL)
        PyErr_Clear();
    return routine;
}

/* The capsules' owner, scipy.linalg.cython_blas, stays imported (sys.modules holds it), and
 * with it the library the pointers lead into. */
static PyObject *
set_blas(PyObject *module, PyObject *args)
{
    PyObject *sgemm_capsule, *dgemm_capsule;
    if (!PyArg_ParseTuple(args, "OO:set_blas", &sgemm_capsule, &dgemm_capsule))
        return NULL;
    sgemm_routine *sgemm = (sgemm_routine *)routine_in(sgemm_capsule, CYTHON_GEMM_SIGNATURE("s"));
    dgemm_routine *dgemm = (dgemm_routine *)routine_in(dgemm_capsule, CYTHON_GEMM_SIGNATURE("d"));
    if (sgemm == NULL || dgemm == NULL) /* both or neither: one rule for every dtype */
        sgemm = NULL, dgemm = NULL;
    blas_sgemm = sgemm, blas_dgemm = dgemm;
    return PyBool_FromLong(sgemm != NULL);
}

/* The float32 or float64 (native byte order) of a 2-D array: 1 single, 0 double, -1 other. */
static int
precision_of(PyArrayObject *x)
{
    if (PyArray_NDIM(x) != 2 || !PyArray_ISNOTSWAPPED(x))
        return -1;
    return PyArray_TYPE(x) == NPY_FLOAT32 ? 1 : PyArray_TYPE(x) == NPY_FLOAT64 ? 0 : -1;
}

/* gemm_into(alpha, a, b, beta, out, trans_a, trans_b) for the Python routes: blas_into where it
 * can (True), else False with nothing done. */
static PyObject *
gemm_into(PyObject *module, PyObject *args)
{
    double alpha, beta;
    PyArrayObject *a, *b, *out;
    int trans_a, trans_b;
    if (!PyArg_ParseTuple(args, "dO!O!dO!pp:gemm_into", &alpha, &PyArray_Type, &a,
                          &PyArray_Type, &b, &beta, &PyArray_Type, &out, &trans_a, &trans_b))
        return NULL;
    int single = precision_of(out);
    if (single < 0 || precision_of(a) != single || precision_of(b) != single ||
        !PyArray_ISALIGNED(out) || !PyArray_ISWRITEABLE(out))
        Py_RETURN_FALSE;
    if (single) { /* in the routine's precision, as everywhere here */
        alpha = (double)(float)alpha;
        beta = (double)(float)beta;
    }
    npy_intp m = PyArray_DIM(out, 0), n = PyArray_DIM(out, 1);
    npy_intp k = PyArray_DIM(a, trans_a ? 0 : 1);
    if (PyArray_DIM(a, trans_a ? 1 : 0) != m || PyArray_DIM(b, trans_b ? 1 : 0) != k ||
        PyArray_DIM(b, trans_b ? 0 : 1) != n || m <= 0 || n <= 0 || k <= 0 || alpha == 0.0)
        Py_RETURN_FALSE;
    return PyBool_FromLong(blas_into(single, a, b, trans_a, trans_b, out, m, n, k, alpha, beta));
}

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
    {"set_blas", set_blas, METH_VARARGS,
     "set_blas(sgemm, dgemm): scipy.linalg.cython_blas's capsules of BLAS sgemm and dgemm "
     "(None, None: none); True where they are taken."},
    {"gemm_into", gemm_into, METH_VARARGS,
     "gemm_into(alpha, a, b, beta, out, trans_a, trans_b): out = alpha op(a) op(b) + beta out "
     "by one BLAS call; False (nothing done) where BLAS cannot take them as they lie."},
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
    out_kwnames = PyTuple_Pack(1, matmul_names[2]);
    if (out_kwnames == NULL)
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
