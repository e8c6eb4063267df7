"""The evaluation pipeline, modality-neutral: evaluation (view -> attack -> metrics -> signed
result), preflight, and isolation (the attack's own process inside the OS sandbox)."""
