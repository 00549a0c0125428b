#!/usr/bin/env python3
"""Print the lector-ml benchmark as Markdown tables from the JSON files of one run.

Usage: ml-report.py BENCH_DIR SET...   (BENCH_DIR/SET/{lector,baselines}.json; absa separately)

A figure is printed only from a run that finished: a set whose JSON is missing, whose two JSON
files describe different splits, or a system recorded as failed (`{"error": ...}`) or without
a sane accuracy, is shown as FAILED with the reason, and the report exits with status 1.
"""
import json
import os
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def pct(x):
    return f"{100 * x:.1f}"


def failure(result):
    """Why `result` (one system's figures) is not a figure to print, or None."""
    if not result:
        return "no result"
    if "error" in result:
        return result["error"]
    acc = result.get("accuracy")
    if not isinstance(acc, (int, float)) or not 0.0 <= acc <= 1.0:
        return f"accuracy {acc!r} is not a proportion"
    return None


def set_failure(d):
    """Why the set in `d` has no comparable results, or None."""
    for name in ("lector.json", "baselines.json"):
        if not os.path.exists(os.path.join(d, name)):
            return f"{name} is missing (its run failed or did not run; see the run's log)"
    lec, base = load(os.path.join(d, "lector.json")), load(os.path.join(d, "baselines.json"))
    sizes = (lec["train"], lec["test"])
    if (base.get("train"), base.get("test")) != sizes:
        return (f"lector.json ({sizes[0]} / {sizes[1]}) and baselines.json ({base.get('train')} / "
                f"{base.get('test')}) are from different splits")
    return None


def main():
    root, sets = sys.argv[1], sys.argv[2:]
    print("| set | train / test | lector-ml acc (macro F1) | LinearSVC acc (macro F1) | fastText acc (macro F1) | "
          "train s: lector / SVC / fastText | predict words/s: lector / SVC / fastText | speed ratio vs SVC, fastText |")
    print("|---|---|---|---|---|---|---|---|")
    curves, failed = [], []
    for s in sets:
        d = os.path.join(root, s)
        why = set_failure(d)
        if why:
            failed.append(f"{s}: {why}")
            print(f"| {s} | FAILED: {why} | | | | | | |")
            continue
        lec, base = load(os.path.join(d, "lector.json")), load(os.path.join(d, "baselines.json"))
        l, v, f = lec["lector"], base["svm"], base["fasttext"]
        whys = [(name, failure(r)) for name, r in (("lector-ml", l), ("LinearSVC", v), ("fastText", f))]
        whys = [f"{name}: {w}" for name, w in whys if w]
        if whys:
            failed.append(f"{s}: " + "; ".join(whys))
            print(f"| {s} | FAILED: {'; '.join(whys)} | | | | | | |")
        else:
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
            cell = lambda r: f"FAILED: {failure(r)}" if failure(r) else f"{pct(r['accuracy'])} ({pct(r['macro_f1'])})"  # noqa: E731
            for name, r in (("lector-ml", c), ("LinearSVC", b.get("svm")), ("fastText", b.get("fasttext"))):
                if failure(r):
                    failed.append(f"{s}, {n} per label, {name}: {failure(r)}")
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
    if failed:
        print("\nFAILED, no figures printed for:\n" + "\n".join(f"- {w}" for w in failed), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
