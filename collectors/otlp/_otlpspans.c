/* An OTLP/JSON request's spans made OtlpSpan records, compiled: what decode.py's _span makes of
 * the spans Triton's exporter and the BLS library send.
 *
 * Why: after json.loads, reading a span's fields, checking its ids and times and making its
 * attributes strings in Python was a quarter of a bundle's ingest (issue 13), and it is what
 * the OTLP receiver does with every request.
 *
 * It takes one scope's list of spans and hands the whole list back (None) to the Python path,
 * the reference, at anything that path would refuse or that this one does not write: a text
 * that is not ASCII, a bytes or kvlist attribute, an integer attribute written other than as
 * Python writes it, an event without a name, a link... tests/collectors/otlp compare the two on
 * every recorded request and on hypothesis' requests. The errors are Python's to word.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define NANOS_MAX 9223372036854775807ULL

static PyObject *S_UNSET, *S_OK, *S_ERROR, *S_EMPTY, *S_TRUE, *S_FALSE;
static PyObject *K_STATUS, *K_CODE, *K_MESSAGE, *K_EVENTS, *K_NAME, *K_TIME, *K_ATTRIBUTES,
    *K_TRACE, *K_SPAN, *K_PARENT, *K_START, *K_END, *K_KEY, *K_VALUE, *K_STRING, *K_BOOL,
    *K_INT, *K_DOUBLE, *K_BYTES, *K_ARRAY, *K_KVLIST, *K_VALUES;

/* d[key], borrowed, NULL when absent (no error: d is an exact dict, key an exact str). */
static PyObject *
get(PyObject *d, PyObject *key)
{
    return PyDict_GetItemWithError(d, key);
}

/* A str Python's _text leaves as it is and this path writes: ASCII. */
static int
ascii(PyObject *s)
{
    return PyUnicode_CheckExact(s) && PyUnicode_IS_ASCII(s);
}

/* _hex_id: ``length`` hex digits, lower-cased; "" where allowed (absent, empty or all zeros).
 * A new reference; NULL with no error: not this path's. */
static PyObject *
hex_id(PyObject *v, Py_ssize_t length, int allow_empty)
{
    if (v == NULL || v == Py_None || (PyUnicode_CheckExact(v) && PyUnicode_GET_LENGTH(v) == 0))
        return allow_empty ? Py_NewRef(S_EMPTY) : NULL;
    if (!ascii(v) || PyUnicode_GET_LENGTH(v) != length)
        return NULL;
    const char *s = (const char *)PyUnicode_DATA(v);
    int upper = 0, zeros = 1;
    for (Py_ssize_t i = 0; i < length; i++) {
        char c = s[i];
        if (c >= 'A' && c <= 'F')
            upper = 1;
        else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return NULL;
        zeros &= c == '0';
    }
    if (zeros)
        return allow_empty ? Py_NewRef(S_EMPTY) : NULL;
    if (!upper)
        return Py_NewRef(v);
    PyObject *out = PyUnicode_New(length, 127);
    if (out == NULL)
        return NULL;
    char *o = (char *)PyUnicode_DATA(out);
    for (Py_ssize_t i = 0; i < length; i++)
        o[i] = (s[i] >= 'A' && s[i] <= 'F') ? (char)(s[i] + 32) : s[i];
    return out;
}

/* _nanos: absent or null 0, an int or a string of ASCII digits within 0..2**63-1.
 * 1: read; 0: not this path's. */
static int
nanos(PyObject *v, long long *out)
{
    if (v == NULL || v == Py_None) {
        *out = 0;
        return 1;
    }
    if (PyLong_CheckExact(v)) {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow || x < 0 || (x == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
        *out = x;
        return 1;
    }
    if (!ascii(v))
        return 0;
    Py_ssize_t n = PyUnicode_GET_LENGTH(v);
    const char *s = (const char *)PyUnicode_DATA(v);
    if (n == 0 || n > 19)
        return 0;
    unsigned long long x = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        x = x * 10 + (unsigned long long)(s[i] - '0');
    }
    if (x > NANOS_MAX)
        return 0;
    *out = (long long)x;
    return 1;
}

/* An integer as a string Python's str(int(value)) gives back unchanged: -?(0|[1-9][0-9]*). */
static int
canonical_int(PyObject *v)
{
    if (!ascii(v))
        return 0;
    Py_ssize_t n = PyUnicode_GET_LENGTH(v), i = 0;
    const char *s = (const char *)PyUnicode_DATA(v);
    if (n && s[0] == '-')
        i = 1;
    if (i == n || n > 4000 || (s[i] == '0' && n - i > 1) || (s[i] == '0' && i))
        return 0;
    for (; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

/* An arrayValue of string values as json.dumps writes the list of them (ASCII with nothing
 * to escape). A new reference; NULL with no error: not this path's. */
static PyObject *
string_array(PyObject *array)
{
    if (!PyDict_CheckExact(array))
        return NULL;
    PyObject *values = get(array, K_VALUES);
    if (values == NULL || values == Py_None)
        return PyErr_Occurred() ? NULL : PyUnicode_FromString("[]");
    if (!PyList_CheckExact(values))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(values), size = 2;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(values, i), *s;
        if (!PyDict_CheckExact(item) || (s = get(item, K_STRING)) == NULL || !ascii(s))
            return NULL;
        const char *c = (const char *)PyUnicode_DATA(s);
        for (Py_ssize_t j = 0; j < PyUnicode_GET_LENGTH(s); j++)
            if (c[j] < 0x20 || c[j] == '"' || c[j] == '\\' || c[j] == 0x7f)
                return NULL;
        size += PyUnicode_GET_LENGTH(s) + 2 + (i > 0);
    }
    PyObject *out = PyUnicode_New(size, 127);
    if (out == NULL)
        return NULL;
    char *o = (char *)PyUnicode_DATA(out);
    *o++ = '[';
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *s = get(PyList_GET_ITEM(values, i), K_STRING);
        if (i)
            *o++ = ',';
        *o++ = '"';
        memcpy(o, PyUnicode_DATA(s), (size_t)PyUnicode_GET_LENGTH(s));
        o += PyUnicode_GET_LENGTH(s);
        *o++ = '"';
    }
    *o = ']';
    return out;
}

/* _string of one AnyValue: the first of its kinds present, in _plain's order, as a string.
 * A new reference; NULL with no error: not this path's. */
static PyObject *
value_string(PyObject *v)
{
    if (v == NULL || v == Py_None)
        return Py_NewRef(S_EMPTY);
    if (!PyDict_CheckExact(v))
        return NULL;
    PyObject *x;
    if ((x = get(v, K_STRING)) != NULL)
        return ascii(x) ? Py_NewRef(x) : NULL;
    if ((x = get(v, K_BOOL)) != NULL)
        return x == Py_True ? Py_NewRef(S_TRUE) : x == Py_False ? Py_NewRef(S_FALSE) : NULL;
    if ((x = get(v, K_INT)) != NULL) {
        if (PyLong_CheckExact(x))
            return PyObject_Str(x);
        return canonical_int(x) ? Py_NewRef(x) : NULL;
    }
    if ((x = get(v, K_DOUBLE)) != NULL) {
        if (PyFloat_CheckExact(x))
            return PyObject_Repr(x);
        return PyLong_CheckExact(x) ? PyObject_Str(x) : NULL;
    }
    if (get(v, K_BYTES) != NULL)
        return NULL;
    if ((x = get(v, K_ARRAY)) != NULL)
        return string_array(x);
    if (get(v, K_KVLIST) != NULL)
        return NULL;
    return Py_NewRef(S_EMPTY);
}

/* A tuple of make(item, ctx) for each item of the list v (absent or null: empty). A new
 * reference; NULL with no error where v is not a list or make gave NULL for an item. */
static PyObject *
tuple_of(PyObject *v, PyObject *(*make)(PyObject *, PyObject *), PyObject *ctx)
{
    if (v == NULL || v == Py_None)
        return PyTuple_New(0);
    if (!PyList_CheckExact(v))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(v);
    PyObject *out = PyTuple_New(n);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        PyObject *made = make(PyList_GET_ITEM(v, i), ctx);
        if (made == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyTuple_SET_ITEM(out, i, made);
    }
    return out;
}

/* One attribute, (key, string), as _string_attributes makes it. */
static PyObject *
attribute(PyObject *kv, PyObject *unused)
{
    (void)unused;
    PyObject *key;
    if (!PyDict_CheckExact(kv) || (key = get(kv, K_KEY)) == NULL || !ascii(key))
        return NULL;
    PyObject *value = value_string(get(kv, K_VALUE));
    PyObject *pair = value == NULL ? NULL : PyTuple_Pack(2, key, value);
    Py_XDECREF(value);
    return pair;
}

/* _string_attributes: a tuple of (key, string). */
static PyObject *
attributes(PyObject *v)
{
    return tuple_of(v, attribute, NULL);
}

/* _status: (name, message). 1: read; 0: not this path's. */
static int
status(PyObject *v, PyObject **name, PyObject **message)
{
    *name = S_UNSET;
    *message = S_EMPTY;
    if (v == NULL || v == Py_None)
        return 1;
    if (!PyDict_CheckExact(v))
        return 0;
    PyObject *code = get(v, K_CODE), *text = get(v, K_MESSAGE);
    static const char *const names[3] = {
        "STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR"};
    PyObject *const kinds[3] = {S_UNSET, S_OK, S_ERROR};
    long c = -1;
    if (code == NULL) {
        c = 0;
    } else if (PyLong_CheckExact(code)) {
        c = PyLong_AsLong(code);
        if (c == -1 && PyErr_Occurred())
            PyErr_Clear(); /* past a long: no status code */
    } else if (PyUnicode_CheckExact(code)) {
        for (int k = 0; k < 3 && c < 0; k++)
            if (PyUnicode_CompareWithASCIIString(code, names[k]) == 0)
                c = k;
    }
    if (c < 0 || c > 2)
        return 0;
    *name = kinds[c];
    if (text != NULL) {
        if (!ascii(text))
            return 0;
        *message = text;
    }
    return 1;
}

/* One event, an event_type record, as _span makes it. */
static PyObject *
event(PyObject *e, PyObject *event_type)
{
    if (!PyDict_CheckExact(e))
        return NULL;
    PyObject *name = get(e, K_NAME);
    if (name == NULL)
        name = S_EMPTY;
    long long at;
    if (!ascii(name) || !nanos(get(e, K_TIME), &at))
        return NULL;
    PyObject *attrs = attributes(get(e, K_ATTRIBUTES));
    if (attrs == NULL)
        return NULL;
    PyObject *made = PyObject_CallFunction(event_type, "OLO", name, at, attrs);
    Py_DECREF(attrs);
    return made;
}

/* One span, or NULL (with no error: not this path's). */
static PyObject *
span(PyObject *s, PyObject *service, PyObject *span_type, PyObject *event_type)
{
    if (!PyDict_CheckExact(s))
        return NULL;
    PyObject *st_name, *st_message;
    if (!status(get(s, K_STATUS), &st_name, &st_message))
        return NULL;
    PyObject *evs = tuple_of(get(s, K_EVENTS), event, event_type);
    if (evs == NULL)
        return NULL;
    PyObject *name = get(s, K_NAME);
    if (name == NULL)
        name = S_EMPTY;
    PyObject *trace = NULL, *span_id = NULL, *parent = NULL, *attrs = NULL, *out = NULL;
    long long start, end;
    if (ascii(name) && (trace = hex_id(get(s, K_TRACE), 32, 0)) != NULL &&
        (span_id = hex_id(get(s, K_SPAN), 16, 0)) != NULL &&
        (parent = hex_id(get(s, K_PARENT), 16, 1)) != NULL && nanos(get(s, K_START), &start) &&
        nanos(get(s, K_END), &end) && (attrs = attributes(get(s, K_ATTRIBUTES))) != NULL)
        out = PyObject_CallFunction(span_type, "OOOOOLLOOOO", trace, span_id, parent, name,
                                    service, start, end, st_name, st_message, attrs, evs);
    Py_XDECREF(trace);
    Py_XDECREF(span_id);
    Py_XDECREF(parent);
    Py_XDECREF(attrs);
    Py_DECREF(evs);
    return out;
}

static PyObject *
spans(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *raw, *service, *span_type, *event_type;
    if (!PyArg_ParseTuple(args, "OUOO:spans", &raw, &service, &span_type, &event_type))
        return NULL;
    if (!PyList_CheckExact(raw))
        Py_RETURN_NONE;
    Py_ssize_t n = PyList_GET_SIZE(raw);
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        PyObject *made = span(PyList_GET_ITEM(raw, i), service, span_type, event_type);
        if (made == NULL) {
            Py_CLEAR(out);
            if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_MemoryError))
                PyErr_Clear(); /* a constructor's refusal: Python's path words it */
            if (PyErr_Occurred())
                return NULL;
            Py_RETURN_NONE;
        }
        PyList_SET_ITEM(out, i, made);
    }
    return out;
}

static PyMethodDef methods[] = {
    {"spans", spans, METH_VARARGS,
     "spans(raw: list, service: str, span_type, event_type) -> list | None: each OTLP/JSON "
     "span of one scope made a span_type record as decode._span makes it, or None for a list "
     "this path does not read (decode._span reads it)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_otlpspans", "OTLP/JSON spans as records, compiled.", -1, methods,
    NULL, NULL, NULL, NULL,
};

#define INTERN(var, text)                                                                      \
    if ((var = PyUnicode_InternFromString(text)) == NULL)                                      \
        return NULL;

PyMODINIT_FUNC
PyInit__otlpspans(void)
{
    INTERN(S_UNSET, "UNSET");
    INTERN(S_OK, "OK");
    INTERN(S_ERROR, "ERROR");
    INTERN(S_EMPTY, "");
    INTERN(S_TRUE, "true");
    INTERN(S_FALSE, "false");
    INTERN(K_STATUS, "status");
    INTERN(K_CODE, "code");
    INTERN(K_MESSAGE, "message");
    INTERN(K_EVENTS, "events");
    INTERN(K_NAME, "name");
    INTERN(K_TIME, "timeUnixNano");
    INTERN(K_ATTRIBUTES, "attributes");
    INTERN(K_TRACE, "traceId");
    INTERN(K_SPAN, "spanId");
    INTERN(K_PARENT, "parentSpanId");
    INTERN(K_START, "startTimeUnixNano");
    INTERN(K_END, "endTimeUnixNano");
    INTERN(K_KEY, "key");
    INTERN(K_VALUE, "value");
    INTERN(K_STRING, "stringValue");
    INTERN(K_BOOL, "boolValue");
    INTERN(K_INT, "intValue");
    INTERN(K_DOUBLE, "doubleValue");
    INTERN(K_BYTES, "bytesValue");
    INTERN(K_ARRAY, "arrayValue");
    INTERN(K_KVLIST, "kvlistValue");
    INTERN(K_VALUES, "values");
    return PyModule_Create(&module);
}
