// bench/nccl_bench.cu — nccl-tests style collective benchmark on the GPUs of one node.
//
// One process drives every visible GPU (ncclCommInitAll), like the spmdc CUDA
// runtime. For AllReduce, AllGather, ReduceScatter and AlltoAll and message
// sizes from 8 B to --max-bytes (doubling), it times --iters back-to-back
// launches after --warmup and prints, as nccl-tests does: size (the per-rank
// buffer: AllReduce in = out; AllGather the output; ReduceScatter the input;
// AlltoAll in = out), element count, time per call (us), algbw = size / time
// and busbw = algbw * factor with AllReduce 2(n-1)/n and the others (n-1)/n.
// Built only when CUDA and NCCL are found (target nccl_bench_cuda, part of `bench`).
//
// Usage: nccl_bench [--max-bytes N] [--iters N] [--warmup N] [--gpus N]
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CHECK_CUDA(x)                                                                    \
  do {                                                                                   \
    cudaError_t err_ = (x);                                                              \
    if (err_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "nccl_bench: %s failed: %s\n", #x, cudaGetErrorString(err_)); \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)
#define CHECK_NCCL(x)                                                                       \
  do {                                                                                      \
    ncclResult_t status_ = (x);                                                             \
    if (status_ != ncclSuccess) {                                                           \
      std::fprintf(stderr, "nccl_bench: %s failed: %s\n", #x, ncclGetErrorString(status_)); \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

namespace {

enum class Op { AllReduce, AllGather, ReduceScatter, AlltoAll };

const char *name(Op op) {
  switch (op) {
    case Op::AllReduce:
      return "all_reduce";
    case Op::AllGather:
      return "all_gather";
    case Op::ReduceScatter:
      return "reduce_scatter";
    case Op::AlltoAll:
      return "all_to_all";
  }
  return "?";
}

double bus_factor(Op op, int n) {
  return op == Op::AllReduce ? 2.0 * (n - 1) / n : static_cast<double>(n - 1) / n;
}

struct Rank {
  int device;
  ncclComm_t comm;
  cudaStream_t stream;
  float *send = nullptr;
  float *recv = nullptr;
};

/// Launches one collective on every rank (grouped, as a single-process
/// multi-GPU program must).
void launch(Op op, std::vector<Rank> &ranks, size_t bytes) {
  int n = static_cast<int>(ranks.size());
  size_t count = bytes / sizeof(float);
  CHECK_NCCL(ncclGroupStart());
  for (Rank &r : ranks) {
    switch (op) {
      case Op::AllReduce:
        CHECK_NCCL(ncclAllReduce(r.send, r.recv, count, ncclFloat, ncclSum, r.comm, r.stream));
        break;
      case Op::AllGather:  // `bytes` is the gathered output
        CHECK_NCCL(ncclAllGather(r.send, r.recv, count / n, ncclFloat, r.comm, r.stream));
        break;
      case Op::ReduceScatter:  // `bytes` is the input
        CHECK_NCCL(
            ncclReduceScatter(r.send, r.recv, count / n, ncclFloat, ncclSum, r.comm, r.stream));
        break;
      case Op::AlltoAll:  // `bytes` is the input (= output); count per peer
        CHECK_NCCL(ncclAlltoAll(r.send, r.recv, count / n, ncclFloat, r.comm, r.stream));
        break;
    }
  }
  CHECK_NCCL(ncclGroupEnd());
}

void sync(std::vector<Rank> &ranks) {
  for (Rank &r : ranks) {
    CHECK_CUDA(cudaSetDevice(r.device));
    CHECK_CUDA(cudaStreamSynchronize(r.stream));
  }
}

}  // namespace

int main(int argc, char **argv) {
  size_t max_bytes = size_t{256} << 20;
  int iters = 20, warmup = 5, gpus = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char * {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "nccl_bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--max-bytes")
      max_bytes = std::strtoull(next(), nullptr, 10);
    else if (a == "--iters")
      iters = std::atoi(next());
    else if (a == "--warmup")
      warmup = std::atoi(next());
    else if (a == "--gpus")
      gpus = std::atoi(next());
    else {
      std::fprintf(stderr,
                   "usage: nccl_bench [--max-bytes N] [--iters N] [--warmup N] [--gpus N]\n");
      return 2;
    }
  }
  int visible = 0;
  if (cudaGetDeviceCount(&visible) != cudaSuccess || visible == 0) {
    std::fprintf(stderr, "nccl_bench: no GPU is visible\n");
    return 1;
  }
  int n = gpus > 0 ? gpus : visible;
  if (n > visible) {
    std::fprintf(stderr, "nccl_bench: %d GPUs requested but %d visible\n", n, visible);
    return 1;
  }
  std::vector<int> devices(n);
  for (int d = 0; d < n; ++d) devices[d] = d;
  std::vector<ncclComm_t> comms(n);
  CHECK_NCCL(ncclCommInitAll(comms.data(), n, devices.data()));
  std::vector<Rank> ranks(n);
  for (int d = 0; d < n; ++d) {
    ranks[d].device = d;
    ranks[d].comm = comms[d];
    CHECK_CUDA(cudaSetDevice(d));
    CHECK_CUDA(cudaStreamCreate(&ranks[d].stream));
    CHECK_CUDA(cudaMalloc(&ranks[d].send, max_bytes));
    CHECK_CUDA(cudaMalloc(&ranks[d].recv, max_bytes));
    CHECK_CUDA(cudaMemset(ranks[d].send, 0, max_bytes));
  }
  std::printf("# nccl_bench: %d GPUs, NCCL %d.%d, %d iterations after %d warm-up\n", n, NCCL_MAJOR,
              NCCL_MINOR, iters, warmup);
  std::printf("%-16s %12s %12s %12s %12s %12s\n", "collective", "size (B)", "count", "time (us)",
              "algbw (GB/s)", "busbw (GB/s)");
  for (Op op : {Op::AllReduce, Op::AllGather, Op::ReduceScatter, Op::AlltoAll}) {
    for (size_t bytes = 8; bytes <= max_bytes; bytes *= 2) {
      // Every rank's share must be a whole number of floats.
      if (bytes % (sizeof(float) * static_cast<size_t>(op == Op::AllReduce ? 1 : n)) != 0) continue;
      for (int w = 0; w < warmup; ++w) launch(op, ranks, bytes);
      sync(ranks);
      auto t0 = std::chrono::steady_clock::now();
      for (int it = 0; it < iters; ++it) launch(op, ranks, bytes);
      sync(ranks);
      double us =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
          iters;
      double algbw = static_cast<double>(bytes) / (us * 1e3);  // bytes / ns = GB/s
      std::printf("%-16s %12zu %12zu %12.2f %12.3f %12.3f\n", name(op), bytes,
                  bytes / sizeof(float), us, algbw, algbw * bus_factor(op, n));
    }
  }
  for (Rank &r : ranks) {
    CHECK_CUDA(cudaSetDevice(r.device));
    CHECK_CUDA(cudaFree(r.send));
    CHECK_CUDA(cudaFree(r.recv));
    CHECK_CUDA(cudaStreamDestroy(r.stream));
    ncclCommDestroy(r.comm);
  }
  return 0;
}
