"""core/io's atomic writes: all or nothing, with the modes a plain write gives (the umask's).

tempfile's 0600 files and 0700 folders made registry/sealed.json and every sealed.json a maintainer
wrote unreadable to anyone else on the machine (a non-root evaluator could not read the registry)."""

from __future__ import annotations

import os
import stat

import pytest

from reconbench.core.io import atomic_dir, atomic_path


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_a_file_written_atomically_has_the_umask_s_mode_and_a_failed_block_leaves_nothing(tmp_path, umask_022):
    target = tmp_path / "record.json"
    with atomic_path(target) as tmp:
        tmp.write_text("{}")
    assert target.read_text() == "{}" and stat.S_IMODE(target.stat().st_mode) == 0o644
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("interrupted")
    assert target.read_text() == "{}" and sorted(p.name for p in tmp_path.iterdir()) == ["record.json"]
    secret = tmp_path / "cache.key"
    with atomic_path(secret) as tmp:  # a block that makes its file private keeps it private
        tmp.write_text("k")
        os.chmod(tmp, 0o600)
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600


def test_arrays_saved_atomically_have_the_umask_s_mode(tmp_path, umask_022):
    """safetensors' save_file replaces the file it is given with a 0600 one: a published
    reconstructions file was private to its writer."""
    import numpy as np

    from reconbench.core.io import load_arrays, save_arrays

    target = tmp_path / "reconstructions.safetensors"
    save_arrays(target, {"images": np.zeros((2, 1, 4, 4), np.float32)})
    assert stat.S_IMODE(target.stat().st_mode) == 0o644 and load_arrays(target)["images"].shape == (2, 1, 4, 4)


def test_a_folder_made_atomically_has_the_umask_s_mode_and_is_never_overwritten(tmp_path, umask_022):
    target = tmp_path / "run"
    with atomic_dir(target) as tmp:
        (tmp / "result.json").write_text("{}")
    assert stat.S_IMODE(target.stat().st_mode) == 0o755 and (target / "result.json").is_file()
    with pytest.raises(FileExistsError, match="already exists"), atomic_dir(target):
        pass
    with pytest.raises(RuntimeError), atomic_dir(tmp_path / "other") as tmp:
        raise RuntimeError("interrupted")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
