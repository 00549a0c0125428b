"""Reading the benchmark's files honestly; shared by scripts/ml-prepare.py and ml-baselines.py.

- `decode(path, data)` decodes UTF-8 and, where it fails, names the file, the line and the byte
  (as crates/lector-ml/src/tsv.rs does for the Rust side);
- `read_tsv(path)` reads `label<TAB>text` lines and counts the lines it skips by reason;
- `ft_label` / `ft_unlabel` escape a label for fastText, which splits its input on whitespace
  (a label `very positive` would otherwise become the label `very` and the word `positive`).

Nothing here cleans, splits or shuffles: that is the callers' business.
"""
import codecs
import re


class BadInput(Exception):
    """Input a person must fix; the message says where."""


def where(path, data, error):
    """`FILE: line L, byte B (file offset O)` of a decoding error, with the bytes."""
    line = data.count(b"\n", 0, error.start) + 1
    column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
    bad = data[error.start:error.end].hex(" ")
    return f"{path}: line {line}, byte {column} (file offset {error.start}): invalid {error.encoding} (bytes {bad})"


def decode(path, data, encoding="utf-8"):
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as e:
        raise BadInput(f"{where(path, data, e)}; convert the file to UTF-8 first") from None


class Lenient:
    """Decodes the way the data README prescribes for a source with stray bytes ("replace" or
    "ignore"), keeping count of the bad sequences and where the first one was."""

    def __init__(self, errors):
        self.errors, self.count, self.first = errors, 0, None
        self._path = self._data = None
        codecs.register_error(f"ml_tsv_{errors}", self._handle)

    def _handle(self, error):
        self.count += 1
        if self.first is None:
            self.first = where(self._path, self._data, error)
        return ("\ufffd" if self.errors == "replace" else "", error.end)

    def decode(self, path, data, encoding="utf-8"):
        self._path, self._data = path, data
        return data.decode(encoding, f"ml_tsv_{self.errors}")

    def __str__(self):
        if not self.count:
            return "no undecodable bytes"
        verb = "replaced" if self.errors == "replace" else "dropped"
        return f"{self.count} undecodable byte sequence(s) {verb}, the first at {self.first}"


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def read_text(path, encoding="utf-8"):
    return decode(path, read_bytes(path), encoding)


class Skipped:
    """Lines left out, by reason, with the first line of each."""

    REASONS = (("without_tab", "without a TAB"), ("empty_label", "with an empty label"), ("blank", "blank"))

    def __init__(self):
        self.count = {key: 0 for key, _ in self.REASONS}
        self.first = {}

    def add(self, reason, line):
        self.count[reason] += 1
        self.first.setdefault(reason, line)

    def suspicious(self):
        return self.count["without_tab"] + self.count["empty_label"]

    def __str__(self):
        parts = [f"{self.count[k]} {why} (first: line {self.first[k]})" for k, why in self.REASONS if self.count[k]]
        return "skipped " + ", ".join(parts) if parts else "no lines skipped"


def read_tsv(path):
    """(labels, texts, skipped) of a `label<TAB>text` file."""
    labels, texts, skipped = [], [], Skipped()
    lines = read_text(path).split("\n")
    if lines[-1] == "":
        lines.pop()  # the end of the last line, not a line
    for number, line in enumerate(lines, 1):
        line = line.rstrip("\r")
        label, tab, rest = line.partition("\t")
        if not line.strip():
            skipped.add("blank", number)
        elif not tab:
            skipped.add("without_tab", number)
        elif not label.strip():
            skipped.add("empty_label", number)
        else:
            labels.append(label)
            texts.append(rest)
    return labels, texts, skipped


_ESCAPE = re.compile(r"[%\s]")


def ft_label(label):
    """A fastText label token for `label`: `%` and whitespace as `%` and four hex digits."""
    return "__label__" + _ESCAPE.sub(lambda m: "%" + format(ord(m.group()), "04x"), label)


def ft_unlabel(token):
    """The label of a fastText label token made by `ft_label`."""
    if not token.startswith("__label__"):
        raise BadInput(f"fastText answered {token!r}, which is not a label token")
    return re.sub(r"%([0-9a-f]{4})", lambda m: chr(int(m.group(1), 16)), token[len("__label__"):])
