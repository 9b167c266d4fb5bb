"""tmharness.py — a small TextMate tokenizer for testing editors/textmate.

It implements the part of the TextMate grammar semantics (as in
vscode-textmate) that spmd.tmLanguage.json uses: `match` rules with
`captures`, `begin`/`end` rules with `beginCaptures`/`endCaptures` and nested
`patterns`, `include` of `#repository` rules and `$self`, scope names. At each
position the earliest match wins; on a tie the enclosing rule's `end` wins,
then the rule listed first. Lines are matched with their "\n", like
vscode-textmate. Regexes are Python's `re`: the grammar keeps to the syntax
Oniguruma and Python share, and test_textmate.py also runs the real engine
(textmate-grammar-python, a port of vscode-textmate) when it is installed.
"""
import re


class Grammar:
    def __init__(self, data):
        self.data = data
        self.scope = data["scopeName"]
        self._compiled = {}

    def _regex(self, source):
        if source not in self._compiled:
            self._compiled[source] = re.compile(source)
        return self._compiled[source]

    def _flatten(self, patterns, seen=None):
        """The match/begin rules reachable from `patterns`, includes resolved, in order."""
        out = []
        seen = set() if seen is None else seen
        for p in patterns:
            if "include" in p:
                ref = p["include"]
                if ref == "$self":
                    target = self.data
                elif ref.startswith("#"):
                    target = self.data["repository"][ref[1:]]
                else:
                    raise ValueError("unsupported include " + ref)
                if id(target) in seen:
                    continue
                out += self._flatten([target] if "match" in target or "begin" in target
                                     else target.get("patterns", []), seen | {id(target)})
            elif "match" in p or "begin" in p:
                out.append(p)
            else:
                out += self._flatten(p.get("patterns", []), seen)
        return out

    def tokenize(self, text):
        """[(line, col, token_text, [scopes...])] for every non-empty token."""
        tokens = []
        stack = [(None, [self.scope], self._flatten(self.data["patterns"]))]  # (rule, scopes, patterns)
        for lineno, line in enumerate(text.split("\n")):
            s = line + "\n"
            pos = 0
            while pos < len(s):
                rule, scopes, patterns = stack[-1]
                best = None  # (start, order, kind, match, rule)
                if rule is not None:
                    m = self._regex(rule["end"]).search(s, pos)
                    if m:
                        best = (m.start(), -1, "end", m, rule)
                for order, p in enumerate(patterns):
                    m = self._regex(p.get("match", p.get("begin"))).search(s, pos)
                    if m and (best is None or m.start() < best[0]):
                        best = (m.start(), order, "begin" if "begin" in p else "match", m, p)
                if best is None:
                    self._emit(tokens, lineno, pos, s[pos:], scopes)
                    break
                start, _, kind, m, p = best
                if start > pos:
                    self._emit(tokens, lineno, pos, s[pos:start], scopes)
                if kind == "end":
                    self._captures(tokens, lineno, m, scopes, p.get("endCaptures", p.get("captures", {})))
                    stack.pop()
                elif kind == "match":
                    inner = scopes + ([p["name"]] if "name" in p else [])
                    self._captures(tokens, lineno, m, inner, p.get("captures", {}))
                else:
                    inner = scopes + ([p["name"]] if "name" in p else [])
                    self._captures(tokens, lineno, m, inner, p.get("beginCaptures", p.get("captures", {})))
                    stack.append((p, inner, self._flatten(p.get("patterns", []))))
                if m.end() == pos and kind != "begin":
                    # No progress (a zero-width match): take one character as it is.
                    self._emit(tokens, lineno, pos, s[pos], stack[-1][1])
                    pos += 1
                else:
                    pos = m.end()
        return tokens

    @staticmethod
    def _emit(tokens, lineno, col, text, scopes):
        text = text.rstrip("\n")  # the "\n" appended to each line is not part of the text
        if text:
            tokens.append((lineno, col, text, list(scopes)))

    def _captures(self, tokens, lineno, m, scopes, captures):
        """The match's text with capture groups scoped; text outside groups keeps `scopes`."""
        spans = []
        for key, cap in captures.items():
            g = int(key)
            if m.start(g) >= 0 and m.end(g) > m.start(g) and "name" in cap:
                spans.append((m.start(g), m.end(g), g, cap["name"]))
        # Split the match into pieces by group boundaries; each piece gets the
        # scopes of the groups that cover it (group 0 first, then by number).
        cuts = sorted({m.start(), m.end()} | {a for a, _, _, _ in spans} | {b for _, b, _, _ in spans})
        for a, b in zip(cuts, cuts[1:]):
            piece = list(scopes)
            for s0, e0, g, name in sorted(spans, key=lambda t: t[2]):
                if s0 <= a and b <= e0:
                    piece.append(name)
            self._emit(tokens, lineno, a, m.string[a:b], piece)
