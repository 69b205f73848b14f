"""FedGRPO's typed arguments (``config.fedgrpo``), the DPSDA-FL baselines' (``config.dpsda``) and the
clients' evaluator SFT settings that both use (``config.evaluator``).

Each field is documented under it; :meth:`check` raises ``ValueError`` naming the field
(``fedgrpo.num_experts must be an integer in [1, num_clients = 4], got 7``).
"""

from __future__ import annotations

from dataclasses import dataclass

from fedrl_kit.args import Args
from fedrl_kit.fedgrpo.group_reward import ADVANTAGE_VARIANTS, AGGREGATIONS, MALICIOUS_KINDS

MODES = ("with_gt", "no_gt")
QUERIES = ("train", "public")
ME_SCORES = ("probability", "agreement")
COMPETENCE_SCORES = ("probability", "greedy")
ENCODERS = ("policy", "minilm")
SERVER_UPDATES = ("lora", "full")
AE_HOLDERS = ("owner", "all")
SELECTIONS = ("competence", "random")
NO_GT_SCORERS = ("expert", "subject")


@dataclass
class FedGRPOArgs(Args):
    """FedGRPO (Zhu et al., AAAI 2026): expert selection, dual evaluation, group-relative aggregation."""

    SECTION = "fedgrpo"

    @classmethod
    def migrate(cls, section: dict) -> dict:
        """A whole fedgrpo section written before D_s became the training pool (config.json writes every field):
        its D_s was world.public, and its group_reward "official" is today's "pooled"; one written before
        ae_holders: the owners held the labels."""
        if {"gt_fraction", "group_reward"} <= set(section) and "queries" not in section:
            section = dict(section, queries="public")
            if section["group_reward"] == "official":
                section["group_reward"] = "pooled"
        # a whole section written before ae_holders existed: its labels were the owners' (the official protocol's
        # own is "all" now), so a resumed run goes on as it started
        if {"group_reward", "me_score", "server_update"} <= set(section) and "ae_holders" not in section:
            section = dict(section, ae_holders="owner")
        # a whole section written before me_score existed scored ME by probability, the default until agreement
        # took its place: a resumed run keeps the score it started with
        if {"group_reward", "server_update"} <= set(section) and "me_score" not in section:
            section = dict(section, me_score="probability")
        return section

    num_experts: int = 2
    """M, experts per question (Top-M of eq. 6; 1 <= M <= num_clients)"""
    neighbours: int = 20
    """L, auxiliary exemplars per question (eq. 5; 1 <= L <= n_aux)"""
    group_reward: str = "paper"
    """advantage variant (eqs. 8-9): paper (experts score the same G candidates; their mean, GRPO-normalised over
    the candidates), pooled (the same candidates; the M·G scores normalised as one pool, then averaged per
    candidate), per_expert (each expert's row normalised, then averaged), or official (the official code's
    protocol: M random experts per question, G·M candidates, each expert scores its own block of G, one pooled
    group; no competence step)"""
    group_coef: float = 8.0
    """weight of the experts' reward (Appendix A)"""
    format_coef: float = 1.0
    """weight of the format reward (Remark 1, Appendix A)"""
    scale_rewards: bool | None = None
    """divide the advantages by the group's std (true, eq. 9) or only centre them (false, the official scripts);
    null = the variant's own: false for official, true for the others"""
    mode: str = "with_gt"
    """with_gt (section 4.2: the clients hold the labels of their D_s questions, AE where a selected expert does)
    or no_gt (section 4.3: no client holds a D_s label, ME only)"""
    ae_holders: str | None = None
    """with_gt: which clients hold a labelled D_s question's answer, and so score it by the exact-answer check (AE):
    owner (the client the partition gives it to; every other expert scores it with its model, ME) or all (every
    client holds every label, as in the official trainer, where each client runs with training_mode='gt'); null =
    the variant's own: all for group_reward=official, owner for the others. The evaluators train on D_k either way"""
    selection: str = "competence"
    """how the server picks each question's M experts: competence (Top-M of eq. 6 over the confidence graph, the
    paper) or random (M distinct available clients drawn uniformly per question, stream fedgrpo/random_experts: the
    control that tells what competence-based selection adds; no competence is asked)"""
    queries: str = "train"
    """D_s, the server's unlabelled questions: train (the training pool, spread over the clients by the
    partition, as in the paper and as every baseline trains on) or public (world.public with labels handed to
    clients by topic: the setting of the results stored before this field existed; gt_fraction 0.5 there)"""
    gt_fraction: float = 1.0
    """queries=train: the share of the training pool whose labels the clients hold (each on the client the
    partition gives the question to; drawn per question). with_gt: D_s is the whole pool, AE on this share;
    no_gt: D_s is the unlabelled rest and this share only trains the clients' evaluators, so it must be < 1
    (e.g. 0.667, the official code's reward-model split). queries=public: the share of D_s questions some
    client holds with their answer"""
    questions_per_step: int = 0
    """questions Q per server step (each with G candidates); 0 = b·K (prompts_per_step × num_clients, the
    rollouts of a Central-GRPO or FedAvg-GRPO step). A number > 0 fixes Q whatever K is (the K and M ablations)"""
    me_score: str = "agreement"
    """ME score: agreement (1 if the candidate's answer is the model's greedy one, else 0: 0/1 like AE scores, so the
    values hide who owns a question) or probability (strictly inside (0, 1): beside the owners' 0/1 checks it reveals
    them; the stored runs used it); docs/fedgrpo.md, "What the score values reveal"."""
    no_gt_scorer: str = "expert"
    """mode=no_gt only: whose model scores a question's candidates. expert (each selected expert's own theta_k, by
    me_score) or subject (the official code's: the reward model of the question's subject group, GRPO-trained on the
    labelled questions of that group held by the client holding most of them; one answer sampled per candidate at
    temperature 1.0, top-p 0.95, score 1 if it agrees with the candidate's, else 0; every expert of a question returns
    those same scores, me_score is not used); fedrl_kit/fedgrpo/subject_scorer.py"""
    malicious: int = 0
    """number of malicious clients (the last indices), who falsify their candidate scores"""
    malicious_kind: str = "flip"
    """what malicious clients send: flip (1 - r) or random"""
    robust: str = "mean"
    """expert aggregation A(.) of eq. 8: mean, median or trimmed_mean (median/trimmed need group_reward=paper)"""
    trim: float = 0.2
    """trimmed_mean: fraction cut at each end"""
    competence: str = "probability"
    """r_k^p cells: probability of y_p under the client model, or greedy (0/1 indicator of line 8)"""
    encoder: str = "policy"
    """phi: policy (the frozen base's hidden states, mean-pooled) or minilm (sentence-transformers)"""
    encoder_layer: int = 1
    """which hidden states phi pools (policy encoder): 0 = token embeddings, i = after decoder layer i, -1 = last"""
    server_update: str = "lora"
    """what line 21 trains of the server's policy: lora (its global LoRA adapter) or full (every base weight, as
    the official code does below 14B; the clients' evaluators then live on a copy of the model; needs beta = 0)"""

    def check_own(self) -> None:
        self.need(self.num_experts >= 1, "num_experts", "an integer >= 1")
        self.need(self.neighbours >= 1, "neighbours", "an integer >= 1")
        self.need(self.malicious >= 0, "malicious", "an integer >= 0")
        self.need(self.group_reward in ADVANTAGE_VARIANTS, "group_reward", f"one of {ADVANTAGE_VARIANTS}")
        self.need(self.group_coef >= 0, "group_coef", "a finite number >= 0")
        self.need(self.format_coef >= 0, "format_coef", "a finite number >= 0")
        self.need(self.mode in MODES, "mode", f"one of {MODES}")
        self.need(self.queries in QUERIES, "queries", f"one of {QUERIES}")
        self.need(self.ae_holders is None or self.ae_holders in AE_HOLDERS, "ae_holders",
                  f"one of {AE_HOLDERS} or null (the variant's own)")
        self.need(self.selection in SELECTIONS, "selection", f"one of {SELECTIONS}")
        self.need(self.selection == "competence" or self.group_reward != "official", "selection",
                  "'competence' with group_reward='official' (the official protocol draws its experts at random "
                  "once per run already)")
        self.need(0 <= self.gt_fraction <= 1, "gt_fraction", "a number in [0, 1]")
        if self.queries == "train" and self.mode == "with_gt":
            self.need(self.gt_fraction > 0, "gt_fraction",
                      "> 0 with queries='train' and mode='with_gt' (the clients' evaluators train on the labels "
                      "they hold; for no labels use mode='no_gt')")
        if self.queries == "train" and self.mode == "no_gt":
            self.need(0 < self.gt_fraction < 1, "gt_fraction",
                      "in (0, 1) with queries='train' and mode='no_gt' (that share of the pool trains the clients' "
                      "evaluators, D_s is the unlabelled rest; e.g. 0.667, the official code's reward-model split)")
        self.need(0 <= self.questions_per_step <= 100_000, "questions_per_step",
                  "an integer in [0, 100000] (0 = prompts_per_step x num_clients)")
        self.need(self.me_score in ME_SCORES, "me_score", f"one of {ME_SCORES}")
        self.need(self.no_gt_scorer in NO_GT_SCORERS, "no_gt_scorer", f"one of {NO_GT_SCORERS}")
        self.need(self.no_gt_scorer == "expert" or self.mode == "no_gt", "no_gt_scorer",
                  "'expert' unless mode='no_gt' (the subject reward models are the official code's scorer for the "
                  "setting without ground truth)")
        self.need(self.malicious_kind in MALICIOUS_KINDS, "malicious_kind", f"one of {MALICIOUS_KINDS}")
        self.need(self.robust in AGGREGATIONS, "robust", f"one of {AGGREGATIONS}")
        self.need(self.robust == "mean" or self.group_reward == "paper", "robust",
                  f"'mean' unless group_reward is 'paper' (group_reward={self.group_reward!r} averages by construction)")
        self.need(0 <= self.trim < 0.5, "trim", "a number in [0, 0.5)")
        self.need(self.competence in COMPETENCE_SCORES, "competence", f"one of {COMPETENCE_SCORES}")
        self.need(self.encoder in ENCODERS, "encoder", f"one of {ENCODERS}")
        self.need(-1 <= self.encoder_layer <= 1000, "encoder_layer",
                  "an integer >= -1 (0 = token embeddings, i = output of decoder layer i, -1 = last)")
        self.need(self.server_update in SERVER_UPDATES, "server_update", f"one of {SERVER_UPDATES}")

    def holders(self) -> str:
        """``ae_holders`` resolved: the official protocol's own is "all" (every client holds every label)."""
        if self.ae_holders is not None:
            return self.ae_holders
        return "all" if self.group_reward == "official" else "owner"

    def check(self, config) -> None:
        K, n_aux = config.num_clients, config.n_aux
        self.need(1 <= self.num_experts <= K, "num_experts", f"an integer in [1, num_clients = {K}]")
        self.need(1 <= self.neighbours <= max(n_aux, 1), "neighbours", f"an integer in [1, n_aux = {n_aux}]")
        self.need(0 <= self.malicious <= K, "malicious", f"an integer in [0, num_clients = {K}]")
        self.need(self.server_update == "lora" or config.beta == 0, "server_update",
                  f"'lora' when beta > 0 (beta = {config.beta}: the KL reference is the base, which 'full' trains)")


EVALUATOR_TRAINING = ("sft", "grpo")


@dataclass
class EvaluatorArgs(Args):
    """The clients' domain models theta_k (FedGRPO's evaluators, DPSDA-FL's labellers): a LoRA adapter trained on
    D_k by a short SFT (default) or by GRPO (the paper's section 4.3 reward models)."""

    SECTION = "evaluator"

    training: str = "sft"
    """how theta_k is trained on D_k: sft (question -> answer) or grpo (the paper's reward models, section 4.3 and
    Appendix: GRPO with the reward 8 accuracy + 1 format on the client's labelled questions)"""
    grpo_steps: int = 10
    """training=grpo: GRPO steps of each client's model on its private data"""
    grpo_prompts: int = 8
    """training=grpo: private questions per GRPO step"""
    grpo_generations: int = 8
    """training=grpo: completions per question in a GRPO step (the group size)"""
    grpo_lr: float = 2e-3
    """training=grpo: Adam learning rate of that GRPO"""
    samples: int = 4
    """training=grpo: answers a GRPO-trained model samples per question to estimate the probability of an
    answer (its ME score and its soft competence; an SFT model's probability is read off exactly)"""
    sft_steps: int = 60
    """SFT steps of each client's model on its private data"""
    sft_batch: int = 32
    """(question, answer) pairs per SFT step"""
    lr: float = 5e-3
    """Adam learning rate of that SFT"""

    def check_own(self) -> None:
        self.need(self.training in EVALUATOR_TRAINING, "training", f"one of {EVALUATOR_TRAINING}")
        self.need(0 <= self.grpo_steps <= 100_000, "grpo_steps", "an integer in [0, 100000]")
        self.need(1 <= self.grpo_prompts <= 4096, "grpo_prompts", "an integer in [1, 4096]")
        self.need(2 <= self.grpo_generations <= 1024, "grpo_generations",
                  "an integer in [2, 1024] (a group needs two completions)")
        self.need(0 < self.grpo_lr <= 1, "grpo_lr", "a number in (0, 1]")
        self.need(1 <= self.samples <= 1024, "samples", "an integer in [1, 1024]")
        self.need(0 <= self.sft_steps <= 100_000, "sft_steps", "an integer in [0, 100000]")
        self.need(1 <= self.sft_batch <= 4096, "sft_batch", "an integer in [1, 4096]")
        self.need(0 < self.lr <= 1, "lr", "a number in (0, 1]")


@dataclass
class DPSDAArgs(Args):
    """DPSDA-FL (the FedGRPO paper's data-level baseline): DP synthetic data from each client."""

    SECTION = "dpsda"

    dp_epsilon: float = 1.0
    """epsilon of the Laplace noise on each client's topic histogram (0 = no noise)"""
    synthetic_per_client: int = 0
    """synthetic (question, answer) pairs per client (0 = the client's |D_k|)"""

    def check_own(self) -> None:
        self.need(self.dp_epsilon >= 0, "dp_epsilon", "a finite number >= 0 (0 = no noise)")
        self.need(0 <= self.synthetic_per_client <= 1_000_000, "synthetic_per_client",
                  "an integer in [0, 1000000] (0 = the client's |D_k|)")
