#!/usr/bin/env bash
# The prepared GPU check (issue 14): one script, one table, under 8 minutes on one GPU.
#
#   benchmarks/device_check.sh                     # on the GPU machine: every row on cuda
#   benchmarks/device_check.sh --device cpu --dry  # tiny sizes on the CPU (tests/test_device_check.py)
#   benchmarks/device_check.sh --findings          # the findings page's runs at the papers' default budgets
#                                                  # (docs/grids/findings-gpu.toml) for FINDINGS_SECONDS (480)
#   benchmarks/device_check.sh --findings --device cpu --dry-run   # its grid expanded and checked, nothing run
#
# Rows: the pairwise metric engine on CUDA vs the CPU (same values? speed ratio), LPIPS and FID on
# CUDA, DeepInversion and one GAN-prior attack at a small budget (time per iteration), one zoo
# target's training steps, and a two-job sweep on local Ray with --device cuda. Each row runs in
# its own process under a time limit (ROW_TIMEOUT, default 100 s): a failing row prints its error
# line in the table and the others still run.
#
# No network is assumed on the GPU machine: nothing is downloaded or installed here. It needs the
# repository's working tree and a virtualenv with the toolkit's dependencies and the cluster extra
# (make install-test; carry .venv along), found as $PYTHON, ./.venv/bin/python, or python3. The
# toolkit is imported from ./toolkit (PYTHONPATH), so the checkout's code is what runs. FID and
# LPIPS use seeded stand-in backbone weights when the real files are absent (always, offline):
# their timings are real, their values are not FID/LPIPS.
set -u
cd "$(dirname "$0")/.."

DEVICE=cuda
DRY=""
while [ $# -gt 0 ]; do
  case "$1" in
    --device) DEVICE="$2"; shift 2 ;;
    --dry|--dry-run) DRY="--dry"; shift ;;
    --findings) ROWS="${ROWS:-findings}"; ROW_TIMEOUT="${ROW_TIMEOUT:-$(( ${FINDINGS_SECONDS:-480} + 90 ))}"; shift ;;
    *) echo "usage: $0 [--device cuda|cpu] [--dry|--dry-run] [--findings]" >&2; exit 2 ;;
  esac
done

PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  for candidate in .venv/bin/python python3; do
    if command -v "$candidate" >/dev/null 2>&1; then PY="$candidate"; break; fi
  done
fi
export PYTHONPATH="$PWD/toolkit${PYTHONPATH:+:$PYTHONPATH}"
export HF_HUB_OFFLINE=1 RAY_USAGE_STATS_ENABLED=0 PYTHONUNBUFFERED=1
export RECONBENCH_HOME="${RECONBENCH_HOME:-$(mktemp -d)}" RECONBENCH_CACHE="${RECONBENCH_CACHE:-$(mktemp -d)}"
ROWS="${ROWS:-pairwise lpips fid deepinversion gan zoo sweep}"
LOG=$(mktemp -d)

started=$(date +%s)
for row in $ROWS; do
  t0=$(date +%s)
  timeout "${ROW_TIMEOUT:-100}" "$PY" benchmarks/device_rows.py "$row" --device "$DEVICE" $DRY >"$LOG/$row.out" 2>"$LOG/$row.err"
  rc=$?
  echo "$rc $(( $(date +%s) - t0 ))" >"$LOG/$row.rc"
done

echo
echo "device check: $DEVICE${DRY:+ (dry: tiny sizes)}, $(date -u +%Y-%m-%dT%H:%MZ), $("$PY" -c 'import torch; print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA device")' 2>/dev/null || echo "torch not importable by $PY"), total $(( $(date +%s) - started )) s"
echo
echo "| check | status | s | result |"
echo "|---|---|---|---|"
failed=0
for row in $ROWS; do
  read -r rc secs <"$LOG/$row.rc"
  line=$(grep '^{' "$LOG/$row.out" | tail -1)
  if [ "$rc" = 0 ] && [ -n "$line" ]; then
    "$PY" -c 'import json, sys; r = json.loads(sys.argv[1]); print("| %s | %s | %s | %s |" % (r["row"], r["status"], sys.argv[2], r["result"]))' "$line" "$secs"
  else
    failed=$((failed + 1))
    if [ "$rc" = 124 ]; then why="timed out after ${ROW_TIMEOUT:-100} s"; else
      why=$(grep -v '^\s*$' "$LOG/$row.err" | tail -1 | tr '|' '/' | cut -c1-300); fi
    echo "| $row | error | $secs | ${why:-exit status $rc} |"
  fi
done
rm -rf "$LOG"
exit $(( failed > 0 ))
