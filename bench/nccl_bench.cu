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
// With --combined K it times instead how K tensors of one size (per tensor,
// sized as above) go through AllReduce, AllGather and ReduceScatter: as K
// separate collectives (K groups), as one group of K calls per rank (what the
// spmdc CUDA runtime does for a combined collective such as `psum((a, b))`),
// and as one call on a packed buffer of K tensors including the device copies
// that pack and unpack it. The columns say which of the two combined forms
// pays off at which size.
//
// Usage: nccl_bench [--max-bytes N] [--iters N] [--warmup N] [--gpus N] [--combined K]
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

/// Enqueues rank r's part of one collective of `bytes` (sized as the table
/// says) on buffers starting `offset` floats into r's send and recv buffers.
void enqueue(Op op, Rank &r, int n, size_t bytes, size_t offset = 0) {
  size_t count = bytes / sizeof(float);
  float *send = r.send + offset, *recv = r.recv + offset;
  switch (op) {
    case Op::AllReduce:
      CHECK_NCCL(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, r.comm, r.stream));
      break;
    case Op::AllGather:  // `bytes` is the gathered output
      CHECK_NCCL(ncclAllGather(send, recv, count / n, ncclFloat, r.comm, r.stream));
      break;
    case Op::ReduceScatter:  // `bytes` is the input
      CHECK_NCCL(ncclReduceScatter(send, recv, count / n, ncclFloat, ncclSum, r.comm, r.stream));
      break;
    case Op::AlltoAll:  // `bytes` is the input (= output); count per peer
      CHECK_NCCL(ncclAlltoAll(send, recv, count / n, ncclFloat, r.comm, r.stream));
      break;
  }
}

/// Launches one collective on every rank (grouped, as a single-process
/// multi-GPU program must).
void launch(Op op, std::vector<Rank> &ranks, size_t bytes) {
  int n = static_cast<int>(ranks.size());
  CHECK_NCCL(ncclGroupStart());
  for (Rank &r : ranks) enqueue(op, r, n, bytes);
  CHECK_NCCL(ncclGroupEnd());
}

/// How a --combined round moves K tensors.
enum class Combine { Separate, Grouped, Packed };

/// One round of K tensors of `bytes` each. Tensor k lives `k * bytes` into
/// the buffers; Packed copies them into one region at the buffers' upper half
/// (`stage`, in floats), runs one collective of K * bytes there and copies the
/// results back.
void launch_combined(Op op, Combine how, std::vector<Rank> &ranks, size_t bytes, int k,
                     size_t stage) {
  int n = static_cast<int>(ranks.size());
  size_t count = bytes / sizeof(float);
  // The per-rank input and output of one tensor, in floats.
  size_t in = op == Op::AllGather ? count / n : count;
  size_t out = op == Op::ReduceScatter ? count / n : count;
  switch (how) {
    case Combine::Separate:
      for (int t = 0; t < k; ++t) {
        CHECK_NCCL(ncclGroupStart());
        for (Rank &r : ranks) enqueue(op, r, n, bytes, static_cast<size_t>(t) * count);
        CHECK_NCCL(ncclGroupEnd());
      }
      break;
    case Combine::Grouped:
      CHECK_NCCL(ncclGroupStart());
      for (Rank &r : ranks)
        for (int t = 0; t < k; ++t) enqueue(op, r, n, bytes, static_cast<size_t>(t) * count);
      CHECK_NCCL(ncclGroupEnd());
      break;
    case Combine::Packed: {
      // Packing is exact for AllReduce; for AllGather/ReduceScatter the packed
      // layout is rank-major, so unpacking would be strided copies: the
      // contiguous copies timed here are a lower bound for those.
      for (Rank &r : ranks) {
        CHECK_CUDA(cudaSetDevice(r.device));
        for (int t = 0; t < k; ++t)
          CHECK_CUDA(cudaMemcpyAsync(r.send + stage + t * in, r.send + t * count,
                                     in * sizeof(float), cudaMemcpyDeviceToDevice, r.stream));
      }
      CHECK_NCCL(ncclGroupStart());
      for (Rank &r : ranks) enqueue(op, r, n, bytes * k, stage);
      CHECK_NCCL(ncclGroupEnd());
      for (Rank &r : ranks) {
        CHECK_CUDA(cudaSetDevice(r.device));
        for (int t = 0; t < k; ++t)
          CHECK_CUDA(cudaMemcpyAsync(r.recv + t * count, r.recv + stage + t * out,
                                     out * sizeof(float), cudaMemcpyDeviceToDevice, r.stream));
      }
      break;
    }
  }
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
  int iters = 20, warmup = 5, gpus = 0, combined = 0;
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
    else if (a == "--combined")
      combined = std::atoi(next());
    else {
      std::fprintf(stderr,
                   "usage: nccl_bench [--max-bytes N] [--iters N] [--warmup N] [--gpus N] "
                   "[--combined K]\n");
      return 2;
    }
  }
  if (iters < 1 || warmup < 0 || gpus < 0 || combined < 0 || max_bytes < 8) {
    std::fprintf(stderr, "nccl_bench: --iters must be >= 1, --max-bytes >= 8, the rest >= 0\n");
    return 2;
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
  // Microseconds per call of `round`, after the warm-up.
  auto time_us = [&](auto &&round) {
    for (int w = 0; w < warmup; ++w) round();
    sync(ranks);
    auto t0 = std::chrono::steady_clock::now();
    for (int it = 0; it < iters; ++it) round();
    sync(ranks);
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
               .count() /
           iters;
  };
  if (combined > 0) {
    // Tensors use the lower half of each buffer, the packed copy the upper half.
    const size_t half = max_bytes / 2;
    const size_t stage = half / sizeof(float);
    std::printf("# %d tensors a round; time per round (us); speed-up = separate / combined\n",
                combined);
    std::printf("%-16s %12s %12s %12s %12s %9s %9s\n", "collective", "size (B)", "separate",
                "grouped", "packed", "grouped", "packed");
    for (Op op : {Op::AllReduce, Op::AllGather, Op::ReduceScatter}) {
      for (size_t bytes = 8; bytes * static_cast<size_t>(combined) <= half; bytes *= 2) {
        if (bytes % (sizeof(float) * static_cast<size_t>(op == Op::AllReduce ? 1 : n)) != 0)
          continue;
        double t[3];
        for (Combine how : {Combine::Separate, Combine::Grouped, Combine::Packed})
          t[static_cast<int>(how)] =
              time_us([&] { launch_combined(op, how, ranks, bytes, combined, stage); });
        std::printf("%-16s %12zu %12.2f %12.2f %12.2f %8.2fx %8.2fx\n", name(op), bytes, t[0], t[1],
                    t[2], t[0] / t[1], t[0] / t[2]);
      }
    }
  }
  if (combined == 0)
    std::printf("%-16s %12s %12s %12s %12s %12s\n", "collective", "size (B)", "count", "time (us)",
                "algbw (GB/s)", "busbw (GB/s)");
  for (Op op : {Op::AllReduce, Op::AllGather, Op::ReduceScatter, Op::AlltoAll}) {
    if (combined > 0) break;
    for (size_t bytes = 8; bytes <= max_bytes; bytes *= 2) {
      // Every rank's share must be a whole number of floats.
      if (bytes % (sizeof(float) * static_cast<size_t>(op == Op::AllReduce ? 1 : n)) != 0) continue;
      double us = time_us([&] { launch(op, ranks, bytes); });
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
