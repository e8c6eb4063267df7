"""The image modality: its data (data/), target and evaluation models (models/), attacks (attacks/),
metrics (metrics/), the stolen surrogate (surrogate/), the view an attack gets (knowledge, dynamic),
the track files (track_files), the result file (results), its run (evaluation), and what the core
calls (plugin.py, reproduce.py, board.py). Its zoo is reconbench.zoo; what it shares with text
(the Hub client, queries, the result envelope, the membership gap) is in reconbench.core.
"""
