"""The target classifier's adversarial pieces (``training.py``): the gradient reversal layer
and the confusion loss."""

from __future__ import annotations

from typing import Any

import torch


class GradientReversal(torch.autograd.Function):
    """Identity forward; backward multiplies the gradient by ``-weight`` (Ganin & Lempitsky)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: float) -> torch.Tensor:
        ctx.weight = float(weight)
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad_output * -ctx.weight, None


def reverse_gradient(x: torch.Tensor, weight: float) -> torch.Tensor:
    """Gradient reversal layer: ``x`` forward, ``-weight`` times the gradient backward."""
    out: torch.Tensor = GradientReversal.apply(x, weight)
    return out


def confusion_loss(
    embeddings: torch.Tensor, class_weights: torch.Tensor, scale: float
) -> torch.Tensor:
    """Cross-entropy (nats) from a cosine head's posterior to the uniform distribution.

    ``softmax(scale * cos(embedding, w_k))`` over the K classes; the weights are detached, so
    only the embeddings are pushed (toward a posterior the head cannot use). Minimum ``log K``,
    reached when every class scores the same.
    """
    cosines = torch.nn.functional.linear(
        torch.nn.functional.normalize(embeddings),
        torch.nn.functional.normalize(class_weights.detach()),
    )
    log_p = torch.log_softmax(scale * cosines.float(), dim=1)
    return -log_p.mean()
