"""The image modality: its data (data/), target and evaluation models (models/), attacks (attacks/),
metrics (metrics/), the stolen surrogate (surrogate/), the view an attack gets (knowledge, dynamic,
queries), the track files and Hub client (track_files, hub), the result file (results), and the
plug-in the core calls (plugin.py) with its reproduction (reproduce.py). Its zoo is reconbench.zoo.
"""
