// runtime/cpu/random_format.cpp — deterministic random tensors and NumPy-style printing.
//
// random_tensor draws one SplitMix64 output per element in flat C order, so the
// values depend only on (dtype, shape, seed). format_tensor renders like NumPy's
// str(): nested brackets, right-aligned columns, "..." elision (3 edge items per
// dimension) when the tensor has more than max_elements elements.
#include <bit>
#include <cmath>
#include <cstdio>

#include "internal.h"

namespace spmd::rt {

namespace {

struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
};

constexpr int64_t kEdgeItems = 3;

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

class Formatter {
 public:
  Formatter(const Tensor &tensor, bool elide) : tensor_(tensor), elide_(elide) {
    strides_ = detail::row_major_strides(tensor.shape());
  }

  std::string run() {
    // First pass: width of the widest rendered element for column alignment.
    collect(0, 0, /*measure=*/true);
    std::string out;
    render(0, 0, out);
    return out;
  }

 private:
  // Indices shown along a dimension of size n (with -1 marking the "..." gap).
  std::vector<int64_t> shown(int64_t n) const {
    std::vector<int64_t> idx;
    if (!elide_ || n <= 2 * kEdgeItems) {
      for (int64_t i = 0; i < n; ++i) idx.push_back(i);
    } else {
      for (int64_t i = 0; i < kEdgeItems; ++i) idx.push_back(i);
      idx.push_back(-1);
      for (int64_t i = n - kEdgeItems; i < n; ++i) idx.push_back(i);
    }
    return idx;
  }

  void collect(size_t dim, int64_t offset, bool) {
    if (dim == tensor_.shape().size()) {
      const std::string text = format_scalar(tensor_.dtype(), tensor_.get(offset));
      width_ = std::max(width_, text.size());
      const size_t point = text.find('.');
      if (text.find('e') != std::string::npos) align_points_ = false;
      if (point != std::string::npos) {
        left_ = std::max(left_, point);
        right_ = std::max(right_, text.size() - point);
      } else {
        left_ = std::max(left_, text.size());
      }
      return;
    }
    for (int64_t i : shown(tensor_.shape()[dim])) {
      if (i >= 0) collect(dim + 1, offset + i * strides_[dim], true);
    }
  }

  void render(size_t dim, int64_t offset, std::string &out) {
    const size_t rank = tensor_.shape().size();
    if (dim == rank) {
      std::string text = format_scalar(tensor_.dtype(), tensor_.get(offset));
      if (rank == 0) {
        out += text;
      } else if (is_float(tensor_.dtype()) && align_points_) {
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
    for (int64_t i : shown(tensor_.shape()[dim])) {
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
        render(dim + 1, offset + i * strides_[dim], out);
      }
    }
    out += ']';
  }

  const Tensor &tensor_;
  bool elide_;
  std::vector<int64_t> strides_;
  size_t width_ = 0;
  size_t left_ = 0, right_ = 0;  // widest parts before / from the decimal point
  bool align_points_ = true;     // false when some element uses exponent notation
};

}  // namespace

Tensor random_tensor(DType dtype, const Shape &shape, uint64_t seed) {
  Tensor t = Tensor::empty(dtype, shape);
  SplitMix64 rng{seed};
  const int64_t n = t.numel();
  switch (dtype) {
    case DType::F64: {
      auto *out = t.data<double>();
      for (int64_t i = 0; i < n; ++i)
        out[i] = 2.0 * std::ldexp(double(rng.next() >> 11), -53) - 1.0;
      break;
    }
    case DType::F32:
    case DType::BF16: {
      // 24 random bits: 2u - 1 is exact in f32 and lies in [-1, 1). bf16 keeps the upper
      // 16 bits (truncation toward zero) so it stays inside [-1, 1) too.
      for (int64_t i = 0; i < n; ++i) {
        float value = 2.0f * std::ldexp(float(rng.next() >> 40), -24) - 1.0f;
        if (dtype == DType::F32) {
          t.data<float>()[i] = value;
        } else {
          t.data<uint16_t>()[i] = static_cast<uint16_t>(std::bit_cast<uint32_t>(value) >> 16);
        }
      }
      break;
    }
    case DType::I32: {
      auto *out = t.data<int32_t>();
      for (int64_t i = 0; i < n; ++i) {
        out[i] = static_cast<int32_t>(((rng.next() >> 32) * 17) >> 32) - 8;  // [-8, 8]
      }
      break;
    }
    case DType::Bool: {
      auto *out = t.data<uint8_t>();
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(rng.next() >> 63);
      break;
    }
  }
  return t;
}

std::string format_tensor(const Tensor &tensor, int64_t max_elements) {
  if (!tensor.defined()) return "<undefined>";
  return Formatter(tensor, tensor.numel() > max_elements).run();
}

}  // namespace spmd::rt
