"""The core: what every modality shares. The track registry (tracks), the scenario and the view's
query side (scenario, queries), the attack catalogue and declaration (catalogue, attack_errors,
attack_options, attack_source, progress), the result envelope and metric report (envelope, report,
membership), signing, the Hub client (hub), the helpers (io, cache, threads), errors, the console,
and the old import paths of moved modules (moved)."""
