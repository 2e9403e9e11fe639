"""Only the optional C extensions; everything else is in pyproject.toml.

``optional=True``: where they cannot be compiled the install still succeeds, and
``collectors.metrics.parser`` builds its samples in Python and ``collectors.logs.parser`` runs
its Python hot path, which give the same records (the tests compare both paths).
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
    ]
)
