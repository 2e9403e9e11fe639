"""One module per page; each has ``render(view)`` and reads data only through ``data/``."""
