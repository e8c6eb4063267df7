"""ReconBench: benchmark, submission toolkit and leaderboard for data reconstruction attacks.

The Python API (see the site page "Use from Python"):

    import reconbench
    rec = reconbench.run_attack("mi-face", "digits")      # reconstructions (an Attack class works too)
    report = reconbench.score(rec, "digits")              # report.metrics["ssim"].format()
    out = reconbench.evaluate("mi-face", "digits")        # signed result folder, as `recon-submit evaluate`
"""

from reconbench._version import __version__
from reconbench.core.moved import install as _install_moved

_install_moved()  # old import paths (signed attack codes, pinned recipes) keep resolving

__all__ = ["__version__", "evaluate", "run_attack", "score"]


def __getattr__(name: str):
    # Imported on first use: `import reconbench` (and the CLI's start) stays free of torch.
    if name in ("evaluate", "run_attack", "score"):
        from reconbench import api

        return getattr(api, name)
    raise AttributeError(f"module 'reconbench' has no attribute {name!r}")
