"""tests/attacks/carried.py with carried images, as one own attack folder (the hostile carried-data attacks of
tests/test_sealed.py and tests/test_sealed_run.py): the images LZMA-packed into carried_part<i>.py, imported by
carried_data.py, so every file of the folder is imported and the folder is exactly the attack's source."""

from __future__ import annotations

import base64
import lzma
import shutil
from pathlib import Path

import numpy as np

ATTACKS = Path(__file__).parent / "attacks"


def write_carried_attack(folder: Path, images: np.ndarray, labels: np.ndarray, per_file: int = 100) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(ATTACKS / "carried.py", folder / "carried.py")
    names = []
    for i, lo in enumerate(range(0, len(images), per_file)):
        im, lab = images[lo:lo + per_file], labels[lo:lo + per_file].astype(np.int64)
        data = base64.b64encode(lzma.compress(im.tobytes() + lab.tobytes(), preset=9)).decode()
        (folder / f"carried_part{i}.py").write_text(f'COUNT = {len(im)}\nDATA = "{data}"\n')
        names.append(f"carried_part{i}")
    (folder / "carried_data.py").write_text("".join(f"import {n}\n" for n in names) + f"PARTS = [{', '.join(names)}]\n")
