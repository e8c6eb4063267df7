"""Shared parts of the GAN-prior attacks (Revealer, KEDMI, PLG-MI): networks, trainings,
augmentations and the prior cache."""
