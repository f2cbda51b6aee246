"""`python -m spa_trainer.sft`: world-model SFT from the command line (spa_trainer.sft.train)."""

import sys

from .train import main

sys.exit(main(sys.argv[1:]))
