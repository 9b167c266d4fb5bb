// test_large_block_heap.cpp — LargeBlockHeap hands out disjoint blocks, finds
// freed ones again (best fit, neighbours joined), and says no when full.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "support/large_block_heap.h"

namespace spmd {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

uintptr_t address(const void *p) { return reinterpret_cast<uintptr_t>(p); }

TEST_CASE("LargeBlockHeap reuses freed blocks", "[support]") {
  LargeBlockHeap heap;
  REQUIRE_FALSE(heap.on());
  REQUIRE_FALSE(heap.owns(&heap));
  REQUIRE(heap.reserve(64 * kMiB));
  REQUIRE(heap.on());

  void *a = heap.allocate(4 * kMiB);
  void *b = heap.allocate(2 * kMiB);
  void *c = heap.allocate(8 * kMiB);
  REQUIRE(a);
  REQUIRE(b);
  REQUIRE(c);
  REQUIRE(heap.owns(a));
  REQUIRE(heap.owns(static_cast<char *>(c) + 8 * kMiB - 1));
  REQUIRE(address(a) % 64 == 0);
  REQUIRE(address(a) < address(b));
  REQUIRE(address(b) < address(c));
  const size_t high = heap.high_water();
  REQUIRE(high >= 14 * kMiB);

  SECTION("a freed block is found by a request it fits, from its front") {
    heap.release(a);
    void *d = heap.allocate(3 * kMiB);
    REQUIRE(d == a);
    REQUIRE(heap.high_water() == high);
  }
  SECTION("best fit: the smallest free block that fits") {
    void *guard = heap.allocate(kMiB);  // keeps c from joining the untouched rest
    REQUIRE(guard);
    heap.release(c);  // 8 MiB
    heap.release(a);  // 4 MiB
    REQUIRE(heap.allocate(3 * kMiB) == a);
    REQUIRE(heap.allocate(6 * kMiB) == c);
  }
  SECTION("neighbours join: three freed blocks hold one block of their sum") {
    void *guard = heap.allocate(kMiB);
    REQUIRE(guard);
    heap.release(a);
    heap.release(c);
    heap.release(b);
    REQUIRE(heap.allocate(14 * kMiB) == a);
  }
  SECTION("a request too large for the rest gets nothing") {
    REQUIRE(heap.allocate(60 * kMiB) == nullptr);
    REQUIRE(heap.allocate(65 * kMiB) == nullptr);
    heap.release(c);  // the rest grows by c's 8 MiB
    REQUIRE(heap.allocate(40 * kMiB) == c);
  }
}

TEST_CASE("LargeBlockHeap blocks stay disjoint under random use", "[support]") {
  LargeBlockHeap heap;
  REQUIRE(heap.reserve(512 * kMiB));
  std::mt19937 rng(17);
  struct Block {
    unsigned char *p;
    size_t size;
    unsigned char fill;
  };
  std::vector<Block> live;
  size_t failures = 0;
  for (int step = 0; step < 2000; ++step) {
    // At most 40 live blocks of up to ~6 MiB: 250 MiB at most, in 512.
    if (live.empty() || (live.size() < 40 && rng() % 2 == 0)) {
      const size_t size = kMiB / 4 + rng() % (6 * kMiB);
      auto *p = static_cast<unsigned char *>(heap.allocate(size));
      if (!p) {
        ++failures;
        continue;
      }
      const auto fill = static_cast<unsigned char>(step);
      std::memset(p, fill, size);
      live.push_back({p, size, fill});
    } else {
      const size_t k = rng() % live.size();
      heap.release(live[k].p);
      live[k] = live.back();
      live.pop_back();
    }
    if (step % 100 == 99) {  // every live block still holds what was written to it
      std::map<uintptr_t, size_t> by_address;
      for (const Block &b : live) {
        REQUIRE(b.p[0] == b.fill);
        REQUIRE(b.p[b.size / 2] == b.fill);
        REQUIRE(b.p[b.size - 1] == b.fill);
        by_address[address(b.p)] = b.size;
      }
      uintptr_t end = 0;
      for (auto [start, size] : by_address) {
        REQUIRE(start >= end);
        end = start + size;
      }
    }
  }
  // ~1000 blocks of ~3 MiB went through 512 MiB: freed ones were reused,
  // and there was always room.
  REQUIRE(failures == 0);
  REQUIRE(heap.high_water() <= 512 * kMiB);
}

}  // namespace
}  // namespace spmd
