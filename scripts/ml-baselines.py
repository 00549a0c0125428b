#!/usr/bin/env python3
"""Baselines for the lector-ml benchmark, on the split files the Rust bench wrote.

Usage: ml-baselines.py DIR   (DIR holds train.tsv, test.tsv, curve-*.tsv; writes baselines.json)
       ml-baselines.py --fewshot DIR   (DIR holds test.tsv and kK-sS.tsv, the few-shot subsets the
                                        `fewshot` example wrote; writes DIR/baselines.json)

- scikit-learn TfidfVectorizer(word 1-2-grams) + LinearSVC, library defaults otherwise;
- fastText supervised, wordNgrams=2, 25 epochs, one thread (fasttext-wheel 0.9.2, numpy<2),
  on the training lines shuffled with seed 0 (fastText does not shuffle), with the learning rate
  chosen from 0.1, 0.25, 0.5, 1.0 on a held-out tenth of the training side; its training time
  is that of the final fit only (the choice is not counted).
Training time includes vectorising; prediction speed is words (whitespace tokens of the raw
text) per second on one thread over the test set: the best of 5 windows of at least 0.25 s. Times are
CPU time (the machine is shared).

Honesty: the files are read by scripts/ml_tsv.py (bad UTF-8 is named by file, line and byte;
skipped lines are counted, and lines without a TAB or a label stop the run); fastText labels
are escaped (`very positive` is one label, not a label and a word) and its answers checked
against the training labels; a set with fewer than two labels or no test side stops before
anything is written; a system that fails is recorded as `{"error": ...}`, never as a figure,
and a stale baselines.json is removed first so no old figure survives a failed run.
"""
import json
import os
import random
import sys
import tempfile
import time

from ml_tsv import BadInput, ft_label, ft_unlabel, read_tsv

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import fasttext  # noqa: E402
from sklearn.feature_extraction.text import TfidfVectorizer  # noqa: E402
from sklearn.metrics import accuracy_score, f1_score  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402


def read(path):
    labels, texts, skipped = read_tsv(path)
    if skipped.suspicious():
        raise BadInput(f"{path}: {skipped}")
    return labels, texts


def check_trainable(train, test):
    labels = sorted(set(train[0]))
    if len(labels) < 2:
        raise BadInput(f"cannot train: the training side has {len(train[0])} examples and the labels "
                       f"{labels}; a classifier needs at least two labels")
    if not test[0]:
        raise BadInput("cannot score: the test side is empty")


def words(texts):
    return sum(len(t.split()) for t in texts)


# CPU time of the process, as the Rust bench measures its thread's: the machine is shared, and
# CPU time says what one core does whatever else runs beside it. Everything here runs on one
# thread (fastText with thread=1, BLAS and OpenMP limited to one), so process time is that
# thread's time.
clock = time.process_time


def timed_rate(fn, n_words):
    # The best of 5 windows of at least 0.25 s (whole passes over the test set), as the Rust
    # bench measures.
    best = 0.0
    for _ in range(5):
        wall, start, passes = time.perf_counter(), clock(), 0
        while passes == 0 or time.perf_counter() - wall < 0.25:
            fn()
            passes += 1
        spent = clock() - start
        if spent > 0:
            best = max(best, n_words * passes / spent)
    return best


def svm(train, test, speed):
    (ytr, xtr), (yte, xte) = train, test
    start = clock()
    vec = TfidfVectorizer(ngram_range=(1, 2))
    clf = LinearSVC().fit(vec.fit_transform(xtr), ytr)
    train_s = clock() - start
    pred = checked(list(clf.predict(vec.transform(xte))), ytr, "LinearSVC")
    out = {"accuracy": accuracy_score(yte, pred), "macro_f1": f1_score(yte, pred, average="macro"), "train_s": train_s}
    if speed:
        out["predict_words_per_s"] = timed_rate(lambda: clf.predict(vec.transform(xte)), words(xte))
    return out


def ft_fit(rows, lr):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as f:
        for y, x in rows:
            f.write(f"{ft_label(y)} {x}\n")
        path = f.name
    try:
        return fasttext.train_supervised(path, wordNgrams=2, epoch=25, lr=lr, thread=1, seed=0, verbose=0)
    finally:
        os.unlink(path)


def ft_predict(model, texts):
    return [ft_unlabel(p[0]) for p in model.predict(texts)[0]]


def checked(pred, train_labels, system):
    """`pred`, refused where a system answers a label it was never taught (a broken run)."""
    strange = sorted(set(pred) - set(train_labels))
    if strange:
        raise BadInput(f"{system} predicted labels absent from the training side: {strange[:5]}")
    return pred


def ft(train, test, speed):
    (ytr, xtr), (yte, xte) = train, test
    # fastText's SGD reads the file in order and does not shuffle; our split files are in the
    # source order (often grouped by label), so shuffle them with a fixed seed.
    rows = list(zip(ytr, xtr))
    random.Random(0).shuffle(rows)
    # Its learning rate matters a lot (the default 0.1 does not even fit BBC's long documents),
    # so, like lector-ml's cost, it is chosen on a held-out tenth of the training side.
    cut = max(1, len(rows) // 10)
    held, fit = rows[:cut], rows[cut:]
    best_lr, best_acc = 0.1, -1.0
    for lr in (0.1, 0.25, 0.5, 1.0):
        model = ft_fit(fit, lr)
        acc = accuracy_score([y for y, _ in held], ft_predict(model, [x for _, x in held]))
        if acc > best_acc:
            best_lr, best_acc = lr, acc
    start = clock()
    model = ft_fit(rows, best_lr)
    train_s = clock() - start
    pred = checked(ft_predict(model, xte), ytr, "fastText")
    out = {"accuracy": accuracy_score(yte, pred), "macro_f1": f1_score(yte, pred, average="macro"), "train_s": train_s, "lr": best_lr}
    if speed:
        out["predict_words_per_s"] = timed_rate(lambda: model.predict(xte), words(xte))
    return out


def attempt(system, *args):
    """The system's figures, or `{"error": why}`: a failure is recorded, never scored."""
    try:
        return system(*args)
    except Exception as e:  # noqa: BLE001 - any failure of a baseline is reported as such
        print(f"{system.__name__} failed: {e}", file=sys.stderr)
        return {"error": f"{type(e).__name__}: {e}"}


def fewshot(d):
    """Both baselines on every few-shot subset of `d`, scored on `d`/test.tsv."""
    out_path = os.path.join(d, "baselines.json")
    if os.path.exists(out_path):
        os.unlink(out_path)
    try:
        test = read(os.path.join(d, "test.tsv"))
    except BadInput as e:
        sys.exit(f"ml-baselines: {e}")
    results = {}
    names = sorted(n for n in os.listdir(d) if n.startswith("k") and n.endswith(".tsv"))
    for name in names:
        k, s = name[1:-4].split("-s")
        sub = read(os.path.join(d, name))
        check_trainable(sub, test)
        row = results.setdefault(k, {})
        row[f"{s}/svm"] = attempt(svm, sub, test, False)
        row[f"{s}/fasttext"] = attempt(ft, sub, test, False)
        print(f"k={k} seed={s}: svm {row[f'{s}/svm'].get('accuracy')}, fastText {row[f'{s}/fasttext'].get('accuracy')}",
              file=sys.stderr)
    with open(out_path, "w") as f:
        json.dump({"scored": len(test[0]), "results": results}, f, indent=2)


def main():
    if sys.argv[1] == "--fewshot":
        fewshot(sys.argv[2])
        return
    d = sys.argv[1]
    out_path = os.path.join(d, "baselines.json")
    if os.path.exists(out_path):
        os.unlink(out_path)
    try:
        test = read(os.path.join(d, "test.tsv"))
        train = read(os.path.join(d, "train.tsv"))
        check_trainable(train, test)
    except BadInput as e:
        sys.exit(f"ml-baselines: {e}")
    result = {"train": len(train[0]), "test": len(test[0]),
              "svm": attempt(svm, train, test, True), "fasttext": attempt(ft, train, test, True), "curve": {}}
    for n in (8, 32, 128):
        path = os.path.join(d, f"curve-{n}.tsv")
        if os.path.exists(path):
            sub = read(path)
            result["curve"][str(n)] = {"svm": attempt(svm, sub, test, False), "fasttext": attempt(ft, sub, test, False)}
    with open(out_path, "w") as f:
        json.dump(result, f, indent=2)
    print(json.dumps({k: result[k] for k in ("svm", "fasttext")}))


if __name__ == "__main__":
    main()
