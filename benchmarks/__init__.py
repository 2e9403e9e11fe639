"""Benchmarks: each prints JSON lines ``{"bench", "value", "unit", "baseline", "ratio"}``.

Ratios are measured against a baseline run in the same process: these machines are noisy,
so absolute numbers are context, ratios are the result. Never asserted in tests.
"""
