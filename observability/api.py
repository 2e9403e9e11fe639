"""``watch``'s read-only HTTP API: targets, findings, a request's timeline, model health.

Served under ``/api/v1/`` by the same server as watch's /metrics (loopback unless ``--host``
says otherwise). It answers from what the last detection pass of each target saw
(:class:`~observability.watch.WatchView`), never from the store: a request is cheap whatever
the store holds, and nothing here writes. The schema is in ``docs/api.md``; every response is
bounded (``limit``, at most ``MAX_LIMIT``), and none carries a request's payload: the
timeline is the log's lifecycle records (states, model, batch size), never tensors.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote

from observability import events as ev
from observability.findings import Finding, iso

if TYPE_CHECKING:
    from observability.watch import Watcher

__all__ = ["API_VERSION", "MAX_LIMIT", "ApiApp"]

API_VERSION = "v1"
DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
MAX_EVIDENCE = 10
"""Evidence items per finding in a response (the newest kept)."""
MAX_TEXT = 1000
"""Characters of any one text field (a summary, an evidence detail)."""
_ID = re.compile(r"^[\x21-\x7e]{1,256}$")
"""A request id as Triton logs it: printable, no spaces, bounded."""


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class TargetInfo:
    target: str
    namespace: str | None
    pod: str | None
    findings_active: int
    last_pass: str | None
    """When the detectors last ran over the target (ISO 8601 UTC); null before the first."""


@dataclass(frozen=True)
class TimelineRecord:
    at: str
    event: str
    """``prepared`` (Triton admitted it) or ``state`` (a lifecycle step)."""
    model: str | None = None
    from_state: str | None = None
    to_state: str | None = None
    batch_size: int | None = None
    offset: int | None = None
    """Byte offset of the line in its log file."""


@dataclass(frozen=True)
class ModelHealth:
    model: str
    in_flight: int
    """Requests in the batches executing now (verbose log)."""
    busy_instances: int
    queued: int | None
    """Admitted and not executing yet (verbose log; null without instance lines)."""
    pending: float | None
    """Triton's pending-request gauge at the last scrape (null without /metrics)."""
    oldest_s: float
    last_seen: str | None
    """The last time the window holds any record naming the model."""
    instances: list[dict[str, Any]] = field(default_factory=list)


def _labels(w: Watcher) -> dict[str, str | None]:
    return {
        "target": w.name,
        "namespace": w.cfg.labels.get("namespace"),
        "pod": w.cfg.labels.get("pod"),
    }


def _clip(text: str | None) -> str | None:
    return None if text is None else text[:MAX_TEXT]


def finding_json(w: Watcher, f: Finding) -> dict[str, Any]:
    """A finding as the API and ``watch --format jsonl`` of a fleet give it: its record with
    the target's labels."""
    data = f.to_dict()
    data["summary"] = _clip(data["summary"])
    data["advice"] = _clip(data["advice"])
    evidence = data["evidence"][-MAX_EVIDENCE:]
    for item in evidence:
        item["detail"] = _clip(item["detail"])
    data["evidence"] = evidence
    return {**_labels(w), **data}


class ApiApp:
    """A WSGI application; ``targets()`` gives the watchers to answer about, in order."""

    def __init__(self, targets: Callable[[], Sequence[Watcher]]) -> None:
        self.targets = targets

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        try:
            if environ.get("REQUEST_METHOD", "GET") not in ("GET", "HEAD"):
                raise ApiError(405, "read-only API: GET only")
            query = parse_qs(str(environ.get("QUERY_STRING", "")), max_num_fields=10)
            status, body = 200, self.route(str(environ.get("PATH_INFO", "")), query)
        except ApiError as err:
            status, body = err.status, {"error": str(err), "status": err.status}
        data = json.dumps(body, sort_keys=True).encode()
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(data)))]
        if status == 405:
            headers.append(("Allow", "GET, HEAD"))
        start_response(f"{status} {reason.get(status, 'Error')}", headers)
        return [b"" if environ.get("REQUEST_METHOD") == "HEAD" else data]

    # -- routing ------------------------------------------------------------------------
    def route(self, path: str, query: dict[str, list[str]]) -> dict[str, Any]:
        prefix = f"/api/{API_VERSION}/"
        if not path.startswith(prefix):
            raise ApiError(404, f"no such path {path[:100]!r}: the API is under {prefix}")
        rest = path[len(prefix) :].rstrip("/")
        if rest == "targets":
            return self.list_targets(query)
        if rest == "findings":
            return self.findings(query)
        if rest == "health":
            return self.health(query)
        if rest.startswith("requests/"):
            return self.request(unquote(rest[len("requests/") :]), query)
        raise ApiError(
            404, f"no such path {path[:100]!r}: targets, findings, requests/<id>, health"
        )

    @staticmethod
    def _one(query: dict[str, list[str]], name: str) -> str | None:
        values = query.get(name)
        if not values:
            return None
        if len(values) > 1:
            raise ApiError(400, f"{name} given {len(values)} times")
        return values[0]

    def _limit(self, query: dict[str, list[str]], default: int = DEFAULT_LIMIT) -> int:
        text = self._one(query, "limit")
        if text is None:
            return default
        if not text.isdigit() or not 1 <= int(text) <= MAX_LIMIT:
            raise ApiError(400, f"limit must be an integer from 1 to {MAX_LIMIT}")
        return int(text)

    def _select(self, query: dict[str, list[str]], required: bool) -> list[Watcher]:
        """The target named by ``?target=`` (404 if none has that name); every target when
        none is named, unless the endpoint needs one and there are several (400)."""
        watchers = list(self.targets())
        name = self._one(query, "target")
        if name is None:
            if required and len(watchers) > 1:
                names = ", ".join(w.name for w in watchers[:20])
                raise ApiError(400, f"several targets: name one with ?target= ({names})")
            return watchers
        chosen = [w for w in watchers if w.name == name]
        if not chosen:
            raise ApiError(404, f"no target named {name[:100]!r}")
        return chosen

    def _target(self, query: dict[str, list[str]]) -> Watcher:
        chosen = self._select(query, required=True)
        if not chosen:
            raise ApiError(404, "no targets yet")
        return chosen[0]

    # -- endpoints ----------------------------------------------------------------------
    def list_targets(self, query: dict[str, list[str]]) -> dict[str, Any]:
        limit = self._limit(query, MAX_LIMIT)
        watchers = list(self.targets())
        rows = []
        for w in watchers[:limit]:
            view = w.view
            info = TargetInfo(
                target=w.name,
                namespace=w.cfg.labels.get("namespace"),
                pod=w.cfg.labels.get("pod"),
                findings_active=len(view.findings) if view else 0,
                last_pass=iso(view.at_ns) if view else None,
            )
            rows.append(asdict(info))
        return {"targets": rows, "total": len(watchers), "truncated": len(watchers) > limit}

    def findings(self, query: dict[str, list[str]]) -> dict[str, Any]:
        limit = self._limit(query)
        kind = self._one(query, "kind")
        model = self._one(query, "model")
        rows: list[tuple[int, dict[str, Any]]] = []
        for w in self._select(query, required=False):
            for f in w.view.findings if w.view else ():
                if (kind is None or f.kind == kind) and (model is None or f.model == model):
                    rows.append((f.last_seen_ns, finding_json(w, f)))
        rows.sort(key=lambda r: -r[0])  # the most recently seen first
        return {
            "findings": [r for _, r in rows[:limit]],
            "total": len(rows),
            "truncated": len(rows) > limit,
        }

    def request(self, request_id: str, query: dict[str, list[str]]) -> dict[str, Any]:
        if not _ID.match(request_id):
            raise ApiError(400, "a request id is 1 to 256 printable characters, no spaces")
        limit = self._limit(query, 200)
        w = self._target(query)
        view = w.view
        records: list[TimelineRecord] = []
        model: str | None = None
        for event in view.window.events if view else ():
            if isinstance(event, ev.RequestPrepared) and event.request_id == request_id:
                model = event.model
                records.append(
                    TimelineRecord(
                        iso(event.header.at_ns), "prepared", event.model,
                        batch_size=event.batch_size, offset=event.header.offset,
                    )
                )  # fmt: skip
            elif isinstance(event, ev.RequestStateChange) and event.request_id == request_id:
                records.append(
                    TimelineRecord(
                        iso(event.header.at_ns), "state", model, event.from_state,
                        event.to_state, offset=event.header.offset,
                    )
                )  # fmt: skip
        if not records:
            raise ApiError(
                404,
                f"no lifecycle records of request {request_id[:100]!r} in target {w.name!r}'s "
                "window (the evidence window, and requests still open up to the lookback)",
            )
        findings = [
            finding_json(w, f) for f in view.findings if f.request_id == request_id
        ] if view else []  # fmt: skip
        return {
            **_labels(w),
            "request_id": request_id,
            "model": model,
            "records": [asdict(r) for r in records[:limit]],
            "total": len(records),
            "truncated": len(records) > limit,
            "findings": findings[:MAX_EVIDENCE],
        }

    def health(self, query: dict[str, list[str]]) -> dict[str, Any]:
        limit = self._limit(query)
        w = self._target(query)
        view = w.view
        if view is None:
            return {**_labels(w), "at": None, "models": [], "total": 0, "truncated": False}
        last_seen: dict[str, int] = {}
        for event in view.window.events:
            name = getattr(event, "model", None)
            header = getattr(event, "header", None)
            at = header.at_ns if header is not None else getattr(event, "at_ns", None)
            if isinstance(name, str) and name and isinstance(at, int):
                last_seen[name] = max(last_seen.get(name, 0), at)
        rows: list[ModelHealth] = []
        for m in view.work:
            rows.append(
                ModelHealth(
                    model=m.model,
                    in_flight=sum(i.batch for i in m.busy),
                    busy_instances=len(m.busy),
                    queued=m.queued,
                    pending=m.pending,
                    oldest_s=round(m.oldest_s, 3),
                    last_seen=iso(last_seen[m.model]) if m.model in last_seen else None,
                    instances=[
                        {"instance": i.instance, "batch": i.batch, "age_s": round(i.age_s, 3)}
                        for i in m.instances[:MAX_EVIDENCE]
                    ],
                )
            )
        for name in sorted(last_seen.keys() - {m.model for m in view.work}):
            rows.append(ModelHealth(name, 0, 0, None, None, 0.0, iso(last_seen[name])))
        return {
            **_labels(w),
            "at": iso(view.at_ns),
            "models": [asdict(r) for r in rows[:limit]],
            "total": len(rows),
            "truncated": len(rows) > limit,
        }
