"""Where the jobs' records come from and go: `jsonl:`/`kafka:` sources, dead letters, PolicyUpdates."""
