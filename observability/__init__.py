"""triton-observability: make Triton BLS and ensemble pathologies visible, explained and alerted on."""

__version__ = "0.1.0"
__all__ = ["__version__"]
