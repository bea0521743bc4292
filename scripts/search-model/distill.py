#!/usr/bin/env python3
"""Distil all-MiniLM-L6-v2 into the static token embeddings toolsvc's search embeds.

The recipe is model2vec's (Tulkens & van Dongen, 2024): run every vocabulary
token (of ASCII text) through the transformer as a sentence of its own,
[CLS] token [SEP], mean-pool the last hidden state as sentence-transformers
pools this model, reduce the 384 dimensions to DIMS with PCA, weight each token by SIF on a Zipf estimate
of its frequency (BERT's vocabulary is roughly in frequency order), then
quantise to int8 with one float32 scale per token.

Input: the model directory unpacked from the pinned PyPI wheel (see
scripts/search-model.sh). Output: the file internal/toolsearch/staticmodel reads:

  "toolsvc-static-embedding-v1\n"
  uint32 dims, uint32 tokens                    (little endian)
  tokens x (uint16 length, UTF-8 bytes)         the vocabulary that has vectors, in id order
  tokens x float32                              scale: vector = int8 x scale
  tokens x dims x int8                          the vectors

Only numpy is needed (pinned in scripts/python/bench/search-model.txt); the
transformer's forward pass is written out here, checked against the model's
own published embedding of "hello" (check_hello below).
"""
import json
import os
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
        out[name] = np.frombuffer(data[lo:hi], dtype=dt).reshape(meta["shape"])
    return out


def layer_norm(x, w, b, eps=1e-12):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def gelu(x):
    # BERT's exact gelu, x * Phi(x), with erf from Abramowitz & Stegun 7.1.26
    # (absolute error under 1.5e-7, below float32's resolution here).
    z = x / np.float32(np.sqrt(2.0))
    a = np.abs(z)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    erf = np.sign(z) * (1.0 - poly * np.exp(-a * a))
    return (0.5 * x * (1.0 + erf)).astype(np.float32)


def forward(w, ids, heads=12):
    """ids: (batch, seq) int array. Returns the last hidden state (batch, seq, 384)."""
    bsz, seq = ids.shape
    x = w["embeddings.word_embeddings.weight"][ids]
    x = x + w["embeddings.position_embeddings.weight"][:seq][None]
    x = x + w["embeddings.token_type_embeddings.weight"][0][None, None]
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
    hid = x.shape[-1]
    hd = hid // heads
    for i in range(6):
        p = f"encoder.layer.{i}."

        def lin(t, name):
            return t @ w[p + name + ".weight"].T + w[p + name + ".bias"]

        q = lin(x, "attention.self.query").reshape(bsz, seq, heads, hd).transpose(0, 2, 1, 3)
        k = lin(x, "attention.self.key").reshape(bsz, seq, heads, hd).transpose(0, 2, 1, 3)
        v = lin(x, "attention.self.value").reshape(bsz, seq, heads, hd).transpose(0, 2, 1, 3)
        att = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(hd))
        att = np.exp(att - att.max(-1, keepdims=True))
        att = att / att.sum(-1, keepdims=True)
        ctx = (att @ v).transpose(0, 2, 1, 3).reshape(bsz, seq, hid)
        x = layer_norm(x + lin(ctx, "attention.output.dense"), w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"])
        h = gelu(lin(x, "intermediate.dense"))
        x = layer_norm(x + lin(h, "output.dense"), w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
    return x


def check_hello(w, vocab):
    # The all-MiniLM-L6-v2-go README publishes the model's normalised embedding
    # of "hello": first two and last two components.
    ids = np.array([[vocab["[CLS]"], vocab["hello"], vocab["[SEP]"]]])
    e = forward(w, ids).mean(1)[0]
    e = e / np.linalg.norm(e)
    want = [-0.06277175, 0.054958846, 0.051483486, 0.0070921564]
    got = [e[0], e[1], e[-2], e[-1]]
    if not np.allclose(got, want, atol=1e-4):
        sys.exit(f"forward pass does not reproduce the model: got {got}, want {want}")


def main():
    model_dir, out_path = sys.argv[1], sys.argv[2]
    tok = json.load(open(f"{model_dir}/tokenizer.json"))
    vocab = tok["model"]["vocab"]
    itos = [None] * len(vocab)
    for t, i in vocab.items():
        itos[i] = t
    w = load_safetensors(f"{model_dir}/model.safetensors")
    check_hello(w, vocab)

    # Which tokens get a vector: those of ASCII text (a tool's text and
    # queries are English); [unused*] and tokens of other scripts get none,
    # so the tokenizer's output for them is skipped at query time.
    keep = [i for i, t in enumerate(itos) if t.isascii() and not (t.startswith("[") and t.endswith("]"))]
    n = len(keep)
    # Each token as a sentence of its own, [CLS] token [SEP], mean-pooled
    # as the model pools a sentence. RAW (optional) keeps these 384-d
    # vectors, to try the steps after it without the forward passes.
    raw = os.environ.get("RAW")
    if raw and os.path.exists(raw):
        emb = np.load(raw)
    else:
        emb = np.zeros((n, 384), dtype=np.float32)
        cls, sep = vocab["[CLS]"], vocab["[SEP]"]
        ids_all = np.array(keep)
        for lo in range(0, n, BATCH):
            hi = min(n, lo + BATCH)
            ids = np.stack([np.full(hi - lo, cls), ids_all[lo:hi], np.full(hi - lo, sep)], axis=1)
            emb[lo:hi] = forward(w, ids).mean(1)
            print(f"{hi}/{n}", file=sys.stderr, flush=True)
        if raw:
            np.save(raw, emb)

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

    scale = np.abs(red).max(1) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(red / scale[:, None]), -127, 127).astype(np.int8)

    with open(out_path, "wb") as f:
        f.write(MAGIC)
        f.write(struct.pack("<II", DIMS, n))
        for i in keep:
            b = itos[i].encode("utf-8")
            f.write(struct.pack("<H", len(b)))
            f.write(b)
        f.write(scale.astype("<f4").tobytes())
        f.write(q.tobytes())


if __name__ == "__main__":
    main()
