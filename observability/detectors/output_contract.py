"""output_contract: a python model answers with outputs its config does not declare.

Why: Triton 2.51 does not check a python model's response outputs against its config. A
model that starts answering ``BOXES`` as FP64 where its config says ``TYPE_FP32`` (a changed
numpy default, a missing ``astype``) is served without a word; the breakage shows only where
the output is consumed: a BLS child or the next ensemble step refuses the input
("data-type is 'FP64', but model 'vid_track' expects 'FP32'"), in its callers' errors and no
log line or counter (tests/fixtures/foreign vid_detect_wrong_dtype). The verbose log has both
halves: the config the backend logs at load (``ModelConfig``) and each response's outputs
with their types (``add response output``), joined to the model that answered by
``requests.py``.

The join misplaces about one output in a hundred on a loaded machine, and gives a BLS
parent the output lines its children write while it runs, so only a *declared* output with
another type is a breach (an undeclared name is another model's output far more often than a
bug: every asr_router, rag and llm recording had one), and it must be one (output, type)
pair seen ``min_responses`` times or more, in at least ``min_share`` of the model's
responses since its first.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from observability import events as ev
from observability.detectors.requests import Lifecycle, log_ref, requests_of
from observability.detectors.window import Window
from observability.findings import Evidence, Finding, Severity

__all__ = ["Breach", "OutputContract", "breaches"]


@dataclass(frozen=True)
class Breach:
    model: str
    output: str
    dtype: str
    declared: str
    """The type the config declares for the output."""
    responses: int
    """Responses that carried the breach."""
    answered: int
    """Responses of the model since the first breach."""
    first: Lifecycle
    last: Lifecycle
    config: ev.ModelConfig


def breaches(window: Window, min_responses: int = 5, min_share: float = 0.5) -> list[Breach]:
    """Per model, its most frequent breach of its logged config (pure over the window)."""
    configs: dict[str, list[ev.ModelConfig]] = {}
    for cfg in window.logs(ev.ModelConfig):
        configs.setdefault(cfg.model, []).append(cfg)
    if not configs:
        return []
    by_model = requests_of(window).answered
    out = []
    for model, done in sorted((m, by_model[m]) for m in configs if m in by_model):
        seen: Counter[tuple[str, str, str]] = Counter()
        firsts: dict[tuple[str, str, str], int] = {}
        lasts: dict[tuple[str, str, str], int] = {}
        conf: dict[tuple[str, str, str], ev.ModelConfig] = {}
        for i, c in enumerate(done):
            config = _in_force(configs[model], c.released_ns or 0)
            if config is None:
                continue
            declared = dict(config.outputs)
            for name, dtype in {(o.output, o.dtype) for o in c.outputs}:
                want = declared.get(name)
                if want is None or _SAME.get(want, want) == dtype:
                    continue  # a name it does not declare is another model's output, misjoined
                key = (name, dtype, want)
                seen[key] += 1
                firsts.setdefault(key, i)
                lasts[key] = i
                conf[key] = config
        if not seen:
            continue
        key, n = seen.most_common(1)[0]
        answered = len(done) - firsts[key]
        if n >= min_responses and n >= min_share * answered:
            out.append(
                Breach(
                    model, key[0], key[1], key[2], n, answered,
                    done[firsts[key]], done[lasts[key]], conf[key],
                )
            )  # fmt: skip
    return out


_SAME = {"STRING": "BYTES"}
"""A config's ``TYPE_STRING`` is what a response line calls ``BYTES``."""


def _in_force(configs: list[ev.ModelConfig], at_ns: int) -> ev.ModelConfig | None:
    """The config logged last before ``at_ns`` (a reload logs the new one)."""
    before = [c for c in configs if c.header.at_ns <= at_ns]
    return before[-1] if before else None


ADVICE = (
    "Make the model answer what its config declares: cast the output in execute "
    "(pb_utils.Tensor(name, array.astype(np.float32)) for TYPE_FP32), or change the config's "
    "output and every consumer's input together. Triton does not check a python model's "
    "outputs, so the consumer (a BLS child, the next ensemble step, the client) is where it "
    "fails; a unit test that loads config.pbtxt and checks execute's outputs against it "
    "catches it before a deploy."
)


@dataclass
class OutputContract:
    kind: str = "output_contract"
    min_responses: int = 5
    min_share: float = 0.5

    def detect(self, window: Window) -> list[Finding]:
        return [self._finding(b) for b in breaches(window, self.min_responses, self.min_share)]

    def _finding(self, b: Breach) -> Finding:
        what = f"its output {b.output} as {b.dtype} where its config declares {b.declared}"
        summary = (
            f"{b.model} answers with {what}: {b.responses} of its {b.answered} responses since "
            f"the first, over {((b.last.released_ns or 0) - (b.first.released_ns or 0)) / 1e9:.0f}"
            " s. Triton does not check a python model's outputs against its config, so the "
            "consumers of the output (a BLS caller's next call, the next ensemble step, the "
            "clients) are where it fails, often with an error no log line or counter shows."
        )
        return Finding(
            kind=self.kind,
            severity=Severity.CRITICAL if b.responses >= b.answered * 0.9 else Severity.WARNING,
            model=b.model,
            summary=summary,
            advice=ADVICE,
            first_seen_ns=b.first.released_ns or 0,
            last_seen_ns=b.last.released_ns or 0,
            evidence=(
                Evidence(
                    "log",
                    b.config.header.at_ns,
                    log_ref(b.config.header.offset),
                    f"model configuration of {b.model}: outputs "
                    + ", ".join(f"{n} {t}" for n, t in b.config.outputs),
                ),
                Evidence(
                    "log",
                    b.first.released_ns or 0,
                    log_ref(b.first.released_offset or 0),
                    f"first response with {b.output} {b.dtype} (on {b.first.instance})",
                ),
                Evidence(
                    "log",
                    b.last.released_ns or 0,
                    log_ref(b.last.released_offset or 0),
                    f"latest response with {b.output} {b.dtype} (on {b.last.instance})",
                ),
            ),
        )
