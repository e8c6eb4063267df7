"""The boundary between the evaluator and the attack (issues 12 and 23, "black-box means black-box").

Every evaluation runs the attack in its own, freshly started Python process (isolation.child),
white-box cells included, and on Linux that process runs in a bubblewrap sandbox
(isolation.sandbox: namespaces, the read-only view of isolation.mounts, the filter of
isolation.seccomp). The evaluator's side (the target model in black-box cells, the models before
and after the update, the target and update sets, the scoring code, the signing key) stays in the
evaluator's process (isolation.parent).

What the harness guarantees (docs/sandbox.md has the full table, route by route):
- In black-box cells the target's parameters (and, in dynamic black-box cells, those of the models
  before and after the update) never enter the attack's process: queries cross a socket as float32
  images in and float32 probabilities out, counted against the budget in the evaluator's process.
- In no cell do the target set or the update set enter the attack's process.
- In the sandbox the attack sees no data set, weight file, registry, key, cache, home or network,
  cannot signal or read the evaluator, cannot write anything the evaluator imports, and everything
  it starts dies with the run. The result records the sandbox (provenance.sandbox).
- The evaluator never unpickles what the attack's process sends (JSON headers and fixed-dtype
  arrays, count and sizes checked first), imports its own side before the attack starts and loads
  the signing key only after it has ended.
Without bubblewrap (provenance.sandbox "none") only the process boundary and the Python guards
(isolation.guards: friendly errors for honest mistakes, not security) remain.

Import nothing here: the attack's process starts as `python -m reconbench.pipeline.isolation.child`, which
imports this package before its guards are installed.
"""
