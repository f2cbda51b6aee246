"""What an SFT run leaves besides checkpoints: `<out>/steps.jsonl` (a line per optimizer step),
`<out>/metrics.json` (the final metrics and the exported version) and the exported policy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .config import SftConfig


def keep_step_lines(out: Path, step: int) -> None:
    """Drop the lines of `<out>/steps.jsonl` past `step` (the checkpoint resumed from): those steps
    are trained again."""
    path = out / "steps.jsonl"
    if path.is_file():
        kept = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln and json.loads(ln)["step"] <= step]
        path.write_text("".join(ln + "\n" for ln in kept), encoding="utf-8")


def exported_version(artifact: Path | None) -> int | None:
    """The policy version an exported artifact carries (its manifest's), or None."""
    if artifact is None:
        return None
    return int(json.loads((artifact / "manifest.json").read_text(encoding="utf-8"))["version"])


def finished_before(out: Path, step: int) -> dict[str, Any]:
    """The final metrics an earlier run of this command wrote when it finished at the same step
    (a re-run of a finished SFT), else {}."""
    path = out / "metrics.json"
    if not path.is_file():
        return {}
    earlier = json.loads(path.read_text(encoding="utf-8"))
    return earlier if earlier.get("finished") is True and earlier.get("step") == step else {}


def publish_artifact(cfg: SftConfig, checkpoint_dir: Path | None, step: int, earlier: dict[str, Any]) -> Path:
    """Export the final SFT policy to ONNX (and announce it on `publish` if set). A re-run of
    a finished SFT reuses the artifact it exported then, and announces it only if that run did not
    (the same weights never become a second policy version)."""
    from ..export import export_policy

    before = earlier.get("artifact")
    if before and Path(before).is_dir() and Path(before).parent.resolve() == Path(cfg.export or "").resolve():
        artifact = Path(before)
        print(f"[sft] finished before: {artifact} holds these weights already; not exporting again", flush=True)
        if not cfg.publish or earlier.get("published_to") == cfg.publish:
            return artifact
    else:
        if checkpoint_dir is None:
            raise FileNotFoundError(f"no checkpoint in {cfg.out} to export")
        artifact = export_policy(checkpoint_dir / "model", Path(cfg.export or ""), "sft", step, cfg.model)
        print(f"[sft] exported {artifact}", flush=True)
    if cfg.publish:
        from ..topics.policy_updates import policy_update_from_manifest, publish_policy_update

        publish_policy_update(policy_update_from_manifest(artifact), cfg.publish, cfg.brokers)
        print(f"[sft] published {artifact.name} to {cfg.publish}", flush=True)
    return artifact
