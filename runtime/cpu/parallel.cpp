// runtime/cpu/parallel.cpp — the worker pool behind spmdrt/parallel.h.
//
// 1. One Pool per process, made at the first parallel_for that splits and never
//    destroyed (its workers outlive static destructors: they are detached).
// 2. A split call is a Job on the caller's stack: the caller queues it, wakes the
//    workers and claims chunks itself (an atomic counter hands out chunk indices);
//    a worker takes the oldest queued job that still has chunks and claims from it.
// 3. When no chunk is left to claim, the caller unqueues its job and waits until no
//    worker is inside it (Job::active), so the job never outlives a user.
// 4. A throwing chunk records its exception (the lowest chunk index wins) and marks
//    the job failed: chunks not yet claimed are skipped; the caller rethrows.
// Chunk boundaries are fixed by n and grain; which thread runs a chunk is not.
#include "spmdrt/parallel.h"

#include <algorithm>
#if defined(__x86_64__) || defined(_M_X64)
#include <xmmintrin.h>
#endif
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <exception>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "internal.h"

namespace spmd::rt {

namespace {

/// Inside a chunk (a worker's or a caller's): parallel_for runs nested calls inline.
thread_local bool t_in_chunk = false;

/// Device threads alive (DeviceThreadScope).
std::atomic<int> g_alive_devices{0};

struct Job {
  Job(int64_t n_, int64_t grain_, detail::ChunkFn fn_, void *context_)
      : n(n_), grain(grain_), chunks((n_ + grain_ - 1) / grain_), fn(fn_), context(context_) {}

  int64_t n, grain, chunks;
  detail::ChunkFn fn;
  void *context;
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  int active = 0;  // workers inside run_claims (Pool::mutex_)
  std::mutex error_mutex;
  int64_t error_chunk = std::numeric_limits<int64_t>::max();
  std::exception_ptr error;

  /// Claims and runs chunks until none is left (or one has thrown).
  void run_claims() {
    const bool outer = t_in_chunk;
    t_in_chunk = true;
    while (!failed.load(std::memory_order_relaxed)) {
      const int64_t k = next.fetch_add(1, std::memory_order_relaxed);
      if (k >= chunks) break;
      const int64_t lo = k * grain;
      try {
        fn(context, lo, std::min(n, lo + grain));
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (k < error_chunk) {
          error_chunk = k;
          error = std::current_exception();
        }
        failed.store(true, std::memory_order_relaxed);
      }
    }
    t_in_chunk = outer;
  }
};

class Pool {
 public:
  /// Starts `workers` threads (the pool's size is fixed until resize).
  explicit Pool(int workers) { start(workers); }

  int workers() const { return workers_.load(std::memory_order_relaxed); }

  /// Stops the workers (each finishes the job it is in) and starts `workers` new ones.
  void resize(int workers) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    work_cv_.notify_all();
    for (std::thread &t : threads_) t.join();
    threads_.clear();
    stopping_ = false;
    start(workers);
  }

  void run(Job &job) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      jobs_.push_back(&job);
    }
    if (job.chunks - 1 >= workers())
      work_cv_.notify_all();
    else
      for (int64_t k = 1; k < job.chunks; ++k) work_cv_.notify_one();
    job.run_claims();
    std::unique_lock<std::mutex> lock(mutex_);
    unqueue(&job);
    done_cv_.wait(lock, [&] { return job.active == 0; });
  }

 private:
  void start(int workers) {
    workers_.store(workers, std::memory_order_relaxed);
    threads_.reserve(static_cast<size_t>(workers));
    for (int w = 0; w < workers; ++w) threads_.emplace_back([this] { work(); });
  }

  void unqueue(Job *job) {
    auto it = std::find(jobs_.begin(), jobs_.end(), job);
    if (it != jobs_.end()) jobs_.erase(it);
  }

  void work() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      work_cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      Job *job = jobs_.front();
      ++job->active;
      lock.unlock();
      apply_float_mode();  // as the threads that queued the job run
      job->run_claims();
      lock.lock();
      unqueue(job);  // nothing left to claim in it
      if (--job->active == 0) done_cv_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<Job *> jobs_;  // jobs that may have chunks left to claim
  std::vector<std::thread> threads_;
  std::atomic<int> workers_{0};
  bool stopping_ = false;
};

std::mutex g_pool_mutex;        // choosing g_threads, making and resizing g_pool
std::atomic<int> g_threads{0};  // 0: not chosen yet
bool g_chosen = false;          // by set_threads
Pool *g_pool = nullptr;         // never destroyed

/// threads(), with g_pool_mutex held.
int chosen_threads() {
  if (g_threads.load() == 0) g_threads.store(default_threads());
  return g_threads.load();
}

Pool &pool() {
  static Pool *const p = [] {
    std::lock_guard<std::mutex> lock(g_pool_mutex);
    g_pool = new Pool(chosen_threads() - 1);
    return g_pool;
  }();
  return *p;
}

}  // namespace

namespace {
std::atomic<bool> g_flush_denormals{false};
}  // namespace

void set_flush_denormals(bool on) {
  g_flush_denormals.store(on);
  apply_float_mode();
}

bool flush_denormals() { return g_flush_denormals.load(std::memory_order_relaxed); }

void apply_float_mode() {
#if defined(__x86_64__) || defined(_M_X64)
  constexpr unsigned kFtzDaz = 0x8040u;  // MXCSR: flush to zero (bit 15), denormals are zero (6)
  const unsigned mode = _mm_getcsr();
  const unsigned want = flush_denormals() ? (mode | kFtzDaz) : (mode & ~kFtzDaz);
  if (want != mode) _mm_setcsr(want);
#endif
}

int default_threads() {
  if (const char *env = std::getenv("SPMDRT_THREADS")) {
    char *end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && v >= 1 && v <= 4096) return static_cast<int>(v);
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

int threads() {
  if (const int n = g_threads.load(std::memory_order_relaxed)) return n;
  std::lock_guard<std::mutex> lock(g_pool_mutex);
  return chosen_threads();
}

bool set_threads(int n) {
  if (n < 1) return false;
  std::lock_guard<std::mutex> lock(g_pool_mutex);
  g_threads.store(n);
  g_chosen = true;
  if (g_pool && g_pool->workers() != n - 1) g_pool->resize(n - 1);
  return true;
}

void detail::share_cores_among(int64_t local_processes) {
  if (std::getenv("SPMDRT_THREADS")) return;
  {
    std::lock_guard<std::mutex> lock(g_pool_mutex);
    if (g_chosen) return;
  }
  const int64_t share = default_threads() / std::max<int64_t>(1, local_processes);
  set_threads(static_cast<int>(std::max<int64_t>(1, share)));
  std::lock_guard<std::mutex> lock(g_pool_mutex);
  g_chosen = false;  // still the default: a later call may share again
}

DeviceThreadScope::DeviceThreadScope() { g_alive_devices.fetch_add(1); }
DeviceThreadScope::~DeviceThreadScope() { g_alive_devices.fetch_sub(1); }

/// Whether a parallel_for called now would hand chunks to the pool.
bool would_split() {
  const int total = threads();
  return !t_in_chunk && total > 1 && g_alive_devices.load(std::memory_order_relaxed) < total;
}

int64_t elementwise_grain(int64_t n, int64_t item_size) {
  if (!would_split()) return std::max<int64_t>(1, n);  // one chunk: one call, no hand-offs
  item_size = std::max<int64_t>(1, item_size);
  const int64_t min_items = (kMinChunkElements + item_size - 1) / item_size;
  const int64_t per_thread = 4 * static_cast<int64_t>(threads());
  return std::max({int64_t{1}, min_items, (n + per_thread - 1) / per_thread});
}

void detail::parallel_chunks(int64_t n, int64_t grain, ChunkFn fn, void *context) {
  const int64_t chunks = (n + grain - 1) / grain;
  if (!would_split()) {
    for (int64_t k = 0; k < chunks; ++k) fn(context, k * grain, std::min(n, (k + 1) * grain));
    return;
  }
  Job job(n, grain, fn, context);
  pool().run(job);
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace spmd::rt
