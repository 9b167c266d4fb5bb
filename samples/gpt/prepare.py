#!/usr/bin/python3
"""Character-level tokens for samples/gpt from the Debian `fortunes` data files.

    /usr/bin/python3 samples/gpt/prepare.py OUTDIR          # writes the files below
    /usr/bin/python3 samples/gpt/prepare.py --decode FILE.npy  # prints token rows as text

The text is the fortune files named in FILES (packages `fortunes-min` and
`fortunes`, /usr/share/games/fortunes), read as Latin-1, tabs made spaces,
anything that is not printable ASCII dropped, and the `%` line between two
fortunes replaced by an empty line. Every 10th fortune goes to validation, the
rest to training, each truncated to a fixed size (the program's signature
says it: NTRAIN and NVAL below).

The vocabulary is fixed, 96 characters: id 0 is the newline, ids 1..95 are
the printable ASCII characters ' ' (32) .. '~' (126), id = ord(c) - 31.

OUTDIR/train.npy  int32[NTRAIN]   the training tokens
OUTDIR/val.npy    int32[NVAL]     the validation tokens
OUTDIR/vocab.json                 the 96 characters, in id order
"""
import json
import os
import sys

import numpy as np

FORTUNE_DIR = "/usr/share/games/fortunes"
FILES = ["fortunes", "literature", "riddles", "wisdom", "people", "science"]
NTRAIN = 262144
NVAL = 16384
VOCAB = ["\n"] + [chr(c) for c in range(32, 127)]


def encode(text):
    return np.array([0 if c == "\n" else ord(c) - 31 for c in text], dtype=np.int32)


def decode(ids):
    return "".join(VOCAB[int(i)] for i in ids)


def fortunes():
    """The fortunes of FILES, in order, each cleaned to the vocabulary."""
    out = []
    for name in FILES:
        with open(os.path.join(FORTUNE_DIR, name), "rb") as f:
            raw = f.read().decode("latin-1")
        for entry in raw.split("\n%\n"):
            entry = entry.replace("\t", "    ")
            entry = "".join(c for c in entry if c == "\n" or 32 <= ord(c) < 127).strip("\n")
            if entry and entry != "%":
                out.append(entry + "\n\n")
    return out


def split_text():
    entries = fortunes()
    train = "".join(e for i, e in enumerate(entries) if i % 10 != 9)
    val = "".join(e for i, e in enumerate(entries) if i % 10 == 9)
    if len(train) < NTRAIN or len(val) < NVAL:
        sys.exit(f"prepare.py: only {len(train)} training and {len(val)} validation characters")
    return train[:NTRAIN], val[:NVAL]


def main(argv):
    if len(argv) == 3 and argv[1] == "--decode":
        for row in np.atleast_2d(np.load(argv[2])):
            print(decode(row))
            print("-" * 40)
        return
    if len(argv) != 2:
        sys.exit(__doc__)
    outdir = argv[1]
    os.makedirs(outdir, exist_ok=True)
    train, val = split_text()
    np.save(os.path.join(outdir, "train.npy"), encode(train))
    np.save(os.path.join(outdir, "val.npy"), encode(val))
    with open(os.path.join(outdir, "vocab.json"), "w") as f:
        json.dump(VOCAB, f)
    print(f"{len(train)} training and {len(val)} validation tokens, vocabulary {len(VOCAB)}")


if __name__ == "__main__":
    main(sys.argv)
