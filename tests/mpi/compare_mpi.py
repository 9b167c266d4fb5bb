#!/usr/bin/env python3
# tests/mpi/compare_mpi.py — built executables under mpirun against `spmdc run`.
#
# For one .spmd program and the gradient program `spmdc grad` derives from each
# of its shmaps: builds the executable (--target cpu) and, for every shmap,
# runs it under `mpirun -np <mesh size>` (one process per mesh position):
#   1. --deterministic with --in files (every rank reads only its blocks)
#      against `spmdc run` with the same files: stdout and .npy bytes identical;
#   2. MPI's own reductions with --random 7 (every rank makes only its blocks)
#      against `spmdc run --random 7`: every output within 1e-6 of the largest
#      magnitude of the reference array (f32/f64; bf16: 2^-7, two bf16 ulps at
#      that magnitude; integers and bools exactly), and the same printed names
#      and shapes.
# Input files are written by NumPy from the shapes the executable's --help lists.
# Exits 77 (ctest SKIP) when mpirun is missing.
#
# --gpu: builds --target cuda instead (one process per GPU, NCCL bootstrapped
# over MPI) and runs only step 2, within 1e-5 relative, for the functions whose
# mesh fits the visible GPUs (--deterministic is refused on the cuda target);
# exits 77 when no GPU is visible or no function fits.
import argparse, concurrent.futures, filecmp, os, re, shutil, subprocess, sys, tempfile

import numpy as np


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def shmaps(text):
    return re.findall(r'^\s*shmap\s+(\w+)', text, re.M)


DTYPES = {'f32': np.float32, 'f64': np.float64, 'bf16': np.float32, 'i32': np.int32, 'bool': np.bool_}


def signatures(exe):
    """{fn: (mesh size, [(name, dtype, shape)])} from the executable's --help."""
    out = {}
    r = run([exe, '--help'])
    for line in r.stdout.splitlines():
        m = re.match(r'\s+(\w+)\((.*)\) on mesh \((.*)\)', line)
        if not m:
            continue
        size = 1
        for a in re.findall(r':\s*(\d+)', m.group(3)):
            size *= int(a)
        params = [(p.group(1), p.group(2), tuple(int(d) for d in re.findall(r'\d+', p.group(3))))
                  for p in re.finditer(r'(\w+): (\w+)\[([\d, ]*)\]', m.group(2))]
        out[m.group(1)] = (size, params)
    return out


def write_inputs(params, directory, seed):
    rng = np.random.default_rng(seed)
    args = []
    for name, dtype, shape in params:
        if dtype == 'bool':
            a = rng.integers(0, 2, size=shape).astype(np.bool_)
        elif dtype == 'i32':
            a = rng.integers(-8, 9, size=shape).astype(np.int32)
        else:
            a = rng.uniform(-1, 1, size=shape).astype(DTYPES[dtype])
            if dtype == 'bf16':  # exactly representable in bf16
                a = (a.view(np.uint32) & 0xFFFF0000).view(np.float32)
        path = os.path.join(directory, name + '.npy')
        np.save(path, a)
        args += ['--in', f'{name}={path}']
    return args


def tolerance_ok(x, y, bf16):
    if x.shape != y.shape or x.dtype != y.dtype:
        return False
    if x.dtype.kind in 'biu':
        return np.array_equal(x, y)
    # NaN where the other has NaN, the same infinity where it has one; the finite
    # values within the tolerance, scaled by the largest finite magnitude.
    x, y = x.astype(np.float64), y.astype(np.float64)
    finite = np.isfinite(y)
    if not np.array_equal(np.isnan(x), np.isnan(y)) or \
            not np.array_equal(x[np.isinf(y)], y[np.isinf(y)]) or not np.all(np.isfinite(x[finite])):
        return False
    scale = max(1.0, float(np.max(np.abs(y[finite])))) if finite.any() else 1.0
    tol = (2.0 ** -7 if bf16 else 1e-6) * scale
    return bool(np.all(np.abs(x[finite] - y[finite]) <= tol))


def printed_header(stdout):
    return [line for line in stdout.splitlines() if line.endswith('(global) =')]


def compare_random(a, mpirun, exe, path, size, common, dirs, label, close):
    """Step 2: `--random 7` under mpirun vs `spmdc run`, every output close(mpi, run)."""
    rand = ['--random', '7']
    ref = run([a.spmdc, 'run', path] + common + rand + ['--out-dir', dirs['run_rand']])
    fast = run(mpirun + ['-np', str(size), exe] + common + rand + ['--out-dir', dirs['mpi_rand']])
    if ref.returncode != 0 or fast.returncode != 0:
        print(f'FAIL {label}: exit {fast.returncode} (mpirun) vs {ref.returncode} '
              f'(spmdc run)\n{fast.stderr}{ref.stderr}')
        return False
    bad = [f for f in sorted(os.listdir(dirs['run_rand']))
           if not os.path.exists(os.path.join(dirs['mpi_rand'], f)) or not close(
               np.load(os.path.join(dirs['mpi_rand'], f)), np.load(os.path.join(dirs['run_rand'], f)))]
    if bad or printed_header(fast.stdout) != printed_header(ref.stdout):
        print(f'FAIL {label}: MPI results beyond tolerance in {bad}')
        return False
    print(f'ok   {label}')
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--spmdc', required=True)
    ap.add_argument('--mpirun', required=True)
    ap.add_argument('--gpu', action='store_true')
    ap.add_argument('program')
    a = ap.parse_args()
    if not shutil.which(a.mpirun):
        print(f'{a.mpirun} not found: skipped')
        return 77
    gpus = 0
    if a.gpu:
        probe = run(['nvidia-smi', '-L']) if shutil.which('nvidia-smi') else None
        gpus = probe.stdout.count('GPU ') if probe is not None and probe.returncode == 0 else 0
        if gpus == 0:
            print('no GPU visible: skipped')
            return 77
    mpirun = [a.mpirun, '--oversubscribe']
    if os.geteuid() == 0:
        mpirun.append('--allow-run-as-root')
    work = tempfile.mkdtemp(prefix='spmdc-mpi-')
    # OpenMPI's session directory (/tmp/ompi.<host>.<uid>) is shared by every
    # mpirun of the user: two tests at once (ctest -j2) race on creating and
    # removing it. Each test gets its own.
    session = os.path.join(work, 'ompi-session')
    os.makedirs(session)
    os.environ['OMPI_MCA_orte_tmpdir_base'] = session
    src = open(a.program).read()
    base = os.path.splitext(os.path.basename(a.program))[0]
    programs = [(base, a.program, src)]
    for fn in shmaps(src):
        r = run([a.spmdc, 'grad', a.program, '--fn', fn])
        if r.returncode == 0:
            path = os.path.join(work, f'{base}_{fn}_grad.spmd')
            open(path, 'w').write(r.stdout)
            programs.append((f'{base}_{fn}_grad', path, r.stdout))

    def build(program):  # one executable holds every shmap; --fn picks its default
        name, path, text = program
        exe = os.path.join(work, name)
        fn = (shmaps(text) or [None])[0]
        target = 'cuda' if a.gpu else 'cpu'
        return program, exe, run([a.spmdc, 'build', path, '--target', target, '-o', exe] +
                                 (['--fn', fn] if fn else []))

    failures = ran = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        built = list(pool.map(build, programs))
    for (name, path, text), exe, r in built:
        if r.returncode != 0:
            print(f'FAIL {name}: spmdc build failed\n{r.stderr}')
            failures += 1
            continue
        bf16 = 'bf16' in text
        for fn, (size, params) in signatures(exe).items():
            label = f'{name}:{fn} (np {size})'
            if a.gpu and size > gpus:
                print(f'note {label}: needs {size} GPUs, {gpus} visible: not run')
                continue
            ran += 1
            # Not next to the executables: `train_mlp` holds a shmap `loss_grad`
            # (derived in the language), and `train_mlp_loss_grad` is an executable.
            d = os.path.join(work, 'io', name, fn)
            dirs = {k: os.path.join(d, k) for k in ('in', 'run_in', 'mpi_in', 'run_rand', 'mpi_rand')}
            for p in dirs.values():
                os.makedirs(p)
            inputs = write_inputs(params, dirs['in'], 11)
            common = ['--fn', fn, '--print-limit', '100000']
            if a.gpu:
                failures += not compare_random(a, mpirun, exe, path, size, common, dirs, label,
                                               lambda x, y: x.shape == y.shape and np.allclose(
                                                   x, y, rtol=1e-5, atol=1e-6))
                continue
            ref = run([a.spmdc, 'run', path] + common + inputs + ['--out-dir', dirs['run_in']])
            det = run(mpirun + ['-np', str(size), exe, '--deterministic'] + common + inputs +
                      ['--out-dir', dirs['mpi_in']])
            if ref.returncode != 0 or det.returncode != 0:
                print(f'FAIL {label}: exit {det.returncode} (mpirun --deterministic) vs '
                      f'{ref.returncode} (spmdc run)\n{det.stderr}{ref.stderr}')
                failures += 1
                continue
            names = sorted(os.listdir(dirs['run_in']))
            if det.stdout != ref.stdout or sorted(os.listdir(dirs['mpi_in'])) != names or not all(
                    filecmp.cmp(os.path.join(dirs['mpi_in'], f), os.path.join(dirs['run_in'], f),
                                shallow=False) for f in names):
                print(f'FAIL {label}: --deterministic differs from spmdc run\n--- mpirun\n'
                      f'{det.stdout[:2000]}\n--- spmdc run\n{ref.stdout[:2000]}')
                failures += 1
                continue
            failures += not compare_random(a, mpirun, exe, path, size, common, dirs, label,
                                           lambda x, y: tolerance_ok(x, y, bf16))
    if a.gpu and ran == 0:
        print('no function fits the visible GPUs: skipped')
        shutil.rmtree(work, ignore_errors=True)
        return 77
    if failures == 0:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f'{failures} failure(s); files kept in {work}')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
