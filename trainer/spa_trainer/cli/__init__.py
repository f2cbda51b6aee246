"""How the trainer's commands read their flags and end on a bad one (one line, exit 2)."""
