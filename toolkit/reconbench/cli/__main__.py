"""`python -m reconbench.cli`: the same as `recon-submit`."""

from reconbench.cli import main

main()
