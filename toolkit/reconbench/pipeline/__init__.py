"""The run machinery both modalities share: preflight.py (the device, the out folder and the weights
checked before a run spends minutes) and isolation/ (an attack in its own process inside the OS
sandbox, holding only its view). Each modality's run is its own: image/evaluation.py,
text/evaluation.py."""
