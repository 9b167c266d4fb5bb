#!/usr/bin/env python3
# tests/backend/compare_build.py — `spmdc build` executables against `spmdc run`.
#
# For one .spmd program (and, with --derive, the programs `spmdc transpose` and
# `spmdc grad` emit for it), on the file's own mesh and on a mesh with every
# axis halved: builds the executable (--target cpu, or cuda with --gpu), runs
# it and `spmdc run` with the same --random seed and --out-dir, and requires
# identical stdout and identical .npy bytes (the CPU target shares every kernel
# with the interpreter). --gpu compares within 1e-5 relative instead and exits
# 77 (ctest SKIP) when no GPU is visible. --compile-only builds without running.
# Builds run two at a time.
import argparse, concurrent.futures, filecmp, os, re, shutil, subprocess, sys, tempfile

def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)

def halve_meshes(text):
    def repl(m):
        axes = re.sub(r'(\w+)\s*:\s*(\d+)', lambda a: f"{a.group(1)}: {max(1, int(a.group(2)) // 2)}", m.group(2))
        return m.group(1) + "(" + axes + ")"
    return re.sub(r'(mesh\s+\w+\s*=\s*)\(([^)]*)\)', repl, text)

def shmaps(text):
    return re.findall(r'^\s*shmap\s+(\w+)', text, re.M)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--spmdc', required=True)
    ap.add_argument('--derive', action='store_true')
    ap.add_argument('--target', default='cpu')
    ap.add_argument('--compile-only', action='store_true')
    ap.add_argument('--gpu', action='store_true')
    ap.add_argument('-I', dest='lib', action='append', default=[])
    ap.add_argument('program')
    a = ap.parse_args()
    if a.gpu:
        probe = run(['nvidia-smi', '-L']) if shutil.which('nvidia-smi') else None
        if probe is None or probe.returncode != 0 or 'GPU' not in probe.stdout:
            print('no GPU visible: skipped')
            return 77
    work = tempfile.mkdtemp(prefix='spmdc-backend-')
    src = open(a.program).read()
    base = os.path.splitext(os.path.basename(a.program))[0]
    libs = sum((['--lib-path', d] for d in a.lib), [])
    # Mesh variants first (derived programs bake in local shapes), then derive each.
    variants = [(base, src)]
    if not a.compile_only and halve_meshes(src) != src:
        hpath = os.path.join(work, base + '_half.spmd')
        open(hpath, 'w').write(halve_meshes(src))
        if run([a.spmdc, 'check', hpath] + libs).returncode == 0:
            variants.append((base + '_half', halve_meshes(src)))
        else:
            print('note: the program has mesh-specific local shapes; halved mesh skipped')
    jobs = []
    for vname, vtext in variants:
        vpath = os.path.join(work, vname + '.spmd')
        open(vpath, 'w').write(vtext)
        programs = [(vname, vpath, vtext)]
        if a.derive:
            for kind in ('transpose', 'grad', 'vjp'):
                for fn in shmaps(vtext):
                    r = run([a.spmdc, kind, vpath, '--fn', fn] + libs)
                    if r.returncode == 0:
                        dpath = os.path.join(work, f'{vname}_{fn}_{kind}.spmd')
                        open(dpath, 'w').write(r.stdout)
                        programs.append((f'{vname}_{fn}_{kind}', dpath, r.stdout))
                    elif vname == base:
                        first = r.stderr.strip().splitlines()[0] if r.stderr.strip() else r.returncode
                        print(f'note: `spmdc {kind} --fn {fn}` does not apply: {first}')
        for pname, ppath, ptext in programs:
            for fn in shmaps(ptext) or [None]:
                jobs.append((pname, ppath, fn))

    def build(job):
        vname, path, fn = job
        exe = os.path.join(work, f'{vname}_{fn}')
        cmd = [a.spmdc, 'build', path, '--target', a.target] + libs
        if fn: cmd += ['--fn', fn]
        cmd += ['-o', exe]
        r = run(cmd)
        return job, exe, r

    failures = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(build, jobs))
    for (vname, path, fn), exe, r in results:
        label = f'{vname}:{fn}'
        if r.returncode != 0:
            print(f'FAIL {label}: spmdc build failed\n{r.stderr}')
            failures += 1
            continue
        if a.compile_only:
            print(f'ok   {label} (compiled and linked)')
            continue
        d_exe, d_run = os.path.join(work, label.replace(':', '_') + '_exe'), os.path.join(work, label.replace(':', '_') + '_run')
        os.makedirs(d_exe); os.makedirs(d_run)
        common = ['--random', '7', '--print-limit', '100000']
        r1 = run([exe] + common + ['--out-dir', d_exe])
        r2 = run([a.spmdc, 'run', path] + libs + (['--fn', fn] if fn else []) + common + ['--out-dir', d_run])
        if r1.returncode != 0 or r2.returncode != 0:
            print(f'FAIL {label}: exit {r1.returncode} (exe) vs {r2.returncode} (run)\n{r1.stderr}{r2.stderr}')
            failures += 1
            continue
        if not a.gpu:
            same = r1.stdout == r2.stdout and all(
                same_bits(os.path.join(d_exe, f), os.path.join(d_run, f))
                for f in sorted(os.listdir(d_run)))
            if not same or sorted(os.listdir(d_exe)) != sorted(os.listdir(d_run)):
                print(f'FAIL {label}: outputs differ\n--- exe\n{r1.stdout[:2000]}\n--- run\n{r2.stdout[:2000]}')
                failures += 1
                continue
        else:
            import numpy as np
            for f in sorted(os.listdir(d_run)):
                x = np.load(os.path.join(d_exe, f)); y = np.load(os.path.join(d_run, f))
                if x.shape != y.shape or not np.allclose(x, y, rtol=1e-5, atol=1e-6):
                    print(f'FAIL {label}: {f} differs beyond 1e-5'); failures += 1
        # Timing flags work and leave results unchanged.
        r3 = run([exe, '--random', '7', '-q', '--iters', '2', '--warmup', '1'])
        if r3.returncode != 0 or 'median' not in r3.stderr:
            print(f'FAIL {label}: --iters run failed: {r3.stderr}')
            failures += 1
            continue
        print(f'ok   {label}')
    if failures == 0:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f'{failures} failure(s); files kept in {work}')
    return 1 if failures else 0

def same_bits(p, q):
    """The two .npy files hold the same bits, but for which NaN a NaN is: with two NaN
    operands x86 returns the first one's sign and payload, and the host compiler may
    swap a commutative op's operands in a fused loop (docs/backend.md)."""
    if filecmp.cmp(p, q, shallow=False):
        return True
    import numpy as np
    x, y = np.load(p), np.load(q)
    if x.dtype != y.dtype or x.shape != y.shape or x.dtype.kind != 'f':
        return False
    nan = np.isnan(x)
    if not np.array_equal(nan, np.isnan(y)):
        return False
    bits = np.dtype(f'u{x.dtype.itemsize}')
    return np.array_equal(x[~nan].view(bits), y[~nan].view(bits))


if __name__ == '__main__':
    sys.exit(main())
