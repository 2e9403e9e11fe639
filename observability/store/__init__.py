"""The embedded store (SQLite, WAL): typed events in, typed events out."""

from observability.store.sqlite import Store, StoreError, StoreFullError, WriteResult

__all__ = ["Store", "StoreError", "StoreFullError", "WriteResult"]
