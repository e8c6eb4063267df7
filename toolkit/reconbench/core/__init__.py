"""The core: what every modality shares. The track registry (tracks), the scenario and view
protocol (scenario), the attack catalogue, signing, the result helpers (io, cache, threads), errors, the
console, and the old import paths of moved modules (moved)."""
