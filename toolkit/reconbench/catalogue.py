"""The attack catalogue: what each built-in attack is, without importing its code (or torch).

`recon-submit attacks` and the leaderboard read this; tests/test_catalogue.py checks every row
against the real class (name, paper, family, scenarios), so the two cannot drift apart.
Whoever adds an attack to reconbench.attacks adds its row here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AttackInfo:
    name: str
    family: str  # optimization, training or analysis (SoK §3)
    scenarios: tuple[str, ...]  # training/access/data cells it runs in
    paper: str
    target: str  # module:Class, imported only when the attack runs

    def load(self) -> type:
        import importlib

        module, cls = self.target.split(":")
        return getattr(importlib.import_module(module), cls)


CATALOGUE: tuple[AttackInfo, ...] = (
    AttackInfo("mi-face", "optimization", ("static/white-box/none",),
               "Fredrikson et al., Model Inversion Attacks that Exploit Confidence Information, CCS 2015",
               "reconbench.attacks.mi_face:MIFace"),
    AttackInfo("deepdream", "optimization", ("static/white-box/none",),
               "Mordvintsev, Olah, Tyka, Inceptionism: Going Deeper into Neural Networks, Google AI blog 2015",
               "reconbench.attacks.deep_dream:DeepDream"),
    AttackInfo("deepinversion", "optimization", ("static/white-box/none",),
               "Yin et al., Dreaming to Distill: Data-free Knowledge Transfer via DeepInversion, CVPR 2020",
               "reconbench.attacks.deep_inversion:DeepInversion"),
    AttackInfo("deep-leakage", "optimization", ("dynamic/white-box/none",),
               "Zhu, Liu, Han, Deep Leakage from Gradients, NeurIPS 2019",
               "reconbench.attacks.deep_leakage:DeepLeakage"),
    AttackInfo("inv-alignment", "training", ("static/black-box/similar", "static/black-box/same"),
               "Yang, Zhang, Chang, Liang, Neural Network Inversion in Adversarial Setting via Background "
               "Knowledge Alignment, CCS 2019",
               "reconbench.attacks.inv_alignment:InvAlignment"),
    AttackInfo("updates-leak", "training", ("dynamic/black-box/same",),
               "Salem et al., Updates-Leak: Data Set Inference and Reconstruction Attacks in Online Learning, "
               "USENIX Security 2020",
               "reconbench.attacks.updates_leak:UpdatesLeak"),
    AttackInfo("bias-rec", "analysis", ("static/white-box/none",),
               "Haim et al., Reconstructing Training Data from Trained Neural Networks, NeurIPS 2022 "
               "(multi-class: Buzaglo et al., NeurIPS 2023)",
               "reconbench.attacks.bias_rec:BiasRec"),
    AttackInfo("revealer", "optimization", ("static/white-box/same", "static/white-box/similar"),
               "Zhang et al., The Secret Revealer: Generative Model-Inversion Attacks Against Deep Neural Networks, "
               "CVPR 2020",
               "reconbench.attacks.revealer:Revealer"),
    AttackInfo("kedmi", "optimization", ("static/white-box/same", "static/white-box/similar"),
               "Chen et al., Knowledge-Enriched Distributional Model Inversion Attacks, ICCV 2021",
               "reconbench.attacks.kedmi:KEDMI"),
    AttackInfo("plg-mi", "optimization", ("static/white-box/same", "static/white-box/similar"),
               "Yuan et al., Pseudo Label-Guided Model Inversion Attack via Conditional Generative Adversarial "
               "Network, AAAI 2023",
               "reconbench.attacks.plg_mi:PLGMI"),
)

BY_NAME: dict[str, AttackInfo] = {a.name: a for a in CATALOGUE}
