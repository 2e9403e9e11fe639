"""Only the optional C extensions; everything else is in pyproject.toml.

``optional=True``: where they cannot be compiled the install still succeeds, and
``collectors.metrics.parser`` builds its samples in Python, ``collectors.logs.parser`` runs
its Python hot path, ``collectors.traces.parser`` merges a trace file's records in Python,
``collectors.otlp.decode`` makes every span in Python and ``observability.store.blocks``
packs every column in Python, which give the same records and bytes (the tests compare both
paths).
"""

from setuptools import Extension, setup

EXTENSIONS = (
    "collectors.metrics._fastmetrics",
    "collectors.logs._hotpath",
    "collectors.otlp._otlpspans",
    "collectors.traces._tracescan",
    "observability.store._blockpack",
)

setup(
    ext_modules=[
        Extension(
            name,
            sources=[name.replace(".", "/") + ".c"],
            extra_compile_args=["-O2"],
            optional=True,
        )
        for name in EXTENSIONS
    ]
)
