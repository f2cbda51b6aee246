"""Shared fixtures: the cached `tiny` model folder (built once, a few seconds)."""

from __future__ import annotations

from pathlib import Path

import pytest
from transformers import AutoTokenizer, PreTrainedTokenizerBase

from spa_trainer.models.tiny import tiny_model_dir


@pytest.fixture(scope="session")
def tiny_dir() -> Path:
    return tiny_model_dir()


@pytest.fixture()
def tiny_tokenizer(tiny_dir: Path) -> PreTrainedTokenizerBase:
    return AutoTokenizer.from_pretrained(tiny_dir)
