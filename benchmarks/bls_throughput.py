"""Demo pipeline throughput on the lab Triton, instrumented vs not, run back to back.

Each mode gets a fresh lab (the same demo repository; ``TRITON_OBS_ENABLED=0`` turns the
in-model library into a pass-through) and the same healthy load; modes alternate A B A B so
drift on a shared machine hits both. Spans go to a real OTLP receiver on loopback.
Run: ``python -m benchmarks.bls_throughput [--requests N] [--rounds R]``.
"""

from __future__ import annotations

import argparse
import json
import statistics

from collectors.otlp import OtlpReceiver
from observability.lab import LabConfig, TritonLab, demo_repository
from observability.load import LoadConfig, Status, run_load

__all__ = ["main"]


def _throughput(enabled: bool, endpoint: str, requests: int) -> float:
    env = {"TRITON_OBS_ENABLED": "1" if enabled else "0", "TRITON_OBS_ENDPOINT": endpoint}
    with TritonLab(
        LabConfig(model_repository=demo_repository(), model_control="explicit", env=env)
    ) as lab:
        warm = LoadConfig(url=lab.grpc_url, concurrency=4, requests=40, duration_s=60, seed=9)
        run_load(warm)
        cfg = LoadConfig(url=lab.grpc_url, concurrency=4, requests=requests, duration_s=300, seed=1)
        report = run_load(cfg)
    answered = sum(o.status is Status.OK for o in report.outcomes)
    if answered != requests:
        raise RuntimeError(f"only {answered}/{requests} answered: the comparison means nothing")
    return answered / report.wall_s


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    off: list[float] = []
    on: list[float] = []
    with OtlpReceiver() as receiver:
        endpoint = f"{receiver.url}/v1/traces"
        for _ in range(args.rounds):
            off.append(_throughput(False, endpoint, args.requests))
            on.append(_throughput(True, endpoint, args.requests))
            receiver.drain()
    result = {
        "bench": "bls_demo_throughput",
        "value": round(statistics.mean(on), 2),
        "unit": "req/s",
        "baseline": round(statistics.mean(off), 2),
        "ratio": round(statistics.mean(on) / statistics.mean(off), 3),
        "rounds": {"instrumented": [round(x, 2) for x in on], "plain": [round(x, 2) for x in off]},
    }
    print(json.dumps(result), flush=True)
    return result


if __name__ == "__main__":
    main()
