"""An independent numpy implementation of the GPT-mini: forward, and backward
written out by hand (no autodiff, no Loom code), used to cross-check the
interpreter and `--nn-autodiff` (test/examples/gpt-mini-numpy.test, through
crosscheck.py) and as the numpy side of test/bench/gpt_mini_fwd_bwd.py.

The model is that of examples/gpt_mini.mlir: learned token and position
embeddings, pre-norm blocks of causal multi-head attention and a GELU (erf)
MLP, a final layer norm, a linear head, and cross-entropy over next tokens
normalised by the token count. `module_text` writes the same program for
any size and element type, so tests and benchmarks can also run other
shapes than the bundled one.
"""

import math

import numpy as np
from scipy.special import erf

NAME = "gpt_mini"
LN_EPS = 1e-5
BLOCK_PARAMS = ("ln1_g", "ln1_b", "wq", "wk", "wv", "wo", "ln2_g", "ln2_b",
                "w1", "b1", "w2", "b2")
# Sizes the crosscheck driver takes as options, with their defaults.
SIZES = (("batch", 8), ("seq", 16), ("vocab", 64), ("width", 32),
         ("heads", 4), ("layers", 2), ("ffn", 128))


class Config:
    def __init__(self, batch=8, seq=16, vocab=64, width=32, heads=4,
                 layers=2, ffn=128):
        assert width % heads == 0
        self.batch, self.seq, self.vocab = batch, seq, vocab
        self.width, self.heads, self.layers, self.ffn = width, heads, layers, ffn

    @property
    def tokens(self):
        return self.batch * self.seq

    def describe(self):
        return (f"batch {self.batch} seq {self.seq} width {self.width} "
                f"heads {self.heads} layers {self.layers}")

    def param_shapes(self):
        """(name, shape) in the function's argument order."""
        w, f = self.width, self.ffn
        shapes = [("wte", (self.vocab, w)), ("wpe", (self.seq, w))]
        per_block = {"ln1_g": (w,), "ln1_b": (w,), "wq": (w, w), "wk": (w, w),
                     "wv": (w, w), "wo": (w, w), "ln2_g": (w,), "ln2_b": (w,),
                     "w1": (w, f), "b1": (f,), "w2": (f, w), "b2": (w,)}
        for layer in range(self.layers):
            shapes += [(f"l{layer}_{n}", per_block[n]) for n in BLOCK_PARAMS]
        shapes += [("lnf_g", (w,)), ("lnf_b", (w,)), ("whead", (w, self.vocab))]
        return shapes

    def matmul_flops(self):
        """Multiply-add FLOPs (2 per MAC) of the matmuls and attention
        products of one forward and backward pass: the backward does two
        products for every forward one (input and weight gradients; for
        attention dP, dV, dQ, dK). Element-wise work is not counted."""
        n, w, f, v = self.tokens, self.width, self.ffn, self.vocab
        d = w // self.heads
        per_layer = 4 * 2 * n * w * w + 2 * 2 * n * w * f
        attention = 2 * 2 * self.batch * self.heads * self.seq * self.seq * d
        forward = self.layers * (per_layer + attention) + 2 * n * w * v
        return 3 * forward


def init_params(cfg, rng):
    """Weights in f64: matrices ~ N(0, 1/fan_in), norm gains 1 + N(0, 0.1),
    biases N(0, 0.1). Large enough that every gradient is far from zero.
    (Also the MoE GPT-mini's: its experts' fan-in is their input width.)"""
    params = {}
    for name, shape in cfg.param_shapes():
        if name.endswith("_g"):
            params[name] = 1.0 + 0.1 * rng.standard_normal(shape)
        elif len(shape) == 1:
            params[name] = 0.1 * rng.standard_normal(shape)
        elif name in ("wte", "wpe"):
            params[name] = rng.standard_normal(shape)
        else:
            # (fan-in: the input width; an expert's [E, K, F] too)
            params[name] = rng.standard_normal(shape) / math.sqrt(shape[-2])
    return params


def synthetic_batch(cfg, rng):
    """Token ids and the task's targets, (7 * token + 3) mod vocab."""
    tokens = rng.integers(0, cfg.vocab, size=(cfg.batch, cfg.seq),
                          dtype=np.int64)
    return tokens, (7 * tokens + 3) % cfg.vocab


# ----------------------------------------------------------------- pieces


def layer_norm(x, g, b):
    mu = x.mean(-1, keepdims=True)
    r = 1.0 / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + LN_EPS)
    xhat = (x - mu) * r
    return xhat * g + b, (xhat, r, g)


def layer_norm_back(dy, cache):
    xhat, r, g = cache
    lead = tuple(range(dy.ndim - 1))
    dg, db = (dy * xhat).sum(lead), dy.sum(lead)
    dxhat = dy * g
    dx = r * (dxhat - dxhat.mean(-1, keepdims=True)
              - xhat * (dxhat * xhat).mean(-1, keepdims=True))
    return dx, dg, db


def gelu(x):
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def gelu_back(dy, x):
    cdf = 0.5 * (1.0 + erf(x / math.sqrt(2.0)))
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    return dy * (cdf + x * pdf)


def linear(x, w):
    return x @ w


def linear_back(dy, x, w):
    """(dx, dw) of y = x @ w with x [..., k] and w [k, n]."""
    k = w.shape[0]
    dw = x.reshape(-1, k).T @ dy.reshape(-1, dy.shape[-1])
    return dy @ w.T, dw


def attention(q, k, v):
    """Causal attention on [batch, seq, heads, head_dim]."""
    qt, kt, vt = (t.transpose(0, 2, 1, 3) for t in (q, k, v))
    scale = 1.0 / math.sqrt(q.shape[-1])
    s = scale * (qt @ kt.transpose(0, 1, 3, 2))
    seq = q.shape[1]
    s = np.where(np.tril(np.ones((seq, seq), dtype=bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    out = (p @ vt).transpose(0, 2, 1, 3)
    return out, (qt, kt, vt, p, scale)


def attention_back(dout, cache):
    qt, kt, vt, p, scale = cache
    do = dout.transpose(0, 2, 1, 3)
    dv = p.transpose(0, 1, 3, 2) @ do
    dp = do @ vt.transpose(0, 1, 3, 2)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    dq = scale * (ds @ kt)
    dk = scale * (ds.transpose(0, 1, 3, 2) @ qt)
    return tuple(t.transpose(0, 2, 1, 3) for t in (dq, dk, dv))


# ------------------------------------------------------------------ model


def dense_mlp(cfg, L, h2):
    """The block's GELU MLP on the normed activations h2 [batch, seq, width]:
    its output, its auxiliary loss (none) and what its backward needs. `L`
    gives the block's parameters by name."""
    m1 = linear(h2, L("w1")) + L("b1")
    g = gelu(m1)
    return linear(g, L("w2")) + L("b2"), 0.0, (h2, m1, g)


def dense_mlp_back(cfg, L, dy, cache):
    """d loss / d h2 and the MLP's parameter gradients (by name), given
    d loss / d output."""
    h2, m1, g = cache
    grads = {"b2": dy.reshape(-1, cfg.width).sum(0)}
    dg, grads["w2"] = linear_back(dy, g, L("w2"))
    dm1 = gelu_back(dg, m1)
    grads["b1"] = dm1.reshape(-1, cfg.ffn).sum(0)
    dh2, grads["w1"] = linear_back(dm1, h2, L("w1"))
    return dh2, grads


def forward(cfg, params, tokens, targets, mlp=dense_mlp):
    """The loss and what the backward pass needs. `mlp` is the blocks' MLP
    (dense_mlp, or a mixture of experts: moe_gpt_mini_reference.py); its
    auxiliary losses add to the loss."""
    P = params
    b, s, w, h = cfg.batch, cfg.seq, cfg.width, cfg.heads
    x = P["wte"][tokens] + P["wpe"][np.arange(s)][None, :, :]
    caches = []
    aux_total = 0.0
    for layer in range(cfg.layers):
        L = lambda n: P[f"l{layer}_{n}"]  # noqa: E731
        c = {"x": x}
        hn, c["ln1"] = layer_norm(x, L("ln1_g"), L("ln1_b"))
        c["h"] = hn
        q, k, v = (linear(hn, L(n)).reshape(b, s, h, w // h)
                   for n in ("wq", "wk", "wv"))
        att, c["att"] = attention(q, k, v)
        c["a"] = att.reshape(b, s, w)
        x1 = x + linear(c["a"], L("wo"))
        h2, c["ln2"] = layer_norm(x1, L("ln2_g"), L("ln2_b"))
        y, aux, c["mlp"] = mlp(cfg, L, h2)
        aux_total += aux
        x = x1 + y
        caches.append(c)
    hf, lnf = layer_norm(x, P["lnf_g"], P["lnf_b"])
    logits = linear(hf, P["whead"])
    m = logits.max(-1, keepdims=True)
    lse = (m + np.log(np.exp(logits - m).sum(-1, keepdims=True)))[..., 0]
    picked = np.take_along_axis(logits, targets[..., None], -1)[..., 0]
    loss = (lse - picked).sum() / cfg.tokens + aux_total
    return loss, (caches, hf, lnf, logits, lse)


def backward(cfg, params, tokens, targets, saved, mlp_back=dense_mlp_back):
    """d loss / d param for every parameter, in a dict keyed like params;
    `mlp_back` is the backward of forward's `mlp`."""
    P = params
    caches, hf, lnf, logits, lse = saved
    b, s, w, h = cfg.batch, cfg.seq, cfg.width, cfg.heads
    grads = {}
    dlogits = np.exp(logits - lse[..., None])
    np.put_along_axis(dlogits, targets[..., None],
                      np.take_along_axis(dlogits, targets[..., None], -1) - 1.0,
                      -1)
    dlogits /= cfg.tokens
    dhf, grads["whead"] = linear_back(dlogits, hf, P["whead"])
    dx, grads["lnf_g"], grads["lnf_b"] = layer_norm_back(dhf, lnf)
    for layer in reversed(range(cfg.layers)):
        L = lambda n: P[f"l{layer}_{n}"]  # noqa: E731
        G = lambda n: f"l{layer}_{n}"  # noqa: E731
        c = caches[layer]
        # x2 = x1 + mlp(ln2(x1))
        dh2, mlp_grads = mlp_back(cfg, L, dx, c["mlp"])
        for name, grad in mlp_grads.items():
            grads[G(name)] = grad
        dln2, grads[G("ln2_g")], grads[G("ln2_b")] = layer_norm_back(dh2,
                                                                     c["ln2"])
        dx1 = dx + dln2
        # x1 = x + a @ wo
        da, grads[G("wo")] = linear_back(dx1, c["a"], L("wo"))
        dq, dk, dv = attention_back(da.reshape(b, s, h, w // h), c["att"])
        dh = np.zeros_like(c["h"])
        for name, dt in (("wq", dq), ("wk", dk), ("wv", dv)):
            dpart, grads[G(name)] = linear_back(dt.reshape(b, s, w), c["h"],
                                                L(name))
            dh += dpart
        dln1, grads[G("ln1_g")], grads[G("ln1_b")] = layer_norm_back(dh,
                                                                     c["ln1"])
        dx = dx1 + dln1
    grads["wpe"] = dx.sum(0)
    dwte = np.zeros_like(P["wte"])
    np.add.at(dwte, tokens.reshape(-1), dx.reshape(-1, w))
    grads["wte"] = dwte
    return grads


def forward_backward(cfg, params, tokens, targets):
    loss, saved = forward(cfg, params, tokens, targets)
    return loss, backward(cfg, params, tokens, targets, saved)


# --------------------------------------------------------------- the IR


def dense_mlp_text(cfg, t, p, v, h2):
    """The block's GELU MLP as `nn` IR (module_text's `mlp`): its lines, the
    value of its output and that of its auxiliary loss (none). `t` spells
    a tensor type of the element type, `p` and `v` prefix the block's
    parameters and values, `h2` is the normed input."""
    B, S, W, F = cfg.batch, cfg.seq, cfg.width, cfg.ffn
    act = t(B, S, W)
    lines = [
        f"{v}m = nn.matmul {h2}, {p}w1 : {act}, {t(W, F)}",
        f"{v}m1 = nn.add {v}m, {p}b1 : {t(B, S, F)}, {t(F)}",
        f"{v}g = nn.gelu {v}m1 : {t(B, S, F)}",
        f"{v}m2 = nn.matmul {v}g, {p}w2 : {t(B, S, F)}, {t(F, W)}",
        f"{v}m3 = nn.add {v}m2, {p}b2 : {act}, {t(W)}",
    ]
    return lines, f"{v}m3", None


def module_text(cfg, et="f32", name="gpt_mini", mlp=dense_mlp_text,
                prelude=lambda t: []):
    """The GPT-mini forward function as `nn` IR, as in examples/gpt_mini.mlir
    (which is this text for the default Config and f32). `mlp` writes each
    block's MLP (dense_mlp_text, or a mixture of experts:
    moe_gpt_mini_reference.py), whose auxiliary losses add to the loss;
    `prelude(t)` gives lines after the embeddings (constants it uses)."""
    B, S, V, W, H = cfg.batch, cfg.seq, cfg.vocab, cfg.width, cfg.heads
    D = W // H

    def t(*dims):
        return "tensor<" + "".join(f"{d}x" for d in dims) + et + ">"

    ids = f"tensor<{B}x{S}xi64>"
    act, heads = t(B, S, W), t(B, S, H, D)
    args = [f"%tokens: {ids} {{nn.data}}", f"%targets: {ids} {{nn.data}}"]
    args += [f"%{n}: {t(*shape)} {{nn.param}}"
             for n, shape in cfg.param_shapes()]
    body = [
        f"%tok = nn.embedding %wte, %tokens : {t(V, W)}, {ids}",
        f"%pos_ids = nn.iota dim = 1 : {ids}",
        f"%pos = nn.embedding %wpe, %pos_ids : {t(S, W)}, {ids}",
        f"%x0 = nn.add %tok, %pos : {act}, {act}",
    ] + prelude(t)
    x, aux = "%x0", None
    for layer in range(cfg.layers):
        p, v = f"%l{layer}_", f"%b{layer}_"
        body += [
            f"{v}h = nn.layer_norm {x} scale {p}ln1_g bias {p}ln1_b : "
            f"{act}, {t(W)}, {t(W)}"]
        for n in "qkv":
            body += [f"{v}{n} = nn.matmul {v}h, {p}w{n} : {act}, {t(W, W)}",
                     f"{v}{n}h = nn.reshape {v}{n} : {act} to {heads}"]
        body += [
            f"{v}att = nn.attention {v}qh, {v}kh, {v}vh mask = causal : "
            f"{heads}, {heads}, {heads}",
            f"{v}a = nn.reshape {v}att : {heads} to {act}",
            f"{v}o = nn.matmul {v}a, {p}wo : {act}, {t(W, W)}",
            f"{v}x1 = nn.add {x}, {v}o : {act}, {act}",
            f"{v}h2 = nn.layer_norm {v}x1 scale {p}ln2_g bias {p}ln2_b : "
            f"{act}, {t(W)}, {t(W)}",
        ]
        lines, y, block_aux = mlp(cfg, t, p, v, f"{v}h2")
        body += lines + [f"{v}x2 = nn.add {v}x1, {y} : {act}, {act}"]
        if block_aux and aux:
            body += [f"{v}auxs = nn.add {aux}, {block_aux} : {t()}, {t()}"]
            block_aux = f"{v}auxs"
        aux = block_aux or aux
        x = f"{v}x2"
    ce = "%ce" if aux else "%loss"
    body += [
        f"%hf = nn.layer_norm {x} scale %lnf_g bias %lnf_b : "
        f"{act}, {t(W)}, {t(W)}",
        f"%logits = nn.matmul %hf, %whead : {act}, {t(W, V)}",
        f"{ce} = nn.cross_entropy %logits, %targets "
        f"{{normalizer = {float(B * S)} : f64}} : {t(B, S, V)}, {ids}",
    ]
    if aux:
        body += [f"%loss = nn.add %ce, {aux} : {t()}, {t()}"]
    lines = [f"func.func @{name}({', '.join(args)}) -> tensor<{et}> {{"]
    lines += ["  " + line for line in body]
    lines += [f"  return %loss : tensor<{et}>", "}"]
    return "module {\n" + "\n".join("  " + line for line in lines) + "\n}\n"
