// tests/unit/runtime/test_parallel.cpp — the worker pool of spmdrt/parallel.h.
//
// The chunks parallel_for hands out (each exactly once, boundaries fixed by n and
// grain), several threads calling at once with nested calls inside chunks, exceptions
// (the lowest throwing chunk's is rethrown; the pool keeps working), the inline path
// while device threads fill the cores, and kernels whose bits must not depend on the
// thread count: products on each path, sums, fused elementwise loops of the interpreter
// are compared byte for byte at 1, 2 and 5 threads.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "rt_test_util.h"
#include "spmdrt/parallel.h"

using namespace spmd::rt;

namespace {

/// Restores the pool's size when a test ends.
struct ThreadsGuard {
  int saved = threads();
  ~ThreadsGuard() { set_threads(saved); }
};

std::vector<std::pair<int64_t, int64_t>> chunks_of(int64_t n, int64_t grain) {
  std::mutex mutex;
  std::vector<std::pair<int64_t, int64_t>> seen;
  parallel_for(n, grain, [&](int64_t lo, int64_t hi) {
    std::lock_guard<std::mutex> lock(mutex);
    seen.emplace_back(lo, hi);
  });
  std::sort(seen.begin(), seen.end());
  return seen;
}

Tensor random_tensor(Shape shape, uint32_t seed) {
  Tensor t = Tensor::empty(DType::F32, std::move(shape));
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  float *p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(gen);
  return t;
}

bool same_bytes(const Tensor &a, const Tensor &b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.raw(), b.raw(), static_cast<size_t>(a.numel()) * dtype_size(a.dtype())) == 0;
}

}  // namespace

TEST_CASE("parallel_for runs every fixed chunk exactly once", "[runtime][parallel]") {
  ThreadsGuard guard;
  for (int t : {1, 2, 5}) {
    set_threads(t);
    CHECK(threads() == t);
    const auto seen = chunks_of(1000, 64);
    REQUIRE(seen.size() == 16);  // ceil(1000 / 64)
    for (size_t k = 0; k < seen.size(); ++k) {
      CHECK(seen[k].first == static_cast<int64_t>(k) * 64);
      CHECK(seen[k].second == std::min<int64_t>(1000, (static_cast<int64_t>(k) + 1) * 64));
    }
    CHECK(chunks_of(10, 64) == std::vector<std::pair<int64_t, int64_t>>{{0, 10}});
    CHECK(chunks_of(0, 8).empty());
  }
}

TEST_CASE("parallel_for uses the pool's workers", "[runtime][parallel]") {
  ThreadsGuard guard;
  set_threads(4);
  std::mutex mutex;
  std::set<std::thread::id> ids;
  std::atomic<int> inside{0}, most{0};
  parallel_for(64, 1, [&](int64_t, int64_t) {
    const int now = ++inside;
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    --inside;
    std::lock_guard<std::mutex> lock(mutex);
    ids.insert(std::this_thread::get_id());
  });
  // 64 chunks of 2 ms on 3 workers and the caller: more than one thread ran them (the
  // sleeps leave the cores free, so the workers wake even on a loaded machine).
  CHECK(ids.size() > 1);
  CHECK(ids.size() <= 4);
  CHECK(most.load() <= 4);
}

TEST_CASE("several threads call at once, with nested calls inside chunks", "[runtime][parallel]") {
  ThreadsGuard guard;
  set_threads(3);
  constexpr int kCallers = 5;  // more callers than threads: each helps with its own work
  constexpr int64_t kOuter = 40, kInner = 50;
  std::vector<std::vector<int>> counts(kCallers, std::vector<int>(kOuter * kInner, 0));
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      for (int round = 0; round < 20; ++round) {
        parallel_for(kOuter, 3, [&](int64_t lo, int64_t hi) {
          for (int64_t i = lo; i < hi; ++i) {
            // Nested: runs inline on this chunk's thread, in chunk order.
            int64_t next = 0;
            parallel_for(kInner, 7, [&](int64_t l, int64_t h) {
              CHECK(l == next);
              next = h;
              for (int64_t j = l; j < h; ++j) ++counts[c][i * kInner + j];
            });
            CHECK(next == kInner);
          }
        });
      }
    });
  }
  for (std::thread &t : callers) t.join();
  for (int c = 0; c < kCallers; ++c)
    CHECK(std::all_of(counts[c].begin(), counts[c].end(), [](int v) { return v == 20; }));
}

TEST_CASE("a throwing chunk: the lowest one's exception, and the pool goes on",
          "[runtime][parallel]") {
  ThreadsGuard guard;
  for (int t : {1, 2, 5}) {
    set_threads(t);
    for (int round = 0; round < 10; ++round) {
      std::atomic<int> ran{0};
      try {
        parallel_for(100, 1, [&](int64_t lo, int64_t) {
          ++ran;
          if (lo == 31 || lo == 57 || lo == 90) throw std::runtime_error(std::to_string(lo));
        });
        FAIL("no exception");
      } catch (const std::runtime_error &e) {
        // Chunks are claimed in increasing order, so chunk 31 ran whenever a later one did.
        CHECK(std::string(e.what()) == "31");
      }
      CHECK(ran.load() >= 32);
      CHECK(chunks_of(100, 10).size() == 10);  // still works
    }
  }
}

TEST_CASE("while device threads fill the cores, calls run inline in chunk order",
          "[runtime][parallel]") {
  ThreadsGuard guard;
  set_threads(2);
  std::vector<int64_t> order;
  std::vector<std::thread::id> ran_on;
  {
    const DeviceThreadScope a, b;  // two device threads alive: threads() == 2
    parallel_for(10, 2, [&](int64_t lo, int64_t) {
      order.push_back(lo);  // unsynchronised on purpose: all on this thread
      ran_on.push_back(std::this_thread::get_id());
    });
  }
  CHECK(order == std::vector<int64_t>{0, 2, 4, 6, 8});
  for (auto id : ran_on) CHECK(id == std::this_thread::get_id());
}

TEST_CASE("kernels compute the same bits whatever the thread count", "[runtime][parallel]") {
  ThreadsGuard guard;
  const Tensor a = random_tensor({600, 200}, 1), b = random_tensor({200, 260}, 2);
  const Tensor tall = random_tensor({4096, 1024}, 8), u = random_tensor({1024}, 9);
  const Tensor narrow_b = random_tensor({200, 12}, 3), v = random_tensor({200}, 4);
  const Tensor big = random_tensor({1 << 19}, 5), wide = random_tensor({64, 3000}, 6);
  const Tensor batched = random_tensor({6, 40, 200}, 7);
  std::vector<std::vector<Tensor>> results;
  for (int t : {1, 2, 5}) {
    set_threads(t);
    std::vector<Tensor> r;
    r.push_back(matmul(a, b));  // BLAS, 3 tiles of rows
    const Tensor bb[] = {b, b}, xx[] = {batched, batched};
    r.push_back(einsum("ki,kj->ij", bb));     // BLAS, a transposed in place
    r.push_back(matmul(a, narrow_b));         // narrow
    r.push_back(matmul(a, v));                // GEMV
    r.push_back(matmul(tall, u));             // GEMV, 2 tiles
    r.push_back(matmul(batched, b));          // one product of 240 rows
    r.push_back(einsum("bik,bjk->bij", xx));  // over the batch
    const int64_t all[] = {0}, rows[] = {1}, cols[] = {0};
    r.push_back(reduce(ReduceOp::Sum, big, all));    // one long row, by lanes
    r.push_back(reduce(ReduceOp::Sum, wide, rows));  // row sums
    r.push_back(reduce(ReduceOp::Sum, wide, cols));  // column sums
    r.push_back(binary(BinaryOp::Mul, big, big));    // elementwise
    results.push_back(std::move(r));
  }
  for (size_t k = 0; k < results[0].size(); ++k) {
    INFO("result " << k);
    CHECK(same_bytes(results[0][k], results[1][k]));
    CHECK(same_bytes(results[0][k], results[2][k]));
  }
  // And the values are right (an independent f64 check of a few elements).
  const Tensor &product = results[0][0];
  for (int64_t i : {0, 300, 599}) {
    for (int64_t j : {0, 259}) {
      double s = 0;
      for (int64_t p = 0; p < 200; ++p) s += a.get(i * 200 + p) * b.get(p * 260 + j);
      CHECK(product.get(i * 260 + j) == Approx(s).margin(1e-4));
    }
  }
  double total = 0;
  for (int64_t i = 0; i < big.numel(); ++i) total += big.get(i);
  CHECK(results[0][7].get(0) == Approx(total).epsilon(1e-6));
}
