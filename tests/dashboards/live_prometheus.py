"""A real Prometheus on loopback, and the dashboards' queries made concrete, for live tests.

Why a real server and not promtool: promtool's unit tests prove the rules' logic on series we
invent; only a Prometheus scraping a real Triton and a real ``triton-obs watch`` proves that
the names, labels (``model_instance``!), job names and units we wrote are the ones that
arrive, and that Grafana's variable queries resolve.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from dashboards.grafana import build_all
from observability.lab.ports import free_port
from tests import yamlfast

__all__ = [
    "ALERTS_DIR",
    "Panel",
    "Prometheus",
    "metric_names_on",
    "panel_queries",
    "scaled_rules",
]

ALERTS_DIR = Path(__file__).resolve().parents[2] / "dashboards" / "alerts"
_SAMPLE = re.compile(r"^([A-Za-z_:][\w:]*)(?:\{|\s)")


NEEDS_PROMETHEUS = pytest.mark.skipif(
    shutil.which("prometheus") is None,
    reason="prometheus missing: apt-get install -y prometheus (.ci/run does)",
)
"""For a module that runs Debian's Prometheus."""


def _get(url: str, timeout_s: float = 10.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout_s) as resp:  # loopback only
        return resp.read()


def metric_names_on(url: str) -> set[str]:
    """Sample names (``_bucket``, ``_total`` included) of one live ``/metrics`` scrape."""
    text = _get(url).decode()
    return {m.group(1) for line in text.splitlines() if (m := _SAMPLE.match(line))}


def _parse_duration(text: str) -> float:
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    total = 0.0
    for value, unit in re.findall(r"(\d+)(ms|s|m|h)", text):
        total += int(value) * units[unit]
    return total


def scaled_rules(out: Path, scale: float) -> dict[str, float]:
    """Copy the repo's rule files into ``out`` with every ``for:`` multiplied by ``scale``.

    Why: 1m..5m ``for`` durations do not fit a test of a few minutes. Only ``for`` changes;
    the expressions (their ``[5m]`` windows included) are byte-for-byte the repo's, so what
    fires here is what fires in production, sooner. Returns each alert's scaled ``for`` (s).
    """
    out.mkdir(parents=True, exist_ok=True)
    fors: dict[str, float] = {}
    for path in sorted(ALERTS_DIR.glob("*.rules.yml")):
        doc = yamlfast.load(path.read_text())
        for group in doc["groups"]:
            for rule in group["rules"]:
                seconds = _parse_duration(rule.get("for", "0s")) * scale
                if seconds:
                    rule["for"] = f"{max(1, round(seconds))}s"
                if "alert" in rule:  # recording rules have no `for`
                    fors[rule["alert"]] = max(1, round(seconds)) if seconds else 0.0
        (out / path.name).write_text(yaml.safe_dump(doc, sort_keys=False))
    return fors


class Prometheus:
    """Debian's ``prometheus`` on 127.0.0.1, 1 s scrapes and evaluations, our rules loaded."""

    def __init__(
        self,
        root: Path,
        targets: dict[str, str],
        rule_files: list[Path],
        labels: dict[str, dict[str, str]] | None = None,
    ) -> None:
        self.root = root
        self.targets = targets
        self.labels = labels or {}
        """Target labels by job, as service discovery adds them (a PodMonitor: namespace, pod)."""
        self.rule_files = rule_files
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 30.0) -> Prometheus:
        self.root.mkdir(parents=True, exist_ok=True)
        config = {
            "global": {
                "scrape_interval": "1s",
                "evaluation_interval": "1s",
                "scrape_timeout": "1s",
            },
            "rule_files": [str(p) for p in self.rule_files],
            "scrape_configs": [
                {
                    "job_name": job,
                    "static_configs": [
                        {
                            "targets": [target],
                            **({"labels": self.labels[job]} if job in self.labels else {}),
                        }
                    ],
                }
                for job, target in self.targets.items()
            ],
        }
        cfg = self.root / "prometheus.yml"
        cfg.write_text(yaml.safe_dump(config, sort_keys=False))
        for _attempt in range(3):  # another process can win the free port between probe and bind
            self.port = free_port()
            log = (self.root / "prometheus.log").open("ab")
            self.proc = subprocess.Popen(
                [
                    "prometheus", f"--config.file={cfg}",
                    f"--storage.tsdb.path={self.root / 'tsdb'}",
                    f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn",
                ],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )  # fmt: skip
            log.close()
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    _get(f"{self.url}/-/ready", 1.0)
                    self.started_at = time.time()
                    return self
                except OSError:
                    time.sleep(0.2)
            self.stop()
        raise RuntimeError(f"prometheus did not start: {self.log_tail()}")

    def log_tail(self) -> str:
        path = self.root / "prometheus.log"
        return path.read_text(errors="replace")[-2000:] if path.exists() else ""

    def stop(self) -> None:
        """Terminate the process we started (by its pid), kill it if it lingers."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)

    def api(self, path: str, **params: str | float) -> object:
        query = urllib.parse.urlencode({k: str(v) for k, v in params.items()})
        body = json.loads(_get(f"{self.url}/api/v1/{path}?{query}", 30.0))
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict]:
        data = self.api("query", query=expr)
        assert isinstance(data, dict)
        return data["result"]

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[dict]:
        data = self.api("query_range", query=expr, start=start, end=end, step=step)
        assert isinstance(data, dict)
        return data["result"]

    def label_values(self, label: str, match: str) -> list[str]:
        data = self.api(f"label/{label}/values", **{"match[]": match})
        assert isinstance(data, list)
        return data

    def targets_up(self) -> dict[str, bool]:
        return {r["metric"]["job"]: r["value"][1] == "1" for r in self.query("up")}


def has_finite_value(result: list[dict]) -> bool:
    """Data a panel would draw: a sample that is a number (0 counts; NaN from 0/0 does not)."""
    for series in result:
        for _, value in series.get("values") or [series["value"]]:
            if not math.isnan(float(value)):
                return True
    return False


@dataclass(frozen=True)
class Panel:
    board: str
    title: str
    expr: str
    variables: dict[str, str]
    """The board's query variables: name -> the selector their values come from."""


def panel_queries() -> Iterator[Panel]:
    """Every target of every panel of the three generated dashboards, as Grafana holds them."""
    for name, text in sorted(build_all().items()):
        board = json.loads(text)
        variables = {}
        for var in board["templating"]["list"]:
            if var["type"] == "query":
                m = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", var["query"])
                assert m and m.group(2) == var["name"], var["query"]
                variables[var["name"]] = m.group(1)
        for panel in board["panels"]:
            for target in panel.get("targets", []):
                yield Panel(name.removesuffix(".json"), panel["title"], target["expr"], variables)


def resolve_variables(prom: Prometheus, selectors: dict[str, str]) -> dict[str, str]:
    """Each variable as Grafana resolves it: its ``label_values`` query against the live
    Prometheus, earlier variables substituted first, all values selected (Grafana's multi-value
    regex ``(a|b)``). Raises when a variable resolves to nothing: the board would be empty."""
    values: dict[str, str] = {}
    for name, selector in selectors.items():
        found = prom.label_values(name, substitute(selector, values))
        if not found:
            raise AssertionError(f"${name}: label_values({selector}) is empty")
        # Regex-escaped, then the backslashes escaped again for PromQL's string literal.
        escaped = (re.escape(v).replace("\\", "\\\\") for v in sorted(found))
        values[name] = "(" + "|".join(escaped) + ")"
    return values


def substitute(expr: str, values: dict[str, str], step_s: float = 2, range_s: float = 60) -> str:
    """Grafana's built-ins as Grafana computes them for a 1 s scrape interval:
    ``$__rate_interval`` = max(``$__interval`` + scrape interval, 4 x scrape interval)."""
    builtins = {
        "__rate_interval": f"{int(max(step_s + 1, 4))}s",
        "__interval": f"{int(step_s)}s",
        "__range": f"{int(range_s)}s",
    }
    every = {**builtins, **values}
    return re.sub(
        r"\$\{?(\w+)\}?", lambda m: every.get(m.group(1), m.group(0)), expr
    )  # fmt: skip
