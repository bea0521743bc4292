#!/usr/bin/env python3
"""Train the static token vectors on a corpus of texts that is not evaluated
(model2vec's "tokenlearn" recipe): fit the vectors so that the mean of a
text's token vectors points where the teacher transformer's embedding of
that whole text points.

distill.py gives each token the teacher's embedding of the token alone,
between [CLS] and [SEP]: a word's vector knows nothing of the sentences it
is used in. Here the teacher embeds real sentences instead, and the static
vectors are moved (from distill.py's) until their mean per sentence
matches: what a token contributes in context is learned from the teacher.

The texts are API descriptions, none from a corpus the eval ranks
(docs/search.md, "Trained static vectors"):
  - every operation of every AWS service in botocore's API models
    (botocore==1.44.5's wheel, sha256 checked by search-model.sh): the
    operation's name and the first two sentences of its documentation;
  - the public functions and classes of this Python's standard library
    with a docstring (parsed with ast, never imported): the name and the
    docstring's first paragraph. This depends on the Python version, so
    the texts' sha256 is checked against the one recorded below.

Usage: tokenlearn.py MODEL_DIR BOTOCORE_WHEEL OUT [--texts N] [--epochs E]
  [--lr R] [--reg L] [--contrastive [--tau T]]
  The fit is Adam on a cosine loss, 10% of the texts held back to choose
  the epoch; --reg pulls the trained tokens toward their start.
  Environment: RAW (the full-width token vectors distill.py caches),
  TEACHER (the texts' teacher embeddings, cached as .npz) to skip the
  forward passes when trying the steps after them.
"""
import argparse
import ast
import gzip
import hashlib
import html
import json
import os
import re
import struct
import sys
import sysconfig
import time
import unicodedata
import zipfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ beside the scripts
import distill  # noqa: E402

# sha256 of the training texts (one per line, in the order used) for the
# default --texts: a different Python's standard library or another
# botocore gives other texts, so a rerun that does not match says so.
TEXTS_SHA256 = "d1eb82ad9fc35a397675e85c3512ad76b9441e3a126661a1fae98e39b56c8a8e"

MAX_TOKENS = 64  # a text's tokens seen by the teacher and the student
MAX_WORD_BYTES = 100  # staticmodel.MaxWordBytes: a longer word is not read
SEED = 44


def aws_texts(wheel):
    z = zipfile.ZipFile(wheel)
    latest = {}
    for n in z.namelist():
        if n.endswith("/service-2.json.gz"):
            svc = n.split("/")[2]
            latest[svc] = max(latest.get(svc, ""), n)
    out = []
    for svc in sorted(latest):
        d = json.loads(gzip.decompress(z.read(latest[svc])))
        for op, o in sorted(d.get("operations", {}).items()):
            doc = html.unescape(re.sub(r"<[^>]+>", " ", o.get("documentation", "")))
            doc = " ".join(doc.split())
            doc = " ".join(re.split(r"(?<=[.!?])\s+", doc)[:2])
            if len(doc) >= 20:
                out.append(f"{op}: {doc}")
    return out


def stdlib_texts():
    root = sysconfig.get_paths()["stdlib"]
    skip = {"idlelib", "lib2to3", "tkinter", "turtledemo", "ensurepip", "pydoc_data", "site-packages"}
    out = []
    for dp, dns, fns in os.walk(root):
        dns[:] = sorted(d for d in dns if d not in skip and not d.startswith(("test", "_", "config-")))
        for fn in sorted(fns):
            if not fn.endswith(".py") or fn.startswith("test"):
                continue
            try:
                with open(os.path.join(dp, fn), encoding="utf-8") as f:
                    tree = ast.parse(f.read())
            except (SyntaxError, UnicodeDecodeError):
                continue
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                    d = ast.get_docstring(node)
                    if d:
                        para = " ".join(d.strip().split("\n\n")[0].split())
                        if len(para) >= 20:
                            out.append(f"{node.name}: {para}")
    return out


# The student's tokenizer is toolsvc's (internal/toolsearch/staticmodel):
# runs of letters and digits, split at case changes, lowercased with
# accents stripped, WordPiece; a word that does not split is dropped.
WORD = re.compile(r"[^\W_]+")


def split_case(word):
    out, start = [], 0
    for i in range(1, len(word)):
        r, p = word[i], word[i - 1]
        if r.isupper() and (p.islower() or p.isdigit()):
            out.append(word[start:i])
            start = i
        elif r.islower() and p.isupper() and i >= 2 and word[i - 2].isupper() and i - 1 > start:
            out.append(word[start : i - 1])
            start = i - 1
    out.append(word[start:])
    return out


def fold(w):
    w = w.lower()
    if w.isascii():
        return w
    return unicodedata.normalize("NFC", "".join(c for c in unicodedata.normalize("NFD", w) if unicodedata.category(c) != "Mn"))


def tokenize(text, vocab, limit):
    ids = []
    for run in WORD.findall(text):
        for part in split_case(run):
            if len(part.encode()) > MAX_WORD_BYTES:
                continue
            w = fold(part)
            pieces, start = [], 0
            while start < len(w):
                end = len(w)
                while end > start and (w[start:end] if start == 0 else "##" + w[start:end]) not in vocab:
                    end -= 1
                if end == start:
                    pieces = None
                    break
                pieces.append(vocab[w[start:end] if start == 0 else "##" + w[start:end]])
                start = end
            if pieces:
                ids.extend(pieces)
                if len(ids) >= limit:
                    return ids[:limit]
    return ids



def teacher_embed(teacher, vocab, toks):
    """Mean-pooled last hidden state of [CLS] toks [SEP] per text, batched
    by length (texts of one length need no padding, so no mask)."""
    cls, sep = vocab[teacher.cls], vocab[teacher.sep]
    out = np.zeros((len(toks), teacher.hidden), dtype=np.float32)
    by_len = {}
    for i, t in enumerate(toks):
        by_len.setdefault(len(t), []).append(i)
    done, t0 = 0, time.time()
    for n in sorted(by_len):
        idx = by_len[n]
        step = max(1, 4096 // (n + 2))
        for lo in range(0, len(idx), step):
            part = idx[lo : lo + step]
            ids = np.array([[cls, *toks[i], sep] for i in part])
            out[part] = teacher.forward(ids).mean(1)
            done += len(part)
        print(f"teacher: {done}/{len(toks)} texts, {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir")
    ap.add_argument("botocore_wheel")
    ap.add_argument("out")
    ap.add_argument("--texts", type=int, default=20000)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--reg", type=float, default=0.0)
    ap.add_argument("--sif", type=float, default=distill.SIF_A)
    ap.add_argument("--contrastive", action="store_true", help="instead: a contrastive fit of (name, description) pairs, from distill.py's vectors")
    ap.add_argument("--tau", type=float, default=0.05)
    args = ap.parse_args()

    tok = json.load(open(f"{args.model_dir}/tokenizer.json"))
    vocab = tok["model"]["vocab"]
    itos = [None] * len(vocab)
    for t, i in vocab.items():
        itos[i] = t
    teacher = distill.Teacher(args.model_dir)
    teacher.check(teacher, vocab)
    keep = distill.kept_tokens(itos)
    row = {tid: r for r, tid in enumerate(keep)}

    # The texts: deduplicated, in the order of their sha256 (a fixed
    # shuffle), the first N with a token; 10% held out of training to
    # choose the epoch on texts the fit did not see.
    texts = sorted(set(aws_texts(args.botocore_wheel)) | set(stdlib_texts()), key=lambda t: hashlib.sha256(t.encode()).digest())
    toks, chosen = [], []
    for t in texts:
        ids = [i for i in tokenize(t, vocab, MAX_TOKENS) if i in row]
        if ids:
            toks.append(ids)
            chosen.append(t)
        if len(chosen) == args.texts:
            break
    digest = hashlib.sha256("\n".join(chosen).encode()).hexdigest()
    print(f"texts: {len(chosen)} of {len(texts)}, {sum(map(len, toks))} tokens, sha256 {digest}", file=sys.stderr)
    if TEXTS_SHA256 and args.texts == 20000 and digest != TEXTS_SHA256:
        sys.exit(f"training texts differ from the pinned ones (sha256 {digest}, want {TEXTS_SHA256}): another Python's standard library?")

    raw = distill.token_vectors(teacher, vocab, keep, os.environ.get("RAW"))
    if args.contrastive:
        return contrastive(args, itos, keep, vocab, row, chosen, raw)
    cache = os.environ.get("TEACHER")
    if cache and os.path.exists(cache):
        z = np.load(cache)
        if z["sha256"].item() != digest:
            sys.exit(f"{cache}: teacher embeddings of other texts")
        y = z["y"]
    else:
        y = teacher_embed(teacher, vocab, toks)
        if cache:
            np.savez(cache, y=y, sha256=np.array(digest))

    # The space: PCA of the texts' (normalised) embeddings to DIMS, about
    # their mean; the targets are the texts' embeddings in it.
    y64 = y.astype(np.float64)
    y64 /= np.linalg.norm(y64, axis=1, keepdims=True)
    ymean = y64.mean(0)
    yc = y64 - ymean
    vals, vecs = np.linalg.eigh(yc.T @ yc / len(yc))
    order = np.argsort(vals)[::-1][: distill.DIMS]
    comps = vecs[:, order]
    comps *= np.sign(comps[np.abs(comps).argmax(0), np.arange(distill.DIMS)])
    target = yc @ comps
    target /= np.linalg.norm(target, axis=1, keepdims=True)

    # The start: distill.py's vectors (centred, SIF-weighted) in that space.
    n = len(keep)
    e0 = (raw.astype(np.float64) - raw.mean(0, dtype=np.float64)) @ comps
    rank = np.arange(1, n + 1, dtype=np.float64)
    proba = (1.0 / rank) / (1.0 / rank).sum()
    e0 *= (args.sif / (args.sif + proba))[:, None]
    e0 /= np.linalg.norm(e0, axis=1).mean()
    e = e0.astype(np.float32).copy()
    e0 = e0.astype(np.float32)

    rows = [np.array([row[i] for i in t], dtype=np.int64) for t in toks]
    nval = len(rows) // 10
    val, train = list(range(nval)), list(range(nval, len(rows)))
    target = target.astype(np.float32)

    def batch_sums(e, idx):
        flat = np.concatenate([rows[i] for i in idx])
        lens = np.array([len(rows[i]) for i in idx])
        starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
        return flat, lens, starts, np.add.reduceat(e[flat], starts, axis=0)

    def val_cos(e):
        _, _, _, s = batch_sums(e, val)
        s /= np.linalg.norm(s, axis=1, keepdims=True) + 1e-12
        return float((s * target[val]).sum(1).mean())

    print(f"epoch 0: validation cosine {val_cos(e):.4f}", file=sys.stderr, flush=True)
    rng = np.random.default_rng(SEED)
    m1, m2 = np.zeros_like(e), np.zeros_like(e)
    b1, b2, step, bs = 0.9, 0.999, 0, 256
    best, best_e = val_cos(e), e.copy()
    for ep in range(1, args.epochs + 1):
        perm = rng.permutation(train)
        for lo in range(0, len(perm), bs):
            idx = perm[lo : lo + bs]
            flat, lens, starts, s = batch_sums(e, idx)
            norm = np.linalg.norm(s, axis=1, keepdims=True) + 1e-12
            t = target[idx]
            cos = (s * t).sum(1, keepdims=True) / norm
            # d(-cos)/ds, averaged over the batch.
            gs = -(t / norm - cos * s / norm**2) / len(idx)
            g = np.zeros_like(e)
            np.add.at(g, flat, np.repeat(gs, lens, axis=0))
            if args.reg:
                touched = np.unique(flat)
                g[touched] += args.reg * (e[touched] - e0[touched])
            step += 1
            m1 = b1 * m1 + (1 - b1) * g
            m2 = b2 * m2 + (1 - b2) * g * g
            upd = args.lr * (m1 / (1 - b1**step)) / (np.sqrt(m2 / (1 - b2**step)) + 1e-8)
            e -= upd.astype(np.float32)
        vc = val_cos(e)
        print(f"epoch {ep}: validation cosine {vc:.4f}", file=sys.stderr, flush=True)
        if vc > best:
            best, best_e = vc, e.copy()
    distill.write_model(args.out, itos, keep, best_e.astype(np.float64))


def distilled(raw, sif):
    """distill.py's vectors: PCA of the token vectors to DIMS, SIF."""
    n = len(raw)
    centred = raw.astype(np.float64) - raw.mean(0, dtype=np.float64)
    vals, vecs = np.linalg.eigh(centred.T @ centred / n)
    order = np.argsort(vals)[::-1][: distill.DIMS]
    comps = vecs[:, order]
    comps *= np.sign(comps[np.abs(comps).argmax(0), np.arange(distill.DIMS)])
    red = centred @ comps
    rank = np.arange(1, n + 1, dtype=np.float64)
    proba = (1.0 / rank) / (1.0 / rank).sum()
    return red * (sif / (sif + proba))[:, None]


def contrastive(args, itos, keep, vocab, row, chosen, raw):
    """The other recipe: each text is "name: description"; the name's
    words are a query, the description its document. In-batch contrastive
    (InfoNCE both ways, temperature tau): a name's mean vector is moved
    toward its own description's and away from the batch's others."""
    pairs = []
    for t in chosen:
        name, _, desc = t.partition(": ")
        q = [row[i] for i in tokenize(name, vocab, MAX_TOKENS) if i in row]
        d = [row[i] for i in tokenize(desc, vocab, MAX_TOKENS) if i in row]
        if q and d:
            pairs.append((np.array(q), np.array(d)))
    e = distilled(raw, args.sif)
    scale0 = np.linalg.norm(e, axis=1).mean()
    e = (e / scale0).astype(np.float32)
    nval = len(pairs) // 10
    val, train = list(range(nval)), list(range(nval, len(pairs)))
    bs = 256

    def sums(e, idx, side):
        flat = np.concatenate([pairs[i][side] for i in idx])
        lens = np.array([len(pairs[i][side]) for i in idx])
        starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
        return flat, lens, np.add.reduceat(e[flat], starts, axis=0)

    def step_loss(e, idx):
        fq, lq, sq = sums(e, idx, 0)
        fd, ld, sd = sums(e, idx, 1)
        nq = np.linalg.norm(sq, axis=1, keepdims=True) + 1e-12
        nd = np.linalg.norm(sd, axis=1, keepdims=True) + 1e-12
        qn, dn = sq / nq, sd / nd
        logits = qn @ dn.T / args.tau
        pr = np.exp(logits - logits.max(1, keepdims=True))
        pr /= pr.sum(1, keepdims=True)
        pc = np.exp(logits - logits.max(0, keepdims=True))
        pc /= pc.sum(0, keepdims=True)
        b = len(idx)
        loss = -0.5 * (np.log(np.diag(pr) + 1e-30).mean() + np.log(np.diag(pc) + 1e-30).mean())
        eye = np.eye(b, dtype=pr.dtype)
        gl = 0.5 * ((pr - eye) + (pc - eye)) / b / args.tau
        gqn, gdn = gl @ dn, gl.T @ qn
        gq = (gqn - (gqn * qn).sum(1, keepdims=True) * qn) / nq
        gd = (gdn - (gdn * dn).sum(1, keepdims=True) * dn) / nd
        return loss, (fq, lq, gq), (fd, ld, gd)

    def val_loss(e):
        return float(np.mean([step_loss(e, val[lo : lo + bs])[0] for lo in range(0, len(val) - bs + 1, bs)]))

    best = val_loss(e)
    best_e = e.copy()
    print(f"pairs: {len(pairs)}; epoch 0: validation loss {best:.4f}", file=sys.stderr, flush=True)
    rng = np.random.default_rng(SEED)
    m1, m2 = np.zeros_like(e), np.zeros_like(e)
    b1, b2, step = 0.9, 0.999, 0
    for ep in range(1, args.epochs + 1):
        perm = rng.permutation(train)
        for lo in range(0, len(perm) - bs + 1, bs):
            _, (fq, lq, gq), (fd, ld, gd) = step_loss(e, perm[lo : lo + bs])
            g = np.zeros_like(e)
            np.add.at(g, fq, np.repeat(gq, lq, axis=0))
            np.add.at(g, fd, np.repeat(gd, ld, axis=0))
            step += 1
            m1 = b1 * m1 + (1 - b1) * g
            m2 = b2 * m2 + (1 - b2) * g * g
            e -= (args.lr * (m1 / (1 - b1**step)) / (np.sqrt(m2 / (1 - b2**step)) + 1e-8)).astype(np.float32)
        vl = val_loss(e)
        print(f"epoch {ep}: validation loss {vl:.4f}", file=sys.stderr, flush=True)
        if vl < best:
            best, best_e = vl, e.copy()
    distill.write_model(args.out, itos, keep, best_e.astype(np.float64))


if __name__ == "__main__":
    main()
