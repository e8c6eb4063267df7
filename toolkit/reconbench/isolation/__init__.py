"""The process boundary between the evaluator and the attack (issue 12, "black-box means black-box").

Every evaluation runs the attack in its own, freshly started Python process (isolation.child),
white-box cells included: that process holds only its scenario's view, and the evaluator's side
(the target model in black-box cells, the models before and after the update, the target and
update sets, the scoring code, the signing key) stays in the evaluator's process (isolation.parent).

What the harness guarantees:
- In black-box cells the target's parameters (and, in dynamic black-box cells, those of the models
  before and after the update) never enter the attack's process: queries cross a pipe as float32
  images in and float32 probabilities out, counted against the budget in the evaluator's process.
  No object in the attack's process refers to a parameter, so no attribute, gc walk, frame or
  closure leads to one.
- In no cell do the target set or the update set enter the attack's process.
- The evaluator never unpickles what the attack's process sends (JSON headers and fixed-dtype
  arrays, sizes checked first), and on Linux it is non-dumpable while the attack runs, so a process
  of the same user cannot read its memory through /proc/<pid>/mem or ptrace.
What it does not guarantee: files that are public on disk stay public. The embedded tracks' weights
ship inside the package, published weights and datasets are on the Hub, and the digits images are
in scikit-learn. The guards (isolation.guards) refuse the obvious Python routes to them, but native
code can read a file. Review of the shipped attack source, the copy checks and reproduction (which
re-runs the signed source) are what catch an attack that reads public data or weights from disk.

Import nothing here: the attack's process starts as `python -m reconbench.isolation.child`, which
imports this package before its guards are installed.
"""
