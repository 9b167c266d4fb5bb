// interp/fused_group.cpp — tiled evaluation of a fused elementwise group.
//
// 1. Every member result gets a home: its output tensor when the group exports
//    it (tiles are computed in place there), else a tile buffer, taken from a
//    free list and given back after the member's last reader in the group —
//    so a chain of any length keeps a few buffers hot in L1 (with a buffer
//    per member, the many 4 KiB-aligned buffers collide in L1's sets).
// 2. Every operand read from outside is classified once: a tensor with the
//    group's element count is read contiguously, a one-element tensor is a
//    scalar, anything else (a true broadcast) is expanded to the group's shape
//    first.
// 3. For each tile, each member runs its span kernel on the tile. Chunks of tiles
//    run on the runtime's pool (spmdrt/parallel.h), each with tile buffers of its own.
#include "interp/fused_group.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "interp/eval_op.h"
#include "spmdrt/kernels.h"
#include "spmdrt/parallel.h"

namespace spmd::interp::detail {
namespace {

using rt::Tensor;

// Elements per tile: the input tiles and the few tile buffers in flight fit
// in L1. (bench: 512 and 1024 are best, 4096 and up ~1.4x slower.)
constexpr int64_t kTile = 1024;

/// Bytes of one tile buffer (the widest element is 8 bytes).
constexpr size_t kTileBytes = kTile * 8;

/// Where a value lives during the group: a full tensor walked tile by tile, a
/// scalar, or tile buffer `slot` of the chunk of tiles being run (each chunk of
/// the pool has buffers of its own; offset 0 for every tile).
struct Home {
  const std::byte *base = nullptr;
  std::byte *mutable_base = nullptr;
  size_t elem = 0;
  bool scalar = false;
  int slot = -1;

  const void *at(int64_t offset, std::byte *buffers) const {
    if (slot >= 0) return buffers + static_cast<size_t>(slot) * kTileBytes;
    if (scalar) return base;
    return base + static_cast<size_t>(offset) * elem;
  }
  void *out_at(int64_t offset, std::byte *buffers) const {
    if (slot >= 0) return buffers + static_cast<size_t>(slot) * kTileBytes;
    return mutable_base + static_cast<size_t>(offset) * elem;
  }
};

}  // namespace

std::vector<Tensor> eval_fused_group(const ir::Function &f, const std::vector<ir::Instr> &body,
                                     const fusion::FusedGroup &group,
                                     const std::vector<Tensor> &env) {
  const int64_t n = rt::num_elements(group.shape);
  std::map<ir::ValueId, Home> homes;
  std::vector<Tensor> keep;  // expanded broadcasts and tile buffers
  std::vector<Tensor> outputs;
  for (ir::ValueId v : group.outputs) {
    outputs.push_back(Tensor::empty(f.type(v).dtype, group.shape));
    Home h;
    h.base = h.mutable_base = outputs.back().raw();
    h.elem = rt::dtype_size(f.type(v).dtype);
    homes[v] = h;
  }
  const int64_t tile = std::min<int64_t>(kTile, std::max<int64_t>(n, 1));
  // Members the group does not export live in tile buffers, reused once their
  // last reader in the group has run (a buffer is never both read and written
  // by one member), so the tiles in flight stay in L1/L2.
  std::map<ir::ValueId, size_t> last_read;  // member position of a value's last reader
  for (size_t m = 0; m < group.members.size(); ++m)
    for (ir::ValueId v : body[group.members[m]].operands) last_read[v] = m;
  std::map<size_t, std::vector<int>> free_buffers;  // slots, by element size
  int slots = 0;
  for (size_t m = 0; m < group.members.size(); ++m) {
    const ir::Instr &in = body[group.members[m]];
    const ir::ValueId r = in.results[0];
    if (!homes.count(r)) {
      Home h;
      h.elem = rt::dtype_size(f.type(r).dtype);
      std::vector<int> &pool = free_buffers[h.elem];
      if (pool.empty()) pool.push_back(slots++);
      h.slot = pool.back();
      pool.pop_back();
      homes[r] = h;
    }
    std::vector<ir::ValueId> read = in.operands;  // `x * x` releases x once
    std::sort(read.begin(), read.end());
    read.erase(std::unique(read.begin(), read.end()), read.end());
    for (ir::ValueId v : read) {
      auto it = homes.find(v);
      if (it == homes.end() || it->second.slot < 0 || last_read.at(v) != m) continue;
      free_buffers[it->second.elem].push_back(it->second.slot);
    }
  }
  for (size_t i : group.members) {
    for (ir::ValueId v : body[i].operands) {
      if (homes.count(v)) continue;  // a member, or already classified
      Tensor t = env.at(static_cast<size_t>(v));
      if (!t.defined()) throw std::logic_error("interpreter: fused group reads a freed value");
      Home h;
      h.elem = rt::dtype_size(t.dtype());
      if (t.numel() == 1 && n != 1) {
        h.scalar = true;
      } else if (t.numel() != n) {
        t = rt::broadcast_to(t, group.shape).clone();
      }
      h.base = t.raw();
      keep.push_back(t);
      homes[v] = h;
    }
  }

  // What each member runs, looked up once rather than per tile.
  struct Step {
    ElementwiseKernel kernel;
    DType dtype, other_dtype;
    std::vector<const Home *> args;
    const Home *out;
  };
  std::vector<Step> steps;
  steps.reserve(group.members.size());
  for (size_t i : group.members) {
    const ir::Instr &in = body[i];
    Step step{elementwise_kernel(in.op),
              f.type(in.operands[0]).dtype,
              in.op == OpCode::Cast ? in.attrs.cast().dtype : DType::F32,
              {},
              &homes.at(in.results[0])};
    if (step.kernel.kind == ElementwiseKernel::Kind::Select)
      step.other_dtype = f.type(in.operands[1]).dtype;
    if (step.kernel.kind == ElementwiseKernel::Kind::None)
      throw std::logic_error("interpreter: `" + std::string(op_spelling(in.op)) +
                             "` in a fused group");
    for (ir::ValueId v : in.operands) step.args.push_back(&homes.at(v));
    steps.push_back(std::move(step));
  }

  auto run_tile = [&](int64_t offset, std::byte *buffers) {
    const int64_t count = std::min(tile, n - offset);
    for (const Step &step : steps) {
      auto arg = [&](size_t k) {
        return rt::SpanArg{step.args[k]->at(offset, buffers), step.args[k]->scalar};
      };
      void *out = step.out->out_at(offset, buffers);
      const ElementwiseKernel &k = step.kernel;
      switch (k.kind) {
        case ElementwiseKernel::Kind::Unary:
          rt::unary_span(k.unary, step.dtype, arg(0), out, count);
          break;
        case ElementwiseKernel::Kind::Binary:
          rt::binary_span(k.binary, step.dtype, arg(0), arg(1), out, count);
          break;
        case ElementwiseKernel::Kind::Select:
          rt::select_span(arg(0), step.other_dtype, arg(1), arg(2), out, count);
          break;
        case ElementwiseKernel::Kind::Cast:
          rt::cast_span(step.dtype, step.other_dtype, arg(0), out, count);
          break;
        case ElementwiseKernel::Kind::Identity:
          rt::cast_span(step.dtype, step.dtype, arg(0), out, count);  // a copy
          break;
        case ElementwiseKernel::Kind::None:
          break;  // rejected above
      }
    }
  };
  // Tiles in chunks over the pool: each element is computed by one chunk, so the
  // split does not change a bit.
  auto run_tiles = [&](int64_t first, int64_t last) {
    std::vector<double> buffer_storage(static_cast<size_t>(slots) * kTile);
    std::byte *buffers = reinterpret_cast<std::byte *>(buffer_storage.data());
    for (int64_t t = first; t < last; ++t) run_tile(t * tile, buffers);
  };
  const int64_t tiles = (n + tile - 1) / tile;
  rt::parallel_for(tiles, rt::elementwise_grain(tiles, tile), run_tiles);
  return outputs;
}

}  // namespace spmd::interp::detail
