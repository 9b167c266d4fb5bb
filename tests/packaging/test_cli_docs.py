#!/usr/bin/env python3
"""test_cli_docs.py SPMDC BUILD_DIR SOURCE_DIR — the man page and completions.

They are generated from the CLI definitions (compiler/driver/cli_docs.cpp);
this checks them against what `spmdc --help` and `spmdc CMD --help` print:
 1. the man page has a section per command naming every option of its --help,
    and man(1) renders it without warnings;
 2. bash: completing `spmdc ` offers every command; `spmdc CMD --` exactly the
    options of CMD's --help; `print --emit ` the four phases and the steps
    of the check script (compiler/pipeline/compile.h); a file
    argument the .spmd files and directories; `completion ` the shells;
 3. zsh: the function parses (`zsh -n`) and names every command and option.
"""
import os
import re
import shutil
import subprocess
import sys

spmdc, build, src = sys.argv[1:4]
failures = []


def out(*args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)


def commands():
    text = out(spmdc, "--help").stdout
    section = text.split("Subcommands:", 1)[1]
    return [m.group(1) for m in re.finditer(r"^  (\S+)", section, re.M)]


def options(cmd):
    text = out(spmdc, cmd, "--help").stdout
    names = set()
    for line in text.splitlines():
        m = re.match(r"^  (-[^ ]+)", line)
        if m:
            for name in m.group(1).split(","):
                names.add(name)
    return names


cmds = commands()
if len(cmds) < 10 or "check" not in cmds or "completion" not in cmds:
    failures.append(f"unexpected command list from --help: {cmds}")
if "man-page" in cmds:
    failures.append("the hidden man-page command is listed in --help")

# 1. man page.
man = open(os.path.join(build, "share/man/man1/spmdc.1")).read()
if man != out(spmdc, "man-page").stdout:
    failures.append("build/share/man/man1/spmdc.1 is not what `spmdc man-page` prints")
sections = re.split(r'^\.SS "', man, flags=re.M)
for cmd in cmds:
    sec = next((s for s in sections if s.startswith(f"spmdc {cmd} ")), None)
    if sec is None:
        failures.append(f"man page: no section for `{cmd}`")
        continue
    sec = sec.replace("\\-", "-")
    for opt in options(cmd) - {"-h", "--help"}:
        if not re.search(r"\\fB" + re.escape(opt) + r"\\fR", sec):
            failures.append(f"man page: `{cmd}` lacks {opt}")
if shutil.which("man"):
    r = out("man", "--warnings", "-l", os.path.join(build, "share/man/man1/spmdc.1"),
            env=dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8", MANPAGER="cat", PAGER="cat"))
    if r.returncode != 0 or r.stderr.strip():
        failures.append(f"man --warnings: {r.returncode} {r.stderr.strip()[:500]}")
    if "spmdc check FILE [options]" not in r.stdout:
        failures.append("man does not render the command sections")

# 2. bash completion.
bash_script = os.path.join(build, "share/bash-completion/spmdc")


def complete(words, cwd=src):
    """COMPREPLY for the command line `words` (the last one is being completed)."""
    import shlex
    script = "\n".join([
        "source " + shlex.quote(bash_script),
        "COMP_WORDS=(" + " ".join(shlex.quote(w) for w in words) + ")",
        "COMP_CWORD=%d" % (len(words) - 1),
        "COMP_LINE=" + shlex.quote(" ".join(words)),
        "_spmdc",
        "printf '%s\\n' \"${COMPREPLY[@]}\"",
    ]) + "\n"
    r = out("bash", "-c", script, cwd=cwd)
    if r.returncode != 0:
        failures.append(f"bash completion of {words}: {r.stderr}")
    return set(x for x in r.stdout.splitlines() if x)


if complete(["spmdc", ""]) < set(cmds) | {"--version", "--help"}:
    failures.append(f"`spmdc <TAB>` offers {sorted(complete(['spmdc', '']))}")
if complete(["spmdc", "pr"]) != {"print", "profile"}:
    failures.append(f"`spmdc pr<TAB>` offers {complete(['spmdc', 'pr'])}")
for cmd in cmds:
    got = complete(["spmdc", cmd, "--"])
    want = {o for o in options(cmd) if o.startswith("--")}
    if got != want:
        failures.append(f"`spmdc {cmd} --<TAB>`: offers {sorted(got)}, --help lists {sorted(want)}")
if complete(["spmdc", "print", "x.spmd", "--emit", ""]) != {
        "ast", "typed", "ir", "source", "parse", "lower", "infer_variance", "derived_functions",
        "explicit_pbroadcast", "unroll_loops"}:
    failures.append("`print --emit <TAB>` does not offer the phases")
if complete(["spmdc", "completion", ""]) != {"bash", "zsh"}:
    failures.append("`completion <TAB>` does not offer the shells")
got = complete(["spmdc", "check", "samples/seed/ex"])
want = {f"samples/seed/{f}" for f in os.listdir(os.path.join(src, "samples/seed")) if f.startswith("ex") and f.endswith(".spmd")}
if got != want or not want:
    failures.append(f"`check samples/seed/ex<TAB>` offers {sorted(got)}, expected {sorted(want)}")
if "samples" not in complete(["spmdc", "check", "sam"]):
    failures.append("`check sam<TAB>` does not offer the samples directory")
if complete(["spmdc", "run", "x.spmd", "--fn", ""]):
    failures.append("`run --fn <TAB>` offers file names for a function name")

# 3. zsh.
zsh_script = os.path.join(build, "share/zsh/_spmdc")
text = open(zsh_script).read()
if not text.startswith("#compdef spmdc"):
    failures.append("_spmdc does not start with #compdef")
for cmd in cmds:
    if f"'{cmd}:" not in text:
        failures.append(f"zsh: command {cmd} missing")
    for opt in options(cmd) - {"-h", "--help"}:
        if opt not in text:
            failures.append(f"zsh: {cmd} {opt} missing")
if shutil.which("zsh"):
    r = out("zsh", "-n", zsh_script)
    if r.returncode != 0:
        failures.append(f"zsh -n: {r.stderr}")
else:
    print("note: zsh is not installed; its script was checked as text only")

for f in failures:
    print("FAIL:", f)
print(f"cli docs: {len(cmds)} commands, {len(failures)} failures")
sys.exit(1 if failures else 0)
