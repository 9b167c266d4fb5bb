#!/usr/bin/env python3
"""test_textmate.py — editors/textmate/spmd.tmLanguage.json against every sample.

  test_textmate.py --root SRC --engine harness   # tmharness.py (always available)
  test_textmate.py --root SRC --engine textmate  # textmate-grammar-python from PyPI, a port
                                                 # of vscode-textmate; exit 77 (skip) if absent

Checks, with either engine:
 1. every sample (samples/**/*.spmd, stdlib/, exercises/) tokenizes: each
    non-blank character gets a scope beyond `source.spmd`, none `invalid.illegal`;
 2. every token class the grammar names appears in the samples (the few that
    no sample uses yet in tests/editors/tokens.spmd, which must use them);
 3. hand-checked tokens of samples/seed/example1.spmd and of tokens.spmd get
    the scopes a reader expects;
 4. the grammar's collectives are exactly the Collective ops of ops.def (plus
    the builtins written as collectives: pmean, pvary, axis_size);
 5. editors/vscode (the extension) loads this grammar for `.spmd` files and its
    language configuration is valid JSON with `#` comments.
"""
import argparse
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tmharness  # noqa: E402

OUTSIDE_SAMPLES = {  # classes no sample uses yet; tests/editors/tokens.spmd shows each
    "constant.character.escape.spmd", "support.constant.auto.spmd", "keyword.operator.spec.spmd",
    "invalid.illegal.spmd", "string.quoted.double.spmd", "storage.modifier.attribute.spmd",
    "punctuation.definition.attribute.begin.spmd", "punctuation.definition.attribute.end.spmd",
    "punctuation.definition.variance.begin.spmd", "punctuation.definition.variance.end.spmd",
}


def tokenizer(engine, grammar):
    if engine == "harness":
        g = tmharness.Grammar(grammar)
        return g.tokenize
    try:
        from textmate_grammar.parsers.base import LanguageParser
    except ImportError:
        print("SKIP: textmate-grammar-python is not installed (pip install textmate-grammar-python)")
        sys.exit(77)
    parser = LanguageParser(grammar)

    def tokenize(text):
        element = parser.parse_string(text)
        out = []
        for (line, col), token, scopes in element.flatten() if element else []:
            if token.strip("\n"):
                out.append((line, col, token, [grammar["scopeName"]] + [s for s in scopes if s != grammar["scopeName"]]))
        return out
    return tokenize


def grammar_scopes(node, out):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "name" and isinstance(v, str) and not v.startswith("meta.") and v != "spmd":
                out.add(v)
            else:
                grammar_scopes(v, out)
    elif isinstance(node, list):
        for v in node:
            grammar_scopes(v, out)
    return out


def check_file(path, text, tokenize, failures):
    """Every non-blank character is covered by a token with a real scope."""
    tokens = tokenize(text)
    lines = text.split("\n")
    covered = [[None] * len(l) for l in lines]
    leaf = set()
    for line, col, tok, scopes in tokens:
        for k in range(len(tok)):
            if col + k < len(covered[line]):
                covered[line][col + k] = scopes
        real = [s for s in scopes if s != "source.spmd" and not s.startswith("meta.")]
        if tok.strip() and real:
            leaf.add(real[-1])
        if any(s.startswith("invalid.") for s in scopes) and not path.endswith("tokens.spmd"):
            failures.append(f"{path}:{line + 1}:{col + 1}: `{tok}` is invalid.illegal")
    for ln, row in enumerate(covered):
        for col, scopes in enumerate(row):
            ch = lines[ln][col]
            if ch.isspace():
                continue
            if scopes is None or all(s == "source.spmd" or s.startswith("meta.") for s in scopes):
                failures.append(f"{path}:{ln + 1}:{col + 1}: `{ch}` has no token class")
                return leaf
    return leaf


def scopes_at(tokens, line, col):
    for l, c, tok, scopes in tokens:
        if l == line and c <= col < c + len(tok):
            return scopes
    return []


def expect(tokenize, text, path, cases, failures):
    """cases: (line text fragment, token, scope): the first occurrence of `token` in the
    first line containing the fragment must have `scope` among its scopes."""
    tokens = tokenize(text)
    lines = text.split("\n")
    for fragment, token, scope in cases:
        ln = next((i for i, l in enumerate(lines)
                   if fragment in l and (not l.startswith("#") or fragment.startswith("#"))), None)
        if ln is None:
            failures.append(f"{path}: no line contains `{fragment}`")
            continue
        before = r"(?<![A-Za-z0-9_])" if re.match(r"\w", token) else ""
        after = r"(?![A-Za-z0-9_])" if re.search(r"\w$", token) else ""
        m = re.search(before + re.escape(token) + after, lines[ln])
        col = m.start() if m else -1
        got = scopes_at(tokens, ln, col)
        if scope not in got:
            failures.append(f"{path}:{ln + 1}:{col + 1}: `{token}` should be {scope}, got {got}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--engine", choices=["harness", "textmate"], default="harness")
    args = ap.parse_args()
    root = args.root
    with open(os.path.join(root, "editors/textmate/spmd.tmLanguage.json")) as f:
        grammar = json.load(f)
    tokenize = tokenizer(args.engine, grammar)
    failures = []

    files = sorted(glob.glob(os.path.join(root, "samples/**/*.spmd"), recursive=True) +
                   glob.glob(os.path.join(root, "stdlib/**/*.spmd"), recursive=True) +
                   glob.glob(os.path.join(root, "exercises/**/*.spmd"), recursive=True) +
                   glob.glob(os.path.join(root, "solutions/*.spmd")))
    seen = set()
    for path in files:
        with open(path) as f:
            seen |= check_file(os.path.relpath(path, root), f.read(), tokenize, failures)
    named = grammar_scopes(grammar, set())
    missing = sorted(named - seen - OUTSIDE_SAMPLES)
    if missing:
        failures.append(f"token classes no sample shows: {missing}")
    fixture = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tokens.spmd")
    with open(fixture) as f:
        fixture_text = f.read()
    fixture_seen = check_file("tests/editors/tokens.spmd", fixture_text, tokenize, failures)
    for s in sorted(OUTSIDE_SAMPLES - fixture_seen):
        failures.append(f"tests/editors/tokens.spmd does not show {s}")

    with open(os.path.join(root, "samples/seed/example1.spmd")) as f:
        expect(tokenize, f.read(), "samples/seed/example1.spmd", [
            ("# Example 1", "#", "comment.line.number-sign.spmd"),
            ("mesh M", "mesh", "storage.type.mesh.spmd"),
            ("mesh M", "M", "entity.name.type.mesh.spmd"),
            ("mesh M", "8", "constant.numeric.integer.spmd"),
            ("def g", "def", "storage.type.function.spmd"),
            ("def g", "g", "entity.name.function.spmd"),
            ("def g", "f32", "storage.type.dtype.spmd"),
            ("def g", "->", "keyword.operator.arrow.spmd"),
            ("sum(2.0", "sum", "entity.name.function.call.spmd"),
            ("sum(2.0", "2.0", "constant.numeric.float.spmd"),
            ("sum(2.0", "*", "keyword.operator.spmd"),
            ("shmap f1", "f1", "entity.name.function.spmd"),
            ("shmap f1", "P", "support.type.spec.spmd"),
            ("shmap f1", "i", "variable.other.axis.spmd"),
            ("shmap f1", "on", "keyword.other.on.spmd"),
            ("shmap f1", "@", "keyword.operator.spmd"),
            ("psum(w", "return", "keyword.control.spmd"),
            ("psum(w", "psum", "support.function.collective.spmd"),
            ("psum(w", "w", "variable.other.spmd"),
        ], failures)
    with open(os.path.join(root, "exercises/01-replicate/starter.spmd")) as f:
        expect(tokenize, f.read(), "exercises/01-replicate/starter.spmd", [
            ("return ???", "???", "keyword.other.hole.spmd"),
        ], failures)
    expect(tokenize, fixture_text, "tests/editors/tokens.spmd", [
        ("[[no_auto", "no_auto_pbroadcast", "storage.modifier.attribute.spmd"),
        ("einsum(", "\\n", "constant.character.escape.spmd"),
        ("einsum(", "einsum", "entity.name.function.call.spmd"),
        ("axis=0", "axis", "variable.parameter.keyword.spmd"),
        ("x: f32[4]{i}", "i}", "variable.other.axis.spmd"),
        ("import std.nn", "std.nn", "entity.name.namespace.spmd"),
        ("if ", "and", "keyword.operator.logical.spmd"),
        ("if ", "true", "constant.language.spmd"),
        ("1.5e-3", "1.5e-3", "constant.numeric.float.spmd"),
        ("7 // 2", "//", "keyword.operator.spmd"),
        ("7 // 2", "%", "keyword.operator.spmd"),
        ("sharded", "sharded", "storage.type.function.spmd"),
        ("@ auto", "auto", "support.constant.auto.spmd"),
        ("P(None", "None", "constant.language.spmd"),
        ("$", "$", "invalid.illegal.spmd"),
    ], failures)

    # 4. The collectives of the grammar and of the op table.
    ops = open(os.path.join(root, "compiler/ops/ops.def")).read()
    table = set(re.findall(r'OP\(\w+,\s*"(\w+)",\s*Collective\b', ops)) | {"pmean", "pvary", "axis_size"}
    alternatives = set(grammar["repository"]["collective"]["begin"].split("(", 1)[1].split(")", 1)[0].split("|"))
    if table != alternatives:
        failures.append(f"collectives: in ops.def only {sorted(table - alternatives)}, "
                        f"in the grammar only {sorted(alternatives - table)}")

    # 5. The VS Code extension.
    vscode = os.path.join(root, "editors/vscode")
    with open(os.path.join(vscode, "package.json")) as f:
        manifest = json.load(f)["contributes"]
    lang = manifest["languages"][0]
    gram = manifest["grammars"][0]
    if lang["extensions"] != [".spmd"] or gram["language"] != lang["id"]:
        failures.append(f"vscode: language {lang} / grammar {gram}")
    if gram["scopeName"] != grammar["scopeName"]:
        failures.append(f"vscode: scopeName {gram['scopeName']} != {grammar['scopeName']}")
    with open(os.path.join(vscode, gram["path"])) as f:
        if json.load(f) != grammar:
            failures.append("vscode: the extension's grammar is not editors/textmate's")
    with open(os.path.join(vscode, lang["configuration"])) as f:
        if json.load(f)["comments"]["lineComment"] != "#":
            failures.append("vscode: the line comment is not #")

    for f in failures:
        print("FAIL:", f)
    print(f"{args.engine}: {len(files)} files, {len(seen)} token classes seen, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
