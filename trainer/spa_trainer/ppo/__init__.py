"""PPO (docs/spa-ppo.md): the math, batches, critic, one update step, and the service around them."""
