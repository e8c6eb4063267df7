"""The image modality's plug-in (plugin.py: the hooks reconbench.modalities calls) and its
reproduction (reproduce.py).

The image modality's own modules (data/, models/, zoo/, attacks/, metrics/, knowledge.py,
track_files.py, results.py, ...) still sit at the package root, where the image pipeline grew up;
docs/architecture.md, "Modalities", lists them.
"""
