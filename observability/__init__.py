"""triton-observability: Triton BLS and ensemble pathologies, visible, explained, alerted on."""

__version__ = "0.1.0"
__all__ = ["__version__"]
