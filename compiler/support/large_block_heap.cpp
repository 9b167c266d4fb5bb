// support/large_block_heap.cpp — see large_block_heap.h.
//
// The range is one anonymous mapping reserved up front. Blocks are cut from
// the lowest free range that fits best, or from `top_` (the untouched rest).
// Each block starts with a 64-byte header holding its footprint, so release
// knows its size. Freed blocks join their free neighbours; a free range
// reaching `top_` lowers it.
#include "support/large_block_heap.h"

#include <sys/mman.h>

namespace spmd {
namespace {

constexpr size_t kHeader = 64;

}  // namespace

bool LargeBlockHeap::reserve(size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (size_ != 0) return true;
  bytes = bytes / kAlignment * kAlignment;
  void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return false;
  base_ = reinterpret_cast<uintptr_t>(p);
  size_ = bytes;
  return true;
}

size_t LargeBlockHeap::footprint(size_t bytes) {
  return (bytes + kHeader + kAlignment - 1) / kAlignment * kAlignment;
}

void *LargeBlockHeap::allocate(size_t bytes) {
  if (bytes > size_) return nullptr;
  const size_t need = footprint(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  size_t best = num_free_;
  for (size_t k = 0; k < num_free_; ++k)
    if (free_[k].size >= need && (best == num_free_ || free_[k].size < free_[best].size)) best = k;
  size_t offset;
  if (best < num_free_) {
    Range &r = free_[best];
    offset = r.offset;  // the front: pages a freed block already touched
    r.offset += need;
    r.size -= need;
    if (r.size == 0) {
      for (size_t k = best + 1; k < num_free_; ++k) free_[k - 1] = free_[k];
      --num_free_;
    }
  } else {
    if (size_ - top_ < need) return nullptr;
    offset = top_;
    top_ += need;
    if (top_ > high_water_) high_water_ = top_;
  }
  auto *header = reinterpret_cast<size_t *>(base_ + offset);
  *header = need;
  return reinterpret_cast<void *>(base_ + offset + kHeader);
}

void LargeBlockHeap::release(void *p) {
  if (!p) return;
  const size_t offset = reinterpret_cast<uintptr_t>(p) - base_ - kHeader;
  std::lock_guard<std::mutex> lock(mutex_);
  const size_t size = *reinterpret_cast<const size_t *>(base_ + offset);
  insert_free({offset, size});
}

void LargeBlockHeap::insert_free(Range r) {
  // The first free range after r, and whether r joins the one before it.
  size_t at = 0;
  while (at < num_free_ && free_[at].offset < r.offset) ++at;
  if (at > 0 && free_[at - 1].offset + free_[at - 1].size == r.offset) {
    --at;
    r.offset = free_[at].offset;
    r.size += free_[at].size;
    for (size_t k = at + 1; k < num_free_; ++k) free_[k - 1] = free_[k];
    --num_free_;
  }
  if (at < num_free_ && r.offset + r.size == free_[at].offset) {
    r.size += free_[at].size;
    for (size_t k = at + 1; k < num_free_; ++k) free_[k - 1] = free_[k];
    --num_free_;
  }
  if (r.offset + r.size == top_) {  // (only the last range can reach top_)
    top_ = r.offset;
    return;
  }
  if (num_free_ == kMaxFreeRanges) return;  // not reused; its address range stays reserved
  for (size_t k = num_free_; k > at; --k) free_[k] = free_[k - 1];
  free_[at] = r;
  ++num_free_;
}

}  // namespace spmd
