"""Only the optional C extension; everything else is in pyproject.toml.

``optional=True``: where it cannot be compiled the install still succeeds and
``collectors.logs.fastscan`` falls back to the pure-Python parser (and
``collectors.metrics.parser`` to its pure-Python sample construction).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "collectors.logs._fastscan",
            sources=["collectors/logs/_fastscan.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "collectors.metrics._fastmetrics",
            sources=["collectors/metrics/_fastmetrics.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
    ]
)
