"""The PPO critic: a separate copy of the policy's transformer with a fresh scalar value head.

verl builds it as `AutoModelForTokenClassification(num_labels=1, classifier_dropout=0)` from
the same checkpoint as the actor (docs/spa-ppo.md#losses); for Qwen2 that is the backbone plus a
freshly initialised `Linear(hidden, 1)` on the last hidden state. Building it from the actor
object instead of a folder keeps the trainer independent of where the weights came from.
"""

from __future__ import annotations

import copy

import torch
from torch import nn
from transformers import PreTrainedModel


class ValueModel(nn.Module):
    """Transformer backbone + scalar head; `forward` returns one value per input position."""

    def __init__(self, backbone: nn.Module, hidden_size: int, init_std: float = 0.02, seed: int = 0) -> None:
        super().__init__()
        self.backbone = backbone
        self.value_head = nn.Linear(hidden_size, 1)
        # As HF's `_init_weights` for a new Linear (normal(0, initializer_range), zero bias),
        # seeded so two runs from the same checkpoint start from the same critic.
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            self.value_head.weight.copy_(torch.randn(self.value_head.weight.shape, generator=generator) * init_std)
            self.value_head.bias.zero_()

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor
    ) -> torch.Tensor:
        """Values `(B, T)`: position j's value estimates the return from predicting token j+1 on."""
        out = self.backbone(
            input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, use_cache=False
        )
        hidden = out.last_hidden_state.to(self.value_head.weight.dtype)
        return self.value_head(hidden).squeeze(-1)

    def response_values(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:
        """Values on the response axis `(B, T − 1)` times the loss mask: value j sits at the same
        position as the log-prob of token j+1 (verl reads `[-L−1:-1]`, docs/spa-ppo.md#losses) and is
        zeroed outside the mask before GAE (verl `dp_critic.compute_values`)."""
        return response_values(self, input_ids, attention_mask, position_ids, mask)


def response_values(
    critic: nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    position_ids: torch.Tensor,
    mask: torch.Tensor,
) -> torch.Tensor:
    """`ValueModel.response_values` through any module whose forward is a ValueModel's, e.g. its
    DistributedDataParallel wrapper (whose forward is what averages gradients over ranks)."""
    values = critic(input_ids, attention_mask, position_ids)[:, :-1]
    return values * mask.to(values.dtype)


def critic_from_actor(actor: PreTrainedModel, seed: int = 0) -> ValueModel:
    """A critic initialised from the actor's current weights (deep copy of its backbone, so the
    two train independently) with a new value head on the same device and dtype."""
    backbone = copy.deepcopy(actor.base_model)
    config = actor.config
    hidden_size = int(config.hidden_size)
    init_std = float(getattr(config, "initializer_range", 0.02))
    param = next(actor.parameters())
    critic = ValueModel(backbone, hidden_size, init_std=init_std, seed=seed)
    critic.value_head.to(device=param.device, dtype=param.dtype)
    return critic
