"""A BERT encoder forward pass in NumPy, for inference only.

Enough for small sentence-embedding models (all-MiniLM-L6-v2) without torch: float32
throughout, the three attention projections fused into one matmul, the 1/sqrt(d) score
scale folded into the query weights at load time, and ops done in place where that saves
an allocation of a (tokens x hidden) array.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Abramowitz & Stegun 7.1.26 for erfc, |error| < 1.5e-7: NumPy has no erf, and BERT's GELU
# is the exact erf form, not the tanh approximation. The coefficients are pre-halved and
# p pre-divided by sqrt(2) because the GELU below needs erfc(|x| / sqrt 2) / 2. Highest power
# first, for Horner's rule.
_ERFC_P = np.float32(0.3275911 / np.sqrt(2))
_HALF_ERFC_A = tuple(
    np.float32(a / 2) for a in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)
)
_MASKED = np.float32(-1e9)
# Feed-forward rows per chunk: the (rows x intermediate) activations then stay in cache
# while GELU makes its dozen passes over them.
_FFN_ROWS = 256


@dataclass(frozen=True)
class BertLayer:
    qkv_weight: np.ndarray  # (hidden, 3 * hidden), query part pre-scaled by 1/sqrt(head_dim)
    qkv_bias: np.ndarray
    attn_out_weight: np.ndarray  # (hidden, hidden)
    attn_out_bias: np.ndarray
    attn_norm: tuple[np.ndarray, np.ndarray]
    ffn_in_weight: np.ndarray  # (hidden, intermediate)
    ffn_in_bias: np.ndarray
    ffn_out_weight: np.ndarray  # (intermediate, hidden)
    ffn_out_bias: np.ndarray
    ffn_norm: tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class BertWeights:
    word_embeddings: np.ndarray
    position_embeddings: np.ndarray
    token_type_embedding: np.ndarray  # row 0 only: single-segment input
    embedding_norm: tuple[np.ndarray, np.ndarray]
    layers: tuple[BertLayer, ...]
    num_heads: int
    layer_norm_eps: float


def bert_weights_from_tensors(
    tensors: dict[str, np.ndarray], *, num_heads: int, layer_norm_eps: float
) -> BertWeights:
    """Rearrange a Hugging Face BertModel state dict for the forward pass below."""

    def f32(key: str) -> np.ndarray:
        return np.ascontiguousarray(tensors[key], dtype=np.float32)

    def norm(prefix: str) -> tuple[np.ndarray, np.ndarray]:
        return f32(f"{prefix}.LayerNorm.weight"), f32(f"{prefix}.LayerNorm.bias")

    hidden = tensors["embeddings.word_embeddings.weight"].shape[1]
    scale = np.float32(1.0 / np.sqrt(hidden // num_heads))
    layers = []
    index = 0
    while f"encoder.layer.{index}.attention.self.query.weight" in tensors:
        p = f"encoder.layer.{index}"
        attn = f"{p}.attention.self"
        # torch Linear stores (out, in); transpose once so the forward pass is x @ W.
        qkv_weight = np.concatenate(
            [
                f32(f"{attn}.query.weight") * scale,
                f32(f"{attn}.key.weight"),
                f32(f"{attn}.value.weight"),
            ]
        ).T
        qkv_bias = np.concatenate(
            [f32(f"{attn}.query.bias") * scale, f32(f"{attn}.key.bias"), f32(f"{attn}.value.bias")]
        )
        layers.append(
            BertLayer(
                qkv_weight=np.ascontiguousarray(qkv_weight),
                qkv_bias=qkv_bias,
                attn_out_weight=np.ascontiguousarray(f32(f"{p}.attention.output.dense.weight").T),
                attn_out_bias=f32(f"{p}.attention.output.dense.bias"),
                attn_norm=norm(f"{p}.attention.output"),
                ffn_in_weight=np.ascontiguousarray(f32(f"{p}.intermediate.dense.weight").T),
                ffn_in_bias=f32(f"{p}.intermediate.dense.bias"),
                ffn_out_weight=np.ascontiguousarray(f32(f"{p}.output.dense.weight").T),
                ffn_out_bias=f32(f"{p}.output.dense.bias"),
                ffn_norm=norm(f"{p}.output"),
            )
        )
        index += 1
    return BertWeights(
        word_embeddings=f32("embeddings.word_embeddings.weight"),
        position_embeddings=f32("embeddings.position_embeddings.weight"),
        token_type_embedding=f32("embeddings.token_type_embeddings.weight")[0],
        embedding_norm=norm("embeddings"),
        layers=tuple(layers),
        num_heads=num_heads,
        layer_norm_eps=layer_norm_eps,
    )


def _layer_norm(x: np.ndarray, params: tuple[np.ndarray, np.ndarray], eps: float) -> np.ndarray:
    x -= x.mean(axis=-1, keepdims=True)
    variance = np.einsum("...i,...i->...", x, x)[..., None] / np.float32(x.shape[-1])
    x /= np.sqrt(variance + np.float32(eps))
    x *= params[0]
    x += params[1]
    return x


def _gelu(x: np.ndarray) -> np.ndarray:
    """Exact GELU, in place: x * Phi(x) = max(x, 0) - |x| * erfc(|x| / sqrt 2) / 2."""
    magnitude = np.abs(x)
    t = magnitude * _ERFC_P
    t += 1
    np.reciprocal(t, out=t)
    tail = t * _HALF_ERFC_A[0]
    for coefficient in _HALF_ERFC_A[1:]:
        tail += coefficient
        tail *= t
    gaussian = np.square(x)
    gaussian *= np.float32(-0.5)
    np.exp(gaussian, out=gaussian)
    tail *= gaussian
    tail *= magnitude
    np.maximum(x, 0, out=x)
    x -= tail
    return x


def _feed_forward(x: np.ndarray, layer: BertLayer) -> np.ndarray:
    out = np.empty_like(x)
    for start in range(0, len(x), _FFN_ROWS):
        inner = x[start : start + _FFN_ROWS] @ layer.ffn_in_weight
        inner += layer.ffn_in_bias
        np.matmul(_gelu(inner), layer.ffn_out_weight, out=out[start : start + _FFN_ROWS])
    out += layer.ffn_out_bias
    return out


def _attention(x: np.ndarray, layer: BertLayer, mask_bias: np.ndarray, heads: int) -> np.ndarray:
    batch, length, hidden = x.shape
    qkv = x.reshape(-1, hidden) @ layer.qkv_weight
    qkv += layer.qkv_bias
    # (batch, length, 3, heads, head_dim) -> three contiguous (batch, heads, length, head_dim)
    # arrays: matmul over the strided views, or einsum, is much slower.
    q, k, v = np.ascontiguousarray(
        qkv.reshape(batch, length, 3, heads, hidden // heads).transpose(2, 0, 3, 1, 4)
    )
    scores = q @ k.transpose(0, 1, 3, 2)
    scores += mask_bias
    scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=-1, keepdims=True)
    context = (scores @ v).transpose(0, 2, 1, 3).reshape(-1, hidden)
    out = context @ layer.attn_out_weight
    out += layer.attn_out_bias
    return out.reshape(batch, length, hidden)


def bert_mean_pooled(weights: BertWeights, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean of the last hidden states over real tokens: (batch, length) ids -> (batch, hidden)."""
    length = ids.shape[1]
    eps = weights.layer_norm_eps
    x = weights.word_embeddings[ids]
    x += weights.position_embeddings[:length]
    x += weights.token_type_embedding
    x = _layer_norm(x, weights.embedding_norm, eps)
    mask_bias = np.where(mask[:, None, None, :] > 0, np.float32(0), _MASKED)
    for layer in weights.layers:
        x += _attention(x, layer, mask_bias, weights.num_heads)
        x = _layer_norm(x, layer.attn_norm, eps)
        x += _feed_forward(x.reshape(-1, x.shape[-1]), layer).reshape(x.shape)
        x = _layer_norm(x, layer.ffn_norm, eps)
    weights_per_token = mask.astype(np.float32)
    summed = np.einsum("bld,bl->bd", x, weights_per_token)
    return summed / np.maximum(weights_per_token.sum(axis=1, keepdims=True), 1)
