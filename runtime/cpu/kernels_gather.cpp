// runtime/cpu/kernels_gather.cpp — take (a gather of entries by index along one
// axis) and scatter_add (its transpose).
//
// Both view x as [outer, size, inner] around the indexed axis, with outer the
// product of the dimensions before it and inner of those after it, and the ids
// as a flat list of n indices; the gathered array is [outer, n, inner]. take
// copies bytes (any dtype); scatter_add adds in the compute type (f32 for
// bf16), in the order of the ids, so repeated ids accumulate and the result is
// the same on every run.
#include <cstring>

#include "internal.h"
#include "spmdrt/kernels.h"

namespace spmd::rt {

using detail::fail;

namespace {

struct GatherView {
  int64_t outer = 1, size = 0, inner = 1, count = 0;
};

GatherView view(const char *op, const Tensor &x, const Tensor &ids, int64_t axis) {
  if (axis < 0 || axis >= x.rank())
    fail(std::string(op) + ": axis " + std::to_string(axis) + " is out of range for shape " +
         shape_str(x.shape()));
  if (ids.dtype() != DType::I32) fail(std::string(op) + ": the ids must be i32");
  GatherView v;
  for (int64_t d = 0; d < axis; ++d) v.outer *= x.shape()[d];
  v.size = x.shape()[axis];
  for (int64_t d = axis + 1; d < x.rank(); ++d) v.inner *= x.shape()[d];
  v.count = ids.numel();
  return v;
}

/// The row an id names, or -1 for an id out of range in fill mode.
int64_t row_of(const char *op, int32_t id, const GatherView &v, int64_t axis, IndexMode mode) {
  if (id >= 0 && id < v.size) return id;
  if (mode == IndexMode::Fill) return -1;
  fail(std::string(op) + ": index " + std::to_string(id) + " is out of range for axis " +
       std::to_string(axis) + " of size " + std::to_string(v.size) +
       " (mode=\"fill\" reads zeros instead)");
}

Shape gathered_shape(const Tensor &x, const Tensor &ids, int64_t axis) {
  Shape s(x.shape().begin(), x.shape().begin() + axis);
  s.insert(s.end(), ids.shape().begin(), ids.shape().end());
  s.insert(s.end(), x.shape().begin() + axis + 1, x.shape().end());
  return s;
}

}  // namespace

Tensor take(const Tensor &x, const Tensor &ids, int64_t axis, IndexMode mode) {
  const GatherView v = view("take", x, ids, axis);
  Tensor out = Tensor::zeros(x.dtype(), gathered_shape(x, ids, axis));
  const size_t row_bytes = static_cast<size_t>(v.inner) * dtype_size(x.dtype());
  const int32_t *id = ids.data<int32_t>();
  std::vector<int64_t> rows(static_cast<size_t>(v.count));
  for (int64_t j = 0; j < v.count; ++j) rows[j] = row_of("take", id[j], v, axis, mode);
  const std::byte *src = x.raw();
  std::byte *dst = out.raw();
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t j = 0; j < v.count; ++j)
      if (rows[j] >= 0 && row_bytes > 0)
        std::memcpy(dst + static_cast<size_t>(o * v.count + j) * row_bytes,
                    src + static_cast<size_t>(o * v.size + rows[j]) * row_bytes, row_bytes);
  return out;
}

Tensor scatter_add(const Tensor &x, const Tensor &updates, const Tensor &ids, int64_t axis,
                   IndexMode mode) {
  const GatherView v = view("scatter_add", x, ids, axis);
  if (updates.dtype() != x.dtype() || updates.shape() != gathered_shape(x, ids, axis))
    fail("scatter_add: updates " + std::string(dtype_name(updates.dtype())) +
         shape_str(updates.shape()) + " do not match the array and ids");
  if (x.dtype() == DType::Bool || x.dtype() == DType::Key)
    fail(std::string("scatter_add: cannot add ") + dtype_name(x.dtype()) + " values");
  Tensor out = x.clone();
  const int32_t *id = ids.data<int32_t>();
  std::vector<int64_t> rows(static_cast<size_t>(v.count));
  for (int64_t j = 0; j < v.count; ++j) rows[j] = row_of("scatter_add", id[j], v, axis, mode);
  detail::dispatch_dtype(x.dtype(), [&](auto tag) {
    using S = decltype(tag);
    if constexpr (!std::is_same_v<S, bool>) {
      using C = detail::Compute<S>;
      S *o_data = out.data<S>();
      const S *u_data = updates.data<S>();
      for (int64_t o = 0; o < v.outer; ++o)
        for (int64_t j = 0; j < v.count; ++j) {
          if (rows[j] < 0) continue;
          S *row = o_data + (o * v.size + rows[j]) * v.inner;
          const S *u = u_data + (o * v.count + j) * v.inner;
          for (int64_t i = 0; i < v.inner; ++i)
            row[i] = C::store(static_cast<typename C::type>(C::load(row[i]) + C::load(u[i])));
        }
    }
  });
  return out;
}

}  // namespace spmd::rt
