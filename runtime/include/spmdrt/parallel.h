// spmdrt/parallel.h — the runtime's one pool of worker threads, shared by every simulated device.
//
// parallel_for(n, grain, fn) calls fn(lo, hi) once for each chunk [k * grain,
// min(n, (k + 1) * grain)) of [0, n), k = 0, 1, ...: the chunks depend on n and grain
// only, never on how many threads there are or which runs what. The calling thread
// claims chunks itself while the pool's workers claim the rest, and returns when
// every chunk has run, so any number of device threads may call at once (each helps
// with its own work: no deadlock). Kernels keep their results independent of the
// thread count by writing each output element from exactly one chunk, or by giving
// each chunk its own partial result that the caller combines in chunk order.
//
// The pool has threads() - 1 workers (the callers are the rest), sized from
// set_threads (`--threads N` of executables and `spmdc run`), else the environment
// variable SPMDRT_THREADS, else the machine's hardware threads. A call runs its
// chunks in order on the calling thread, without the pool, when there is one chunk,
// when the pool has no workers, from inside another chunk (nested calls), or when the
// device threads alive already number threads() or more: they fill the cores, and
// splitting their ops would only add hand-offs (docs/runtime.md, "Threads").
// OpenBLAS runs single-threaded (its threads would compete with the pool's).
#pragma once

#include <cstdint>
#include <type_traits>

namespace spmd::rt {

namespace detail {
/// A chunk function without its type: fn(context, lo, hi).
using ChunkFn = void (*)(void *context, int64_t lo, int64_t hi);
/// parallel_for for n > grain (parallel.cpp).
void parallel_chunks(int64_t n, int64_t grain, ChunkFn fn, void *context);
}  // namespace detail

/// Calls fn(lo, hi) for every chunk [k * grain, min(n, (k + 1) * grain)) of [0, n), on
/// the pool and the calling thread; returns when all have run. grain >= 1. When a
/// chunk throws, chunks not yet started are skipped and the exception of the chunk
/// with the lowest index among those that threw is rethrown here.
template <typename Fn>
void parallel_for(int64_t n, int64_t grain, Fn &&fn) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  if (n <= grain) {
    fn(int64_t{0}, n);
    return;
  }
  using F = std::remove_reference_t<Fn>;
  detail::parallel_chunks(
      n, grain, [](void *context, int64_t lo, int64_t hi) { (*static_cast<F *>(context))(lo, hi); },
      const_cast<void *>(static_cast<const void *>(&fn)));
}

/// The threads ops may use: the pool's workers plus one calling thread.
int threads();

/// Puts OpenBLAS on one thread (the pool splits products instead) and stops the server
/// threads it started when it loaded, which otherwise poll with sched_yield for a tenth
/// of a second or more (kernels_gemm.cpp). The first product does it too; call it at
/// the start of a process to stop them earlier: executables (program_main), spmdc and
/// spmdc-profile do.
void single_threaded_blas();

/// Sets threads(); false (nothing changed) when n < 1. The pool starts at the first
/// parallel_for that splits; a running pool is resized (its workers finish the chunks
/// they hold first).
bool set_threads(int n);

/// threads() when nothing set it: SPMDRT_THREADS when it holds an integer >= 1, else the
/// hardware threads (at least 1).
int default_threads();

/// Subnormal floats flushed to zero: on x86-64, the FTZ and DAZ bits of the
/// SSE control register (subnormal results become 0, subnormal operands read
/// as 0), as XLA's CPU runtime does. Off by default (IEEE: subnormals kept).
/// Every thread the runtime runs ops on follows it — the caller of this
/// function, each device thread as it starts, each pool worker as it takes a
/// job — so results still do not depend on the thread count; set it before
/// running. Elsewhere than x86-64 it does nothing. Subnormals are slow on many
/// CPUs (a microcode assist per operation on Intel's): a transformer block's
/// gradient whose softmax underflows ran 2.6x faster with them flushed
/// (docs/runtime.md, "Subnormals").
void set_flush_denormals(bool on);
bool flush_denormals();
/// Puts this thread's floating-point mode in line with flush_denormals().
void apply_float_mode();

/// Counts a device thread alive for as long as it exists (run_on_mesh holds one per
/// device thread): parallel_for splits only while fewer than threads() are alive.
class DeviceThreadScope {
 public:
  DeviceThreadScope();
  ~DeviceThreadScope();
  DeviceThreadScope(const DeviceThreadScope &) = delete;
  DeviceThreadScope &operator=(const DeviceThreadScope &) = delete;
};

/// A grain for a loop over n items of `item_size` elements each whose chunks may be any
/// size (each element written from one chunk, so the bits do not depend on it): about
/// four chunks per thread, each of at least kMinChunkElements elements; n (one chunk,
/// one call) when a parallel_for called now would not split.
int64_t elementwise_grain(int64_t n, int64_t item_size = 1);

/// The fewest elements worth a chunk of an elementwise loop (a few microseconds).
inline constexpr int64_t kMinChunkElements = 16384;

}  // namespace spmd::rt
