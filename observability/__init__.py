"""triton-observability: Triton BLS and ensemble pathologies, visible, explained, alerted on."""

__version__ = "0.2.0"
__all__ = ["__version__"]
