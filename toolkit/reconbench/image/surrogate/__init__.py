"""Black-box attacks through a stolen white-box surrogate (the SoK's Sec. 7 route).

The evaluator steals a surrogate of the target through the scenario's counted query function
(`dfme`: Data-Free Model Extraction; `aux`: the attacker's aux images labelled by queries), then
runs a white-box attack on a white-box view of the surrogate. The result records the black-box
cell actually used, every query spent, and the surrogate's agreement with the target on the
track's test split (computed by the evaluator; the attacker never sees that split).
"""

from reconbench.image.surrogate.route import SURROGATES, Stolen, agreement, steal, surrogate_view, white_box_cell

__all__ = ["SURROGATES", "Stolen", "agreement", "steal", "surrogate_view", "white_box_cell"]
