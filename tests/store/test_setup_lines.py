"""The setup lines in force (schema 6's ``setup`` table): each log's newest config of each
model and its newest rate-limiter pool, kept whatever their age.

Why: Triton writes them only at load, and ``watch`` needs them for as long as the server
runs; a restarted ``watch`` reads them here (``LiveWindow.prime``). The configs are real: the
dq pipeline's, as Triton 2.51 logged them (tests/fixtures/foreign/dq_child_hang_in_batch).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from observability import events as ev
from observability.store import Store
from tests.foreign.parsed import parsed

H = 3600 * 10**9


def _configs() -> list[ev.ModelConfig]:
    return [e for e in parsed("dq_child_hang_in_batch").events if isinstance(e, ev.ModelConfig)]


def _later(c: ev.ModelConfig, by_ns: int, **changes: object) -> ev.ModelConfig:
    header = replace(c.header, at_ns=c.header.at_ns + by_ns, offset=c.header.offset + by_ns)
    return replace(c, header=header, **changes)  # type: ignore[arg-type]


def _newest(store: Store) -> dict[tuple[str, str], ev.ModelConfig]:
    return {
        (source, c.model): c for source, c in store.setup_lines() if isinstance(c, ev.ModelConfig)
    }


def test_the_newest_config_of_each_model_of_each_log_is_kept(tmp_path: Path) -> None:
    configs = _configs()
    models = {c.model for c in configs}
    with Store(tmp_path / "s.db") as store:
        store.write(configs, source="a.log")
        store.write(configs, source="a.log")  # a replay
        assert {m for _, m in _newest(store)} == models
        assert len(store.setup_lines()) == len(models)
        rank = next(c for c in configs if c.model == "dq_rank")
        reloaded = _later(rank, H, preserve_ordering=False)
        store.write([reloaded], source="a.log")
        store.write([rank], source="a.log")  # an older line arriving late changes nothing
        store.write(configs, source="b.log")  # another server's log keeps its own
        newest = _newest(store)
    assert newest[("a.log", "dq_rank")] == reloaded
    assert newest[("b.log", "dq_rank")] == rank
    assert len(newest) == 2 * len(models)


def test_retention_keeps_them(tmp_path: Path) -> None:
    configs = _configs()
    newest = max(c.header.at_ns for c in configs)
    with Store(tmp_path / "s.db") as store:
        store.write(configs, source="a.log")
        store.compact()
        store.apply_retention(max_age_s=60, now_ns=newest + 2 * H)
        assert not list(store.log_rows(0)), "the log itself is gone"
        assert {m for _, m in _newest(store)} == {c.model for c in configs}


def test_a_store_from_before_the_table_opens_read_only_without_them(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with Store(path) as store:
        store.write(_configs(), source="a.log")
        store._db.execute("DROP TABLE setup")  # what a schema 5 store lacks
    with Store(path, readonly=True) as store:
        assert store.setup_lines() == []
