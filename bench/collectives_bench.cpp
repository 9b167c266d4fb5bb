// bench/collectives_bench.cpp — nccl-tests style figures for the simulated CPU mesh.
//
// For all_reduce, all_gather, reduce_scatter and all_to_all over a 1-D mesh of
// --devices simulated devices (default 8), message sizes double from 8 B to
// --max-bytes (default 64 MB). Size is the per-device buffer as nccl-tests counts
// it (all_gather: the output; reduce_scatter: the input). Prints size, element
// count (f32), time per call (us), algbw = size / time and busbw = algbw times the
// nccl-tests factor: 2(n-1)/n for all_reduce, (n-1)/n for the others.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "spmdrt/collectives.h"

using namespace spmd::rt;

namespace {

enum class Op { AllReduce, AllGather, ReduceScatter, AllToAll };

/// Average microseconds per call of `op` on `bytes` per-device bytes.
double measure(const Mesh &mesh, Op op, int64_t bytes, int iterations) {
  const int64_t n = mesh.num_devices();
  const int64_t count = bytes / 4;
  double seconds = 0;
  run_on_mesh(mesh, [&](DeviceContext &ctx) {
    // Input size per device: all_gather sends count/n, the others count.
    const int64_t input = op == Op::AllGather ? count / n : count;
    Tensor x = Tensor::full(DType::F32, {input}, 1.0);
    auto once = [&] {
      switch (op) {
        case Op::AllReduce:
          return ctx.all_reduce(x, {0}, ReduceOp::Sum);
        case Op::AllGather:
          return ctx.all_gather(x, {0}, 0, true);
        case Op::ReduceScatter:
          return ctx.reduce_scatter(x, {0}, 0, true);
        case Op::AllToAll:
          return ctx.all_to_all(x, {0}, 0, 0);
      }
      return x;
    };
    once();  // warm-up
    ctx.barrier();
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) once();
    ctx.barrier();
    auto stop = std::chrono::steady_clock::now();
    if (ctx.device() == 0) seconds = std::chrono::duration<double>(stop - start).count();
  });
  return seconds / iterations * 1e6;
}

}  // namespace

int main(int argc, char **argv) {
  int64_t devices = 8;
  int64_t max_bytes = 64LL << 20;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--devices") && i + 1 < argc) {
      devices = std::atoll(argv[++i]);
    } else if (!std::strcmp(argv[i], "--max-bytes") && i + 1 < argc) {
      max_bytes = std::atoll(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--devices N] [--max-bytes BYTES]\n", argv[0]);
      return 2;
    }
  }
  if (devices < 1 || max_bytes < 8) {
    std::fprintf(stderr, "need --devices >= 1 and --max-bytes >= 8\n");
    return 2;
  }
  const Mesh mesh({{"d", devices}});
  const double n = static_cast<double>(devices);
  struct Named {
    Op op;
    const char *name;
    double factor;
  };
  const Named ops[] = {{Op::AllReduce, "all_reduce", 2 * (n - 1) / n},
                       {Op::AllGather, "all_gather", (n - 1) / n},
                       {Op::ReduceScatter, "reduce_scatter", (n - 1) / n},
                       {Op::AllToAll, "all_to_all", (n - 1) / n}};
  std::printf("# simulated CPU mesh: %lld devices (threads), f32\n",
              static_cast<long long>(devices));
  for (const Named &named : ops) {
    std::printf("\n# %s\n#%12s %12s %12s %10s %10s\n", named.name, "size(B)", "count", "time(us)",
                "algbw(GB/s)", "busbw(GB/s)");
    for (int64_t bytes = 8; bytes <= max_bytes; bytes *= 2) {
      // Sizes must split evenly into devices f32 blocks for the sharded collectives.
      if ((bytes / 4) % devices != 0 && named.op != Op::AllReduce) continue;
      // Fewer iterations for large messages keeps the run short.
      const int iterations = bytes <= (1 << 16) ? 50 : bytes <= (1 << 22) ? 10 : 2;
      const double us = measure(mesh, named.op, bytes, iterations);
      const double algbw = static_cast<double>(bytes) / (us * 1e-6) / 1e9;
      std::printf(" %12lld %12lld %12.1f %10.3f %10.3f\n", static_cast<long long>(bytes),
                  static_cast<long long>(bytes / 4), us, algbw, algbw * named.factor);
      std::fflush(stdout);
    }
  }
  return 0;
}
