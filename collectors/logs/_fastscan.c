/*
 * _fastscan: the verbose-log fields the detectors need, scanned in C into columns.
 *
 * Why this exists: the pure-Python parser (collectors/logs/parser.py) pays ~0.75 us per
 * record just to build a frozen dataclass, so it cannot reach 1M lines/s. This module
 * reads the same bytes and emits only five record kinds (request state change, instance
 * executing / released, response output, request prepared) as lists of Python
 * primitives, one list per column.
 *
 * Contract: for those kinds the output equals, record for record, what
 *     parse_lines(<data split after each b"\n">, final=False)
 * yields. Every rule below is a transcription of a rule of parser.py, named after the
 * Python function it mirrors; where the Python code relies on slicing or str.find
 * semantics (clamped indices, find(..., -1) meaning "to the end") the C code spells the
 * same semantics out. Python's int() on bytes (whitespace, '_', signs, huge values) and
 * the JSON-escaped request id are delegated back to Python on their rare slow paths, so
 * they agree by construction.
 *
 * Safety: every read is bounds-checked against the length of the piece being read; the
 * input buffer is never written. Bad input never raises: a piece that cannot be read is
 * dropped (the Python parser counts it as skipped).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef unsigned char u8;
typedef Py_ssize_t ssz;

/* ------------------------------------------------------------------ byte helpers */

static inline int is_digit(u8 c) { return c >= '0' && c <= '9'; }
static inline int is_level(u8 c) { return c == 'I' || c == 'W' || c == 'E' || c == 'F'; }
/* Python's bytes whitespace (Py_ISSPACE; also re's \s for bytes patterns). */
static inline int is_space(u8 c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* bytes.find(needle, start, end) for start >= 0: the needle must lie inside
 * [start, min(end, n)). Returns -1 when absent. */
static ssz find(const u8 *L, ssz n, const char *needle, ssz k, ssz start, ssz end) {
    if (end > n) end = n;
    if (start < 0 || end - start < k) return -1;
    const u8 first = (u8)needle[0];
    ssz last = end - k; /* last admissible start position */
    ssz i = start;
    while (i <= last) {
        const u8 *hit = memchr(L + i, first, (size_t)(last - i + 1));
        if (hit == NULL) return -1;
        i = hit - L;
        if (memcmp(L + i, needle, (size_t)k) == 0) return i;
        i++;
    }
    return -1;
}

/* bytes.rfind(needle, start, end) for start >= 0. */
static ssz rfind(const u8 *L, ssz n, const char *needle, ssz k, ssz start, ssz end) {
    if (end > n) end = n;
    if (start < 0 || end - start < k) return -1;
    for (ssz i = end - k; i >= start; i--)
        if (L[i] == (u8)needle[0] && memcmp(L + i, needle, (size_t)k) == 0) return i;
    return -1;
}

/* line.startswith(prefix, pos): not limited by the message end, as in Python. */
static inline int starts(const u8 *L, ssz n, ssz pos, const char *p, ssz k) {
    return pos >= 0 && pos <= n - k && memcmp(L + pos, p, (size_t)k) == 0;
}

/* line.endswith(suffix, a, b) for 0 <= a, b <= n. */
static inline int ends(const u8 *L, ssz a, ssz b, const char *s, ssz k) {
    return b - a >= k && memcmp(L + b - k, s, (size_t)k) == 0;
}

/* line[a:b].isdigit() with Python slice clamping (a, b >= 0 here). */
static int isdigits(const u8 *L, ssz n, ssz a, ssz b) {
    if (b > n) b = n;
    if (a >= b) return 0;
    for (ssz i = a; i < b; i++)
        if (!is_digit(L[i])) return 0;
    return 1;
}

/* Clamp a slice [*a, *b) of a line of length n the way Python does for a, b >= 0. */
static inline void clamp(ssz n, ssz *a, ssz *b) {
    if (*b > n) *b = n;
    if (*a > n) *a = n;
    if (*a > *b) *a = *b;
}

/* --------------------------------------------------------------- calendar (_Clock) */

static int is_leap(int64_t y) { return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0); }

/* calendar.monthrange(y, mon)[1]; mon in 1..12 */
static int month_days(int64_t y, int mon) {
    static const int d[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return d[mon - 1] + (mon == 2 && is_leap(y));
}

/* parser._valid */
static int valid(int64_t y, int mon, int day, int hh, int mm, int ss) {
    return mon >= 1 && mon <= 12 && day >= 1 && day <= month_days(y, mon) && hh < 24 &&
           mm < 60 && ss < 61;
}

/* calendar.timegm for 1 <= y <= 9999 (the caller checks: datetime.date raises outside).
 * Days from civil date, proleptic Gregorian (H. Hinnant's algorithm). */
static int64_t timegm_s(int64_t y, int mon, int day, int hh, int mm, int ss) {
    y -= mon <= 2;
    const int64_t era = y / 400; /* y >= 0 here */
    const int64_t yoe = y - era * 400;
    const int64_t doy = (153 * (mon + (mon > 2 ? -3 : 9)) + 2) / 5 + day - 1;
    const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    const int64_t days = era * 146097 + doe - 719468;
    return ((days * 24 + hh) * 60 + mm) * 60 + ss;
}

static inline int d2(const u8 *p) { return (p[0] - '0') * 10 + (p[1] - '0'); }

/* parser._Clock.glog keeps a dict of seen "MMDD HH:MM:SS" keys. Whether a key hits that
 * dict matters beyond speed: only a miss runs glog_base, which updates last_month and
 * bumps the year on a December -> January step. So the set of cached keys is emulated
 * exactly: the same insertions, a clear on a year bump and a clear when it holds more
 * than 100000 keys. Clearing is O(1) through a generation counter. */
typedef struct {
    uint32_t gen;
    u8 key[13];
    int64_t sec;
} GEnt;

typedef struct {
    int64_t year;
    int last_month;
    int64_t utc_offset_s;
    GEnt *tab;
    size_t cap, count;
    uint32_t gen;
    int memo_ok; /* the last hit, which is known to be in the cache */
    u8 memo_key[13];
    int64_t memo_sec;
    int iso_ok; /* ISO bases are pure (no year state): a one-entry memo suffices */
    u8 iso_key[19];
    int64_t iso_sec;
} Clock;

static uint64_t hash13(const u8 *k) {
    uint64_t h = 1469598103934665603ULL;
    for (int i = 0; i < 13; i++) h = (h ^ k[i]) * 1099511628211ULL;
    return h;
}

static void gclear(Clock *c) {
    c->gen++;
    c->count = 0;
    c->memo_ok = 0;
}

static GEnt *gslot(GEnt *tab, size_t cap, uint32_t gen, const u8 *k, int *found) {
    size_t i = (size_t)hash13(k) & (cap - 1);
    for (;;) { /* load factor <= 1/2, so an empty slot always exists */
        GEnt *e = &tab[i];
        if (e->gen != gen) { *found = 0; return e; }
        if (memcmp(e->key, k, 13) == 0) { *found = 1; return e; }
        i = (i + 1) & (cap - 1);
    }
}

/* Insert; returns -1 on memory error (a Python exception is set). */
static int ginsert(Clock *c, const u8 *k, int64_t sec) {
    if ((c->count + 1) * 2 > c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 1024;
        GEnt *nt = PyMem_Calloc(ncap, sizeof(GEnt));
        if (nt == NULL) { PyErr_NoMemory(); return -1; }
        /* generation 0 marks empty in the new table; live entries move to generation 1 */
        for (size_t i = 0; i < c->cap; i++) {
            if (c->tab[i].gen == c->gen) {
                int f;
                GEnt *e = gslot(nt, ncap, 1, c->tab[i].key, &f);
                *e = c->tab[i];
                e->gen = 1;
            }
        }
        PyMem_Free(c->tab);
        c->tab = nt;
        c->cap = ncap;
        c->gen = 1;
    }
    int f;
    GEnt *e = gslot(c->tab, c->cap, c->gen, k, &f);
    if (!f) c->count++;
    e->gen = c->gen;
    memcpy(e->key, k, 13);
    e->sec = sec;
    return 0;
}

enum { T_NONE = 0, T_OK = 1, T_RAISE = 2, T_ERR = -1 };

/* _Clock.glog.get(key) or _Clock.glog_base(key). T_RAISE: Python would raise (the year
 * left datetime's range): the piece is dropped, the state changes made so far stay. */
static int glog_lookup(Clock *c, const u8 *k, int64_t *sec) {
    if (c->memo_ok && memcmp(k, c->memo_key, 13) == 0) { *sec = c->memo_sec; return T_OK; }
    if (c->count) {
        int f;
        GEnt *e = gslot(c->tab, c->cap, c->gen, k, &f);
        if (f) {
            memcpy(c->memo_key, k, 13);
            c->memo_sec = e->sec;
            c->memo_ok = 1;
            *sec = e->sec;
            return T_OK;
        }
    }
    /* glog_base: _GLOG_TS = (\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\Z on the 13-byte key */
    static const char shape[] = "dddd dd:dd:dd";
    for (int i = 0; i < 13; i++) {
        if (shape[i] == 'd' ? !is_digit(k[i]) : k[i] != (u8)shape[i]) return T_NONE;
    }
    int mon = d2(k), day = d2(k + 2), hh = d2(k + 5), mm = d2(k + 8), ss = d2(k + 11);
    if (c->last_month == 12 && mon == 1) {
        c->year += 1;
        gclear(c);
    }
    if (!valid(c->year, mon, day, hh, mm, ss)) return T_NONE;
    c->last_month = mon;
    if (c->year < 1 || c->year > 9999) return T_RAISE; /* timegm -> datetime.date raises */
    int64_t s = timegm_s(c->year, mon, day, hh, mm, ss);
    if (c->count > 100000) gclear(c);
    if (ginsert(c, k, s) < 0) return T_ERR;
    memcpy(c->memo_key, k, 13);
    c->memo_sec = s;
    c->memo_ok = 1;
    *sec = s;
    return T_OK;
}

/* _Clock.iso.get(key) or _Clock.iso_base(key) on the 19-byte key. */
static int iso_lookup(Clock *c, const u8 *k, int64_t *sec) {
    if (c->iso_ok && memcmp(k, c->iso_key, 19) == 0) { *sec = c->iso_sec; return T_OK; }
    static const char shape[] = "dddd-dd-ddTdd:dd:dd";
    for (int i = 0; i < 19; i++) {
        if (shape[i] == 'd' ? !is_digit(k[i]) : k[i] != (u8)shape[i]) return T_NONE;
    }
    int64_t y = d2(k) * 100 + d2(k + 2);
    int mon = d2(k + 5), day = d2(k + 8), hh = d2(k + 11), mm = d2(k + 14), ss = d2(k + 17);
    if (!valid(y, mon, day, hh, mm, ss)) return T_NONE;
    if (y < 1) return T_RAISE; /* year 0000: datetime.date raises in timegm */
    int64_t s = timegm_s(y, mon, day, hh, mm, ss);
    memcpy(c->iso_key, k, 19);
    c->iso_sec = s;
    c->iso_ok = 1;
    *sec = s;
    return T_OK;
}

/* --------------------------------------------------------------------- header */

typedef struct {
    int64_t sec; /* calendar.timegm of the header */
    int64_t us;  /* microseconds (glog) */
    int glog;    /* glog headers subtract utc_offset_s; ISO ones do not */
    ssz src;     /* start of "file.cc:123" */
    ssz close;   /* index of "] " */
} Hdr;

/* After the timestamp: optional padding, a pid, one space, then the source up to "] ". */
static int header_tail(const u8 *L, ssz n, ssz p, Hdr *h) {
    while (p < n && L[p] == ' ') p++;
    ssz sp = find(L, n, " ", 1, p, n);
    if (sp < 0) return T_NONE;
    ssz close = find(L, n, "] ", 2, sp, n);
    if (close < 0 || !isdigits(L, n, p, sp)) return T_NONE;
    h->src = sp + 1;
    h->close = close;
    return T_OK;
}

static int fname_ok(const u8 *L, ssz a, ssz b);

/* parser._source_ok: "file.cc:123" from h->src to the "] " at h->close */
static int source_ok(const u8 *L, ssz n, const Hdr *h) {
    ssz colon = find(L, n, ":", 1, h->src, h->close);
    return colon >= 0 && isdigits(L, n, colon + 1, h->close) && fname_ok(L, h->src, colon);
}

/* parser._header */
static int header(Clock *c, const u8 *L, ssz n, Hdr *h) {
    if (n > 22 && is_level(L[0]) && L[5] == ' ' && L[14] == '.') {
        if (L[21] != ' ' || !isdigits(L, n, 15, 21)) return T_NONE;
        if (header_tail(L, n, 22, h) != T_OK || !source_ok(L, n, h)) return T_NONE;
        /* the date last: only a whole header may step the year (and enter the cache) */
        int r = glog_lookup(c, L + 1, &h->sec);
        if (r != T_OK) return r;
        h->us = 0;
        for (int i = 15; i < 21; i++) h->us = h->us * 10 + (L[i] - '0');
        h->glog = 1;
        return T_OK;
    }
    if (n > 24 && L[10] == 'T' && L[19] == 'Z' && L[20] == ' ') {
        /* Python computes the base before checking the level: keep that order (a year
         * 0000 line raises whatever its level) */
        int r = iso_lookup(c, L, &h->sec);
        if (r != T_OK) return r;
        if (!is_level(L[21]) || L[22] != ' ') return T_NONE;
        h->us = 0;
        h->glog = 0;
        return header_tail(L, n, 23, h);
    }
    return T_NONE;
}

/* ------------------------------------------------------------------- output */

enum { K_STATE, K_EXEC, K_REL, K_RESP, K_PREP, N_KINDS };
static const int NCOLS[N_KINDS] = {5, 5, 4, 5, 7};
#define MAXCOLS 7

#define SCACHE 2048
#define SKEY 48
typedef struct {
    ssz len; /* -1: empty */
    u8 key[SKEY];
    PyObject *val;
} SEnt;

typedef struct {
    PyObject *cols[N_KINDS][MAXCOLS];
    int64_t records;
    PyObject *ident; /* parser._ident, for request ids with backslash escapes */
    SEnt *strs;      /* direct-mapped cache of short decoded tokens */
    PyObject *empty;
    int64_t utc_offset_s;
} Out;

/* parser._s: a token decoded as UTF-8 with "replace", shared through a small cache (the
 * same models, instances, states and request ids repeat on many lines). */
static PyObject *dec(Out *o, const u8 *L, ssz n, ssz a, ssz b) {
    clamp(n, &a, &b);
    ssz k = b - a;
    if (k == 0) { Py_INCREF(o->empty); return o->empty; }
    if (k > SKEY) return PyUnicode_DecodeUTF8((const char *)L + a, k, "replace");
    uint64_t h = 1469598103934665603ULL;
    for (ssz i = a; i < b; i++) h = (h ^ L[i]) * 1099511628211ULL;
    SEnt *e = &o->strs[(h ^ (h >> 29)) & (SCACHE - 1)];
    if (e->len == k && memcmp(e->key, L + a, (size_t)k) == 0) {
        Py_INCREF(e->val);
        return e->val;
    }
    PyObject *s = PyUnicode_DecodeUTF8((const char *)L + a, k, "replace");
    if (s == NULL) return NULL;
    Py_XDECREF(e->val);
    Py_INCREF(s);
    e->val = s;
    e->len = k;
    memcpy(e->key, L + a, (size_t)k);
    return s;
}

/* parser._ident */
static PyObject *ident(Out *o, const u8 *L, ssz n, ssz a, ssz b) {
    clamp(n, &a, &b);
    if (b - a == 12 && memcmp(L + a, "<id_unknown>", 12) == 0) {
        Py_INCREF(o->empty);
        return o->empty;
    }
    if (memchr(L + a, '\\', (size_t)(b - a)) != NULL) {
        /* JSON escapes: let the Python helper decide, so the result is its result */
        PyObject *raw = PyBytes_FromStringAndSize((const char *)L + a, b - a);
        if (raw == NULL) return NULL;
        PyObject *r = PyObject_CallOneArg(o->ident, raw);
        Py_DECREF(raw);
        return r;
    }
    return dec(o, L, n, a, b);
}

/* int(line[a:b]) with Python's semantics. Returns T_OK (*out set), T_NONE where Python
 * raises ValueError (the record is then not this shape), T_ERR on another exception. */
static int pyint(const u8 *L, ssz n, ssz a, ssz b, PyObject **out) {
    clamp(n, &a, &b);
    ssz k = b - a;
    if (k > 0 && k <= 18) { /* fast path: plain digits fit in int64 */
        int64_t v = 0;
        ssz i = a;
        for (; i < b && is_digit(L[i]); i++) v = v * 10 + (L[i] - '0');
        if (i == b) {
            *out = PyLong_FromLongLong(v);
            return *out ? T_OK : T_ERR;
        }
    }
    /* signs, spaces, underscores, long numbers, junk: exactly what int(bytes) does */
    PyObject *raw = PyBytes_FromStringAndSize((const char *)L + a, k);
    if (raw == NULL) return T_ERR;
    *out = PyNumber_Long(raw);
    Py_DECREF(raw);
    if (*out != NULL) return T_OK;
    if (PyErr_ExceptionMatches(PyExc_ValueError)) {
        PyErr_Clear();
        return T_NONE;
    }
    return T_ERR;
}

/* The header's epoch ns. A year past 2262 overflows int64 ns, so the sum is formed in
 * 128 bits and handed to Python in two parts when it does not fit. */
static PyObject *at_ns(Out *o, const Hdr *h) {
    __int128 v = (__int128)h->sec * 1000000000 + (__int128)h->us * 1000;
    if (h->glog) v -= (__int128)o->utc_offset_s * 1000000000;
    if (v >= INT64_MIN && v <= INT64_MAX) return PyLong_FromLongLong((long long)v);
    long long q = (long long)(v / 1000000000), r = (long long)(v % 1000000000);
    PyObject *pq = PyLong_FromLongLong(q), *g = PyLong_FromLong(1000000000);
    PyObject *pr = PyLong_FromLongLong(r), *m = NULL, *s = NULL;
    if (pq && g && pr && (m = PyNumber_Multiply(pq, g)) != NULL) s = PyNumber_Add(m, pr);
    Py_XDECREF(pq);
    Py_XDECREF(g);
    Py_XDECREF(pr);
    Py_XDECREF(m);
    return s;
}

/* Append one record: vals[0..] are the kind's fields after at_ns and offset. Steals the
 * references in vals (all non-NULL). */
static int emit(Out *o, int kind, const Hdr *h, int64_t off, PyObject **vals) {
    int nc = NCOLS[kind], rc = 0;
    PyObject *at = at_ns(o, h), *po = PyLong_FromLongLong(off);
    if (at == NULL || po == NULL) rc = -1;
    if (rc == 0 && (PyList_Append(o->cols[kind][0], at) < 0 ||
                    PyList_Append(o->cols[kind][1], po) < 0))
        rc = -1;
    for (int i = 2; i < nc; i++) {
        if (rc == 0 && PyList_Append(o->cols[kind][i], vals[i - 2]) < 0) rc = -1;
        Py_DECREF(vals[i - 2]);
    }
    Py_XDECREF(at);
    Py_XDECREF(po);
    if (rc == 0) o->records++;
    return rc;
}

static int all_ok(PyObject **v, int k) {
    for (int i = 0; i < k; i++)
        if (v[i] == NULL) return 0;
    return 1;
}

static void drop(PyObject **v, int k) {
    for (int i = 0; i < k; i++) Py_CLEAR(v[i]);
}

/* ------------------------------------------------------------------ handlers
 * Each mirrors the parser._h_* function of the same file for the message line[m:e]
 * (quotes removed). Returns 1 (emitted), 0 (not this shape), -1 (Python exception). */

#define TRY_INT(a, b, dst)                                        \
    do {                                                          \
        int r_ = pyint(L, n, (a), (b), &(dst));                   \
        if (r_ != T_OK) { drop(v, 7); return r_ == T_NONE ? 0 : -1; } \
    } while (0)

/* parser._request_message: the message after "[request id: ID] ", the id ending at j */
static int request_message(Out *o, const u8 *L, ssz n, ssz m, ssz j, ssz e, const Hdr *h,
                           int64_t off) {
    PyObject *v[7] = {0};
    ssz k = j + 2;
    if (starts(L, n, k, "Setting state from ", 19)) {
        /* tail = line[k+19:e]; tail.partition(b" to ") */
        ssz ta = k + 19, tb = e;
        clamp(n, &ta, &tb);
        ssz sep = find(L, n, " to ", 4, ta, tb);
        if (sep < 0) return 0;
        v[0] = ident(o, L, n, m + 13, j);
        v[1] = dec(o, L, n, ta, sep);
        v[2] = dec(o, L, n, sep + 4, tb);
        if (!all_ok(v, 3)) { drop(v, 3); return -1; }
        return emit(o, K_STATE, h, off, v) < 0 ? -1 : 1;
    }
    if (starts(L, n, k, "prepared: ", 10)) {
        ssz stop = find(L, n, "\\n", 2, k, e); /* a JSON-escaped newline ends the summary */
        if (stop < 0) stop = e;
        /* Python evaluates all five finds; once one is -1 the record is None whatever the
         * later ones return, so stopping at the first -1 gives the same answer */
        ssz p = find(L, n, ", model: ", 9, k, stop);
        if (p < 0) return 0;
        ssz q = find(L, n, ",", 1, p + 9, stop);
        if (q < 0) return 0;
        ssz ver = find(L, n, "actual version: ", 16, q, stop);
        if (ver < 0) return 0;
        ssz bs = find(L, n, "batch size: ", 12, ver, stop);
        if (bs < 0) return 0;
        ssz t = find(L, n, "timeout (us): ", 14, bs, stop);
        if (t < 0) return 0;
        /* line[a : line.find(b",", x, stop)]: a missing comma makes the slice end at -1 */
        ssz ve = find(L, n, ",", 1, ver, stop), be = find(L, n, ",", 1, bs, stop);
        if (ve < 0) ve = n - 1;
        if (be < 0) be = n - 1;
        TRY_INT(ver + 16, ve, v[2]);
        TRY_INT(bs + 12, be, v[3]);
        TRY_INT(t + 14, stop, v[4]);
        v[0] = ident(o, L, n, m + 13, j);
        v[1] = dec(o, L, n, p + 9, q);
        if (!all_ok(v, 5)) { drop(v, 5); return -1; }
        return emit(o, K_PREP, h, off, v) < 0 ? -1 : 1;
    }
    return 0;
}

/* parser._h_infer_request: a request id may hold "] " itself, so each "] " is tried in
 * turn (at most ID_TRIES, parser._ID_TRIES) until a known message follows it */
#define ID_TRIES 64
static int h_infer_request(Out *o, const u8 *L, ssz n, ssz m, ssz e, const Hdr *h, int64_t off) {
    if (!starts(L, n, m, "[request id: ", 13)) return 0;
    ssz j = find(L, n, "] ", 2, m + 13, e);
    for (int tries = 0; tries < ID_TRIES && j >= 0; tries++) {
        int r = request_message(o, L, n, m, j, e, h, off);
        if (r != 0) return r;
        j = find(L, n, "] ", 2, j + 1, e);
    }
    return 0;
}

static int h_python_be(Out *o, const u8 *L, ssz n, ssz m, ssz e, const Hdr *h, int64_t off) {
    PyObject *v[7] = {0};
    if (starts(L, n, m, "model ", 6)) {
        ssz i = find(L, n, ", instance ", 11, m, e);
        if (i < 0) return 0;
        ssz x = find(L, n, ", executing ", 12, i, e);
        if (x < 0 || !ends(L, m, e, " requests", 9)) return 0;
        TRY_INT(x + 12, e - 9, v[2]);
        v[0] = dec(o, L, n, m + 6, i);
        v[1] = dec(o, L, n, i + 11, x);
        if (!all_ok(v, 3)) { drop(v, 3); return -1; }
        return emit(o, K_EXEC, h, off, v) < 0 ? -1 : 1;
    }
    if (starts(L, n, m, "TRITONBACKEND_ModelInstanceExecute: model instance name ", 56)) {
        ssz r = rfind(L, n, " released ", 10, m, e);
        if (r < 0 || !ends(L, m, e, " requests", 9)) return 0;
        TRY_INT(r + 10, e - 9, v[1]);
        v[0] = dec(o, L, n, m + 56, r);
        if (!all_ok(v, 2)) { drop(v, 2); return -1; }
        return emit(o, K_REL, h, off, v) < 0 ? -1 : 1;
    }
    return 0; /* _h_stub: stub health, not a kind scanned here */
}

static int h_response(Out *o, const u8 *L, ssz n, ssz m, ssz e, const Hdr *h, int64_t off) {
    PyObject *v[7] = {0};
    if (!starts(L, n, m, "add response output: output: ", 29)) return 0;
    ssz t = find(L, n, ", type: ", 8, m, e);
    if (t < 0) return 0;
    ssz sh = find(L, n, ", shape: [", 10, t, e);
    if (sh < 0 || e < 1 || L[e - 1] != ']') return 0;
    ssz da = sh + 10, db = e - 1;
    clamp(n, &da, &db);
    /* dims.split(b","): count the parts first, then int() each */
    ssz parts = 0;
    if (db > da) {
        parts = 1;
        for (ssz i = da; i < db; i++) parts += L[i] == ',';
    }
    PyObject *shape = PyTuple_New(parts);
    if (shape == NULL) return -1;
    ssz a = da, idx = 0;
    while (idx < parts) {
        const u8 *c = memchr(L + a, ',', (size_t)(db - a));
        ssz b = c ? (ssz)(c - L) : db;
        PyObject *d = NULL;
        int r = pyint(L, n, a, b, &d);
        if (r != T_OK) { Py_DECREF(shape); return r == T_NONE ? 0 : -1; }
        PyTuple_SET_ITEM(shape, idx, d);
        idx++;
        a = b + 1;
    }
    v[0] = dec(o, L, n, m + 29, t);
    v[1] = dec(o, L, n, t + 8, sh);
    v[2] = shape;
    if (!all_ok(v, 3)) { drop(v, 3); return -1; }
    return emit(o, K_RESP, h, off, v) < 0 ? -1 : 1;
}

/* [^\s:\]]+ fully matching L[a:b] (parser._FNAME) */
static int fname_ok(const u8 *L, ssz a, ssz b) {
    if (a >= b) return 0;
    for (ssz i = a; i < b; i++)
        if (is_space(L[i]) || L[i] == ':' || L[i] == ']') return 0;
    return 1;
}

/* parser._emit_header_line, for the scanned kinds only */
static int emit_header_line(Out *o, const u8 *L, ssz n, const Hdr *h, int64_t off) {
    ssz colon = find(L, n, ":", 1, h->src, h->close);
    if (colon < 0 || !isdigits(L, n, colon + 1, h->close) || !fname_ok(L, h->src, colon))
        return 0;
    ssz e = n;
    while (e > h->close + 2 && (L[e - 1] == '\n' || L[e - 1] == '\r')) e--;
    ssz m = h->close + 2;
    if (e > m + 1 && L[m] == '"' && L[e - 1] == '"') { m++; e--; }
    ssz fl = colon - h->src;
    const u8 *f = L + h->src;
#define IS(name) (fl == (ssz)sizeof(name) - 1 && memcmp(f, name, sizeof(name) - 1) == 0)
    if (IS("infer_request.cc")) return h_infer_request(o, L, n, m, e, h, off);
    if (IS("python_be.cc")) return h_python_be(o, L, n, m, e, h, off);
    if (IS("infer_response.cc")) return h_response(o, L, n, m, e, h, off);
#undef IS
    return 0;
}

/* --------------------------------------------------------------- headerless lines */

/* ``[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6}`` (21 bytes) at L[i] */
static int glog_stamp(const u8 *L, ssz n, ssz i) {
    static const char shape[] = "Ldddd dd:dd:dd.dddddd";
    if (i < 0 || n - i < 21) return 0;
    for (int k = 0; k < 21; k++) {
        u8 c = L[i + k], s = (u8)shape[k];
        if (s == 'L' ? !is_level(c) : s == 'd' ? !is_digit(c) : c != s) return 0;
    }
    return 1;
}

/* ``\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ [IWEF]`` (22 bytes) at L[i] */
static int iso_stamp(const u8 *L, ssz n, ssz i) {
    static const char shape[] = "dddd-dd-ddTdd:dd:ddZ L";
    if (i < 0 || n - i < 22) return 0;
    for (int k = 0; k < 22; k++) {
        u8 c = L[i + k], s = (u8)shape[k];
        if (s == 'L' ? !is_level(c) : s == 'd' ? !is_digit(c) : c != s) return 0;
    }
    return 1;
}

/* `` +\d+ [^\s:\]]+:\d+\] `` at L[j]: the rest of parser._ANY_HEAD (no backtracking can
 * change the outcome: each class excludes the byte that ends it). */
static int head_rest(const u8 *L, ssz n, ssz j) {
    if (j >= n || L[j] != ' ') return 0;
    while (j < n && L[j] == ' ') j++;
    ssz s = j;
    while (j < n && is_digit(L[j])) j++;
    if (j == s || j >= n || L[j] != ' ') return 0;
    s = ++j;
    while (j < n && !is_space(L[j]) && L[j] != ':' && L[j] != ']') j++;
    if (j == s || j >= n || L[j] != ':') return 0;
    s = ++j;
    while (j < n && is_digit(L[j])) j++;
    return j > s && j + 1 < n && L[j] == ']' && L[j + 1] == ' ';
}

/* parser._ANY_HEAD.search: the first position where a whole header matches */
static ssz any_head(const u8 *L, ssz n) {
    for (ssz i = 0; i + 20 < n; i++) {
        u8 c = L[i];
        if (is_level(c)) {
            if (glog_stamp(L, n, i) && head_rest(L, n, i + 21)) return i;
        } else if (is_digit(c)) {
            if (iso_stamp(L, n, i) && head_rest(L, n, i + 22)) return i;
        }
    }
    return -1;
}

/* parser._HEADISH.match: ``[IWEF]\d{4} \d\d:`` or ``\d{4}-\d\d-\d\dT\d\d:`` */
static int headish(const u8 *L, ssz n) {
    static const char g[] = "Ldddd dd:", s[] = "dddd-dd-ddTdd:";
    const char *shapes[2] = {g, s};
    for (int w = 0; w < 2; w++) {
        ssz k = (ssz)strlen(shapes[w]);
        if (n < k) continue;
        int ok = 1;
        for (ssz i = 0; i < k && ok; i++) {
            u8 c = L[i], t = (u8)shapes[w][i];
            ok = t == 'L' ? is_level(c) : t == 'd' ? is_digit(c) : c == t;
        }
        if (ok) return 1;
    }
    return 0;
}

/* parser._one then, when the piece has no header, parser._headerless: only a header
 * glued behind stub text can hold a scanned record there. */
static int one(Clock *c, Out *o, const u8 *L, ssz n, int64_t off) {
    Hdr h;
    int r = header(c, L, n, &h);
    if (r == T_ERR) return -1;
    if (r == T_RAISE) return 0; /* Python: the line is dropped as "internal" */
    if (r == T_OK) return emit_header_line(o, L, n, &h, off) < 0 ? -1 : 0;
    if (memchr(L, 0, (size_t)n) != NULL) return 0; /* binary */
    ssz e = n;
    while (e > 0 && (L[e - 1] == '\n' || L[e - 1] == '\r')) e--;
    ssz i = 0;
    while (i < e && is_space(L[i])) i++;
    if (i == e) return 0; /* blank */
    if (headish(L, n)) return 0; /* a header with an impossible date: malformed */
    if (find(L, n, "] ", 2, 0, n) < 0) return 0;
    ssz p = any_head(L, n);
    if (p < 0) return 0;
    r = header(c, L + p, n - p, &h);
    if (r == T_ERR) return -1;
    if (r != T_OK) return 0;
    return emit_header_line(o, L + p, n - p, &h, off + p) < 0 ? -1 : 0;
}

/* parser._GLUED_HEAD lookahead: a glog or ISO timestamp-and-level right at L[j] */
static int glued_head(const u8 *L, ssz n, ssz j) {
    if (glog_stamp(L, n, j)) return j + 21 < n && L[j + 21] == ' ';
    if (iso_stamp(L, n, j)) return j + 22 < n && L[j + 22] == ' ';
    return 0;
}

/* Whether the line holds `] "` at least twice (parser._unglued's cheap filter). */
static int two_quoted(const u8 *L, ssz n) {
    int seen = 0;
    ssz i = 0;
    while (i < n) {
        const u8 *q = memchr(L + i, ']', (size_t)(n - i));
        if (q == NULL) return 0;
        i = q - L;
        if (i + 2 < n && L[i + 1] == ' ' && L[i + 2] == '"' && ++seen == 2) return 1;
        i++;
    }
    return 0;
}

/* ------------------------------------------------------------------- scan() */

static void out_free(Out *o) {
    for (int k = 0; k < N_KINDS; k++)
        for (int i = 0; i < MAXCOLS; i++) Py_CLEAR(o->cols[k][i]);
    if (o->strs != NULL) {
        for (int i = 0; i < SCACHE; i++) Py_XDECREF(o->strs[i].val);
        PyMem_Free(o->strs);
        o->strs = NULL;
    }
    Py_CLEAR(o->empty);
}

PyDoc_STRVAR(scan_doc,
"scan(data, year, utc_offset_s, offset, ident) -> (lines, resume_offset, state, executing,\n"
"released, outputs, prepared)\n\n"
"Each record kind is a tuple of column lists. ``ident`` is parser._ident. Use\n"
"collectors.logs.fastscan.scan, which wraps this.");

static PyObject *scan(PyObject *self, PyObject *args) {
    Py_buffer buf;
    long long year, utc_offset_s, offset;
    PyObject *ident_fn;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*LLLO:scan", &buf, &year, &utc_offset_s, &offset, &ident_fn))
        return NULL;
    PyObject *result = NULL;
    Out o;
    memset(&o, 0, sizeof o);
    Clock c;
    memset(&c, 0, sizeof c);
    c.year = year;
    c.utc_offset_s = utc_offset_s;
    if (year < 1 || year > 9999 || offset < 0 || offset > ((long long)1 << 62) ||
        utc_offset_s < -((long long)1 << 40) || utc_offset_s > ((long long)1 << 40)) {
        PyErr_SetString(PyExc_ValueError,
                        "scan: year must be 1..9999, offset >= 0, utc_offset_s in range");
        goto done;
    }
    o.ident = ident_fn;
    o.utc_offset_s = utc_offset_s;
    o.empty = PyUnicode_New(0, 0);
    o.strs = PyMem_Calloc(SCACHE, sizeof(SEnt));
    if (o.empty == NULL || o.strs == NULL) { PyErr_NoMemory(); goto done; }
    for (int i = 0; i < SCACHE; i++) o.strs[i].len = -1;
    for (int k = 0; k < N_KINDS; k++)
        for (int i = 0; i < NCOLS[k]; i++)
            if ((o.cols[k][i] = PyList_New(0)) == NULL) goto done;

    const u8 *D = buf.buf;
    const ssz N = buf.len;
    int64_t lines = 0;
    ssz pos = 0; /* start of the next unprocessed piece */
    while (pos < N) {
        const u8 *nl = memchr(D + pos, '\n', (size_t)(N - pos));
        ssz end = nl ? (ssz)(nl - D) + 1 : N; /* physical line [pos, end) */
        const u8 *L = D + pos;
        ssz n = end - pos;
        /* parser._unglued: cut after each '"' that a header follows */
        ssz start = 0;
        if (two_quoted(L, n)) {
            for (ssz i = 0; i < n; i++) {
                if (L[i] == '"' && glued_head(L, n, i + 1)) {
                    if (one(&c, &o, L + start, i + 1 - start, offset + pos + start) < 0)
                        goto done;
                    lines++;
                    start = i + 1;
                }
            }
        }
        /* the line's last piece; held back (not emitted) if the data ends without "\n" */
        if (nl == NULL) {
            pos += start;
            break;
        }
        if (one(&c, &o, L + start, n - start, offset + pos + start) < 0) goto done;
        lines++;
        pos = end;
    }
    {
        PyObject *kinds[N_KINDS];
        int ok = 1;
        for (int k = 0; k < N_KINDS; k++) {
            kinds[k] = PyTuple_New(NCOLS[k]);
            if (kinds[k] == NULL) { ok = 0; continue; }
            for (int i = 0; i < NCOLS[k]; i++) {
                PyTuple_SET_ITEM(kinds[k], i, o.cols[k][i]);
                o.cols[k][i] = NULL;
            }
        }
        if (ok)
            result = Py_BuildValue("(LLNNNNN)", (long long)lines, (long long)(offset + pos),
                                   kinds[0], kinds[1], kinds[2], kinds[3], kinds[4]);
        else
            for (int k = 0; k < N_KINDS; k++) Py_XDECREF(kinds[k]);
    }
done:
    out_free(&o);
    PyMem_Free(c.tab);
    PyBuffer_Release(&buf);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS, scan_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fastscan",
    "Compiled scanner of the verbose-log records the detectors need; see fastscan.py.", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fastscan(void) { return PyModule_Create(&module); }
