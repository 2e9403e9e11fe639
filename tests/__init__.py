"""The test suite (a package, so that tests import their shared helpers as ``tests.*``).

Some shells, this project's machines among them, export ``PYTHONDONTWRITEBYTECODE=1``. The
suite then compiled the package from source in each of its Python subprocesses (the CLI run as
a user runs it, the triage app, ``watch``) and pytest rewrote every test module on each run:
about 15 of its CPU-seconds. Here, imported before any test module, the suite writes its
bytecode caches (``__pycache__/``, git-ignored) and lets its subprocesses write theirs.
"""

import os
import sys

sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
