"""The fast constructors build records indistinguishable from the dataclass constructors."""

from __future__ import annotations

import dataclasses

import pytest

from collectors.logs._ctor import fast_ctor
from observability import events

RECORDS = [
    events.LogRecord,
    events.RequestPrepared,
    events.RequestStateChange,
    events.InstanceExecuting,
    events.InstanceReleased,
    events.ResponseOutput,
    events.FrontendRequest,
    events.FrontendCancellation,
    events.ModelStateChange,
    events.StubHealth,
    events.ErrorLine,
    events.StubOutput,
]
"""The records the log parser builds with ``fast_ctor``."""


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: c.__name__)
def test_fast_ctor_equals_dataclass_ctor(cls: type) -> None:
    fields = dataclasses.fields(cls)
    values = [f"v{i}" if f.type in ("str",) else i for i, f in enumerate(fields)]
    made = fast_ctor(cls)(*values)
    real = cls(*values)
    assert made == real and hash(made) == hash(real) and repr(made) == repr(real)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.__setattr__(fields[0].name, 1)
