"""The target-model zoo: datasets prepared from their public sources, target models trained by
recorded recipes (and the SoK's variants), published to the Hugging Face Hub and pinned in the
tracks registry. See docs/zoo.md for the maintainer's recipe.

  datasets.py / sources.py / prepare.py   data: sources -> nested, hash-pinned splits
  recipes.py / variants.py / training.py  training: hyperparameters, SoK §7 variants, the loop
  targets.py                              one track's training run -> model.safetensors + config.json
  grid.py                                 track ids, the SoK grid, registry entries
  cards.py / publish.py                   model and dataset cards, Hub upload, registry update
  loading.py                              pinned download of a published track's files
"""


class ZooError(ValueError):
    """A zoo command that cannot run: unknown track or dataset, missing or mismatched local files."""
