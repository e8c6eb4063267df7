"""Target architectures and their loading from safetensors (never pickle)."""

from reconbench.image.models.registry import ARCHITECTURES, build_model, load_model, save_model

__all__ = ["ARCHITECTURES", "build_model", "load_model", "save_model"]
