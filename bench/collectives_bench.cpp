// bench/collectives_bench.cpp — nccl-tests style figures for the CPU collectives.
//
// Threads mode (default): all_reduce, all_gather, reduce_scatter, all_to_all
// and ppermute (a ring shift) over a 1-D mesh of --devices simulated devices
// (default 8), one thread each.
// MPI mode (--mpi, run as `mpirun -np N collectives_bench --mpi`): the same
// collectives over a mesh of the N processes through the runtime's MPI fabric
// (what `--executor mpi` executables call), each timed next to the bare MPI
// call of the same size on preallocated buffers (MPI_Allreduce, MPI_Allgather,
// MPI_Reduce_scatter_block, MPI_Alltoall), with the runtime's overhead over it,
// and next to the threads executor on a mesh of N simulated devices (measured
// by rank 0 before MPI starts, while the other processes wait in MPI_Init);
// plus all_reduce and reduce_scatter in deterministic (rank-order) mode.
//
// Combined mode (--combined K, threads): K tensors per round through
// all_reduce, all_gather and reduce_scatter, as K separate collectives and as
// one combined collective (psum((a, b, ...)) and friends: one packed buffer,
// one rendezvous); per-tensor sizes grow 4x from 8 B while K of them fit in
// --max-bytes; median time of a round of K and the speedup.
//
// Strided mode (--strided, threads): reduce_scatter, all_gather and all_to_all on
// f32[rows, 1024] per device over dimension 0 and over dimension 1 (all_to_all: each
// split/concat pair), for 64 KiB, 1 MiB and 4 MiB per device (reduce_scatter and
// all_to_all: the input; all_gather: the output); median microseconds of one call (each
// after a barrier, best median of --rounds rounds) and the dim-1 / dim-0 ratio.
//
// Message sizes double from 8 B to --max-bytes (default 64 MB). Size is the
// per-device buffer as nccl-tests counts it (all_gather: the output;
// reduce_scatter: the input). Prints size, element count (f32), time per call
// (us), algbw = size / time and busbw = algbw times the nccl-tests factor:
// 2(n-1)/n for all_reduce, (n-1)/n for the others. MPI times are the largest
// over the processes of the median time of one call (each call after a
// barrier); each figure is the best of --rounds rounds (default 3), the
// runtime and bare calls alternating.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>

#include "mesh_timing.h"
#include "spmdrt/collectives.h"

#ifdef SPMDC_BENCH_MPI
#include <mpi.h>

#include "spmdrt/mpi.h"
#endif

using namespace spmd::rt;
using spmd::bench::median_call_us;

namespace {

enum class Op { AllReduce, AllGather, ReduceScatter, AllToAll, Permute };

struct Named {
  Op op;
  const char *name;
  double factor;
};

std::vector<Named> ops(double n) {
  return {{Op::AllReduce, "all_reduce", 2 * (n - 1) / n},
          {Op::AllGather, "all_gather", (n - 1) / n},
          {Op::ReduceScatter, "reduce_scatter", (n - 1) / n},
          {Op::AllToAll, "all_to_all", (n - 1) / n}};
}

/// The threads table also times ppermute (a ring shift: rank r sends to r + 1),
/// which the MPI mode does not (it has no bare MPI call of the same shape).
std::vector<Named> threads_ops(double n) {
  std::vector<Named> out = ops(n);
  out.push_back({Op::Permute, "ppermute", 1.0});
  return out;
}

/// Input elements per device: all_gather sends count/n, the others count.
int64_t input_count(Op op, int64_t count, int64_t n) {
  return op == Op::AllGather ? count / n : count;
}

Tensor call(DeviceContext &ctx, Op op, const Tensor &x) {
  switch (op) {
    case Op::AllReduce:
      return ctx.all_reduce(x, {0}, ReduceOp::Sum);
    case Op::AllGather:
      return ctx.all_gather(x, {0}, 0, true);
    case Op::ReduceScatter:
      return ctx.reduce_scatter(x, {0}, 0, true);
    case Op::AllToAll:
      return ctx.all_to_all(x, {0}, 0, 0);
    case Op::Permute: {
      const int64_t n = ctx.mesh().num_devices();
      PermutePairs ring;
      for (int64_t r = 0; r < n; ++r) ring.emplace_back(r, (r + 1) % n);
      return ctx.ppermute(x, {0}, ring);
    }
  }
  return x;
}

int iterations_for(int64_t bytes) { return bytes <= (1 << 16) ? 50 : bytes <= (1 << 22) ? 10 : 3; }

bool sizes_fit(Op op, int64_t bytes, int64_t n) {
  // Sizes must split evenly into n f32 blocks for the sharded collectives.
  return op == Op::AllReduce || (bytes / 4) % n == 0;
}

void print_header(const char *name, bool mpi) {
  if (mpi) {
    std::printf("\n# %s\n#%12s %12s %12s %10s %10s %12s %10s %9s %12s %10s\n", name, "size(B)",
                "count", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "bare(us)", "bare_busbw",
                "overhead", "threads(us)", "thr_busbw");
  } else {
    std::printf("\n# %s\n#%12s %12s %12s %10s %10s\n", name, "size(B)", "count", "time(us)",
                "algbw(GB/s)", "busbw(GB/s)");
  }
}

/// Average microseconds per call of `op` on `bytes` per-device bytes, threads.
double measure_threads(const Mesh &mesh, Op op, int64_t bytes, int iterations) {
  const int64_t n = mesh.num_devices();
  double seconds = 0;
  run_on_mesh(mesh, [&](DeviceContext &ctx) {
    Tensor x = Tensor::full(DType::F32, {input_count(op, bytes / 4, n)}, 1.0);
    call(ctx, op, x);  // warm-up
    ctx.barrier();
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) call(ctx, op, x);
    ctx.barrier();
    auto stop = std::chrono::steady_clock::now();
    if (ctx.device() == 0) seconds = std::chrono::duration<double>(stop - start).count();
  });
  return seconds / iterations * 1e6;
}

int threads_main(int64_t devices, int64_t max_bytes) {
  const Mesh mesh({{"d", devices}});
  std::printf("# simulated CPU mesh: %lld devices (threads), f32\n",
              static_cast<long long>(devices));
  for (const Named &named : threads_ops(static_cast<double>(devices))) {
    print_header(named.name, false);
    for (int64_t bytes = 8; bytes <= max_bytes; bytes *= 2) {
      if (!sizes_fit(named.op, bytes, devices)) continue;
      const double us = measure_threads(mesh, named.op, bytes, iterations_for(bytes));
      const double algbw = static_cast<double>(bytes) / (us * 1e-6) / 1e9;
      std::printf(" %12lld %12lld %12.1f %10.3f %10.3f\n", static_cast<long long>(bytes),
                  static_cast<long long>(bytes / 4), us, algbw, algbw * named.factor);
      std::fflush(stdout);
    }
  }
  return 0;
}

/// Combined mode: `k` tensors of `bytes` each (per device) through `op`, as k
/// separate calls or as one combined call (`psum((a, b, ...))`,
/// `all_gather((a, b, ...))`, `psum_scatter((a, b, ...))`: one packed buffer,
/// one rendezvous). Median microseconds per round of the k tensors.
double measure_combined(const Mesh &mesh, Op op, int64_t bytes, int64_t k, bool combined,
                        int iterations) {
  const int64_t n = mesh.num_devices();
  return median_call_us(mesh, iterations, [&](DeviceContext &ctx) {
    std::vector<Tensor> xs;
    for (int64_t j = 0; j < k; ++j)
      xs.push_back(Tensor::full(DType::F32, {input_count(op, bytes / 4, n)}, 1.0));
    return std::function<void()>([&ctx, op, combined, xs] {
      // (all k results alive at the end either way, as in a program)
      std::vector<Tensor> out;
      if (!combined) {
        for (const Tensor &x : xs) out.push_back(call(ctx, op, x));
      } else if (op == Op::AllReduce) {
        out = ctx.all_reduce(xs, {0}, ReduceOp::Sum);
      } else if (op == Op::AllGather) {
        out = ctx.all_gather(xs, {0}, 0, true);
      } else {
        out = ctx.reduce_scatter(xs, {0}, 0, true);
      }
    });
  });
}

int combined_main(int64_t devices, int64_t max_bytes, int64_t k) {
  const Mesh mesh({{"d", devices}});
  std::printf(
      "# simulated CPU mesh: %lld devices (threads), f32; %lld tensors per round, each\n"
      "# of the size shown: %lld separate collectives vs one combined collective\n",
      static_cast<long long>(devices), static_cast<long long>(k), static_cast<long long>(k));
  for (const Named &named : ops(static_cast<double>(devices))) {
    if (named.op == Op::AllToAll) continue;  // (not combinable)
    std::printf("\n# %s x %lld\n#%12s %14s %14s %9s\n", named.name, static_cast<long long>(k),
                "size(B)", "separate(us)", "combined(us)", "speedup");
    for (int64_t bytes = 8; bytes * k <= max_bytes; bytes *= 4) {
      if (!sizes_fit(named.op, bytes, devices)) continue;
      const int iterations = std::max(5, iterations_for(bytes * k));
      const double sep = measure_combined(mesh, named.op, bytes, k, false, iterations);
      const double one = measure_combined(mesh, named.op, bytes, k, true, iterations);
      std::printf(" %12lld %14.1f %14.1f %8.2fx\n", static_cast<long long>(bytes), sep, one,
                  sep / one);
      std::fflush(stdout);
    }
  }
  return 0;
}

/// Strided mode: median microseconds of one call of `fn` on each device.
double measure_call(const Mesh &mesh, int iterations, const Shape &shape,
                    const std::function<Tensor(DeviceContext &, const Tensor &)> &fn) {
  return median_call_us(mesh, iterations, [&](DeviceContext &ctx) {
    return std::function<void()>(
        [&ctx, &fn, x = Tensor::full(DType::F32, shape, 1.0)] { fn(ctx, x); });
  });
}

int strided_main(int64_t devices, int rounds) {
  const Mesh mesh({{"d", devices}});
  const int64_t cols = 1024;
  std::printf(
      "# simulated CPU mesh: %lld devices (threads), f32[rows, %lld] per device;\n"
      "# median us of one call, best of %d rounds; ratio = dim 1 / dim 0\n",
      static_cast<long long>(devices), static_cast<long long>(cols), rounds);
  std::printf("#%-16s %10s %-16s %12s %12s %7s\n", "collective", "size(B)", "dims", "dim0(us)",
              "dim1(us)", "ratio");
  using Fn = std::function<Tensor(DeviceContext &, const Tensor &)>;
  auto best = [&](int iterations, const Shape &shape, const Fn &fn) {
    double out = 1e300;
    for (int r = 0; r < rounds; ++r) out = std::min(out, measure_call(mesh, iterations, shape, fn));
    return out;
  };
  for (int64_t bytes : {int64_t{64} << 10, int64_t{1} << 20, int64_t{4} << 20}) {
    const int64_t rows = bytes / 4 / cols;
    const int iterations = bytes <= (int64_t{1} << 20) ? 30 : 10;
    auto row = [&](const char *name, const char *dims, double d0, double d1) {
      std::printf(" %-16s %10lld %-16s %12.1f %12.1f %7.2f\n", name, static_cast<long long>(bytes),
                  dims, d0, d1, d1 / d0);
      std::fflush(stdout);
    };
    auto scatter = [](int64_t d) {
      return Fn(
          [d](DeviceContext &ctx, const Tensor &x) { return ctx.reduce_scatter(x, {0}, d, true); });
    };
    row("reduce_scatter", "0 vs 1", best(iterations, {rows, cols}, scatter(0)),
        best(iterations, {rows, cols}, scatter(1)));
    auto gather = [](int64_t d) {
      return Fn(
          [d](DeviceContext &ctx, const Tensor &x) { return ctx.all_gather(x, {0}, d, true); });
    };
    row("all_gather", "0 vs 1", best(iterations, {rows / devices, cols}, gather(0)),
        best(iterations, {rows, cols / devices}, gather(1)));
    auto to_all = [](int64_t sd, int64_t cd) {
      return Fn(
          [sd, cd](DeviceContext &ctx, const Tensor &x) { return ctx.all_to_all(x, {0}, sd, cd); });
    };
    const double a00 = best(iterations, {rows, cols}, to_all(0, 0));
    row("all_to_all", "(0,0) vs (1,1)", a00, best(iterations, {rows, cols}, to_all(1, 1)));
    row("all_to_all", "(0,0) vs (0,1)", a00, best(iterations, {rows, cols}, to_all(0, 1)));
    row("all_to_all", "(0,0) vs (1,0)", a00, best(iterations, {rows, cols}, to_all(1, 0)));
  }
  return 0;
}

#ifdef SPMDC_BENCH_MPI
/// The largest over the processes of the median microseconds of one call of
/// `once` (each call timed alone: on a shared machine the median shrugs off the
/// calls a descheduled process stretched, which an average does not).
double time_mpi(MpiProcesses &procs, int iterations, const std::function<void()> &once) {
  once();  // warm-up
  std::vector<double> us;
  for (int i = 0; i < iterations; ++i) {
    procs.barrier();
    const auto start = std::chrono::steady_clock::now();
    once();
    us.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() *
                 1e6);
  }
  std::sort(us.begin(), us.end());
  return procs.max(us[us.size() / 2]);
}

/// The bare MPI call of `op` on preallocated f32 buffers.
void bare(Op op, const float *in, float *out, int count, int n) {
  switch (op) {
    case Op::AllReduce:
      MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
    case Op::AllGather:
      MPI_Allgather(in, count, MPI_FLOAT, out, count, MPI_FLOAT, MPI_COMM_WORLD);
      break;
    case Op::ReduceScatter:
      MPI_Reduce_scatter_block(in, out, count / n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
    case Op::AllToAll:
      MPI_Alltoall(in, count / n, MPI_FLOAT, out, count / n, MPI_FLOAT, MPI_COMM_WORLD);
      break;
    case Op::Permute:  // (not in the MPI table)
      break;
  }
}

/// This process's world rank and the world size from the launcher's
/// environment, before MPI starts; -1 when unknown.
std::pair<int, int> launcher_rank_and_size() {
  auto read = [](std::initializer_list<const char *> names) {
    for (const char *name : names)
      if (const char *v = std::getenv(name); v && *v) return std::atoi(v);
    return -1;
  };
  return {read({"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}),
          read({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"})};
}

int mpi_main(int64_t max_bytes, int rounds) {
  // The threads figures for the same mesh size, taken by rank 0 alone while the
  // other processes wait in MPI_Init (so nothing else competes for the cores).
  std::map<std::pair<int, int64_t>, double> threads_us;
  if (auto [rank, size] = launcher_rank_and_size(); rank == 0 && size > 0) {
    const Mesh mesh({{"d", size}});
    for (const Named &named : ops(size))
      for (int64_t bytes = 8; bytes <= max_bytes; bytes *= 2)
        if (sizes_fit(named.op, bytes, size))
          threads_us[{static_cast<int>(named.op), bytes}] =
              measure_threads(mesh, named.op, bytes, iterations_for(bytes));
  }
  std::unique_ptr<MpiProcesses> procs = start_mpi_processes();
  const int n = procs->size();
  const bool root = procs->rank() == 0;
  const Mesh mesh({{"d", n}});
  if (root)
    std::printf("# MPI: %d processes (one mesh position each), f32; bare = the MPI call alone\n",
                n);
  for (bool deterministic : {false, true}) {
    std::unique_ptr<Fabric> fabric = make_mpi_fabric(mesh, deterministic);
    DeviceContext ctx(*fabric, procs->rank());
    for (const Named &named : ops(n)) {
      if (deterministic && named.op != Op::AllReduce && named.op != Op::ReduceScatter) continue;
      const std::string title =
          std::string(named.name) + (deterministic ? " --deterministic (rank order)" : "");
      if (root) print_header(title.c_str(), true);
      for (int64_t bytes = 8; bytes <= max_bytes; bytes *= 2) {
        if (!sizes_fit(named.op, bytes, n)) continue;
        const int64_t in_count = input_count(named.op, bytes / 4, n);
        Tensor x = Tensor::full(DType::F32, {in_count}, 1.0);
        std::vector<float> out(static_cast<size_t>(bytes / 4) + 1);
        const int iterations = iterations_for(bytes);
        double runtime_us = 1e300, bare_us = 1e300;
        for (int r = 0; r < rounds; ++r) {
          runtime_us =
              std::min(runtime_us, time_mpi(*procs, iterations, [&] { call(ctx, named.op, x); }));
          bare_us =
              std::min(bare_us, time_mpi(*procs, iterations, [&] {
                         bare(named.op, x.data<float>(), out.data(), static_cast<int>(in_count), n);
                       }));
        }
        const double algbw = static_cast<double>(bytes) / (runtime_us * 1e-6) / 1e9;
        const double bare_algbw = static_cast<double>(bytes) / (bare_us * 1e-6) / 1e9;
        const auto threads = threads_us.find({static_cast<int>(named.op), bytes});
        const double thr_us = threads == threads_us.end() ? 0.0 : threads->second;
        const double thr_busbw =
            thr_us > 0 ? static_cast<double>(bytes) / (thr_us * 1e-6) / 1e9 * named.factor : 0.0;
        if (root)
          std::printf(" %12lld %12lld %12.1f %10.3f %10.3f %12.1f %10.3f %8.1f%% %12.1f %10.3f\n",
                      static_cast<long long>(bytes), static_cast<long long>(bytes / 4), runtime_us,
                      algbw, algbw * named.factor, bare_us, bare_algbw * named.factor,
                      (runtime_us / bare_us - 1.0) * 100.0, thr_us, thr_busbw);
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
#endif

}  // namespace

int main(int argc, char **argv) {
  int64_t devices = 8;
  int64_t max_bytes = 64LL << 20;
  int rounds = 3;
  bool mpi = false;
  int64_t combined = 0;
  bool strided = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--devices") && i + 1 < argc) {
      devices = std::atoll(argv[++i]);
    } else if (!std::strcmp(argv[i], "--max-bytes") && i + 1 < argc) {
      max_bytes = std::atoll(argv[++i]);
    } else if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--mpi")) {
      mpi = true;
    } else if (!std::strcmp(argv[i], "--strided")) {
      strided = true;
    } else if (!std::strcmp(argv[i], "--combined") && i + 1 < argc) {
      combined = std::atoll(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: %s [--devices N] [--max-bytes BYTES] [--combined K]\n"
                   "       %s [--devices N] [--rounds R] --strided\n"
                   "       mpirun -np N %s --mpi [--max-bytes BYTES] [--rounds R]\n",
                   argv[0], argv[0], argv[0]);
      return 2;
    }
  }
  if (devices < 1 || max_bytes < 8 || rounds < 1) {
    std::fprintf(stderr, "need --devices >= 1, --max-bytes >= 8 and --rounds >= 1\n");
    return 2;
  }
  if (combined < 0 || (combined > 0 && mpi)) {
    std::fprintf(stderr, "--combined K needs K >= 1 and the threads mode\n");
    return 2;
  }
  if (strided) return strided_main(devices, rounds);
  if (combined > 0) return combined_main(devices, max_bytes, combined);
  if (!mpi) return threads_main(devices, max_bytes);
#ifdef SPMDC_BENCH_MPI
  return mpi_main(max_bytes, rounds);
#else
  std::fprintf(stderr, "--mpi: this benchmark was built without MPI\n");
  return 2;
#endif
}
