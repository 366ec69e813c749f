/* Host copies into pinned staging buffers with non-temporal (streaming) stores.
 *
 * The host pipeline copies the caller's operands into pinned buffers, from which the GPUs'
 * copy engines read them. An ordinary store first reads each destination line into the cache
 * (read for ownership) and then evicts it, so each byte staged crosses host memory four times
 * (source read, destination read, write back, the DMA's read); a streaming store skips the
 * destination read and leaves the cache to the source. On two H200s both GPUs' staging
 * together reached only about 31 GB/s (2026-11-26), the limit of a host product at 16384^2.
 * glibc's memcpy streams only above a threshold of a fraction of the last-level cache, and the
 * pipeline's pieces are smaller than that.
 *
 * copy_2d(dst, dst_pitch, src, src_pitch, row_bytes, rows): rows lines of row_bytes bytes,
 * the GIL released (the pipeline copies pieces on several threads). Where the target has no
 * SSE2, or a destination line is not 16-byte aligned, it copies with memcpy. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static void
copy_line(char *dst, const char *src, size_t nbytes)
{
#if defined(__SSE2__)
    if (((uintptr_t)dst & 15) == 0) {
        size_t vectors = nbytes / 64;
        for (size_t i = 0; i < vectors; i++, dst += 64, src += 64) {
            __m128i x0 = _mm_loadu_si128((const __m128i *)src);
            __m128i x1 = _mm_loadu_si128((const __m128i *)(src + 16));
            __m128i x2 = _mm_loadu_si128((const __m128i *)(src + 32));
            __m128i x3 = _mm_loadu_si128((const __m128i *)(src + 48));
            _mm_stream_si128((__m128i *)dst, x0);
            _mm_stream_si128((__m128i *)(dst + 16), x1);
            _mm_stream_si128((__m128i *)(dst + 32), x2);
            _mm_stream_si128((__m128i *)(dst + 48), x3);
        }
        nbytes -= vectors * 64;
    }
#endif
    memcpy(dst, src, nbytes);
}

static PyObject *
copy_2d(PyObject *self, PyObject *args)
{
    unsigned long long dst, src;
    Py_ssize_t dst_pitch, src_pitch, row_bytes, rows;
    if (!PyArg_ParseTuple(args, "KnKnnn", &dst, &dst_pitch, &src, &src_pitch, &row_bytes,
                          &rows))
        return NULL;
    if (row_bytes < 0 || rows < 0) {
        PyErr_SetString(PyExc_ValueError, "copy_2d: negative row_bytes or rows");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < rows; r++)
        copy_line((char *)(uintptr_t)dst + r * dst_pitch,
                  (const char *)(uintptr_t)src + r * src_pitch, (size_t)row_bytes);
#if defined(__SSE2__)
    _mm_sfence(); /* the streamed lines are visible before the upload that follows is queued */
#endif
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"copy_2d", copy_2d, METH_VARARGS,
     "copy_2d(dst, dst_pitch, src, src_pitch, row_bytes, rows): rows lines of row_bytes "
     "bytes, streaming stores where the destination line is 16-byte aligned."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "tunedgemm._streamcopy",
    "Host copies with non-temporal stores (see tunedgemm/_streamcopy.c).", -1, methods,
};

PyMODINIT_FUNC
PyInit__streamcopy(void)
{
    return PyModule_Create(&module);
}
