"""YAML read through libyaml where PyYAML was built with it (the PyPI wheels are): the pure
Python loader took seconds of the quick suite on the stack's and Kubernetes' files. Same
documents, same Python values (``SafeLoader``'s rules)."""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["load", "load_all"]

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load(text: str | bytes) -> Any:
    return yaml.load(text, Loader=_LOADER)


def load_all(text: str | bytes) -> list[Any]:
    return list(yaml.load_all(text, Loader=_LOADER))
