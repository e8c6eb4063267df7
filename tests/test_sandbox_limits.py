"""Hostile attacks at the sandbox's edges (issue 36): resource limits, the kernel surface, the
evaluator's descriptors, CI's workflow commands, a large query's effect on the evaluator's memory.

Each case starts one sandboxed attack process (tests/attacks/limits.py, surface.py) with small
limits, so that it reaches them in a second or two of CPU: the run ends with one line naming the
limit, and the evaluator goes on (the next case runs in the same process). Runs where bubblewrap is
installed on Linux; RECONBENCH_SANDBOX=bubblewrap (.ci/run) makes a missing one a failure.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest
import torch

from reconbench.image.attacks import AttackError, Progress
from reconbench.image.evaluation import attack_run
from reconbench.core.tracks import get_track
from reconbench.pipeline.isolation import limits as run_limits
from reconbench.pipeline.isolation import relay, sandbox, seccomp

ATTACKS = Path(__file__).parent / "attacks"
MiB = 1 << 20
REQUIRED = os.environ.get(sandbox.ENV_VAR) == "bubblewrap"
needs_bwrap = pytest.mark.skipif(
    not REQUIRED and (not sys.platform.startswith("linux") or shutil.which("bwrap") is None),
    reason="bubblewrap is not installed (Linux: apt-get install bubblewrap; .ci/run installs it)")
# Small limits, reached in a second or two: the interpreter and torch take ~0.8 GB of private memory
# (RLIMIT_DATA counts it) and a few CPU seconds to start.
SMALL = run_limits.Limits(memory=1536 * MiB, pids=48, cpu=30, wall=120, tmp=16 * MiB, shm=8 * MiB)


@pytest.fixture(autouse=True)
def _sandbox_required(monkeypatch):
    monkeypatch.setenv(sandbox.ENV_VAR, "bubblewrap")


@pytest.fixture(scope="module")
def track():
    return get_track("digits")


def _run(track, spec: str, config: dict, limits=SMALL):
    return attack_run(track, f"{ATTACKS / spec}", None, config=config, seed=0, device=torch.device("cpu"),
                      progress=Progress(), limits=limits)


def _reports(err: str) -> list[dict]:
    return [json.loads(line.split(" ", 1)[1]) for line in err.splitlines() if line.startswith("HOSTILE-REPORT ")]


def _cgroup_here() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    made = run_limits.Cgroup(SMALL)
    made.remove()
    return made.kind != "none"


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text and len(text) < 400, text
    return text


# --- limits ------------------------------------------------------------------------------------------

@needs_bwrap
@pytest.mark.parametrize("mode, size_mib, limit", [
    ("memory", 4096, "memory limit of 1536MiB"),
    ("tmp", 0, "/tmp size limit of 16MiB"),
    ("shm", 0, "/dev/shm size limit of 8MiB"),
    ("pids", 0, "task (pids) limit of 48"),
])
def test_each_limit_ends_the_run_with_one_line_naming_it(track, capfd, mode, size_mib, limit):
    with pytest.raises(AttackError) as caught:
        _run(track, "limits.py:Hog", {"mode": mode, "size_mib": size_mib})
    line = _one_line(caught.value)
    assert limit in line and "--limit" in line, line
    reports = _reports(capfd.readouterr().err)
    if mode in ("tmp", "shm"):  # the attack wrote up to the size and no further
        (report,) = reports
        assert report["written"] <= getattr(SMALL, mode), report
    if mode == "pids":
        assert all(r.get("forked", 0) < SMALL.pids for r in reports), reports
    assert list(Path("/proc").glob("*/cmdline")) and not _lingering("limits.py")  # the tree is gone


@pytest.mark.slow  # seconds of CPU each: the slow set (CI runs both sets)
@needs_bwrap
def test_cpu_and_wall_time_limits_end_the_run(track, capfd):
    """CPU first (the attack spins), then wall time (it sleeps): the evaluator's own clocks."""
    t0 = os.times()
    with pytest.raises(AttackError, match=r"the CPU-time limit of 6s was hit") as caught:
        _run(track, "limits.py:Hog", {"mode": "cpu"}, limits=run_limits.Limits(**{**vars(SMALL), "cpu": 6}))
    _one_line(caught.value)
    with pytest.raises(AttackError, match=r"the wall-time limit of 8s was hit"):
        _run(track, "limits.py:Hog", {"mode": "wall"}, limits=run_limits.Limits(**{**vars(SMALL), "wall": 8}))
    t1 = os.times()
    assert t1.children_user + t1.children_system - t0.children_user - t0.children_system < 15  # stopped near its limit


@pytest.mark.slow  # seconds of CPU each: the slow set (CI runs both sets)
@needs_bwrap
@pytest.mark.skipif(not _cgroup_here(), reason="no writable cgroup here (memory across the tree is then bounded per "
                                               "process only: docs/sandbox.md)")
def test_memory_across_the_tree_is_one_limit_where_a_cgroup_can_be_made(track, capfd):
    """Five processes each under the per-process limit, together over it: the cgroup's OOM kill ends the run."""
    with pytest.raises(AttackError, match=r"memory limit of 1536MiB was hit \(cgroup") as caught:
        _run(track, "limits.py:Hog", {"mode": "memory-tree", "size_mib": 320})
    _one_line(caught.value)


def _lingering(name: str) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if name.encode() in cmdline.read_bytes() and "pytest" not in cmdline.read_text(errors="replace"):
                found.append(str(cmdline))
        except OSError:
            continue
    return found


def test_limits_come_from_the_budget_and_are_only_raised():
    quick, default, paper = (run_limits.for_budget(b) for b in ("quick", "default", "paper"))
    for field in ("memory", "pids", "cpu", "wall", "tmp", "shm"):
        assert getattr(quick, field) <= getattr(default, field) <= getattr(paper, field)
    raised = run_limits.for_budget("default", run_limits.parse_overrides(["memory=64GiB", "wall=24h"]))
    assert raised.memory == 64 << 30 and raised.wall == 86400 and raised.pids == default.pids
    assert raised.record() == f"memory=64GiB pids={default.pids} cpu={default.cpu}s wall=86400s tmp=2GiB shm=512MiB"
    with pytest.raises(run_limits.LimitError, match="limits can only be raised"):
        run_limits.for_budget("default", {"memory": "1GiB"})
    with pytest.raises(run_limits.LimitError, match="unknown limit"):
        run_limits.for_budget("default", {"disk": "1GiB"})
    with pytest.raises(run_limits.LimitError, match="not a size"):
        run_limits.for_budget("default", {"memory": "lots"})


@pytest.mark.slow  # seconds of CPU each: the slow set (CI runs both sets)
@needs_bwrap
def test_the_result_records_the_limits_and_a_raised_one(tmp_path, capfd, signing_key):
    from reconbench.image.evaluation import evaluate
    from reconbench.image.results import verify_result_dir

    out = tmp_path / "out"
    evaluate(track_id="digits", attack_spec=f"{ATTACKS / 'surface.py'}:BigQuery", out=out, key_path=signing_key,
             config={"n": 10}, command="test", budget="default", limits={"memory": "12GiB"})
    recorded = verify_result_dir(out).payload.provenance.limits
    assert recorded == run_limits.for_budget("default", {"memory": "12GiB"}).record() and "memory=12GiB" in recorded


# --- the kernel surface, descriptors, workflow commands ----------------------------------------------

@needs_bwrap
def test_the_kernel_calls_and_socket_families_are_closed(track, capfd):
    _run(track, "surface.py:Surface", {})
    (report,) = _reports(capfd.readouterr().err)
    kernel = report["kernel"]
    assert kernel["pidfd_getfd"] in ("EPERM", "no pidfd"), kernel  # pid 1's descriptors stay its own
    for call in ("kcmp", "memfd_secret", "personality ADDR_NO_RANDOMIZE", "personality READ_IMPLIES_EXEC"):
        assert kernel[call] == "EPERM", (call, kernel)
    assert kernel["personality query"].startswith("ok")  # querying is harmless (and libraries do it)
    if platform.machine() == "x86_64":
        assert kernel["modify_ldt"] == "EPERM"
    for family in ("AF_NETLINK", "AF_VSOCK", "AF_PACKET", "AF_BLUETOOTH", "AF_ALG"):
        assert kernel[f"socket {family}"] == "EAFNOSUPPORT", (family, kernel)
    assert kernel["socketpair AF_NETLINK"] == "EAFNOSUPPORT"
    for family in ("AF_UNIX", "AF_INET", "AF_INET6"):  # the families a run uses: open (inside its own namespace)
        assert kernel[f"socket {family}"] == "ok", (family, kernel)
    # fds 1 and 2 are pipes the evaluator relays, not the evaluator's own stderr (here capfd's file)
    ours = os.fstat(2)
    for fd in ("stdout", "stderr"):
        assert report[fd]["fifo"] and report[fd]["link"].startswith("pipe:"), report[fd]
        assert (report[fd]["dev"], report[fd]["ino"]) != (ours.st_dev, ours.st_ino)


def test_the_filter_is_assembled_per_architecture():
    x86, arm = seccomp.program("x86_64"), seccomp.program("aarch64")
    assert x86 and arm and x86 != arm and len(x86) % 8 == 0
    assert seccomp.program("riscv64") is None


@needs_bwrap
def test_workflow_commands_in_the_attacks_output_are_neutralised(track, capfd):
    token = uuid.uuid4().hex
    run = _run(track, "surface.py:Commands", {"token": token})
    assert torch.count_nonzero(run.reconstruction.images) == 0  # the run itself went on
    err = capfd.readouterr().err
    relayed = [part for line in err.splitlines() for part in line.split("\r") if token in part]
    assert len(relayed) == 2 * 8, relayed  # stdout and stderr, each line (for "progress\r::error::", its 2nd part)
    for part in relayed:
        assert part.startswith("attack| ") and not relay.COMMAND.match(part), part


def test_the_relay_neutralises_commands_however_they_are_split():
    assert relay.neutralise(b"::error::x") == b"attack| ::error::x"
    assert relay.neutralise(b"\t ::add-mask::x") == b"attack| \t ::add-mask::x"
    assert relay.neutralise(b"ok\r##[error]x") == b"ok\rattack| ##[error]x"
    assert relay.neutralise(b"a line :: with colons") == b"a line :: with colons"
    r, w = os.pipe()
    with tempfile.TemporaryFile() as out:
        rel = relay.Relay(r, out.fileno())
        with os.fdopen(w, "wb") as f:
            f.write(b"x" * (relay.MAX_LINE - 1) + b"\n" + b"y" * relay.MAX_LINE + b"::error::split\n")
        rel.join()
        out.seek(0)
        lines = out.read().split(b"\n")
    assert lines[2] == b"attack| ::error::split"  # a command past the cap starts a piece of its own: checked too


def test_the_relay_writes_escape_sequences_out_and_caps_the_output():
    """Terminal escapes (clear the screen, set the title, OSC 52 to the clipboard, a C1 CSI, a bidi
    override) reach the evaluator's terminal as text; a carriage return and a tab stay. Past the cap
    the output is drained and counted, not written (the evaluator's log cannot be filled)."""
    assert (relay.neutralise(b"a\x1b[2J\x1b]0;t\x07\x1b]52;c;eA==\x07\xc2\x9b1A\xe2\x80\xae\x08\x00\xff\tb\r50%")
            == b"a\\x1b[2J\\x1b]0;t\\x07\\x1b]52;c;eA==\\x07\\x9b1A\\u202e\\x08\\x00\\xff\tb\r50%")
    assert relay.neutralise("é ✓".encode()) == "é ✓".encode()  # text is text
    r, w = os.pipe()
    with tempfile.TemporaryFile() as out:
        rel = relay.Relay(r, out.fileno(), cap=1000)
        with os.fdopen(w, "wb") as f:
            for _ in range(2000):
                f.write(b"z" * 99 + b"\n")
        rel.join()
        out.seek(0)
        shown = out.read()
    lines = shown.decode().splitlines()
    assert lines[:10] == ["z" * 99] * 10 and len(lines) == 11, lines[-3:]
    assert lines[-1] == "attack| ... 199,000 more bytes of the attack's output not shown (the relay shows at most 1,000 bytes a run)"


# --- a large query and the evaluator's memory --------------------------------------------------------

def _peak_rss_reset() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM (Linux 4.0+)


def _peak_rss() -> int:
    status = Path("/proc/self/status").read_text()
    return int(next(ln.split()[1] for ln in status.splitlines() if ln.startswith("VmHWM:"))) * 1024


@pytest.mark.slow  # seconds of CPU each: the slow set (CI runs both sets)
@needs_bwrap
def test_a_large_query_does_not_grow_the_evaluators_memory(track, capfd):
    """100,000 images in one query (26 MB of input; 1.3 GB of evaluator memory when a message was
    answered in one model call, benchmarks/bench_query_rss.py): answered in bounded batches, the
    evaluator's peak grows by about twice the 16 MiB message, whatever the query's size."""
    n = 100_000
    assert n <= track.query_budget
    _run(track, "surface.py:BigQuery", {"n": 1000})  # warm: the model's first batch, allocator pools
    _peak_rss_reset()
    before = _peak_rss()
    _run(track, "surface.py:BigQuery", {"n": n})
    grown = _peak_rss() - before
    (_, report) = _reports(capfd.readouterr().err)
    assert report == {"answered": n, "queries": n}
    assert grown < 120 * MiB, f"the evaluator's peak RSS grew by {grown / MiB:.0f} MiB for one query"


# --- the reproducer's key --------------------------------------------------------------------------

@pytest.mark.slow  # seconds of CPU each: the slow set (CI runs both sets)
@needs_bwrap
def test_reproduce_key_without_a_sandbox_refuses_before_the_attack_starts(tmp_path, monkeypatch):
    """An entry whose attack copies the reproducer's key (a canary) somewhere observable: without a
    sandbox, `reproduce --key` refuses before the attack starts, so neither file ever appears."""
    from submission_helpers import listed_reproducer

    from reconbench.core.signing import generate_key
    from reconbench.image.evaluation import evaluate
    from reconbench.reproduction.record import RecordError
    from reconbench.reproduction.sign import reproduce_entry
    from reconbench.submissions.submit import submit_result

    with listed_reproducer(tmp_path / "reproducers") as (key, _):
        started, drop = tmp_path / "started", tmp_path / "stolen.pem"
        config = {"key": str(key), "drop": str(drop), "started": str(started)}
        team_key, _ = generate_key(tmp_path / "team.pem")
        evaluate(track_id="digits", attack_spec=f"{ATTACKS / 'canary.py'}:KeyThief", key_path=team_key,
                 out=tmp_path / "result", config=config, command="test")
        assert not started.exists() and not drop.exists()  # in the sandbox, the host's paths are not there
        entry = submit_result(tmp_path / "result", "alpha", root=tmp_path / "submissions", key_path=team_key).entry
        for mode, path in (("none", os.environ["PATH"]), ("auto", str(tmp_path))):  # on purpose; no bwrap on PATH
            monkeypatch.setenv(sandbox.ENV_VAR, mode)
            monkeypatch.setenv("PATH", path)
            with pytest.raises(RecordError, match="there is none here .*nothing was run"):
                reproduce_entry(entry, key_path=key)
            assert not started.exists() and not drop.exists()



# --- the task limit of a non-root evaluator ------------------------------------------------------------

NOBODY = 65534


def _reachable_as_nobody(paths: list[Path], staging: Path) -> str:
    """Shell lines, run as root in a private mount namespace, that make `paths` reachable by another
    user where a parent folder is not (an interpreter under a private home, as pyenv's under /root):
    each blocking folder gets a tmpfs of its own in that namespace, with the needed paths bound back."""
    lines = []
    blocked: dict[Path, list[Path]] = {}
    for path in paths:
        for parent in reversed(path.parents[:-1]):  # from the top, "/" excluded
            if not os.stat(parent).st_mode & 0o001:
                blocked.setdefault(parent, []).append(path)
                break
    for i, (folder, inside) in enumerate(blocked.items()):
        for j, path in enumerate(inside):
            lines += [f"mkdir -p {staging}/{i}-{j}", f"mount --bind {path} {staging}/{i}-{j}"]
        lines.append(f"mount -t tmpfs -o mode=0755 tmpfs {folder}")
        for j, path in enumerate(inside):
            lines += [f"mkdir -p {path}", f"mount --bind {staging}/{i}-{j} {path}"]
    return "\n".join(lines)


@needs_bwrap
def test_the_task_limit_binds_a_non_root_evaluator():
    """RLIMIT_NPROC does not bind uid 0 (the kernel exempts it, inside the sandbox's user namespace too,
    whose uid 0 is the host's), so a root evaluator relies on its cgroup's pids.max and its own count.
    As a non-root user (uid 65534, no cgroup of its own) the fork-many attack's fork fails at the limit
    (RLIMIT_NPROC, counted per user namespace) and the run ends with its one line."""
    if os.geteuid() != 0:
        pytest.skip("already a non-root user: test_each_limit_ends_the_run_with_one_line_naming_it[pids] is this test")
    missing = [tool for tool in ("unshare", "setpriv") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not installed (util-linux): cannot become uid {NOBODY} here")
    drop = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    probe = subprocess.run([*drop, shutil.which("bwrap"), "--unshare-user", "--ro-bind", "/", "/", "true"],
                           capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        pytest.skip(f"bubblewrap cannot start as a non-root user here ({probe.stderr.strip()[:200]}): "
                    "unprivileged user namespaces are off")
    repo = Path(__file__).resolve().parents[1]
    scratch = Path(tempfile.mkdtemp(prefix="reconbench-nobody-"))  # not pytest's tmp_path: its parents are private
    home = scratch / "home"
    home.mkdir()
    os.chown(home, NOBODY, NOBODY)
    os.chmod(scratch, 0o755)
    needed = sorted({Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), Path(sys.executable).resolve().parent,
                     repo, Path(torch.__file__).resolve().parents[1]})
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "RECONBENCH_SANDBOX": "bubblewrap",
           "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(repo / "toolkit")}
    run = [*drop, "env", "-i", *(f"{k}={v}" for k, v in env.items()), sys.executable,
           str(repo / "tests" / "pids_as_nobody.py"), str(repo / "tests"), f"{ATTACKS / 'limits.py'}:Hog", str(SMALL.pids)]
    script = _reachable_as_nobody(needed, scratch) + "\n" + " ".join(shlex.quote(a) for a in run)
    try:
        proc = subprocess.run(["unshare", "-m", "sh", "-ec", script], capture_output=True, text=True, timeout=300)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    out = proc.stdout.strip().splitlines()
    assert out and out[-1].startswith("STOPPED "), proc.stdout[-2000:] + proc.stderr[-2000:]
    line = out[-1].removeprefix("STOPPED ")
    assert "\n" not in line and f"task (pids) limit of {SMALL.pids} was hit" in line and "--limit pids=" in line
    # The attack's own report, when it is relayed before the evaluator's count stops the tree in the same
    # tick (most runs): its fork was refused with EAGAIN below the limit, RLIMIT_NPROC binding a non-root uid.
    for report in _reports(proc.stderr):
        assert report["forked"] < SMALL.pids and "Resource temporarily unavailable" in report["refused"], report
