"""One-off studies run as commands (`python -m spa_trainer.experiments.<name>`), not part of a run."""
