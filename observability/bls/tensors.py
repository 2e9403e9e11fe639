"""Describe request and response tensors by name, dtype and shape — never their contents.

Why only metadata: tensors carry user data (prompts, images); a trace must be safe to ship to
any collector. Why strings like ``"FEATURES FP32 [1,64]"``: span attributes allow only flat
primitive lists, and one string per tensor keeps name, dtype and shape together.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["describe", "describe_tensors"]

_DTYPES = {
    1: "BOOL", 2: "UINT8", 3: "UINT16", 4: "UINT32", 5: "UINT64", 6: "INT8", 7: "INT16",
    8: "INT32", 9: "INT64", 10: "FP16", 11: "FP32", 12: "FP64", 13: "BYTES", 14: "BF16",
}  # fmt: skip


_NUMPY = {
    "bool": "BOOL", "uint8": "UINT8", "uint16": "UINT16", "uint32": "UINT32",
    "uint64": "UINT64", "int8": "INT8", "int16": "INT16", "int32": "INT32", "int64": "INT64",
    "float16": "FP16", "float32": "FP32", "float64": "FP64", "object": "BYTES",
}  # fmt: skip


def _numpy_dtype(tensor: Any) -> str:
    """2.51's ``pb_utils.Tensor`` exposes no dtype; a CPU tensor's numpy view (no copy) has it."""
    try:
        if not tensor.is_cpu():
            return "?"
        kind = str(tensor.as_numpy().dtype)
    except Exception:
        return "?"
    return _NUMPY.get(kind, kind)


def describe(tensor: Any) -> str:
    """``"NAME DTYPE [d0,d1]"`` from a ``pb_utils.Tensor`` (or anything with the same methods)."""
    try:
        name = tensor.name()
    except Exception:
        name = "?"
    try:
        code = tensor.triton_dtype  # a property on 2.51's pb_utils.Tensor, a method elsewhere
        code = code() if callable(code) else code
        dtype = _DTYPES.get(int(code), str(code))
    except Exception:
        dtype = _numpy_dtype(tensor)
    try:
        shape = ",".join(str(int(d)) for d in tensor.shape())
    except Exception:
        shape = "?"
    return f"{name} {dtype} [{shape}]"


def describe_tensors(tensors: Iterable[Any] | None) -> list[str]:
    if tensors is None:
        return []
    try:
        return [describe(t) for t in tensors]
    except Exception:
        return []
