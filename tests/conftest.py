"""Shared fixtures. Hub fixtures: the logic lives in tests/hubserver.py."""

import pytest

from hubserver import point_huggingface_hub_at, serving


@pytest.fixture(autouse=True, scope="session")
def _hub_offline_by_default(tmp_path_factory):
    """No test may reach the Internet: huggingface_hub is offline, with an empty private cache,
    and its endpoint is a closed local port; only the `hub_server` fixture turns it back on."""
    with pytest.MonkeyPatch.context() as mp:
        point_huggingface_hub_at(mp, endpoint="http://127.0.0.1:9", offline=True,
                                 home=tmp_path_factory.mktemp("hf-home"))
        yield


@pytest.fixture
def hub_server(tmp_path, monkeypatch):
    """A Hub-compatible server on 127.0.0.1 with HF_ENDPOINT pointing at it (see hubserver.py)."""
    with serving(tmp_path, monkeypatch) as server:
        yield server


@pytest.fixture(autouse=True, scope="session")
def _private_toolkit_home(tmp_path_factory):
    """Keys and feature caches of the tests never touch the user's ~/.config or ~/.cache."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RECONBENCH_HOME", str(tmp_path_factory.mktemp("reconbench-home")))
        mp.setenv("RECONBENCH_CACHE", str(tmp_path_factory.mktemp("reconbench-cache")))
        yield


@pytest.fixture(scope="session")
def signing_key(tmp_path_factory):
    """A fresh ed25519 key file for tests that sign results."""
    from reconbench.core.signing import generate_key

    path, _ = generate_key(tmp_path_factory.mktemp("keys") / "test.pem")
    return path


@pytest.fixture(scope="module")
def single_torch_thread():
    """Opt in per module (pytestmark = pytest.mark.usefixtures("single_torch_thread")): the metric
    tests run many small tensor ops, where torch's thread pool costs more than it gains."""
    from reconbench.core.threads import one_torch_thread

    with one_torch_thread():
        yield


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """pytest-playwright launches Debian's Chromium (no browser download; .ci/run installs it)."""
    return {**browser_type_launch_args, "executable_path": "/usr/bin/chromium",
            "args": ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]}


def pytest_configure(config):
    """Every half minute, a line with the run's progress and an ETA (tests/progress_eta.py)."""
    from progress_eta import register

    register(config)
