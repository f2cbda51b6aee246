"""`python -m spa_trainer.export`: see artifact.py."""

import sys

from .artifact import main

sys.exit(main(sys.argv[1:]))
