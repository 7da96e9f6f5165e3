"""An independent numpy implementation of the MoE GPT-mini: forward, and
backward written out by hand (no autodiff, no Loom code), used to
cross-check the interpreter and `--nn-autodiff` on the mixture-of-experts
ops (test/examples/moe-gpt-mini-numpy.test, through crosscheck.py).

The model is that of examples/moe_gpt_mini.mlir: the GPT-mini of
gpt_mini_reference.py with each block's MLP replaced by a mixture of
`experts` expert MLPs (no biases), `topk` of them per token:

    probs   = softmax(h @ router)                  [T, E], T = batch * seq
    chosen  = the topk largest probabilities of each token (ties: lower index)
    y[t]    = sum over j of probs[t, chosen[t, j]] * expert_{chosen[t, j]}(h[t])
    expert_e(v) = gelu(v @ w1[e]) @ w2[e]

The combine weights are the router's probabilities as they are (not
renormalised over the chosen experts), so the router trains through them.
Every block adds the load-balancing loss

    aux = alpha * E * sum_e f_e * P_e

with f_e the fraction of the T * topk entries routed to expert e (a count,
no gradient) and P_e the mean over tokens of probs[:, e]; the loss is the
next-token cross-entropy plus the blocks' aux terms.

The routing is dropless: each expert takes all its entries, grouped in
expert order in a buffer of T * topk rows. The reference computes each
expert on its own tokens directly (it never builds the buffer), so it
shares no indexing with Loom's dispatch, grouped matmul or combine.
"""

import math

import numpy as np

import gpt_mini_reference as dense
from gpt_mini_reference import gelu, gelu_back, linear_back, synthetic_batch

NAME = "moe_gpt_mini"
ALPHA = 0.01
BLOCK_PARAMS = ("ln1_g", "ln1_b", "wq", "wk", "wv", "wo", "ln2_g", "ln2_b",
                "router", "w1", "w2")
SIZES = (("batch", 8), ("seq", 16), ("vocab", 64), ("width", 32),
         ("heads", 4), ("layers", 2), ("ffn", 128), ("experts", 4),
         ("topk", 2), ("expert_blocks", 1), ("aux", 1))

__all__ = ["init_params", "synthetic_batch"]


class Config(dense.Config):
    def __init__(self, batch=8, seq=16, vocab=64, width=32, heads=4,
                 layers=2, ffn=128, experts=4, topk=2, expert_blocks=1,
                 aux=1):
        super().__init__(batch, seq, vocab, width, heads, layers, ffn)
        # aux = 0: no load-balancing loss (a step split into micro-batches
        # cannot have one: f_e P_e is not a sum over the tokens).
        self.aux = aux
        assert 1 <= topk <= experts and experts % expert_blocks == 0
        self.experts, self.topk = experts, topk
        # The program's expert blocks (nn.moe_route ... blocks = B, for
        # expert parallelism over B devices); the model is the same.
        self.expert_blocks = expert_blocks

    def describe(self):
        text = super().describe() + f" experts {self.experts} top-{self.topk}"
        if self.expert_blocks > 1:
            text += f" in {self.expert_blocks} blocks"
        if not self.aux:
            text += ", no load-balancing loss"
        return text

    def param_shapes(self):
        w, f, e = self.width, self.ffn, self.experts
        shapes = [("wte", (self.vocab, w)), ("wpe", (self.seq, w))]
        per_block = {"ln1_g": (w,), "ln1_b": (w,), "wq": (w, w), "wk": (w, w),
                     "wv": (w, w), "wo": (w, w), "ln2_g": (w,), "ln2_b": (w,),
                     "router": (w, e), "w1": (e, w, f), "w2": (e, f, w)}
        for layer in range(self.layers):
            shapes += [(f"l{layer}_{n}", per_block[n]) for n in BLOCK_PARAMS]
        shapes += [("lnf_g", (w,)), ("lnf_b", (w,)), ("whead", (w, self.vocab))]
        return shapes


# As the dense model's (an expert's fan-in is its input width).
init_params = dense.init_params


# ------------------------------------------------------------------- MoE


def softmax(x):
    p = np.exp(x - x.max(-1, keepdims=True))
    return p / p.sum(-1, keepdims=True)


def top_experts(probs, k):
    """The k largest of each row, largest first, equal ones in index order."""
    return np.argsort(-probs, axis=-1, kind="stable")[:, :k]


def moe(cfg, h, router, w1, w2):
    """The mixture on tokens h [T, W]: its output, the aux loss term and
    what the backward needs."""
    probs = softmax(h @ router)
    chosen = top_experts(probs, cfg.topk)
    gates = np.take_along_axis(probs, chosen, 1)
    y = np.zeros_like(h)
    per_expert = []
    for e in range(cfg.experts):
        tok, j = np.nonzero(chosen == e)   # each token picks e at most once
        m1 = h[tok] @ w1[e]
        g = gelu(m1)
        out = g @ w2[e]
        y[tok] += gates[tok, j][:, None] * out
        per_expert.append((tok, j, m1, g, out))
    counts = np.bincount(chosen.reshape(-1), minlength=cfg.experts)
    f = counts / float(chosen.size)
    aux = ALPHA * cfg.experts * float((f * probs.mean(0)).sum()) * cfg.aux
    return y, aux, (h, probs, chosen, gates, f, per_expert)


def moe_back(cfg, dy, daux, router, w1, w2, cache):
    """(dh, drouter, dw1, dw2) of the mixture, given d loss / d y and
    d loss / d aux."""
    h, probs, chosen, gates, f, per_expert = cache
    dh = np.zeros_like(h)
    dgates = np.zeros_like(gates)
    dw1, dw2 = np.zeros_like(w1), np.zeros_like(w2)
    for e, (tok, j, m1, g, out) in enumerate(per_expert):
        dout = gates[tok, j][:, None] * dy[tok]
        dgates[tok, j] = (out * dy[tok]).sum(-1)
        dg, dw2[e] = dout @ w2[e].T, g.T @ dout
        dm1 = gelu_back(dg, m1)
        dh[tok] += dm1 @ w1[e].T
        dw1[e] = h[tok].T @ dm1
    dprobs = np.zeros_like(probs)
    np.put_along_axis(dprobs, chosen, dgates, 1)
    # aux = alpha * E * sum_e f_e * mean_t probs[t, e]
    dprobs += (daux * ALPHA * cfg.experts * cfg.aux * f[None, :] /
               probs.shape[0])
    dlogits = probs * (dprobs - (dprobs * probs).sum(-1, keepdims=True))
    dhr, drouter = linear_back(dlogits, h, router)
    return dh + dhr, drouter, dw1, dw2


def moe_mlp(cfg, L, h2):
    """The block's mixture on h2 [batch, seq, width] (dense.forward's mlp)."""
    y, aux, cache = moe(cfg, h2.reshape(-1, cfg.width), L("router"), L("w1"),
                        L("w2"))
    return y.reshape(h2.shape), aux, cache


def moe_mlp_back(cfg, L, dy, cache):
    """The mixture's backward (dense.backward's mlp_back); each block's aux
    term enters the loss with weight 1."""
    grads = {}
    dh2, grads["router"], grads["w1"], grads["w2"] = moe_back(
        cfg, dy.reshape(-1, cfg.width), 1.0, L("router"), L("w1"), L("w2"),
        cache)
    return dh2.reshape(dy.shape), grads


def routing_margin(cfg, params, tokens, targets):
    """The smallest gap, over every token of every block, between the
    k-th and the (k+1)-th largest router probability (routing is stable
    under rounding errors well below it), and how many (block, expert)
    pairs receive no token."""
    _, (caches, *_rest) = forward(cfg, params, tokens, targets)
    margin, idle = math.inf, 0
    for c in caches:
        probs, chosen = c["mlp"][1], c["mlp"][2]
        idle += int((np.bincount(chosen.reshape(-1),
                                 minlength=cfg.experts) == 0).sum())
        ranked = np.sort(probs, axis=-1)[:, ::-1]
        if cfg.topk < cfg.experts:
            margin = min(margin, float(
                (ranked[:, cfg.topk - 1] - ranked[:, cfg.topk]).min()))
    return margin, idle


# ------------------------------------------------------------------ model


def forward(cfg, params, tokens, targets):
    return dense.forward(cfg, params, tokens, targets, mlp=moe_mlp)


def backward(cfg, params, tokens, targets, saved):
    return dense.backward(cfg, params, tokens, targets, saved,
                          mlp_back=moe_mlp_back)


def forward_backward(cfg, params, tokens, targets):
    loss, saved = forward(cfg, params, tokens, targets)
    return loss, backward(cfg, params, tokens, targets, saved)


# --------------------------------------------------------------- the IR


def moe_mlp_text(cfg, t, p, v, h2):
    """The block's mixture as `nn` IR (dense.module_text's `mlp`): the
    router, the top-k choice and its probabilities, the dropless routing
    (in expert blocks if the Config has them), the experts' GELU MLPs as
    grouped matmuls, the weighted combine, and the block's aux loss
    alpha * E * sum_e f_e P_e."""
    B, S, W, F = cfg.batch, cfg.seq, cfg.width, cfg.ffn
    E, K, T, EB = cfg.experts, cfg.topk, cfg.tokens, cfg.expert_blocks
    # With expert blocks, EB blocks of T * k rows each (the most entries one
    # block's experts can receive), and the blocks named on the route and
    # the grouped matmuls.
    N = EB * T * K
    blocks = f" blocks = {EB}" if EB > 1 else ""

    def i(*dims):
        return "tensor<" + "".join(f"{d}x" for d in dims) + "i64>"

    act, flat = t(B, S, W), t(T, W)
    lines = [
        f"{v}tk = nn.reshape {h2} : {act} to {flat}",
        f"{v}logits = nn.matmul {v}tk, {p}router : {flat}, {t(W, E)}",
        f"{v}probs = nn.softmax {v}logits dim = 1 : {t(T, E)}",
        f"{v}experts = nn.topk {v}probs k = {K} : {t(T, E)}",
        f"{v}gates = nn.gather {v}probs, {v}experts dim = 1 : "
        f"{t(T, E)}, {i(T, K)}",
        f"{v}slots, {v}counts = nn.moe_route {v}experts num_experts = {E}"
        f"{blocks} : {i(T, K)}",
        f"{v}buf = nn.moe_dispatch {v}tk, {v}slots rows = {N} : "
        f"{flat}, {i(T, K)}",
        f"{v}m = nn.grouped_matmul {v}buf, {p}w1, {v}counts{blocks} : "
        f"{t(N, W)}, {t(E, W, F)}, {i(E)}",
        f"{v}g = nn.gelu {v}m : {t(N, F)}",
        f"{v}eo = nn.grouped_matmul {v}g, {p}w2, {v}counts{blocks} : "
        f"{t(N, F)}, {t(E, F, W)}, {i(E)}",
        f"{v}y = nn.moe_combine {v}eo, {v}slots weights {v}gates : "
        f"{t(N, W)}, {i(T, K)}, {t(T, K)}",
        f"{v}ya = nn.reshape {v}y : {flat} to {act}",
    ]
    if not cfg.aux:
        return lines, f"{v}ya", None
    lines += [
        # alpha * E * sum_e f_e P_e
        f"{v}routed = nn.cast {v}counts : {i(E)} to {t(E)}",
        f"{v}f = nn.div {v}routed, %entries : {t(E)}, {t()}",
        f"{v}p = nn.reduce mean {v}probs dims = [0] : {t(T, E)}",
        f"{v}fp = nn.mul {v}f, {v}p : {t(E)}, {t(E)}",
        f"{v}bal = nn.reduce sum {v}fp dims = [0] : {t(E)}",
        f"{v}aux = nn.mul {v}bal, %aux_scale : {t()}, {t()}",
    ]
    return lines, f"{v}ya", f"{v}aux"


def module_text(cfg, et="f32", name=NAME):
    """The MoE GPT-mini forward function as `nn` IR, as in
    examples/moe_gpt_mini.mlir (this text for the default Config and f32):
    the dense model's with moe_mlp_text for each MLP, and the aux loss's
    constants (the entries routed, alpha * E)."""
    return dense.module_text(
        cfg, et, name, mlp=moe_mlp_text,
        prelude=lambda t: [
            f"%entries = nn.fill {float(cfg.tokens * cfg.topk):e} : {t()}",
            f"%aux_scale = nn.fill {ALPHA * cfg.experts:e} : {t()}"]
        if cfg.aux else [])
