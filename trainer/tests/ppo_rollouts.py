"""Small Rollout records (schemas/Rollout.avsc shape) for the PPO tests."""

from __future__ import annotations

from typing import Any

SYSTEM = "You're a helpful assistant. "
USER_1 = "Turn 1:\nState:\n######\n#_P_O#\n######\nYou have 10 actions left."
USER_2 = "Reward:\n-0.1\n\nTurn 2:\nState:\n######\n#__PO#\n######\nYou have 9 actions left."


def rollout(
    trajectory_id: str,
    group_id: str,
    answers: list[str],
    turn_rewards: list[float],
    penalty: float = 0.0,
    success: bool = False,
    policy_version: int = 0,
) -> dict[str, Any]:
    """A base-mode episode with one assistant message per answer (two turns at most)."""
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER_1}]
    for turn, answer in enumerate(answers):
        if turn == 1:
            messages.append({"role": "user", "content": USER_2})
        messages.append({"role": "assistant", "content": f"<think>go</think><answer>{answer}</answer>"})
    return {
        "trajectory_id": trajectory_id,
        "group_id": group_id,
        "env": "sokoban",
        "seed": 10000,
        "policy_version": policy_version,
        "messages": messages,
        "turn_rewards": turn_rewards,
        "penalty": penalty,
        "score": sum(turn_rewards) + penalty,
        "success": success,
        "num_turns": len(answers),
        "created_at": 0,
    }
