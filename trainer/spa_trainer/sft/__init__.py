"""World-model SFT (docs/spa-sft.md): `python -m spa_trainer.sft`."""
