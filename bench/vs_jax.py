#!/usr/bin/env python3
"""bench/vs_jax.py — spmdc's CPU executable and JAX side by side, same program, same inputs.

For every row, this script

1. builds the executable (`spmdc build --target cpu`) and times it with its own
   `--iters/--warmup` timer (a step = first device's start to last device's finish), and
   times the interpreter (`spmdc run --iters/--warmup`, the same timer);
2. translates the very same checked program (`spmdc print --emit=ir`, the flat typed IR, and
   the signatures of `spmdc print`) into JAX — one `jax.shard_map` per shmap over a mesh of
   CPU devices, one lax call per IR instruction — and times `jit(...)(*inputs)` with
   `block_until_ready`, the inputs placed on the mesh **as the in_specs say**
   (`device_put(x, NamedSharding(mesh, spec))`, once, before timing), so no timed call
   moves inputs between devices;
3. runs both on identical inputs (uniform in [-1, 1), written to .npy and passed with --in),
   prints how far the outputs are apart (relative to the largest magnitude: the two use
   different libm and BLAS), and for wall time and for CPU time (user + system of the whole
   process, all threads: the executable's measured as its run with the timed iterations
   minus the same run without them) the medians and the ratios JAX / spmdc (> 1: spmdc
   faster), taken round by round, with the load average while the row ran.

The rows: a **headline** section of programs big enough that a step measures compute
(a transformer block forward and gradient, a 2-D mesh MLP gradient, dp_loss and its
gradient, matmul, elementwise — each at two sizes, from bench/jax/*.spmd with --set — and
the 1F1B pipeline sample), then an **overhead** section with every sample (samples/*.spmd,
samples/seed/*.spmd): steps of tens of microseconds, where both sides time dispatch and
synchronisation, not compute (--headline-only skips it). The header line names the CPU,
its vector ISA and the core count.

JAX runs on the CPU with XLA_FLAGS=--xla_force_host_platform_device_count=N, N the largest
mesh among the programs (8 for the defaults), set here before jax is imported.
Without JAX (pip install jax) the script says so and exits 0. OPENBLAS_CORETYPE is removed from
the executable's environment unless --keep-blas-env is given, so OpenBLAS chooses its kernels
for the machine (AVX-512 where there is), as XLA does for JAX. The executable and `spmdc
run` run with `--flush-denormals` (subnormals flushed to zero) because XLA's CPU runtime
runs JAX that way: under jit on the CPU, float32 1e-30 * 1e-10 is 0 and exp(-100) is 0
(NumPy: 1e-40 and 3.8e-44; checked with JAX 0.10.2). --keep-denormals times spmdc's IEEE
default instead (docs/runtime.md, "Subnormals"), which is not like for like. Not a test:
figures depend on the machine and its load. Usage:

  bench/vs_jax.py --spmdc build/compiler/spmdc [--rounds 5] [--iters 20] [--headline-only]
                  [--keep-denormals]
  bench/vs_jax.py --spmdc ... [--set NAME=SIZE ...] [grad:]FILE.spmd[:FN] ...

(`grad:FILE.spmd:FN` times the gradient of shmap FN, as `spmdc grad` derives it.)
"""
import argparse
import glob
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---- reading spmdc's output ------------------------------------------------------------

def split_top(text, sep=','):
    """Splits on `sep` outside parentheses/brackets."""
    parts, depth, cur = [], 0, ''
    for ch in text:
        if ch in '([{':
            depth += 1
        elif ch in ')]}':
            depth -= 1
        if ch == sep and depth == 0:
            parts.append(cur.strip())
            cur = ''
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def parse_spec(text):
    """`P(i, None, (a, b))` -> [('i',), (), ('a', 'b')]."""
    inner = text.strip()[2:-1]
    dims = []
    for d in split_top(inner):
        if d == 'None':
            dims.append(())
        elif d.startswith('('):
            dims.append(tuple(x.strip() for x in d[1:-1].split(',') if x.strip()))
        else:
            dims.append((d,))
    return dims


TYPED = re.compile(r'^(?:(\w+)\s*:\s*)?(\w+)\[([^\]]*)\](?:\{[^}]*\})?\s*@\s*(P\(.*\))$')


def parse_typed(item):
    m = TYPED.match(item.strip())
    if not m:
        raise ValueError(f'cannot read signature item `{item}`')
    name, dtype, dims, spec = m.groups()
    shape = tuple(int(x) for x in dims.split(',') if x.strip())
    return name, dtype, shape, parse_spec(spec)


def read_signatures(printed):
    """Meshes and shmap signatures from `spmdc print`."""
    meshes, shmaps = {}, {}
    text = ' '.join(printed.splitlines())
    for m in re.finditer(r'\bmesh\s+(\w+)\s*=\s*\(([^)]*)\)', text):
        axes = [a.split(':') for a in m.group(2).split(',') if a.strip()]
        meshes[m.group(1)] = [(a.strip(), int(n)) for a, n in axes]
    for m in re.finditer(r'\bshmap\s+(\w+)\s*\(', text):
        name, pos = m.group(1), m.end()
        depth, i = 1, pos
        while depth:
            depth += {'(': 1, ')': -1}.get(text[i], 0)
            i += 1
        params = [parse_typed(p) for p in split_top(text[pos:i - 1])]
        rest = text[i:]
        arrow = re.match(r'\s*->\s*(.*?)\s+on\s+(\w+)\s*\{', rest)
        res_text = arrow.group(1).strip()
        if res_text.startswith('(') and res_text.endswith(')') and '@' in res_text:
            inner = res_text[1:-1]
            items = split_top(inner) if parse_ok(inner) else [res_text]
        else:
            items = [res_text]
        shmaps[name] = dict(params=params, results=[parse_typed(r) for r in items],
                            mesh=arrow.group(2))
    return meshes, shmaps


def parse_ok(inner):
    try:
        for r in split_top(inner):
            parse_typed(r)
        return True
    except ValueError:
        return False


IR_FUNC = re.compile(r'^func @(\d+) (shmap|def) (\w+)')
IR_PARAM = re.compile(r'^\s+param %(\d+) ')
IR_INSTR = re.compile(r'^\s+((?:%\d+: [^=]+?)(?:, %\d+: [^=]+?)*) = (\w+)(.*)$')
IR_REGION = re.compile(r'^\s+region\((.*)\)$')


def parse_instr(m):
    results = [int(x) for x in re.findall(r'%(\d+):', m.group(1))]
    shapes = [tuple(int(d) for d in dims.split(',') if d.strip())
              for dims in re.findall(r'%\d+: \w+\[([^\]]*)\]', m.group(1))]
    rest = m.group(3)
    head = re.split(r'\s\w+=', rest, maxsplit=1)[0]
    operands = [int(x) for x in re.findall(r'%(\d+)', head)]
    attrs = dict(re.findall(r'(\w+)=("[^"]*"|\[[^\]]*\]|\([^)]*\)|\S+)', rest))
    return dict(op=m.group(2), results=results, shapes=shapes, operands=operands, attrs=attrs,
                regions=[])


def read_block(lines, i, body):
    """Reads instructions into `body` from lines[i] until a `yield`/`return`; returns the index."""
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith('yield') or stripped.startswith('return') or IR_FUNC.match(line):
            return i
        if m := IR_INSTR.match(line):
            ins = parse_instr(m)
            body.append(ins)
            i += 1
            while i < len(lines) and (r := IR_REGION.match(lines[i])):
                region = dict(params=[int(x) for x in re.findall(r'%(\d+):', r.group(1))], body=[])
                i = read_block(lines, i + 1, region['body'])
                region['yields'] = [int(x) for x in re.findall(r'%(\d+)', lines[i])]
                ins['regions'].append(region)
                i += 1
            continue
        i += 1
    return i


def read_ir(text):
    """Functions of `spmdc print --emit=ir`: index -> dict(name, kind, params, body, returns)."""
    funcs, lines, i = {}, text.splitlines(), 0
    while i < len(lines):
        m = IR_FUNC.match(lines[i])
        i += 1
        if not m:
            continue
        f = dict(name=m.group(3), kind=m.group(2), params=[], body=[], returns=[])
        funcs[int(m.group(1))] = f
        while i < len(lines) and (p := IR_PARAM.match(lines[i])):
            f['params'].append(int(p.group(1)))
            i += 1
        i = read_block(lines, i, f['body'])
        if i < len(lines) and lines[i].strip().startswith('return'):
            f['returns'] = [int(x) for x in re.findall(r'%(\d+)', lines[i])]
            i += 1
    return funcs


# ---- the JAX translation ---------------------------------------------------------------

def make_translator(jax, jnp, lax, funcs, mesh_axes):
    np_dtype = {'f32': jnp.float32, 'f64': jnp.float64, 'bf16': jnp.bfloat16,
                'i32': jnp.int32, 'bool': jnp.bool_}

    def axes_of(a):
        text = a['axes'].strip('()')
        names = tuple(x.strip() for x in text.split(',') if x.strip())
        return names if len(names) > 1 else names[0]

    def ints(text):
        return tuple(int(x) for x in text.strip('()').split(',') if x.strip())

    def group_size(axes):
        axes = axes if isinstance(axes, tuple) else (axes,)
        n = 1
        for a in axes:
            n *= dict(mesh_axes)[a]
        return n

    unary = {'neg': lambda x: -x, 'exp': jnp.exp, 'log': jnp.log, 'sin': jnp.sin, 'cos': jnp.cos,
             'tanh': jnp.tanh, 'sqrt': jnp.sqrt, 'rsqrt': lax.rsqrt, 'abs': jnp.abs,
             'sign': jnp.sign, 'sigmoid': jax.nn.sigmoid, 'logical_not': jnp.logical_not,
             'erf': lax.erf, 'log1p': jnp.log1p, 'stop_gradient': lax.stop_gradient,
             'constrain': lambda x: x}
    binary = {'add': jnp.add, 'sub': jnp.subtract, 'mul': jnp.multiply, 'pow': jnp.power,
              'maximum': jnp.maximum, 'minimum': jnp.minimum, 'lt': jnp.less,
              'le': jnp.less_equal, 'gt': jnp.greater, 'ge': jnp.greater_equal, 'eq': jnp.equal,
              'ne': jnp.not_equal, 'logical_and': jnp.logical_and, 'logical_or': jnp.logical_or,
              'floor_divide': jnp.floor_divide, 'remainder': jnp.remainder}
    reduce = {'sum': jnp.sum, 'max': jnp.max, 'min': jnp.min}
    allreduce = {'psum': lax.psum, 'pmax': lax.pmax, 'pmin': lax.pmin}

    # collectives that may take several operands, one result each (psum & co take tuples)
    COMBINABLE = ('pbroadcast', 'all_gather', 'all_gather_invariant', 'psum_scatter',
                  'pscatter', 'all_to_all', 'ppermute')

    def call(index, args):
        f = funcs[index]
        env = dict(zip(f['params'], args))
        run_block(f['body'], env)
        return [env[v] for v in f['returns']]

    def run_block(body, env):
        for ins in body:
            op, a = ins['op'], ins['attrs']
            if op in COMBINABLE and len(ins['operands']) > 1:
                # a combined collective (`all_gather((a, b), ...)`): one per operand
                run_block([dict(ins, operands=[v], results=[r])
                           for v, r in zip(ins['operands'], ins['results'])], env)
                continue
            x = [env[v] for v in ins['operands']]
            if op == 'constant':
                out = jnp.asarray(float(a['value']), np_dtype[a['dtype']])
            elif op == 'full':
                out = jnp.full(ints(a['shape']), float(a['value']), np_dtype[a['dtype']])
            elif op == 'iota':
                out = lax.broadcasted_iota(np_dtype[a['dtype']], ints(a['shape']), int(a['dim']))
            elif op in unary:
                out = unary[op](x[0])
            elif op == 'cast':
                out = x[0].astype(np_dtype[a['dtype']])
            elif op == 'div':
                out = lax.div(x[0], x[1]) if x[0].dtype == jnp.int32 else x[0] / x[1]
            elif op in binary:
                out = binary[op](x[0], x[1])
            elif op == 'where':
                out = jnp.where(x[0], x[1], x[2])
            elif op in reduce:
                out = reduce[op](x[0], axis=ints(a['dims']))
            elif op in ('argmax', 'argmin'):  # over several dims: the flat index over them
                dims = ints(a['dims'])
                rest = [d for d in range(x[0].ndim) if d not in dims]
                moved = jnp.transpose(x[0], rest + list(dims))
                flat = moved.reshape(moved.shape[:len(rest)] + (-1,))
                found = (jnp.argmax if op == 'argmax' else jnp.argmin)(flat, axis=-1)
                out = found.astype(jnp.int32).reshape(ins['shapes'][0])
            elif op == 'flip':
                out = jnp.flip(x[0], ints(a['dims']))
            elif op == 'einsum':
                out = jnp.einsum(a['spec'].strip('"'), *x)
            elif op == 'reshape':
                out = jnp.reshape(x[0], ints(a['shape']))
            elif op == 'transpose':
                out = jnp.transpose(x[0], ints(a['dims']))
            elif op == 'broadcast_to':
                out = jnp.broadcast_to(x[0], ints(a['shape']))
            elif op == 'slice':
                out = lax.slice(x[0], ints(a['start']), ints(a['limit']), ints(a['stride']))
            elif op == 'pad':
                shape, start, stride = ints(a['shape']), ints(a['start']), ints(a['stride'])
                cfg = [(s, n - s - ((m - 1) * st + 1), st - 1)
                       for n, s, st, m in zip(shape, start, stride, x[0].shape)]
                out = lax.pad(x[0], jnp.zeros((), x[0].dtype), cfg)
            elif op == 'concat':
                out = jnp.concatenate(x, axis=int(a['dim']))
            elif op == 'dynamic_slice':
                d, size = int(a['dim']), ints(a['shape'])[int(a['dim'])]
                out = lax.dynamic_slice_in_dim(x[0], x[1] * size, size, d)
            elif op == 'dynamic_update_slice':
                d = int(a['dim'])
                out = lax.dynamic_update_slice_in_dim(x[0], x[1], x[2] * x[1].shape[d], d)
            elif op in allreduce:
                out = allreduce[op](tuple(x) if len(x) > 1 else x[0], axes_of(a))
            elif op == 'pbroadcast':
                out = x[0]
            elif op in ('all_gather', 'all_gather_invariant'):
                out = lax.all_gather(x[0], axes_of(a), axis=int(a['dim']), tiled=a['tiled'] == 'true')
            elif op == 'psum_scatter':
                out = lax.psum_scatter(x[0], axes_of(a), scatter_dimension=int(a['dim']),
                                       tiled=a['tiled'] == 'true')
            elif op == 'pscatter':
                axes, d = axes_of(a), int(a['dim'])
                r = lax.axis_index(axes)
                if a['tiled'] == 'true':
                    block = x[0].shape[d] // group_size(axes)
                    out = lax.dynamic_slice_in_dim(x[0], r * block, block, d)
                else:
                    out = jnp.squeeze(lax.dynamic_slice_in_dim(x[0], r, 1, d), d)
            elif op == 'all_to_all':
                out = lax.all_to_all(x[0], axes_of(a), int(a['dim']), int(a['dim2']), tiled=True)
            elif op == 'ppermute':
                pairs = [tuple(int(v) for v in p.split('->')) for p in a['perm'].strip('[]').split(',')]
                out = lax.ppermute(x[0], axes_of(a), pairs)
            elif op == 'axis_index':
                out = lax.axis_index(axes_of(a)).astype(jnp.int32)
            elif op == 'call':
                out = tuple(call(int(a['callee'].lstrip('@')), x))
            elif op == 'for':  # unrolled, as spmdc does
                lo, hi = (int(v) for v in a['range'].split('..'))
                region, carried = ins['regions'][0], list(x)
                for k in range(lo, hi):
                    inner = dict(env)
                    inner.update(zip(region['params'], [jnp.asarray(k, jnp.int32)] + carried))
                    run_block(region['body'], inner)
                    carried = [inner[v] for v in region['yields']]
                out = tuple(carried)
            else:
                raise NotImplementedError(f'no JAX translation for `{op}`')
            outs = out if isinstance(out, (tuple, list)) else (out,)
            for r, v in zip(ins['results'], outs):
                env[r] = v

    return call


def jax_program(jax, np, funcs, meshes, sig, index):
    """The jitted shard_map of shmap `index`, its mesh and its in_specs."""
    import jax.numpy as jnp
    from jax import lax
    from jax.sharding import Mesh, PartitionSpec
    axes = meshes[sig['mesh']]
    n = 1
    for _, size in axes:
        n *= size
    devices = np.array(jax.devices()[:n]).reshape([s for _, s in axes])
    mesh = Mesh(devices, tuple(a for a, _ in axes))
    call = make_translator(jax, jnp, lax, funcs, axes)

    def spec(dims):
        return PartitionSpec(*[None if not d else (d[0] if len(d) == 1 else d) for d in dims])

    in_specs = tuple(spec(p[3]) for p in sig['params'])
    out_specs = tuple(spec(r[3]) for r in sig['results'])
    body = jax.shard_map(lambda *a: tuple(call(index, list(a))), mesh=mesh, in_specs=in_specs,
                         out_specs=out_specs, check_vma=False)
    return jax.jit(body), mesh, in_specs


# ---- running and timing ----------------------------------------------------------------

EXE_ENV = dict(os.environ)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def run_exe(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, env=EXE_ENV)


def make_input(np, rng, dtype, shape):
    if dtype == 'i32':
        return rng.integers(-8, 9, size=shape, dtype=np.int32)
    if dtype == 'bool':
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    return rng.uniform(-1, 1, size=shape).astype(np.float64 if dtype == 'f64' else np.float32)


def cpu_seconds_of(cmd):
    """Run cmd; its exit status, stderr and the CPU time (user + system) it used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = run_exe(cmd)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return r, used


def bench_one(args, jax, np, path, fn, work, sets=()):
    set_flags = [f for k in sets for f in ('--set', k)]
    printed = run([args.spmdc, 'print', path, *set_flags])
    ir = run([args.spmdc, 'print', '--emit=ir', path, *set_flags])
    if printed.returncode or ir.returncode:
        return f'{fn}: spmdc print failed: {printed.stderr or ir.stderr}'
    meshes, shmaps = read_signatures(printed.stdout)
    funcs = read_ir(ir.stdout)
    index = next(i for i, f in funcs.items() if f['name'] == fn and f['kind'] == 'shmap')
    sig = shmaps[fn]
    if any(p[1] == 'bf16' for p in sig['params']) or any(r[1] == 'bf16' for r in sig['results']):
        return None  # NumPy has no bf16 inputs to share; skipped
    exe = os.path.join(work, 'exe')
    b = run([args.spmdc, 'build', path, '--fn', fn, '--target', 'cpu', '-o', exe, *set_flags])
    if b.returncode:
        return f'{fn}: spmdc build failed: {b.stderr}'
    rng = np.random.default_rng(0)
    inputs, flags = [], []
    for k, (name, dtype, shape, _) in enumerate(sig['params']):
        x = make_input(np, rng, dtype, shape)
        p = os.path.join(work, f'in{k}.npy')
        np.save(p, x)
        inputs.append(x)
        flags += ['--in', f'{name}={p}']
    if not args.keep_denormals:
        flags.append('--flush-denormals')
    out_dir = os.path.join(work, 'out')
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    f, mesh, in_specs = jax_program(jax, np, funcs, meshes, sig, index)
    # Each input placed on the mesh as its in_spec says, once, before timing: a timed
    # call then moves no input between devices (as a training loop's state would be).
    from jax.sharding import NamedSharding
    dev_inputs = [jax.device_put(x, NamedSharding(mesh, sp)) for x, sp in zip(inputs, in_specs)]
    jax_out = [np.asarray(o) for o in f(*dev_inputs)]
    exe_run = run_exe([exe, *flags, '-q', '--out-dir', out_dir])
    if exe_run.returncode:
        return f'{fn}: executable failed: {exe_run.stderr}'
    worst = 0.0
    for k, r in enumerate(sig['results']):
        name = r[0] or (fn if len(sig['results']) == 1 else f'out{k}')
        got = np.load(os.path.join(out_dir, f'{name}.npy')).astype(np.float64)
        ref = jax_out[k].astype(np.float64)
        scale = max(1.0, float(np.max(np.abs(ref)))) if ref.size else 1.0
        worst = max(worst, float(np.max(np.abs(got - ref))) / scale if ref.size else 0.0)
    exe_ms, jax_ms, run_ms, exe_cpu, jax_cpu = [], [], [], [], []
    timing = ['-q', '--iters', str(args.iters), '--warmup', '2']
    untimed = ['-q', '--iters', '0', '--warmup', '2']
    for _ in range(args.rounds):
        t, cpu_all = cpu_seconds_of([exe, *flags, *timing])
        exe_ms.append(float(re.search(r'median ([0-9.]+) ms', t.stderr).group(1)))
        # CPU time per step: the same run without the timed iterations, subtracted.
        _, cpu_base = cpu_seconds_of([exe, *flags, *untimed])
        exe_cpu.append(max(cpu_all - cpu_base, 0.0) / args.iters * 1e3)
        t = run_exe([args.spmdc, 'run', path, '--fn', fn, *flags, *timing, *set_flags])
        run_ms.append(float(re.search(r'median ([0-9.]+) ms', t.stderr).group(1)))
        for _ in range(2):
            jax.block_until_ready(f(*dev_inputs))
        times = []
        c0 = time.process_time()
        for _ in range(args.iters):
            t0 = time.perf_counter()
            jax.block_until_ready(f(*dev_inputs))
            times.append((time.perf_counter() - t0) * 1e3)
        jax_cpu.append((time.process_time() - c0) / args.iters * 1e3)
        jax_ms.append(statistics.median(times))
    ratios = [j / e for e, j in zip(exe_ms, jax_ms)]
    cpu_ratios = [j / e for e, j in zip(exe_cpu, jax_cpu) if e > 0]
    return dict(exe=statistics.median(exe_ms), jax=statistics.median(jax_ms),
                run=statistics.median(run_ms), ratio=statistics.median(ratios),
                exe_cpu=statistics.median(exe_cpu), jax_cpu=statistics.median(jax_cpu),
                cpu_ratio=statistics.median(cpu_ratios) if cpu_ratios else float('nan'),
                run_ratio=statistics.median([j / r for r, j in zip(run_ms, jax_ms)]), diff=worst)


# The headline rows: programs big enough that a step measures compute, each at two
# sizes (label, file under ROOT, shmap, gradient?, --set sizes per size).
TRANSFORMER = (('s=128', 'd=256', 'h=8', 'e=32', 'f=1024'), ('s=512', 'd=512', 'h=8', 'e=64', 'f=2048'))
HEADLINE = [
    ('transformer block forward (4 dev)', 'bench/jax/transformer_block.spmd', 'block', False, TRANSFORMER),
    ('transformer block gradient (4 dev)', 'bench/jax/transformer_block.spmd', 'loss', True, TRANSFORMER),
    ('2-D MLP gradient (data 2 x model 4)', 'bench/jax/mlp_2d.spmd', 'loss', True,
     (('b=256', 'd=256', 'f=1024'), ('b=1024', 'd=1024', 'f=4096'))),
    ('dp_loss (8 dev)', 'bench/jax/dp_loss.spmd', 'loss', False,
     (('b=2048', 'd=512', 'k=16'), ('b=8192', 'd=1024', 'k=16'))),
    ('dp_loss gradient (8 dev)', 'bench/jax/dp_loss.spmd', 'loss', True,
     (('b=2048', 'd=512', 'k=16'), ('b=8192', 'd=1024', 'k=16'))),
    ('matmul n^3, rows split (8 dev)', 'bench/jax/matmul.spmd', 'mm', False, (('n=512',), ('n=2048',))),
    ('elementwise (8 dev)', 'bench/jax/elementwise.spmd', 'f', False,
     (('b=1024', 'n=1024'), ('b=8192', 'n=1024'))),
    # The sample's one size only (its shapes are written out): 8 microbatches, 4 stages.
    ('pipeline 1F1B step (4 dev)', 'samples/pipeline_1f1b.spmd', 'one_f_one_b', False, ((),)),
]


def programs(args):
    """(section, label, path, fn or None, gradient?, sets) for every row to time."""
    if args.files:
        for item in args.files:
            grad = item.startswith('grad:')
            path, _, fn = item.removeprefix('grad:').partition(':')
            yield 'given', os.path.relpath(path, ROOT), path, fn or None, grad, tuple(args.set)
        return
    for label, rel, fn, grad, sizes in HEADLINE:
        for sets in sizes:
            yield 'headline', label + (' ' + ' '.join(sets) if sets else ''), \
                os.path.join(ROOT, rel), fn, grad, sets
    if args.headline_only:
        return
    files = sorted(glob.glob(os.path.join(ROOT, 'samples', '*.spmd')))
    files += sorted(glob.glob(os.path.join(ROOT, 'samples', 'seed', '*.spmd')))
    for f in files:
        yield 'overhead', os.path.relpath(f, ROOT), f, None, False, ()


def machine_line():
    flags = ''
    try:
        with open('/proc/cpuinfo') as f:
            flags = next((ln for ln in f if ln.startswith('flags')), '')
    except OSError:
        pass
    isa = 'AVX-512' if ' avx512f' in flags else 'AVX2' if ' avx2' in flags else 'no AVX2'
    return f'{platform.processor() or platform.machine()}, {isa}, {os.cpu_count()} cores'


def load():
    return os.getloadavg()[0]


SECTIONS = {
    'headline': 'Headline: programs big enough to measure compute (two sizes each)',
    'overhead': ('Overhead: the samples, so small that a step times dispatch and '
                 'synchronisation, not compute'),
    'given': 'Programs given on the command line',
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--spmdc', default=os.path.join(ROOT, 'build', 'compiler', 'spmdc'))
    ap.add_argument('--rounds', type=int, default=5, help='alternating rounds (default 5)')
    ap.add_argument('--iters', type=int, default=20, help='timed iterations per round')
    ap.add_argument('--headline-only', action='store_true',
                    help='skip the overhead section (the small samples)')
    ap.add_argument('--set', action='append', default=[], metavar='NAME=SIZE',
                    help='sizes for the programs given on the command line')
    ap.add_argument('--keep-denormals', action='store_true',
                    help='run spmdc with IEEE subnormals (its default) instead of flushing '
                         'them as XLA does for JAX')
    ap.add_argument('--flush-denormals', action='store_true',
                    help='the default (kept for old command lines): spmdc flushes subnormals, '
                         'as XLA')
    ap.add_argument('--keep-blas-env', action='store_true',
                    help='keep OPENBLAS_CORETYPE in the executable\'s environment')
    ap.add_argument('files', nargs='*',
                    help='FILE.spmd, FILE.spmd:FN or grad:FILE.spmd:FN (default: see above)')
    args = ap.parse_args()
    if not args.keep_blas_env:
        EXE_ENV.pop('OPENBLAS_CORETYPE', None)
    todo = list(programs(args))
    largest = 1
    for _, _, path, _, _, sets in todo:
        printed = run([args.spmdc, 'print', path, *[f for k in sets for f in ('--set', k)]]).stdout
        for sizes in re.findall(r'\bmesh\s+\w+\s*=\s*\(([^)]*)\)', printed):
            n = 1
            for size in re.findall(r':\s*(\d+)', sizes):
                n *= int(size)
            largest = max(largest, n)
    os.environ.setdefault('XLA_FLAGS', f'--xla_force_host_platform_device_count={largest}')
    try:
        import jax
        import numpy as np
    except ImportError:
        print('vs_jax: JAX is not installed (pip install jax); nothing to compare')
        return 0
    jax.config.update('jax_enable_x64', True)
    print(f'JAX {jax.__version__} on {jax.devices()[0].platform} ({len(jax.devices())} host '
          f'devices), inputs placed by their in_specs; {machine_line()}; medians of '
          f'{args.rounds} rounds of {args.iters} iterations; executable OPENBLAS_CORETYPE='
          f'{EXE_ENV.get("OPENBLAS_CORETYPE", "(unset)")}; subnormals '
          f'{"kept (IEEE) by spmdc, flushed by XLA" if args.keep_denormals else "flushed by both"}')
    print('wall: median step time (exe: its --iters timer; JAX: jit call to block_until_ready); '
          'cpu: CPU time per step of the whole process (all threads); ratios JAX / spmdc, '
          'per round, then the median (> 1: spmdc faster)')
    section = None
    behind = {'wall': 0, 'cpu': 0}
    with tempfile.TemporaryDirectory() as work:
        for sec, label, path, fn, grad, sets in todo:
            if sec != section:
                section = sec
                print(f'\n{SECTIONS[sec]}')
                print(f'{"program":<64} {"exe ms":>8} {"JAX ms":>8} {"wall":>6} '
                      f'{"exe cpu":>8} {"JAX cpu":>8} {"cpu":>6} {"run ms":>8} {"JAX/run":>7} '
                      f'{"rel diff":>9} {"load":>5}')
            set_flags = [f for k in sets for f in ('--set', k)]
            if grad:
                src = path
                path = os.path.join(work, 'grad.spmd')
                g = run([args.spmdc, 'grad', src, '--fn', fn, '-o', path, *set_flags])
                if g.returncode:
                    print(f'{label:<64} ERROR spmdc grad: {g.stderr.strip()}')
                    continue
                fns, sets = [fn + '_grad'], ()
                label = label if sec == 'headline' else f'{label} grad'
            else:
                fns = [fn] if fn else re.findall(r'^\s*shmap\s+(\w+)',
                                                 run([args.spmdc, 'print', path, *set_flags]).stdout, re.M)
            for name in fns:
                row = label if sec == 'headline' else f'{label}:{name}'
                at = load()
                try:
                    r = bench_one(args, jax, np, path, name, work, sets)
                except Exception as e:  # a translation gap must not hide the other programs
                    r = f'{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ""}'
                if r is None:
                    print(f'{row:<64} (bf16: skipped)')
                elif isinstance(r, str):
                    print(f'{row:<64} ERROR {r}')
                else:
                    if sec == 'headline':
                        behind['wall'] += r['ratio'] < 1
                        behind['cpu'] += r['cpu_ratio'] < 1
                    print(f'{row:<64} {r["exe"]:>8.3f} {r["jax"]:>8.3f} {r["ratio"]:>6.2f} '
                          f'{r["exe_cpu"]:>8.3f} {r["jax_cpu"]:>8.3f} {r["cpu_ratio"]:>6.2f} '
                          f'{r["run"]:>8.3f} {r["run_ratio"]:>7.2f} {r["diff"]:>9.1e} '
                          f'{(at + load()) / 2:>5.1f}', flush=True)
    print(f'\nheadline rows where spmdc is slower than JAX: {behind["wall"]} in wall time, '
          f'{behind["cpu"]} in CPU time')
    return 0


if __name__ == '__main__':
    sys.exit(main())
