// driver/large_blocks.h — large blocks from a heap of their own (program-writing commands).
#pragma once

namespace spmd::driver {

/// From now on `operator new` serves blocks of 1 MiB and more from a
/// LargeBlockHeap (support/large_block_heap.h), whose freed blocks are
/// reused without faulting their pages in again. False when it is not
/// available (the address space was refused, or a sanitizer build).
bool use_large_block_heap();

}  // namespace spmd::driver
