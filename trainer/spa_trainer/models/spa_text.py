"""SPA's fixed prompt strings, used as tokenizer-training text for the `tiny` model.

The TypeScript side owns prompt assembly (docs/spa-prompts.md); these copies only seed the tiny
BPE tokenizer's corpus so that SPA's instructions and tags compress to few tokens. They are
verbatim from SPA's `config/envs.yaml` (docs/spa-prompts.md#prefix), including the missing period in
"targets You are" and the U+2013 dashes.
"""

from __future__ import annotations

SOKOBAN_WM = "You are solving the Sokoban puzzle. You are the player and you need to push all boxes to targets You are provided with a symbol grid and the zero-indexed coordinates of the player, each box, and each target. Coordinates range from the top-left corner (0, 0) to the bottom-right corner (5, 5). When you are exactly next to a box, you can push it by moving in the same direction. You cannot push a box through a wall, and you cannot pull a box. The answer should be a sequence of actions, like <answer>Right || Right || Up</answer>. A sample full output is as follows: <think> <observation>######\n#_####\n#_P###\n#_X#_#\n#__O_#\n######\nPlayer (P) is at (2,2); box (X) is at (3,2); target (O) is at (4,3).</observation> 1 Down – I push box to (4,2). 2 Left – I step to (3,1). 3 Down – I stand left of box, ready to push it Right onto target. <prediction>######\n#_####\n#__###\n#__#_#\n#PXO_#\n######</prediction> </think> <answer> Down || Left || Down </answer>"
SOKOBAN_BASE = "You are solving the Sokoban puzzle. You are the player and you need to push all boxes to targets You are provided with a symbol grid. When you are exactly next to a box, you can push it by moving in the same direction. You cannot push a box through a wall, and you cannot pull a box. The answer should be a sequence of actions, like <answer>Right || Right || Up</answer>."
FROZENLAKE_WM = "You are solving the FrozenLake puzzle. You are the player and you need to Forbid the hole and go to the target. You are provided with a symbol grid and the zero-indexed coordinates of the player, each hole, and each target. Coordinates range from the top-left corner (0, 0) to the bottom-right corner (3, 3). When you are exactly next to goal, you can move in the same direction. You cannot move to a hole cause you will fall into the hole. The answer should be a sequence of actions, like <answer>Right || Right || Up</answer>. A sample full output is as follows: <think> <observation>_O__\nO___\nG___\n__P_</observation> Player (3,2); holes at (0,1) and (1,0); goal at (2,0). 1 Up - move to safe ice (2,2). 2 Left - slide to (2,1), adjacent to goal. 3 Left - reach goal (2,0); player now on G. <prediction>_O__\nO___\n√___\n____</prediction> </think> <answer> Up || Left || Left </answer>"
FROZENLAKE_BASE = "You are solving the FrozenLake puzzle. Forbid the whole and go to the target. You may move to the unintended direction due to the slippery ice. Example answer format: <think>To forbid the hole and go to the target, I should go left then go up.</think><answer>Left || Up</answer>"
SUDOKU_WM = "You are solving 4x4 Sudoku. Fill empty cells with digits 1–4. Use a 1-indexed grid (rows/cols start at 1). A move is exactly: row,col,value (three integers). In one turn you may output multiple moves, separated by ||. Only propose moves that keep the row, column, and 2x2 subgrid valid. Always output EXACTLY: <think>[brief reasoning]</think> <answer>[r,c,v || r,c,v ...]</answer> No extra text outside the two tags. Keep the response under 100 words. An example output: <think> <observation>| . . 1 4 | 1 4 . 3 | 4 2 . . | . 1 4 2 \nEmpty positions to be filled are at (1,1), (1,2), (2,3), (3,3), (3,4), (4,1)</observation> <prediction>| 2 3 1 4 | 1 4 2 3 | 4 2 3 1 | . 1 4 2\n Empty positions to be filled are at (4,1)</prediction> </think> <answer> 1,1,2 || 1,2,3 || 2,3,2 || 3,3,3 || 3,4,1 </answer>."

SUDOKU_BASE = (
    "You are solving 4x4 Sudoku. Fill empty cells with digits 1–4. Use a 1-indexed grid "
    "(rows/cols start at 1). A move is exactly: row,col,value (three integers). In one turn you "
    "may output multiple moves, separated by ||. Only propose moves that keep the row, column, "
    "and 2x2 subgrid valid. Keep the response under 50 words. Example: <think>Row 1 has one "
    "empty cell → place 1. Column 2 then needs 2.</think> <answer>1,3,1 || 3,2,2</answer>"
)
"""Sudoku base-mode instruction as corpus text; the exact prompt text is `SUDOKU_BASE` in
envs/protocol/instructions.ts."""

SYSTEM_MESSAGE = "You're a helpful assistant. "
"""SPA's system message, trailing space included (docs/spa-prompts.md#conversation)."""

FORMAT_PROMPT_WM = (
    "<think> <observation> [current state] </observation> [Your thoughts] "
    "<prediction> [next state]</prediction> </think> <answer> [your answer] </answer>"
)
"""World-model FORMAT_PROMPT used during self-play data generation (docs/spa-prompts.md#conversation)."""

FORMAT_PROMPT_BASE = "<think> [Your thoughts] </think> <answer> [your answer] </answer>"
"""Base-mode FORMAT_PROMPT used by PPO and evaluation (docs/spa-prompts.md#conversation)."""

SOKOBAN_VOCAB = "#: wall, _: empty, O: target, √: box on target, X: box, P: player, S: player on target"
FROZENLAKE_VOCAB = "P: player, _: empty, O: hole, G: goal, X: player in hole, √: player on goal"

INSTRUCTIONS: tuple[str, ...] = (
    SOKOBAN_WM,
    SOKOBAN_BASE,
    FROZENLAKE_WM,
    FROZENLAKE_BASE,
    SUDOKU_WM,
    SUDOKU_BASE,
)
"""Every instruction text, in a fixed order (the tokenizer corpus must be deterministic)."""
