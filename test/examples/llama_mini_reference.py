"""An independent numpy implementation of the LLaMA-mini: forward, and
backward written out by hand (no autodiff, no Loom code), used to
cross-check the interpreter and `--nn-autodiff`
(test/examples/llama-mini-numpy.test, through crosscheck.py).

The model is that of examples/llama_mini.mlir: a token embedding (no
position embedding), pre-norm blocks of RMS norm, causal grouped-query
attention with rotary positions on the queries and keys ("rotate half"
pairing: feature i with feature i + d/2), and a SwiGLU MLP
(silu(x @ w_gate) * (x @ w_up)) @ w_down, a final RMS norm, an untied
linear head, cross-entropy over next tokens normalised by the token count.
No biases. `module_text` writes the same program for any size and element
type.

Grouped-query attention is written here the plain way: each key/value head
is repeated for the query heads that read it (query head h reads kv head
h // (heads / kv_heads)), and its gradient is the sum over those copies.
"""

import math

import numpy as np

NAME = "llama_mini"
RMS_EPS = 1e-5
ROPE_THETA = 10000.0
BLOCK_PARAMS = ("attn_norm", "wq", "wk", "wv", "wo", "mlp_norm", "w_gate",
                "w_up", "w_down")
# Sizes the crosscheck driver takes as options, with their defaults.
SIZES = (("batch", 8), ("seq", 16), ("vocab", 64), ("width", 32),
         ("heads", 4), ("kv_heads", 2), ("layers", 2), ("ffn", 96))


class Config:
    def __init__(self, batch=8, seq=16, vocab=64, width=32, heads=4,
                 kv_heads=2, layers=2, ffn=96):
        assert width % heads == 0 and heads % kv_heads == 0
        assert (width // heads) % 2 == 0, "rope needs an even head_dim"
        self.batch, self.seq, self.vocab = batch, seq, vocab
        self.width, self.heads, self.kv_heads = width, heads, kv_heads
        self.layers, self.ffn = layers, ffn

    @property
    def tokens(self):
        return self.batch * self.seq

    @property
    def head_dim(self):
        return self.width // self.heads

    def describe(self):
        return (f"batch {self.batch} seq {self.seq} width {self.width} "
                f"heads {self.heads} kv-heads {self.kv_heads} layers "
                f"{self.layers}")

    def param_shapes(self):
        """(name, shape) in the function's argument order."""
        w, f, kv = self.width, self.ffn, self.kv_heads * self.head_dim
        shapes = [("wte", (self.vocab, w))]
        per_block = {"attn_norm": (w,), "wq": (w, w), "wk": (w, kv),
                     "wv": (w, kv), "wo": (w, w), "mlp_norm": (w,),
                     "w_gate": (w, f), "w_up": (w, f), "w_down": (f, w)}
        for layer in range(self.layers):
            shapes += [(f"l{layer}_{n}", per_block[n]) for n in BLOCK_PARAMS]
        shapes += [("final_norm", (w,)), ("whead", (w, self.vocab))]
        return shapes


def init_params(cfg, rng):
    """Weights in f64: matrices ~ N(0, 1/fan_in), the embedding N(0, 1),
    norm gains 1 + N(0, 0.1)."""
    params = {}
    for name, shape in cfg.param_shapes():
        if len(shape) == 1:
            params[name] = 1.0 + 0.1 * rng.standard_normal(shape)
        elif name == "wte":
            params[name] = rng.standard_normal(shape)
        else:
            params[name] = rng.standard_normal(shape) / math.sqrt(shape[0])
    return params


def synthetic_batch(cfg, rng):
    """Token ids and the task's targets, (7 * token + 3) mod vocab."""
    tokens = rng.integers(0, cfg.vocab, size=(cfg.batch, cfg.seq),
                          dtype=np.int64)
    return tokens, (7 * tokens + 3) % cfg.vocab


# ----------------------------------------------------------------- pieces


def rms_norm(x, g):
    r = 1.0 / np.sqrt((x * x).mean(-1, keepdims=True) + RMS_EPS)
    xhat = x * r
    return xhat * g, (xhat, r, g)


def rms_norm_back(dy, cache):
    """y = g * x * r with r = (mean(x^2) + eps)^(-1/2), so
    dr/dx_j = -r^3 x_j / n and dx = r (dxhat - xhat mean(dxhat xhat))."""
    xhat, r, g = cache
    lead = tuple(range(dy.ndim - 1))
    dg = (dy * xhat).sum(lead)
    dxhat = dy * g
    dx = r * (dxhat - xhat * (dxhat * xhat).mean(-1, keepdims=True))
    return dx, dg


def rope_angles(seq, head_dim):
    """cos and sin of position * theta^(-2i/d), [seq, 1, d/2] (the heads
    broadcast)."""
    half = head_dim // 2
    inv = ROPE_THETA ** (-2.0 * np.arange(half) / head_dim)
    a = np.arange(seq, dtype=np.float64)[:, None] * inv[None, :]
    return np.cos(a)[:, None, :], np.sin(a)[:, None, :]


def rope(x, cs):
    """x [batch, seq, heads, d]: the pair (x[i], x[i + d/2]) rotated by the
    angle of its position and i."""
    c, s = cs
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * c - x2 * s, x1 * s + x2 * c], axis=-1)


def rope_back(dy, cs):
    """The transpose of the rotation: dx1 = dy1 c + dy2 s,
    dx2 = -dy1 s + dy2 c."""
    c, s = cs
    half = dy.shape[-1] // 2
    d1, d2 = dy[..., :half], dy[..., half:]
    return np.concatenate([d1 * c + d2 * s, d2 * c - d1 * s], axis=-1)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def linear_back(dy, x, w):
    """(dx, dw) of y = x @ w with x [..., k] and w [k, n]."""
    k = w.shape[0]
    dw = x.reshape(-1, k).T @ dy.reshape(-1, dy.shape[-1])
    return dy @ w.T, dw


def gqa_attention(q, k, v):
    """Causal attention, q [batch, seq, heads, d], k and v [batch, seq,
    kv_heads, d]: every kv head repeated for its heads / kv_heads query
    heads."""
    rep = q.shape[2] // k.shape[2]
    ke, ve = np.repeat(k, rep, axis=2), np.repeat(v, rep, axis=2)
    qt, kt, vt = (t.transpose(0, 2, 1, 3) for t in (q, ke, ve))
    scale = 1.0 / math.sqrt(q.shape[-1])
    s = scale * (qt @ kt.transpose(0, 1, 3, 2))
    seq = q.shape[1]
    s = np.where(np.tril(np.ones((seq, seq), dtype=bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    out = (p @ vt).transpose(0, 2, 1, 3)
    return out, (qt, kt, vt, p, scale, rep)


def gqa_attention_back(dout, cache):
    qt, kt, vt, p, scale, rep = cache
    do = dout.transpose(0, 2, 1, 3)
    dv = p.transpose(0, 1, 3, 2) @ do
    dp = do @ vt.transpose(0, 1, 3, 2)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    dq = scale * (ds @ kt)
    dk = scale * (ds.transpose(0, 1, 3, 2) @ qt)
    dq, dk, dv = (t.transpose(0, 2, 1, 3) for t in (dq, dk, dv))

    def fold(t):  # [b, s, heads, d] -> [b, s, kv_heads, d], summing copies
        b, s, h, d = t.shape
        return t.reshape(b, s, h // rep, rep, d).sum(3)
    return dq, fold(dk), fold(dv)


# ------------------------------------------------------------------ model


def forward(cfg, params, tokens, targets):
    """The loss and what the backward pass needs."""
    P = params
    b, s, w, h, g, d = (cfg.batch, cfg.seq, cfg.width, cfg.heads,
                        cfg.kv_heads, cfg.head_dim)
    cs = rope_angles(s, d)
    x = P["wte"][tokens]
    caches = []
    for layer in range(cfg.layers):
        L = lambda n: P[f"l{layer}_{n}"]  # noqa: E731
        c = {}
        hn, c["norm1"] = rms_norm(x, L("attn_norm"))
        c["h"] = hn
        q = rope((hn @ L("wq")).reshape(b, s, h, d), cs)
        k = rope((hn @ L("wk")).reshape(b, s, g, d), cs)
        v = (hn @ L("wv")).reshape(b, s, g, d)
        att, c["att"] = gqa_attention(q, k, v)
        c["a"] = att.reshape(b, s, w)
        x1 = x + c["a"] @ L("wo")
        h2, c["norm2"] = rms_norm(x1, L("mlp_norm"))
        c["h2"] = h2
        c["gate"] = h2 @ L("w_gate")
        c["up"] = h2 @ L("w_up")
        c["act"] = c["gate"] * sigmoid(c["gate"])
        c["m"] = c["act"] * c["up"]
        x = x1 + c["m"] @ L("w_down")
        caches.append(c)
    hf, normf = rms_norm(x, P["final_norm"])
    logits = hf @ P["whead"]
    mx = logits.max(-1, keepdims=True)
    lse = (mx + np.log(np.exp(logits - mx).sum(-1, keepdims=True)))[..., 0]
    picked = np.take_along_axis(logits, targets[..., None], -1)[..., 0]
    loss = (lse - picked).sum() / cfg.tokens
    return loss, (caches, hf, normf, logits, lse, cs)


def backward(cfg, params, tokens, targets, saved):
    """d loss / d param for every parameter, in a dict keyed like params."""
    P = params
    caches, hf, normf, logits, lse, cs = saved
    b, s, w, h, g, d = (cfg.batch, cfg.seq, cfg.width, cfg.heads,
                        cfg.kv_heads, cfg.head_dim)
    grads = {}
    dlogits = np.exp(logits - lse[..., None])
    np.put_along_axis(dlogits, targets[..., None],
                      np.take_along_axis(dlogits, targets[..., None], -1) - 1.0,
                      -1)
    dlogits /= cfg.tokens
    dhf, grads["whead"] = linear_back(dlogits, hf, P["whead"])
    dx, grads["final_norm"] = rms_norm_back(dhf, normf)
    for layer in reversed(range(cfg.layers)):
        L = lambda n: P[f"l{layer}_{n}"]  # noqa: E731
        G = lambda n: f"l{layer}_{n}"  # noqa: E731
        c = caches[layer]
        # x2 = x1 + (silu(gate) * up) @ w_down
        dm, grads[G("w_down")] = linear_back(dx, c["m"], L("w_down"))
        dup = dm * c["act"]
        sg = sigmoid(c["gate"])
        dgate = dm * c["up"] * sg * (1.0 + c["gate"] * (1.0 - sg))
        dh2a, grads[G("w_gate")] = linear_back(dgate, c["h2"], L("w_gate"))
        dh2b, grads[G("w_up")] = linear_back(dup, c["h2"], L("w_up"))
        dn2, grads[G("mlp_norm")] = rms_norm_back(dh2a + dh2b, c["norm2"])
        dx1 = dx + dn2
        # x1 = x + attention(rope(q), rope(k), v) @ wo
        da, grads[G("wo")] = linear_back(dx1, c["a"], L("wo"))
        dq, dk, dv = gqa_attention_back(da.reshape(b, s, h, d), c["att"])
        dq, dk = rope_back(dq, cs), rope_back(dk, cs)
        dh = np.zeros_like(c["h"])
        for name, dt in (("wq", dq), ("wk", dk), ("wv", dv)):
            dpart, grads[G(name)] = linear_back(
                dt.reshape(b, s, -1), c["h"], L(name))
            dh += dpart
        dn1, grads[G("attn_norm")] = rms_norm_back(dh, c["norm1"])
        dx = dx1 + dn1
    dwte = np.zeros_like(P["wte"])
    np.add.at(dwte, tokens.reshape(-1), dx.reshape(-1, w))
    grads["wte"] = dwte
    return grads


def forward_backward(cfg, params, tokens, targets):
    loss, saved = forward(cfg, params, tokens, targets)
    return loss, backward(cfg, params, tokens, targets, saved)


# --------------------------------------------------------------- the IR


def module_text(cfg, et="f32", name=NAME):
    """The LLaMA-mini forward function as `nn` IR, as in
    examples/llama_mini.mlir (which is this text for the default Config and
    f32, up to comments)."""
    B, S, V, W, F = cfg.batch, cfg.seq, cfg.vocab, cfg.width, cfg.ffn
    H, G, D = cfg.heads, cfg.kv_heads, cfg.head_dim

    def t(*dims):
        return "tensor<" + "".join(f"{d}x" for d in dims) + et + ">"

    ids = f"tensor<{B}x{S}xi64>"
    act, hid = t(B, S, W), t(B, S, F)
    qheads, kvheads, kvact = t(B, S, H, D), t(B, S, G, D), t(B, S, G * D)
    eps = f"{{epsilon = {RMS_EPS:.1e} : f64}}"
    args = [f"%tokens: {ids} {{nn.data}}", f"%targets: {ids} {{nn.data}}"]
    args += [f"%{n}: {t(*shape)} {{nn.param}}"
             for n, shape in cfg.param_shapes()]
    body = [
        f"%x0 = nn.embedding %wte, %tokens : {t(V, W)}, {ids}",
        f"%pos = nn.iota dim = 1 : {ids}",
    ]
    x = "%x0"
    for layer in range(cfg.layers):
        p, v = f"%l{layer}_", f"%b{layer}_"
        body += [
            f"{v}h = nn.rms_norm {x} scale {p}attn_norm {eps} : "
            f"{act}, {t(W)}",
            f"{v}q = nn.matmul {v}h, {p}wq : {act}, {t(W, W)}",
            f"{v}qh = nn.reshape {v}q : {act} to {qheads}",
            f"{v}qr = nn.rope {v}qh, %pos : {qheads}, {ids}",
            f"{v}k = nn.matmul {v}h, {p}wk : {act}, {t(W, G * D)}",
            f"{v}kh = nn.reshape {v}k : {kvact} to {kvheads}",
            f"{v}kr = nn.rope {v}kh, %pos : {kvheads}, {ids}",
            f"{v}v = nn.matmul {v}h, {p}wv : {act}, {t(W, G * D)}",
            f"{v}vh = nn.reshape {v}v : {kvact} to {kvheads}",
            f"{v}att = nn.attention {v}qr, {v}kr, {v}vh mask = causal : "
            f"{qheads}, {kvheads}, {kvheads}",
            f"{v}a = nn.reshape {v}att : {qheads} to {act}",
            f"{v}o = nn.matmul {v}a, {p}wo : {act}, {t(W, W)}",
            f"{v}x1 = nn.add {x}, {v}o : {act}, {act}",
            f"{v}h2 = nn.rms_norm {v}x1 scale {p}mlp_norm {eps} : "
            f"{act}, {t(W)}",
            f"{v}gate = nn.matmul {v}h2, {p}w_gate : {act}, {t(W, F)}",
            f"{v}up = nn.matmul {v}h2, {p}w_up : {act}, {t(W, F)}",
            f"{v}act = nn.silu {v}gate : {hid}",
            f"{v}m = nn.mul {v}act, {v}up : {hid}, {hid}",
            f"{v}d = nn.matmul {v}m, {p}w_down : {hid}, {t(F, W)}",
            f"{v}x2 = nn.add {v}x1, {v}d : {act}, {act}",
        ]
        x = f"{v}x2"
    body += [
        f"%hf = nn.rms_norm {x} scale %final_norm {eps} : {act}, {t(W)}",
        f"%logits = nn.matmul %hf, %whead : {act}, {t(W, V)}",
        f"%loss = nn.cross_entropy %logits, %targets "
        f"{{normalizer = {float(B * S)} : f64}} : {t(B, S, V)}, {ids}",
    ]
    lines = [f"func.func @{name}({', '.join(args)}) -> tensor<{et}> {{"]
    lines += ["  " + line for line in body]
    lines += [f"  return %loss : tensor<{et}>", "}"]
    return "module {\n" + "\n".join("  " + line for line in lines) + "\n}\n"
