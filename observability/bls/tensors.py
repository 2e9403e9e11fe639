"""Describe request and response tensors by name, dtype and shape — never their contents.

Why only metadata: tensors carry user data (prompts, images); a trace must be safe to ship to
any collector. Why strings like ``"FEATURES FP32 [1,64]"``: span attributes allow only flat
primitive lists, and one string per tensor keeps name, dtype and shape together. Why two steps:
the model's thread only takes a :class:`TensorSnapshot` (the values the tensor hands out, no
formatting); the export thread turns it into strings with :func:`describe_snapshot`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["TensorSnapshot", "describe_snapshot", "snapshot"]

_DTYPES = {
    1: "BOOL", 2: "UINT8", 3: "UINT16", 4: "UINT32", 5: "UINT64", 6: "INT8", 7: "INT16",
    8: "INT32", 9: "INT64", 10: "FP16", 11: "FP32", 12: "FP64", 13: "BYTES", 14: "BF16",
}  # fmt: skip


_NUMPY = {
    "bool": "BOOL", "uint8": "UINT8", "uint16": "UINT16", "uint32": "UINT32",
    "uint64": "UINT64", "int8": "INT8", "int16": "INT16", "int32": "INT32", "int64": "INT64",
    "float16": "FP16", "float32": "FP32", "float64": "FP64", "object": "BYTES",
}  # fmt: skip


class TensorSnapshot(tuple):
    """``(name, dtype, shape)`` per tensor as the tensor gave them (dtype: a Triton dtype code or
    a name); holds no tensor, so no shared memory is kept alive until export."""

    __slots__ = ()


def _numpy_dtype(tensor: Any) -> str:
    """A tensor without a Triton dtype: a CPU tensor's numpy view (no copy) has one."""
    try:
        if not tensor.is_cpu():
            return "?"
        kind = str(tensor.as_numpy().dtype)
    except Exception:
        return "?"
    return _NUMPY.get(kind, kind)


def _raw(tensor: Any) -> tuple[Any, Any, Any]:
    try:
        name = tensor.name()
    except Exception:
        name = "?"
    try:
        code = tensor.triton_dtype  # a property on 2.51's pb_utils.Tensor, a method elsewhere
        code = code() if callable(code) else code
    except Exception:
        code = _numpy_dtype(tensor)
    try:
        shape = tuple(tensor.shape())  # hashable: the exporter caches frequent descriptions
    except Exception:
        shape = None
    return name, code, shape


def _format(name: Any, code: Any, shape: Any) -> str:
    if isinstance(code, str):
        dtype = code
    else:
        try:
            dtype = _DTYPES.get(int(code), str(code))
        except Exception:
            dtype = "?"
    try:
        dims = ",".join(str(int(d)) for d in shape)
    except Exception:
        dims = "?"
    return f"{name} {dtype} [{dims}]"


def snapshot(tensors: Iterable[Any] | None) -> TensorSnapshot:
    """What :func:`describe_snapshot` needs, taken cheaply on the model's thread."""
    if tensors is None:
        return TensorSnapshot()
    try:
        return TensorSnapshot([_raw(t) for t in tensors])
    except Exception:
        return TensorSnapshot()


def describe_snapshot(snap: TensorSnapshot) -> list[str]:
    return [_format(*raw) for raw in snap]
