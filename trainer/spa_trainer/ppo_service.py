"""`python -m spa_trainer.ppo_service`: the PPO service's command (spa_trainer.ppo.service)."""

import sys

from .ppo.service import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
