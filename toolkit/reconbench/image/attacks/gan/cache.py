"""The GAN prior is part of the attack, and it is cached: trained once per (aux set, architecture,
training configuration, seed[, target]) and reused by later runs.

Files: $RECONBENCH_CACHE/gan-priors/<key>.safetensors (default ~/.cache/reconbench/...), one
tensor per state-dict entry, prefixed by the network's role ("generator.", "discriminator.");
the key is repeated in the metadata. Written through a temporary file and a rename; never
unpickled. A file that cannot be read, carries another key, or does not fit the networks
exactly is reported in the run's provenance and the prior is trained again and rewritten.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file
from torch import nn

from reconbench.core.cache import cache_root
from reconbench.core.io import atomic_path

FORMAT = 1


def cache_dir():
    return cache_root() / "gan-priors"


def model_digest(model: nn.Module) -> str:
    """sha256 over the state dict (names, dtypes, shapes, bytes): the target's identity when the
    prior depends on it (KEDMI's soft labels, PLG-MI's pseudo-labels and inversion loss)."""
    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        t = tensor.detach().cpu().contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def prior_key(spec: dict) -> str:
    """The spec and this process's CPU thread count: a prior trained on the CPU with another count sums in
    another order, so reusing it would not reproduce a run (a KEDMI and a Revealer example re-ran
    differently from a cached prior that other runs had written under the same key)."""
    key = {"format": FORMAT, **spec, "cpu_threads": torch.get_num_threads()}
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


@dataclass
class Prior:
    networks: dict[str, nn.Module]
    key: str
    trained: bool
    note: str  # "trained", "loaded from cache", or why a cached file was replaced

    def facts(self) -> dict[str, str | bool]:
        return {"prior_cache_key": self.key, "prior_trained_in_this_run": self.trained, "prior_cache": self.note}


def _load(path, key: str, networks: dict[str, nn.Module]) -> str | None:
    """None when loaded; otherwise why the file cannot be used."""
    try:
        with safe_open(str(path), framework="pt") as handle:
            if (handle.metadata() or {}).get("key") != key:
                return "cached file carries another key or no key"
        tensors = load_file(str(path))
    except (OSError, ValueError, SafetensorError) as exc:
        return f"cached file unreadable ({type(exc).__name__})"
    for role, net in networks.items():
        prefix = f"{role}."
        state = {name[len(prefix):]: t for name, t in tensors.items() if name.startswith(prefix)}
        try:
            net.load_state_dict(state, strict=True)
        except (RuntimeError, KeyError) as exc:
            return f"cached file does not fit the {role} ({str(exc).splitlines()[0][:120]})"
    if len(tensors) != sum(len(net.state_dict()) for net in networks.values()):
        return "cached file has extra tensors"
    return None


def _save(path, key: str, networks: dict[str, nn.Module]) -> None:
    tensors = {f"{role}.{name}": t.detach().cpu().contiguous().clone()
               for role, net in networks.items() for name, t in net.state_dict().items()}
    with atomic_path(path) as tmp:
        save_file(tensors, str(tmp), metadata={"key": key, "format": str(FORMAT)})


def load_or_train(spec: dict, build: Callable[[], dict[str, nn.Module]], train: Callable[[dict[str, nn.Module]], None],
                  *, seed: int, device: torch.device) -> Prior:
    """The prior for `spec` (everything training depends on), from the cache or trained now.

    Building and training run under a forked RNG seeded with `seed`, so the result depends on the
    seed alone, and the attack's own randomness does not depend on whether the cache was hit."""
    key = prior_key(spec)
    path = cache_dir() / f"{key}.safetensors"
    note = "trained (no cached prior)"
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)
        networks = {role: net.to(device) for role, net in build().items()}
        if path.is_file():
            problem = _load(path, key, networks)
            if problem is None:
                for net in networks.values():
                    net.eval()
                return Prior(networks, key, False, "loaded from cache")
            note = f"trained again: {problem}"
            torch.manual_seed(seed)  # a failed load may have half-filled the networks: start clean
            networks = {role: net.to(device) for role, net in build().items()}
        started = time.perf_counter()
        train(networks)
        note += f" in {time.perf_counter() - started:.1f} s"
    for net in networks.values():
        net.eval()
    _save(path, key, networks)
    return Prior(networks, key, True, note)
