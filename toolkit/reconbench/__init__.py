"""ReconBench: benchmark, submission toolkit and leaderboard for data reconstruction attacks."""

__version__ = "0.1.0"
