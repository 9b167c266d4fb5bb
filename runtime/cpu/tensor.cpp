// runtime/cpu/tensor.cpp — Tensor storage, dtype helpers and bf16 conversion.
//
// Buffers are 64-byte aligned and reference counted (std::shared_ptr<std::byte[]>
// with an aligned operator delete); freed buffers of 256 KiB and more are kept
// (up to 256 MiB in all) for the next allocation of the same size, and each thread
// keeps a few freed buffers of each size up to 4 KiB for its own next ones. Under a
// MeterScope each buffer is counted on its thread's MemoryMeter until freed
// (--report-memory). Also home of the small shared
// helpers of internal.h (strides, errors, strided copy).
#include <algorithm>
#include <bit>
#include <cmath>

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <mutex>
#include <new>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "internal.h"
#include "spmdrt/checked.h"

namespace spmd::rt {

namespace {

constexpr std::align_val_t kAlignment{64};

/// Freed large buffers, kept for the next allocation of the same size. A
/// program allocates the same shapes every step; handing such a buffer back to
/// the C library unmaps it, and the next step pays a page fault (and the
/// kernel's zeroing) for every 4 KiB of it again.
class BufferPool {
 public:
  static constexpr size_t kMinBytes = size_t{256} << 10;  // smaller ones: malloc is fine
  static constexpr size_t kMaxKeptBytes = size_t{256} << 20;

  std::byte *take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(bytes);
    if (it == free_.end()) return nullptr;
    std::byte *p = it->second;
    free_.erase(it);
    kept_ -= bytes;
    return p;
  }
  /// False when the pool is full (the caller frees the buffer).
  bool keep(std::byte *p, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (kept_ + bytes > kMaxKeptBytes) return false;
    free_.emplace(bytes, p);
    kept_ += bytes;
    return true;
  }

 private:
  std::mutex mutex_;
  std::unordered_multimap<size_t, std::byte *> free_;
  size_t kept_ = 0;
};

BufferPool &pool() {
  static BufferPool *p = new BufferPool;  // never destroyed: tensors may outlive statics
  return *p;
}

/// Set when this thread's SmallBuffers is destroyed (a buffer freed later in the
/// thread's exit goes straight back to operator delete).
thread_local constinit bool small_buffers_gone = false;

/// Freed small buffers (up to kMaxBytes), kept by the thread that frees them for its
/// next allocation of the same size. A 64-byte-aligned operator new costs glibc a
/// memalign (an oversized chunk, split, its ends freed again), which was most of the
/// fixed cost of a tiny op (bench/kernels_bench --overhead). Bounded: kPerSize
/// buffers of each 64-byte size, under 0.5 MiB a thread at most.
class SmallBuffers {
 public:
  static constexpr size_t kMaxBytes = 4096;
  static constexpr size_t kPerSize = 4;

  SmallBuffers() = default;
  SmallBuffers(const SmallBuffers &) = delete;
  SmallBuffers &operator=(const SmallBuffers &) = delete;
  ~SmallBuffers() {
    small_buffers_gone = true;
    for (size_t i = 0; i < kSizes; ++i)
      for (size_t j = 0; j < count_[i]; ++j) ::operator delete(slots_[i][j], kAlignment);
  }
  /// A kept buffer of `rounded` bytes (a multiple of 64, at most kMaxBytes), or null.
  std::byte *take(size_t rounded) {
    const size_t i = rounded / 64 - 1;
    return count_[i] ? slots_[i][--count_[i]] : nullptr;
  }
  /// False when this size is full (the caller frees the buffer).
  bool keep(std::byte *p, size_t rounded) {
    const size_t i = rounded / 64 - 1;
    if (count_[i] == kPerSize) return false;
    slots_[i][count_[i]++] = p;
    return true;
  }

 private:
  static constexpr size_t kSizes = kMaxBytes / 64;
  std::byte *slots_[kSizes][kPerSize] = {};
  size_t count_[kSizes] = {};
};

/// This thread's SmallBuffers, or null once it has been destroyed.
SmallBuffers *small_buffers() {
  if (small_buffers_gone) return nullptr;
  thread_local SmallBuffers buffers;
  return &buffers;
}

/// The meter of this thread's innermost MeterScope (null: none).
std::shared_ptr<MemoryMeter> &current_meter() {
  thread_local std::shared_ptr<MemoryMeter> meter;
  return meter;
}

}  // namespace

void keep_freed_memory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest; setting it stops its own tuning
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
}

namespace {

std::shared_ptr<std::byte[]> allocate_buffer(size_t bytes) {
  // Always allocate at least one cache line so a zero-element tensor is defined().
  const size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  const bool pooled = rounded >= BufferPool::kMinBytes;
  const bool small = rounded <= SmallBuffers::kMaxBytes;
  std::byte *memory = nullptr;
  if (pooled) {
    memory = pool().take(rounded);
  } else if (SmallBuffers *cache = small ? small_buffers() : nullptr) {
    memory = cache->take(rounded);
  }
  if (!memory) memory = static_cast<std::byte *>(::operator new(rounded, kAlignment));
  auto release = [rounded, pooled, small](std::byte *p) {
    if (pooled && pool().keep(p, rounded)) return;
    if (SmallBuffers *cache = small ? small_buffers() : nullptr; cache && cache->keep(p, rounded))
      return;
    ::operator delete(p, kAlignment);
  };
  const std::shared_ptr<MemoryMeter> &meter = current_meter();
  if (!meter) return std::shared_ptr<std::byte[]>(memory, release);
  const auto counted = static_cast<int64_t>(bytes);
  meter->add(counted);
  return std::shared_ptr<std::byte[]>(memory, [release, meter, counted](std::byte *p) {
    meter->remove(counted);
    release(p);
  });
}

/// Throws unless `shape` is a valid shape for `element_size`-byte elements (spmdrt/checked.h).
void check_shape(const Shape &shape, size_t element_size) {
  for (int64_t dim : shape) {
    if (dim < 0) detail::fail("negative dimension in shape " + shape_str(shape));
  }
  if (!shape_fits(shape, static_cast<int64_t>(element_size)))
    detail::fail("an array of shape " + shape_str(shape) + " is too large (over 2^60 bytes)");
}

}  // namespace

void MemoryMeter::add(int64_t bytes) {
  const int64_t now = live_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  int64_t top = peak_.load(std::memory_order_relaxed);
  while (now > top && !peak_.compare_exchange_weak(top, now, std::memory_order_relaxed)) {
  }
}

void MemoryMeter::remove(int64_t bytes) { live_.fetch_sub(bytes, std::memory_order_relaxed); }

MeterScope::MeterScope(std::shared_ptr<MemoryMeter> meter)
    : previous_(std::exchange(current_meter(), std::move(meter))) {}

MeterScope::~MeterScope() { current_meter() = std::move(previous_); }

namespace detail {

std::vector<int64_t> row_major_strides(const Shape &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * shape[i + 1];
  }
  return strides;
}

void fail(const std::string &message) { throw RuntimeError(message); }

int64_t normalize_axis(int64_t axis, int64_t rank, const char *what) {
  int64_t normalized = axis < 0 ? axis + rank : axis;
  if (normalized < 0 || normalized >= rank) {
    fail(std::string(what) + ": axis " + std::to_string(axis) + " out of range for rank " +
         std::to_string(rank));
  }
  return normalized;
}

namespace {

template <size_t kSize>
void copy_inner(std::byte *dst, int64_t dst_stride, const std::byte *src, int64_t src_stride,
                int64_t count) {
  struct Elem {
    std::byte b[kSize];
  };
  auto *d = reinterpret_cast<Elem *>(dst);
  const auto *s = reinterpret_cast<const Elem *>(src);
  if (dst_stride == 1 && src_stride == 1) {
    std::memcpy(d, s, count * kSize);
  } else if (dst_stride == 1 && src_stride == 0) {
    for (int64_t i = 0; i < count; ++i) d[i] = s[0];
  } else {
    for (int64_t i = 0; i < count; ++i) d[i * dst_stride] = s[i * src_stride];
  }
}

}  // namespace

void strided_copy(std::byte *dst, std::span<const int64_t> dst_strides, const std::byte *src,
                  std::span<const int64_t> src_strides, std::span<const int64_t> extent,
                  size_t elem_size) {
  const size_t rank = extent.size();
  for (int64_t e : extent) {
    if (e == 0) return;
  }
  auto inner = [&](std::byte *d, const std::byte *s) {
    int64_t count = rank == 0 ? 1 : extent[rank - 1];
    int64_t ds = rank == 0 ? 1 : dst_strides[rank - 1];
    int64_t ss = rank == 0 ? 1 : src_strides[rank - 1];
    switch (elem_size) {
      case 1:
        return copy_inner<1>(d, ds, s, ss, count);
      case 2:
        return copy_inner<2>(d, ds, s, ss, count);
      case 4:
        return copy_inner<4>(d, ds, s, ss, count);
      case 8:
        return copy_inner<8>(d, ds, s, ss, count);
      default:
        fail("strided_copy: unsupported element size");
    }
  };
  if (rank <= 1) {
    inner(dst, src);
    return;
  }
  // Odometer over the outer rank-1 dimensions.
  std::vector<int64_t> index(rank - 1, 0);
  const auto esize = static_cast<int64_t>(elem_size);
  while (true) {
    int64_t d_off = 0, s_off = 0;
    for (size_t i = 0; i + 1 < rank; ++i) {
      d_off += index[i] * dst_strides[i];
      s_off += index[i] * src_strides[i];
    }
    inner(dst + d_off * esize, src + s_off * esize);
    int64_t dim = static_cast<int64_t>(rank) - 2;
    while (dim >= 0 && ++index[dim] == extent[dim]) index[dim--] = 0;
    if (dim < 0) break;
  }
}

}  // namespace detail

const char *dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return "f32";
    case DType::F64:
      return "f64";
    case DType::BF16:
      return "bf16";
    case DType::I32:
      return "i32";
    case DType::Bool:
      return "bool";
    case DType::Key:
      return "key";
  }
  return "?";
}

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::F32:
    case DType::I32:
      return 4;
    case DType::F64:
      return 8;
    case DType::BF16:
      return 2;
    case DType::Bool:
      return 1;
    case DType::Key:
      return 8;
  }
  return 0;
}

bool is_float(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F64 || dtype == DType::BF16;
}

int64_t num_elements(const Shape &shape) {
  if (auto n = checked_num_elements(shape)) return *n;
  check_shape(shape, 1);  // throws the reason
  return 0;
}

std::string shape_str(const Shape &shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

float bf16_to_f32(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

uint16_t f32_to_bf16(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  if (std::isnan(value)) return static_cast<uint16_t>((bits >> 16) | 0x40);  // stay a quiet NaN
  // Round to nearest, ties to even: add 0x7fff plus the lowest kept bit.
  uint32_t rounding = 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

Tensor Tensor::empty(DType dtype, Shape shape) {
  check_shape(shape, dtype_size(dtype));
  Tensor t;
  t.dtype_ = dtype;
  t.numel_ = num_elements(shape);
  t.shape_ = std::move(shape);
  t.buffer_ = allocate_buffer(t.nbytes());
  return t;
}

Tensor Tensor::zeros(DType dtype, Shape shape) {
  Tensor t = empty(dtype, std::move(shape));
  std::memset(t.raw(), 0, t.nbytes());  // all-zero bytes are 0 in every dtype
  return t;
}

Tensor Tensor::full(DType dtype, Shape shape, double value) {
  Tensor t = empty(dtype, std::move(shape));
  detail::dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    Tensor one = empty(dtype, {});
    one.set(0, value);
    T v = *one.data<T>();
    T *out = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) out[i] = v;
  });
  return t;
}

Tensor Tensor::scalar(DType dtype, double value) { return full(dtype, {}, value); }

double Tensor::get(int64_t i) const {
  if (i < 0 || i >= numel_) detail::fail("Tensor::get: index out of range");
  switch (dtype_) {
    case DType::F32:
      return data<float>()[i];
    case DType::F64:
      return data<double>()[i];
    case DType::BF16:
      return bf16_to_f32(data<uint16_t>()[i]);
    case DType::I32:
      return data<int32_t>()[i];
    case DType::Bool:
      return data<uint8_t>()[i] ? 1.0 : 0.0;
    case DType::Key:  // the 64-bit pattern (word 1 high), for printing
      return static_cast<double>(data<uint64_t>()[i]);
  }
  return 0;
}

void Tensor::set(int64_t i, double value) {
  if (i < 0 || i >= numel_) detail::fail("Tensor::set: index out of range");
  switch (dtype_) {
    case DType::F32:
      data<float>()[i] = static_cast<float>(value);
      break;
    case DType::F64:
      data<double>()[i] = value;
      break;
    case DType::BF16:
      data<uint16_t>()[i] = f32_to_bf16(static_cast<float>(value));
      break;
    case DType::I32: {
      // Truncates toward zero, saturating; NaN becomes 0.
      double v = std::isnan(value) ? 0.0 : std::trunc(value);
      v = std::clamp(v, -2147483648.0, 2147483647.0);
      data<int32_t>()[i] = static_cast<int32_t>(v);
      break;
    }
    case DType::Bool:
      data<uint8_t>()[i] = value != 0.0 ? 1 : 0;
      break;
    case DType::Key:
      detail::fail("Tensor::set: a random key is not set from a number");
  }
}

Tensor Tensor::clone() const {
  if (!defined()) return {};
  Tensor t = empty(dtype_, shape_);
  std::memcpy(t.raw(), raw(), nbytes());
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  check_shape(shape, dtype_size(dtype_));
  if (num_elements(shape) != numel_) {
    detail::fail("cannot reshape " + shape_str(shape_) + " (" + std::to_string(numel_) +
                 " elements) to " + shape_str(shape));
  }
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

bool Tensor::bitwise_equal(const Tensor &other) const {
  if (dtype_ != other.dtype_ || shape_ != other.shape_) return false;
  if (defined() != other.defined()) return false;
  return !defined() || std::memcmp(raw(), other.raw(), nbytes()) == 0;
}

}  // namespace spmd::rt
