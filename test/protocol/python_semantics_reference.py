"""CPython side of test/protocol/python-semantics.test.ts.

Reads a JSON list of cases on stdin and prints, for each, what SPA's Python code computes, using
Python's own str and re semantics (the point of the test). The logic follows the behaviour
recorded in docs/spa-protocol.md, written here independently of SPA's sources.
"""

import json
import re
import sys

WM = re.compile(
    r"<think>\s*<observation>(.*?)</observation>(.*?)<prediction>(.*?)</prediction>\s*</think>\s*<answer>(.*?)</answer>",
    re.DOTALL,
)
BASE = re.compile(r"<think>(.*?)</think>\s*<answer>(.*?)</answer>", re.DOTALL)
FALLBACK = re.compile(r"<answer>(.*?)</answer>")
TOKENS = {
    "wm": ["<think>", "</think>", "<observation>", "</observation>", "<prediction>", "</prediction>",
           "<answer>", "</answer>", "<|im_start|>", "<|im_end|>"],
    "base": ["<think>", "</think>", "<answer>", "</answer>", "<|im_start|>", "<|im_end|>"],
}
NAMES = {"sokoban": ["Up", "Down", "Left", "Right"], "frozenlake": ["Left", "Down", "Right", "Up"]}


def clean(part, mode):
    for token in TOKENS[mode]:
        part = part.replace(token, "").strip()
    return part


def split_actions(answer, cap=5):
    actions = [a.strip() for a in answer.split("||") if a.strip()]
    if len(actions) > cap:
        actions = actions[:cap]
        answer = " || ".join(actions)
    return actions, answer


def lookup(env, actions):
    if env == "sudoku":
        return list(actions)
    table = {name.lower(): i + 1 for i, name in enumerate(NAMES[env])}
    return [table[a.lower()] for a in actions if a.lower() in table]


def parse(continuation, mode, env):
    raw = "<think>" + continuation
    if mode == "wm":
        m = WM.search(raw)
        if m is None:
            a = FALLBACK.search(raw)
            if a is None:
                return {"matched": "none", "actions": [], "valid": [], "canonical": None}
            actions = list(a.group(1))  # SPA iterates the fallback string per character
            return {"matched": "fallback", "actions": actions, "valid": lookup(env, actions), "canonical": None}
        cur, think, nxt, act = (clean(p, "wm") for p in m.groups())
        actions, act = split_actions(act)
        canonical = f"<think> <observation>{cur}</observation> {think} <prediction>{nxt}</prediction></think><answer>{act}</answer>"
        return {"matched": "strict", "actions": actions, "valid": lookup(env, actions), "canonical": canonical,
                "observation": cur, "prediction": nxt}
    m = BASE.search(raw)
    if m is None:
        return {"matched": "none", "actions": [], "valid": [], "canonical": None}
    think = clean(m.group(1), "base")
    actions, act = split_actions(clean(m.group(2), "base"))
    return {"matched": "strict", "actions": actions, "valid": lookup(env, actions),
            "canonical": f"<think>{think}</think><answer>{act}</answer>"}


def sudoku_move(action):
    """(row, col, value) zero-indexed row/col, or None where the env's parser gives no full move."""
    text = action.lower().strip()
    words = text.replace(",", " ").split()
    try:
        if "row" in text and "col" in text:
            r_at, c_at = words.index("row") + 1, words.index("col") + 1
            value = next((int(w) for i, w in enumerate(words) if w.isdigit() and i not in (r_at, c_at)), None)
            row, col = int(words[r_at]) - 1, int(words[c_at]) - 1
            return None if value is None else [row, col, value]
        if len(words) >= 3 and all(w.lstrip("-").isdigit() for w in words[:3]):
            return [int(words[0]) - 1, int(words[1]) - 1, int(words[2])]
    except (ValueError, IndexError):
        pass
    return None


def main():
    out = []
    for case in json.load(sys.stdin):
        if case["kind"] == "parse":
            out.append(parse(case["text"], case["mode"], case["env"]))
        elif case["kind"] == "sudoku":
            out.append(sudoku_move(case["text"]))
        elif case["kind"] == "int":
            try:
                out.append(int(case["text"]))
            except ValueError:
                out.append(None)
        else:
            text = case["text"]
            out.append({"strip": text.strip(), "split": text.split(), "isdigit": text.isdigit()})
    json.dump(out, sys.stdout, ensure_ascii=False)


main()
