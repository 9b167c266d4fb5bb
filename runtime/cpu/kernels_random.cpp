// cpu/kernels_random.cpp — the random ops: every element through spmdrt/random.h.
#include <cstring>

#include "internal.h"
#include "spmdrt/kernels.h"
#include "spmdrt/random.h"

namespace spmd::rt {
namespace {

rnd::Key scalar_key(const Tensor &key, const char *what) {
  if (key.dtype() != DType::Key || key.numel() != 1)
    detail::fail(std::string(what) + ": needs one random key");
  rnd::Key k;
  std::memcpy(&k, key.raw(), sizeof k);
  return k;
}

}  // namespace

Tensor random_draw(RandomOp op, std::span<const Tensor> operands, DType dtype, const Shape &shape,
                   const Shape &global) {
  const size_t params = random_params(op);
  if (operands.size() < params) detail::fail("random draw: too few operands");
  const rnd::Key k = scalar_key(operands[0], "random draw");
  const double lo = params == 3 ? operands[1].get(0) : 0.0;
  const double hi = params == 3 ? operands[2].get(0) : 1.0;
  std::vector<int64_t> offset;
  for (size_t j = params; j < operands.size(); ++j)
    offset.push_back(static_cast<int64_t>(operands[j].get(0)));
  const Shape &g = global.empty() ? shape : global;
  if (g.size() != shape.size() || (!global.empty() && offset.size() != shape.size()))
    detail::fail("random draw: the block and the global shape have different ranks");
  Tensor out = Tensor::empty(dtype, shape);
  const size_t rank = shape.size();
  const std::vector<int64_t> strides = detail::row_major_strides(g);
  std::vector<int64_t> index(rank, 0);
  // randint's two streams: the first and second keys of split(key, 2), as JAX.
  const rnd::Key high_key = rnd::split_element(k, 0), low_key = rnd::split_element(k, 1);
  for (int64_t i = 0; i < out.numel(); ++i) {
    uint64_t flat = 0;
    for (size_t d = 0; d < rank; ++d)
      flat += static_cast<uint64_t>(index[d] + (global.empty() ? 0 : offset[d])) *
              static_cast<uint64_t>(strides[d]);
    switch (op) {
      case RandomOp::Split: {
        const rnd::Key s = rnd::split_element(k, flat);
        std::memcpy(out.raw() + 8 * i, &s, 8);
        break;
      }
      case RandomOp::Bits:
        out.data<int32_t>()[i] = static_cast<int32_t>(rnd::bits_element(k, flat));
        break;
      case RandomOp::Uniform:
        if (dtype == DType::F64)
          out.data<double>()[i] = rnd::uniform_f64(rnd::element_pair(k, flat), lo, hi);
        else
          out.data<float>()[i] = rnd::uniform_f32(rnd::bits_element(k, flat),
                                                  static_cast<float>(lo), static_cast<float>(hi));
        break;
      case RandomOp::Normal:
        out.data<float>()[i] = rnd::normal_f32(rnd::bits_element(k, flat));
        break;
      case RandomOp::Int:
        out.data<int32_t>()[i] =
            rnd::randint_i32(rnd::bits_element(high_key, flat), rnd::bits_element(low_key, flat),
                             static_cast<int32_t>(lo), static_cast<int32_t>(hi));
        break;
    }
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

Tensor random_key(const Tensor &seed) {
  if (seed.dtype() != DType::I32) detail::fail("key: the seed must be i32");
  Tensor out = Tensor::empty(DType::Key, seed.shape());
  for (int64_t i = 0; i < seed.numel(); ++i) {
    const rnd::Key k = rnd::key_from_seed(seed.data<int32_t>()[i]);
    std::memcpy(out.raw() + 8 * i, &k, 8);
  }
  return out;
}

Tensor random_fold_in(const Tensor &key, const Tensor &data) {
  if (data.dtype() != DType::I32 || data.numel() != 1)
    detail::fail("fold_in: the data must be an i32 scalar");
  const rnd::Key k = rnd::fold_in(scalar_key(key, "fold_in"), data.data<int32_t>()[0]);
  Tensor out = Tensor::empty(DType::Key, {});
  std::memcpy(out.raw(), &k, 8);
  return out;
}

Tensor key_data(const Tensor &keys) {
  if (keys.dtype() != DType::Key) detail::fail("key_data: needs random keys");
  Shape shape = keys.shape();
  shape.push_back(2);
  Tensor out = Tensor::empty(DType::I32, shape);
  std::memcpy(out.raw(), keys.raw(), keys.nbytes());
  return out;
}

}  // namespace spmd::rt
