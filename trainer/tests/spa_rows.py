"""The Sokoban seed-10000 trajectory of docs/spa-testvectors.md#sft-rows as SftRows (shared test data)."""

from __future__ import annotations

from spa_trainer.data.sft_rows import SftRow
from spa_trainer.models import spa_text
from spa_trainer.models.tiny_corpus import SOKOBAN_ACTIONS, _prefix, _turn

S0 = (
    "######\n#O####\n#__###\n#X_###\n#_P_##\n######\n"
    "Player (P) is at (4,2); box (X) is at (3,1); target (O) is at (1,1)."
)
S1 = (
    "######\n#O####\n#X_###\n#P_###\n#___##\n######\n"
    "Player (P) is at (3,1); box (X) is at (2,1); target (O) is at (1,1)."
)
# SPA's coordinate line for the solved state is unknown; this is our choice (docs/spa-prompts.md#states).
S2 = (
    "######\n#√####\n#P_###\n#__###\n#___##\n######\n"
    "Player (P) is at (2,1); box (X) is at (1,1); target (O) is at (1,1)."
)
PREFIX = _prefix(spa_text.SOKOBAN_WM, spa_text.SOKOBAN_VOCAB, SOKOBAN_ACTIONS)
USER_1 = PREFIX + _turn(1, S0, 10, spa_text.FORMAT_PROMPT_WM)
USER_2 = "Reward:\n-0.2\n" + _turn(2, S1, 8, spa_text.FORMAT_PROMPT_WM)
RESPONSE_1 = (
    f"<think> <observation>{S0}</observation> The box is up-left. Go Left, then push Up. "
    f"<prediction>{S1}</prediction></think><answer>Left || Up</answer>"
)
RESPONSE_2 = (
    f"<think> <observation>{S1}</observation> Push the box up onto the target. "
    f"<prediction>{S2}</prediction></think><answer>Up</answer>"
)


def row_dict(turn: int) -> dict[str, object]:
    """SftRow JSON for turn 1 or 2 (docs/spa-testvectors.md#sft-rows)."""
    system = {"role": "system", "content": spa_text.SYSTEM_MESSAGE}
    if turn == 1:
        prompt = [system, {"role": "user", "content": USER_1}]
        response = RESPONSE_1
    else:
        prompt = [
            system,
            {"role": "user", "content": USER_1},
            {"role": "assistant", "content": RESPONSE_1},
            {"role": "user", "content": USER_2},
        ]
        response = RESPONSE_2
    return {
        "trajectory_id": "sokoban-10000-0",
        "turn": turn,
        "data_source": "sokoban",
        "prompt": prompt,
        "response": response,
        "ability": "bfs",
        "reward_model": "{}",
        "extra_info": "{}",
    }


def row(turn: int) -> SftRow:
    """Parsed SftRow for turn 1 or 2."""
    return SftRow.from_dict(row_dict(turn))
