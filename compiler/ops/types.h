// ops/types.h — the type of every IR value: dtype, local shape and device variance.
//
// A value inside a shmap body has a *local* (per-device) shape and a variance
// set: the mesh axes along which its value may differ between devices. The
// type `f32[8,4]{i}` is an 8x4 float array that may differ along axis `i` and
// is equal on all devices along every other axis. `f32[]` is a scalar that is
// the same on every device.
//
// Variance is an AxisSet: a bit set over the axes of the function's mesh (bit k
// = mesh axis k). Printing a type needs the mesh to name the axes.
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spmdrt/mesh.h"
#include "spmdrt/tensor.h"

namespace spmd {

using DType = rt::DType;
using Shape = rt::Shape;

/// Parses "f32", "f64", "bf16", "i32", "bool".
std::optional<DType> parse_dtype(std::string_view name);
using rt::dtype_name;

/// A set of mesh axes (bit k = axis k of the function's mesh). At most 64 axes.
class AxisSet {
 public:
  constexpr AxisSet() = default;
  static constexpr AxisSet of(int axis) { return AxisSet(uint64_t{1} << axis); }
  static constexpr AxisSet from_bits(uint64_t bits) { return AxisSet(bits); }
  template <typename Range>
  static AxisSet of_all(const Range &axes) {
    AxisSet s;
    for (int a : axes) s = s | of(a);
    return s;
  }
  constexpr uint64_t bits() const { return bits_; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr bool contains(int axis) const { return (bits_ >> axis) & 1; }
  constexpr bool contains_all(AxisSet o) const { return (bits_ & o.bits_) == o.bits_; }
  int size() const { return std::popcount(bits_); }
  /// The axes in increasing order.
  std::vector<int> axes() const;
  constexpr AxisSet operator|(AxisSet o) const { return AxisSet(bits_ | o.bits_); }
  constexpr AxisSet operator&(AxisSet o) const { return AxisSet(bits_ & o.bits_); }
  constexpr AxisSet operator-(AxisSet o) const { return AxisSet(bits_ & ~o.bits_); }
  constexpr bool operator==(const AxisSet &) const = default;

 private:
  constexpr explicit AxisSet(uint64_t bits) : bits_(bits) {}
  uint64_t bits_ = 0;
};

struct Type {
  DType dtype = DType::F32;
  Shape shape;
  AxisSet variance;

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t numel() const { return rt::num_elements(shape); }
  bool operator==(const Type &) const = default;
  Type with_variance(AxisSet v) const { return Type{dtype, shape, v}; }
};

/// `f32[8, 4]`, no variance.
std::string shape_type_str(DType dtype, const Shape &shape);
/// `f32[8, 4]{i, j}` (the braces omitted when invariant), axes named from `mesh`.
std::string type_str(const Type &type, const rt::Mesh &mesh);
/// `{i, j}` — or `{}` for the empty set.
std::string axis_set_str(AxisSet set, const rt::Mesh &mesh);
/// `i` / `(i, j)` for an ordered axis list, as written in collectives.
std::string axis_list_str(const std::vector<int> &axes, const rt::Mesh &mesh);
/// `P(i, None)` / `P((data, model))` / `P()` (trailing `None`s dropped), axes named from `mesh`.
std::string spec_str(const rt::PartitionSpec &spec, const rt::Mesh &mesh);

}  // namespace spmd
