// spmdrt/tensor.h — the host tensor shared by the interpreter and the CPU backend.
//
// A Tensor is a dtype, a shape and a reference-counted, 64-byte aligned buffer
// holding the elements in C (row-major) order. Copies share the buffer; use
// clone() for a deep copy. bf16 elements are stored as their raw 16-bit pattern
// (the upper half of an IEEE f32) and converted with bf16_to_f32 / f32_to_bf16
// (round to nearest even).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace spmd::rt {

/// Key: a random key (spmdrt/random.h), two 32-bit words stored as one 8-byte
/// element (word 0 first); only the random ops and data movement take keys.
enum class DType : uint8_t { F32, F64, BF16, I32, Bool, Key };

/// What take and scatter_add do with an index outside [0, size of the axis).
enum class IndexMode : uint8_t {
  Check,  // an error naming the index (the default)
  Fill,   // take reads zeros, scatter_add drops the update (JAX's mode="fill"
          // with fill value 0): what a device holding one block of a table
          // does with the ids of the other blocks
};

using Shape = std::vector<int64_t>;

/// Name as written in the language: "f32", "f64", "bf16", "i32", "bool", "key".
const char *dtype_name(DType dtype);
/// Bytes per element (bool is one byte holding 0 or 1).
size_t dtype_size(DType dtype);
bool is_float(DType dtype);

/// The element count of `shape`; throws RuntimeError when the shape is not a
/// valid array shape (a negative dimension, or over 2^60 bytes: spmdrt/checked.h).
int64_t num_elements(const Shape &shape);
std::string shape_str(const Shape &shape);  // "[8, 4]"

float bf16_to_f32(uint16_t bits);
uint16_t f32_to_bf16(float value);

/// Errors raised by the runtime (bad shapes, collective misuse, I/O). The
/// message is complete and user-facing.
class RuntimeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The bytes of tensor buffers one device holds, now and at most
/// (`--report-memory`): a buffer counts its elements' bytes (not the
/// allocator's rounding) from its allocation until its last Tensor is gone.
class MemoryMeter {
 public:
  void add(int64_t bytes);
  void remove(int64_t bytes);
  int64_t live() const { return live_.load(std::memory_order_relaxed); }
  int64_t peak() const { return peak_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> live_{0}, peak_{0};
};

/// While a MeterScope lives, every tensor buffer its thread allocates is
/// counted on `meter` until the buffer is freed (on whichever thread frees
/// it). Scopes nest; a null meter counts nothing. Without a scope the
/// allocator counts nothing (and costs nothing more).
class MeterScope {
 public:
  explicit MeterScope(std::shared_ptr<MemoryMeter> meter);
  ~MeterScope();
  MeterScope(const MeterScope &) = delete;
  MeterScope &operator=(const MeterScope &) = delete;

 private:
  std::shared_ptr<MemoryMeter> previous_;
};

/// Asks the C library's allocator to keep freed memory for the next buffer:
/// buffers up to 32 MiB come from the heap instead of a fresh mmap each (whose
/// pages the kernel zero-fills on first touch and unmaps on free), and the heap
/// is not trimmed back below 256 MiB. A program allocates and frees buffers of
/// the same sizes every step; under MPI (8 processes on 2 cores) a 1 MiB
/// psum_scatter spent most of its 6.6-7.5 ms in page faults and ran in 1.6-2.3 ms
/// with this (docs/runtime.md). glibc only (mallopt); elsewhere nothing. Call
/// once at the start of a process, before its threads: executables
/// (program_main), spmdc and spmdc-profile do.
void keep_freed_memory();

class Tensor {
 public:
  Tensor() = default;
  /// Uninitialised storage of the given dtype and shape; throws RuntimeError when
  /// the shape is not valid for the dtype (spmdrt/checked.h).
  static Tensor empty(DType dtype, Shape shape);
  static Tensor zeros(DType dtype, Shape shape);
  /// A tensor of shape `shape` whose every element is `value` converted to dtype.
  static Tensor full(DType dtype, Shape shape, double value);
  /// A rank-0 tensor.
  static Tensor scalar(DType dtype, double value);

  DType dtype() const { return dtype_; }
  const Shape &shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }
  bool defined() const { return buffer_ != nullptr; }
  /// True when no other tensor shares this one's buffer (it may be updated in place).
  bool unique() const { return buffer_ != nullptr && buffer_.use_count() == 1; }

  std::byte *raw() { return buffer_.get(); }
  const std::byte *raw() const { return buffer_.get(); }
  template <typename T>
  T *data() {
    return reinterpret_cast<T *>(buffer_.get());
  }
  template <typename T>
  const T *data() const {
    return reinterpret_cast<const T *>(buffer_.get());
  }

  /// Element i (flat C-order index) converted to double; for tests and printing.
  double get(int64_t flat_index) const;
  /// Sets element i from a double, converting to the dtype.
  void set(int64_t flat_index, double value);

  Tensor clone() const;
  /// Same buffer, new shape with the same element count.
  Tensor reshaped(Shape shape) const;
  /// True when dtype, shape and every byte agree.
  bool bitwise_equal(const Tensor &other) const;

 private:
  DType dtype_ = DType::F32;
  Shape shape_;
  int64_t numel_ = 0;
  std::shared_ptr<std::byte[]> buffer_;
};

/// Deterministic pseudo-random tensor (SplitMix64 stream from `seed`, the same on
/// every platform): floats uniform in [-1, 1), i32 uniform in [-8, 8], bool fair.
Tensor random_tensor(DType dtype, const Shape &shape, uint64_t seed);
/// The box of random_tensor(dtype, global, seed) at `start` of shape `extent`,
/// made without the rest of the array (element i of the stream is computed
/// directly).
Tensor random_block(DType dtype, const Shape &global, uint64_t seed, const Shape &start,
                    const Shape &extent);

/// A short human-readable rendering, NumPy style: all elements when numel is at
/// most `max_elements`, otherwise the first and last few of each dimension with
/// "..." between them.
std::string format_tensor(const Tensor &tensor, int64_t max_elements = 1000);
/// The indices format_tensor prints along each dimension of an array of `shape`
/// (all of them, or the first and last few when it has more than max_elements).
std::vector<std::vector<int64_t>> printed_indices(const Shape &shape, int64_t max_elements);
/// format_tensor of an array of `shape` given only its printed elements:
/// `printed` is the box of printed_indices (what a process holding part of a
/// distributed array sends to the one that prints).
std::string format_printed(const Tensor &printed, const Shape &shape, int64_t max_elements);

}  // namespace spmd::rt
