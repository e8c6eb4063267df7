"""The attack catalogue: what each built-in attack is, without importing its code (or torch).

`recon-submit attacks` and the leaderboard read this; tests/test_catalogue.py checks every row
against the real class (name, paper, family, scenarios, version, module:class), so the two cannot
drift apart. Whoever adds an attack to reconbench.image.attacks adds its row here.
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
    summary: str  # one sentence for the site's attack page
    version: str = "1"
    modality: str = "image"  # "text": a reconbench.text.attacks class (TEXT_CATALOGUE), run on text tracks
    role: str = ""  # text attacks: the track's target model it attacks ("generator" or "embedder")

    @property
    def cells(self) -> tuple[str, ...]:
        """Its taxonomy cells as listed; an attack on one of a track's target models names that model."""
        return (*self.scenarios, f"(text tracks: the {self.role})") if self.role else self.scenarios

    def load(self) -> type:
        import importlib

        module, cls = self.target.split(":")
        return getattr(importlib.import_module(module), cls)


CATALOGUE: tuple[AttackInfo, ...] = (
    AttackInfo(
        "mi-face", "optimization", ("static/white-box/none",),
        "Fredrikson et al., Model Inversion Attacks that Exploit Confidence Information, CCS 2015",
        "reconbench.image.attacks.mi_face:MIFace",
        "Gradient descent on the input to maximise the target's confidence in each class (Algorithm 1).",
    ),
    AttackInfo(
        "deepdream", "optimization", ("static/white-box/none",),
        "Mordvintsev, Olah, Tyka, Inceptionism: Going Deeper into Neural Networks, Google AI blog 2015",
        "reconbench.image.attacks.deep_dream:DeepDream",
        "Optimises the input for the wanted class under an image prior (total variation and l2), "
        "with jitter, as the SoK benchmarks it.", version="2",
    ),
    AttackInfo(
        "deepinversion", "optimization", ("static/white-box/none",),
        "Yin et al., Dreaming to Distill: Data-free Knowledge Transfer via DeepInversion, CVPR 2020",
        "reconbench.image.attacks.deep_inversion:DeepInversion",
        "DeepDream plus matching the target's BatchNorm statistics at every layer.",
    ),
    AttackInfo(
        "deep-leakage", "optimization", ("dynamic/white-box/none",),
        "Zhu, Liu, Han, Deep Leakage from Gradients, NeurIPS 2019",
        "reconbench.image.attacks.deep_leakage:DeepLeakage",
        "Recovers a batch of update images and labels by matching the gradients they produce (L-BFGS).",
    ),
    AttackInfo(
        "inv-alignment", "training", ("static/black-box/similar", "static/black-box/same"),
        "Yang, Zhang, Chang, Liang, Neural Network Inversion in Adversarial Setting via Background "
        "Knowledge Alignment, CCS 2019",
        "reconbench.image.attacks.inv_alignment:InvAlignment",
        "Trains a decoder from the target's posteriors on auxiliary data back to images, then decodes.",
    ),
    AttackInfo(
        "updates-leak", "training", ("dynamic/black-box/same",),
        "Salem et al., Updates-Leak: Data Set Inference and Reconstruction Attacks in Online Learning, "
        "USENIX Security 2020",
        "reconbench.image.attacks.updates_leak:UpdatesLeak",
        "Learns, on shadow models, a generator from the change of posteriors before and after an update "
        "to the update set's images.", version="2",
    ),
    AttackInfo(
        "bias-rec", "analysis", ("static/white-box/none",),
        "Haim et al., Reconstructing Training Data from Trained Neural Networks, NeurIPS 2022 "
        "(multi-class: Buzaglo et al., NeurIPS 2023)",
        "reconbench.image.attacks.bias_rec:BiasRec",
        "Finds training points from the KKT conditions of the implicit bias of gradient descent "
        "on homogeneous networks.",
    ),
    AttackInfo(
        "revealer", "optimization", ("static/white-box/same", "static/white-box/similar"),
        "Zhang et al., The Secret Revealer: Generative Model-Inversion Attacks Against Deep Neural Networks, "
        "CVPR 2020",
        "reconbench.image.attacks.revealer:Revealer",
        "Searches the latent space of a GAN trained on public data for images the target classifies with confidence.",
    ),
    AttackInfo(
        "kedmi", "optimization", ("static/white-box/same", "static/white-box/similar"),
        "Chen et al., Knowledge-Enriched Distributional Model Inversion Attacks, ICCV 2021",
        "reconbench.image.attacks.kedmi:KEDMI",
        "Learns a distribution over a target-aware GAN's latent space for each class instead of single points.",
    ),
    AttackInfo(
        "plg-mi", "optimization", ("static/white-box/same", "static/white-box/similar"),
        "Yuan et al., Pseudo Label-Guided Model Inversion Attack via Conditional Generative Adversarial "
        "Network, AAAI 2023",
        "reconbench.image.attacks.plg_mi:PLGMI",
        "Trains a conditional GAN on public data pseudo-labelled by the target, then optimises its latent per class.",
    ),
)

BY_NAME: dict[str, AttackInfo] = {a.name: a for a in CATALOGUE}

# Text attacks (the SoK's App. B) are listed apart: they run on text tracks only, through
# reconbench.text.attacks (registered-only), and BY_NAME stays the image attacks' registry.
TEXT_CATALOGUE: tuple[AttackInfo, ...] = (
    AttackInfo(
        "complete", "extraction", ("static/black-box/none",),
        "Carlini et al., Extracting Training Data from Large Language Models, USENIX Security 2021 "
        "(first-three-words prompts as in Wen et al., CCS 2024, and the SoK's App. B)",
        "reconbench.text.attacks.complete:Complete",
        "Prompts the target language model with the first three words of each target text and keeps its "
        "greedy completion.", modality="text", role="generator",
    ),
    AttackInfo(
        "vec2text", "training", ("static/black-box/same",),
        "Morris et al., Text Embeddings Reveal (Almost) As Much As Text, EMNLP 2023",
        "reconbench.text.attacks.vec2text:Vec2Text",
        "Trains a T5 inversion model and a corrector on auxiliary texts embedded through the target embedder, "
        "then inverts the leaked target embeddings with a few correction steps.", modality="text", role="embedder",
    ),
)
TEXT_BY_NAME: dict[str, AttackInfo] = {a.name: a for a in TEXT_CATALOGUE}
