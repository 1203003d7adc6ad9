"""MQAN (paper Section 3, Appendix E) and its Table 2 baselines, as one module.

Variants (`ModelConfig.variant`), each adding to the previous one:
  s2s   pointer-generator over the concatenation "Context: c Question: q": projection, BiLSTM, LSTM
        decoder with attention, and one switch between the vocabulary and the pointer
  satt  + compression BiLSTM, self-attentive encoder layers, final BiLSTM; self-attentive decoder layers
  catt  + context and question encoded separately, dual coattention (context pointer only)
  qptr  + question arm and question pointer with its switch: MQAN (`mqan` is an alias)

One computation for training and decoding: `token_log_probs` (teacher forcing) and `greedy` (its loops in
mqan/greedy.py and mqan/static_decode.py) call the same step functions (`answer_features`, `recurrent_step`;
greedy through the one public decoding step, `decode_step`, the interface of mqan/decoding.py); greedy keeps
the keys/values of past decoder positions (`new_cache`) and attends to C_fin directly (`MultiHead.attend_one`),
so nothing is recomputed. The output distribution (Eq. 13) lives in mqan/mixture.py: the loss needs only
each target's probability, computed in log space from the three sources, and greedy decoding only the
most probable token, so neither builds the extended-vocabulary distribution.
Shapes: B batch, L context, M question, T answer steps, d dimension, V generative vocabulary,
X extended vocabulary of the batch (V + batch-local tokens), N selected answer positions.

Where the paper is silent or the original code differs, this module follows the paper's equations:
- multi-head attention as Eqs. 22-23 read literally: each head projects to d (`head_dim`, default d),
  scale 1/sqrt(d), output matrix W_o; the original chunks one d-projection into heads of 67/67/66,
  scales by sqrt(200) and has no W_o (`head_dim: 67` gives heads of about d/p with W_o);
- coattention without the original's extra tanh projection of the question (Eq. 17 has none);
- the decoder attends to C_fin in both layers (Eq. 5; the original trains on another encoder layer
  than it decodes with), adds the answer projection unscaled (Eq. 3) and always masks context padding;
- decoder attention is bilinear, softmax(X W h) (Eq. 8; the original declared W but used a dot product);
  the switches see [c~_t ; h_t ; A_self] (Eq. 12; the original also fed the previous c~);
- from the original, where the paper says nothing: the decoder LSTM starts from the final state of the
  context's last BiLSTM, c~_0 = 0, positions start at 0, W_v has a bias; post-norm residual layers;
- dropout (App. D, "generally after any linear transformation"): on inputs to every LSTM, on C_com before
  the first self-attention layer, on attention weights, on each residual branch, inside the feed-forward
  layers, on A_proj + PE, on the switch inputs (Eq. 12) and before W_v (on a CPU not Intel's, its mask is
  drawn by mqan/cpu_routes.py, as is greedy decoding's product with W_v);
- input features: see mqan/inputs.py (every token featurized from its string; the paper's frozen GloVe +
  char n-grams, optionally with trained parts); word dropout (not in the paper) hides context tokens only.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Generator

import torch
from torch import nn

from deca.config import ModelConfig
from mqan import greedy, mixture
from mqan.batch import Batch, Sequences
from mqan.decoding import Attended, Encoded, Step
from mqan.cpu_routes import Dropout, VocabProjection
from mqan.greedy import GreedyOutput
from mqan.inputs import Featurizer, InputEmbedding
from mqan.layers import (Arm, BiLSTM, Coattention, DecoderLayer, DecoderLSTM, KVCache, PointerAttention,
                         positional_encodings)
from mqan.vectors import VectorSource, open_source
from mqan.vocab import INIT_ID, PAD_ID, UNK_ID, Vocab
from mqan.vocab_log_prob import wide


@dataclass(frozen=True)
class Arch:
    split: bool  # context and question as two inputs (else their concatenation)
    self_attention: bool
    coattention: bool
    question_pointer: bool


VARIANTS = {
    "s2s": Arch(False, False, False, False),
    "satt": Arch(False, True, False, False),
    "catt": Arch(True, True, True, False),
    "qptr": Arch(True, True, True, True),
    "mqan": Arch(True, True, True, True),
}


@dataclass
class TeacherForced:
    """The decoder run over a whole answer."""
    enc: Encoded
    targets: torch.Tensor  # [B, T] extended ids
    mask: torch.Tensor  # [B, T] real positions
    index: torch.Tensor  # [N] the real positions in the flattened [B * T], in row-major order
    steps: Attended  # leading shape [B, T]


@dataclass
class MixtureInputs:
    """What the output distribution (mqan/mixture.py) needs at the N real answer positions."""
    feats: torch.Tensor  # [N, d] the input of W_v (Eq. 11), dropout applied
    switches: mixture.Switches  # [N]
    pointers: mixture.Pointers  # [N, L] / [N, M]
    targets: torch.Tensor  # [N] extended ids


class MQAN(nn.Module):
    """The multitask question answering network; `cfg.variant` selects a Table 2 baseline."""

    def __init__(self, cfg: ModelConfig, vocab: Vocab, featurizer: Featurizer | None = None):
        super().__init__()
        if cfg.variant not in VARIANTS:
            raise ValueError(f"model.variant {cfg.variant!r} unknown; choose one of {', '.join(VARIANTS)}")
        if cfg.dimension % 2:
            raise ValueError(f"model.dimension must be even (BiLSTM halves), got {cfg.dimension}")
        if cfg.embedding_init_std <= 0:
            raise ValueError(f"model.embedding_init_std must be > 0, got {cfg.embedding_init_std}")
        if not 0.0 <= cfg.word_dropout < 1.0:
            raise ValueError(f"model.word_dropout must be in [0, 1), got {cfg.word_dropout}")
        self.cfg, self.vocab, self.arch = cfg, vocab, VARIANTS[cfg.variant]
        d, p, arch = cfg.dimension, cfg.dropout, self.arch
        head_dim = cfg.head_dim or d
        self.generative_size = vocab.generative_size
        featurizer = featurizer or Featurizer(buckets=cfg.char_ngram_buckets)
        if cfg.char_ngram_dim and featurizer.buckets != cfg.char_ngram_buckets:
            raise ValueError("the featurizer's char n-gram buckets differ from model.char_ngram_buckets")
        self.embed = InputEmbedding(vocab.itos, self.generative_size, featurizer, cfg.embedding_dim,
                                    cfg.char_ngram_dim, cfg.embedding_init_std)
        self.drop = Dropout(p)
        self.enc_proj = nn.Linear(self.embed.dim, d)  # W1, Eq. 15
        self.dec_proj = nn.Linear(self.embed.dim, d)  # W2, Eq. 2
        self.encode_ind = BiLSTM(d, d, cfg.rnn_layers, p)  # shared BiLSTM_ind, Eq. 16
        if arch.coattention:
            self.coattention = Coattention(d)
        if arch.self_attention:
            self.context_arm = Arm((4 if arch.coattention else 2) * d, cfg, head_dim)
            self.decoder_layers = nn.ModuleList(DecoderLayer(d, cfg.ff_hidden, cfg.heads, head_dim, p)
                                                for _ in range(cfg.transformer_layers))
        self.lstm = DecoderLSTM(2 * d, d, cfg.rnn_layers, p)  # Eq. 7, input [A_self ; c~_{t-1}]
        self.context_attn = PointerAttention(d)  # Eqs. 8-9
        self.vocab_switch = nn.Linear(3 * d, 1)  # gamma, Eq. 12
        if arch.question_pointer:
            self.question_arm = Arm(4 * d, cfg, head_dim)
            self.question_attn = PointerAttention(d)
            self.question_switch = nn.Linear(3 * d, 1)  # lambda, Eq. 12
        self.out = VocabProjection(d, self.generative_size)  # W_v, Eq. 11 (an nn.Linear)

    # ---- encoder -------------------------------------------------------------------------------------
    def _embed_input(self, seq: Sequences, features) -> torch.Tensor:
        """Encoder input embeddings [B, L, D]; in training, word dropout reads context tokens as UNK."""
        ids, p = seq.ext, self.cfg.word_dropout
        if self.training and p > 0:
            ids = ids.masked_fill((torch.rand(ids.shape, device=ids.device) < p) & seq.droppable, UNK_ID)
        return self.embed(ids, features)

    def encode(self, batch: Batch) -> Encoded:
        arch = self.arch
        feats = self.embed.batch_features(batch.oov_tokens, batch.answer_targets.device)
        if not arch.split:
            s = batch.context_question
            proj = self.enc_proj(self._embed_input(s, feats))  # [B, L, d]
            x, state = self.encode_ind(proj, s.packing(proj.device), final_state=not arch.self_attention)
            if arch.self_attention:
                x, state = self.context_arm(torch.cat([proj, x], -1), s)
            return Encoded(x, s.mask, s.ext, None, None, None, state, feats)
        c, q = batch.context, batch.question
        c_proj, q_proj = self.enc_proj(self._embed_input(c, feats)), self.enc_proj(self._embed_input(q, feats))
        c_ind, _ = self.encode_ind(c_proj, c.packing(c_proj.device), final_state=False)
        q_ind, _ = self.encode_ind(q_proj, q.packing(q_proj.device), final_state=False)
        q_sum, c_coa, c_sum, q_coa = self.coattention(c_ind, q_ind, c.mask, q.mask)
        c_fin, state = self.context_arm(torch.cat([c_proj, c_ind, q_sum, c_coa], -1), c)  # Eq. 20
        if not arch.question_pointer:
            return Encoded(c_fin, c.mask, c.ext, None, None, None, state, feats)
        q_fin, _ = self.question_arm(torch.cat([q_proj, q_ind, c_sum, q_coa], -1), q, final_state=False)  # Eq. 21
        return Encoded(c_fin, c.mask, c.ext, q_fin, q.mask, q.ext, state, feats)

    # ---- decoder pieces shared by teacher forcing and greedy decoding ---------------------------------
    @property
    def self_attentive(self) -> bool:
        """Self-attentive decoder layers (satt, catt, mqan): their keys/values are what a KVCache holds."""
        return self.arch.self_attention

    def new_cache(self, capacity: int, static: bool = False, device=None) -> KVCache:
        """An empty KVCache of `capacity` positions for the decoder layers (`static`: for CUDA graphs)."""
        return KVCache(len(getattr(self, "decoder_layers", ())), capacity, static, device)

    def answer_features(self, enc: Encoded, inputs: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        """Decoder inputs (extended ids [B, T]) -> LSTM inputs [B, T, d]: A_self, or A_proj for s2s.

        With a `cache` the T positions continue the prefix whose keys/values it holds (it writes theirs).
        """
        a = self.dec_proj(self.embed(inputs, enc.features))  # A_proj [B, T, d]
        if not self.arch.self_attention:
            return a
        T, d = inputs.shape[1], a.shape[-1]
        pe = positional_encodings(T, d, 0, a.device) if cache is None else cache.encodings(T, d, a.dtype, a.device)
        x = self.drop(a + pe)  # A_ppr
        for i, layer in enumerate(self.decoder_layers):
            x = layer(x, enc.context, enc.context_mask, cache, i)
        return x  # A_self [B, T, d]

    def recurrent_step(self, enc: Encoded, x: torch.Tensor, state, ctx_prev: torch.Tensor,
                       question: bool = True) -> tuple[Attended, tuple]:
        """One recurrent step (Eqs. 7-10): x [B, d], c~_{t-1} [B, d] -> (the step's outputs, the LSTM state). The
        question pointer only with `question`: its output is not fed back, so teacher forcing batches it."""
        h, state = self.lstm(torch.cat([x, ctx_prev], -1), state)
        ctx, log_ac = self.context_attn(h, enc.context, enc.context_mask)  # [B, d], [B, L]
        step = Attended(x, h, ctx, log_ac)
        if self.arch.question_pointer and question:
            step.question, step.log_question = self.question_attn(h, enc.question, enc.question_mask)
        return step, state

    def decode_step(self, enc: Encoded, inputs: torch.Tensor, state, ctx_prev: torch.Tensor,
                    cache: KVCache | None) -> Step:
        """The one decoding step of every greedy path (mqan/decoding.py): the decoder's inputs (extended ids
        [B, T]: the previous token, T = 1, after the prefix in `cache`; or the whole prefix, no cache), the
        LSTM state and c~_{t-1} [B, d] -> the next position's output sources (Eq. 13) and recurrent state.
        No host synchronisation and, with a static cache, no shape that depends on the step (CUDA graphs)."""
        x = self.answer_features(enc, inputs, cache)[:, -1]  # [B, d]
        out, state = self.recurrent_step(enc, x, state, ctx_prev)
        p_vocab = torch.softmax(wide(self._logits(out.context)), -1)  # [B, V], fp32 under bf16 autocast too
        pointers = mixture.Pointers(wide(out.log_context), enc.context_ext,
                                    None if out.log_question is None else wide(out.log_question), enc.question_ext)
        if cache is not None:
            cache.advance(inputs.shape[1])
        return Step(out, state, p_vocab, self._switches(out).weights(), pointers)

    def _logits(self, ctx: torch.Tensor) -> torch.Tensor:
        """Vocabulary scores W_v c~_t (Eq. 11), [..., d] -> [..., V]."""
        return self.out(self.drop(ctx))

    def _switches(self, a: Attended) -> mixture.Switches:
        """Switch logits (gamma, lambda) for any leading shape [..., d] -> [...]; dropout on their inputs."""
        sv = self.vocab_switch(self.drop(torch.cat([a.context, a.h, a.x], -1))).squeeze(-1)
        sq = (self.question_switch(self.drop(torch.cat([a.question, a.h, a.x], -1))).squeeze(-1)
              if self.arch.question_pointer else None)
        return mixture.Switches(wide(sv), None if sq is None else wide(sq))  # fp32 under bf16 autocast

    # ---- teacher forcing --------------------------------------------------------------------------------
    def _teacher_forced(self, batch: Batch, targets: torch.Tensor | None,
                        mask: torch.Tensor | None = None) -> TeacherForced:
        """Run the decoder on the gold answer, or on `targets` (extended ids [B, T]; `mask` [B, T] marks the
        real positions, by default those that are not PAD_ID)."""
        if targets is None:  # the gold answers: their real positions were found on the CPU (no device sync)
            inputs, targets, mask, index = batch.answer_inputs, batch.answer_targets, batch.answer_mask, batch.answer_index
        else:
            mask = targets != PAD_ID if mask is None else mask
            index = mask.flatten().nonzero()[:, 0]
            init = torch.full_like(targets[:, :1], INIT_ID)
            inputs = torch.cat([init, targets[:, :-1]], 1)
        enc = self.encode(batch)
        x = self.answer_features(enc, inputs)  # [B, T, d]
        state, ctx = enc.state, x.new_zeros(x.shape[0], x.shape[2])
        hs, ctxs, log_acs = [], [], []
        for t in range(x.shape[1]):
            step, state = self.recurrent_step(enc, x[:, t], state, ctx, question=False)
            ctx = step.context
            hs.append(step.h), ctxs.append(step.context), log_acs.append(step.log_context)
        steps = Attended(x, torch.stack(hs, 1), torch.stack(ctxs, 1), torch.stack(log_acs, 1))  # [B, T, ...]
        if self.arch.question_pointer:  # every step at once: q~_t and a^Q_t depend on h_t only
            steps.question, steps.log_question = self.question_attn(steps.h, enc.question, enc.question_mask)
        return TeacherForced(enc, targets, mask, index, steps)

    def _select(self, tf: TeacherForced) -> MixtureInputs:
        """The real answer positions of a teacher-forced run (its index) -> the inputs of the mixture functions.

        Rows are picked with `index_select` on the precomputed index: the same rows, in the same order, as
        boolean-mask indexing, without the host synchronisation that a data-dependent size costs on a GPU."""
        enc, idx, s = tf.enc, tf.index, tf.steps
        b = torch.div(idx, tf.mask.shape[1], rounding_mode="floor")  # example of each selected position, [N]

        def pick(t):  # [B, T, ...] -> [N, ...]
            return None if t is None else t.flatten(0, 1).index_select(0, idx)

        rows = Attended(pick(s.x), pick(s.h), pick(s.context), pick(s.log_context), pick(s.question),
                        pick(s.log_question))
        pointers = mixture.Pointers(wide(rows.log_context), enc.context_ext.index_select(0, b),
                                    None if rows.log_question is None else wide(rows.log_question),
                                    None if rows.log_question is None else enc.question_ext.index_select(0, b))
        switches = self._switches(rows)  # before W_v's dropout: the order in which dropout draws its masks
        feats = self.drop(rows.context)  # [N, d]: the input of W_v (Eq. 11) at the real answer positions only
        return MixtureInputs(feats, switches, pointers, pick(tf.targets))

    def _target_log_probs(self, tf: TeacherForced) -> torch.Tensor:
        """[N] log p of the targets at the real answer positions (Eq. 13)."""
        m = self._select(tf)
        return mixture.target_log_probs(self.out, m.feats, m.switches, m.pointers, m.targets)

    def token_log_probs(self, batch: Batch, targets: torch.Tensor | None = None,
                        mask: torch.Tensor | None = None) -> torch.Tensor:
        """[B, T] log p of each answer target (gold, or `targets` / `mask`), 0 at padding."""
        tf = self._teacher_forced(batch, targets, mask)
        lp = self._target_log_probs(tf)
        return torch.zeros(tf.mask.shape, dtype=lp.dtype, device=lp.device).masked_scatter(tf.mask, lp)

    def forward(self, batch: Batch, reduction: str = "mean") -> torch.Tensor:
        """Token-level NLL of the gold answers: mean (default) or sum over the non-pad answer tokens."""
        nll = -self._target_log_probs(self._teacher_forced(batch, None))
        if reduction == "sum":
            return nll.sum()
        if reduction != "mean":
            raise ValueError(f"reduction must be 'mean' or 'sum', got {reduction!r}")
        return nll.mean()

    def distributions(self, batch: Batch, targets: torch.Tensor | None = None,
                      mask: torch.Tensor | None = None) -> torch.Tensor:
        """[B, T, X] mixed output distributions under teacher forcing (0 rows at padding). For tests/analysis."""
        tf = self._teacher_forced(batch, targets, mask)
        m = self._select(tf)
        p = mixture.distribution(self.out(m.feats), m.switches.weights(), m.pointers, batch.extended_size)
        out = p.new_zeros(*tf.mask.shape, p.shape[-1])
        out[tf.mask] = p
        return out

    # ---- greedy decoding --------------------------------------------------------------------------------
    @torch.no_grad()
    def greedy(self, batch: Batch, max_len: int | None = None, incremental: bool = True,
               explain: bool = False, cuda_graphs: bool = False) -> GreedyOutput:
        """Batched greedy decoding (eval mode) until every answer has <eos> or `max_len` steps.

        `incremental=False` recomputes the self-attentive decoder over the whole prefix (and the keys/
        values of C_fin) at every step, as the original did: same outputs, for benchmarks and tests.
        `explain` also returns each chosen token's probability from each source (`contributions`).
        `cuda_graphs` decodes with static shapes (mqan/static_decode.py), one step captured as a CUDA
        graph and replayed on a GPU (run eagerly on a CPU); not with `explain` or `incremental=False`.
        """
        was_training = self.training
        self.eval()
        max_len = max_len or self.cfg.max_answer_length
        try:
            if cuda_graphs and incremental and not explain:
                return greedy.static(self, batch, max_len)
            return self._greedy(batch, max_len, incremental, explain)
        finally:
            self.train(was_training)

    def greedy_steps(self, batch: Batch, max_len: int | None = None,
                     explain: bool = False) -> Generator[None, None, GreedyOutput]:
        """`greedy` (incremental, the model in eval mode) as a generator that yields after the encoder and after
        each decoding step, so that its caller can do other work in between (`deca serve` runs other calls'
        batches there); its return value is greedy's output."""
        if self.training:
            raise RuntimeError("greedy_steps needs the model in eval mode (model.eval())")
        return greedy.steps(self, batch, max_len or self.cfg.max_answer_length, True, explain)

    def _greedy(self, batch: Batch, max_len: int, incremental: bool, explain: bool = False) -> GreedyOutput:
        steps = greedy.steps(self, batch, max_len, incremental, explain)
        while True:
            try:
                next(steps)
            except StopIteration as done:
                return done.value


def build_model(cfg: ModelConfig, vocab: Vocab, word_vectors: VectorSource | None = None,
                char_vectors: VectorSource | None = None, progress: bool = False) -> MQAN:
    """The model of `cfg` for `vocab`. The pre-trained sources named in `cfg` (model.word_vectors,
    model.char_vectors) are opened unless given; trained parts follow model.embedding_dim / char_ngram_dim."""
    if word_vectors is None and cfg.word_vectors:
        word_vectors = open_source(cfg.word_vectors, progress=progress)
    if char_vectors is None and cfg.char_vectors:
        char_vectors = open_source(cfg.char_vectors, progress=progress)
    return MQAN(cfg, vocab, Featurizer(word_vectors, char_vectors, cfg.char_ngram_buckets))


def vector_sources(model: MQAN) -> dict[str, dict | None]:
    """Name, fingerprint and size of each pre-trained source of `model` (recorded in checkpoints)."""
    f = model.embed.featurizer
    return {key: None if src is None else {"name": src.name, "fingerprint": src.fingerprint, "dim": src.dim,
                                           "words": len(src.words)}
            for key, src in (("word_vectors", f.word), ("char_vectors", f.char))}


def count_parameters(model: nn.Module) -> int:
    """Trainable parameters (frozen input features are buffers and not counted)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
