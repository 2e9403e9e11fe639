/* A Triton trace file's records merged into spans, compiled: what parser.py's whole-file path
 * (json.loads, then _apply a record) makes of the files Triton writes.
 *
 * Why: a trace file holds a record per timestamp, nine a span, and decoding them into dicts
 * and merging those in Python was half of storing a trace file's spans, about a fifth of a
 * bundle's ingest (issue 13). This reads the JSON text once and merges as it reads.
 *
 * It takes only the shape Triton writes, and hands anything else back (None) to the Python
 * path, the reference, which tests/collectors/traces compare it against on every recorded
 * trace file and on hypothesis' files: an array of objects whose keys are among id,
 * model_name, model_version, request_id, parent_id and timestamps, each timestamp an object
 * of name and ns; strings without escapes; integers of 64 bits. A tensor record, an escape, a
 * float, an unknown key, a record that Python would refuse, a file cut short: all handed back.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <string.h>

typedef struct {
    const char *p;
    const char *end;
} Cur;

static void
ws(Cur *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static int
eat(Cur *c, char ch)
{
    ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 1;
    }
    return 0;
}

/* A string with no escape and no control character: its bytes, between the quotes. */
static int
text_at(Cur *c, const char **s, Py_ssize_t *n)
{
    ws(c);
    if (c->p >= c->end || *c->p != '"')
        return 0;
    const char *q = c->p + 1;
    while (q < c->end && *q != '"') {
        if (*q == '\\' || (unsigned char)*q < 0x20)
            return 0;
        q++;
    }
    if (q >= c->end)
        return 0;
    *s = c->p + 1;
    *n = q - *s;
    c->p = q + 1;
    return 1;
}

/* A JSON integer, -?(0|[1-9][0-9]*), not a float's start, within 64 bits. */
static int
int_at(Cur *c, long long *out)
{
    ws(c);
    const char *q = c->p;
    int neg = q < c->end && *q == '-';
    q += neg;
    if (q >= c->end || *q < '0' || *q > '9')
        return 0;
    if (*q == '0' && q + 1 < c->end && q[1] >= '0' && q[1] <= '9')
        return 0;
    unsigned long long v = 0;
    int digits = 0;
    while (q < c->end && *q >= '0' && *q <= '9') {
        if (++digits > 19)
            return 0;
        v = v * 10 + (unsigned long long)(*q - '0');
        q++;
    }
    if (q < c->end && (*q == '.' || *q == 'e' || *q == 'E'))
        return 0;
    if (v > (neg ? 9223372036854775808ULL : 9223372036854775807ULL))
        return 0;
    *out = !neg ? (long long)v : v == 9223372036854775808ULL ? LLONG_MIN : -(long long)v;
    c->p = q;
    return 1;
}

static int
is_null(Cur *c)
{
    ws(c);
    if (c->end - c->p >= 4 && memcmp(c->p, "null", 4) == 0) {
        c->p += 4;
        return 1;
    }
    return 0;
}

static int
key_is(const char *s, Py_ssize_t n, const char *key)
{
    return (size_t)n == strlen(key) && memcmp(s, key, (size_t)n) == 0;
}

/* A string value, or an int one written as Python's str() writes it (model_version,
 * request_id). A new reference; NULL with no error set: not this path's. */
static PyObject *
str_or_int(Cur *c)
{
    const char *s;
    Py_ssize_t n;
    if (text_at(c, &s, &n))
        return PyUnicode_DecodeUTF8(s, n, NULL);
    long long v;
    if (int_at(c, &v))
        return PyUnicode_FromFormat("%lld", v);
    return NULL;
}

/* The stages seen in this file by the name's bytes: a file names a dozen, a hundred thousand
 * times. stage(name) is parser._stage_of: the naming stays Python's. */
#define STAGES 32

typedef struct {
    const char *name[STAGES];
    Py_ssize_t len[STAGES];
    PyObject *stage[STAGES];
    int n;
} Stages;

static PyObject *
stage_of(Stages *st, PyObject *stage, const char *s, Py_ssize_t n)
{
    for (int i = 0; i < st->n; i++)
        if (st->len[i] == n && memcmp(st->name[i], s, (size_t)n) == 0)
            return Py_NewRef(st->stage[i]);
    PyObject *name = PyUnicode_DecodeUTF8(s, n, NULL);
    if (name == NULL)
        return NULL;
    PyObject *out = PyObject_CallOneArg(stage, name);
    Py_DECREF(name);
    if (out != NULL && !PyUnicode_CheckExact(out)) {
        PyErr_SetString(PyExc_TypeError, "stage() must return a str");
        Py_CLEAR(out);
    }
    if (out != NULL && st->n < STAGES) {
        st->name[st->n] = s; /* the text outlives the call */
        st->len[st->n] = n;
        st->stage[st->n++] = Py_NewRef(out);
    }
    return out;
}

/* One span being merged: its header's values (owned; NULL: not set) and its stamps. */
typedef struct {
    long long id;
    PyObject *parent, *model, *version, *request_id, *stamps;
} Span;

typedef struct {
    Span *span;
    Py_ssize_t n, cap;
    PyObject *index; /* id -> position in span */
} Spans;

static void
spans_free(Spans *sp)
{
    for (Py_ssize_t i = 0; i < sp->n; i++) {
        Span *s = &sp->span[i];
        Py_XDECREF(s->parent);
        Py_XDECREF(s->model);
        Py_XDECREF(s->version);
        Py_XDECREF(s->request_id);
        Py_XDECREF(s->stamps);
    }
    PyMem_Free(sp->span);
    Py_XDECREF(sp->index);
}

/* The span of ``id``, begun if new (in order of first appearance, as the builders' dict). */
static Span *
span_of(Spans *sp, long long id, Py_ssize_t *last)
{
    if (*last >= 0 && sp->span[*last].id == id)
        return &sp->span[*last];
    PyObject *key = PyLong_FromLongLong(id);
    if (key == NULL)
        return NULL;
    PyObject *at = PyDict_GetItemWithError(sp->index, key);
    if (at != NULL) {
        Py_DECREF(key);
        *last = PyLong_AsSsize_t(at);
        return &sp->span[*last];
    }
    if (PyErr_Occurred()) {
        Py_DECREF(key);
        return NULL;
    }
    if (sp->n == sp->cap) {
        Py_ssize_t cap = sp->cap ? sp->cap * 2 : 16;
        Span *grown = PyMem_Realloc(sp->span, (size_t)cap * sizeof(Span));
        if (grown == NULL) {
            Py_DECREF(key);
            PyErr_NoMemory();
            return NULL;
        }
        sp->span = grown;
        sp->cap = cap;
    }
    PyObject *pos = PyLong_FromSsize_t(sp->n);
    PyObject *stamps = PyList_New(0);
    int rc = pos == NULL || stamps == NULL ? -1 : PyDict_SetItem(sp->index, key, pos);
    Py_DECREF(key);
    Py_XDECREF(pos);
    if (rc < 0) {
        Py_XDECREF(stamps);
        return NULL;
    }
    Span *s = &sp->span[sp->n];
    memset(s, 0, sizeof(Span));
    s->id = id;
    s->stamps = stamps;
    *last = sp->n++;
    return s;
}

/* One record's values, before it is merged: owned references, NULL where absent. */
typedef struct {
    int has_id, has_header, has_stamps;
    long long id;
    PyObject *model, *version, *request_id, *parent, *stamps;
} Record;

static void
record_clear(Record *r)
{
    Py_CLEAR(r->model);
    Py_CLEAR(r->version);
    Py_CLEAR(r->request_id);
    Py_CLEAR(r->parent);
    Py_CLEAR(r->stamps);
    memset(r, 0, sizeof(Record));
}

/* The timestamps' array into a new list of (stage, ns), the zeros left out (a stage never
 * reached). 1: read; 0: not this path's; -1: an error. */
static int
stamps_at(Cur *c, Stages *st, PyObject *stage, PyObject **out)
{
    if (!eat(c, '['))
        return 0;
    PyObject *list = PyList_New(0);
    if (list == NULL)
        return -1;
    if (eat(c, ']')) {
        *out = list;
        return 1;
    }
    do {
        if (!eat(c, '{'))
            goto not_ours;
        const char *name = NULL;
        Py_ssize_t name_n = 0;
        long long ns = 0;
        int has_ns = 0;
        do {
            const char *k;
            Py_ssize_t kn;
            if (!text_at(c, &k, &kn) || !eat(c, ':'))
                goto not_ours;
            if (key_is(k, kn, "name")) {
                if (!text_at(c, &name, &name_n))
                    goto not_ours;
            } else if (key_is(k, kn, "ns")) {
                if (!int_at(c, &ns))
                    goto not_ours;
                has_ns = 1;
            } else {
                goto not_ours;
            }
        } while (eat(c, ','));
        if (!eat(c, '}') || name == NULL || !has_ns)
            goto not_ours;
        if (ns == 0)
            continue;
        PyObject *st_name = stage_of(st, stage, name, name_n);
        PyObject *v = st_name == NULL ? NULL : PyLong_FromLongLong(ns);
        PyObject *pair = v == NULL ? NULL : PyTuple_Pack(2, st_name, v);
        Py_XDECREF(st_name);
        Py_XDECREF(v);
        if (pair == NULL || PyList_Append(list, pair) < 0) {
            Py_XDECREF(pair);
            Py_DECREF(list);
            return -1;
        }
        Py_DECREF(pair);
    } while (eat(c, ','));
    if (!eat(c, ']'))
        goto not_ours;
    *out = list;
    return 1;
not_ours:
    Py_DECREF(list);
    return 0;
}

/* One record into r. 1: read; 0: not this path's; -1: an error. */
static int
record_at(Cur *c, Stages *st, PyObject *stage, Record *r)
{
    if (!eat(c, '{'))
        return 0;
    do {
        const char *k;
        Py_ssize_t kn;
        if (!text_at(c, &k, &kn) || !eat(c, ':'))
            return 0;
        PyObject **slot = NULL;
        if (key_is(k, kn, "id")) {
            if (!int_at(c, &r->id))
                return 0;
            r->has_id = 1;
            continue;
        } else if (key_is(k, kn, "timestamps")) {
            Py_CLEAR(r->stamps);
            int rc = stamps_at(c, st, stage, &r->stamps);
            if (rc != 1)
                return rc;
            r->has_stamps = 1;
            continue;
        } else if (key_is(k, kn, "parent_id")) {
            Py_CLEAR(r->parent); /* null: None */
            long long v;
            if (!is_null(c)) {
                if (!int_at(c, &v))
                    return 0;
                if ((r->parent = PyLong_FromLongLong(v)) == NULL)
                    return -1;
            }
            continue;
        } else if (key_is(k, kn, "model_name")) {
            const char *s;
            Py_ssize_t n;
            if (!text_at(c, &s, &n))
                return 0;
            Py_XSETREF(r->model, PyUnicode_DecodeUTF8(s, n, NULL));
            if (r->model == NULL)
                return PyErr_ExceptionMatches(PyExc_UnicodeDecodeError) ? (PyErr_Clear(), 0) : -1;
            r->has_header = 1;
            continue;
        } else if (key_is(k, kn, "model_version")) {
            slot = &r->version;
        } else if (key_is(k, kn, "request_id")) {
            slot = &r->request_id;
        } else {
            return 0; /* a tensor record, or a key Triton 2.51 does not write */
        }
        Py_XSETREF(*slot, str_or_int(c));
        if (*slot == NULL) {
            if (!PyErr_Occurred())
                return 0;
            return PyErr_ExceptionMatches(PyExc_UnicodeDecodeError) ? (PyErr_Clear(), 0) : -1;
        }
    } while (eat(c, ','));
    if (!eat(c, '}') || !r->has_id || (!r->has_header && !r->has_stamps))
        return 0;
    return 1;
}

/* r merged into its span, as parser._apply merges a record into its builder. */
static int
merge(Spans *sp, Py_ssize_t *last, Record *r, PyObject *empty)
{
    Span *s = span_of(sp, r->id, last);
    if (s == NULL)
        return -1;
    if (r->has_header) {
        Py_XSETREF(s->model, Py_NewRef(r->model));
        Py_XSETREF(s->version, Py_NewRef(r->version ? r->version : empty));
        Py_XSETREF(s->request_id, Py_NewRef(r->request_id ? r->request_id : empty));
        Py_XSETREF(s->parent, r->parent ? Py_NewRef(r->parent) : NULL);
    }
    if (r->has_stamps && PyList_GET_SIZE(r->stamps)) {
        Py_ssize_t at = PyList_GET_SIZE(s->stamps);
        if (PyList_SetSlice(s->stamps, at, at, r->stamps) < 0)
            return -1;
    }
    return 0;
}

static PyObject *
rows(Spans *sp, PyObject *empty)
{
    PyObject *out = PyList_New(sp->n);
    for (Py_ssize_t i = 0; out != NULL && i < sp->n; i++) {
        Span *s = &sp->span[i];
        PyObject *id = PyLong_FromLongLong(s->id);
        PyObject *stamps = id == NULL ? NULL : PyList_AsTuple(s->stamps);
        PyObject *row = stamps == NULL ? NULL : PyTuple_New(6);
        if (row == NULL) {
            Py_XDECREF(id);
            Py_XDECREF(stamps);
            Py_CLEAR(out);
            break;
        }
        PyObject *values[6] = {
            id,
            Py_NewRef(s->parent ? s->parent : Py_None),
            Py_NewRef(s->model ? s->model : empty),
            Py_NewRef(s->version ? s->version : empty),
            Py_NewRef(s->request_id ? s->request_id : empty),
            stamps,
        };
        for (int k = 0; k < 6; k++)
            PyTuple_SET_ITEM(row, k, values[k]);
        PyList_SET_ITEM(out, i, row);
    }
    return out;
}

static PyObject *
scan(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *text, *stage;
    if (!PyArg_ParseTuple(args, "UO:scan", &text, &stage))
        return NULL;
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(text, &n);
    if (u == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError))
            return NULL;
        PyErr_Clear(); /* a lone surrogate: Python's path replaces it */
        Py_RETURN_NONE;
    }
    Cur c = {u, u + n};
    Stages st = {{0}, {0}, {0}, 0};
    Spans sp = {NULL, 0, 0, PyDict_New()};
    PyObject *empty = PyUnicode_FromStringAndSize("", 0);
    PyObject *out = NULL;
    int rc = sp.index == NULL || empty == NULL ? -1 : 0;
    Record r;
    memset(&r, 0, sizeof(Record));
    Py_ssize_t last = -1;
    if (rc == 0 && !eat(&c, '['))
        rc = 1;
    if (rc == 0 && !eat(&c, ']')) {
        do {
            int got = record_at(&c, &st, stage, &r);
            if (got != 1) {
                rc = got == 0 ? 1 : -1;
                break;
            }
            if (merge(&sp, &last, &r, empty) < 0) {
                rc = -1;
                break;
            }
            record_clear(&r);
        } while (eat(&c, ','));
        if (rc == 0 && !eat(&c, ']'))
            rc = 1;
    }
    if (rc == 0) {
        ws(&c);
        if (c.p != c.end)
            rc = 1; /* text after the array */
    }
    if (rc == 0)
        out = rows(&sp, empty);
    else if (rc == 1)
        out = Py_NewRef(Py_None);
    record_clear(&r);
    spans_free(&sp);
    for (int i = 0; i < st.n; i++)
        Py_DECREF(st.stage[i]);
    Py_XDECREF(empty);
    return out;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(text: str, stage) -> list[tuple] | None: each span of a trace file as (trace_id, "
     "parent_id, model, version, request_id, timestamps), in order of first appearance, each "
     "timestamp's name made a stage by stage(name); None for a file this path does not read "
     "(Python's path reads it)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_tracescan", "A Triton trace file's spans, compiled.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__tracescan(void)
{
    return PyModule_Create(&module);
}
