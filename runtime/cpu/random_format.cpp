// runtime/cpu/random_format.cpp — deterministic random tensors and NumPy-style printing.
//
// random_tensor draws one SplitMix64 output per element in flat C order, so the
// values depend only on (dtype, shape, seed); random_block makes any box of that
// array on its own (element i of the stream is computed directly). format_tensor renders like
// NumPy's str(): nested brackets, right-aligned columns, "..." elision (3 edge items per dimension)
// when the tensor has more than max_elements elements.
#include <bit>
#include <cmath>
#include <cstdio>

#include "internal.h"

namespace spmd::rt {

namespace {

constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ULL;

struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += kGamma);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
};

constexpr int64_t kEdgeItems = 3;

std::string format_scalar(DType dtype, double value);

/// Element `offset` of `t` as text; a key as `key(word0,word1)` in hex.
std::string element_text(const Tensor &t, int64_t offset) {
  if (t.dtype() == DType::Key) {
    const uint32_t *words = t.data<uint32_t>() + 2 * offset;
    char buffer[40];
    std::snprintf(buffer, sizeof buffer, "key(%08x,%08x)", static_cast<unsigned>(words[0]),
                  static_cast<unsigned>(words[1]));
    return buffer;
  }
  return format_scalar(t.dtype(), t.get(offset));
}

std::string format_scalar(DType dtype, double value) {
  if (dtype == DType::Bool) return value != 0.0 ? "True" : "False";
  if (dtype == DType::I32) return std::to_string(static_cast<int64_t>(value));

  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.6g", value);
  std::string text = buffer;
  // NumPy writes integral floats as "1." rather than "1".
  if (text.find_first_of(".e") == std::string::npos) text += ".";
  return text;
}

/// Indices shown along a dimension of size n, -1 marking the "..." gap.
std::vector<int64_t> shown_along(int64_t n, bool elide) {
  std::vector<int64_t> idx;
  if (!elide || n <= 2 * kEdgeItems) {
    for (int64_t i = 0; i < n; ++i) idx.push_back(i);
  } else {
    for (int64_t i = 0; i < kEdgeItems; ++i) idx.push_back(i);
    idx.push_back(-1);
    for (int64_t i = n - kEdgeItems; i < n; ++i) idx.push_back(i);
  }
  return idx;
}

/// Renders an array of `shape` from `shown`, which holds only its printed
/// elements (shape: the number of printed indices per dimension).
class Formatter {
 public:
  Formatter(const Tensor &shown, const Shape &shape, bool elide)
      : shown_(shown), shape_(shape), elide_(elide) {
    strides_ = detail::row_major_strides(shown.shape());
  }

  std::string run() {
    // First pass: width of the widest rendered element for column alignment.
    for_each_shown(0, 0, [this](int64_t offset) { measure(offset); });
    std::string out;
    render(0, 0, out);
    return out;
  }

 private:
  template <typename Leaf>
  void for_each_shown(size_t dim, int64_t offset, const Leaf &leaf) {
    if (dim == shape_.size()) return leaf(offset);
    int64_t position = 0;
    for (int64_t i : shown_along(shape_[dim], elide_))
      if (i >= 0) for_each_shown(dim + 1, offset + position++ * strides_[dim], leaf);
  }

  void measure(int64_t offset) {
    const std::string text = element_text(shown_, offset);
    width_ = std::max(width_, text.size());
    const size_t point = text.find('.');
    if (text.find('e') != std::string::npos) align_points_ = false;
    if (point != std::string::npos) {
      left_ = std::max(left_, point);
      right_ = std::max(right_, text.size() - point);
    } else {
      left_ = std::max(left_, text.size());
    }
  }

  void render(size_t dim, int64_t offset, std::string &out) {
    const size_t rank = shape_.size();
    if (dim == rank) {
      std::string text = element_text(shown_, offset);
      if (rank == 0) {
        out += text;
      } else if (is_float(shown_.dtype()) && align_points_) {
        // Line up the decimal points, as NumPy does: pad left of the point and right of it.
        const size_t point = std::min(text.find('.'), text.size());
        out.append(left_ - point, ' ');
        out += text;
        out.append(right_ - (text.size() - point), ' ');
      } else {
        out.append(width_ - text.size(), ' ');
        out += text;
      }
      return;
    }
    out += '[';
    bool first = true;
    int64_t position = 0;
    for (int64_t i : shown_along(shape_[dim], elide_)) {
      if (!first) {
        if (dim + 1 == rank) {
          out += ' ';
        } else {
          out.append(rank - dim - 1, '\n');  // blank lines between higher-rank blocks
          out.append(dim + 1, ' ');
        }
      }
      first = false;
      if (i < 0) {
        out += "...";
      } else {
        render(dim + 1, offset + position++ * strides_[dim], out);
      }
    }
    out += ']';
  }

  const Tensor &shown_;
  const Shape &shape_;
  bool elide_;
  std::vector<int64_t> strides_;
  size_t width_ = 0;
  size_t left_ = 0, right_ = 0;  // widest parts before / from the decimal point
  bool align_points_ = true;     // false when some element uses exponent notation
};

}  // namespace

namespace {

/// Writes stream elements first, first+1, ... (count of them) of `seed` to `out`.
/// SplitMix64's state after i steps is seed + i * gamma, so any element is
/// reachable directly.
void fill_random(DType dtype, uint64_t seed, int64_t first, int64_t count, std::byte *out) {
  SplitMix64 rng{seed + static_cast<uint64_t>(first) * kGamma};
  switch (dtype) {
    case DType::F64: {
      auto *p = reinterpret_cast<double *>(out);
      for (int64_t i = 0; i < count; ++i)
        p[i] = 2.0 * std::ldexp(double(rng.next() >> 11), -53) - 1.0;
      break;
    }
    case DType::F32:
    case DType::BF16: {
      // 24 random bits: 2u - 1 is exact in f32 and lies in [-1, 1). bf16 keeps the upper
      // 16 bits (truncation toward zero) so it stays inside [-1, 1) too.
      for (int64_t i = 0; i < count; ++i) {
        float value = 2.0f * std::ldexp(float(rng.next() >> 40), -24) - 1.0f;
        if (dtype == DType::F32) {
          reinterpret_cast<float *>(out)[i] = value;
        } else {
          reinterpret_cast<uint16_t *>(out)[i] =
              static_cast<uint16_t>(std::bit_cast<uint32_t>(value) >> 16);
        }
      }
      break;
    }
    case DType::I32: {
      auto *p = reinterpret_cast<int32_t *>(out);
      for (int64_t i = 0; i < count; ++i) {
        p[i] = static_cast<int32_t>(((rng.next() >> 32) * 17) >> 32) - 8;  // [-8, 8]
      }
      break;
    }
    case DType::Bool: {
      auto *p = reinterpret_cast<uint8_t *>(out);
      for (int64_t i = 0; i < count; ++i) p[i] = static_cast<uint8_t>(rng.next() >> 63);
      break;
    }
    case DType::Key: {  // any two words make a key
      auto *p = reinterpret_cast<uint64_t *>(out);
      for (int64_t i = 0; i < count; ++i) p[i] = rng.next();
      break;
    }
  }
}

}  // namespace

Tensor random_tensor(DType dtype, const Shape &shape, uint64_t seed) {
  return random_block(dtype, shape, seed, Shape(shape.size(), 0), shape);
}

Tensor random_block(DType dtype, const Shape &global, uint64_t seed, const Shape &start,
                    const Shape &extent) {
  Tensor t = Tensor::empty(dtype, extent);
  const auto esize = static_cast<int64_t>(dtype_size(dtype));
  detail::for_each_block_run(global, Block{start, extent},
                             [&](int64_t first, int64_t local, int64_t count) {
                               fill_random(dtype, seed, first, count, t.raw() + local * esize);
                             });
  return t;
}

std::vector<std::vector<int64_t>> printed_indices(const Shape &shape, int64_t max_elements) {
  const bool elide = num_elements(shape) > max_elements;
  std::vector<std::vector<int64_t>> out;
  for (int64_t n : shape) {
    std::vector<int64_t> idx = shown_along(n, elide);
    std::erase(idx, -1);
    out.push_back(std::move(idx));
  }
  return out;
}

std::string format_printed(const Tensor &printed, const Shape &shape, int64_t max_elements) {
  return Formatter(printed, shape, num_elements(shape) > max_elements).run();
}

std::string format_tensor(const Tensor &tensor, int64_t max_elements) {
  if (!tensor.defined()) return "<undefined>";
  if (tensor.numel() <= max_elements) return format_printed(tensor, tensor.shape(), max_elements);
  // Copy out the printed elements: the box product of printed_indices.
  const auto idx = printed_indices(tensor.shape(), max_elements);
  Shape shown_shape;
  for (const auto &v : idx) shown_shape.push_back(static_cast<int64_t>(v.size()));
  Tensor shown = Tensor::empty(tensor.dtype(), shown_shape);
  const auto strides = detail::row_major_strides(tensor.shape());
  const size_t esize = dtype_size(tensor.dtype());
  std::vector<size_t> pos(idx.size(), 0);
  for (int64_t k = 0; k < shown.numel(); ++k) {
    int64_t offset = 0;
    for (size_t d = 0; d < idx.size(); ++d) offset += idx[d][pos[d]] * strides[d];
    std::memcpy(shown.raw() + static_cast<size_t>(k) * esize,
                tensor.raw() + static_cast<size_t>(offset) * esize, esize);
    for (size_t d = idx.size(); d-- > 0;) {
      if (++pos[d] < idx[d].size()) break;
      pos[d] = 0;
    }
  }
  return format_printed(shown, tensor.shape(), max_elements);
}

}  // namespace spmd::rt
