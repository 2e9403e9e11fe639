"""Only the optional C extensions; everything else is in pyproject.toml.

``optional=True``: where they cannot be compiled the install still succeeds, and
``collectors.metrics.parser`` builds its samples in Python, ``collectors.logs.parser`` runs
its Python hot path, ``collectors.traces.parser`` merges a trace file's records in Python,
``collectors.otlp.decode`` makes every span in Python and ``observability.store.blocks``
packs every column in Python, which give the same records and bytes (the tests compare both
paths).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "collectors.metrics._fastmetrics",
            sources=["collectors/metrics/_fastmetrics.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "collectors.logs._hotpath",
            sources=["collectors/logs/_hotpath.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "collectors.otlp._otlpspans",
            sources=["collectors/otlp/_otlpspans.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "collectors.traces._tracescan",
            sources=["collectors/traces/_tracescan.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "observability.store._blockpack",
            sources=["observability/store/_blockpack.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
    ]
)
