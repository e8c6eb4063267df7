"""`recon-submit sweep`: a grid of evaluations (grid.py) run as jobs on Ray or in-process (run.py).

Ray is optional (the `cluster` extra: `.venv/bin/pip install -e '.[cluster]'` in a checkout); cluster.py starts or joins it.
"""

from reconbench.sweep.grid import BUDGETS, Grid, GridError, Job, load_grid
from reconbench.sweep.run import Summary, run_sweep

__all__ = ["BUDGETS", "Grid", "GridError", "Job", "Summary", "load_grid", "run_sweep"]
