#!/usr/bin/env python3
"""Print the few-shot learning curve (issue 15) as Markdown tables from one run's JSON files.

Usage: ml-fewshot-report.py BENCH_DIR SET...   (BENCH_DIR/SET/fewshot/{lector,baselines}.json)

One row per set and number of examples per label, one column per system: the mean over the
seeds ± the standard deviation (sample, n − 1) of the accuracy, then of the macro F1, then the
mean training time. The last columns of the accuracy table are the MiniLM systems' leads over
lector-ml's n-grams: the mean ± standard deviation of the per-seed differences (the systems are
trained on the same subsets). A system with a missing or failed seed is shown as FAILED and
the report exits with status 1.
"""
import json
import os
import statistics
import sys

SYSTEMS = [("ngrams", "lector-ml n-grams"), ("frozen", "+ MiniLM frozen"), ("tuned", "+ MiniLM tuned (default)"),
           ("svm", "TF-IDF + LinearSVC"), ("fasttext", "fastText")]


def load(path):
    with open(path) as f:
        return json.load(f)


def spread(values):
    return statistics.mean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def collect(root, s):
    """{k: {system: [per-seed result]}} for set `s`, or a reason it cannot be reported."""
    d = os.path.join(root, s, "fewshot")
    paths = [os.path.join(d, n) for n in ("lector.json", "baselines.json")]
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        return None, f"{', '.join(os.path.basename(p) for p in missing)} missing (the run failed or did not run)"
    lec, base = load(paths[0]), load(paths[1])
    if base.get("scored") != lec["scored"]:
        return None, f"the baselines scored {base.get('scored')} rows, lector-ml {lec['scored']}"
    out = {}
    for k in sorted(lec["results"], key=int):
        rows = {**lec["results"][k], **base["results"].get(k, {})}
        out[k] = {key: [rows.get(f"{seed}/{key}") for seed in range(lec["seeds"])] for key, _ in SYSTEMS}
    return (out, lec["scored"], lec["seeds"]), None


def main():
    root, sets = sys.argv[1], sys.argv[2:]
    failed = False
    data = {}
    for s in sets:
        got, why = collect(root, s)
        if why:
            print(f"{s}: FAILED: {why}")
            failed = True
        else:
            data[s] = got
    names = " | ".join(name for _, name in SYSTEMS)
    for title, field, scale, fmt in (("accuracy", "accuracy", 100, "{:.1f} ± {:.1f}"),
                                     ("macro F1", "macro_f1", 100, "{:.1f} ± {:.1f}"),
                                     ("training time, CPU seconds (mean)", "train_s", 1, None)):
        lead = field == "accuracy"
        print(f"\n{title}, mean ± std over the seeds:\n" if fmt else f"\n{title}:\n")
        print(f"| set (scored rows) | per label | {names} |" + (" frozen − n-grams | tuned − n-grams |" if lead else ""))
        print("|---|---|" + "---|" * (len(SYSTEMS) + (2 if lead else 0)))
        for s, (curve, scored, seeds) in data.items():
            for k, systems in curve.items():
                cells, values = [], {}
                for key, _ in SYSTEMS:
                    got = systems[key]
                    if any(g is None or "error" in g or not isinstance(g.get(field), (int, float)) for g in got):
                        cells.append("FAILED")
                        failed = True
                        continue
                    v = [scale * g[field] for g in got]
                    values[key] = v
                    cells.append(fmt.format(*spread(v)) if fmt else f"{statistics.mean(v):.2f}")
                if lead:
                    for key in ("frozen", "tuned"):
                        if key in values and "ngrams" in values:
                            diff = [a - b for a, b in zip(values[key], values["ngrams"])]
                            cells.append("{:+.1f} ± {:.1f}".format(*spread(diff)))
                        else:
                            cells.append("—")
                print(f"| {s} ({scored}) | {k} | " + " | ".join(cells) + " |")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
