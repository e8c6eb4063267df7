"""Datasets as uint8 arrays (N, C, H, W) with int64 labels, and the track splits."""

from reconbench.image.data.arrays import ArraySet, TrackSplits

__all__ = ["ArraySet", "TrackSplits"]
