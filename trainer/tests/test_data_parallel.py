"""Data-parallel training under torchrun (2 CPU ranks, gloo) against the single process.

The runs are real: `torchrun --standalone --nproc_per_node 2 -m spa_trainer.sft ...` as a
subprocess, compared with `python -m spa_trainer.sft ...` through `<out>/steps.jsonl` (one line
per optimizer step, written by rank 0: loss, grad norm, the rows each rank trained). The Kafka
tests start their own 3-broker cluster on ports 19520–19525 and stop it afterwards.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file

from spa_trainer.experiments import torchrun_jobs

from .ppo_rollouts import rollout
from .synthetic import sokoban_rows, write_jsonl

pytestmark = pytest.mark.slow

TRAINER = Path(__file__).resolve().parents[1]
REPO = TRAINER.parent
# 13 rows in batches of 3: every epoch ends with a batch of one row, so rank 1's share is empty
# there and it joins the gradient all-reduce with zeros.
SFT_FLAGS = ["--epochs", "4", "--batch-size", "3", "--lr", "3e-3", "--val-fraction", "0", "--eval-rows", "0"]
SFT_FLAGS += ["--checkpoint-every", "2", "--log-every", "1000"]


def sft_command(ranks: int, data: str, out: Path, *extra: str) -> list[str]:
    """`python -m spa_trainer.sft`, under torchrun when `ranks` > 1."""
    return torchrun_jobs.sft_command(ranks, data, out, *SFT_FLAGS, *extra)


def run(command: list[str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run `command` from trainer/ to the end; on a timeout torchrun and its ranks are killed."""
    return torchrun_jobs.run_job(command, timeout)


steps = torchrun_jobs.step_lines
rank_pid, kill_job = torchrun_jobs.rank_pid, torchrun_jobs.kill_job


def weights(out: Path) -> dict[str, torch.Tensor]:
    latest = (out / "checkpoints" / "latest").read_text(encoding="utf-8").strip()
    return load_file(str(out / "checkpoints" / latest / "model" / "model.safetensors"))


def trainer_state(out: Path) -> dict[str, Any]:
    latest = (out / "checkpoints" / "latest").read_text(encoding="utf-8").strip()
    return json.loads((out / "checkpoints" / latest / "trainer_state.json").read_text(encoding="utf-8"))


def assert_same_losses(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    assert [s["step"] for s in got] == [s["step"] for s in want]
    for key in ("loss", "grad_norm", "lr"):
        torch.testing.assert_close(
            torch.tensor([s[key] for s in got], dtype=torch.float64),
            torch.tensor([s[key] for s in want], dtype=torch.float64),
            rtol=1e-5,
            atol=1e-6,
            msg=lambda m, key=key: f"{key} per step differs: {m}",
        )


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The same SFT run once in one process and once on 2 ranks, uninterrupted."""
    root = tmp_path_factory.mktemp("ddp")
    data = f"jsonl:{write_jsonl(root / 'rows.jsonl', sokoban_rows(13))}"
    run(sft_command(1, data, root / "one"))
    run(sft_command(2, data, root / "two"))
    return {"data": Path(data.removeprefix("jsonl:")), "one": root / "one", "two": root / "two"}


def test_two_ranks_train_the_single_process_losses(reference: dict[str, Path]) -> None:
    one, two = steps(reference["one"]), steps(reference["two"])
    assert len(one) == 20  # 4 epochs of ceil(13 / 3) steps
    assert_same_losses(two, one)
    for a, b in zip(one, two, strict=True):
        [alone] = a["rows_by_rank"]
        rank0, rank1 = b["rows_by_rank"]
        # each rank trains rows i ≡ rank (mod 2) of the same global batch
        assert rank0 == alone[0::2] and rank1 == alone[1::2], (a["step"], alone, rank0, rank1)
    assert not steps(reference["two"])[4]["rows_by_rank"][1]  # the one-row batch: rank 1 had nothing
    # Adam divides by the gradient's root mean square: for a weight whose gradient is near zero the
    # summation order's rounding moves the update by up to ~lr x 1e-3 over 20 steps (measured 1.4e-6)
    for name, tensor in weights(reference["one"]).items():
        torch.testing.assert_close(weights(reference["two"])[name], tensor, rtol=1e-4, atol=1e-5)
    assert trainer_state(reference["one"])["world_size"] == 1
    assert trainer_state(reference["two"])["world_size"] == 2


def run_killing_rank_1(command: list[str], out: Path, after: str) -> tuple[int | None, int, str]:
    """Runs `command` (2 ranks) and SIGKILLs rank 1 once checkpoint `after` (e.g. step_00000006) is
    on disk; returns the killed pid (None if the run ended first), torchrun's exit code and log."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    launcher = subprocess.Popen(command, cwd=TRAINER, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True)  # fmt: skip
    try:
        deadline, killed = time.monotonic() + 240, None
        while killed is None and time.monotonic() < deadline and launcher.poll() is None:
            latest = out / "checkpoints" / "latest"
            if latest.is_file() and latest.read_text().strip() >= after:
                pid = rank_pid(launcher, 1)
                if pid is not None:
                    os.kill(pid, signal.SIGKILL)
                    killed = pid
            time.sleep(0.02)
        log, _ = launcher.communicate(timeout=60)
    finally:
        if launcher.poll() is None:
            kill_job(launcher)
            launcher.communicate()
    return killed, launcher.returncode, log


def assert_killed_then_resumed_exactly(command: list[str], out: Path, reference: Path, total_steps: int) -> None:
    """Kills rank 1 mid-run, reruns `command`: the steps and weights equal the uninterrupted run's."""
    killed, code, log = run_killing_rank_1(command, out, "step_00000006")
    assert killed is not None, "the run ended before rank 1 could be killed"
    assert code != 0, log  # torchrun tore the job down
    stopped_at = steps(out)[-1]["step"]
    assert stopped_at < total_steps, "the kill came after the last step"

    resumed = run(command)
    assert "[sft] resumed step_" in resumed.stdout, resumed.stdout
    # steps.jsonl: the lines past the checkpoint were dropped and trained again, the same
    assert [s["step"] for s in steps(out)] == list(range(1, total_steps + 1))
    assert steps(out) == steps(reference)
    assert trainer_state(out)["world_size"] == 2
    for name, tensor in weights(reference).items():
        assert torch.equal(weights(out)[name], tensor), name


def test_killing_one_rank_then_rerunning_resumes_exactly(reference: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "killed"
    assert_killed_then_resumed_exactly(sft_command(2, f"jsonl:{reference['data']}", out), out, reference["two"], 20)


def test_a_checkpoint_of_two_ranks_resumes_in_one_process(reference: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "shrunk"
    data = f"jsonl:{reference['data']}"
    run(sft_command(2, data, out, "--stop-after-steps", "7"))
    assert trainer_state(out)["world_size"] == 2
    resumed = run(sft_command(1, data, out))
    assert "written by 2 ranks, continuing with 1" in resumed.stdout, resumed.stdout
    assert trainer_state(out)["world_size"] == 1
    assert_same_losses(steps(out), steps(reference["two"]))


# --- the Kafka path: 2 ranks reading a topic of a local 3-broker cluster -------------------------

PORT = 19520  # this suite's cluster: brokers on 19520, 19522, 19524 (controllers +1); never 9092


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A 3-broker cluster of our own (`infra/kafka/cli.ts start --brokers 3`, instance
    `trainer-ddp`), stopped afterwards; yields its bootstrap list."""
    env = {**os.environ, "KAFKA_PORT": str(PORT), "KAFKA_INSTANCE": "trainer-ddp"}
    env.pop("KAFKA_BROKERS", None)
    tsx = [str(REPO / "node_modules" / ".bin" / "tsx"), str(REPO / "infra" / "kafka" / "cli.ts")]
    started = subprocess.run(
        [*tsx, "start", "--brokers", "3", "--no-topics"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert started.returncode == 0, f"cluster on {PORT} did not start:\n{started.stdout}\n{started.stderr}"
    try:
        yield started.stdout.strip().splitlines()[-1]
    finally:
        subprocess.run([*tsx, "stop"], cwd=REPO, env=env, capture_output=True, timeout=120, check=False)


KAFKA_ROWS = 14  # on 3 partitions: 5, 5 and 4 rows
KAFKA_EPOCHS = 4  # 5 steps of 3 rows an epoch


@pytest.fixture(scope="module")
def kafka_reference(cluster: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """An SFT topic (3 partitions, 3 replicas) on the cluster, trained uninterrupted in one
    process and on 2 ranks."""
    ck = pytest.importorskip("confluent_kafka", reason="no Kafka client in this venv")
    from spa_trainer.data.avro import spa_schemas

    from .kafka_topics import topic_factory

    factory = topic_factory(cluster, "test.ddp", replication=3)
    create = next(factory)
    try:
        topic = create(3)
        producer = ck.Producer({"bootstrap.servers": cluster, "enable.idempotence": True})
        for i, row in enumerate(sokoban_rows(KAFKA_ROWS)):
            record = {**row, "env": "sokoban", "policy_version": 0, "annotation": "gt", "mask_transitions": False}
            producer.produce(topic, key=f"{i}".encode(), value=spa_schemas().encode("SftRow", record), partition=i % 3)
        assert producer.flush(30) == 0
        root = tmp_path_factory.mktemp("ddp-kafka")
        flags = ["--brokers", cluster, "--epochs", str(KAFKA_EPOCHS)]
        run(sft_command(1, f"kafka:{topic}", root / "one", *flags))
        run(sft_command(2, f"kafka:{topic}", root / "two", *flags))
        yield {"topic": topic, "flags": flags, "one": root / "one", "two": root / "two"}
    finally:
        next(factory, None)


def test_two_ranks_on_a_kafka_topic_train_every_row_once_per_epoch(
    cluster: str, kafka_reference: dict[str, Any]
) -> None:
    import confluent_kafka as ck

    topic, lines = kafka_reference["topic"], steps(kafka_reference["two"])
    everything = sorted((i % 3, i // 3) for i in range(KAFKA_ROWS))
    for epoch in range(KAFKA_EPOCHS):
        trained = [tuple(pos) for s in lines if s["epoch"] == epoch for ranked in s["rows_by_rank"] for pos in ranked]
        assert sorted(trained) == everything, f"epoch {epoch}: {sorted(trained)}"
    assert_same_losses(lines, steps(kafka_reference["one"]))
    # rank 0 committed the range's end to the group once the first epoch was on disk
    consumer = ck.Consumer({"bootstrap.servers": cluster, "group.id": "spa-trainer-sft"})
    committed = consumer.committed([ck.TopicPartition(topic, p) for p in range(3)], timeout=10)
    consumer.close()
    assert {tp.partition: tp.offset for tp in committed} == {0: 5, 1: 5, 2: 4}


def test_killing_one_rank_reading_the_cluster_then_rerunning_resumes_exactly(
    kafka_reference: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "killed"
    command = sft_command(2, f"kafka:{kafka_reference['topic']}", out, *kafka_reference["flags"])
    assert_killed_then_resumed_exactly(command, out, kafka_reference["two"], 5 * KAFKA_EPOCHS)


# --- PPO: the update of 2 ranks equals the single process's --------------------------------------


def ppo_records(steps: int) -> list[dict[str, Any]]:
    """`steps` groups of three episodes with different scores (a winner, a loser, one between)."""
    records = []
    for g in range(steps):
        records += [
            rollout(f"t{g}a", f"g{g}", ["Right"], [1.0 + 0.1 * g], success=True, policy_version=1),
            rollout(f"t{g}b", f"g{g}", ["Left", "Up"], [-0.1, -0.1], penalty=-0.1, policy_version=1),
            rollout(f"t{g}c", f"g{g}", ["Up"], [0.3], policy_version=1),
        ]
    return records


def ppo_command(ranks: int, data: Path, out: Path, micro_batch: int, extra: list[str], steps: int = 4) -> list[str]:
    launcher = ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(ranks)] if ranks > 1 else []
    flags = ["--model", "tiny", "--input", f"jsonl:{data}", "--out", str(out / "run"), "--steps", str(steps)]
    flags += ["--groups-per-step", "1", "--group-size", "3", "--export-every", "100", "--keep-ratio", "1.0"]
    flags += ["--export-root", str(out / "policy"), "--start-version", "1", "--actor-lr", "1e-3", "--critic-lr", "1e-3"]
    flags += ["--micro-batch-size", str(micro_batch), *extra]
    return [sys.executable, *launcher, "-m", "spa_trainer.ppo_service", *flags]


def ppo_losses(out: Path) -> list[dict[str, float]]:
    lines = [json.loads(ln) for ln in (out / "run" / "metrics.jsonl").read_text(encoding="utf-8").splitlines()]
    return [{k: v for k, v in ln["ppo"].items() if k.split("/")[0] in ("actor", "critic", "score")} for ln in lines]


# 3 episodes a step: micro-batches of 1 split 2 / 1 between the ranks (here with the KL loss to
# the start model, whose log-probs the ranks share out too); one micro-batch of 4 leaves rank 1
# without any, so it joins the all-reduces with zeros (here with SPA's released aggregation).
@pytest.mark.parametrize(
    ("micro_batch", "extra"),
    [(1, ["--kl-loss-coef", "0.1"]), (4, ["--loss-agg", "seq-mean-token-mean"])],
    ids=["split-2-1-kl", "split-1-0-seq-mean"],
)
def test_two_ranks_make_the_single_process_ppo_updates(tmp_path: Path, micro_batch: int, extra: list[str]) -> None:
    data = tmp_path / "rollouts.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ppo_records(4)), encoding="utf-8")
    run(ppo_command(1, data, tmp_path / "one", micro_batch, extra))
    run(ppo_command(2, data, tmp_path / "two", micro_batch, extra))
    one, two = ppo_losses(tmp_path / "one"), ppo_losses(tmp_path / "two")
    assert len(one) == 4 and one[0].keys() == two[0].keys()
    for key in one[0]:
        torch.testing.assert_close(
            torch.tensor([s[key] for s in two], dtype=torch.float64),
            torch.tensor([s[key] for s in one], dtype=torch.float64),
            rtol=1e-5,
            atol=1e-6,
            msg=lambda m, key=key: f"{key} per step differs: {m}",
        )
    assert one[-1]["actor/pg_loss"] != one[0]["actor/pg_loss"]  # the updates moved the policy
    assert ("actor/kl_loss" in one[0]) == ("--kl-loss-coef" in extra)
    for name in ("model/model.safetensors", "critic.safetensors"):
        want = load_file(str(tmp_path / "one" / "run" / "checkpoints" / "step_00000004" / name))
        got = load_file(str(tmp_path / "two" / "run" / "checkpoints" / "step_00000004" / name))
        for key, tensor in want.items():
            torch.testing.assert_close(got[key], tensor, rtol=1e-4, atol=1e-5)
    state = json.loads((tmp_path / "two" / "run" / "checkpoints" / "step_00000004" / "trainer_state.json").read_text())
    assert state["world_size"] == 2


def test_killing_one_ppo_rank_then_rerunning_resumes_exactly(tmp_path: Path) -> None:
    """PPO's checkpoint of two ranks (weights, critic, optimizers, offsets, RNG) resumes bit for bit."""
    data = tmp_path / "rollouts.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ppo_records(8)), encoding="utf-8")
    reference, out = tmp_path / "reference", tmp_path / "killed"
    run(ppo_command(2, data, reference, 1, [], steps=8))
    command = ppo_command(2, data, out, 1, [], steps=8)
    killed, code, log = run_killing_rank_1(command, out / "run", "step_00000003")
    assert killed is not None, "the run ended before rank 1 could be killed"
    assert code != 0, log  # torchrun tore the job down
    stopped_at = (out / "run" / "checkpoints" / "latest").read_text(encoding="utf-8").strip()
    assert "step_00000003" <= stopped_at < "step_00000008", "the kill came after the last step"

    resumed = run(command)
    assert "resumed step_" in resumed.stdout + resumed.stderr, resumed.stdout + resumed.stderr
    steps_done = [json.loads(ln)["step"] for ln in (out / "run" / "metrics.jsonl").read_text().splitlines()]
    assert steps_done == list(range(1, 9))  # the lines past the checkpoint were dropped and trained again
    assert ppo_losses(out) == ppo_losses(reference)
    for name in ("model/model.safetensors", "critic.safetensors"):
        want = load_file(str(reference / "run" / "checkpoints" / "step_00000008" / name))
        got = load_file(str(out / "run" / "checkpoints" / "step_00000008" / name))
        for key, tensor in want.items():
            assert torch.equal(got[key], tensor), f"{name}: {key}"
