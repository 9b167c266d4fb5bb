#!/usr/bin/env python3
# tests/backend/token_files.py — token streams as inputs (`--in NAME=PATH:u16|:u32`, .npy i32).
#
# A program whose parameter `tokens: i32[n] @ P(data)` is split over a 4-device
# mesh returns the tokens and their sum. Files written by NumPy (raw little-endian
# uint16 and uint32 as nanoGPT's prepare.py writes them, and .npy int32) are read
# by `spmdc run` and by the CPU executable; the results must equal NumPy's array.
# Every error the option adds is checked by its message: a length that does not
# match (the file's token count and the size to set), a :u32 id that does not fit
# i32, a size that is not whole tokens, a missing file, a parameter that is not
# i32[n]. With --mpirun the executable runs under `mpirun -np 4` with
# SPMDRT_TRACE_READS=1: each process must read exactly its own quarter of the file
# (one read of n/4 tokens at its block's offset), never the whole file.
import argparse, collections, os, re, subprocess, sys, tempfile

import numpy as np

PROGRAM = """mesh M = (data: 4)
shmap tokens_of(tokens: i32[n] @ P(data)) -> (total: i32[] @ P(), t: i32[n] @ P(data)) on M {
  return psum(sum(tokens), data), tokens
}
"""
MATRIX = """mesh M = (data: 4)
shmap wrong(x: f32[n] @ P(data), m: i32[4, 4] @ P()) -> (s: f32[] @ P()) on M {
  return psum(sum(x), data)
}
"""

failures = 0


def check(ok, what, detail=''):
    global failures
    print(('ok   ' if ok else 'FAIL ') + what)
    if not ok:
        failures += 1
        if detail:
            print(detail)


def run(cmd, env=None):
    return subprocess.run(cmd, capture_output=True, text=True, env=env)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--spmdc', required=True)
    ap.add_argument('--mpirun')
    a = ap.parse_args()
    w = tempfile.mkdtemp(prefix='token_files_')
    src = os.path.join(w, 'tokens.spmd')
    open(src, 'w').write(PROGRAM)
    bad = os.path.join(w, 'wrong.spmd')
    open(bad, 'w').write(MATRIX)
    rng = np.random.default_rng(7)
    n = 4096
    u16 = rng.integers(0, 65536, size=n, dtype=np.uint16)
    u16.tofile(os.path.join(w, 'train16.bin'))
    u32 = rng.integers(0, 2**31, size=n, dtype=np.uint32)
    u32.tofile(os.path.join(w, 'train32.bin'))
    np.save(os.path.join(w, 'train.npy'), u32.astype(np.int32))
    too_big = u32.copy()
    too_big[1234] = 2**31
    too_big.tofile(os.path.join(w, 'big32.bin'))
    open(os.path.join(w, 'odd.bin'), 'wb').write(b'\x01\x02\x03')

    exe = os.path.join(w, 'tokens')
    b = run([a.spmdc, 'build', src, '--set', f'n={n}', '--target', 'cpu', '-o', exe])
    check(b.returncode == 0, 'build', b.stderr)
    if b.returncode != 0:
        return 1

    cases = [('u16', 'train16.bin:u16', u16), ('u32', 'train32.bin:u32', u32),
             ('npy', 'train.npy', u32)]
    for name, spec, want in cases:
        expect = want.astype(np.int64)
        for how, cmd in [('spmdc run', [a.spmdc, 'run', src, '--set', f'n={n}']),
                         ('executable', [exe])]:
            out = os.path.join(w, 'out_' + name + '_' + how.replace(' ', '_'))
            r = run(cmd + ['--in', 'tokens=' + os.path.join(w, spec), '--out-dir', out, '-q'])
            if r.returncode != 0:
                check(False, f'{how} {name}', r.stderr)
                continue
            t = np.load(os.path.join(out, 't.npy'))
            total = np.load(os.path.join(out, 'total.npy'))
            # The program sums in i32: wrapping, as NumPy's int32 sum does.
            want_total = np.sum(want.astype(np.int32), dtype=np.int32)
            check(t.dtype == np.int32 and np.array_equal(t.astype(np.int64), expect) and
                  total == want_total, f'{how} reads {spec}',
                  f'{t[:8]} vs {expect[:8]}, total {total} vs {want_total}')

    # Errors: each a clear message, exit 1, from both `spmdc run` and the executable.
    errors = [
        ('length', 'train16.bin:u16', f'holds {n} u16 tokens',
         f'give its dimension the size {n} with `--set n={n}`'),
        ('does not fit', 'big32.bin:u32', 'token 1234 is 2147483648, which does not fit i32', ''),
        ('odd size', 'odd.bin:u16', '3 bytes is not a whole number of u16 tokens', ''),
        ('missing', 'nope.bin:u32', 'nope.bin: cannot open file for reading', ''),
    ]
    exe_small = os.path.join(w, 'tokens_small')
    b = run([a.spmdc, 'build', src, '--set', 'n=64', '--target', 'cpu', '-o', exe_small])
    check(b.returncode == 0, 'build n=64', b.stderr)
    for what, spec, fragment, more in errors:
        sizes = ['--set', 'n=64'] if what == 'length' else ['--set', f'n={n}']
        for how, cmd in [('spmdc run', [a.spmdc, 'run', src] + sizes),
                         ('executable', [exe_small if what == 'length' else exe])]:
            r = run(cmd + ['--in', 'tokens=' + os.path.join(w, spec)])
            check(r.returncode == 1 and fragment in r.stderr and more in r.stderr
                  and 'Traceback' not in r.stderr, f'{how}: error {what}',
                  f'exit {r.returncode}: {r.stderr}')
    for param, fragment in [('x', 'is a token file, which fills an i32[n] parameter, but `x` is f32[64]'),
                            ('m', 'but `m` is i32[4, 4]')]:
        r = run([a.spmdc, 'run', bad, '--set', 'n=64', '--random', '1', '--in',
                 param + '=' + os.path.join(w, 'train16.bin:u16')])
        check(r.returncode == 1 and fragment in r.stderr, f'error: token file for `{param}`',
              r.stderr)

    if a.mpirun:
        env = dict(os.environ, SPMDRT_TRACE_READS='1', OMPI_ALLOW_RUN_AS_ROOT='1',
                   OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1',
                   OMPI_MCA_btl_vader_single_copy_mechanism='none')
        for spec, width, want in [('train16.bin:u16', 2, u16), ('train32.bin:u32', 4, u32),
                                  ('train.npy', 4, u32)]:
            out = os.path.join(w, 'mpi_' + spec.replace(':', '_'))
            r = run([a.mpirun, '--oversubscribe', '-np', '4', exe, '--in',
                     'tokens=' + os.path.join(w, spec), '--out-dir', out, '-q'], env=env)
            if r.returncode != 0:
                check(False, f'mpirun -np 4 reads {spec}', r.stderr)
                continue
            t = np.load(os.path.join(out, 't.npy'))
            check(np.array_equal(t.astype(np.int64), want.astype(np.int64)),
                  f'mpirun -np 4 reads {spec}: the whole array')
            reads = collections.defaultdict(list)
            path = os.path.join(w, spec.split(':')[0])
            for m in re.finditer(r'spmdrt: process (\d+) read (\d+) bytes at (\d+) of (.*)', r.stderr):
                if m.group(4) == path:
                    reads[m.group(1)].append((int(m.group(2)), int(m.group(3))))
            block = n // 4 * width
            data_start = os.path.getsize(path) - n * width  # the .npy header
            offsets = sorted(o for rs in reads.values() for _, o in rs)
            check(len(reads) == 4 and all(len(rs) == 1 and rs[0][0] == block for rs in reads.values())
                  and offsets == [data_start + k * block for k in range(4)],
                  f'mpirun -np 4 reads {spec}: each process its own {block} of {n * width} bytes',
                  r.stderr)
    print('all passed' if failures == 0 else f'{failures} failed')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
