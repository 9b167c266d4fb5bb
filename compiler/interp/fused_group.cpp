// interp/fused_group.cpp — tiled evaluation of a fused elementwise group.
//
// 1. Every member result gets a home: its output tensor when the group exports
//    it (tiles are computed in place there), else a tile buffer.
// 2. Every operand read from outside is classified once: a tensor with the
//    group's element count is read contiguously, a one-element tensor is a
//    scalar, anything else (a true broadcast) is expanded to the group's shape
//    first.
// 3. For each tile, each member runs its span kernel on the tile.
#include "interp/fused_group.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "interp/eval_op.h"
#include "spmdrt/kernels.h"

namespace spmd::interp::detail {
namespace {

using rt::Tensor;

constexpr int64_t kTile = 4096;  // elements per tile: a few tiles fit in L1/L2

/// Where a value lives during the group: a full tensor walked tile by tile, a
/// scalar, or a tile buffer (offset 0 for every tile).
struct Home {
  const std::byte *base = nullptr;
  std::byte *mutable_base = nullptr;
  size_t elem = 0;
  bool scalar = false;
  bool tiled_buffer = false;

  const void *at(int64_t offset) const {
    if (scalar || tiled_buffer) return base;
    return base + static_cast<size_t>(offset) * elem;
  }
  void *out_at(int64_t offset) const {
    if (tiled_buffer) return mutable_base;
    return mutable_base + static_cast<size_t>(offset) * elem;
  }
};

}  // namespace

std::vector<Tensor> eval_fused_group(const ir::Function &f, const std::vector<ir::Instr> &body,
                                     const backend::FusedGroup &group,
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
  for (size_t i : group.members) {
    const ir::ValueId r = body[i].results[0];
    if (homes.count(r)) continue;
    keep.push_back(Tensor::empty(f.type(r).dtype, {tile}));
    Home h;
    h.base = h.mutable_base = keep.back().raw();
    h.elem = rt::dtype_size(f.type(r).dtype);
    h.tiled_buffer = true;
    homes[r] = h;
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

  for (int64_t offset = 0; offset < n; offset += tile) {
    const int64_t count = std::min(tile, n - offset);
    for (size_t i : group.members) {
      const ir::Instr &in = body[i];
      auto arg = [&](size_t k) {
        const Home &h = homes.at(in.operands[k]);
        return rt::SpanArg{h.at(offset), h.scalar};
      };
      void *out = homes.at(in.results[0]).out_at(offset);
      const ElementwiseKernel k = elementwise_kernel(in.op);
      const DType dtype = f.type(in.operands[0]).dtype;
      switch (k.kind) {
        case ElementwiseKernel::Kind::Unary:
          rt::unary_span(k.unary, dtype, arg(0), out, count);
          break;
        case ElementwiseKernel::Kind::Binary:
          rt::binary_span(k.binary, dtype, arg(0), arg(1), out, count);
          break;
        case ElementwiseKernel::Kind::Select:
          rt::select_span(arg(0), f.type(in.operands[1]).dtype, arg(1), arg(2), out, count);
          break;
        case ElementwiseKernel::Kind::Cast:
          rt::cast_span(dtype, in.attrs.dtype, arg(0), out, count);
          break;
        case ElementwiseKernel::Kind::Identity:
          rt::cast_span(dtype, dtype, arg(0), out, count);  // a copy
          break;
        case ElementwiseKernel::Kind::None:
          throw std::logic_error("interpreter: `" + std::string(op_spelling(in.op)) +
                                 "` in a fused group");
      }
    }
  }
  return outputs;
}

}  // namespace spmd::interp::detail
