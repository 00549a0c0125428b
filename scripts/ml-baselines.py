#!/usr/bin/env python3
"""Baselines for the lector-ml benchmark, on the split files the Rust bench wrote.

Usage: ml-baselines.py DIR   (DIR holds train.tsv, test.tsv, curve-*.tsv; writes baselines.json)

- scikit-learn TfidfVectorizer(word 1-2-grams) + LinearSVC, library defaults otherwise;
- fastText supervised, wordNgrams=2, 25 epochs, one thread (fasttext-wheel 0.9.2, numpy<2).
Training time includes vectorising; prediction speed is words (whitespace tokens of the raw
text) per second on one thread, over the test set, repeated for at least a second.
"""
import json
import os
import sys
import tempfile
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import fasttext  # noqa: E402
from sklearn.feature_extraction.text import TfidfVectorizer  # noqa: E402
from sklearn.metrics import accuracy_score, f1_score  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402


def read(path):
    labels, texts = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            label, _, text = line.rstrip("\n").partition("\t")
            labels.append(label)
            texts.append(text)
    return labels, texts


def words(texts):
    return sum(len(t.split()) for t in texts)


def timed_rate(fn, n_words):
    rounds, start = 0, time.perf_counter()
    while rounds == 0 or time.perf_counter() - start < 1.0:
        fn()
        rounds += 1
    return n_words * rounds / (time.perf_counter() - start)


def svm(train, test, speed):
    (ytr, xtr), (yte, xte) = train, test
    start = time.perf_counter()
    vec = TfidfVectorizer(ngram_range=(1, 2))
    clf = LinearSVC().fit(vec.fit_transform(xtr), ytr)
    train_s = time.perf_counter() - start
    pred = clf.predict(vec.transform(xte))
    out = {"accuracy": accuracy_score(yte, pred), "macro_f1": f1_score(yte, pred, average="macro"), "train_s": train_s}
    if speed:
        out["predict_words_per_s"] = timed_rate(lambda: clf.predict(vec.transform(xte)), words(xte))
    return out


def ft(train, test, speed):
    (ytr, xtr), (yte, xte) = train, test
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as f:
        for y, x in zip(ytr, xtr):
            f.write(f"__label__{y} {x}\n")
        path = f.name
    try:
        start = time.perf_counter()
        model = fasttext.train_supervised(path, wordNgrams=2, epoch=25, thread=1, verbose=0)
        train_s = time.perf_counter() - start
    finally:
        os.unlink(path)
    pred = [p[0].replace("__label__", "", 1) for p in model.predict(xte)[0]]
    out = {"accuracy": accuracy_score(yte, pred), "macro_f1": f1_score(yte, pred, average="macro"), "train_s": train_s}
    if speed:
        out["predict_words_per_s"] = timed_rate(lambda: model.predict(xte), words(xte))
    return out


def main():
    d = sys.argv[1]
    test = read(os.path.join(d, "test.tsv"))
    train = read(os.path.join(d, "train.tsv"))
    result = {"svm": svm(train, test, True), "fasttext": ft(train, test, True), "curve": {}}
    for n in (8, 32, 128):
        path = os.path.join(d, f"curve-{n}.tsv")
        if os.path.exists(path):
            sub = read(path)
            result["curve"][str(n)] = {"svm": svm(sub, test, False), "fasttext": ft(sub, test, False)}
    with open(os.path.join(d, "baselines.json"), "w") as f:
        json.dump(result, f, indent=2)
    print(json.dumps({k: result[k] for k in ("svm", "fasttext")}))


if __name__ == "__main__":
    main()
