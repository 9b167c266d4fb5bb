// support/large_block_heap.h — a heap of its own for large blocks, whose pages are reused.
//
// The program-writing commands build and free whole IR bodies and value
// tables (vectors of 100 MB and more on a 200k-op program) between millions
// of small blocks. glibc keeps freed blocks on one unsorted list and looks at
// no more than 10000 of them per request: once a pass has freed ~100k small
// blocks (shapes, names), a large body freed just before is not found, the
// heap grows instead, and every page of the new block faults in zeroed (a
// `vjp` of 200k ops spent a third of its time in page faults). This heap
// serves only large blocks, from one reserved range of address space: a
// freed block is found by the next request it fits (best fit, neighbours
// coalesced), and its pages, once touched, stay with the process and are
// reused without faulting. Nothing is given back to the system.
//
// driver/large_blocks.cpp routes `operator new` of large sizes here for the
// program-writing commands. The class itself is plain (unit-tested alone).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>

namespace spmd {

class LargeBlockHeap {
 public:
  /// Blocks start at this alignment (the first block of the range and every
  /// size are multiples of it).
  static constexpr size_t kAlignment = 4096;
  /// Free ranges tracked at once; a block freed when all are in use is not
  /// reused (its address range stays reserved).
  static constexpr size_t kMaxFreeRanges = 1024;

  constexpr LargeBlockHeap() = default;
  LargeBlockHeap(const LargeBlockHeap &) = delete;
  LargeBlockHeap &operator=(const LargeBlockHeap &) = delete;

  /// Reserves `bytes` of address space (no memory is committed until
  /// written). False, and the heap stays off, when the system refuses.
  bool reserve(size_t bytes);
  bool on() const { return size_ != 0; }

  /// A block of at least `bytes`, aligned to 64 bytes, or nullptr when the
  /// range has no room for it (the caller then uses malloc).
  void *allocate(size_t bytes);
  /// Whether `p` was returned by allocate(): a range check, cheap enough
  /// for every `operator delete`.
  bool owns(const void *p) const { return reinterpret_cast<uintptr_t>(p) - base_ < size_; }
  /// Frees a block allocate() returned.
  void release(void *p);

  /// Bytes between the start of the range and the end of the highest block
  /// ever allocated: the pages this heap has touched at most.
  size_t high_water() const { return high_water_; }

 private:
  struct Range {
    size_t offset = 0;
    size_t size = 0;
  };
  /// The bytes a block of `bytes` takes: its header and the rounding.
  static size_t footprint(size_t bytes);
  void insert_free(Range r);

  uintptr_t base_ = 0;
  size_t size_ = 0;
  size_t top_ = 0;  // everything from here to size_ is free
  size_t high_water_ = 0;
  Range free_[kMaxFreeRanges]{};  // sorted by offset, none adjacent to another or to top_
  size_t num_free_ = 0;
  std::mutex mutex_;
};

}  // namespace spmd
