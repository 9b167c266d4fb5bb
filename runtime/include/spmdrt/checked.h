// spmdrt/checked.h — overflow-checked arithmetic for sizes: element counts, byte sizes, strides.
//
// Every element count, byte size, stride and shape product in spmdc goes
// through these helpers: the type checker (a located `shape-too-large` error
// where shapes are static), the runtime's tensors and kernels, the .npy reader,
// the interpreter, and the executables `spmdc build` emits (which allocate
// through the runtime). The rule they enforce is one number:
//
//   an array shape is valid when no dimension is negative and the product of
//   its dimensions, a zero dimension counted as 1, times the element size is
//   at most kMaxArrayBytes (2^60 bytes).
//
// Counting a zero dimension as 1 bounds every partial product too, so every
// row-major stride and every byte offset into a valid array fits in int64
// with room to spare (a sum or difference of two such values cannot overflow).
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace spmd::rt {

/// The largest byte size of any array spmdc types, allocates or reads: 2^60.
inline constexpr int64_t kMaxArrayBytes = int64_t{1} << 60;

/// a * b, or nullopt when the product does not fit in int64.
constexpr std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/// a + b, or nullopt when the sum does not fit in int64.
constexpr std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/// a - b, or nullopt when the difference does not fit in int64.
constexpr std::optional<int64_t> checked_sub(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/// a * b for a, b >= 0, or INT64_MAX when the product does not fit.
constexpr int64_t saturating_mul(int64_t a, int64_t b) {
  auto r = checked_mul(a, b);
  return r ? *r : INT64_MAX;
}

/// a + b for a, b >= 0, or INT64_MAX when the sum does not fit.
constexpr int64_t saturating_add(int64_t a, int64_t b) {
  auto r = checked_add(a, b);
  return r ? *r : INT64_MAX;
}

/// How many of start, start + step, ... lie below stop (step > 0): the
/// length of the range [start, stop) by step, computed without overflow.
constexpr int64_t range_length(int64_t start, int64_t stop, int64_t step) {
  if (step <= 0 || stop <= start) return 0;
  // stop - start may not fit in int64 (e.g. -2^63 + 1 to 2^63 - 1): use uint64.
  const uint64_t span = static_cast<uint64_t>(stop) - static_cast<uint64_t>(start);
  const uint64_t n = span / static_cast<uint64_t>(step) + (span % static_cast<uint64_t>(step) != 0);
  return n > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(n);
}

/// The byte size of an array of `shape` with `element_size`-byte elements, or
/// nullopt when the shape is not valid (a negative dimension, or a size over
/// kMaxArrayBytes by the rule above). A shape with a zero dimension has size 0.
constexpr std::optional<int64_t> checked_array_bytes(std::span<const int64_t> shape,
                                                     int64_t element_size) {
  int64_t bound = element_size;  // product with zero dimensions counted as 1
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d == 0) {
      empty = true;
      continue;
    }
    auto p = checked_mul(bound, d);
    if (!p || *p > kMaxArrayBytes) return std::nullopt;
    bound = *p;
  }
  if (bound > kMaxArrayBytes) return std::nullopt;
  return empty ? 0 : bound;
}

/// The element count of `shape`, or nullopt when it is not valid (as
/// checked_array_bytes with one-byte elements).
constexpr std::optional<int64_t> checked_num_elements(std::span<const int64_t> shape) {
  return checked_array_bytes(shape, 1);
}

/// True when `shape` is a valid array shape for `element_size`-byte elements.
constexpr bool shape_fits(std::span<const int64_t> shape, int64_t element_size = 1) {
  return checked_array_bytes(shape, element_size).has_value();
}

}  // namespace spmd::rt
