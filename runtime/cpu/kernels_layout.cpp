// runtime/cpu/kernels_layout.cpp — data movement kernels.
//
// reshape, transpose, broadcast_to, static and dynamic slices, pad_into, concat
// and iota. All of them are dtype-agnostic byte movers built on
// detail::strided_copy (element size 1, 2, 4 or 8 bytes), so they never convert
// values.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "internal.h"
#include "spmdrt/checked.h"
#include "spmdrt/kernels.h"

namespace spmd::rt {

using detail::fail;

namespace {

void check_rank(const char *op, const Tensor &x, size_t count, const char *what) {
  if (static_cast<int64_t>(count) != x.rank()) {
    fail(std::string(op) + ": " + what + " has " + std::to_string(count) +
         " entries but the operand has rank " + std::to_string(x.rank()) + " (shape " +
         shape_str(x.shape()) + ")");
  }
}

}  // namespace

Tensor reshape(const Tensor &x, const Shape &shape) {
  // One dimension may be -1: inferred from the element count.
  Shape resolved = shape;
  int64_t inferred = -1, known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1 && inferred < 0) {
      inferred = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      fail("reshape: invalid target shape " + shape_str(shape));
    } else {
      known *= shape[i];
    }
  }
  if (inferred >= 0) {
    if (known == 0 || x.numel() % known != 0) {
      fail("cannot reshape " + shape_str(x.shape()) + " to " + shape_str(shape));
    }
    resolved[inferred] = x.numel() / known;
  }
  return x.reshaped(resolved);
}

Tensor transpose(const Tensor &x, std::span<const int64_t> perm) {
  check_rank("transpose", x, perm.size(), "permutation");
  const size_t rank = perm.size();
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[p]) {
      fail("transpose: invalid permutation for rank " + std::to_string(rank));
    }
    seen[p] = true;
  }
  bool identity = true;
  for (size_t i = 0; i < rank; ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
  if (identity) return x;
  Shape out_shape(rank);
  const std::vector<int64_t> in_strides = detail::row_major_strides(x.shape());
  std::vector<int64_t> src_strides(rank);
  for (size_t i = 0; i < rank; ++i) {
    out_shape[i] = x.shape()[perm[i]];
    src_strides[i] = in_strides[perm[i]];
  }
  Tensor out = Tensor::empty(x.dtype(), out_shape);
  detail::strided_copy(out.raw(), detail::row_major_strides(out_shape), x.raw(), src_strides,
                       out_shape, dtype_size(x.dtype()));
  return out;
}

Tensor reverse(const Tensor &x, std::span<const int64_t> dims) {
  std::vector<int64_t> strides = detail::row_major_strides(x.shape());
  const auto esize = static_cast<int64_t>(dtype_size(x.dtype()));
  int64_t start = 0;  // element offset of the first element read
  for (int64_t d : dims) {
    if (d < 0 || d >= x.rank())
      fail("flip: dimension out of range for rank " + std::to_string(x.rank()));
    if (x.shape()[d] == 0) return x.clone();
    start += (x.shape()[d] - 1) * strides[d];
    strides[d] = -strides[d];
  }
  Tensor out = Tensor::empty(x.dtype(), x.shape());
  detail::strided_copy(out.raw(), detail::row_major_strides(x.shape()), x.raw() + start * esize,
                       strides, x.shape(), dtype_size(x.dtype()));
  return out;
}

Tensor broadcast_to(const Tensor &x, const Shape &shape) {
  bool ok = x.rank() <= static_cast<int64_t>(shape.size());
  for (int64_t i = 0; ok && i < x.rank(); ++i) {
    int64_t d = x.shape()[x.rank() - 1 - i], t = shape[shape.size() - 1 - i];
    ok = d == t || d == 1;
  }
  if (!ok) fail("cannot broadcast shape " + shape_str(x.shape()) + " to " + shape_str(shape));
  if (x.shape() == shape) return x;
  Tensor out = Tensor::empty(x.dtype(), shape);
  detail::strided_copy(out.raw(), detail::row_major_strides(shape), x.raw(),
                       detail::broadcast_strides(x.shape(), shape), shape, dtype_size(x.dtype()));
  return out;
}

Tensor slice(const Tensor &x, std::span<const int64_t> start, std::span<const int64_t> limit,
             std::span<const int64_t> stride) {
  check_rank("slice", x, start.size(), "start");
  check_rank("slice", x, limit.size(), "limit");
  check_rank("slice", x, stride.size(), "stride");
  const size_t rank = start.size();
  Shape out_shape(rank);
  const std::vector<int64_t> in_strides = detail::row_major_strides(x.shape());
  std::vector<int64_t> src_strides(rank);
  int64_t offset = 0;
  for (size_t d = 0; d < rank; ++d) {
    if (stride[d] <= 0 || start[d] < 0 || limit[d] < start[d] || limit[d] > x.shape()[d]) {
      fail("slice: invalid bounds for dimension " + std::to_string(d) + " of shape " +
           shape_str(x.shape()) + " (start " + std::to_string(start[d]) + ", limit " +
           std::to_string(limit[d]) + ", stride " + std::to_string(stride[d]) + ")");
    }
    out_shape[d] = range_length(start[d], limit[d], stride[d]);
    // With two or more elements taken, stride < x.shape()[d], so the product
    // stays within the array's size; with one, the stride is never used.
    src_strides[d] = out_shape[d] > 1 ? in_strides[d] * stride[d] : 0;
    offset += start[d] * in_strides[d];
  }
  Tensor out = Tensor::empty(x.dtype(), out_shape);
  const size_t esize = dtype_size(x.dtype());
  detail::strided_copy(out.raw(), detail::row_major_strides(out_shape), x.raw() + offset * esize,
                       src_strides, out_shape, esize);
  return out;
}

Tensor pad_into(const Tensor &x, const Shape &shape, std::span<const int64_t> start,
                std::span<const int64_t> stride) {
  if (shape.size() != static_cast<size_t>(x.rank())) {
    fail("pad_into: target shape " + shape_str(shape) + " and operand shape " +
         shape_str(x.shape()) + " differ in rank");
  }
  check_rank("pad_into", x, start.size(), "start");
  check_rank("pad_into", x, stride.size(), "stride");
  const size_t rank = shape.size();
  Tensor out = Tensor::zeros(x.dtype(), shape);
  const std::vector<int64_t> out_strides = detail::row_major_strides(shape);
  std::vector<int64_t> dst_strides(rank);
  int64_t offset = 0;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t n = x.shape()[d];
    const auto span = checked_mul(n > 0 ? n - 1 : 0, stride[d]);
    const auto last = span ? checked_add(start[d], *span) : std::nullopt;
    if (stride[d] <= 0 || start[d] < 0 || !last || (n > 0 && *last >= shape[d])) {
      fail("pad_into: operand " + shape_str(x.shape()) + " does not fit into " + shape_str(shape) +
           " along dimension " + std::to_string(d));
    }
    dst_strides[d] = n > 1 ? out_strides[d] * stride[d] : 0;  // in range: checked above
    offset += start[d] * out_strides[d];
  }
  const size_t esize = dtype_size(x.dtype());
  detail::strided_copy(out.raw() + offset * esize, dst_strides, x.raw(),
                       detail::row_major_strides(x.shape()), x.shape(), esize);
  return out;
}

namespace {

/// XLA clamping: start is moved into [0, dim - size].
std::vector<int64_t> clamp_start(const Shape &shape, std::span<const int64_t> start,
                                 const Shape &sizes, const char *op) {
  std::vector<int64_t> clamped(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    if (sizes[d] < 0 || sizes[d] > shape[d]) {
      fail(std::string(op) + ": size " + shape_str(sizes) + " does not fit in " + shape_str(shape));
    }
    clamped[d] = std::clamp<int64_t>(start[d], 0, shape[d] - sizes[d]);
  }
  return clamped;
}

}  // namespace

Tensor dynamic_slice(const Tensor &x, std::span<const int64_t> start,
                     std::span<const int64_t> sizes) {
  check_rank("dynamic_slice", x, start.size(), "start");
  check_rank("dynamic_slice", x, sizes.size(), "sizes");
  const Shape size_shape(sizes.begin(), sizes.end());
  std::vector<int64_t> begin = clamp_start(x.shape(), start, size_shape, "dynamic_slice");
  std::vector<int64_t> limit(begin.size()), stride(begin.size(), 1);
  for (size_t d = 0; d < begin.size(); ++d) limit[d] = begin[d] + sizes[d];
  return slice(x, begin, limit, stride);
}

namespace {

/// Writes `update` into `out` (already holding the operand) at `start`, clamped.
void update_in(Tensor &out, const Tensor &update, std::span<const int64_t> start) {
  check_rank("dynamic_update_slice", out, start.size(), "start");
  if (update.rank() != out.rank() || update.dtype() != out.dtype()) {
    fail("dynamic_update_slice: update " + std::string(dtype_name(update.dtype())) +
         shape_str(update.shape()) + " does not match operand " + dtype_name(out.dtype()) +
         shape_str(out.shape()));
  }
  std::vector<int64_t> begin =
      clamp_start(out.shape(), start, update.shape(), "dynamic_update_slice");
  const std::vector<int64_t> strides = detail::row_major_strides(out.shape());
  int64_t offset = 0;
  for (size_t d = 0; d < begin.size(); ++d) offset += begin[d] * strides[d];
  const size_t esize = dtype_size(out.dtype());
  detail::strided_copy(out.raw() + offset * esize, strides, update.raw(),
                       detail::row_major_strides(update.shape()), update.shape(), esize);
}

}  // namespace

Tensor dynamic_update_slice(const Tensor &x, const Tensor &update, std::span<const int64_t> start) {
  Tensor out = x.clone();
  update_in(out, update, start);
  return out;
}

Tensor dynamic_update_slice(Tensor &&x, const Tensor &update, std::span<const int64_t> start) {
  // A unique x cannot alias `update` (that would hold a second reference).
  Tensor out = x.unique() ? std::move(x) : x.clone();
  update_in(out, update, start);
  return out;
}

Tensor concat(std::span<const Tensor> parts, int64_t axis) {
  if (parts.empty()) fail("concat: no operands");
  const Tensor &first = parts[0];
  const int64_t ax = detail::normalize_axis(axis, first.rank(), "concat");
  Shape out_shape = first.shape();
  out_shape[ax] = 0;
  for (const Tensor &p : parts) {
    bool ok = p.dtype() == first.dtype() && p.rank() == first.rank();
    for (int64_t d = 0; ok && d < p.rank(); ++d) ok = d == ax || p.shape()[d] == first.shape()[d];
    if (!ok) {
      fail("concat along axis " + std::to_string(ax) + ": operand " + dtype_name(p.dtype()) +
           shape_str(p.shape()) + " does not match " + dtype_name(first.dtype()) +
           shape_str(first.shape()));
    }
    out_shape[ax] += p.shape()[ax];
  }
  Tensor out = Tensor::empty(first.dtype(), out_shape);
  const size_t esize = dtype_size(first.dtype());
  const int64_t outer = num_elements(Shape(out_shape.begin(), out_shape.begin() + ax));
  const int64_t inner = num_elements(Shape(out_shape.begin() + ax + 1, out_shape.end()));
  // Row by row of the result, each part's row in turn: the result is written in
  // order (one pass over each page, not one per part), a memcpy per part's row.
  std::byte *dst = out.raw();
  for (int64_t o = 0; o < outer; ++o) {
    for (const Tensor &p : parts) {
      const auto bytes = static_cast<size_t>(p.shape()[ax] * inner) * esize;
      if (bytes == 0) continue;
      std::memcpy(dst, p.raw() + static_cast<size_t>(o) * bytes, bytes);
      dst += bytes;
    }
  }
  return out;
}

Tensor iota(DType dtype, const Shape &shape, int64_t dim) {
  const int64_t d = detail::normalize_axis(dim, static_cast<int64_t>(shape.size()), "iota");
  Tensor out = Tensor::empty(dtype, shape);
  const int64_t inner = num_elements(Shape(shape.begin() + d + 1, shape.end()));
  const int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i) out.set(i, static_cast<double>((i / inner) % shape[d]));
  return out;
}

}  // namespace spmd::rt
