// ir/value_map.h — a map from the values of one function, stored densely.
//
// Value ids are small consecutive integers (indices into Function::values),
// so passes that remember something per value (its copy in a new function, its
// tangent, its cotangent) index a vector instead of hashing: no node per
// entry, no rehashing, and neighbouring values stay in the same cache lines.
// That keeps the passes linear in practice on programs of 100k+ ops.
#pragma once

#include <stdexcept>
#include <vector>

#include "ir/ir.h"

namespace spmd::ir {

template <typename T>
class ValueMap {
 public:
  bool contains(ValueId v) const {
    return v >= 0 && static_cast<size_t>(v) < present_.size() && present_[static_cast<size_t>(v)];
  }
  /// The entry for `v`, or nullptr.
  const T *find(ValueId v) const { return contains(v) ? &data_[static_cast<size_t>(v)] : nullptr; }
  T *find(ValueId v) { return contains(v) ? &data_[static_cast<size_t>(v)] : nullptr; }
  const T &at(ValueId v) const {
    if (!contains(v)) throw std::out_of_range("ValueMap: no entry for %" + std::to_string(v));
    return data_[static_cast<size_t>(v)];
  }
  /// The entry for `v`, default-constructed first if there is none.
  T &operator[](ValueId v) {
    auto i = static_cast<size_t>(v);
    if (i >= present_.size()) {
      present_.resize(std::max(i + 1, present_.size() * 2));
      data_.resize(present_.size());
    }
    present_[i] = true;
    return data_[i];
  }
  void erase(ValueId v) {
    if (contains(v)) present_[static_cast<size_t>(v)] = false;
  }
  /// Room for values up to `n` without growing.
  void reserve(size_t n) {
    if (n > present_.size()) {
      present_.resize(n);
      data_.resize(n);
    }
  }

 private:
  std::vector<T> data_;
  std::vector<bool> present_;
};

}  // namespace spmd::ir
