#!/usr/bin/env python3
"""Print the lector-ml benchmark as Markdown tables from the JSON files of one run.

Usage: ml-report.py BENCH_DIR SET...   (BENCH_DIR/SET/{lector,baselines}.json; absa separately)
"""
import json
import os
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def pct(x):
    return f"{100 * x:.1f}"


def main():
    root, sets = sys.argv[1], sys.argv[2:]
    print("| set | train / test | lector-ml acc (macro F1) | LinearSVC acc (macro F1) | fastText acc (macro F1) | "
          "train s: lector / SVC / fastText | predict words/s: lector / SVC / fastText | speed ratio vs SVC, fastText |")
    print("|---|---|---|---|---|---|---|---|")
    curves = []
    for s in sets:
        d = os.path.join(root, s)
        if not os.path.exists(os.path.join(d, "baselines.json")):
            continue
        lec, base = load(os.path.join(d, "lector.json")), load(os.path.join(d, "baselines.json"))
        l, v, f = lec["lector"], base["svm"], base["fasttext"]
        print(f"| {s} | {lec['train']} / {lec['test']} | {pct(l['accuracy'])} ({pct(l['macro_f1'])}) | "
              f"{pct(v['accuracy'])} ({pct(v['macro_f1'])}) | {pct(f['accuracy'])} ({pct(f['macro_f1'])}) | "
              f"{l['train_s']:.2f} / {v['train_s']:.2f} / {f['train_s']:.2f} | "
              f"{l['predict_words_per_s'] / 1e6:.2f}M / {v['predict_words_per_s'] / 1e6:.2f}M / {f['predict_words_per_s'] / 1e6:.2f}M | "
              f"{l['predict_words_per_s'] / v['predict_words_per_s']:.1f}x, {l['predict_words_per_s'] / f['predict_words_per_s']:.1f}x |")
        for n, c in sorted(lec["curve"].items(), key=lambda kv: int(kv[0])):
            b = base["curve"].get(n, {})
            curves.append((s, n, c, b))
    if curves:
        print()
        print("Learning curve (examples per label from the training side; same test side), accuracy (macro F1):")
        print()
        print("| set | per label | lector-ml | LinearSVC | fastText |")
        print("|---|---|---|---|---|")
        for s, n, c, b in curves:
            cell = lambda r: f"{pct(r['accuracy'])} ({pct(r['macro_f1'])})" if r else "-"  # noqa: E731
            print(f"| {s} | {n} | {cell(c)} | {cell(b.get('svm'))} | {cell(b.get('fasttext'))} |")
    absa = os.path.join(root, "absa-rest16-en", "lector.json")
    if os.path.exists(absa):
        a = load(absa)
        print()
        print("| absa-rest16-en (train+dev → test) | aspect-category F1 | sentiment accuracy on detected aspects | pair micro F1 | train s |")
        print("|---|---|---|---|---|")
        print(f"| lector-ml | {pct(a['aspect_f1'])} | {pct(a['sentiment_accuracy'])} | {pct(a['pair_micro_f1'])} | {a['train_s']:.2f} |")
        notes = []
        for name, row in (("lector-minilm.json", "lector-ml + MiniLM vector"),
                          ("lector-minilm-tuned.json", "lector-ml + MiniLM tuned")):
            path = os.path.join(root, "absa-rest16-en", name)
            if not os.path.exists(path):
                continue
            m = load(path)
            print(f"| {row} | {pct(m['aspect_f1'])} | {pct(m['sentiment_accuracy'])} | {pct(m['pair_micro_f1'])} | {m['train_s']:.2f} |")
            notes.append(f"{row}: MiniLM encoding ({m['encoder']}) {m['encode_sentences_per_s']:.1f} sentences/s "
                         f"({m['encode_words_per_s']:.0f} words/s) on one core; prediction of the "
                         f"{m['test']} test sentences {m['predict_s']:.1f} s; the artifact round trip "
                         f"{'predicts identically' if m['artifact_round_trip_identical'] else 'DIFFERS'}.")
        if notes:
            print()
            print("\n\n".join(notes))


if __name__ == "__main__":
    main()
