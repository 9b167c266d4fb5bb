#!/usr/bin/env python3
# tests/backend/checkpoint.py — --checkpoint-dir / --checkpoint-every / --resume.
#
# tests/backend/checkpoint/train_ckpt.spmd trains with AdamW for `steps`
# iterations (a --set size used only as the trip count). For `spmdc run`, the
# CPU executable and (with --mpirun) the executable under `mpirun -np 4`:
#   N steps with a checkpoint, then --resume with 2N steps == 2N steps straight,
#   every output (carried or computed after the loop) byte for byte.
# The executable killed with SIGKILL mid-training (after a checkpoint of a
# 40000-step run appeared), then resumed: the outputs equal an uninterrupted run.
# Every error is checked by its message, exit 1, no traceback or crash:
# another program, function, mesh, process count, a loop shorter than the
# checkpoint, no checkpoint, a corrupt file, options without their partner,
# no loop, several loops.
import argparse, glob, os, shutil, signal, subprocess, sys, tempfile, time

failures = 0
HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = os.path.join(HERE, 'checkpoint', 'train_ckpt.spmd')
MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1',
               OMPI_MCA_btl_vader_single_copy_mechanism='none')


def check(ok, what, detail=''):
    global failures
    print(('ok   ' if ok else 'FAIL ') + what, flush=True)
    if not ok:
        failures += 1
        if detail:
            print(detail)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, env=MPI_ENV, **kw)


def same_outputs(a, b):
    names = sorted(os.listdir(a))
    if not names or names != sorted(os.listdir(b)):
        return False, f'{names} vs {sorted(os.listdir(b))}'
    for n in names:
        if open(os.path.join(a, n), 'rb').read() != open(os.path.join(b, n), 'rb').read():
            return False, f'{n} differs'
    return True, ''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--spmdc', required=True)
    ap.add_argument('--mpirun')
    a = ap.parse_args()
    w = tempfile.mkdtemp(prefix='checkpoint_')
    spmdc = a.spmdc
    N = 10

    def build(steps, out, source=PROGRAM):
        r = run([spmdc, 'build', source, '--fn', 'train', '--set', f'steps={steps}',
                 '--target', 'cpu', '-o', out])
        check(r.returncode == 0, f'build steps={steps}', r.stderr)
        return out

    exe = {n: build(n, os.path.join(w, f'train{n}')) for n in (N, 2 * N, 5, 40000)}
    runners = [
        ('spmdc run', lambda n: [spmdc, 'run', PROGRAM, '--fn', 'train', '--set', f'steps={n}']),
        ('executable', lambda n: [exe[n]]),
    ]
    if a.mpirun:
        runners.append(('mpirun -np 4', lambda n: [a.mpirun, '--oversubscribe', '-np', '4',
                                                   exe[n], '--deterministic']))
    for how, cmd in runners:
        tag = how.replace(' ', '_')
        straight, resumed, ckpt = (os.path.join(w, tag + s) for s in ('_straight', '_resumed', '_ckpt'))
        r1 = run(cmd(2 * N) + ['--random', '3', '-q', '--out-dir', straight])
        r2 = run(cmd(N) + ['--random', '3', '-q', '--checkpoint-dir', ckpt, '--checkpoint-every', '5'])
        r3 = run(cmd(2 * N) + ['--random', '3', '-q', '--resume', ckpt, '--out-dir', resumed])
        if r1.returncode or r2.returncode or r3.returncode:
            check(False, f'{how}: N steps, resume to 2N', r1.stderr + r2.stderr + r3.stderr)
            continue
        files = sorted(os.listdir(ckpt))
        processes = 4 if how.startswith('mpirun') else 1
        check(files == [f'ckpt-{N:010d}.p{p}-of-{processes}' for p in range(processes)],
              f'{how}: only the newest checkpoint is kept', str(files))
        ok, why = same_outputs(straight, resumed)
        check(ok, f'{how}: {N} steps, stop, resume to {2 * N} == {2 * N} steps straight, bit for bit', why)
        # Resuming again from a checkpoint taken mid-way through the 2N-step run.
        mid, again = os.path.join(w, tag + '_mid'), os.path.join(w, tag + '_again')
        r4 = run(cmd(2 * N) + ['--random', '3', '-q', '--checkpoint-dir', mid, '--checkpoint-every', '15'])
        r5 = run(cmd(2 * N) + ['--random', '3', '-q', '--resume', mid, '--out-dir', again])
        ok, why = same_outputs(straight, again) if r4.returncode == 0 and r5.returncode == 0 else (False, r4.stderr + r5.stderr)
        check(ok and os.listdir(mid) and all(f.startswith('ckpt-0000000015') for f in os.listdir(mid)),
              f'{how}: resume at 15 of {2 * N} == straight', why)

    # The executable killed (SIGKILL) mid-training, then resumed.
    big = 40000
    straight, resumed, ckpt = (os.path.join(w, 'kill' + s) for s in ('_straight', '_resumed', '_ckpt'))
    r = run([exe[big], '--random', '5', '-q', '--out-dir', straight])
    check(r.returncode == 0, 'kill: the uninterrupted run', r.stderr)
    p = subprocess.Popen([exe[big], '--random', '5', '-q', '--out-dir', resumed,
                          '--checkpoint-dir', ckpt, '--checkpoint-every', '500'],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while time.time() < deadline and p.poll() is None:
        done = [int(os.path.basename(f)[5:15]) for f in glob.glob(os.path.join(ckpt, 'ckpt-*-of-1'))]
        if done and max(done) >= 2000:
            break
        time.sleep(0.005)
    killed_running = p.poll() is None
    p.send_signal(signal.SIGKILL)
    p.wait()
    saved = sorted(os.path.basename(f) for f in glob.glob(os.path.join(ckpt, 'ckpt-*-of-1')))
    check(killed_running and p.returncode == -signal.SIGKILL and saved and
          int(saved[-1][5:15]) < big and not os.listdir(resumed),
          f'kill: SIGKILL mid-training (checkpoints {saved[-2:]}, no outputs written)')
    r = run([exe[big], '--random', '5', '-q', '--out-dir', resumed, '--resume', ckpt])
    ok, why = same_outputs(straight, resumed) if r.returncode == 0 else (False, r.stderr)
    check(ok, f'kill: resumed from {saved[-1] if saved else None}: the outputs equal the uninterrupted run', why)

    # Errors.
    ckpt = os.path.join(w, 'executable_ckpt')       # steps=N, one process, from the executable
    run_ckpt = os.path.join(w, 'spmdc_run_ckpt')    # from `spmdc run`
    text = open(PROGRAM).read()

    def variant(name, old, new):
        path = os.path.join(w, name + '.spmd')
        assert old in text
        open(path, 'w').write(text.replace(old, new))
        return path
    other_lr = variant('other_lr', '0.02, 0.9, 0.999, 1e-8, 0.01)\n    w2', '0.03, 0.9, 0.999, 1e-8, 0.01)\n    w2')
    renamed = variant('renamed', 'shmap train(', 'shmap train2(')
    other_mesh = variant('other_mesh', 'mesh M = (data: 4)', 'mesh M = (data: 4, model: 1)')
    two_loops = variant('two_loops', '  norm = sum', '  for again in range(2) {\n    last = last + 0.0\n  }\n  norm = sum')
    corrupt = os.path.join(w, 'corrupt')
    os.makedirs(corrupt)
    open(os.path.join(corrupt, 'ckpt-0000000005.p0-of-1'), 'w').write('not a checkpoint\n')
    os.makedirs(os.path.join(w, 'empty'))
    mpi_ckpt = os.path.join(w, 'mpirun_-np_4_ckpt')
    truncated = os.path.join(w, 'truncated')
    os.makedirs(truncated)
    whole = open(os.path.join(run_ckpt, f'ckpt-{N:010d}.p0-of-1'), 'rb').read()
    open(os.path.join(truncated, f'ckpt-{N:010d}.p0-of-1'), 'wb').write(whole[:len(whole) - 7])
    a_file = os.path.join(w, 'a_file')
    open(a_file, 'w').write('')

    def srun(source, steps, *more, fn='train'):
        return [spmdc, 'run', source, '--fn', fn, '--set', f'steps={steps}', '--random', '3', '-q'] + list(more)
    errors = [
        ('another program', srun(other_lr, 2 * N, '--resume', run_ckpt),
         'the checkpoint was made by another program or other sizes (`--set`) than this run\'s'),
        ('another function', srun(renamed, 2 * N, '--resume', run_ckpt, fn='train2'),
         'the checkpoint was made by `train`, not `train2`'),
        ('another mesh', srun(other_mesh, 2 * N, '--resume', run_ckpt),
         'the checkpoint was made by a run on mesh (data: 4), not (data: 4, model: 1)'),
        ('a shorter loop', srun(PROGRAM, 5, '--resume', run_ckpt),
         'the checkpoint is after 10 iterations, but the loop over `step` has 5'),
        ('no directory', srun(PROGRAM, N, '--resume', os.path.join(w, 'nope')), 'no such directory'),
        ('no checkpoint', srun(PROGRAM, N, '--resume', os.path.join(w, 'empty')), 'no complete checkpoint'),
        ('corrupt', srun(PROGRAM, N, '--resume', corrupt), 'is not an spmdc checkpoint'),
        ('dir without every', srun(PROGRAM, N, '--checkpoint-dir', os.path.join(w, 'x')),
         '--checkpoint-dir needs --checkpoint-every K'),
        ('every without dir', srun(PROGRAM, N, '--checkpoint-every', '3'),
         '--checkpoint-every needs --checkpoint-dir DIR or --resume DIR'),
        ('loop without dir', srun(PROGRAM, N, '--checkpoint-loop', 'step'),
         '--checkpoint-loop needs --checkpoint-dir DIR or --resume DIR'),
        ('truncated', srun(PROGRAM, 2 * N, '--resume', truncated), 'is truncated'),
        ('dir is a file', srun(PROGRAM, N, '--checkpoint-dir', a_file, '--checkpoint-every', '2'),
         'it exists and is not a directory'),
        ('with --iters', srun(PROGRAM, N, '--resume', run_ckpt, '--iters', '2'),
         'do not go with --iters and --warmup'),
        ('no loop', [spmdc, 'run', os.path.join(HERE, '..', '..', 'samples', 'dp_loss.spmd'),
                     '--fn', 'loss', '--random', '1', '--resume', run_ckpt],
         '`loss` has no top-level `for` loop to checkpoint'),
        ('several loops', srun(two_loops, N, '--resume', run_ckpt),
         'has 2 top-level loops (variables `step`, `again`); name the one to checkpoint with --checkpoint-loop VAR'),
        ('unknown loop', srun(two_loops, N, '--resume', run_ckpt, '--checkpoint-loop', 'k'),
         'has no top-level loop over `k` (--checkpoint-loop; its loops: `step`, `again`)'),
        ('several loops, named', srun(two_loops, N, '--resume', run_ckpt, '--checkpoint-loop', 'step'),
         'the checkpoint was made by another program'),
        ('executable: another program', [build(2 * N, os.path.join(w, 'other_exe'), other_lr), '--random', '3', '--resume', ckpt],
         'the checkpoint was made by another program or other sizes'),
        ('executable: no directory', [exe[N], '--random', '3', '--resume', os.path.join(w, 'nope')],
         'no such directory'),
        ('executable: dir without every', [exe[N], '--random', '3', '--checkpoint-dir', os.path.join(w, 'y')],
         '--checkpoint-dir needs --checkpoint-every K'),
    ]
    if a.mpirun:
        errors.append(('another process count', [exe[2 * N], '--random', '3', '--resume', mpi_ckpt],
                       'no complete checkpoint for 1 process (its files were written by a run of '
                       'another number of processes: resume with that many)'))
    for what, cmd, fragment in errors:
        r = run(cmd)
        check(r.returncode == 1 and fragment in r.stderr and 'Traceback' not in r.stderr and
              'internal' not in r.stderr, f'error: {what}', f'exit {r.returncode}: {r.stderr}')
    print('all passed' if failures == 0 else f'{failures} failed')
    if failures == 0:
        shutil.rmtree(w, ignore_errors=True)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
