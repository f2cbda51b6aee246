"""What SFT and PPO share: atomic checkpoints and data-parallel ranks under torchrun."""
