"""Only the optional C extension; everything else is in pyproject.toml.

``optional=True``: where it cannot be compiled the install still succeeds and
``collectors.metrics.parser`` falls back to its pure-Python sample construction.
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
    ]
)
