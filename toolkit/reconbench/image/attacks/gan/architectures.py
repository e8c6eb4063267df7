"""The GAN pairs each attack builds, by image shape: the papers' 64x64 face networks, and
scaled-down pairs for 8x8 single-channel digits (same layer types, fewer stages).

64x64 (official): GMI/KEDMI generator z=100 width 64 (512x4x4 -> 3x64x64); GMI critic width 64
with 4 stride-2 stages and a k4 head; KEDMI discriminator 64/128/256 k5 stages + 256 k3 stage
(4,096 features) + MBD; PLG-MI generator z=128 nf=64 bottom 4 (1024 -> 64 channels) and SN
projection discriminator nf=64 with blocks 128, 256, 512, 1024 (all downsampling).
8x8 (after shared/GAN-ATTACKS-DIGEST.md sections 2.6, 3.5, 4.5, shapes checked): generator 64x2x2 ->
1x8x8 (the digest's 128 halved: its 5x5 transposed conv dominated the CPU time); critic 32, 64 and a k2 head; KEDMI D 32 (k5) + 64 (k3) = 256 features + MBD; PLG-MI G nf=16
bottom 2 (64 -> 16), D nf=16 with blocks (32, down), (64, not down) (the digest's nf=32 halved for CPU time). Latent sizes stay official.
32x32 (the Fashion-MNIST tracks, zero-padded 28x28): GMI's own MNIST pair, GMI-Attack@dac39bc
MNIST/generator.py GeneratorMNIST (z 100, dim 64: Linear to 256x4x4, ConvT to 128x8x8, 64x16x16,
1x32x32, sigmoid) and MNIST/discri.py DGWGAN32 (64 -> 128 -> 256 k5 s2, k4 head); KEDMI (no MNIST
code) with the same widths: 64, 128 (k5) and 256 (k3) stages to 256x4x4 = 4,096 features as at
64x64; PLG-MI (no MNIST code): G bottom 4 with 3 up-blocks and D blocks 128, 256, 512 (all down,
to 2x2), at nf 32 instead of 64 (a ResNet cGAN step at nf 64 costs seconds on a 2-core CPU).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from torch import nn

from reconbench.image.attacks.base import AttackError
from reconbench.image.attacks.gan.dcgan import DCGenerator, KPlus1Discriminator, WGANCritic
from reconbench.image.attacks.gan.resnet import CondResNetGenerator, SNProjectionDiscriminator


@dataclass(frozen=True)
class Architecture:
    name: str
    channels: int
    size: int
    flip: bool  # horizontal flips are a valid augmentation (faces), not for digits (a flipped 2 is not a 2)
    # GMI / KEDMI generator and GMI critic
    dc_width: int
    dc_bottom: int
    dc_stages: int
    critic_width: int
    critic_kernel: int
    # KEDMI discriminator
    kd_k5: tuple[int, ...]
    kd_k3: int
    # PLG-MI cGAN
    res_width: int
    res_bottom: int
    res_stages: int
    sn_width: int
    sn_blocks: tuple[tuple[int, bool], ...]
    z_dim: int = 100  # GMI/KEDMI (celeba.json "z_dim": 100)
    z_dim_cond: int = 128  # PLG-MI (reconstruct.py --gen_dim_z default 128)

    def describe(self) -> dict:
        return asdict(self)

    def thinner(self, div: int) -> "Architecture":
        """Every channel count divided by `div` (the attacks' gan_width_div option; 1 = as specified)."""
        if div == 1:
            return self
        if div < 1 or any(w % div for w in (self.dc_width, self.critic_width, self.kd_k3, self.res_width,
                                           self.sn_width, *self.kd_k5, *(w for w, _ in self.sn_blocks))):
            raise AttackError(f"gan_width_div {div} does not divide the {self.name} GAN's channel counts")
        return replace(self, name=f"{self.name}/{div}", dc_width=self.dc_width // div,
                       critic_width=self.critic_width // div, kd_k5=tuple(w // div for w in self.kd_k5),
                       kd_k3=self.kd_k3 // div, res_width=self.res_width // div, sn_width=self.sn_width // div,
                       sn_blocks=tuple((w // div, down) for w, down in self.sn_blocks))

    def generator(self) -> nn.Module:
        return DCGenerator(self.z_dim, self.channels, self.dc_width, self.dc_bottom, self.dc_stages)

    def critic(self) -> nn.Module:
        return WGANCritic(self.channels, self.critic_width, self.dc_stages, self.critic_kernel)

    def kplus1(self, num_classes: int) -> nn.Module:
        feature_size = self.size // 2 ** (len(self.kd_k5) + 1)
        return KPlus1Discriminator(self.channels, self.kd_k5, self.kd_k3, num_classes, feature_size)

    def cond_generator(self, num_classes: int) -> nn.Module:
        return CondResNetGenerator(self.z_dim_cond, self.channels, self.res_width, self.res_bottom, self.res_stages, num_classes)

    def projection_discriminator(self, num_classes: int) -> nn.Module:
        return SNProjectionDiscriminator(self.channels, self.sn_width, self.sn_blocks, num_classes)


def paper_64(channels: int = 3) -> Architecture:
    return Architecture(
        name="paper-64", channels=channels, size=64, flip=True,
        dc_width=64, dc_bottom=4, dc_stages=4, critic_width=64, critic_kernel=4,
        kd_k5=(64, 128, 256), kd_k3=256,
        res_width=64, res_bottom=4, res_stages=4,
        sn_width=64, sn_blocks=((128, True), (256, True), (512, True), (1024, True)),
    )


def digits_8(channels: int = 1) -> Architecture:
    return Architecture(
        name="digits-8", channels=channels, size=8, flip=False,
        dc_width=32, dc_bottom=2, dc_stages=2, critic_width=32, critic_kernel=2,
        kd_k5=(32,), kd_k3=64,
        res_width=16, res_bottom=2, res_stages=2,
        sn_width=16, sn_blocks=((32, True), (64, False)),
    )


def mnist_32(channels: int = 1) -> Architecture:
    return Architecture(
        name="mnist-32", channels=channels, size=32, flip=False,
        dc_width=64, dc_bottom=4, dc_stages=3, critic_width=64, critic_kernel=4,
        kd_k5=(64, 128), kd_k3=256,
        res_width=32, res_bottom=4, res_stages=3,
        sn_width=32, sn_blocks=((64, True), (128, True), (256, True)),
    )


def architecture_for(input_shape: tuple[int, int, int], width_div: int = 1) -> Architecture:
    channels, height, width = input_shape
    if height == width == 64:
        return paper_64(channels).thinner(width_div)
    if height == width == 32:
        return mnist_32(channels).thinner(width_div)
    if height == width == 8:
        return digits_8(channels).thinner(width_div)
    raise AttackError(f"the GAN attacks have architectures for 64x64, 32x32 and 8x8 images, not {height}x{width}")
