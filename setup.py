"""Only the optional C extension; everything else is in pyproject.toml.

``optional=True``: where it cannot be compiled the install still succeeds and
``collectors.logs.fastscan`` falls back to the pure-Python parser.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "collectors.logs._fastscan",
            sources=["collectors/logs/_fastscan.c"],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ]
)
