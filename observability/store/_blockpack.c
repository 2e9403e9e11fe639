/* A store block's columns as JSON, compiled: what json.dumps(blocks._pack(column)) writes.
 *
 * Why: packing a block's columns and writing them as JSON value by value was half of the time
 * an ingest spent outside the parser (issue 13). This writes the two forms nearly every column
 * takes, byte for byte as the Python code does:
 *
 *   - every value an exact int: deltas, "[1,[first,d1,...]]", or divided by their common factor
 *     when it is above 1, "[5,step,first,[d1/step,...]]" (blocks._pack);
 *   - every value a str, int, float, bool or None: "[0,[v,...]]", each as json.dumps writes it
 *     with ensure_ascii=False.
 *
 * Anything else (lists, records, a str with a lone surrogate, an int past 64 bits, a delta
 * that overflows) returns None, and the caller packs that column in Python: the reference,
 * which tests/store/test_blockpack.py compares against on real blocks and on hypothesis'
 * columns.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    char *data;
    Py_ssize_t len;
    Py_ssize_t cap;
} Buf;

static int
buf_grow(Buf *b, Py_ssize_t need)
{
    if (b->len + need <= b->cap)
        return 0;
    Py_ssize_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + need)
        cap *= 2;
    char *data = PyMem_Realloc(b->data, (size_t)cap);
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->data = data;
    b->cap = cap;
    return 0;
}

static int
buf_put(Buf *b, const char *s, Py_ssize_t n)
{
    if (buf_grow(b, n) < 0)
        return -1;
    memcpy(b->data + b->len, s, (size_t)n);
    b->len += n;
    return 0;
}

static int
buf_int(Buf *b, long long v)
{
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%lld", v);
    return buf_put(b, tmp, n);
}

/* A str as json's C encoder writes it with ensure_ascii=False (_json.c escape_unicode):
 * quote, backslash, \b \f \n \r \t escaped short, other characters below 0x20 as \u00XX in
 * lower-case hex, everything else as is. 1: written; 0: not this path's (a lone surrogate,
 * which only the caller's "surrogatepass" can encode); -1: an error. */
static int
buf_str(Buf *b, PyObject *s)
{
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(s, &n);
    if (u == NULL) {
        if (PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
            PyErr_Clear();
            return 0;
        }
        return -1;
    }
    if (buf_grow(b, n * 6 + 2) < 0)
        return -1;
    char *out = b->data + b->len;
    *out++ = '"';
    static const char hex[] = "0123456789abcdef";
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)u[i];
        if (c >= 0x20 && c != '"' && c != '\\') {
            *out++ = (char)c;
            continue;
        }
        *out++ = '\\';
        switch (c) {
        case '"': *out++ = '"'; break;
        case '\\': *out++ = '\\'; break;
        case '\b': *out++ = 'b'; break;
        case '\f': *out++ = 'f'; break;
        case '\n': *out++ = 'n'; break;
        case '\r': *out++ = 'r'; break;
        case '\t': *out++ = 't'; break;
        default:
            *out++ = 'u';
            *out++ = '0';
            *out++ = '0';
            *out++ = hex[c >> 4];
            *out++ = hex[c & 15];
        }
    }
    *out++ = '"';
    b->len = out - b->data;
    return 1;
}

/* A float as json.dumps writes it: float.__repr__, or its names for the non-finite. */
static int
buf_float(Buf *b, PyObject *f)
{
    double x = PyFloat_AS_DOUBLE(f);
    if (isnan(x))
        return buf_put(b, "NaN", 3);
    if (isinf(x))
        return x > 0 ? buf_put(b, "Infinity", 8) : buf_put(b, "-Infinity", 9);
    char *s = PyOS_double_to_string(x, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (s == NULL)
        return -1;
    int rc = buf_put(b, s, (Py_ssize_t)strlen(s));
    PyMem_Free(s);
    return rc;
}

/* One value of a "[0,[...]]" column. 1: written; 0: not this path's; -1: an error. */
static int
buf_scalar(Buf *b, PyObject *v)
{
    if (v == Py_None)
        return buf_put(b, "null", 4) < 0 ? -1 : 1;
    if (v == Py_True)
        return buf_put(b, "true", 4) < 0 ? -1 : 1;
    if (v == Py_False)
        return buf_put(b, "false", 5) < 0 ? -1 : 1;
    if (PyUnicode_CheckExact(v))
        return buf_str(b, v);
    if (PyFloat_CheckExact(v))
        return buf_float(b, v) < 0 ? -1 : 1;
    if (PyLong_CheckExact(v)) {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (x == -1 && PyErr_Occurred())
            return -1;
        if (overflow) {
            PyObject *text = PyObject_Repr(v);
            if (text == NULL)
                return -1;
            Py_ssize_t n;
            const char *u = PyUnicode_AsUTF8AndSize(text, &n);
            int rc = u == NULL ? -1 : buf_put(b, u, n);
            Py_DECREF(text);
            return rc < 0 ? -1 : 1;
        }
        return buf_int(b, x) < 0 ? -1 : 1;
    }
    return 0;
}

static unsigned long long
gcd_u64(unsigned long long a, unsigned long long b)
{
    while (b) {
        unsigned long long t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* "[1,[...]]" or "[5,...]" of a column of exact ints. 1: written; 0: not this path's. */
static int
pack_ints(Buf *b, PyObject *const *items, Py_ssize_t n)
{
    long long *v = PyMem_Malloc((size_t)n * sizeof(long long));
    if (v == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int rc = 0;
    unsigned long long step = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int overflow = 0;
        v[i] = PyLong_AsLongLongAndOverflow(items[i], &overflow);
        if (v[i] == -1 && PyErr_Occurred()) {
            rc = -1;
            goto done;
        }
        if (overflow)
            goto done; /* past 64 bits: Python's */
    }
    for (Py_ssize_t i = 1; i < n; i++) {
        long long d;
        if (__builtin_sub_overflow(v[i], v[i - 1], &d) || d == LLONG_MIN)
            goto done;
        v[i - 1] = d; /* v[0..n-2] become the deltas; the first value is kept below */
        step = gcd_u64(step, (unsigned long long)(d < 0 ? -d : d));
    }
    {
        /* The loop overwrote v[0] with the first delta: read the first value again. */
        long long first = PyLong_AsLongLong(items[0]);
        if (n == 1)
            step = 1;
        if (step > 1) {
            if (buf_put(b, "[5,", 3) < 0 || buf_int(b, (long long)step) < 0 ||
                buf_put(b, ",", 1) < 0 || buf_int(b, first) < 0 || buf_put(b, ",[", 2) < 0)
                goto fail;
            for (Py_ssize_t i = 0; i + 1 < n; i++) {
                if ((i && buf_put(b, ",", 1) < 0) || buf_int(b, v[i] / (long long)step) < 0)
                    goto fail;
            }
            if (buf_put(b, "]]", 2) < 0)
                goto fail;
        }
        else {
            if (buf_put(b, "[1,[", 4) < 0 || buf_int(b, first) < 0)
                goto fail;
            for (Py_ssize_t i = 0; i + 1 < n; i++) {
                if (buf_put(b, ",", 1) < 0 || buf_int(b, v[i]) < 0)
                    goto fail;
            }
            if (buf_put(b, "]]", 2) < 0)
                goto fail;
        }
        rc = 1;
        goto done;
    }
fail:
    rc = -1;
done:
    PyMem_Free(v);
    return rc;
}

static PyObject *
pack(PyObject *self, PyObject *column)
{
    (void)self;
    if (!PyList_CheckExact(column)) {
        PyErr_SetString(PyExc_TypeError, "pack() takes a list");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(column);
    PyObject *const *items = (PyObject *const *)PySequence_Fast_ITEMS(column);
    Buf b = {NULL, 0, 0};
    int rc;
    int all_int = n > 0;
    for (Py_ssize_t i = 0; i < n && all_int; i++)
        all_int = PyLong_CheckExact(items[i]);
    if (all_int) {
        rc = pack_ints(&b, items, n);
    }
    else {
        rc = buf_put(&b, "[0,[", 4) < 0 ? -1 : 1;
        for (Py_ssize_t i = 0; i < n && rc == 1; i++) {
            if (i && buf_put(&b, ",", 1) < 0) {
                rc = -1;
                break;
            }
            rc = buf_scalar(&b, items[i]);
        }
        if (rc == 1 && buf_put(&b, "]]", 2) < 0)
            rc = -1;
    }
    PyObject *out = NULL;
    if (rc == 1)
        out = PyBytes_FromStringAndSize(b.data, b.len);
    else if (rc == 0)
        out = Py_NewRef(Py_None);
    PyMem_Free(b.data);
    return out;
}

static PyMethodDef methods[] = {
    {"pack", pack, METH_O,
     "pack(column: list) -> bytes | None: json.dumps(blocks._pack(column)) as UTF-8, or None "
     "for a column this path does not write."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_blockpack", "A store block's columns as JSON, compiled.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__blockpack(void)
{
    return PyModule_Create(&module);
}
