"""The fleet page's data: which pods have findings now (Prometheus), one pod's detail (its watch).

Nothing here keeps a database: the fleet's state is what Prometheus already aggregates
(``triton_obs_findings`` from every ``watch`` it scrapes, labelled ``namespace``/``pod``),
read through its HTTP API, and one pod's findings, request timeline and health come from the
read-only API of the ``watch`` that follows that pod (``docs/api.md``). Every read is bounded
in time and size, and a failure is an error string to show, never an exception.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

__all__ = [
    "FINDINGS_QUERY",
    "MAX_BYTES",
    "MAX_PODS",
    "FetchResult",
    "PodFindings",
    "fleet_findings",
    "pod_target",
    "watch_get",
    "watch_url_for",
]

FINDINGS_QUERY = "sum by (namespace, pod, kind, model, severity) (triton_obs_findings) > 0"
"""Every pod's active findings now, one series per (pod, kind, model, severity)."""
MAX_BYTES = 4 * 2**20
"""The most any one response may hold (Prometheus or a watch); more is an error."""
MAX_SERIES = 2000
MAX_PODS = 500
TIMEOUT_S = 5.0
_SEVERITY_RANK = {"critical": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class FetchResult:
    data: Any = None
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error


@dataclass(frozen=True)
class PodFindings:
    namespace: str
    pod: str
    findings: int
    critical: int
    warning: int
    kinds: tuple[str, ...]
    models: tuple[str, ...]


def _fetch_json(url: str, timeout_s: float = TIMEOUT_S) -> FetchResult:
    """GET ``url`` as JSON: at most :data:`MAX_BYTES`, within ``timeout_s``; errors as text.
    An HTTP error's JSON body (``{"error": ...}``, as watch and Prometheus give) is kept."""
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        return FetchResult(error=f"not an http(s) URL: {url[:200]}")
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            raw = resp.read(MAX_BYTES + 1)
    except urllib.error.HTTPError as err:
        detail = ""
        try:
            body = json.loads(err.read(64 * 1024))
            detail = str(body.get("error", ""))[:500] if isinstance(body, dict) else ""
        except (ValueError, OSError):
            pass
        return FetchResult(error=f"HTTP {err.code} from {url[:200]}: {detail or err.reason}")
    except (urllib.error.URLError, OSError, ValueError) as err:
        reason = getattr(err, "reason", err)
        return FetchResult(error=f"cannot reach {url[:200]}: {reason}")
    if len(raw) > MAX_BYTES:
        return FetchResult(error=f"{url[:200]} answered more than {MAX_BYTES} bytes")
    try:
        return FetchResult(json.loads(raw))
    except ValueError:
        return FetchResult(error=f"{url[:200]} did not answer JSON")


def fleet_findings(prometheus_url: str, timeout_s: float = TIMEOUT_S) -> FetchResult:
    """Pods with findings now, worst first: a list of :class:`PodFindings` (``data``)."""
    base = prometheus_url.rstrip("/")
    query = urllib.parse.urlencode({"query": FINDINGS_QUERY})
    got = _fetch_json(f"{base}/api/v1/query?{query}", timeout_s)
    if not got.ok:
        return got
    body = got.data
    if not isinstance(body, dict) or body.get("status") != "success":
        error = body.get("error") if isinstance(body, dict) else None
        return FetchResult(error=f"Prometheus refused the query: {error or body!r:.300}")
    result = body.get("data", {}).get("result", [])
    if not isinstance(result, list):
        return FetchResult(error="Prometheus answered no result list")
    pods: dict[tuple[str, str], dict[str, Any]] = {}
    for series in result[:MAX_SERIES]:
        labels = series.get("metric", {})
        try:
            value = float(series.get("value", [0, "0"])[1])
        except (TypeError, ValueError, IndexError):
            continue
        key = (str(labels.get("namespace", "")), str(labels.get("pod", "")))
        row = pods.setdefault(
            key, {"n": 0, "critical": 0, "warning": 0, "kinds": set(), "models": set()}
        )
        count = int(value)
        row["n"] += count
        severity = labels.get("severity", "")
        if severity in ("critical", "warning"):
            row[severity] += count
        row["kinds"].add(str(labels.get("kind", "")))
        row["models"].add(str(labels.get("model", "")))
    rows = [
        PodFindings(
            ns, pod, r["n"], r["critical"], r["warning"],
            tuple(sorted(r["kinds"] - {""})), tuple(sorted(r["models"] - {""})),
        )
        for (ns, pod), r in pods.items()
    ]  # fmt: skip
    rows.sort(key=lambda r: (-r.critical, -r.warning, -r.findings, r.namespace, r.pod))
    return FetchResult(rows[:MAX_PODS])


def watch_url_for(namespace: str, pod: str, spec: str) -> str | None:
    """The watch API that follows ``namespace/pod``, from ``spec``: a map
    (``ns/pod=URL,ns/pod=URL``: ``None`` for a pod it lacks), a template with ``{namespace}``
    and ``{pod}`` (a sidecar per pod: ``http://{pod}.triton.{namespace}.svc:9464``), or one URL
    (one watch for all: a node's DaemonSet, the fleet in a box)."""
    spec = spec.strip()
    if not spec:
        return None
    if "=" in spec:
        entries = dict(
            (k.strip(), v.strip())
            for k, _, v in (item.partition("=") for item in spec.split(","))
            if k.strip() and v.strip()
        )
        return entries.get(f"{namespace}/{pod}") or entries.get(pod)
    safe = {
        "namespace": re.sub(r"[^a-z0-9.-]", "", namespace),
        "pod": re.sub(r"[^a-z0-9.-]", "", pod),
    }
    return spec.replace("{namespace}", safe["namespace"]).replace("{pod}", safe["pod"]).rstrip("/")


def watch_get(base: str, path: str, timeout_s: float = TIMEOUT_S, **params: str) -> FetchResult:
    """``GET <base>/api/v1/<path>?params`` of a watch; the JSON body or the error."""
    query = urllib.parse.urlencode({k: v for k, v in params.items() if v})
    url = f"{base.rstrip('/')}/api/v1/{path}" + (f"?{query}" if query else "")
    got = _fetch_json(url, timeout_s)
    if got.ok and not isinstance(got.data, dict):
        return FetchResult(error=f"{url[:200]} answered no JSON object")
    return got


def pod_target(base: str, namespace: str, pod: str, timeout_s: float = TIMEOUT_S) -> FetchResult:
    """The name of the watch's target labelled ``namespace``/``pod`` (``data``), from
    ``/api/v1/targets``; an error when that watch does not follow the pod."""
    got = watch_get(base, "targets", timeout_s)
    if not got.ok:
        return got
    for row in got.data.get("targets", []):
        if row.get("pod") == pod and (row.get("namespace") or "") == namespace:
            return FetchResult(str(row.get("target")))
    return FetchResult(error=f"the watch at {base[:200]} follows no target {namespace}/{pod}")


def severity_rank(severity: str) -> int:
    return _SEVERITY_RANK.get(severity, 3)
