#!/usr/bin/env python3
"""Print the few-shot learning curve (issue 15) as a Markdown table from one run's JSON files.

Usage: ml-fewshot-report.py BENCH_DIR SET...   (BENCH_DIR/SET/fewshot/{lector,baselines}.json)

For each set, number of examples per label and system: the mean accuracy over the seeds ± its
standard deviation (sample, n − 1), macro F1 likewise in brackets, and the lowest and highest
seed. A system with a failed or missing seed is shown as FAILED and the report exits with
status 1. Then, per set and size, the tuned MiniLM's lead over the n-grams (mean of the per-seed
differences ± their standard deviation).
"""
import json
import os
import statistics
import sys

SYSTEMS = [("ngrams", "lector-ml n-grams"), ("frozen", "lector-ml + MiniLM, frozen vector"),
           ("tuned", "lector-ml + MiniLM, tuned (default)"), ("svm", "TF-IDF + LinearSVC"),
           ("fasttext", "fastText")]


def load(path):
    with open(path) as f:
        return json.load(f)


def spread(values):
    mean = statistics.mean(values)
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return mean, sd


def main():
    root, sets = sys.argv[1], sys.argv[2:]
    failed = False
    leads = []
    print("| set | per label | system | accuracy, mean ± std (macro F1) | min – max | train s (CPU, mean) |")
    print("|---|---|---|---|---|---|")
    for s in sets:
        d = os.path.join(root, s, "fewshot")
        lec = load(os.path.join(d, "lector.json")) if os.path.exists(os.path.join(d, "lector.json")) else None
        base = load(os.path.join(d, "baselines.json")) if os.path.exists(os.path.join(d, "baselines.json")) else None
        if lec is None:
            print(f"| {s} | | | FAILED: lector.json missing | | |")
            failed = True
            continue
        if base is not None and base.get("scored") != lec["scored"]:
            print(f"| {s} | | | FAILED: the baselines scored {base.get('scored')} rows, lector-ml {lec['scored']} | | |")
            failed = True
            continue
        seeds = range(lec["seeds"])
        for k in sorted(lec["results"], key=int):
            rows = dict(lec["results"][k])
            if base is not None:
                rows.update(base["results"].get(k, {}))
            per_system = {}
            for key, name in SYSTEMS:
                got = [rows.get(f"{seed}/{key}") for seed in seeds]
                if all(g is None for g in got):
                    continue
                if any(g is None or "error" in g for g in got):
                    print(f"| {s} | {k} | {name} | FAILED: a seed is missing or failed | | |")
                    failed = True
                    continue
                acc = [100 * g["accuracy"] for g in got]
                f1 = [100 * g["macro_f1"] for g in got]
                per_system[key] = acc
                (ma, sa), (mf, sf) = spread(acc), spread(f1)
                t = statistics.mean(g.get("train_s", float("nan")) for g in got)
                print(f"| {s} | {k} | {name} | {ma:.1f} ± {sa:.1f} ({mf:.1f} ± {sf:.1f}) | {min(acc):.1f} – {max(acc):.1f} | {t:.2f} |")
            if "ngrams" in per_system:
                for key in ("frozen", "tuned"):
                    if key in per_system:
                        diff = [a - b for a, b in zip(per_system[key], per_system["ngrams"])]
                        leads.append((s, k, key, *spread(diff)))
    if leads:
        print()
        print("| set | per label | MiniLM | lead over the n-grams, points (mean ± std of per-seed differences) |")
        print("|---|---|---|---|")
        for s, k, key, m, sd in leads:
            print(f"| {s} | {k} | {key} | {m:+.1f} ± {sd:.1f} |")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
