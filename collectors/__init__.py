"""Collectors: read real Triton signals and turn them into typed events."""
