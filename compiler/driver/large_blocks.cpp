// driver/large_blocks.cpp — `operator new` serves large blocks from LargeBlockHeap.
//
// Replaces the global operator new and delete of the spmdc executable (the
// libraries and tests keep the standard ones). Until use_large_block_heap()
// is called every request goes to malloc as usual; after it, requests of
// kLargeBlock bytes and more come from the heap of support/large_block_heap.h.
// Built with AddressSanitizer the replacement is left out, so the
// sanitizer's own operator new keeps checking every block.
#include "driver/large_blocks.h"

#include <cstdlib>
#include <new>

#include "support/large_block_heap.h"

#if defined(__SANITIZE_ADDRESS__)
#define SPMDC_NO_LARGE_BLOCKS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SPMDC_NO_LARGE_BLOCKS 1
#endif
#endif

namespace {

/// From this size up a block comes from the heap (IR bodies, value tables,
/// dense per-value maps, the printed text of a large program).
constexpr size_t kLargeBlock = size_t{1} << 20;
/// Address space reserved for it (not memory: pages are committed when written).
constexpr size_t kReserved = size_t{1} << 36;

constinit spmd::LargeBlockHeap heap;

}  // namespace

namespace spmd::driver {

bool use_large_block_heap() {
#if defined(SPMDC_NO_LARGE_BLOCKS)
  return false;
#else
  return heap.reserve(kReserved);
#endif
}

}  // namespace spmd::driver

#if !defined(SPMDC_NO_LARGE_BLOCKS)

namespace {

void *allocate(size_t n) {
  if (n >= kLargeBlock && heap.on())
    if (void *p = heap.allocate(n)) return p;
  for (;;) {
    if (void *p = std::malloc(n == 0 ? 1 : n)) return p;
    std::new_handler handler = std::get_new_handler();
    if (!handler) throw std::bad_alloc();
    handler();
  }
}

void release(void *p) noexcept {
  if (heap.owns(p))
    heap.release(p);
  else
    std::free(p);
}

}  // namespace

void *operator new(size_t n) { return allocate(n); }
void *operator new[](size_t n) { return allocate(n); }
void *operator new(size_t n, const std::nothrow_t &) noexcept {
  try {
    return allocate(n);
  } catch (...) {
    return nullptr;
  }
}
void *operator new[](size_t n, const std::nothrow_t &) noexcept {
  try {
    return allocate(n);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void *p) noexcept { release(p); }
void operator delete[](void *p) noexcept { release(p); }
void operator delete(void *p, size_t) noexcept { release(p); }
void operator delete[](void *p, size_t) noexcept { release(p); }
void operator delete(void *p, const std::nothrow_t &) noexcept { release(p); }
void operator delete[](void *p, const std::nothrow_t &) noexcept { release(p); }

#endif
