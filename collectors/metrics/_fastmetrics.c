/*
 * _fastmetrics: build the MetricSample records of one run of sample lines in C.
 *
 * Why this exists: collectors/metrics/parser.py (_Parser.fast_chunk) splits a run of
 * plain ``name{labels} value`` lines and looks their series up with C-level str/map
 * calls, but then pays ~0.5 us per line to create each frozen, slotted MetricSample
 * (object.__new__ plus five descriptor __set__ calls through map/deque). This module
 * does exactly those steps without the interpreter in between:
 *
 *     value  = float(token)                    PyFloat_FromString, i.e. float(str)
 *     sample = object.__new__(MetricSample)    cls->tp_alloc(cls, 0), as object_new does
 *     MetricSample.<field>.__set__(sample, v)  the member descriptor's slot, written as
 *                                              PyMember_SetOne writes a T_OBJECT_EX slot
 *
 * Contract: build(names, labels, tokens, family) returns the same tuple of samples that
 * fast_chunk's Python lines build from the same arguments, or None where they would
 * return False (a token float() rejects), having kept nothing. The pre-checks on the
 * tokens ('_' and non-ASCII) stay in parser.py, before this call.
 *
 * Safety: sequence lengths are checked to be equal; every item is read through
 * PySequence_Fast; every slot offset comes from a member descriptor of the type given to
 * setup(), which also checks the field names, order and slot kind.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#define NFIELDS 5
static const char *const FIELDS[NFIELDS] = {"name", "labels", "value", "family", "timestamp_ms"};

static PyTypeObject *sample_type = NULL; /* strong reference, set by setup() */
static Py_ssize_t offsets[NFIELDS];

/* setup(cls): remember cls and the slot offsets of its five fields. */
static PyObject *fm_setup(PyObject *self, PyObject *cls) {
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "setup() wants the MetricSample class");
        return NULL;
    }
    PyTypeObject *tp = (PyTypeObject *)cls;
    if (tp->tp_alloc == NULL || tp->tp_itemsize != 0) {
        PyErr_SetString(PyExc_TypeError, "setup(): unsupported class layout");
        return NULL;
    }
    Py_ssize_t found[NFIELDS];
    for (int i = 0; i < NFIELDS; i++) {
        PyObject *descr = PyDict_GetItemString(tp->tp_dict, FIELDS[i]); /* borrowed */
        if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
            PyErr_Format(PyExc_TypeError, "setup(): %s is not a slot", FIELDS[i]);
            return NULL;
        }
        PyMemberDef *m = ((PyMemberDescrObject *)descr)->d_member;
        if (m->type != T_OBJECT_EX || (m->flags & READONLY) || m->offset <= 0 ||
            m->offset + (Py_ssize_t)sizeof(PyObject *) > tp->tp_basicsize) {
            PyErr_Format(PyExc_TypeError, "setup(): slot %s has an unexpected kind", FIELDS[i]);
            return NULL;
        }
        found[i] = m->offset;
    }
    memcpy(offsets, found, sizeof(offsets));
    Py_INCREF(cls);
    Py_XSETREF(sample_type, tp);
    Py_RETURN_NONE;
}

static inline void put(PyObject *obj, int field, PyObject *value) {
    PyObject **slot = (PyObject **)((char *)obj + offsets[field]);
    Py_INCREF(value);
    Py_XSETREF(*slot, value);
}

/* build(names, labels, tokens, family) -> tuple[MetricSample, ...] | None */
static PyObject *fm_build(PyObject *self, PyObject *args) {
    PyObject *names, *labels, *tokens, *family;
    if (!PyArg_ParseTuple(args, "OOOU:build", &names, &labels, &tokens, &family)) return NULL;
    if (sample_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "build() before setup()");
        return NULL;
    }
    PyObject *fn = NULL, *fl = NULL, *ft = NULL, *values = NULL, *out = NULL;
    fn = PySequence_Fast(names, "names must be a sequence");
    if (fn == NULL) goto done;
    fl = PySequence_Fast(labels, "labels must be a sequence");
    if (fl == NULL) goto done;
    ft = PySequence_Fast(tokens, "tokens must be a sequence");
    if (ft == NULL) goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(ft);
    if (PySequence_Fast_GET_SIZE(fn) != n || PySequence_Fast_GET_SIZE(fl) != n) {
        PyErr_SetString(PyExc_ValueError, "build(): sequences of different lengths");
        goto done;
    }
    /* All values first: a token float() rejects means "not handled", nothing built. */
    values = PyTuple_New(n);
    if (values == NULL) goto done;
    PyObject **tok = PySequence_Fast_ITEMS(ft);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyFloat_FromString(tok[i]);
        if (v == NULL) {
            if (PyErr_ExceptionMatches(PyExc_ValueError)) {
                PyErr_Clear();
                Py_INCREF(Py_None);
                out = Py_None;
            }
            goto done;
        }
        PyTuple_SET_ITEM(values, i, v);
    }
    PyObject *result = PyTuple_New(n);
    if (result == NULL) goto done;
    PyObject **nm = PySequence_Fast_ITEMS(fn);
    PyObject **lb = PySequence_Fast_ITEMS(fl);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *obj = sample_type->tp_alloc(sample_type, 0);
        if (obj == NULL) {
            Py_DECREF(result);
            goto done;
        }
        put(obj, 0, nm[i]);
        put(obj, 1, lb[i]);
        put(obj, 2, PyTuple_GET_ITEM(values, i));
        put(obj, 3, family);
        put(obj, 4, Py_None);
        PyTuple_SET_ITEM(result, i, obj);
    }
    out = result;
done:
    Py_XDECREF(fn);
    Py_XDECREF(fl);
    Py_XDECREF(ft);
    Py_XDECREF(values);
    return out;
}

static PyMethodDef methods[] = {
    {"setup", fm_setup, METH_O, "setup(cls): the MetricSample class whose slots build() writes."},
    {"build", fm_build, METH_VARARGS,
     "build(names, labels, tokens, family) -> tuple of samples, or None for a bad token."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fastmetrics",
    "Builds MetricSample records for collectors.metrics.parser.", -1, methods,
};

PyMODINIT_FUNC PyInit__fastmetrics(void) { return PyModule_Create(&module); }
