"""``triton-obs demo``: a real Triton, the demo pipeline, every fault injected on a schedule."""
