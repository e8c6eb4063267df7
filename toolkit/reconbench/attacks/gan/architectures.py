"""The GAN pairs each attack builds, by image shape: the papers' 64x64 face networks, and
scaled-down pairs for 8x8 single-channel digits (same layer types, fewer stages).

64x64 (official): GMI/KEDMI generator z=100 width 64 (512x4x4 -> 3x64x64); GMI critic width 64
with 4 stride-2 stages and a k4 head; KEDMI discriminator 64/128/256 k5 stages + 256 k3 stage
(4,096 features) + MBD; PLG-MI generator z=128 nf=64 bottom 4 (1024 -> 64 channels) and SN
projection discriminator nf=64 with blocks 128, 256, 512, 1024 (all downsampling).
8x8 (after shared/GAN-ATTACKS-DIGEST.md sections 2.6, 3.5, 4.5, shapes checked): generator 64x2x2 ->
1x8x8 (the digest's 128 halved: its 5x5 transposed conv dominated the CPU time); critic 32, 64 and a k2 head; KEDMI D 32 (k5) + 64 (k3) = 256 features + MBD; PLG-MI G nf=16
bottom 2 (64 -> 16), D nf=16 with blocks (32, down), (64, not down) (the digest's nf=32 halved for CPU time). Latent sizes stay official.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from torch import nn

from reconbench.attacks.base import AttackError
from reconbench.attacks.gan.dcgan import DCGenerator, KPlus1Discriminator, WGANCritic
from reconbench.attacks.gan.resnet import CondResNetGenerator, SNProjectionDiscriminator


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


def architecture_for(input_shape: tuple[int, int, int]) -> Architecture:
    channels, height, width = input_shape
    if height == width == 64:
        return paper_64(channels)
    if height == width == 8:
        return digits_8(channels)
    raise AttackError(f"the GAN attacks have architectures for 64x64 and 8x8 images, not {height}x{width}")
