/* A store block's columns as JSON, compiled: what json.dumps(blocks._pack(column)) writes.
 *
 * Why: packing a block's columns and writing them as JSON value by value was half of the time
 * an ingest spent outside the parser (issue 13). This writes the forms nearly every column
 * takes, byte for byte as the Python code does:
 *
 *   - every value an exact int: deltas, "[1,[first,d1,...]]", or divided by their common factor
 *     when it is above 1, "[5,step,first,[d1/step,...]]" (blocks._pack);
 *   - every value a str or None, at most half as many distinct: "[6,[uniques],[index,...]]";
 *   - every value a str, int, float, bool or None: "[0,[v,...]]", each as json.dumps writes it
 *     with ensure_ascii=False;
 *   - every value a list (columns(): or a tuple, an output's shape), of values these forms
 *     take again: "[3,k,[column,...]]" or "[2,lengths,items]";
 *   - columns() only: every value a record of one type named_records() knows (a /metrics
 *     page's samples), as the dicts codec._plain makes: "[4,[names],[column,...]]".
 *
 * Anything else (other records, a str with a lone surrogate, an int past 64 bits, a delta that
 * overflows) is handed back, and the caller packs that column in Python: the reference, which
 * tests/store/test_blockpack.py compares against on real blocks and on hypothesis' columns.
 * columns() also reads a kind's columns off its records (their slots, looked up once per
 * column), group() splits a block's records by kind, and log_run() tells whether a log's batch
 * can be held without keys (Store._run_of).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
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

/* ``sep`` (unless 0), then v as "%lld" writes it, straight into the buffer. snprintf's
 * parsing of its format was a tenth of a log's ingest, and a buf_put a piece a twentieth. */
static int
buf_sep_int(Buf *b, char sep, long long v)
{
    if (buf_grow(b, 22) < 0)
        return -1;
    static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930"
                                "31323334353637383940414243444546474849505152535455565758596061"
                                "62636465666768697071727374757677787980818283848586878889909192"
                                "93949596979899";
    char tmp[20];
    char *end = tmp + sizeof tmp, *p = end;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    while (u >= 100) { /* two digits a division */
        unsigned int d = (unsigned int)(u % 100) * 2;
        u /= 100;
        *--p = pairs[d + 1];
        *--p = pairs[d];
    }
    if (u >= 10) {
        unsigned int d = (unsigned int)u * 2;
        *--p = pairs[d + 1];
        *--p = pairs[d];
    }
    else
        *--p = (char)('0' + u);
    char *out = b->data + b->len;
    if (sep)
        *out++ = sep;
    if (v < 0)
        *out++ = '-';
    memcpy(out, p, (size_t)(end - p));
    b->len = out + (end - p) - b->data;
    return 0;
}

static int
buf_int(Buf *b, long long v)
{
    return buf_sep_int(b, 0, v);
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

static int pack_deltas(Buf *b, long long *v, Py_ssize_t n);

/* "[1,[...]]" or "[5,...]" of a column of exact ints. 1: written; 0: not this path's. */
static int
pack_ints(Buf *b, PyObject *const *items, Py_ssize_t n)
{
    long long *v = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(long long));
    if (v == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int rc = 0;
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
    rc = pack_deltas(b, v, n);
done:
    PyMem_Free(v);
    return rc;
}

/* pack_ints' form of n values, which it overwrites with their deltas. 1: written; 0: a delta
 * overflows (Python's); -1: an error. */
static int
pack_deltas(Buf *b, long long *v, Py_ssize_t n)
{
    int rc = 0;
    unsigned long long step = 0;
    long long first = n ? v[0] : 0;
    for (Py_ssize_t i = 1; i < n; i++) {
        long long d;
        if (__builtin_sub_overflow(v[i], v[i - 1], &d) || d == LLONG_MIN)
            goto done;
        v[i - 1] = d; /* v[0..n-2] become the deltas; the first value is kept below */
        step = gcd_u64(step, (unsigned long long)(d < 0 ? -d : d));
    }
    {
        if (n == 1)
            step = 1;
        if (step > 1) {
            if (buf_put(b, "[5,", 3) < 0 || buf_int(b, (long long)step) < 0 ||
                buf_put(b, ",", 1) < 0 || buf_int(b, first) < 0 || buf_put(b, ",[", 2) < 0)
                goto fail;
            for (Py_ssize_t i = 0; i + 1 < n; i++) {
                if (buf_sep_int(b, i ? ',' : 0, v[i] / (long long)step) < 0)
                    goto fail;
            }
            if (buf_put(b, "]]", 2) < 0)
                goto fail;
        }
        else {
            if (buf_put(b, "[1,[", 4) < 0 || buf_int(b, first) < 0)
                goto fail;
            for (Py_ssize_t i = 0; i + 1 < n; i++) {
                if (buf_sep_int(b, ',', v[i]) < 0)
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
    return rc;
}

/* "[6,[uniques],[index,...]]" of a column of str and None with at most half as many
 * distinct values as values (blocks._pack). 1: written; 0: not this path's; 2: too many
 * distinct values (the plain form then); -1: an error. */
static int
pack_text(Buf *b, PyObject *const *items, Py_ssize_t n)
{
    PyObject *index = PyDict_New(), *uniques = PyList_New(0);
    Py_ssize_t *at = PyMem_Malloc((size_t)n * sizeof(Py_ssize_t));
    int rc = -1;
    if (index == NULL || uniques == NULL || at == NULL) {
        if (at == NULL)
            PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i && items[i] == items[i - 1]) { /* the same object again: most repeats */
            at[i] = at[i - 1];
            continue;
        }
        PyObject *known = PyDict_GetItemWithError(index, items[i]);
        if (known != NULL) {
            at[i] = PyLong_AsSsize_t(known);
            continue;
        }
        if (PyErr_Occurred())
            goto done;
        Py_ssize_t k = PyList_GET_SIZE(uniques);
        if (2 * (k + 1) > n) {
            rc = 2;
            goto done;
        }
        PyObject *num = PyLong_FromSsize_t(k);
        if (num == NULL || PyDict_SetItem(index, items[i], num) < 0 ||
            PyList_Append(uniques, items[i]) < 0) {
            Py_XDECREF(num);
            goto done;
        }
        Py_DECREF(num);
        at[i] = k;
    }
    if (buf_put(b, "[6,[", 4) < 0)
        goto done;
    rc = 1;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(uniques) && rc == 1; k++) {
        if (k && buf_put(b, ",", 1) < 0) {
            rc = -1;
            break;
        }
        rc = buf_scalar(b, PyList_GET_ITEM(uniques, k));
    }
    if (rc != 1)
        goto done;
    rc = -1;
    if (buf_put(b, "],[", 3) < 0)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++)
        if (buf_sep_int(b, i ? ',' : 0, (long long)at[i]) < 0)
            goto done;
    if (buf_put(b, "]]", 2) < 0)
        goto done;
    rc = 1;
done:
    Py_XDECREF(index);
    Py_XDECREF(uniques);
    PyMem_Free(at);
    return rc;
}

/* The packed JSON of n values into b. 1: written; 0: not this path's; -1: an error. */
static int pack_lists(Buf *b, PyObject *const *items, Py_ssize_t n, int tuples, int depth);
static int pack_records(Buf *b, PyObject *const *items, Py_ssize_t n, PyObject *names, int depth);

/* Record type -> its field names, as codec._plain writes a record (a dict of them, in
 * order): set once by codec.py (named_records). */
static PyObject *record_names = NULL;

/* The field names of items' one type when they are all of one type named_records knows
 * (borrowed), else NULL. */
static PyObject *
names_of_records(PyObject *const *items, Py_ssize_t n)
{
    if (n == 0 || record_names == NULL)
        return NULL;
    PyTypeObject *type = Py_TYPE(items[0]);
    for (Py_ssize_t i = 1; i < n; i++)
        if (Py_TYPE(items[i]) != type)
            return NULL;
    PyObject *names = PyDict_GetItemWithError(record_names, (PyObject *)type);
    if (names == NULL)
        PyErr_Clear(); /* a type is hashable: nothing to lose */
    return names;
}

static int
pack_into_at(Buf *b, PyObject *const *items, Py_ssize_t n, int tuples, int depth)
{
    int all_int = n > 0;
    for (Py_ssize_t i = 0; i < n && all_int; i++)
        all_int = PyLong_CheckExact(items[i]);
    if (all_int)
        return pack_ints(b, items, n);
    int all_text = n > 1;
    for (Py_ssize_t i = 0; i < n && all_text; i++)
        all_text = items[i] == Py_None || PyUnicode_CheckExact(items[i]);
    if (all_text) {
        Py_ssize_t start = b->len;
        int rc = pack_text(b, items, n);
        if (rc != 2)
            return rc;
        b->len = start;
    }
    int all_lists = n > 0;
    for (Py_ssize_t i = 0; i < n && all_lists; i++)
        all_lists = PyList_CheckExact(items[i]) || (tuples && PyTuple_CheckExact(items[i]));
    if (all_lists)
        return pack_lists(b, items, n, tuples, depth);
    PyObject *names = tuples ? names_of_records(items, n) : NULL;
    if (names != NULL)
        return pack_records(b, items, n, names, depth);
    int rc = buf_put(b, "[0,[", 4) < 0 ? -1 : 1;
    for (Py_ssize_t i = 0; i < n && rc == 1; i++) {
        if (i && buf_put(b, ",", 1) < 0)
            return -1;
        rc = buf_scalar(b, items[i]);
    }
    if (rc == 1 && buf_put(b, "]]", 2) < 0)
        rc = -1;
    return rc;
}

static int
pack_into(Buf *b, PyObject *const *items, Py_ssize_t n)
{
    return pack_into_at(b, items, n, 0, 0);
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
    int rc = pack_into(&b, items, n);
    PyObject *out = NULL;
    if (rc == 1)
        out = PyBytes_FromStringAndSize(b.data, b.len);
    else if (rc == 0)
        out = Py_NewRef(Py_None);
    PyMem_Free(b.data);
    return out;
}

/* "[3,k,[column...]]" or "[2,lengths,items]" of a column of lists (with ``tuples``, tuples
 * too, at every depth: what _plain makes a list, an output's shape, a trace span's tuple of
 * (stage, ns) pairs, an OTLP span's (key, value) attributes), as blocks._pack writes them:
 * each position's column, or the lengths and every item, packed again (pack_into_at). The
 * pairs' columns were handed back to Python's _plain and _pack, a seventh of a bundle's
 * ingest, as json.dumps of the Python forms had been an eighth before. 1: written; 0: not this path's (a value pack_into hands back,
 * nesting past MAX_DEPTH); -1: an error. */
#define MAX_DEPTH 16

static int
pack_lists(Buf *b, PyObject *const *items, Py_ssize_t n, int tuples, int depth)
{
    if (n == 0 || depth > MAX_DEPTH)
        return 0;
    Py_ssize_t total = 0, k = -1;
    int same = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = items[i];
        if (!PyList_CheckExact(v) && !(tuples && PyTuple_CheckExact(v)))
            return 0;
        Py_ssize_t m = PySequence_Fast_GET_SIZE(v);
        if (k < 0)
            k = m;
        same &= m == k;
        total += m;
    }
    Py_ssize_t width = same && k > 0 ? n : (total > n ? total : n);
    PyObject **col = PyMem_Malloc((size_t)(width ? width : 1) * sizeof(PyObject *));
    if (col == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int rc = -1;
    if (same && k > 0) {
        if (buf_put(b, "[3,", 3) < 0 || buf_int(b, (long long)k) < 0 || buf_put(b, ",[", 2) < 0)
            goto done;
        for (Py_ssize_t j = 0; j < k; j++) {
            for (Py_ssize_t i = 0; i < n; i++)
                col[i] = PySequence_Fast_ITEMS(items[i])[j];
            if (j && buf_put(b, ",", 1) < 0)
                goto done;
            rc = pack_into_at(b, col, n, tuples, depth + 1);
            if (rc != 1)
                goto done;
            rc = -1;
        }
        if (buf_put(b, "]]", 2) < 0)
            goto done;
        rc = 1;
        goto done;
    }
    PyObject **lengths = PyMem_Malloc((size_t)n * sizeof(PyObject *));
    if (lengths == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t made = 0, at = 0;
    for (; made < n; made++) {
        PyObject *v = items[made];
        lengths[made] = PyLong_FromSsize_t(PySequence_Fast_GET_SIZE(v));
        if (lengths[made] == NULL)
            break;
        for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(v); j++)
            col[at++] = PySequence_Fast_ITEMS(v)[j];
    }
    if (made == n && buf_put(b, "[2,", 3) == 0) {
        rc = pack_ints(b, lengths, n);
        if (rc == 1) {
            rc = -1;
            if (buf_put(b, ",", 1) == 0) {
                rc = pack_into_at(b, col, total, tuples, depth + 1);
                if (rc == 1 && buf_put(b, "]", 1) < 0)
                    rc = -1;
            }
        }
    }
    for (Py_ssize_t i = 0; i < made; i++)
        Py_DECREF(lengths[i]);
    PyMem_Free(lengths);
done:
    PyMem_Free(col);
    return rc;
}

/* "[4,[names],[column,...]]" of n records of one type, as blocks._pack writes the dicts
 * codec._plain makes of them: each field's column packed again (pack_into_at). A /metrics
 * page's samples are such a column, under a tuple a scrape; Python's _plain and _pack of
 * them were a seventh of a bundle's ingest. 1: written; 0: not this path's; -1: an error. */
static int
pack_records(Buf *b, PyObject *const *items, Py_ssize_t n, PyObject *names, int depth)
{
    if (depth > MAX_DEPTH || !PyTuple_CheckExact(names))
        return 0;
    Py_ssize_t k = PyTuple_GET_SIZE(names);
    if (buf_put(b, "[4,[", 4) < 0)
        return -1;
    for (Py_ssize_t j = 0; j < k; j++) {
        PyObject *name = PyTuple_GET_ITEM(names, j);
        if (!PyUnicode_CheckExact(name))
            return 0;
        int rc = j && buf_put(b, ",", 1) < 0 ? -1 : buf_str(b, name);
        if (rc != 1)
            return rc;
    }
    if (buf_put(b, "],[", 3) < 0)
        return -1;
    PyObject **col = PyMem_Malloc((size_t)n * sizeof(PyObject *));
    if (col == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int rc = 1;
    for (Py_ssize_t j = 0; j < k && rc == 1; j++) {
        Py_ssize_t got = 0;
        for (; got < n; got++) {
            col[got] = PyObject_GetAttr(items[got], PyTuple_GET_ITEM(names, j));
            if (col[got] == NULL)
                break;
        }
        if (got < n)
            rc = -1;
        else if (j && buf_put(b, ",", 1) < 0)
            rc = -1;
        else
            rc = pack_into_at(b, col, n, 1, depth + 1);
        for (Py_ssize_t i = 0; i < got; i++)
            Py_DECREF(col[i]);
    }
    PyMem_Free(col);
    if (rc == 1 && buf_put(b, "]]", 2) < 0)
        rc = -1;
    return rc;
}

/* v as json.dumps(codec._plain(v), separators=(",", ":"), ensure_ascii=False) writes it: a
 * scalar as buf_scalar writes it, a tuple or list as an array, a record named_records knows as
 * an object of its fields in order. 1: written; 0: not this path's (an enum, a dict, a lone
 * surrogate, nesting past MAX_DEPTH); -1: an error. */
static int
json_value(Buf *b, PyObject *v, int depth)
{
    if (depth > MAX_DEPTH)
        return 0;
    int rc = buf_scalar(b, v);
    if (rc != 0)
        return rc;
    if (PyTuple_CheckExact(v) || PyList_CheckExact(v)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
        PyObject **items = PySequence_Fast_ITEMS(v);
        if (buf_put(b, "[", 1) < 0)
            return -1;
        for (Py_ssize_t i = 0; i < n; i++) {
            if (i && buf_put(b, ",", 1) < 0)
                return -1;
            rc = json_value(b, items[i], depth + 1);
            if (rc != 1)
                return rc;
        }
        return buf_put(b, "]", 1) < 0 ? -1 : 1;
    }
    PyObject *names = names_of_records(&v, 1);
    if (names == NULL || !PyTuple_CheckExact(names))
        return 0;
    if (buf_put(b, "{", 1) < 0)
        return -1;
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(names); j++) {
        PyObject *name = PyTuple_GET_ITEM(names, j);
        if (!PyUnicode_CheckExact(name))
            return 0;
        if ((j && buf_put(b, ",", 1) < 0) || (rc = buf_str(b, name)) != 1)
            return rc == 0 ? 0 : -1;
        if (buf_put(b, ":", 1) < 0)
            return -1;
        PyObject *field = PyObject_GetAttr(v, name);
        if (field == NULL)
            return -1;
        rc = json_value(b, field, depth + 1);
        Py_DECREF(field);
        if (rc != 1)
            return rc;
    }
    return buf_put(b, "}", 1) < 0 ? -1 : 1;
}

/* record_json(record) -> str | None: codec.encode's JSON of a record, or None for one this
 * path does not write (codec.encode writes it with json.dumps). A staged record's body:
 * json.dumps of the dicts _plain made was half of storing a span on the live path. */
static PyObject *
record_json(PyObject *self, PyObject *record)
{
    (void)self;
    Buf b = {NULL, 0, 0};
    int rc = json_value(&b, record, 0);
    PyObject *out = NULL;
    if (rc == 1)
        out = PyUnicode_DecodeUTF8(b.data, b.len, NULL);
    else if (rc == 0)
        out = Py_NewRef(Py_None);
    PyMem_Free(b.data);
    return out;
}

/* named_records(table: dict) -> None: the record types pack_records writes, each with its
 * field names in codec._plain's order. */
static PyObject *
named_records(PyObject *self, PyObject *table)
{
    (void)self;
    if (!PyDict_CheckExact(table)) {
        PyErr_SetString(PyExc_TypeError, "named_records() takes a dict");
        return NULL;
    }
    Py_XSETREF(record_names, PyDict_Copy(table));
    return record_names == NULL ? NULL : Py_NewRef(Py_None);
}

/* Where a slotted record keeps one field: the member's offset in its instances, looked up
 * once per column and step of the path (every record of a column has one type, and so has
 * each of its headers). Reading a slot directly instead of through getattr was a third of
 * a column's time. 0: read it by getattr. */
#define PATH_MAX_STEPS 4

typedef struct {
    PyTypeObject *type[PATH_MAX_STEPS];
    Py_ssize_t offset[PATH_MAX_STEPS];
} SlotCache;

static Py_ssize_t
slot_of(PyTypeObject *type, PyObject *name)
{
    PyObject *descr = _PyType_Lookup(type, name); /* borrowed */
    if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type))
        return 0;
    PyMemberDef *m = ((PyMemberDescrObject *)descr)->d_member;
    return m->type == T_OBJECT_EX && !(m->flags & READ_RESTRICTED) ? m->offset : 0;
}

/* One record's value at a path of attribute names (a new reference), or NULL. The steps
 * between are borrowed where a slot holds them: an incref and decref of a record's header a
 * column were a twentieth of an ingest (py-spy), each touching a header the cache no longer
 * held. */
#define PATH_HELD 8

static PyObject *
value_at(PyObject *record, PyObject *names, SlotCache *cache)
{
    Py_ssize_t k = PyTuple_GET_SIZE(names);
    PyObject *held[PATH_HELD]; /* what getattr returned on the way: owned until the end */
    int nheld = 0;
    PyObject *v = record; /* borrowed: alive through the record or a held step */
    for (Py_ssize_t j = 0; j < k; j++) {
        PyObject *next = NULL;
        if (j < PATH_MAX_STEPS) {
            if (cache->type[j] != Py_TYPE(v)) {
                cache->type[j] = Py_TYPE(v);
                cache->offset[j] = slot_of(Py_TYPE(v), PyTuple_GET_ITEM(names, j));
            }
            if (cache->offset[j])
                next = *(PyObject **)((char *)v + cache->offset[j]);
        }
        if (next == NULL) { /* no slot, or one not set: getattr says which */
            if (nheld == PATH_HELD) {
                PyErr_SetString(PyExc_ValueError, "a column's path is too deep");
                next = NULL;
            } else {
                next = PyObject_GetAttr(v, PyTuple_GET_ITEM(names, j));
            }
            if (next == NULL) {
                while (nheld)
                    Py_DECREF(held[--nheld]);
                return NULL;
            }
            held[nheld++] = next;
        }
        v = next;
    }
    Py_INCREF(v);
    while (nheld)
        Py_DECREF(held[--nheld]);
    return v;
}

/* A column's values (a list, stolen) as ``columns`` hands it back: through ``table`` when it
 * is a dict (an enum's members to their values), then packed. A list of the values as they
 * are where the table lacks one (or cannot hash it) or where the column is not ``pack``'s:
 * Python's then. */
static PyObject *
packed_column(PyObject *values, PyObject *table)
{
    Py_ssize_t n = PyList_GET_SIZE(values);
    if (Py_IsFalse(table)) {
        /* a column of shapes is written here; other lists and records, Python makes plain */
        Buf b = {NULL, 0, 0};
        int rc = pack_lists(&b, (PyObject *const *)PySequence_Fast_ITEMS(values), n, 1, 0);
        PyObject *out = NULL;
        if (rc == 1)
            out = PyBytes_FromStringAndSize(b.data, b.len);
        else if (rc == 0)
            out = Py_NewRef(values);
        PyMem_Free(b.data);
        Py_DECREF(values);
        return out;
    }
    if (PyDict_CheckExact(table)) {
        PyObject *plain = PyList_New(n);
        if (plain == NULL) {
            Py_DECREF(values);
            return NULL;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *v = PyDict_GetItemWithError(table, PyList_GET_ITEM(values, i));
            if (v == NULL) {
                Py_DECREF(plain);
                if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_TypeError)) {
                    Py_DECREF(values);
                    return NULL;
                }
                PyErr_Clear();
                return values;
            }
            PyList_SET_ITEM(plain, i, Py_NewRef(v));
        }
        Py_SETREF(values, plain);
    }
    Buf b = {NULL, 0, 0};
    int rc = pack_into(&b, (PyObject *const *)PySequence_Fast_ITEMS(values), n);
    PyObject *out = NULL;
    if (rc == 1)
        out = PyBytes_FromStringAndSize(b.data, b.len);
    else if (rc == 0)
        out = Py_NewRef(values); /* Python's plain() leaves plain values as they are */
    PyMem_Free(b.data);
    Py_DECREF(values);
    return out;
}

/* columns(records, specs): each spec's column of the records, packed (see packed_column).
 * The records are read in one pass, every column's value of a record at once: a pass a
 * column read a block's 8,192 records (and their headers) from memory again for each of
 * its columns, since they do not fit in this machine's 512 KiB of cache a core. */
static PyObject *
columns(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *records, *specs;
    if (!PyArg_ParseTuple(args, "O!O!:columns", &PyList_Type, &records, &PyTuple_Type, &specs))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(records), m = PyTuple_GET_SIZE(specs);
    PyObject *const *items = (PyObject *const *)PySequence_Fast_ITEMS(records);
    for (Py_ssize_t c = 0; c < m; c++) {
        PyObject *spec = PyTuple_GET_ITEM(specs, c);
        if (!PyTuple_CheckExact(spec) || PyTuple_GET_SIZE(spec) != 2 ||
            !PyTuple_CheckExact(PyTuple_GET_ITEM(spec, 0))) {
            PyErr_SetString(PyExc_TypeError, "a column spec is (names: tuple, table)");
            return NULL;
        }
    }
    PyObject *out = PyList_New(m);
    SlotCache *caches = PyMem_Calloc((size_t)(m ? m : 1), sizeof(SlotCache));
    PyObject **names = PyMem_Calloc((size_t)(m ? m : 1), sizeof(PyObject *));
    if (out == NULL || caches == NULL || names == NULL) {
        if (out != NULL) { /* PyList_New's own failure has set its error */
            Py_DECREF(out);
            PyErr_NoMemory();
        }
        PyMem_Free(caches);
        PyMem_Free(names);
        return NULL;
    }
    for (Py_ssize_t c = 0; c < m; c++) {
        names[c] = PyTuple_GET_ITEM(PyTuple_GET_ITEM(specs, c), 0);
        PyObject *values = PyList_New(n);
        if (values == NULL)
            goto fail;
        PyList_SET_ITEM(out, c, values);
    }
    PyObject ***cols = (PyObject ***)PyMem_Malloc((size_t)(m ? m : 1) * sizeof(PyObject **));
    if (cols == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t c = 0; c < m; c++)
        cols[c] = ((PyListObject *)PyList_GET_ITEM(out, c))->ob_item;
    for (Py_ssize_t i = 0; i < n; i++) {
        for (Py_ssize_t c = 0; c < m; c++) {
            PyObject *v = value_at(items[i], names[c], &caches[c]);
            if (v == NULL) {
                PyMem_Free(cols);
                goto fail;
            }
            cols[c][i] = v;
        }
    }
    PyMem_Free(cols);
    for (Py_ssize_t c = 0; c < m; c++) {
        PyObject *values = PyList_GET_ITEM(out, c);
        PyList_SET_ITEM(out, c, NULL);
        PyObject *col = packed_column(values, PyTuple_GET_ITEM(PyTuple_GET_ITEM(specs, c), 1));
        if (col == NULL)
            goto fail;
        PyList_SET_ITEM(out, c, col);
    }
    PyMem_Free(caches);
    PyMem_Free(names);
    return out;
fail:
    PyMem_Free(caches);
    PyMem_Free(names);
    Py_DECREF(out); /* its lists' unset items are NULL, which list_dealloc skips */
    return NULL;
}

/* A column of native 64-bit ints (bytes: the column sink's times and offsets) packed as
 * pack_ints packs the same ints; a list of them where a delta overflows (Python's then). */
static PyObject *
packed_i64(PyObject *col)
{
    Py_ssize_t n = PyBytes_GET_SIZE(col) / (Py_ssize_t)sizeof(long long);
    if (PyBytes_GET_SIZE(col) % (Py_ssize_t)sizeof(long long)) {
        PyErr_SetString(PyExc_ValueError, "a column of 64-bit ints of a ragged length");
        return NULL;
    }
    if (n == 0)
        return PyList_New(0); /* as an empty list is packed */
    long long *v = PyMem_Malloc((size_t)n * sizeof(long long));
    if (v == NULL)
        return PyErr_NoMemory();
    memcpy(v, PyBytes_AS_STRING(col), (size_t)n * sizeof(long long));
    Buf b = {NULL, 0, 0};
    int rc = pack_deltas(&b, v, n);
    PyObject *out = NULL;
    if (rc == 1) {
        out = PyBytes_FromStringAndSize(b.data, b.len);
    } else if (rc == 0) {
        const long long *w = (const long long *)PyBytes_AS_STRING(col);
        out = PyList_New(n);
        for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
            PyObject *x = PyLong_FromLongLong(w[i]);
            if (x == NULL)
                Py_CLEAR(out);
            else
                PyList_SET_ITEM(out, i, x);
        }
    }
    PyMem_Free(v);
    PyMem_Free(b.data);
    return out;
}

/* pack_columns(columns, specs): each of ``columns`` (a sequence of lists: a block's columns
 * as a log's column sink took them, collectors/logs/_hotpath.c) packed by its spec's table,
 * as columns() packs what it reads off records. */
static PyObject *
pack_columns(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *cols, *specs;
    if (!PyArg_ParseTuple(args, "OO!:pack_columns", &cols, &PyTuple_Type, &specs))
        return NULL;
    PyObject *seq = PySequence_Fast(cols, "pack_columns() takes a sequence of lists");
    if (seq == NULL)
        return NULL;
    Py_ssize_t m = PySequence_Fast_GET_SIZE(seq);
    if (m != PyTuple_GET_SIZE(specs)) {
        PyErr_Format(PyExc_ValueError, "%zd columns, %zd specs", m, PyTuple_GET_SIZE(specs));
        Py_DECREF(seq);
        return NULL;
    }
    PyObject *out = PyList_New(m);
    for (Py_ssize_t c = 0; out != NULL && c < m; c++) {
        PyObject *col = PySequence_Fast_GET_ITEM(seq, c), *spec = PyTuple_GET_ITEM(specs, c);
        if (PyBytes_CheckExact(col)) {
            PyObject *packed = packed_i64(col);
            if (packed == NULL) {
                Py_CLEAR(out);
                break;
            }
            PyList_SET_ITEM(out, c, packed);
            continue;
        }
        if (!PyList_CheckExact(col) || !PyTuple_CheckExact(spec) || PyTuple_GET_SIZE(spec) != 2) {
            PyErr_SetString(PyExc_TypeError, "pack_columns() takes lists and (names, table) specs");
            Py_CLEAR(out);
            break;
        }
        /* packed_column takes a reference, reads the list and never changes it */
        PyObject *packed = packed_column(Py_NewRef(col), PyTuple_GET_ITEM(spec, 1));
        if (packed == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, c, packed);
    }
    Py_DECREF(seq);
    return out;
}

/* Whether a record type carries its time and offset in a ``header`` (a log line's
 * LogRecord) or as its own fields (a stub's bare print), and where its slots for them are:
 * looked up once per type. getattr a field was a twentieth of an ingest. */
#define RUN_TYPES 32

typedef struct {
    PyTypeObject *type[RUN_TYPES];
    int header[RUN_TYPES];
    Py_ssize_t slot[RUN_TYPES][3]; /* header, at_ns, offset: 0 reads by getattr */
    int n;
} TypeCache;

static int
type_entry(TypeCache *cache, PyTypeObject *type, PyObject *const names[3])
{
    for (int i = 0; i < cache->n; i++)
        if (cache->type[i] == type)
            return i;
    if (cache->n == RUN_TYPES)
        return -1;
    int i = cache->n++;
    cache->type[i] = type;
    cache->header[i] = PyObject_HasAttr((PyObject *)type, names[0]);
    for (int k = 0; k < 3; k++)
        cache->slot[i][k] = slot_of(type, names[k]);
    return i;
}

/* obj.<names[k]> (a new reference), by its slot where the cache's entry i for obj's type
 * (-1: none) knows it. */
static PyObject *
field(TypeCache *cache, int i, PyObject *obj, PyObject *const names[3], int k)
{
    if (i >= 0 && cache->slot[i][k]) {
        PyObject *v = *(PyObject **)((char *)obj + cache->slot[i][k]);
        if (v != NULL)
            return Py_NewRef(v);
    }
    return PyObject_GetAttr(obj, names[k]);
}

/* An exact int that fits 64 bits, into *out; 0 for anything else. */
static int
as_i64(PyObject *v, long long *out)
{
    if (!PyLong_CheckExact(v))
        return 0;
    int overflow = 0;
    *out = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (*out == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return !overflow;
}

static PyObject *
log_run(PyObject *self, PyObject *events)
{
    (void)self;
    if (!PyList_CheckExact(events)) {
        PyErr_SetString(PyExc_TypeError, "log_run() takes a list");
        return NULL;
    }
    static PyObject *s_header, *s_at_ns, *s_offset;
    if (s_header == NULL) {
        s_header = PyUnicode_InternFromString("header");
        s_at_ns = PyUnicode_InternFromString("at_ns");
        s_offset = PyUnicode_InternFromString("offset");
        if (s_header == NULL || s_at_ns == NULL || s_offset == NULL)
            return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(events);
    if (n == 0)
        Py_RETURN_NONE;
    PyObject *times = PyList_New(n);
    if (times == NULL)
        return NULL;
    TypeCache cache = {.n = 0};
    PyObject *const names[3] = {s_header, s_at_ns, s_offset};
    long long first = 0, last = 0;
    Py_ssize_t same_from = 0; /* where the records at offset ``last`` begin */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *e = PyList_GET_ITEM(events, i);
        PyObject *holder = e;
        int ty = type_entry(&cache, Py_TYPE(e), names);
        int header = ty >= 0 ? cache.header[ty] : PyObject_HasAttr((PyObject *)Py_TYPE(e), s_header);
        if (header) {
            holder = field(&cache, ty, e, names, 0);
            if (holder == NULL)
                goto fail;
            ty = type_entry(&cache, Py_TYPE(holder), names);
        }
        PyObject *at = field(&cache, ty, holder, names, 1);
        PyObject *off = at == NULL ? NULL : field(&cache, ty, holder, names, 2);
        if (header)
            Py_DECREF(holder);
        if (off == NULL) {
            Py_XDECREF(at);
            goto fail;
        }
        long long t, o;
        int ok = as_i64(at, &t) && as_i64(off, &o);
        Py_DECREF(off);
        if (!ok) {
            Py_DECREF(at);
            goto none; /* the keyed path says what is wrong with it */
        }
        PyList_SET_ITEM(times, i, at);
        if (i == 0)
            first = o;
        else if (o < last)
            goto none;
        else if (o == last) {
            for (Py_ssize_t j = same_from; j < i; j++)
                if (Py_TYPE(PyList_GET_ITEM(events, j)) == Py_TYPE(e))
                    goto none; /* the same key twice */
        }
        if (i == 0 || o != last)
            same_from = i;
        last = o;
    }
    return Py_BuildValue("(NLL)", times, first, last);
none:
    Py_DECREF(times);
    Py_RETURN_NONE;
fail:
    Py_DECREF(times);
    if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    return NULL;
}

static PyObject *
group(PyObject *self, PyObject *events)
{
    (void)self;
    if (!PyList_CheckExact(events)) {
        PyErr_SetString(PyExc_TypeError, "group() takes a list");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(events);
    PyObject *types = PyList_New(0), *groups = PyList_New(0);
    Buf b = {NULL, 0, 0};
    if (types == NULL || groups == NULL)
        goto fail;
    PyTypeObject *last = NULL;
    Py_ssize_t at = -1;
    if (buf_put(&b, "[", 1) < 0)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *e = PyList_GET_ITEM(events, i);
        if (Py_TYPE(e) != last) {
            last = Py_TYPE(e);
            Py_ssize_t k = PyList_GET_SIZE(types);
            for (at = 0; at < k; at++)
                if ((PyTypeObject *)PyList_GET_ITEM(types, at) == last)
                    break;
            if (at == k) {
                PyObject *g = PyList_New(0);
                if (g == NULL || PyList_Append(types, (PyObject *)last) < 0 ||
                    PyList_Append(groups, g) < 0) {
                    Py_XDECREF(g);
                    goto fail;
                }
                Py_DECREF(g);
            }
        }
        if (PyList_Append(PyList_GET_ITEM(groups, at), e) < 0)
            goto fail;
        if (buf_sep_int(&b, i ? ',' : 0, (long long)at) < 0)
            goto fail;
    }
    if (buf_put(&b, "]", 1) < 0)
        goto fail;
    PyObject *order;
    if (PyList_GET_SIZE(types) > 1)
        order = PyBytes_FromStringAndSize(b.data, b.len);
    else
        order = PyBytes_FromFormat("%zd", n);
    PyMem_Free(b.data);
    if (order == NULL) {
        Py_DECREF(types);
        Py_DECREF(groups);
        return NULL;
    }
    return Py_BuildValue("(NNN)", types, order, groups);
fail:
    PyMem_Free(b.data);
    Py_XDECREF(types);
    Py_XDECREF(groups);
    return NULL;
}

/* Records of a slotted class from its columns, one per row, each field written straight
 * into its slot: a frozen dataclass's __init__ sets each field through object.__setattr__,
 * a Python call per field, and that was a quarter of decoding a block. The caller vouches
 * that the class's __init__ does nothing else (codec._direct). None when a name is not an
 * object slot of the class or a column is not a list of the first one's length. */
static PyObject *
records(PyObject *self, PyObject *args)
{
    (void)self;
    PyTypeObject *type;
    PyObject *names, *cols;
    if (!PyArg_ParseTuple(args, "O!O!O!:records", &PyType_Type, &type, &PyTuple_Type, &names,
                          &PyList_Type, &cols))
        return NULL;
    Py_ssize_t m = PyTuple_GET_SIZE(names);
    if (m == 0 || m > 64 || PyList_GET_SIZE(cols) != m || type->tp_alloc == NULL)
        Py_RETURN_NONE;
    Py_ssize_t offset[64];
    PyObject **column[64];
    Py_ssize_t n = -1;
    for (Py_ssize_t j = 0; j < m; j++) {
        PyObject *name = PyTuple_GET_ITEM(names, j), *col = PyList_GET_ITEM(cols, j);
        if (!PyUnicode_CheckExact(name) || !PyList_CheckExact(col))
            Py_RETURN_NONE;
        offset[j] = slot_of(type, name);
        if (offset[j] == 0 || (n >= 0 && PyList_GET_SIZE(col) != n))
            Py_RETURN_NONE;
        n = PyList_GET_SIZE(col);
        column[j] = PySequence_Fast_ITEMS(col);
    }
    PyObject *out = PyList_New(n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *obj = type->tp_alloc(type, 0);
        if (obj == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        for (Py_ssize_t j = 0; j < m; j++)
            *(PyObject **)((char *)obj + offset[j]) = Py_NewRef(column[j][i]);
        PyList_SET_ITEM(out, i, obj);
    }
    return out;
}

static PyMethodDef methods[] = {
    {"group", group, METH_O,
     "group(events: list) -> (types, order, groups): each type once in order of first "
     "appearance, the JSON of each event's index into them (of their count when there is "
     "one type), and each type's events in order."},
    {"log_run", log_run, METH_O,
     "log_run(events: list) -> (times, first_offset, last_offset) | None: each log record's "
     "at_ns, when every time and offset is an int of 64 bits, the offsets never go back and "
     "no offset holds two records of one type (no key twice); None otherwise."},
    {"named_records", named_records, METH_O,
     "named_records(table: dict) -> None: each record type that columns() packs (as the dicts "
     "codec._plain makes of it) and its field names in order."},
    {"record_json", record_json, METH_O,
     "record_json(record) -> str | None: json.dumps(codec._plain(record), separators=(',', "
     "':'), ensure_ascii=False), or None for a record this path does not write."},
    {"pack", pack, METH_O,
     "pack(column: list) -> bytes | None: json.dumps(blocks._pack(column)) as UTF-8, or None "
     "for a column this path does not write."},
    {"pack_columns", pack_columns, METH_VARARGS,
     "pack_columns(columns, specs) -> each column packed (bytes), or as it is (a list)"},
    {"columns", columns, METH_VARARGS,
     "columns(records: list, specs: tuple) -> list[bytes | list]: per spec (names, table), "
     "the packed column of the records' values at that attribute path (through table when it "
     "is a dict; False: a column Python makes plain), or the values, for Python to pack."},
    {"records", records, METH_VARARGS,
     "records(cls, names: tuple, columns: list[list]) -> list | None: cls's records, the j-th "
     "column's values written into the slot of names[j], without cls.__init__; None when "
     "some name is not an object slot of cls or the columns differ in length."},
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
