"""Communication volume of FedGRPO and its baselines over a whole training run (the paper's Figure 2).

Paper: FedGRPO (Zhu et al., AAAI 2026), §4.4 "Communication Efficiency" and Figure 2. The paper
reports, for a complete training run, **2.4 MB** for FedGRPO ("a short reward value (1.0 or 0.0)
for each policy", constant in the model size), **102.5 MB** for DPSDA-FL (synthetic data) and
**6.1 GB** for FedPETuning on the 7B model (LoRA trainable parameters). It does not say how these
were counted. This module recomputes them from first principles with every assumption a
parameter, so a reader can see which assumptions move the numbers and by how much.

What the paper states, and what we assume where it is silent:

==========================  ====================================  ===========================
quantity                    paper                                 our default (parameter)
==========================  ====================================  ===========================
training questions          2,000 per experiment (§4.1)           ``n_samples=2000``
candidates per question     8 (§4.1)                              ``n_policies=8`` (``G``)
experts per question        ``M = 2`` (§4.1)                      ``M=2``
rounds                      320 communication epochs (App. A)     ``rounds=320``
clients                     4 to 20 (§4.1); 8 in App. C           ``n_clients=8``
neighbourhood / aux set     ``L = 20`` of 100 (§4.1)              ``L=20``, ``n_aux=100``
bytes per reward            silent ("1.0 or 0.0")                 ``bytes_per_reward=4`` (float32)
what FedGRPO counts         "reward signal transfer"              expert → server rewards only
max answer length           2048 tokens (§4.1)                    ``answer_tokens=2048``
max question length         silent (official config: 512)         ``question_tokens=512``
bytes per token (text)      silent                                ``bytes_per_token=4``
synthetic samples (DPSDA)   silent                                one per training question
LoRA rank / modules         silent                                ``r=8`` on ``q_proj, v_proj``
LoRA bytes per parameter    silent; training in BF16 (App. A)     ``bytes_per_param=2``
FedPETuning directions      "transmitting LoRA parameters"        client → server only
==========================  ====================================  ===========================

Reasons: 4 bytes is the float32 a reward tensor has in the official trainer; ``r = 8`` on
``q_proj, v_proj`` is peft's ``LoraConfig`` default (and its default targets for Qwen2); 4 bytes
per token is both an int32 token id and ~4 UTF-8 characters of BPE text; the lengths are the
largest the paper (and the official config) allows, so the DPSDA-FL figure is an upper bound for
2,000 samples. MB and GB are decimal (10^6, 10^9 bytes); the paper does not say.

Where our numbers land (run :func:`paper_figure2_table`):

- FedGRPO: 2000 · 8 · 2 · 4 B = 0.128 MB, **18.75× below** the paper's 2.4 MB. Matching it needs
  75 bytes per reward (e.g. a serialised message per reward with ids and framing), or counting
  more than rewards; adding every other exchange the protocol implies (competence scores,
  exemplars, the candidate texts sent to experts; see :func:`fedgrpo_breakdown`) overshoots by
  far, because the candidate texts sent to the experts alone are 270 MB at maximum lengths.
- DPSDA-FL: 2000 · (512 + 2048) · 4 B = 20.5 MB even at maximum lengths, **5× below** 102.5 MB.
  Matching it needs ≈ 51 KB per synthetic sample (≈ 12,800 tokens at 4 B/token) or ≈ 5 synthetic
  samples per training question at maximum length.
- FedPETuning (7B): 2,523,136 LoRA parameters · 2 B · 8 clients · 320 rounds = 12.9 GB,
  **2.1× above** 6.1 GB. With ``n_clients=4`` (the smallest federation the paper runs) it is
  6.46 GB = 6.02 GiB. At 320 rounds on ``q_proj, v_proj`` the paper's figure needs
  ``rank · bytes_per_param · n_clients ≈ 60`` (ours: 8 · 2 · 8 = 128).

The Qwen2.5 architecture table (:data:`QWEN25_ARCHS`) holds the ``config.json`` values of
``Qwen/Qwen2.5-1.5B``, ``Qwen/Qwen2.5-3B`` and ``Qwen/Qwen2.5-7B`` on the Hugging Face Hub. The
paper's math models ``Qwen2.5-Math-1.5B`` and ``Qwen2.5-Math-7B`` share the architecture of the
base model of their size (same hidden size, layers, intermediate size and heads), so they map
onto the same rows (:data:`MODEL_ALIASES`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple, Sequence

__all__ = [
    "QwenArch",
    "QWEN25_ARCHS",
    "MODEL_ALIASES",
    "LORA_MODULES",
    "linear_shapes",
    "lora_param_count",
    "fedgrpo_breakdown",
    "fedgrpo_bytes",
    "dpsda_bytes",
    "fedpetuning_bytes",
    "PAPER_FIGURE2_BYTES",
    "Figure2Row",
    "paper_figure2_table",
    "human_bytes",
]


@dataclass(frozen=True)
class QwenArch:
    """The shape numbers of a Qwen2-family decoder that fix its LoRA parameter count."""

    hidden_size: int
    """width of the residual stream (``config.hidden_size``)"""
    num_hidden_layers: int
    """number of decoder layers (``config.num_hidden_layers``)"""
    intermediate_size: int
    """width of the SwiGLU MLP (``config.intermediate_size``)"""
    num_attention_heads: int
    """query heads (``config.num_attention_heads``)"""
    num_key_value_heads: int
    """key/value heads under grouped-query attention (``config.num_key_value_heads``)"""

    @property
    def head_dim(self) -> int:
        """Per-head width, ``hidden_size / num_attention_heads`` (128 for all three Qwen2.5 sizes)."""
        return self.hidden_size // self.num_attention_heads


QWEN25_ARCHS: dict[str, QwenArch] = {
    # Source: config.json of Qwen/Qwen2.5-{1.5B,3B,7B} on the Hugging Face Hub.
    #                      hidden  layers  intermediate  heads  kv heads
    "Qwen2.5-1.5B": QwenArch(1536, 28, 8960, 12, 2),
    "Qwen2.5-3B": QwenArch(2048, 36, 11008, 16, 2),
    "Qwen2.5-7B": QwenArch(3584, 28, 18944, 28, 4),
}
"""Architecture numbers of the three model sizes in the paper's Figure 2."""

MODEL_ALIASES = {"Qwen2.5-Math-1.5B": "Qwen2.5-1.5B", "Qwen2.5-Math-7B": "Qwen2.5-7B"}
"""The paper's math models share the architecture of the same-size base model."""

LORA_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
"""The linear layers of a Qwen2 decoder layer that LoRA can adapt (peft's module names)."""

PAPER_FIGURE2_BYTES = {"FedGRPO": 2.4e6, "DPSDA-FL": 102.5e6, "FedPETuning/Qwen2.5-7B": 6.1e9}
"""The numbers §4.4 quotes, read as decimal MB/GB."""


def _check_int(value, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return value


def _check_nonneg(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return value


def _arch(model: QwenArch | str) -> QwenArch:
    if isinstance(model, QwenArch):
        return model
    name = MODEL_ALIASES.get(model, model)
    if name not in QWEN25_ARCHS:
        allowed = sorted(QWEN25_ARCHS) + sorted(MODEL_ALIASES)
        raise ValueError(f"model must be a QwenArch or one of {allowed}, got {model!r}")
    return QWEN25_ARCHS[name]


def linear_shapes(model: QwenArch | str) -> dict[str, tuple[int, int]]:
    """``(in_features, out_features)`` of each adaptable linear layer in one decoder layer.

    Args:
        model: a :class:`QwenArch` or a name in :data:`QWEN25_ARCHS` / :data:`MODEL_ALIASES`.

    Returns:
        ``{module: (in, out)}`` for the names in :data:`LORA_MODULES`. ``k_proj``/``v_proj`` map
        to ``num_key_value_heads · head_dim`` (grouped-query attention).
    """
    a = _arch(model)
    q_out = a.num_attention_heads * a.head_dim
    kv_out = a.num_key_value_heads * a.head_dim
    h, i = a.hidden_size, a.intermediate_size
    return {
        "q_proj": (h, q_out),
        "k_proj": (h, kv_out),
        "v_proj": (h, kv_out),
        "o_proj": (q_out, h),
        "gate_proj": (h, i),
        "up_proj": (h, i),
        "down_proj": (i, h),
    }


def lora_param_count(
    model: QwenArch | str, rank: int, target_modules: Sequence[str] = ("q_proj", "v_proj")
) -> int:
    """Trainable LoRA parameters: ``layers · Σ_modules rank · (in + out)``.

    A LoRA adapter on a linear ``in → out`` adds ``A ∈ R^{rank × in}`` and ``B ∈ R^{out × rank}``.

    Args:
        model: a :class:`QwenArch` or a Qwen2.5 model name.
        rank: LoRA rank ``r ≥ 1``.
        target_modules: names from :data:`LORA_MODULES`, each at most once.

    Returns:
        the number of trainable parameters in the whole model's adapter.

    Raises:
        ValueError: on an unknown model or module, a repeated module, or ``rank < 1``.
    """
    rank = _check_int(rank, "rank", 1)
    shapes = linear_shapes(model)
    modules = tuple(target_modules)
    unknown = [m for m in modules if m not in shapes]
    if unknown or not modules or len(set(modules)) != len(modules):
        raise ValueError(f"target_modules must be distinct names from {LORA_MODULES}, got {modules!r}")
    per_layer = sum(rank * (shapes[m][0] + shapes[m][1]) for m in modules)
    return _arch(model).num_hidden_layers * per_layer


def fedgrpo_breakdown(
    n_samples: int = 2000,
    n_policies: int = 8,
    M: int = 2,
    rounds: int = 320,
    *,
    epochs: int = 1,
    n_clients: int = 8,
    L: int = 20,
    n_aux: int = 100,
    competence: str = "cached",
    bytes_per_reward: float = 4,
    question_tokens: int = 512,
    answer_tokens: int = 2048,
    bytes_per_token: float = 4,
    header_bytes: float = 0,
) -> dict[str, int]:
    """Every exchange of a FedGRPO run, in bytes, one entry per kind (Algorithm 1).

    With ``Q = n_samples · epochs`` questions, ``G = n_policies``, ``K = n_clients``:

    - ``rewards_up``: experts → server, ``Q · M · G`` rewards ``r_k^s`` (lines 15–16). This is all
      the paper's 2.4 MB claims to count.
    - ``competence_up``: clients → server. ``"per_query"`` (Algorithm 1 lines 7–9 literally): every
      client sends ``r_k^p`` for every question, ``Q · K`` scalars. ``"cached"`` (the text's
      running estimate, :class:`fedrl_kit.fedgrpo.expert_selection.CompetenceCache`): one flag per client
      and auxiliary item, ``K · n_aux``. ``"none"``: 0.
    - ``competence_down``: server → clients, the exemplars ``(x_p, y_p)`` they are scored on:
      ``Q · K · L`` (per_query, line 6) or ``K · n_aux`` (cached) texts of
      ``question_tokens + answer_tokens`` tokens.
    - ``candidates_down``: server → experts, ``⟨x_s, ŷ⟩`` (line 12): ``Q · M`` texts of
      ``question_tokens + G · answer_tokens`` tokens.
    - ``headers``: ``header_bytes`` of framing per client message per round, with
      ``min(K, M · ⌈Q / rounds⌉)`` experts reporting each round. This is the only place ``rounds``
      enters: the reward volume does not depend on how the questions are batched into rounds.

    Args:
        n_samples: training questions ``|D_s|`` (paper: 2,000).
        n_policies: candidates per question ``G`` (paper: 8).
        M: experts per question (paper: 2), ``1 ≤ M ≤ n_clients``.
        rounds: communication rounds the questions are spread over (paper: 320).
        epochs: passes over the ``n_samples`` questions.
        n_clients: ``K`` (paper: 4–20; 8 in Appendix C).
        L: exemplars per question (paper: 20), ``1 ≤ L ≤ n_aux``.
        n_aux: auxiliary set size ``|D_p|`` (paper: 100).
        competence: ``"cached"``, ``"per_query"`` or ``"none"``.
        bytes_per_reward: bytes per scalar (float32: 4).
        question_tokens: tokens per question text.
        answer_tokens: tokens per answer text.
        bytes_per_token: bytes per token of text.
        header_bytes: framing bytes per client message.

    Returns:
        ``{"rewards_up", "competence_up", "competence_down", "candidates_down", "headers"}`` → bytes.

    Raises:
        ValueError: on a negative size, ``M`` or ``L`` out of range, or an unknown ``competence``.
    """
    for name, value in (("n_samples", n_samples), ("epochs", epochs), ("question_tokens", question_tokens),
                        ("answer_tokens", answer_tokens)):
        _check_int(value, name, 0)
    for name, value in (("n_policies", n_policies), ("rounds", rounds), ("n_clients", n_clients),
                        ("n_aux", n_aux)):
        _check_int(value, name, 1)
    _check_int(M, "M", 1)
    if M > n_clients:
        raise ValueError(f"M must be in [1, n_clients={n_clients}], got {M}")
    _check_int(L, "L", 1)
    if L > n_aux:
        raise ValueError(f"L must be in [1, n_aux={n_aux}], got {L}")
    for name, value in (("bytes_per_reward", bytes_per_reward), ("bytes_per_token", bytes_per_token),
                        ("header_bytes", header_bytes)):
        _check_nonneg(value, name)
    if competence not in ("cached", "per_query", "none"):
        raise ValueError(f"competence must be one of ('cached', 'per_query', 'none'), got {competence!r}")

    n_queries = n_samples * epochs
    exemplar_bytes = (question_tokens + answer_tokens) * bytes_per_token
    if competence == "per_query":
        comp_up = n_queries * n_clients * bytes_per_reward
        comp_down = n_queries * n_clients * L * exemplar_bytes
    elif competence == "cached":
        comp_up = n_clients * n_aux * bytes_per_reward
        comp_down = n_clients * n_aux * exemplar_bytes
    else:
        comp_up = comp_down = 0
    reporting = min(n_clients, M * math.ceil(n_queries / rounds))
    return {
        "rewards_up": round(n_queries * M * n_policies * bytes_per_reward),
        "competence_up": round(comp_up),
        "competence_down": round(comp_down),
        "candidates_down": round(n_queries * M * (question_tokens + n_policies * answer_tokens) * bytes_per_token),
        "headers": round(rounds * reporting * header_bytes),
    }


def fedgrpo_bytes(
    n_samples: int = 2000,
    n_policies: int = 8,
    M: int = 2,
    rounds: int = 320,
    *,
    include: Sequence[str] = ("rewards_up", "headers"),
    **assumptions,
) -> int:
    """FedGRPO's communication over a run: the parts of :func:`fedgrpo_breakdown` in ``include``.

    The default counts what the paper says it counts — the experts' rewards (``Q·M·G`` scalars) —
    plus message framing (0 bytes unless ``header_bytes`` is set). With the defaults:
    ``2000 · 2 · 8 · 4 B = 128,000 B`` (paper: 2.4 MB).

    Args:
        n_samples: training questions (paper: 2,000).
        n_policies: candidates per question ``G`` (paper: 8).
        M: experts per question (paper: 2).
        rounds: communication rounds (paper: 320).
        include: keys of :func:`fedgrpo_breakdown` to add up.
        **assumptions: the other keyword arguments of :func:`fedgrpo_breakdown`.

    Returns:
        total bytes.

    Raises:
        ValueError: on an unknown key in ``include`` or a bad assumption.
    """
    parts = fedgrpo_breakdown(n_samples, n_policies, M, rounds, **assumptions)
    unknown = [k for k in include if k not in parts]
    if unknown:
        raise ValueError(f"include must name keys from {tuple(parts)}, got unknown {unknown}")
    return sum(parts[k] for k in dict.fromkeys(include))


def dpsda_bytes(
    n_samples: int = 2000,
    *,
    synthetic_per_sample: float = 1.0,
    question_tokens: int = 512,
    answer_tokens: int = 2048,
    bytes_per_token: float = 4,
) -> int:
    """DPSDA-FL's communication: the clients upload synthetic (question, answer) texts once.

    ``round(n_samples · synthetic_per_sample) · (question_tokens + answer_tokens) · bytes_per_token``.
    The volume does not depend on the server model. Defaults: ``2000 · 2560 · 4 B = 20.48 MB``
    (paper: 102.5 MB).

    Args:
        n_samples: training questions (paper: 2,000).
        synthetic_per_sample: synthetic samples uploaded per training question, ``≥ 0``.
        question_tokens: tokens per synthetic question.
        answer_tokens: tokens per synthetic answer.
        bytes_per_token: bytes per token of text.

    Returns:
        total bytes.

    Raises:
        ValueError: on a negative size.
    """
    _check_int(n_samples, "n_samples", 0)
    _check_int(question_tokens, "question_tokens", 0)
    _check_int(answer_tokens, "answer_tokens", 0)
    _check_nonneg(synthetic_per_sample, "synthetic_per_sample")
    _check_nonneg(bytes_per_token, "bytes_per_token")
    n_synthetic = round(n_samples * synthetic_per_sample)
    return round(n_synthetic * (question_tokens + answer_tokens) * bytes_per_token)


def fedpetuning_bytes(
    model: QwenArch | str = "Qwen2.5-7B",
    lora_rank: int = 8,
    *,
    target_modules: Sequence[str] = ("q_proj", "v_proj"),
    n_clients: int = 8,
    rounds: int = 320,
    bytes_per_param: float = 2,
    count_download: bool = False,
) -> int:
    """FedPETuning's communication: every client uploads its LoRA adapter every round.

    ``lora_param_count · bytes_per_param · n_clients · rounds``, doubled with ``count_download``
    (the server broadcasting the aggregated adapter back). Defaults on Qwen2.5-7B:
    ``2,523,136 · 2 B · 8 · 320 = 12.9 GB`` (paper: 6.1 GB).

    Args:
        model: a :class:`QwenArch` or a Qwen2.5 model name.
        lora_rank: LoRA rank ``r`` (peft default 8).
        target_modules: adapted linear layers (peft's default for Qwen2: ``q_proj, v_proj``).
        n_clients: clients uploading each round (full participation).
        rounds: communication rounds (paper: 320).
        bytes_per_param: 2 for bf16 (the paper trains in BF16), 4 for float32.
        count_download: also count the server → client broadcast.

    Returns:
        total bytes.

    Raises:
        ValueError: on an unknown model/module or a bad count.
    """
    _check_int(n_clients, "n_clients", 1)
    _check_int(rounds, "rounds", 1)
    _check_nonneg(bytes_per_param, "bytes_per_param")
    params = lora_param_count(model, lora_rank, target_modules)
    directions = 2 if count_download else 1
    return round(params * bytes_per_param * n_clients * rounds * directions)


class Figure2Row(NamedTuple):
    """One bar of Figure 2: our count beside the number the paper quotes (``None``: not quoted)."""

    method: str
    model: str
    our_bytes: int
    paper_bytes: float | None

    @property
    def ratio(self) -> float | None:
        """``our_bytes / paper_bytes`` (``None`` where the paper quotes no number)."""
        return None if self.paper_bytes is None else self.our_bytes / self.paper_bytes


def paper_figure2_table() -> list[Figure2Row]:
    """Our default counts beside §4.4's 2.4 MB, 102.5 MB and 6.1 GB.

    FedGRPO and DPSDA-FL do not depend on the server model (``model="any"``); the paper quotes
    FedPETuning only for 7B, so the 1.5B and 3B rows have ``paper_bytes=None``.

    Returns:
        rows ``(method, model, our_bytes, paper_bytes)``.
    """
    rows = [
        Figure2Row("FedGRPO", "any", fedgrpo_bytes(), PAPER_FIGURE2_BYTES["FedGRPO"]),
        Figure2Row("DPSDA-FL", "any", dpsda_bytes(), PAPER_FIGURE2_BYTES["DPSDA-FL"]),
    ]
    for name in QWEN25_ARCHS:
        paper = PAPER_FIGURE2_BYTES.get(f"FedPETuning/{name}")
        rows.append(Figure2Row("FedPETuning", name, fedpetuning_bytes(name), paper))
    return rows


def human_bytes(n: float) -> str:
    """Decimal units, as the paper writes them: ``human_bytes(2.4e6) == "2.4 MB"``."""
    _check_nonneg(n, "n")
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} B"
