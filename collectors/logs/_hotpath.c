/* The verbose-log parser's hot path, compiled: see collectors/logs/hotpath.py for why.
 *
 * scan() reads a run of lines the way parse_lines' Python hot path does (glog header,
 * JSON-quoted message, a known source file) and builds the same records. It stops at the
 * first line it does not read with certainty and hands it back, untouched, to the Python
 * loop, which reads it as it always did. So every record this file makes is one the Python
 * hot path would have made from the same line, and a line it is unsure of costs only speed.
 * "Unsure" is generous: a number with a sign or an underscore, an escaped request id, a
 * cache miss, a message the Python handler would look at twice: all go back.
 *
 * split_lines() cuts a read into those lines for the readers (collectors.tail.reader).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <limits.h>
#include <string.h>

/* ------------------------------------------------------------------ configuration */

enum {
    K_HDR, K_STATE, K_PREP, K_EXEC, K_REL, K_RESP, K_FRONT, K_CANCEL, K_SREAD, K_SRESP, K_OUT,
    K_ERR, K_N
};
static const int k_fields[K_N] = {5, 4, 6, 4, 3, 5, 4, 4, 1, 5, 3, 2};

typedef struct {
    PyTypeObject *type;
    Py_ssize_t offsets[8];
} Kind;

enum { H_REQUEST = 1, H_PYTHON_BE, H_RESPONSE, H_HTTP, H_GRPC, H_STREAM, H_GRPC_SERVER };

static int configured = 0;
static Kind kinds[K_N];
static PyObject *levels[256];     /* first byte -> LogLevel (borrowed from the config) */
static PyObject *info_level;      /* LogLevel.INFO */
static PyObject *handler_codes;   /* handler function -> H_* */
static PyObject *http_methods;    /* b"2" -> "POST" */
static PyObject *str_cache;       /* parser._str_cache */
static PyObject *transitions;     /* parser._transitions */
static PyObject *ids;             /* parser._ids */
static PyObject *config;          /* everything above, kept alive */
static PyObject *s_empty, *s_http, *s_sagemaker, *s_grpc;

/* ------------------------------------------------------------------ small helpers */

enum { PUNT = -1, NONE = 0, REC = 1, FAIL = -2, BLANK = 2, CONTINUATION = 3 };

#define MAX_TEXT 16384 /* parser.MAX_TEXT: a longer print goes back (it is cut and counted) */
#define ISO_SPREAD_MAX 999999LL /* parser._ISO_SPREAD_MAX */

static Py_ssize_t find(const char *s, Py_ssize_t start, Py_ssize_t end, const char *pat,
                       Py_ssize_t plen) {
    /* memchr for the first byte, memcmp for the rest: glibc's memmem sets up a two-way
     * search at every call, and on a log line's few dozen bytes that setup was most of
     * memmem's time, itself a tenth of a log's ingest. */
    if (start < 0 || end - start < plen) return -1;
    const char *p = s + start, *last = s + end - plen;
    while (p <= last) {
        p = memchr(p, pat[0], (size_t)(last - p + 1));
        if (p == NULL) return -1;
        if (memcmp(p + 1, pat + 1, (size_t)(plen - 1)) == 0) return (Py_ssize_t)(p - s);
        p++;
    }
    return -1;
}
#define FIND(s, a, b, lit) find((s), (a), (b), (lit), (Py_ssize_t)(sizeof(lit) - 1))

static Py_ssize_t rfind(const char *s, Py_ssize_t start, Py_ssize_t end, const char *pat,
                        Py_ssize_t plen) {
    for (Py_ssize_t i = end - plen; i >= start; i--)
        if (s[i] == pat[0] && memcmp(s + i, pat, (size_t)plen) == 0) return i;
    return -1;
}

static int starts(const char *s, Py_ssize_t at, Py_ssize_t end, const char *pat, Py_ssize_t plen) {
    return at >= 0 && end - at >= plen && memcmp(s + at, pat, (size_t)plen) == 0;
}
#define STARTS(s, a, e, lit) starts((s), (a), (e), (lit), (Py_ssize_t)(sizeof(lit) - 1))
#define ENDS(s, a, e, lit) \
    starts((s), (e) - (Py_ssize_t)(sizeof(lit) - 1), (e), (lit), (Py_ssize_t)(sizeof(lit) - 1)) && \
        (e) - (Py_ssize_t)(sizeof(lit) - 1) >= (a)

static int digits(const char *s, Py_ssize_t a, Py_ssize_t b) {
    if (b <= a) return 0;
    for (Py_ssize_t i = a; i < b; i++)
        if (s[i] < '0' || s[i] > '9') return 0;
    return 1;
}

/* A plain run of 1-18 ASCII digits as int; anything Python's int() might read otherwise
 * (sign, spaces, underscores, more digits) is -1, and the caller hands the line back. */
static long long number(const char *s, Py_ssize_t a, Py_ssize_t b) {
    if (b - a > 18 || !digits(s, a, b)) return -1;
    long long v = 0;
    for (Py_ssize_t i = a; i < b; i++) v = v * 10 + (s[i] - '0');
    return v;
}

static int has_byte(const char *s, Py_ssize_t a, Py_ssize_t b, char c) {
    return b > a && memchr(s + a, c, (size_t)(b - a)) != NULL;
}

/* A dict lookup by a slice of the line, remembered for the rest of one scan() call. Building
 * a bytes key, hashing it and probing the dict for every header's clock, source and tokens
 * was a tenth of a log's ingest; most lines repeat the last few keys. An entry holds a
 * reference of its own (the scan may clear the table it came from) and the memo is emptied
 * when a call begins, since Python may change the tables between calls. Keys longer than
 * MEMO_KEY, and misses, go to the dict every time. */
#define MEMO_N 64
#define MEMO_KEY 48

typedef struct {
    Py_ssize_t len;
    char key[MEMO_KEY];
    PyObject *val;
} Memo;

static Memo memo_glog[MEMO_N], memo_src[MEMO_N], memo_str[MEMO_N], memo_trans[MEMO_N];
static int memo_on = 0; /* a scan() owns the memo */

static void memo_clear(Memo *tab) {
    for (int i = 0; i < MEMO_N; i++) Py_CLEAR(tab[i].val);
}

/* The slot of a key, by its length and its first and last 8 bytes (where a clock's second,
 * a source's line number and a name differ): a collision costs a dict lookup, no more. */
static Memo *memo_slot(Memo *tab, const char *s, Py_ssize_t len) {
    unsigned long long a = 0, b = 0;
    if (len >= 8) {
        memcpy(&a, s, 8);
        memcpy(&b, s + len - 8, 8);
    } else {
        for (Py_ssize_t i = 0; i < len; i++) a = a << 8 | (unsigned char)s[i];
    }
    unsigned long long h = a * 0x9E3779B97F4A7C15ULL ^ b * 0xC2B2AE3D27D4EB4FULL ^ (unsigned long long)len;
    return &tab[(h ^ h >> 32 ^ h >> 47) & (MEMO_N - 1)];
}

static void memo_put(Memo *m, const char *s, Py_ssize_t len, PyObject *val) {
    Py_INCREF(val);
    Py_XSETREF(m->val, val);
    m->len = len;
    memcpy(m->key, s, (size_t)len);
}

/* dict[s[:len]] borrowed, or NULL with or without an error set (a miss). */
static PyObject *memo_get(Memo *tab, PyObject *dict, const char *s, Py_ssize_t len) {
    Memo *m = memo_on && len <= MEMO_KEY ? memo_slot(tab, s, len) : NULL;
    if (m && m->val && m->len == len && memcmp(m->key, s, (size_t)len) == 0) return m->val;
    PyObject *key = PyBytes_FromStringAndSize(s, len);
    if (!key) return NULL;
    PyObject *hit = PyDict_GetItemWithError(dict, key);
    Py_DECREF(key);
    if (hit && m) memo_put(m, s, len, hit);
    return hit;
}

/* parser._s: a short token decoded with errors="replace", through the same intern table. */
static PyObject *token(const char *s, Py_ssize_t a, Py_ssize_t b) {
    if (b < a) b = a;
    PyObject *hit = memo_get(memo_str, str_cache, s + a, b - a);
    if (hit) return Py_NewRef(hit);
    if (PyErr_Occurred()) return NULL;
    PyObject *key = PyBytes_FromStringAndSize(s + a, b - a);
    if (!key) return NULL;
    PyObject *text = PyUnicode_DecodeUTF8(s + a, b - a, "replace");
    if (text && PyDict_GET_SIZE(str_cache) < 65536 && PyDict_SetItem(str_cache, key, text) < 0)
        Py_CLEAR(text);
    Py_DECREF(key);
    return text;
}

static PyObject *text(const char *s, Py_ssize_t a, Py_ssize_t b) {
    if (b < a) b = a;
    return PyUnicode_DecodeUTF8(s + a, b - a, "replace");
}

/* parser._ident without its JSON branch (an escaped id goes back to Python). */
static int ident(const char *s, Py_ssize_t a, Py_ssize_t b, PyObject **out) {
    if (has_byte(s, a, b, '\\')) return PUNT;
    if (b - a == 12 && memcmp(s + a, "<id_unknown>", 12) == 0) {
        Py_INCREF(s_empty);
        *out = s_empty;
        return REC;
    }
    *out = text(s, a, b);
    return *out ? REC : FAIL;
}

/* ------------------------------------------------------------------ a read's lines, uncut
 *
 * line_view(data, end, limit): split_lines' lines as a sequence over the read itself. The
 * scan reads them where they lie; only a line handed back to Python is made a bytes object
 * (by indexing). A bundle's ingest made, held and freed a bytes object a line, a tenth of its
 * time once the records were columns. */

typedef struct {
    PyObject_HEAD
    PyObject *data;    /* the read (bytes) */
    Py_ssize_t *start; /* line i is data[start[i]:start[i + 1]] */
    Py_ssize_t n;
} Lines;

static void lines_dealloc(Lines *self) {
    Py_XDECREF(self->data);
    PyMem_Free(self->start);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static Py_ssize_t lines_len(Lines *self) { return self->n; }

static PyObject *lines_item(Lines *self, Py_ssize_t i) {
    if (i < 0 || i >= self->n) {
        PyErr_SetString(PyExc_IndexError, "line index out of range");
        return NULL;
    }
    return PyBytes_FromStringAndSize(PyBytes_AS_STRING(self->data) + self->start[i],
                                     self->start[i + 1] - self->start[i]);
}

static PyObject *lines_subscript(Lines *self, PyObject *key) {
    if (PyIndex_Check(key)) {
        Py_ssize_t i = PyNumber_AsSsize_t(key, PyExc_IndexError);
        if (i == -1 && PyErr_Occurred()) return NULL;
        return lines_item(self, i < 0 ? i + self->n : i);
    }
    if (!PySlice_Check(key)) {
        PyErr_SetString(PyExc_TypeError, "lines are indexed by an int or a slice");
        return NULL;
    }
    Py_ssize_t a, b, step;
    if (PySlice_Unpack(key, &a, &b, &step) < 0) return NULL;
    Py_ssize_t len = PySlice_AdjustIndices(self->n, &a, &b, step);
    PyObject *out = PyList_New(len);
    if (!out) return NULL;
    for (Py_ssize_t j = 0, i = a; j < len; j++, i += step) {
        PyObject *line = lines_item(self, i);
        if (!line) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, j, line);
    }
    return out;
}

static PySequenceMethods lines_as_sequence = {
    .sq_length = (lenfunc)lines_len,
    .sq_item = (ssizeargfunc)lines_item,
};
static PyMappingMethods lines_as_mapping = {
    .mp_length = (lenfunc)lines_len,
    .mp_subscript = (binaryfunc)lines_subscript,
};

static PyTypeObject LinesType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_hotpath.Lines",
    .tp_basicsize = sizeof(Lines),
    .tp_dealloc = (destructor)lines_dealloc,
    .tp_as_sequence = &lines_as_sequence,
    .tp_as_mapping = &lines_as_mapping,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_SEQUENCE,
    .tp_doc = "A read's lines where they lie: indexing one makes its bytes.",
};

/* The (data, end, limit) of split_lines and line_view, and how many lines data[:end] holds:
 * 1, or 0 where one is longer than limit, or -1 with an error set. */
static int count_lines(PyObject *args, const char *format, PyObject **data, Py_ssize_t *end,
                       Py_ssize_t *count) {
    Py_ssize_t limit;
    if (!PyArg_ParseTuple(args, format, &PyBytes_Type, data, end, &limit)) return -1;
    if (*end < 0 || *end > PyBytes_GET_SIZE(*data)) {
        PyErr_SetString(PyExc_ValueError, "end outside the data");
        return -1;
    }
    const char *s = PyBytes_AS_STRING(*data);
    *count = 0;
    for (Py_ssize_t p = 0; p < *end;) {
        const char *nl = memchr(s + p, '\n', (size_t)(*end - p));
        Py_ssize_t stop = nl ? (Py_ssize_t)(nl - s) + 1 : *end;
        if (stop - p > limit) return 0;
        (*count)++;
        p = stop;
    }
    return 1;
}

static PyObject *line_view(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *data;
    Py_ssize_t end, count;
    int r = count_lines(args, "O!nn:line_view", &data, &end, &count);
    if (r <= 0) return r < 0 ? NULL : Py_NewRef(Py_None);
    const char *s = PyBytes_AS_STRING(data);
    Lines *out = PyObject_New(Lines, &LinesType);
    if (!out) return NULL;
    out->data = Py_NewRef(data);
    out->n = count;
    out->start = PyMem_Malloc((size_t)(count + 1) * sizeof(Py_ssize_t));
    if (!out->start) {
        Py_DECREF(out);
        return PyErr_NoMemory();
    }
    Py_ssize_t p = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        out->start[i] = p;
        const char *nl = memchr(s + p, '\n', (size_t)(end - p));
        p = nl ? (Py_ssize_t)(nl - s) + 1 : end;
    }
    out->start[count] = p;
    return (PyObject *)out;
}

/* ------------------------------------------------------------------ the column sink
 *
 * A bundle's ingest stores a log's records as a block's columns (observability/store/
 * blocks.py), never as the records themselves. Scanned into a Sink, a record is written
 * straight into its kind's columns: no record or header object is made, held for a block,
 * read back cold column by column and freed, which were two fifths of an ingest's time
 * (perf). The records the Python loop makes of the lines handed back are appended
 * (Sink.append) and taken apart the same way; a kind the scan never makes (a model's config)
 * is kept as records. take() cuts a block's worth off the front for blocks.encode_columns. */

typedef struct {
    PyObject_HEAD
    PyObject *cols[K_N];  /* a scan kind's column lists (a tuple), NULL until its first record */
    PyObject *others;     /* the other kinds' types, in order of first appearance */
    PyObject *held;       /* per other kind, its records */
    int *codes;           /* each record's kind: k < K_N, or K_N + its index in others */
    Py_ssize_t n, cap;
    int broken;           /* a failed write left its columns uneven: nothing more is taken */
    /* A kind's times and offsets as C numbers, a pair a record, while every one of them is an
     * int of 64 bits (an int object each, made, read back and freed, was a tenth of an
     * ingest); its first that is not moves them all into its column lists for good. */
    long long *ints[K_N];
    Py_ssize_t nints[K_N], capints[K_N];
    int objects[K_N];
    long long hdr_at, hdr_off; /* the scanned header's time and offset (None in its tuple) */
} Sink;

static int as_i64(PyObject *v, long long *out);

static PyTypeObject SinkType;
/* The scan's sink when it is a Sink: make() writes into it. A thread's own: a scan in another
 * thread (its list sink) never writes into this one's. */
static _Thread_local Sink *cur_sink;
static PyObject *hdr_names[5]; /* LogRecord's fields: a header of another type is read by name */

/* A kind's columns: the header's five spread first (blocks._plan), then its own fields. */
static int headed(int k) { return k != K_HDR && k != K_OUT; }
static int offset_column(int k) { return k == K_OUT ? 1 : 4; }

static int sink_code(Sink *self, int code) {
    if (self->n == self->cap) {
        Py_ssize_t cap = self->cap ? self->cap * 2 : 1024;
        int *grown = PyMem_Realloc(self->codes, (size_t)cap * sizeof(int));
        if (!grown) {
            PyErr_NoMemory();
            return -1;
        }
        self->codes = grown;
        self->cap = cap;
    }
    self->codes[self->n++] = code;
    return 0;
}

/* A header's five values (new references), from the scan's tuple or a LogRecord. */
static int header_values(PyObject *h, PyObject **v) {
    if (PyTuple_CheckExact(h) && PyTuple_GET_SIZE(h) == 5) {
        for (int j = 0; j < 5; j++) v[j] = Py_NewRef(PyTuple_GET_ITEM(h, j));
        return 0;
    }
    for (int j = 0; j < 5; j++) {
        PyObject *x = NULL;
        if (Py_TYPE(h) == kinds[K_HDR].type) {
            x = *(PyObject **)((char *)h + kinds[K_HDR].offsets[j]);
            Py_XINCREF(x);
        }
        if (!x) x = PyObject_GetAttr(h, hdr_names[j]);
        if (!x) {
            while (j) Py_DECREF(v[--j]);
            return -1;
        }
        v[j] = x;
    }
    return 0;
}

/* Kind k's times and offsets from its pairs into its column lists, and there from now on. */
static int sink_to_objects(Sink *self, int k) {
    int oc = offset_column(k);
    for (Py_ssize_t i = 0; i < self->nints[k]; i++) {
        PyObject *at = PyLong_FromLongLong(self->ints[k][2 * i]);
        PyObject *off = PyLong_FromLongLong(self->ints[k][2 * i + 1]);
        int bad = !at || !off || PyList_Append(PyTuple_GET_ITEM(self->cols[k], 0), at) < 0 ||
                  PyList_Append(PyTuple_GET_ITEM(self->cols[k], oc), off) < 0;
        Py_XDECREF(at);
        Py_XDECREF(off);
        if (bad) {
            self->broken = 1;
            return -1;
        }
    }
    PyMem_Free(self->ints[k]);
    self->ints[k] = NULL;
    self->nints[k] = self->capints[k] = 0;
    self->objects[k] = 1;
    return 0;
}

static int sink_pair(Sink *self, int k, long long at, long long off) {
    if (self->nints[k] == self->capints[k]) {
        Py_ssize_t cap = self->capints[k] ? self->capints[k] * 2 : 1024;
        long long *grown = PyMem_Realloc(self->ints[k], (size_t)cap * 2 * sizeof(long long));
        if (!grown) {
            PyErr_NoMemory();
            return -1;
        }
        self->ints[k] = grown;
        self->capints[k] = cap;
    }
    self->ints[k][2 * self->nints[k]] = at;
    self->ints[k][2 * self->nints[k] + 1] = off;
    self->nints[k]++;
    return 0;
}

/* Record k of ``fields`` (references stolen) into the sink's columns. */
static int sink_fields(Sink *self, int k, PyObject **fields) {
    PyObject *v[16];
    int m = 0, rc = -1, paired = 0, oc = offset_column(k);
    long long at = 0, off = 0;
    if (self->broken) {
        PyErr_SetString(PyExc_RuntimeError, "a failed write left this sink unusable");
        goto out;
    }
    int scanned = 0; /* a header the scan made: its time and offset are the sink's numbers */
    if (headed(k)) {
        if (header_values(fields[0], v) < 0) goto out;
        m = 5;
        scanned = PyTuple_CheckExact(fields[0]) && v[0] == Py_None;
    } else {
        v[m++] = Py_NewRef(fields[0]);
    }
    for (int i = 1; i < k_fields[k]; i++) v[m++] = Py_NewRef(fields[i]);
    if (scanned) {
        at = self->hdr_at;
        off = self->hdr_off;
    }
    paired = scanned || (!self->objects[k] && as_i64(v[0], &at) && as_i64(v[oc], &off));
    if (paired && self->objects[k]) { /* the kind's lists hold int objects: make them */
        paired = 0;
        Py_SETREF(v[0], PyLong_FromLongLong(at));
        Py_SETREF(v[oc], PyLong_FromLongLong(off));
        if (!v[0] || !v[oc]) goto out;
    } else if (!paired && !self->objects[k]) { /* its first that is not a 64-bit int */
        if (self->cols[k] && sink_to_objects(self, k) < 0) goto out;
        self->objects[k] = 1;
    }
    if (!self->cols[k]) {
        PyObject *cols = PyTuple_New(m);
        if (!cols) goto out;
        for (int c = 0; c < m; c++) {
            PyObject *col = PyList_New(0);
            if (!col) {
                Py_DECREF(cols);
                goto out;
            }
            PyTuple_SET_ITEM(cols, c, col);
        }
        self->cols[k] = cols;
    }
    for (int c = 0; c < m; c++) {
        if (paired && (c == 0 || c == oc)) continue;
        if (PyList_Append(PyTuple_GET_ITEM(self->cols[k], c), v[c]) < 0) {
            self->broken = 1;
            goto out;
        }
    }
    if ((paired && sink_pair(self, k, at, off) < 0) || sink_code(self, k) < 0) {
        self->broken = 1;
        goto out;
    }
    rc = 0;
out:
    while (m) Py_XDECREF(v[--m]);
    for (int i = 0; i < k_fields[k]; i++) Py_DECREF(fields[i]);
    return rc;
}

/* A record of kind k from its fields (references stolen, any NULL fails and frees all). While
 * a Sink is scanned into, a header is a tuple of its values, and any other record goes into
 * the sink's columns (None stands for it). */
static PyObject *make(int k, PyObject **fields) {
    int n = k_fields[k];
    PyObject *obj = NULL;
    for (int i = 0; i < n; i++)
        if (!fields[i]) goto fail;
    if (cur_sink) {
        if (k != K_HDR) return sink_fields(cur_sink, k, fields) < 0 ? NULL : Py_NewRef(Py_None);
        obj = PyTuple_New(n);
        if (!obj) goto fail;
        for (int i = 0; i < n; i++) PyTuple_SET_ITEM(obj, i, fields[i]);
        return obj;
    }
    obj = kinds[k].type->tp_alloc(kinds[k].type, 0);
    if (!obj) goto fail;
    for (int i = 0; i < n; i++) *(PyObject **)((char *)obj + kinds[k].offsets[i]) = fields[i];
    /* Its fields are strings, numbers, an enum member and records like it, so it can be in
     * no reference cycle: untracked, the collector never walks it. Kept tracked, the records
     * of a busy log were half of a scan's time in collections walking them. */
    if (PyObject_IS_GC(obj)) PyObject_GC_UnTrack(obj);
    return obj;
fail:
    for (int i = 0; i < n; i++) Py_XDECREF(fields[i]);
    return NULL;
}

/* A record make() made, into the scan's sink: a list's, or in the Sink's columns already. */
static int put(PyObject *sink, PyObject *rec) {
    return PyList_CheckExact(sink) ? PyList_Append(sink, rec) : 0;
}

static PyObject *make0(int k, PyObject *h) {
    PyObject *f[1] = {h};
    Py_INCREF(h);
    return make(k, f);
}
static PyObject *make3(int k, PyObject *h, PyObject *a, PyObject *b) {
    PyObject *f[3] = {h, a, b};
    Py_INCREF(h);
    return make(k, f);
}
static PyObject *make4(int k, PyObject *h, PyObject *a, PyObject *b, PyObject *c) {
    PyObject *f[4] = {h, a, b, c};
    Py_INCREF(h);
    return make(k, f);
}
static PyObject *make5(int k, PyObject *h, PyObject *a, PyObject *b, PyObject *c, PyObject *d) {
    PyObject *f[5] = {h, a, b, c, d};
    Py_INCREF(h);
    return make(k, f);
}

static PyObject *borrowed(PyObject *o) {
    Py_INCREF(o);
    return o;
}

#define DONE(rec) ((*out = (rec)) != NULL ? REC : FAIL)

/* ------------------------------------------------------------------ the handlers
 * Each mirrors the Python handler of the same name in parser.py: (line, m, e, h), the
 * message is line[m:e]. REC sets *out; NONE is the handler's None; PUNT hands the line back. */

static int request_message(const char *s, Py_ssize_t m, Py_ssize_t j, Py_ssize_t e, PyObject *h,
                           PyObject **out) {
    Py_ssize_t k = j + 2;
    if (STARTS(s, k, e, "Setting state from ")) {
        PyObject *states =
            memo_get(memo_trans, transitions, s + k + 19, e - (k + 19) > 0 ? e - (k + 19) : 0);
        if (!states) return PyErr_Occurred() ? FAIL : PUNT; /* Python fills the table */
        if (!PyTuple_CheckExact(states) || PyTuple_GET_SIZE(states) != 2) return PUNT;
        PyObject *raw = PyBytes_FromStringAndSize(s + m + 13, j - (m + 13));
        if (!raw) return FAIL;
        PyObject *rid = PyDict_GetItemWithError(ids, raw);
        if (rid) {
            Py_INCREF(rid);
        } else if (PyErr_Occurred()) {
            Py_DECREF(raw);
            return FAIL;
        } else { /* as _request_message fills the table: cleared past 4096 ids */
            int r = ident(s, m + 13, j, &rid);
            if (r != REC) {
                Py_DECREF(raw);
                return r;
            }
            if (PyDict_GET_SIZE(ids) > 4096) PyDict_Clear(ids);
            if (PyDict_SetItem(ids, raw, rid) < 0) {
                Py_DECREF(raw);
                Py_DECREF(rid);
                return FAIL;
            }
        }
        Py_DECREF(raw);
        return DONE(make4(K_STATE, h, rid, borrowed(PyTuple_GET_ITEM(states, 0)),
                          borrowed(PyTuple_GET_ITEM(states, 1))));
    }
    if (STARTS(s, k, e, "prepared: ")) {
        Py_ssize_t stop = FIND(s, k, e, "\\n");
        if (stop < 0) stop = e;
        Py_ssize_t p = FIND(s, k, stop, ", model: ");
        if (p < 0) return NONE;
        Py_ssize_t q = FIND(s, p + 9, stop, ",");
        if (q < 0) return NONE;
        Py_ssize_t v = FIND(s, q, stop, "actual version: ");
        if (v < 0) return NONE;
        Py_ssize_t bs = FIND(s, v, stop, "batch size: ");
        if (bs < 0) return NONE;
        Py_ssize_t t = FIND(s, bs, stop, "timeout (us): ");
        if (t < 0) return NONE;
        Py_ssize_t vc = FIND(s, v, stop, ",");
        Py_ssize_t bc = FIND(s, bs, stop, ",");
        if (vc < 0 || bc < 0) return PUNT;
        long long version = number(s, v + 16, vc);
        long long batch = number(s, bs + 12, bc);
        long long timeout = number(s, t + 14, stop);
        if (version < 0 || batch < 0 || timeout < 0) return PUNT;
        PyObject *rid;
        int r = ident(s, m + 13, j, &rid);
        if (r != REC) return r;
        PyObject *f[6] = {borrowed(h), rid, token(s, p + 9, q), PyLong_FromLongLong(version),
                          PyLong_FromLongLong(batch), PyLong_FromLongLong(timeout)};
        return DONE(make(K_PREP, f));
    }
    return NONE;
}

static int h_request(const char *s, Py_ssize_t m, Py_ssize_t e, PyObject *h, PyObject **out) {
    if (!STARTS(s, m, e, "[request id: ")) return NONE;
    Py_ssize_t j = FIND(s, m + 13, e, "] ");
    if (j < 0) return NONE;
    int r = request_message(s, m, j, e, h, out);
    /* None from the first "] " sends Python on to the next ones: its business */
    return r == NONE ? PUNT : r;
}

static int h_python_be(const char *s, Py_ssize_t m, Py_ssize_t e, PyObject *h, PyObject **out) {
    if (STARTS(s, m, e, "model configuration:")) return PUNT;
    if (STARTS(s, m, e, "model ")) {
        Py_ssize_t i = FIND(s, m, e, ", instance ");
        if (i < 0) return NONE;
        Py_ssize_t x = FIND(s, i, e, ", executing ");
        if (x < 0 || !(ENDS(s, m, e, " requests"))) return NONE;
        long long count = number(s, x + 12, e - 9);
        if (count < 0) return PUNT;
        return DONE(make4(K_EXEC, h, token(s, m + 6, i), token(s, i + 11, x),
                          PyLong_FromLongLong(count)));
    }
    if (STARTS(s, m, e, "TRITONBACKEND_ModelInstanceExecute: model instance name ")) {
        Py_ssize_t r = rfind(s, m, e, " released ", 10);
        if (r < 0 || !(ENDS(s, m, e, " requests"))) return NONE;
        long long count = number(s, r + 10, e - 9);
        if (count < 0) return PUNT;
        return DONE(make3(K_REL, h, token(s, m + 56, r), PyLong_FromLongLong(count)));
    }
    return PUNT; /* _h_stub's */
}

static int h_response(const char *s, Py_ssize_t m, Py_ssize_t e, PyObject *h, PyObject **out) {
    if (!STARTS(s, m, e, "add response output: output: ")) return NONE;
    Py_ssize_t t = FIND(s, m, e, ", type: ");
    if (t < 0) return NONE;
    Py_ssize_t sh = FIND(s, t, e, ", shape: [");
    if (sh < 0 || s[e - 1] != ']') return NONE;
    Py_ssize_t a = sh + 10, b = e - 1;
    Py_ssize_t n = 0;
    if (b > a) {
        n = 1;
        for (Py_ssize_t i = a; i < b; i++) n += s[i] == ',';
    }
    PyObject *shape = PyTuple_New(n);
    if (!shape) return FAIL;
    for (Py_ssize_t d = 0, at = a; d < n; d++) {
        Py_ssize_t stop = at;
        while (stop < b && s[stop] != ',') stop++;
        long long v = number(s, at, stop);
        if (v < 0) {
            Py_DECREF(shape);
            return PUNT;
        }
        PyObject *dim = PyLong_FromLongLong(v);
        if (!dim) {
            Py_DECREF(shape);
            return FAIL;
        }
        PyTuple_SET_ITEM(shape, d, dim);
        at = stop + 1;
    }
    return DONE(make5(K_RESP, h, borrowed(s_empty), token(s, m + 29, t), token(s, t + 8, sh), shape));
}

static int method_path(const char *s, Py_ssize_t p, Py_ssize_t e, PyObject *h, PyObject *protocol,
                       PyObject **out) {
    Py_ssize_t sp = FIND(s, p, e, " ");
    if (sp < 0 || !digits(s, p, sp)) return NONE;
    PyObject *num = PyBytes_FromStringAndSize(s + p, sp - p);
    if (!num) return FAIL;
    PyObject *method = PyDict_GetItemWithError(http_methods, num);
    Py_DECREF(num);
    if (method && PyObject_IsTrue(method) == 1)
        Py_INCREF(method);
    else if (PyErr_Occurred())
        return FAIL;
    else
        method = token(s, p, sp);
    return DONE(make4(K_FRONT, h, borrowed(protocol), method, text(s, sp + 1, e)));
}

static int h_http(const char *s, Py_ssize_t m, Py_ssize_t e, PyObject *h, PyObject **out) {
    if (STARTS(s, m, e, "HTTP request: ")) return method_path(s, m + 14, e, h, s_http, out);
    if (STARTS(s, m, e, "SageMaker request: "))
        return method_path(s, m + 19, e, h, s_sagemaker, out);
    return NONE;
}

static int h_grpc(const char *s, Py_ssize_t m, Py_ssize_t e, PyObject *h, PyObject **out) {
    if (STARTS(s, m, e, "New request handler for ")) {
        Py_ssize_t c = FIND(s, m + 24, e, ",");
        if (c < 0) return NONE;
        return DONE(make4(K_FRONT, h, borrowed(s_grpc), token(s, m + 24, c), borrowed(s_empty)));
    }
    if (STARTS(s, m, e, "Cancellation notification received for ")) {
        Py_ssize_t c = FIND(s, m + 39, e, ",");
        if (c < 0) return NONE;
        return DONE(make4(K_CANCEL, h, borrowed(s_grpc), token(s, m + 39, c), text(s, m, e)));
    }
    return NONE;
}

static int h_stream(const char *s, Py_ssize_t m, Py_ssize_t e, PyObject *h, PyObject **out) {
    if (STARTS(s, m, e, "ModelStreamInferHandler::StreamInferComplete, ")) {
        Py_ssize_t st = FIND(s, m, e, " step ");
        Py_ssize_t i = st < 0 ? -1 : FIND(s, st, e, ", callback index ");
        Py_ssize_t f = i < 0 ? -1 : FIND(s, i, e, ", flags ");
        Py_ssize_t n = f < 0 ? -1 : FIND(s, f, e, ", response is nullptr ");
        if (n < 0) return NONE;
        long long index = number(s, i + 17, f);
        long long flags = number(s, f + 8, n);
        if (index < 0 || flags < 0) return PUNT;
        int empty = e - (n + 22) == 1 && s[n + 22] == '1';
        return DONE(make5(K_SRESP, h, PyLong_FromLongLong(index), PyBool_FromLong(flags & 1),
                          PyBool_FromLong(empty), token(s, st + 6, i)));
    }
    if (STARTS(s, m, e, "Process for ModelStreamInferHandler, rpc_ok=1, "))
        return ENDS(s, m, e, " step READ") ? DONE(make0(K_SREAD, h)) : NONE;
    return h_grpc(s, m, e, h, out);
}

static int h_grpc_server(const char *s, Py_ssize_t m, Py_ssize_t e, PyObject *h, PyObject **out) {
    if (STARTS(s, m, e, "Process for ") && (ENDS(s, m, e, " step START"))) {
        Py_ssize_t c = FIND(s, m, e, ", rpc_ok=1, ");
        if (c < 0) return NONE;
        return DONE(make4(K_FRONT, h, borrowed(s_grpc), token(s, m + 12, c), borrowed(s_empty)));
    }
    return NONE;
}

/* ------------------------------------------------------------------ the line loop */

/* Whether ".cc:" and ".h:" occur twice or more in all (two lines glued), in one pass over the
 * line: a pass for each, a find a hit, was a tenth of the scan. */
static int glued(const char *s, Py_ssize_t n) {
    int c = 0;
    const char *end = s + n;
    for (const char *p = memchr(s, '.', (size_t)n); p; p = memchr(p, '.', (size_t)(end - p))) {
        Py_ssize_t left = end - p;
        if ((left >= 4 && p[1] == 'c' && p[2] == 'c' && p[3] == ':') ||
            (left >= 3 && p[1] == 'h' && p[2] == ':'))
            if (++c >= 2) return 1;
        p++;
    }
    return 0;
}

/* An int's value, or 0 where it is past 64 bits or no int. PyLong_AsLongLong converts a
 * nanosecond clock's three digits through a byte array, at every line. */
static int to_ll(PyObject *o, long long *v) {
    int overflow = 0;
    *v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) return 0;
    if (*v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return 1;
}

static int block_after(const char *s, Py_ssize_t n) {
    return s[n - 3] == ':' || (s[n - 4] == ':' && s[n - 3] == ' ');
}

static long long glog_base(PyObject *glog, const char *s) {
    PyObject *base = memo_get(memo_glog, glog, s + 1, 13);
    if (!base) return PyErr_Occurred() ? -2 : -1;
    long long v;
    if (!to_ll(base, &v)) return -1;
    return v < 0 || v > LLONG_MAX - 1000000000LL ? -1 : v;
}

static int is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\x0b' || c == '\x0c';
}

/* Whether a header may be glued inside the line: every header ends in "file:123] ", so a
 * "] " with no ":<digits>" before it (a print's "[model] text") starts none. */
static int header_inside(const char *s, Py_ssize_t n) {
    for (Py_ssize_t at = FIND(s, 0, n, "] "); at >= 0; at = FIND(s, at + 1, n, "] ")) {
        Py_ssize_t d = at;
        while (d > 0 && s[d - 1] >= '0' && s[d - 1] <= '9') d--;
        if (d < at && d > 0 && s[d - 1] == ':') return 1;
    }
    return 0;
}

/* parser._headerless for the plain cases: a line that cannot start a header (no digit first,
 * no glog header's shape) with no header glued inside it: a blank
 * line, a line of a table or config body, or a stub's print (a traceback's lines). */
static int headerless(const char *s, Py_ssize_t n, long long off, PyObject *sink,
                      long long last_at, int *block) {
    if (memchr(s, 0, (size_t)n) || header_inside(s, n)) return PUNT;
    Py_ssize_t e = n;
    while (e > 0 && (s[e - 1] == '\n' || s[e - 1] == '\r')) e--;
    int blank = 1;
    for (Py_ssize_t i = 0; i < e && blank; i++) blank = is_space(s[i]);
    if (blank) {
        if (*block == 1) *block = 0;
        return BLANK;
    }
    /* parser._STUB_STARTS: a traceback's opener ends a block (all four of them) */
    if (STARTS(s, 0, e, "Traceback (most recent call last):") ||
        STARTS(s, 0, e, "Exception in callback") ||
        STARTS(s, 0, e, "Task exception was never retrieved") ||
        STARTS(s, 0, e, "Exception ignored in"))
        *block = 0;
    else if (*block)
        return CONTINUATION;
    if (e > MAX_TEXT) return PUNT;
    PyObject *f[3] = {PyLong_FromLongLong(last_at), PyLong_FromLongLong(off), text(s, 0, e)};
    PyObject *rec = make(K_OUT, f);
    if (!rec) return FAIL;
    int bad = put(sink, rec);
    Py_DECREF(rec);
    return bad ? FAIL : REC;
}

/* One line: REC (a record appended), NONE (an INFO line of no interest, skipped), BLANK and
 * CONTINUATION (a headerless line counted, not kept), PUNT. */
static int header_line(const char *s, Py_ssize_t n, Py_ssize_t sp, Py_ssize_t close,
                       PyObject *level, long long at_ns, long long off, PyObject *sources,
                       PyObject *sink, long long *last_at, int *at_known, int *block);

/* An ISO8601 header's line (``--log-format ISO8601``: "2026-11-26T02:47:30Z I 24749 f.cc:1]"),
 * as parser._emit_header_line reads it: whole seconds, the n-th record of a second placed n
 * microseconds into it (parser._ISO_SPREAD_MAX), the count going on across calls. */
static int iso_line(const char *s, Py_ssize_t n, long long off, PyObject *iso, PyObject *sources,
                    PyObject *sink, long long *last_at, int *at_known, int *block,
                    long long *iso_s, long long *iso_k) {
    if (!iso || n <= 24 || s[19] != 'Z' || s[20] != ' ' || s[22] != ' ') return PUNT;
    PyObject *level = levels[(unsigned char)s[21]];
    if (!level) return PUNT;
    Py_ssize_t p = 23;
    while (p < n && s[p] == ' ') p++; /* a padded pid */
    Py_ssize_t sp = FIND(s, p, n, " ");
    if (sp <= p || !digits(s, p, sp)) return PUNT;
    Py_ssize_t close = FIND(s, sp, n, "] ");
    if (close < 0 || close <= sp) return PUNT;
    PyObject *key = PyBytes_FromStringAndSize(s, 19);
    if (!key) return FAIL;
    PyObject *base_obj = PyDict_GetItemWithError(iso, key); /* parser._Clock.iso */
    Py_DECREF(key);
    if (!base_obj) return PyErr_Occurred() ? FAIL : PUNT;
    long long base;
    if (!to_ll(base_obj, &base)) return PUNT;
    if (base < 0 || base > LLONG_MAX - 1000000000LL) return PUNT;
    if (base != *iso_s) { /* Python's step, which a line handed back repeats unchanged */
        *iso_s = base;
        *iso_k = 0;
    }
    long long at_ns = base + (*iso_k < ISO_SPREAD_MAX ? *iso_k : ISO_SPREAD_MAX) * 1000;
    int r = header_line(s, n, sp, close, level, at_ns, off, sources, sink, last_at, at_known, block);
    if (r == REC) (*iso_k)++;
    return r;
}

static int line_of(const char *s, Py_ssize_t n, long long off, PyObject *glog, PyObject *iso,
                   PyObject *sources, PyObject *sink, long long *last_at, int *at_known,
                   int *block, long long *iso_s, long long *iso_k) {
    if (n == 0 || s[n - 1] != '\n') return PUNT;
    if (glued(s, n)) return PUNT; /* two lines glued */
    PyObject *level = levels[(unsigned char)s[0]];
    if (s[0] >= '0' && s[0] <= '9' && n > 10 && s[10] == 'T')
        /* an ISO8601 header, or its wreck (a "2026-11-26 02:46:49,321" print is not) */
        return iso_line(s, n, off, iso, sources, sink, last_at, at_known, block, iso_s, iso_k);
    if (!level || !(n > 22 && s[5] == ' ' && s[14] == '.')) {
        /* no header can start here (parser._header); one that looks like a torn header
         * ("E1122 03:..") is Python's to judge */
        if (level && n > 5 && digits(s, 1, 5)) return PUNT;
        return *at_known ? headerless(s, n, off, sink, *last_at, block) : PUNT;
    }
    if (n <= 30 || s[21] != ' ') return PUNT;
    Py_ssize_t sp = FIND(s, 22, n, " ");
    if (sp < 0) return PUNT;
    Py_ssize_t close = FIND(s, sp, n, "] ");
    if (close < 0 || close <= sp) return PUNT;
    long long base = glog_base(glog, s);
    if (base == -2) return FAIL;
    if (base < 0) return PUNT;
    if (!digits(s, 15, 21) || !digits(s, 22, sp)) return PUNT;
    return header_line(s, n, sp, close, level, base + number(s, 15, 21) * 1000, off, sources, sink,
                       last_at, at_known, block);
}

/* A header record of the scan (make(K_HDR)); into a Sink, its time and offset stay numbers
 * (the sink's), None in its tuple: no int object made and read back for them. */
static PyObject *header(long long at_ns, PyObject *level, PyObject *src, long long off) {
    PyObject *f[5] = {NULL, borrowed(level), borrowed(PyTuple_GET_ITEM(src, 1)),
                      borrowed(PyTuple_GET_ITEM(src, 2)), NULL};
    if (cur_sink) {
        cur_sink->hdr_at = at_ns;
        cur_sink->hdr_off = off;
        f[0] = Py_NewRef(Py_None);
        f[4] = Py_NewRef(Py_None);
    } else {
        f[0] = PyLong_FromLongLong(at_ns);
        f[4] = PyLong_FromLongLong(off);
    }
    return make(K_HDR, f);
}

/* The rest of a header's line, once its time is known: its source's handler, an ErrorLine of
 * a warning or error no handler reads, or an INFO line of no interest. */
static int header_line(const char *s, Py_ssize_t n, Py_ssize_t sp, Py_ssize_t close,
                       PyObject *level, long long at_ns, long long off, PyObject *sources,
                       PyObject *sink, long long *last_at, int *at_known, int *block) {
    if (s[close + 2] != '"' || s[n - 2] != '"' || !(close + 3 < n - 2)) return PUNT;
    PyObject *src = memo_get(memo_src, sources, s + sp + 1, close - sp - 1);
    if (!src) return PyErr_Occurred() ? FAIL : PUNT;
    if (!PyTuple_CheckExact(src) || PyTuple_GET_SIZE(src) != 4) return PUNT;
    PyObject *handler = PyTuple_GET_ITEM(src, 0);
    PyObject *prefixes = PyTuple_GET_ITEM(src, 3);
    Py_ssize_t m = close + 3, e = n - 2;
    if (handler != Py_None) {
        if (!PyTuple_CheckExact(prefixes)) return PUNT;
        int hit = 0;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(prefixes) && !hit; i++) {
            PyObject *p = PyTuple_GET_ITEM(prefixes, i);
            if (!PyBytes_CheckExact(p)) return PUNT;
            hit = starts(s, m, n, PyBytes_AS_STRING(p), PyBytes_GET_SIZE(p));
        }
        if (hit) {
            PyObject *code_obj = PyDict_GetItemWithError(handler_codes, handler);
            if (!code_obj) return PyErr_Occurred() ? FAIL : PUNT;
            long code = PyLong_AsLong(code_obj);
            PyObject *h = header(at_ns, level, src, off);
            if (!h) return FAIL;
            PyObject *rec = NULL;
            int r;
            switch (code) {
            case H_REQUEST: r = h_request(s, m, e, h, &rec); break;
            case H_PYTHON_BE: r = h_python_be(s, m, e, h, &rec); break;
            case H_RESPONSE: r = h_response(s, m, e, h, &rec); break;
            case H_HTTP: r = h_http(s, m, e, h, &rec); break;
            case H_GRPC: r = h_grpc(s, m, e, h, &rec); break;
            case H_STREAM: r = h_stream(s, m, e, h, &rec); break;
            case H_GRPC_SERVER: r = h_grpc_server(s, m, e, h, &rec); break;
            default: r = PUNT;
            }
            Py_DECREF(h);
            if (r == REC) {
                int bad = put(sink, rec);
                Py_DECREF(rec);
                if (bad) return FAIL;
                *last_at = at_ns;
                *at_known = 1;
                *block = block_after(s, n);
                return REC;
            }
            if (r != NONE) return r;
        }
    }
    if (level != info_level) {
        /* parser._emit's last resort for a warning or error no handler reads: an ErrorLine
         * of the message, unless it may be a stub's health (parser._h_stub) or has JSON
         * escapes or is long enough to be cut (Python's, with its counts) */
        if (FIND(s, m, e, "Stub process '") >= 0 ||
            STARTS(s, m, e, "Failed to initialize Python stub") ||
            STARTS(s, m, e, " Non-graceful termination") ||
            STARTS(s, m, e, "Stub process is unhealthy and it will be restarted") ||
            STARTS(s, m, e, "Stub process is not healthy") || has_byte(s, m, e, '\\') ||
            e - m > MAX_TEXT)
            return PUNT;
        PyObject *g[2] = {header(at_ns, level, src, off), text(s, m, e)};
        PyObject *rec = make(K_ERR, g);
        if (!rec) return FAIL;
        int bad = put(sink, rec);
        Py_DECREF(rec);
        if (bad) return FAIL;
        *last_at = at_ns;
        *at_known = 1;
        *block = block_after(s, n);
        return REC;
    }
    *last_at = at_ns;
    *at_known = 1;
    *block = block_after(s, n);
    return NONE;
}

static PyObject *scan_lines(PyObject *args) {
    PyObject *lines, *sink, *glog, *iso, *sources, *last_at_in, *off_in, *iso_s_in, *iso_k_in;
    Py_ssize_t i;
    int block;
    if (!configured) {
        PyErr_SetString(PyExc_RuntimeError, "_hotpath.configure() first");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OnOOOiO!O!O!OO", &lines, &i, &sink,
                          &off_in, &last_at_in, &block, &PyDict_Type, &glog, &PyDict_Type, &iso,
                          &PyDict_Type, &sources, &iso_s_in, &iso_k_in))
        return NULL;
    int listed = PyList_CheckExact(lines);
    if (!listed && !Py_IS_TYPE(lines, &LinesType)) {
        PyErr_SetString(PyExc_TypeError, "scan: the lines are a list or a line_view");
        return NULL;
    }
    if (!PyList_CheckExact(sink) && !Py_IS_TYPE(sink, &SinkType)) {
        PyErr_SetString(PyExc_TypeError, "scan: the sink is a list or a Sink");
        return NULL;
    }
    /* The ISO8601 second being spread: past 64 bits (a year-9999 header is 2.5e20 ns), every
     * ISO8601 line goes back to Python, which keeps it as it is */
    int over_s = 0, over_k = 0;
    long long iso_s = PyLong_AsLongLongAndOverflow(iso_s_in, &over_s);
    if (iso_s == -1 && PyErr_Occurred()) return NULL;
    long long iso_k = PyLong_AsLongLongAndOverflow(iso_k_in, &over_k);
    if (iso_k == -1 && PyErr_Occurred()) return NULL;
    int iso_ok = !over_s && !over_k;
    if (!iso_ok) iso = NULL;
    Py_ssize_t n_rec = 0, n_info = 0, n_blank = 0, n_cont = 0, start = i;
    long long off = PyLong_AsLongLong(off_in);
    if (off == -1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return NULL;
        PyErr_Clear(); /* an offset past 2**63 (a fuzzer's): Python reads every line */
        return Py_BuildValue("nOOinnnnnOO", i, off_in, last_at_in, block, 0, 0, 0, 0, 0, iso_s_in,
                             iso_k_in);
    }
    /* last_at stays the caller's object (any int: a fuzzed year) until a line here sets it;
     * a headerless line before that needs it as a number, or goes back to Python */
    long long last_at = PyLong_AsLongLong(last_at_in);
    int at_known = 1;
    if (last_at == -1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return NULL;
        PyErr_Clear();
        at_known = 0;
    }
    Lines *view = listed ? NULL : (Lines *)lines;
    for (; i < (listed ? PyList_GET_SIZE(lines) : view->n); i++) {
        const char *s;
        Py_ssize_t n;
        if (listed) {
            PyObject *line = PyList_GET_ITEM(lines, i);
            if (!PyBytes_CheckExact(line)) break;
            s = PyBytes_AS_STRING(line);
            n = PyBytes_GET_SIZE(line);
        } else {
            s = PyBytes_AS_STRING(view->data) + view->start[i];
            n = view->start[i + 1] - view->start[i];
        }
        if (off > LLONG_MAX - n) break;
        int r = line_of(s, n, off, glog, iso, sources, sink, &last_at, &at_known, &block, &iso_s,
                        &iso_k);
        if (r == FAIL) return NULL;
        if (r == PUNT) break;
        n_rec += r == REC;
        n_info += r == NONE;
        n_blank += r == BLANK;
        n_cont += r == CONTINUATION;
        off += n;
    }
    PyObject *s_out = iso_ok ? PyLong_FromLongLong(iso_s) : Py_NewRef(iso_s_in);
    PyObject *k_out = iso_ok ? PyLong_FromLongLong(iso_k) : Py_NewRef(iso_k_in);
    if (!s_out || !k_out) {
        Py_XDECREF(s_out);
        Py_XDECREF(k_out);
        return NULL;
    }
    if (i == start)
        return Py_BuildValue("nOOinnnnnNN", i, off_in, last_at_in, block, 0, 0, 0, 0, 0, s_out,
                             k_out);
    if (!at_known) /* no header here set it: the caller's, as it was */
        return Py_BuildValue("nLOinnnnnNN", i, off, last_at_in, block, i - start, n_rec, n_info,
                             n_blank, n_cont, s_out, k_out);
    return Py_BuildValue("nLLinnnnnNN", i, off, last_at, block, i - start, n_rec, n_info, n_blank,
                         n_cont, s_out, k_out);
}

/* scan_lines() with the memo emptied first. A scan that begins inside another (a finalizer
 * run by an allocation's collection, calling the parser) leaves the memo to the outer one
 * and reads the dicts directly. */
static PyObject *scan_into(PyObject *args) {
    Sink *outer = cur_sink;
    PyObject *sink = PyTuple_GET_SIZE(args) > 2 ? PyTuple_GET_ITEM(args, 2) : NULL;
    cur_sink = sink && Py_IS_TYPE(sink, &SinkType) ? (Sink *)sink : NULL;
    PyObject *out = scan_lines(args);
    cur_sink = outer;
    return out;
}

static PyObject *scan(PyObject *self, PyObject *args) {
    (void)self;
    if (memo_on) {
        memo_on = 0;
        PyObject *out = scan_into(args);
        memo_on = 1;
        return out;
    }
    memo_clear(memo_glog);
    memo_clear(memo_src);
    memo_clear(memo_str);
    memo_clear(memo_trans);
    memo_on = 1;
    PyObject *out = scan_into(args);
    memo_on = 0;
    return out;
}

static int kind_of(int k, PyObject *spec) {
    /* spec: (class, (member descriptor, ...)) in the fields' order */
    PyObject *cls, *members;
    if (!PyArg_ParseTuple(spec, "O!O!", &PyType_Type, &cls, &PyTuple_Type, &members)) return -1;
    if (PyTuple_GET_SIZE(members) != k_fields[k]) {
        PyErr_Format(PyExc_ValueError, "record %d: %d fields expected", k, k_fields[k]);
        return -1;
    }
    kinds[k].type = (PyTypeObject *)cls;
    for (int i = 0; i < k_fields[k]; i++) {
        PyObject *d = PyTuple_GET_ITEM(members, i);
        if (Py_TYPE(d) != &PyMemberDescr_Type) {
            PyErr_SetString(PyExc_TypeError, "a slot's member descriptor expected");
            return -1;
        }
        PyMemberDef *def = ((PyMemberDescrObject *)d)->d_member;
        if (def->type != T_OBJECT_EX || (def->flags & READONLY)) {
            PyErr_SetString(PyExc_TypeError, "a writable object slot expected");
            return -1;
        }
        kinds[k].offsets[i] = def->offset;
        if (k == K_HDR) {
            PyObject *name = PyUnicode_InternFromString(def->name);
            if (!name) return -1;
            Py_XSETREF(hdr_names[i], name);
        }
    }
    return 0;
}

static PyObject *configure(PyObject *self, PyObject *args) {
    PyObject *level_map, *info, *specs, *codes, *methods, *strs, *trans, *id_map;
    if (!PyArg_ParseTuple(args, "O!OO!O!O!O!O!O!", &PyDict_Type, &level_map, &info, &PyTuple_Type,
                          &specs, &PyDict_Type, &codes, &PyDict_Type, &methods, &PyDict_Type, &strs,
                          &PyDict_Type, &trans, &PyDict_Type, &id_map))
        return NULL;
    if (PyTuple_GET_SIZE(specs) != K_N) {
        PyErr_SetString(PyExc_ValueError, "one spec per record kind expected");
        return NULL;
    }
    for (int k = 0; k < K_N; k++)
        if (kind_of(k, PyTuple_GET_ITEM(specs, k)) < 0) return NULL;
    memset(levels, 0, sizeof(levels));
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(level_map, &pos, &key, &value)) {
        long b = PyLong_AsLong(key);
        if (b < 0 || b > 255) {
            PyErr_SetString(PyExc_ValueError, "levels: byte keys expected");
            return NULL;
        }
        levels[b] = value;
    }
    Py_XDECREF(config);
    config = Py_BuildValue("(OOOOOOOOO)", level_map, info, specs, codes, methods, strs, trans, id_map,
                           Py_None);
    if (!config) return NULL;
    info_level = info;
    handler_codes = codes;
    http_methods = methods;
    str_cache = strs;
    transitions = trans;
    ids = id_map;
    configured = 1;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ line splitting */

/* split_lines(data, end, limit): data[:end] as its lines, each ending after a "\n" (a last
 * piece without one as it is), or None if one is longer than limit. bytes.splitlines, which
 * the readers used, tests every byte for two line breaks and was an eighth of a log's
 * ingest; memchr finds the one a log has. */
static PyObject *split_lines(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *data;
    Py_ssize_t end, count;
    int r = count_lines(args, "O!nn:split_lines", &data, &end, &count);
    if (r <= 0) return r < 0 ? NULL : Py_NewRef(Py_None);
    const char *s = PyBytes_AS_STRING(data);
    PyObject *out = PyList_New(count);
    if (!out) return NULL;
    Py_ssize_t p = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        const char *nl = memchr(s + p, '\n', (size_t)(end - p));
        Py_ssize_t stop = nl ? (Py_ssize_t)(nl - s) + 1 : end;
        PyObject *line = PyBytes_FromStringAndSize(s + p, stop - p);
        if (!line) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, line);
        p = stop;
    }
    return out;
}

/* ------------------------------------------------------------------ the Sink's methods */

static PyObject *s_header, *s_at_ns, *s_offset;

static PyObject *sink_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    if (!configured) {
        PyErr_SetString(PyExc_RuntimeError, "_hotpath.configure() first");
        return NULL;
    }
    if ((args && PyTuple_GET_SIZE(args)) || (kw && PyDict_GET_SIZE(kw))) {
        PyErr_SetString(PyExc_TypeError, "Sink() takes no arguments");
        return NULL;
    }
    Sink *self = (Sink *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->others = PyList_New(0);
    self->held = PyList_New(0);
    if (!self->others || !self->held) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static void sink_dealloc(Sink *self) {
    for (int k = 0; k < K_N; k++) {
        Py_CLEAR(self->cols[k]);
        PyMem_Free(self->ints[k]);
    }
    Py_CLEAR(self->others);
    Py_CLEAR(self->held);
    PyMem_Free(self->codes);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static Py_ssize_t sink_len(Sink *self) { return self->n; }

/* append(record): a record the Python loop made, in order with the scanned ones. */
static PyObject *sink_append(Sink *self, PyObject *rec) {
    PyTypeObject *type = Py_TYPE(rec);
    for (int k = 0; k < K_N; k++) {
        if (type != kinds[k].type) continue;
        PyObject *fields[8];
        for (int i = 0; i < k_fields[k]; i++) {
            PyObject *v = *(PyObject **)((char *)rec + kinds[k].offsets[i]);
            if (!v) {
                while (i) Py_DECREF(fields[--i]);
                PyErr_Format(PyExc_AttributeError, "a %s with a field unset", type->tp_name);
                return NULL;
            }
            fields[i] = Py_NewRef(v);
        }
        if (sink_fields(self, k, fields) < 0) return NULL;
        Py_RETURN_NONE;
    }
    if (self->broken) {
        PyErr_SetString(PyExc_RuntimeError, "a failed write left this sink unusable");
        return NULL;
    }
    Py_ssize_t j, m = PyList_GET_SIZE(self->others);
    for (j = 0; j < m; j++)
        if (PyList_GET_ITEM(self->others, j) == (PyObject *)type) break;
    if (j == m) {
        PyObject *records = PyList_New(0);
        if (!records) return NULL;
        int bad = PyList_Append(self->others, (PyObject *)type) < 0 ||
                  PyList_Append(self->held, records) < 0;
        Py_DECREF(records);
        if (bad) {
            self->broken = 1;
            return NULL;
        }
    }
    if (PyList_Append(PyList_GET_ITEM(self->held, j), rec) < 0 || sink_code(self, K_N + (int)j) < 0) {
        self->broken = 1;
        return NULL;
    }
    Py_RETURN_NONE;
}

/* An exact int that fits 64 bits, into *out; 0 for anything else. */
static int as_i64(PyObject *v, long long *out) {
    if (!v || !PyLong_CheckExact(v)) return 0;
    int overflow = 0;
    *out = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (*out == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return !overflow;
}

/* A record of another kind's time and offset: its header's, or its own fields'. */
static int other_span(PyObject *rec, long long *at, long long *off) {
    PyObject *h = PyObject_GetAttr(rec, s_header);
    if (!h) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
        PyErr_Clear();
        h = Py_NewRef(rec);
    }
    PyObject *a = PyObject_GetAttr(h, s_at_ns), *o = a ? PyObject_GetAttr(h, s_offset) : NULL;
    Py_DECREF(h);
    int ok = as_i64(a, at) && as_i64(o, off);
    Py_XDECREF(a);
    Py_XDECREF(o);
    if (PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
        PyErr_Clear();
    }
    return ok;
}

/* take(n) -> (kinds, order, parts, span): the first n records as encode_block groups them:
 * their types in order of first appearance, the JSON of each record's index into them (their
 * count when there is one), and per type a tuple of its columns (a scan kind) or a list of its
 * records. span is (min at_ns, max at_ns, first offset, last offset) when every time and
 * offset is an int of 64 bits, the offsets never go back and no offset holds two records of
 * one type (what _blockpack.log_run checks of a list); None otherwise. */
static PyObject *sink_take(Sink *self, PyObject *arg) {
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (self->broken) {
        PyErr_SetString(PyExc_RuntimeError, "a failed write left this sink unusable");
        return NULL;
    }
    if (n < 0) n = 0;
    if (n > self->n) n = self->n;
    Py_ssize_t codes_n = K_N + PyList_GET_SIZE(self->others);
    Py_ssize_t *count = PyMem_Calloc((size_t)codes_n, sizeof(Py_ssize_t));
    Py_ssize_t *index = PyMem_Calloc((size_t)codes_n, sizeof(Py_ssize_t));
    Py_ssize_t *slot = PyMem_Malloc((size_t)codes_n * sizeof(Py_ssize_t));
    int *present = PyMem_Malloc((size_t)codes_n * sizeof(int));
    PyObject *types = NULL, *order = NULL, *parts = NULL, *span = NULL, *out = NULL;
    char *buf = NULL;
    if (!count || !index || !slot || !present) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t npresent = 0;
    for (Py_ssize_t c = 0; c < codes_n; c++) slot[c] = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        int c = self->codes[i];
        if (slot[c] < 0) {
            slot[c] = npresent;
            present[npresent++] = c;
        }
        count[c]++;
    }
    if (npresent > 1) {
        int width = 2; /* a comma and the index's digits */
        for (Py_ssize_t x = npresent; x >= 10; x /= 10) width++;
        buf = PyMem_Malloc((size_t)n * (size_t)width + 2);
        if (!buf) {
            PyErr_NoMemory();
            goto done;
        }
        Py_ssize_t len = 0;
        buf[len++] = '[';
        for (Py_ssize_t i = 0; i < n; i++) {
            if (i) buf[len++] = ',';
            Py_ssize_t x = slot[self->codes[i]];
            if (x < 10) { /* nearly every index: sprintf's was a fiftieth of an ingest */
                buf[len++] = (char)('0' + x);
                continue;
            }
            len += sprintf(buf + len, "%zd", x);
        }
        buf[len++] = ']';
        order = PyBytes_FromStringAndSize(buf, len);
    } else {
        order = PyBytes_FromFormat("%zd", n);
    }
    if (!order) goto done;
    /* the span, read off the columns before they are cut */
    int ok = 1;
    long long lo = 0, hi = 0, first = 0, last = 0;
    Py_ssize_t same_from = 0;
    for (Py_ssize_t i = 0; i < n && ok; i++) {
        int c = self->codes[i];
        long long at, off;
        Py_ssize_t at_i = index[c]++;
        if (c < K_N && !self->objects[c]) {
            at = self->ints[c][2 * at_i];
            off = self->ints[c][2 * at_i + 1];
        } else if (c < K_N) {
            PyObject *cols = self->cols[c];
            ok = as_i64(PyList_GET_ITEM(PyTuple_GET_ITEM(cols, 0), at_i), &at) &&
                 as_i64(PyList_GET_ITEM(PyTuple_GET_ITEM(cols, offset_column(c)), at_i), &off);
        } else {
            ok = other_span(PyList_GET_ITEM(PyList_GET_ITEM(self->held, c - K_N), at_i), &at, &off);
            if (ok < 0) goto done;
        }
        if (!ok) break;
        if (i == 0) {
            lo = hi = at;
            first = off;
        } else if (off < last) {
            ok = 0;
        } else if (off == last) {
            for (Py_ssize_t j = same_from; j < i && ok; j++) ok = self->codes[j] != c;
        }
        if (i == 0 || off != last) same_from = i;
        last = off;
        if (at < lo) lo = at;
        if (at > hi) hi = at;
    }
    span = ok && n ? Py_BuildValue("(LLLL)", lo, hi, first, last) : Py_NewRef(Py_None);
    if (!span) goto done;
    types = PyList_New(npresent);
    parts = PyList_New(npresent);
    if (!types || !parts) goto done;
    for (Py_ssize_t p = 0; p < npresent; p++) {
        int c = present[p];
        PyObject *part;
        if (c < K_N) {
            PyObject *cols = self->cols[c];
            Py_ssize_t m = PyTuple_GET_SIZE(cols);
            part = PyTuple_New(m);
            if (!part) goto done;
            for (Py_ssize_t j = 0; j < m; j++) {
                PyObject *col;
                if (!self->objects[c] && (j == 0 || j == offset_column(c))) {
                    /* the pairs' times or offsets, as the native 64-bit ints they are */
                    col = PyBytes_FromStringAndSize(NULL, count[c] * (Py_ssize_t)sizeof(long long));
                    if (col) {
                        long long *out = (long long *)PyBytes_AS_STRING(col);
                        for (Py_ssize_t r = 0; r < count[c]; r++)
                            out[r] = self->ints[c][2 * r + (j != 0)];
                    }
                } else {
                    col = PyList_GetSlice(PyTuple_GET_ITEM(cols, j), 0, count[c]);
                }
                if (!col) {
                    Py_DECREF(part);
                    goto done;
                }
                PyTuple_SET_ITEM(part, j, col);
            }
            PyList_SET_ITEM(types, p, Py_NewRef((PyObject *)kinds[c].type));
        } else {
            part = PyList_GetSlice(PyList_GET_ITEM(self->held, c - K_N), 0, count[c]);
            if (!part) goto done;
            PyList_SET_ITEM(types, p, Py_NewRef(PyList_GET_ITEM(self->others, c - K_N)));
        }
        PyList_SET_ITEM(parts, p, part);
    }
    /* all made: now cut them off (a list's front cut by a slice assignment cannot fail) */
    for (Py_ssize_t p = 0; p < npresent; p++) {
        int c = present[p];
        if (c < K_N) {
            PyObject *cols = self->cols[c];
            for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(cols); j++)
                if (self->objects[c] || (j != 0 && j != offset_column(c)))
                    PyList_SetSlice(PyTuple_GET_ITEM(cols, j), 0, count[c], NULL);
            if (!self->objects[c]) {
                memmove(self->ints[c], self->ints[c] + 2 * count[c],
                        (size_t)(self->nints[c] - count[c]) * 2 * sizeof(long long));
                self->nints[c] -= count[c];
            }
        } else {
            PyList_SetSlice(PyList_GET_ITEM(self->held, c - K_N), 0, count[c], NULL);
        }
    }
    memmove(self->codes, self->codes + n, (size_t)(self->n - n) * sizeof(int));
    self->n -= n;
    out = PyTuple_Pack(4, types, order, parts, span);
done:
    Py_XDECREF(types);
    Py_XDECREF(order);
    Py_XDECREF(parts);
    Py_XDECREF(span);
    PyMem_Free(buf);
    PyMem_Free(count);
    PyMem_Free(index);
    PyMem_Free(slot);
    PyMem_Free(present);
    return out;
}

static PyMethodDef sink_methods[] = {
    {"append", (PyCFunction)sink_append, METH_O, "append(record): a record, after those before"},
    {"take", (PyCFunction)sink_take, METH_O,
     "take(n) -> (kinds, order, parts, span): the first n records, cut off"},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods sink_as_sequence = {.sq_length = (lenfunc)sink_len};

static PyTypeObject SinkType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_hotpath.Sink",
    .tp_basicsize = sizeof(Sink),
    .tp_dealloc = (destructor)sink_dealloc,
    .tp_as_sequence = &sink_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A log's records as their kinds' columns, for a store's blocks.",
    .tp_methods = sink_methods,
    .tp_new = sink_new,
};

static PyMethodDef methods_table[] = {
    {"configure", configure, METH_VARARGS, "Hand over the parser's tables and record types."},
    {"scan", scan, METH_VARARGS,
     "scan(lines, i, sink, offset, last_at, block, glog, iso, sources, iso_s, iso_k) -> "
     "(i, offset, last_at, block, lines, records, info, blank, continuation, iso_s, iso_k)"},
    {"line_view", line_view, METH_VARARGS,
     "line_view(data, end, limit) -> split_lines' lines as a sequence over data, or None"},
    {"split_lines", split_lines, METH_VARARGS,
     "split_lines(data, end, limit) -> data[:end]'s lines, or None if one is past limit"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_hotpath", NULL, -1, methods_table, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__hotpath(void) {
    s_empty = PyUnicode_InternFromString("");
    s_http = PyUnicode_InternFromString("http");
    s_sagemaker = PyUnicode_InternFromString("sagemaker");
    s_grpc = PyUnicode_InternFromString("grpc");
    s_header = PyUnicode_InternFromString("header");
    s_at_ns = PyUnicode_InternFromString("at_ns");
    s_offset = PyUnicode_InternFromString("offset");
    if (!s_empty || !s_http || !s_sagemaker || !s_grpc || !s_header || !s_at_ns || !s_offset)
        return NULL;
    if (PyType_Ready(&SinkType) < 0 || PyType_Ready(&LinesType) < 0) return NULL;
    PyObject *mod = PyModule_Create(&module);
    if (!mod) return NULL;
    if (PyModule_AddObjectRef(mod, "Sink", (PyObject *)&SinkType) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
