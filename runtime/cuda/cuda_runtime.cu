// runtime/cuda/cuda_runtime.cu — spmdrt_cuda: device tensors, kernels, NCCL collectives, executor.
//
// Implements spmdrt/cuda.h. Layout ops share one strided N-d copy kernel
// (up to 8 dimensions, strides passed by value); reductions permute the
// reduced dimensions last and run one block per output element with a
// shared-memory tree (accumulating bf16 in f32); einsum lowers to transposes
// plus cublas{S,D}gemmStridedBatched. Collectives use one NCCL communicator
// per (axis set, group), split from a world communicator made by
// ncclCommInitAll (one process, every GPU) or ncclCommInitRank (one process per
// GPU under MPI); each call polls its stream and ncclCommGetAsyncError and
// turns a failure into an error naming the collective and the source line.
#include <cublas_v2.h>
#include <nccl.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "spmdrt/checked.h"
#include "spmdrt/cuda.h"
#include "spmdrt/debug_print.h"
#include "spmdrt/kernels.h"  // kSumLanes: the definition of a floating-point sum
#include "spmdrt/mpi.h"
#include "spmdrt/random.h"
#include "spmdrt/scalar_ops.h"

namespace spmd::cu {
namespace {

thread_local cudaStream_t tl_stream = nullptr;
thread_local cublasHandle_t tl_cublas = nullptr;

[[noreturn]] void fail(const std::string &m) { throw rt::RuntimeError(m); }

void check_nccl(ncclResult_t r, const char *what) {
  if (r != ncclSuccess && r != ncclInProgress)
    fail(std::string("NCCL error in ") + what + ": " + ncclGetErrorString(r));
}
void check_cublas(cublasStatus_t s, const char *what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    fail(std::string("cuBLAS error ") + std::to_string(s) + " in " + what);
}

constexpr int kMaxDims = 8;
struct CopyDesc {
  int rank;
  int64_t extent[kMaxDims];
  int64_t src_stride[kMaxDims];
  int64_t dst_stride[kMaxDims];
  int64_t src_offset, dst_offset;
};

template <typename T>
__global__ void strided_copy_kernel(const T *__restrict src, T *__restrict dst, CopyDesc d,
                                    int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rem = i, s = d.src_offset, o = d.dst_offset;
    for (int k = d.rank - 1; k >= 0; --k) {
      const int64_t c = rem % d.extent[k];
      rem /= d.extent[k];
      s += c * d.src_stride[k];
      o += c * d.dst_stride[k];
    }
    dst[o] = src[s];
  }
}

std::vector<int64_t> strides_of(const Shape &s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

/// dst[dst_offset + sum c_k dst_stride_k] = src[src_offset + sum c_k src_stride_k] over `extent`.
void strided_copy(const Tensor &src, Tensor &dst, const std::vector<int64_t> &extent,
                  const std::vector<int64_t> &ss, const std::vector<int64_t> &ds, int64_t so,
                  int64_t dso) {
  if (extent.size() > kMaxDims) fail("CUDA layout kernels support at most 8 dimensions");
  CopyDesc d{};
  d.rank = static_cast<int>(extent.size());
  int64_t n = 1;
  for (size_t k = 0; k < extent.size(); ++k) {
    d.extent[k] = extent[k];
    d.src_stride[k] = ss[k];
    d.dst_stride[k] = ds[k];
    n *= extent[k];
  }
  d.src_offset = so;
  d.dst_offset = dso;
  if (n == 0) return;
  const dim3 grid = grid_for(n);
  switch (rt::dtype_size(src.dtype())) {
    case 1:
      strided_copy_kernel<<<grid, kBlock, 0, tl_stream>>>(src.data<uint8_t>(), dst.data<uint8_t>(),
                                                          d, n);
      break;
    case 2:
      strided_copy_kernel<<<grid, kBlock, 0, tl_stream>>>(src.data<uint16_t>(),
                                                          dst.data<uint16_t>(), d, n);
      break;
    case 4:
      strided_copy_kernel<<<grid, kBlock, 0, tl_stream>>>(src.data<uint32_t>(),
                                                          dst.data<uint32_t>(), d, n);
      break;
    default:
      strided_copy_kernel<<<grid, kBlock, 0, tl_stream>>>(src.data<uint64_t>(),
                                                          dst.data<uint64_t>(), d, n);
      break;
  }
  check_cuda(cudaGetLastError(), "strided copy kernel launch");
}

static_assert(kBlock == rt::kSumLanes, "a row sum's block is its lanes (spmdrt/kernels.h)");

template <typename T, typename A>
__global__ void reduce_rows_kernel(const T *__restrict x, T *__restrict out, int64_t rows,
                                   int64_t cols, int op) {
  __shared__ A part[kBlock];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    A acc = op == 0 ? A(0) : (op == 1 ? A(-INFINITY) : A(INFINITY));
    if constexpr (std::is_integral_v<A>)
      acc = op == 0 ? A(0) : (op == 1 ? A(INT32_MIN) : A(INT32_MAX));
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      A v;
      if constexpr (std::is_same_v<T, uint16_t>)
        v = rt::sc::bf16_load(x[r * cols + c]);
      else
        v = A(x[r * cols + c]);
      acc = op == 0 ? acc + v : (op == 1 ? rt::sc::max(acc, v) : rt::sc::min(acc, v));
    }
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s) {
        A a = part[threadIdx.x], b = part[threadIdx.x + s];
        part[threadIdx.x] = op == 0 ? a + b : (op == 1 ? rt::sc::max(a, b) : rt::sc::min(a, b));
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      if constexpr (std::is_same_v<T, uint16_t>)
        out[r] = rt::sc::bf16_store(static_cast<float>(part[0]));
      else
        out[r] = T(part[0]);
    }
    __syncthreads();
  }
}

/// argmax (op 1) / argmin (op 2) of each row: one thread per row scans it in
/// order, so the first extreme (or the first NaN) wins, as on the CPU.
template <typename T, typename A>
__global__ void arg_reduce_rows_kernel(const T *__restrict x, int32_t *__restrict out, int64_t rows,
                                       int64_t cols, int op) {
  for (int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; r < rows;
       r += int64_t(gridDim.x) * blockDim.x) {
    auto load = [&](int64_t c) -> A {
      if constexpr (std::is_same_v<T, uint16_t>)
        return rt::sc::bf16_load(x[r * cols + c]);
      else
        return A(x[r * cols + c]);
    };
    A best = load(0);
    int64_t best_index = 0;
    for (int64_t c = 1; c < cols && best == best; ++c) {
      A v = load(c);
      if ((op == 1 ? v > best : v < best) || v != v) {
        best = v;
        best_index = c;
      }
    }
    out[r] = static_cast<int32_t>(best_index);
  }
}

template <typename T>
__global__ void fill_kernel(T *out, int64_t n, T value) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = value;
}

template <typename T>
__global__ void iota_kernel(T *out, int64_t n, int64_t inner, int64_t extent) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t v = (i / inner) % extent;
    if constexpr (std::is_same_v<T, uint16_t>)
      out[i] = rt::sc::bf16_store(float(v));
    else
      out[i] = T(v);
  }
}

ncclDataType_t nccl_type(DType d) {
  switch (d) {
    case DType::F32:
      return ncclFloat32;
    case DType::F64:
      return ncclFloat64;
    case DType::BF16:
      return ncclBfloat16;
    case DType::I32:
      return ncclInt32;
    case DType::Bool:
      return ncclUint8;
    case DType::Key:
      return ncclUint64;
  }
  return ncclFloat32;
}

}  // namespace

void check_cuda(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    fail(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(status));
}

dim3 grid_for(int64_t n) {
  const int64_t blocks = std::min<int64_t>((n + kBlock - 1) / kBlock, 65535);
  return dim3(static_cast<unsigned>(std::max<int64_t>(blocks, 1)));
}

cudaStream_t current_stream() { return tl_stream; }

// ---- Tensor -------------------------------------------------------------------------

Tensor Tensor::empty(DType dtype, Shape shape) {
  if (!rt::shape_fits(shape, static_cast<int64_t>(rt::dtype_size(dtype))))
    fail("an array of shape " + rt::shape_str(shape) + " is too large (over 2^60 bytes)");
  Tensor t;
  t.dtype_ = dtype;
  t.numel_ = rt::num_elements(shape);
  t.shape_ = std::move(shape);
  void *p = nullptr;
  check_cuda(cudaMallocAsync(&p, std::max<size_t>(t.nbytes(), 1), tl_stream), "cudaMallocAsync");
  cudaStream_t s = tl_stream;
  t.buffer_ = std::shared_ptr<std::byte>(static_cast<std::byte *>(p),
                                         [s](std::byte *q) { cudaFreeAsync(q, s); });
  return t;
}

Tensor Tensor::zeros(DType dtype, Shape shape) {
  Tensor t = empty(dtype, std::move(shape));
  check_cuda(cudaMemsetAsync(t.data<void>(), 0, t.nbytes(), tl_stream), "cudaMemsetAsync");
  return t;
}

Tensor Tensor::full(DType dtype, Shape shape, double value) {
  rt::Tensor host = rt::Tensor::full(dtype, shape, value);
  return from_host(host);
}

Tensor Tensor::from_host(const rt::Tensor &host) {
  Tensor t = empty(host.dtype(), host.shape());
  check_cuda(
      cudaMemcpyAsync(t.data<void>(), host.raw(), host.nbytes(), cudaMemcpyHostToDevice, tl_stream),
      "host-to-device copy");
  check_cuda(cudaStreamSynchronize(tl_stream), "host-to-device copy");
  return t;
}

rt::Tensor Tensor::to_host() const {
  rt::Tensor h = rt::Tensor::empty(dtype_, shape_);
  check_cuda(cudaMemcpyAsync(h.raw(), data<void>(), nbytes(), cudaMemcpyDeviceToHost, tl_stream),
             "device-to-host copy");
  check_cuda(cudaStreamSynchronize(tl_stream), "device-to-host copy");
  return h;
}

Tensor Tensor::reshaped(Shape shape) const {
  if (rt::num_elements(shape) != numel_) fail("reshape: element count differs");
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

// ---- layout -------------------------------------------------------------------------

Tensor reshape(const Tensor &x, const Shape &shape) { return x.reshaped(shape); }

Tensor transpose(const Tensor &x, const std::vector<int64_t> &perm) {
  Shape out_shape;
  const auto in_st = strides_of(x.shape());
  std::vector<int64_t> ss;
  for (int64_t p : perm) {
    out_shape.push_back(x.shape()[p]);
    ss.push_back(in_st[p]);
  }
  Tensor out = Tensor::empty(x.dtype(), out_shape);
  strided_copy(x, out, out_shape, ss, strides_of(out_shape), 0, 0);
  return out;
}

Tensor reverse(const Tensor &x, const std::vector<int64_t> &dims) {
  auto ss = strides_of(x.shape());
  int64_t start = 0;  // element offset of the first element read
  for (int64_t d : dims) {
    if (x.shape()[d] == 0) return x;
    start += (x.shape()[d] - 1) * ss[d];
    ss[d] = -ss[d];
  }
  Tensor out = Tensor::empty(x.dtype(), x.shape());
  strided_copy(x, out, x.shape(), ss, strides_of(x.shape()), start, 0);
  return out;
}

Tensor broadcast_to(const Tensor &x, const Shape &shape) {
  const auto in_st = strides_of(x.shape());
  std::vector<int64_t> ss(shape.size(), 0);
  const size_t lead = shape.size() - x.shape().size();
  for (size_t i = 0; i < x.shape().size(); ++i)
    ss[lead + i] = x.shape()[i] == 1 && shape[lead + i] != 1 ? 0 : in_st[i];
  Tensor out = Tensor::empty(x.dtype(), shape);
  strided_copy(x, out, shape, ss, strides_of(shape), 0, 0);
  return out;
}

Tensor slice(const Tensor &x, const std::vector<int64_t> &start, const std::vector<int64_t> &limit,
             const std::vector<int64_t> &stride) {
  const auto in_st = strides_of(x.shape());
  Shape out_shape;
  std::vector<int64_t> ss;
  int64_t off = 0;
  for (size_t d = 0; d < start.size(); ++d) {
    out_shape.push_back(rt::range_length(start[d], limit[d], stride[d]));
    ss.push_back(out_shape.back() > 1 ? in_st[d] * stride[d] : 0);  // no overflow: see kernels_layout.cpp
    off += start[d] * in_st[d];
  }
  Tensor out = Tensor::empty(x.dtype(), out_shape);
  strided_copy(x, out, out_shape, ss, strides_of(out_shape), off, 0);
  return out;
}

Tensor pad_into(const Tensor &x, const Shape &shape, const std::vector<int64_t> &start,
                const std::vector<int64_t> &stride) {
  Tensor out = Tensor::zeros(x.dtype(), shape);
  const auto out_st = strides_of(shape);
  std::vector<int64_t> ds;
  int64_t off = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    ds.push_back(x.shape()[d] > 1 ? out_st[d] * stride[d] : 0);
    off += start[d] * out_st[d];
  }
  strided_copy(x, out, x.shape(), strides_of(x.shape()), ds, 0, off);
  return out;
}

Tensor concat(const std::vector<Tensor> &parts, int64_t dim) {
  Shape shape = parts.at(0).shape();
  shape[dim] = 0;
  for (const Tensor &p : parts) shape[dim] += p.shape()[dim];
  Tensor out = Tensor::empty(parts[0].dtype(), shape);
  const auto out_st = strides_of(shape);
  int64_t at = 0;
  for (const Tensor &p : parts) {
    strided_copy(p, out, p.shape(), strides_of(p.shape()), out_st, 0, at * out_st[dim]);
    at += p.shape()[dim];
  }
  return out;
}

static int64_t read_index(const Tensor &index) {
  int32_t v = 0;
  check_cuda(cudaMemcpyAsync(&v, index.data<void>(), 4, cudaMemcpyDeviceToHost, tl_stream),
             "index read");
  check_cuda(cudaStreamSynchronize(tl_stream), "index read");
  return v;
}

Tensor dynamic_slice(const Tensor &x, const Tensor &index, int64_t dim, int64_t size) {
  std::vector<int64_t> start(x.shape().size(), 0), limit = x.shape(), stride(x.shape().size(), 1);
  start[dim] = std::clamp<int64_t>(read_index(index) * size, 0, x.shape()[dim] - size);
  limit[dim] = start[dim] + size;
  return slice(x, start, limit, stride);
}

namespace {

/// Writes `update` into `out` (already holding the operand) at block `index`, clamped.
void update_in(Tensor &out, const Tensor &update, const Tensor &index, int64_t dim) {
  const int64_t size = update.shape()[dim];
  const int64_t s = std::clamp<int64_t>(read_index(index) * size, 0, out.shape()[dim] - size);
  const auto st = strides_of(out.shape());
  strided_copy(update, out, update.shape(), strides_of(update.shape()), st, 0, s * st[dim]);
}

}  // namespace

Tensor dynamic_update_slice(const Tensor &x, const Tensor &update, const Tensor &index,
                            int64_t dim) {
  Tensor out = Tensor::empty(x.dtype(), x.shape());
  check_cuda(cudaMemcpyAsync(out.data<void>(), x.data<void>(), x.nbytes(), cudaMemcpyDeviceToDevice,
                             tl_stream),
             "copy");
  update_in(out, update, index, dim);
  return out;
}

Tensor dynamic_update_slice(Tensor &&x, const Tensor &update, const Tensor &index, int64_t dim) {
  if (!x.unique()) return dynamic_update_slice(static_cast<const Tensor &>(x), update, index, dim);
  Tensor out = std::move(x);
  update_in(out, update, index, dim);
  return out;
}

// ---- take and scatter_add ------------------------------------------------------------
// x is viewed as [outer, size, inner] around the indexed axis, the gathered
// array as [outer, count, inner]. The ids are read on the host once (they are
// small: a batch of token ids): to check them (mode check) and, for
// scatter_add, to list each row's ids in order, so every output element sums
// its updates in the order of the ids, as the CPU kernel does (the same bits,
// no atomics).

namespace {

struct GatherGeometry {
  int64_t outer = 1, size = 0, inner = 1, count = 0;
};

GatherGeometry gather_geometry(const char *op, const Tensor &x, const Tensor &ids, int64_t axis) {
  if (ids.dtype() != DType::I32) fail(std::string(op) + ": the ids must be i32");
  GatherGeometry g;
  for (int64_t d = 0; d < axis; ++d) g.outer *= x.shape()[d];
  g.size = x.shape()[axis];
  for (int64_t d = axis + 1; d < static_cast<int64_t>(x.shape().size()); ++d)
    g.inner *= x.shape()[d];
  g.count = ids.numel();
  return g;
}

/// The ids on the host, with those out of range replaced by -1 (mode fill) or
/// reported (mode check).
std::vector<int32_t> host_rows(const char *op, const Tensor &ids, const GatherGeometry &g,
                               int64_t axis, rt::IndexMode mode) {
  rt::Tensor h = ids.to_host();
  std::vector<int32_t> rows(h.data<int32_t>(), h.data<int32_t>() + g.count);
  for (int32_t &r : rows)
    if (r < 0 || r >= g.size) {
      if (mode == rt::IndexMode::Check)
        fail(std::string(op) + ": index " + std::to_string(r) + " is out of range for axis " +
             std::to_string(axis) + " of size " + std::to_string(g.size) +
             " (mode=\"fill\" reads zeros instead)");
      r = -1;
    }
  return rows;
}

Tensor device_i32(const std::vector<int32_t> &v) {
  rt::Tensor h = rt::Tensor::empty(DType::I32, {static_cast<int64_t>(v.size())});
  if (!v.empty()) std::memcpy(h.raw(), v.data(), v.size() * sizeof(int32_t));
  return Tensor::from_host(h);
}

template <typename T>
__global__ void take_kernel(const T *__restrict x, const int32_t *__restrict rows,
                            T *__restrict out, GatherGeometry g, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t k = i % g.inner, j = (i / g.inner) % g.count, o = i / (g.inner * g.count);
    const int32_t r = rows[j];
    out[i] = r < 0 ? T{} : x[(o * g.size + r) * g.inner + k];
  }
}

/// One thread per element of a row some id names: adds that row's updates,
/// listed in order in order[begin[t] .. begin[t + 1]) for target row target[t].
template <typename T>
__global__ void scatter_add_kernel(T *__restrict out, const T *__restrict updates,
                                   const int32_t *__restrict target,
                                   const int32_t *__restrict begin, const int32_t *__restrict order,
                                   int64_t targets, GatherGeometry g) {
  const int64_t n = g.outer * targets * g.inner;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t k = i % g.inner, t = (i / g.inner) % targets, o = i / (g.inner * targets);
    T *y = out + (o * g.size + target[t]) * g.inner + k;
    if constexpr (std::is_same_v<T, uint16_t>) {
      float acc = rt::sc::bf16_load(*y);
      for (int32_t p = begin[t]; p < begin[t + 1]; ++p)
        acc = rt::sc::bf16_round(
            acc + rt::sc::bf16_load(updates[(o * g.count + order[p]) * g.inner + k]));
      *y = rt::sc::bf16_store(acc);
    } else {
      T acc = *y;
      for (int32_t p = begin[t]; p < begin[t + 1]; ++p)
        acc += updates[(o * g.count + order[p]) * g.inner + k];
      *y = acc;
    }
  }
}

template <typename Fn>
void dispatch_numeric(const char *op, DType d, Fn &&fn) {
  switch (d) {
    case DType::F32:
      return fn(float{});
    case DType::F64:
      return fn(double{});
    case DType::BF16:
      return fn(uint16_t{});
    case DType::I32:
      return fn(int32_t{});
    case DType::Bool:
      return fn(uint8_t{});
    case DType::Key:  // two 32-bit words: moved as one 8-byte element
      return fn(uint64_t{});
  }
  fail(std::string(op) + ": unknown dtype");
}

}  // namespace

Tensor take(const Tensor &x, const Tensor &ids, int64_t axis, rt::IndexMode mode) {
  const GatherGeometry g = gather_geometry("take", x, ids, axis);
  Shape shape(x.shape().begin(), x.shape().begin() + axis);
  shape.insert(shape.end(), ids.shape().begin(), ids.shape().end());
  shape.insert(shape.end(), x.shape().begin() + axis + 1, x.shape().end());
  Tensor out = Tensor::empty(x.dtype(), shape);
  const int64_t n = out.numel();
  if (n == 0) return out;
  const Tensor rows = device_i32(host_rows("take", ids, g, axis, mode));
  dispatch_numeric("take", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    take_kernel<<<grid_for(n), kBlock, 0, tl_stream>>>(x.data<T>(), rows.data<int32_t>(),
                                                       out.data<T>(), g, n);
  });
  check_cuda(cudaGetLastError(), "take kernel launch");
  return out;
}

Tensor scatter_add(const Tensor &x, const Tensor &updates, const Tensor &ids, int64_t axis,
                   rt::IndexMode mode) {
  if (x.dtype() == DType::Bool || x.dtype() == DType::Key)
    fail(std::string("scatter_add: cannot add ") + rt::dtype_name(x.dtype()) + " values");
  const GatherGeometry g = gather_geometry("scatter_add", x, ids, axis);
  Tensor out = Tensor::empty(x.dtype(), x.shape());
  check_cuda(cudaMemcpyAsync(out.data<void>(), x.data<void>(), x.nbytes(), cudaMemcpyDeviceToDevice,
                             tl_stream),
             "copy");
  const std::vector<int32_t> rows = host_rows("scatter_add", ids, g, axis, mode);
  // Each named row once (in first-use order), with its ids' positions in order.
  std::vector<int32_t> slot(static_cast<size_t>(g.size), -1), target, begin{0}, order;
  std::vector<std::vector<int32_t>> lists;
  for (int32_t j = 0; j < static_cast<int32_t>(rows.size()); ++j) {
    if (rows[j] < 0) continue;
    if (slot[rows[j]] < 0) {
      slot[rows[j]] = static_cast<int32_t>(target.size());
      target.push_back(rows[j]);
      lists.emplace_back();
    }
    lists[slot[rows[j]]].push_back(j);
  }
  for (const auto &l : lists) {
    order.insert(order.end(), l.begin(), l.end());
    begin.push_back(static_cast<int32_t>(order.size()));
  }
  const int64_t targets = static_cast<int64_t>(target.size());
  const int64_t n = g.outer * targets * g.inner;
  if (n == 0) return out;
  const Tensor d_target = device_i32(target), d_begin = device_i32(begin),
               d_order = device_i32(order);
  dispatch_numeric("scatter_add", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    scatter_add_kernel<<<grid_for(n), kBlock, 0, tl_stream>>>(
        out.data<T>(), updates.data<T>(), d_target.data<int32_t>(), d_begin.data<int32_t>(),
        d_order.data<int32_t>(), targets, g);
  });
  check_cuda(cudaGetLastError(), "scatter_add kernel launch");
  return out;
}

Tensor pack_blocks(const Tensor &x, int64_t dim, int64_t n) {
  // [a.., n*b, c..] -> [n, a.., b, c..]
  Shape split = x.shape();
  const int64_t b = split[dim] / n;
  split[dim] = b;
  split.insert(split.begin() + dim, n);  // [a.., n, b, c..]
  std::vector<int64_t> perm{dim};
  for (int64_t d = 0; d < static_cast<int64_t>(split.size()); ++d)
    if (d != dim) perm.push_back(d);
  return transpose(x.reshaped(split), perm);
}

Tensor unpack_blocks(const Tensor &x, int64_t dim) {
  // [n, a.., b, c..] -> [a.., n*b, c..]
  const int64_t rank = static_cast<int64_t>(x.shape().size());
  std::vector<int64_t> perm;
  for (int64_t d = 1; d <= dim; ++d) perm.push_back(d);
  perm.push_back(0);
  for (int64_t d = dim + 1; d < rank; ++d) perm.push_back(d);
  Tensor t = transpose(x, perm);  // [a.., n, b, c..]
  Shape merged = t.shape();
  merged[dim] *= merged[dim + 1];
  merged.erase(merged.begin() + dim + 1);
  return t.reshaped(merged);
}

Tensor iota(DType dtype, const Shape &shape, int64_t dim) {
  Tensor out = Tensor::empty(dtype, shape);
  const int64_t n = out.numel();
  if (n == 0) return out;
  const int64_t inner = strides_of(shape)[dim];
  switch (dtype) {
    case DType::F32:
      iota_kernel<<<grid_for(n), kBlock, 0, tl_stream>>>(out.data<float>(), n, inner, shape[dim]);
      break;
    case DType::F64:
      iota_kernel<<<grid_for(n), kBlock, 0, tl_stream>>>(out.data<double>(), n, inner, shape[dim]);
      break;
    case DType::BF16:
      iota_kernel<<<grid_for(n), kBlock, 0, tl_stream>>>(out.data<uint16_t>(), n, inner,
                                                         shape[dim]);
      break;
    case DType::I32:
      iota_kernel<<<grid_for(n), kBlock, 0, tl_stream>>>(out.data<int32_t>(), n, inner, shape[dim]);
      break;
    case DType::Bool:
      iota_kernel<<<grid_for(n), kBlock, 0, tl_stream>>>(out.data<uint8_t>(), n, inner, shape[dim]);
      break;
    case DType::Key:
      fail("iota cannot make keys");
  }
  check_cuda(cudaGetLastError(), "iota kernel launch");
  return out;
}

// ---- reductions ---------------------------------------------------------------------

/// `x` with the reduced dimensions `dims` moved innermost (in order): each
/// output element of a row reduction reads one contiguous row of `cols`.
struct ReductionRows {
  Tensor rows;      // x, transposed
  Shape out_shape;  // the kept dimensions
  int64_t cols = 1;
};

ReductionRows reduction_rows(const Tensor &x, const std::vector<int64_t> &dims) {
  ReductionRows r;
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < static_cast<int64_t>(x.shape().size()); ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) {
      perm.push_back(d);
      r.out_shape.push_back(x.shape()[d]);
    }
  for (int64_t d : dims) {
    perm.push_back(d);
    r.cols *= x.shape()[d];
  }
  r.rows = dims.empty() ? x : transpose(x, perm);
  return r;
}

Tensor reduce(ReduceOp op, const Tensor &x, const std::vector<int64_t> &dims) {
  const auto [t, out_shape, cols] = reduction_rows(x, dims);
  Tensor out = Tensor::empty(x.dtype(), out_shape);
  const int64_t rows = out.numel();
  if (rows == 0) return out;
  const int o = static_cast<int>(op);
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>(rows, 65535)));
  switch (x.dtype()) {
    // Sums accumulate in f64 (spmdrt/kernels.h's kSumLanes definition: thread j
    // of the block is lane j, and the shared-memory tree is its fold).
    case DType::F32:
      if (op == ReduceOp::Sum)
        reduce_rows_kernel<float, double>
            <<<grid, kBlock, 0, tl_stream>>>(t.data<float>(), out.data<float>(), rows, cols, o);
      else
        reduce_rows_kernel<float, float>
            <<<grid, kBlock, 0, tl_stream>>>(t.data<float>(), out.data<float>(), rows, cols, o);
      break;
    case DType::F64:
      reduce_rows_kernel<double, double>
          <<<grid, kBlock, 0, tl_stream>>>(t.data<double>(), out.data<double>(), rows, cols, o);
      break;
    case DType::BF16:
      if (op == ReduceOp::Sum)
        reduce_rows_kernel<uint16_t, double><<<grid, kBlock, 0, tl_stream>>>(
            t.data<uint16_t>(), out.data<uint16_t>(), rows, cols, o);
      else
        reduce_rows_kernel<uint16_t, float><<<grid, kBlock, 0, tl_stream>>>(
            t.data<uint16_t>(), out.data<uint16_t>(), rows, cols, o);
      break;
    case DType::I32:
      reduce_rows_kernel<int32_t, int32_t>
          <<<grid, kBlock, 0, tl_stream>>>(t.data<int32_t>(), out.data<int32_t>(), rows, cols, o);
      break;
    case DType::Bool:
      fail("CUDA target: reductions of bool are not supported yet");
  }
  check_cuda(cudaGetLastError(), "reduction kernel launch");
  return out;
}

Tensor arg_reduce(ReduceOp op, const Tensor &x, const std::vector<int64_t> &dims) {
  const auto [t, out_shape, cols] = reduction_rows(x, dims);
  if (cols == 0) fail("argmax/argmin over an empty set of elements");
  Tensor out = Tensor::empty(DType::I32, out_shape);
  const int64_t rows = out.numel();
  if (rows == 0) return out;
  const int o = static_cast<int>(op);
  const dim3 grid = grid_for(rows);
  switch (x.dtype()) {
    case DType::F32:
      arg_reduce_rows_kernel<float, float>
          <<<grid, kBlock, 0, tl_stream>>>(t.data<float>(), out.data<int32_t>(), rows, cols, o);
      break;
    case DType::F64:
      arg_reduce_rows_kernel<double, double>
          <<<grid, kBlock, 0, tl_stream>>>(t.data<double>(), out.data<int32_t>(), rows, cols, o);
      break;
    case DType::BF16:
      arg_reduce_rows_kernel<uint16_t, float>
          <<<grid, kBlock, 0, tl_stream>>>(t.data<uint16_t>(), out.data<int32_t>(), rows, cols, o);
      break;
    case DType::I32:
      arg_reduce_rows_kernel<int32_t, int32_t>
          <<<grid, kBlock, 0, tl_stream>>>(t.data<int32_t>(), out.data<int32_t>(), rows, cols, o);
      break;
    case DType::Bool:
      fail("argmax/argmin do not accept bool operands");
  }
  check_cuda(cudaGetLastError(), "argmax kernel launch");
  return out;
}

// ---- einsum via cuBLAS --------------------------------------------------------------

Tensor einsum(const std::string &spec, const std::vector<Tensor> &ops) {
  const auto arrow = spec.find("->");
  const std::string lhs = spec.substr(0, arrow), out_idx = spec.substr(arrow + 2);
  std::vector<std::string> in_idx;
  for (size_t s = 0, e; s <= lhs.size(); s = e + 1) {
    e = lhs.find(',', s);
    if (e == std::string::npos) e = lhs.size();
    in_idx.push_back(lhs.substr(s, e - s));
  }
  std::map<char, int64_t> size;
  for (size_t k = 0; k < ops.size(); ++k)
    for (size_t j = 0; j < in_idx[k].size(); ++j) size[in_idx[k][j]] = ops[k].shape()[j];
  auto sum_private = [&](const Tensor &x, const std::string &idx, const std::string &keep_in,
                         std::string &rest) {
    std::vector<int64_t> dims;
    rest.clear();
    for (size_t j = 0; j < idx.size(); ++j)
      if (keep_in.find(idx[j]) == std::string::npos && out_idx.find(idx[j]) == std::string::npos)
        dims.push_back(static_cast<int64_t>(j));
      else
        rest += idx[j];
    return dims.empty() ? x : reduce(ReduceOp::Sum, x, dims);
  };
  auto permute_to = [&](const Tensor &x, const std::string &from, const std::string &to) {
    std::vector<int64_t> perm;
    for (char c : to) perm.push_back(static_cast<int64_t>(from.find(c)));
    bool id = true;
    for (size_t i = 0; i < perm.size(); ++i) id = id && perm[i] == static_cast<int64_t>(i);
    return id ? x : transpose(x, perm);
  };
  if (ops.size() == 1) {
    std::string rest;
    Tensor r = sum_private(ops[0], in_idx[0], "", rest);
    return permute_to(r, rest, out_idx);
  }
  std::string ra, rb;
  Tensor a = sum_private(ops[0], in_idx[0], in_idx[1], ra);
  Tensor b = sum_private(ops[1], in_idx[1], in_idx[0], rb);
  std::string batch, m, k, n;
  for (char c : ra) {
    const bool in_b = rb.find(c) != std::string::npos,
               in_out = out_idx.find(c) != std::string::npos;
    (in_b ? (in_out ? batch : k) : m) += c;
  }
  for (char c : rb)
    if (ra.find(c) == std::string::npos) n += c;
  auto prod = [&](const std::string &s) {
    int64_t p = 1;
    for (char c : s) p *= size[c];
    return p;
  };
  const int64_t B = prod(batch), M = prod(m), K = prod(k), N = prod(n);
  Tensor A = permute_to(a, ra, batch + m + k), Bt = permute_to(b, rb, batch + k + n);
  Shape cshape;
  for (char c : batch + m + n) cshape.push_back(size[c]);
  Tensor C = Tensor::empty(a.dtype(), cshape);
  if (!tl_cublas) {
    check_cublas(cublasCreate(&tl_cublas), "cublasCreate");
  }
  check_cublas(cublasSetStream(tl_cublas, tl_stream), "cublasSetStream");
  // Row-major C = A B is column-major C^T = B^T A^T.
  if (a.dtype() == DType::F32) {
    const float one = 1, zero = 0;
    check_cublas(
        cublasSgemmStridedBatched(tl_cublas, CUBLAS_OP_N, CUBLAS_OP_N, int(N), int(M), int(K), &one,
                                  Bt.data<float>(), int(N), K * N, A.data<float>(), int(K), M * K,
                                  &zero, C.data<float>(), int(N), M * N, int(B)),
        "sgemm");
  } else if (a.dtype() == DType::F64) {
    const double one = 1, zero = 0;
    check_cublas(
        cublasDgemmStridedBatched(tl_cublas, CUBLAS_OP_N, CUBLAS_OP_N, int(N), int(M), int(K), &one,
                                  Bt.data<double>(), int(N), K * N, A.data<double>(), int(K), M * K,
                                  &zero, C.data<double>(), int(N), M * N, int(B)),
        "dgemm");
  } else {
    fail(std::string("CUDA target: einsum of ") + rt::dtype_name(a.dtype()) +
         " is not supported yet");
  }
  return permute_to(C, batch + m + n, out_idx);
}

// ---- NCCL fabric --------------------------------------------------------------------

class Fabric {
 public:
  /// `world[i]`: the world communicator (one rank per mesh position, rank =
  /// position) of mesh position `positions[i]`, driven by this process.
  Fabric(const rt::Mesh &mesh, std::vector<int64_t> positions, std::vector<ncclComm_t> world)
      : mesh_(mesh), positions_(std::move(positions)), world_(std::move(world)) {}
  ~Fabric() {
    for (auto &[key, comm] : split_) ncclCommDestroy(comm);
    for (ncclComm_t c : world_) ncclCommDestroy(c);
  }
  Fabric(const Fabric &) = delete;
  Fabric &operator=(const Fabric &) = delete;
  const rt::Mesh &mesh() const { return mesh_; }
  /// This device's communicator over `axes` (split from the world on first use; every
  /// device reaches its first use of an axis set at the same collective, SPMD).
  ncclComm_t comm(int64_t device, const std::vector<int> &axes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = split_.find({device, axes});
      if (it != split_.end()) return it->second;
    }
    // color: the device's coordinates off `axes`; key: its rank along them.
    std::vector<int64_t> c = mesh_.coords(device);
    for (int a : axes) c[a] = 0;
    const int color = static_cast<int>(mesh_.device_at(c));
    const int key = static_cast<int>(mesh_.rank_in_group(device, axes));
    const auto at = std::find(positions_.begin(), positions_.end(), device) - positions_.begin();
    ncclComm_t out = nullptr;
    check_nccl(ncclCommSplit(world_.at(static_cast<size_t>(at)), color, key, &out, nullptr),
               "ncclCommSplit");
    std::lock_guard<std::mutex> lock(mu_);
    split_[{device, axes}] = out;
    return out;
  }

 private:
  rt::Mesh mesh_;
  std::vector<int64_t> positions_;
  std::vector<ncclComm_t> world_;
  std::map<std::pair<int64_t, std::vector<int>>, ncclComm_t> split_;
  std::mutex mu_;
};

namespace {
/// Waits for the stream while polling NCCL's asynchronous error state.
void wait_collective(ncclComm_t comm, const char *name, const char *where) {
  const auto start = std::chrono::steady_clock::now();
  while (true) {
    cudaError_t q = cudaStreamQuery(tl_stream);
    if (q == cudaSuccess) return;
    if (q != cudaErrorNotReady) check_cuda(q, name);
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(comm, &async);
    if (async != ncclSuccess && async != ncclInProgress) {
      ncclCommAbort(comm);
      fail(std::string(name) + " failed at " + where + ": " + ncclGetErrorString(async));
    }
    if (std::chrono::steady_clock::now() - start > std::chrono::minutes(5)) {
      ncclCommAbort(comm);
      fail(std::string(name) + " at " + where + " did not finish in 5 minutes (aborted)");
    }
    std::this_thread::yield();
  }
}
ncclRedOp_t nccl_op(ReduceOp op) {
  return op == ReduceOp::Sum ? ncclSum : (op == ReduceOp::Max ? ncclMax : ncclMin);
}
}  // namespace

DeviceContext::DeviceContext(Fabric &fabric, int64_t device) : fabric_(&fabric), device_(device) {}
const rt::Mesh &DeviceContext::mesh() const { return fabric_->mesh(); }
int64_t DeviceContext::axis_index(const std::vector<int> &axes) const {
  return fabric_->mesh().rank_in_group(device_, axes);
}

Tensor DeviceContext::all_reduce(const Tensor &x, const std::vector<int> &axes, ReduceOp op) {
  ncclComm_t c = fabric_->comm(device_, axes);
  Tensor out = Tensor::empty(x.dtype(), x.shape());
  check_nccl(ncclAllReduce(x.data<void>(), out.data<void>(), x.numel(), nccl_type(x.dtype()),
                           nccl_op(op), c, tl_stream),
             "ncclAllReduce");
  wait_collective(c, "all_reduce (ncclAllReduce)", where_);
  return out;
}

std::vector<Tensor> DeviceContext::all_reduce(const std::vector<Tensor> &xs,
                                              const std::vector<int> &axes, ReduceOp op) {
  ncclComm_t c = fabric_->comm(device_, axes);
  std::vector<Tensor> out;
  for (const Tensor &x : xs) out.push_back(Tensor::empty(x.dtype(), x.shape()));
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  for (size_t i = 0; i < xs.size(); ++i)
    check_nccl(ncclAllReduce(xs[i].data<void>(), out[i].data<void>(), xs[i].numel(),
                             nccl_type(xs[i].dtype()), nccl_op(op), c, tl_stream),
               "ncclAllReduce");
  check_nccl(ncclGroupEnd(), "ncclGroupEnd");
  wait_collective(c, "combined all_reduce (grouped ncclAllReduce)", where_);
  return out;
}

namespace {
/// all_gather's result from the gathered [n, ...] buffer of x's pieces in rank order.
Tensor unpack_gathered(const Tensor &g, const Shape &x_shape, int64_t n, int64_t dim, bool tiled) {
  if (!tiled) {
    std::vector<int64_t> perm;
    for (int64_t d = 1; d <= dim; ++d) perm.push_back(d);
    perm.push_back(0);
    for (int64_t d = dim + 1; d < static_cast<int64_t>(g.shape().size()); ++d) perm.push_back(d);
    return dim == 0 ? g : transpose(g, perm);
  }
  if (dim != 0) return unpack_blocks(g, dim);
  Shape s = x_shape;
  s[0] *= n;
  return g.reshaped(s);
}

/// psum_scatter's result shape for x.
Shape scattered_shape(const Shape &x_shape, int64_t n, int64_t dim, bool tiled) {
  Shape out_shape = x_shape;
  if (tiled)
    out_shape[dim] /= n;
  else
    out_shape.erase(out_shape.begin() + dim);
  return out_shape;
}
}  // namespace

Tensor DeviceContext::all_gather(const Tensor &x, const std::vector<int> &axes, int64_t dim,
                                 bool tiled) {
  ncclComm_t c = fabric_->comm(device_, axes);
  const int64_t n = mesh().group_size(axes);
  Shape gathered = x.shape();
  gathered.insert(gathered.begin(), n);  // [n, ...] in rank order
  Tensor g = Tensor::empty(x.dtype(), gathered);
  check_nccl(
      ncclAllGather(x.data<void>(), g.data<void>(), x.numel(), nccl_type(x.dtype()), c, tl_stream),
      "ncclAllGather");
  wait_collective(c, "all_gather (ncclAllGather)", where_);
  return unpack_gathered(g, x.shape(), n, dim, tiled);
}

std::vector<Tensor> DeviceContext::all_gather(const std::vector<Tensor> &xs,
                                              const std::vector<int> &axes, int64_t dim,
                                              bool tiled) {
  ncclComm_t c = fabric_->comm(device_, axes);
  const int64_t n = mesh().group_size(axes);
  std::vector<Tensor> gathered;
  for (const Tensor &x : xs) {
    Shape g = x.shape();
    g.insert(g.begin(), n);
    gathered.push_back(Tensor::empty(x.dtype(), g));
  }
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  for (size_t i = 0; i < xs.size(); ++i)
    check_nccl(ncclAllGather(xs[i].data<void>(), gathered[i].data<void>(), xs[i].numel(),
                             nccl_type(xs[i].dtype()), c, tl_stream),
               "ncclAllGather");
  check_nccl(ncclGroupEnd(), "ncclGroupEnd");
  wait_collective(c, "combined all_gather (grouped ncclAllGather)", where_);
  std::vector<Tensor> out;
  for (size_t i = 0; i < xs.size(); ++i)
    out.push_back(unpack_gathered(gathered[i], xs[i].shape(), n, dim, tiled));
  return out;
}

Tensor DeviceContext::reduce_scatter(const Tensor &x, const std::vector<int> &axes, int64_t dim,
                                     bool tiled) {
  ncclComm_t c = fabric_->comm(device_, axes);
  const int64_t n = mesh().group_size(axes);
  Tensor packed = dim == 0 ? x : pack_blocks(x, dim, n);  // blocks to the front
  Tensor out = Tensor::empty(x.dtype(), scattered_shape(x.shape(), n, dim, tiled));
  check_nccl(ncclReduceScatter(packed.data<void>(), out.data<void>(), out.numel(),
                               nccl_type(x.dtype()), ncclSum, c, tl_stream),
             "ncclReduceScatter");
  wait_collective(c, "psum_scatter (ncclReduceScatter)", where_);
  return out;
}

std::vector<Tensor> DeviceContext::reduce_scatter(const std::vector<Tensor> &xs,
                                                  const std::vector<int> &axes, int64_t dim,
                                                  bool tiled) {
  ncclComm_t c = fabric_->comm(device_, axes);
  const int64_t n = mesh().group_size(axes);
  std::vector<Tensor> packed, out;
  for (const Tensor &x : xs) {
    packed.push_back(dim == 0 ? x : pack_blocks(x, dim, n));  // blocks to the front
    out.push_back(Tensor::empty(x.dtype(), scattered_shape(x.shape(), n, dim, tiled)));
  }
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  for (size_t i = 0; i < xs.size(); ++i)
    check_nccl(ncclReduceScatter(packed[i].data<void>(), out[i].data<void>(), out[i].numel(),
                                 nccl_type(xs[i].dtype()), ncclSum, c, tl_stream),
               "ncclReduceScatter");
  check_nccl(ncclGroupEnd(), "ncclGroupEnd");
  wait_collective(c, "combined psum_scatter (grouped ncclReduceScatter)", where_);
  return out;
}

Tensor DeviceContext::all_to_all(const Tensor &x, const std::vector<int> &axes, int64_t split_dim,
                                 int64_t concat_dim) {
  ncclComm_t c = fabric_->comm(device_, axes);
  const int64_t n = mesh().group_size(axes);
  Tensor packed = pack_blocks(x, split_dim, n);  // [n, ..., b, ...]
  Tensor recv = Tensor::empty(x.dtype(), packed.shape());
  const size_t count = static_cast<size_t>(packed.numel() / n);
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
  check_nccl(ncclAlltoAll(packed.data<void>(), recv.data<void>(), count, nccl_type(x.dtype()), c,
                          tl_stream),
             "ncclAlltoAll");
#else
  const size_t bytes = count * rt::dtype_size(x.dtype());
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  for (int64_t p = 0; p < n; ++p) {
    ncclSend(packed.data<std::byte>() + p * bytes, count, nccl_type(x.dtype()), int(p), c,
             tl_stream);
    ncclRecv(recv.data<std::byte>() + p * bytes, count, nccl_type(x.dtype()), int(p), c, tl_stream);
  }
  check_nccl(ncclGroupEnd(), "ncclGroupEnd");
#endif
  wait_collective(c, "all_to_all (ncclAlltoAll)", where_);
  // recv[s] is sender s's block; concatenate along concat_dim in sender order.
  Shape blk = x.shape();
  blk[split_dim] /= n;
  Shape stacked = blk;
  stacked.insert(stacked.begin(), n);
  return unpack_blocks(recv.reshaped(stacked), concat_dim);
}

Tensor DeviceContext::ppermute(const Tensor &x, const std::vector<int> &axes,
                               const std::vector<std::pair<int64_t, int64_t>> &perm) {
  ncclComm_t c = fabric_->comm(device_, axes);
  const int64_t me = axis_index(axes);               // the rank in the communicator over `axes`
  Tensor out = Tensor::zeros(x.dtype(), x.shape());  // non-receivers keep zeros
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  for (const auto &[src, dst] : perm) {
    if (src == me)
      check_nccl(ncclSend(x.data<void>(), x.numel(), nccl_type(x.dtype()), int(dst), c, tl_stream),
                 "ncclSend");
    if (dst == me)
      check_nccl(
          ncclRecv(out.data<void>(), x.numel(), nccl_type(x.dtype()), int(src), c, tl_stream),
          "ncclRecv");
  }
  check_nccl(ncclGroupEnd(), "ncclGroupEnd");
  wait_collective(c, "ppermute (ncclSend/ncclRecv)", where_);
  return out;
}

// ---- print ---------------------------------------------------------------------------

void debug_print(DeviceContext &ctx, std::string_view format, const std::vector<Tensor> &values,
                 const std::vector<int> &label_axes) {
  std::vector<rt::Tensor> host;
  host.reserve(values.size());
  if (label_axes.empty()) {  // invariant: device 0's copy
    if (ctx.device() != 0) return;
    for (const Tensor &v : values) host.push_back(v.to_host());
    rt::debug_print(format, host);
    return;
  }
  for (const Tensor &v : values) host.push_back(ctx.all_gather(v, label_axes, 0, false).to_host());
  if (ctx.device() == 0) rt::print_gathered(ctx.mesh(), format, host, label_axes);
}

void check_finite(const DeviceContext &ctx, const Tensor &value, std::string_view op,
                  std::string_view where, bool invariant) {
  if (invariant && ctx.device() != 0) return;
  rt::check_finite(value.to_host(), op, where, ctx.mesh(), invariant ? -1 : ctx.device());
}

// ---- executor -----------------------------------------------------------------------

namespace {

std::string deterministic_unsupported() {
  return "--deterministic is not available on the cuda target: NCCL chooses its own reduction "
         "order (run the cpu target for results bit-identical to `spmdc run`)";
}

void run_device(Fabric &fabric, const CudaBody &body, int64_t device,
                const std::vector<rt::Tensor> &locals, const rt::RunRequest &request,
                std::vector<rt::Tensor> &out, const std::function<void()> &barrier,
                rt::StepClock &clock, size_t slot, const std::function<void()> &timed_step) {
  check_cuda(cudaStreamCreate(&tl_stream), "cudaStreamCreate");
  DeviceContext ctx(fabric, device);
  std::vector<Tensor> args;
  for (const rt::Tensor &h : locals) args.push_back(Tensor::from_host(h));
  const int total = 1 + request.warmup + request.iters;
  for (int it = 0; it < total; ++it) {
    barrier();
    clock.start(slot);
    std::vector<Tensor> r = body(ctx, args);
    check_cuda(cudaStreamSynchronize(tl_stream), "kernel execution");
    clock.finish(slot);
    barrier();
    if (it > request.warmup) timed_step();
    if (it == 0)
      for (const Tensor &t : r) out.push_back(t.to_host());
  }
}

/// One process drives every GPU of the mesh: one host thread and stream per position.
class CudaThreadsExecutor final : public rt::Executor {
 public:
  CudaThreadsExecutor(const std::vector<rt::ProgramFunction> &functions,
                      const std::vector<CudaBody> &bodies)
      : functions_(functions), bodies_(bodies) {}
  const char *name() const override { return "threads"; }
  rt::Processes &processes() override { return processes_; }
  std::vector<int64_t> local_devices(const rt::Mesh &mesh) const override {
    std::vector<int64_t> all(static_cast<size_t>(mesh.num_devices()));
    for (size_t d = 0; d < all.size(); ++d) all[d] = static_cast<int64_t>(d);
    return all;
  }
  std::string check_launch(const rt::ProgramFunction &f, const rt::RunRequest &request) override {
    if (request.deterministic) return deterministic_unsupported();
    int visible = 0;
    if (cudaGetDeviceCount(&visible) != cudaSuccess) visible = 0;
    const int64_t n = f.mesh.num_devices();
    if (n > visible)
      return "the mesh of `" + f.name + "` has " + std::to_string(n) + " devices but only " +
             std::to_string(visible) + " GPU" + (visible == 1 ? " is" : "s are") +
             " visible; this process drives one GPU per mesh position (or start one process "
             "per GPU with mpirun/srun: --executor mpi)";
    return "";
  }

  std::vector<std::vector<rt::Tensor>> run(size_t fn,
                                           const std::vector<std::vector<rt::Tensor>> &locals,
                                           const rt::RunRequest &request,
                                           std::vector<double> &seconds) override {
    const rt::ProgramFunction &f = functions_.at(fn);
    const int64_t n = f.mesh.num_devices();
    std::vector<ncclComm_t> world(static_cast<size_t>(n));
    std::vector<int> devs(static_cast<size_t>(n));
    for (int d = 0; d < n; ++d) devs[d] = d;
    check_nccl(ncclCommInitAll(world.data(), static_cast<int>(n), devs.data()), "ncclCommInitAll");
    std::vector<int64_t> positions(devs.begin(), devs.end());
    Fabric fabric(f.mesh, positions, world);
    std::vector<std::vector<rt::Tensor>> out(static_cast<size_t>(n));
    std::vector<std::exception_ptr> errors(static_cast<size_t>(n));
    std::barrier sync(static_cast<std::ptrdiff_t>(n));
    std::vector<double> times;
    rt::StepClock clock(static_cast<size_t>(n));
    std::vector<std::thread> threads;
    for (int64_t d = 0; d < n; ++d)
      threads.emplace_back([&, d] {
        try {
          check_cuda(cudaSetDevice(static_cast<int>(d)), "cudaSetDevice");
          run_device(
              fabric, bodies_.at(fn), d, locals[d], request, out[d],
              [&] { sync.arrive_and_wait(); }, clock, static_cast<size_t>(d),
              [&] {
                if (d == 0) times.push_back(clock.step_seconds());
              });
        } catch (...) {
          errors[d] = std::current_exception();
          sync.arrive_and_drop();
        }
      });
    for (auto &t : threads) t.join();
    for (auto &e : errors)
      if (e) std::rethrow_exception(e);
    seconds = std::move(times);
    return out;
  }

 private:
  const std::vector<rt::ProgramFunction> &functions_;
  const std::vector<CudaBody> &bodies_;
  rt::Processes processes_;
};

}  // namespace

rt::ExecutorFactory cuda_executor(const std::vector<rt::ProgramFunction> &functions,
                                  const std::vector<CudaBody> &bodies) {
  return [&functions, &bodies] { return std::make_unique<CudaThreadsExecutor>(functions, bodies); };
}

namespace {

/// One process per GPU: world rank r is mesh position r on GPU `local rank`.
class CudaMpiExecutor final : public rt::Executor {
 public:
  CudaMpiExecutor(const std::vector<rt::ProgramFunction> &functions,
                  const std::vector<CudaBody> &bodies)
      : functions_(functions), bodies_(bodies), processes_(rt::start_mpi_processes()) {}
  const char *name() const override { return "mpi"; }
  rt::Processes &processes() override { return *processes_; }
  std::vector<int64_t> local_devices(const rt::Mesh &) const override {
    return {static_cast<int64_t>(processes_->rank())};
  }
  std::string check_launch(const rt::ProgramFunction &f, const rt::RunRequest &request) override {
    if (request.deterministic) return deterministic_unsupported();
    if (std::string e = rt::check_world_size(processes_->size(), f); !e.empty()) return e;
    int visible = 0;
    if (cudaGetDeviceCount(&visible) != cudaSuccess) visible = 0;
    gpu_ = rt::choose_gpu(processes_->local_rank(), processes_->local_size(), visible);
    return gpu_.error;
  }

  std::vector<std::vector<rt::Tensor>> run(size_t fn,
                                           const std::vector<std::vector<rt::Tensor>> &locals,
                                           const rt::RunRequest &request,
                                           std::vector<double> &seconds) override {
    const rt::ProgramFunction &f = functions_.at(fn);
    const int rank = processes_->rank();
    check_cuda(cudaSetDevice(gpu_.device), "cudaSetDevice");
    // The world communicator: rank 0's unique id, broadcast over MPI.
    ncclUniqueId id{};
    if (rank == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    std::string bytes(reinterpret_cast<const char *>(&id), sizeof id);
    processes_->broadcast(bytes);
    std::memcpy(&id, bytes.data(), sizeof id);
    ncclComm_t world = nullptr;
    check_nccl(ncclCommInitRank(&world, processes_->size(), id, rank), "ncclCommInitRank");
    Fabric fabric(f.mesh, {rank}, {world});
    std::vector<std::vector<rt::Tensor>> out(1);
    rt::StepClock clock(1);
    run_device(
        fabric, bodies_.at(fn), rank, locals.at(0), request, out[0], [&] { processes_->barrier(); },
        clock, 0, [&] { seconds.push_back(processes_->max(clock.step_seconds())); });
    return out;
  }

 private:
  const std::vector<rt::ProgramFunction> &functions_;
  const std::vector<CudaBody> &bodies_;
  std::unique_ptr<rt::MpiProcesses> processes_;
  rt::GpuChoice gpu_;  // set by check_launch
};

}  // namespace

rt::ExecutorFactory cuda_mpi_executor(const std::vector<rt::ProgramFunction> &functions,
                                      const std::vector<CudaBody> &bodies) {
  if (!rt::mpi_available()) return nullptr;
  return [&functions, &bodies] { return std::make_unique<CudaMpiExecutor>(functions, bodies); };
}

// ---- random numbers (spmdrt/random.h) ------------------------------------------------

namespace {

/// The parameters of a draw, read from the device once per call.
struct DrawParams {
  rt::rnd::Key key;
  double lo = 0, hi = 1;
  int64_t offset[8] = {};
  int64_t local_strides[8] = {};
  int64_t global_strides[8] = {};
  int rank = 0;
};

__global__ void random_draw_kernel(rt::RandomOp op, DrawParams p, void *out, int64_t n, bool f64) {
  const rt::rnd::Key high_key = rt::rnd::split_element(p.key, 0);
  const rt::rnd::Key low_key = rt::rnd::split_element(p.key, 1);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    uint64_t flat = 0;
    int64_t rest = i;
    for (int d = 0; d < p.rank; ++d) {
      const int64_t idx = rest / p.local_strides[d];
      rest -= idx * p.local_strides[d];
      flat += static_cast<uint64_t>(idx + p.offset[d]) * static_cast<uint64_t>(p.global_strides[d]);
    }
    switch (op) {
      case rt::RandomOp::Split:
        static_cast<rt::rnd::Key *>(out)[i] = rt::rnd::split_element(p.key, flat);
        break;
      case rt::RandomOp::Bits:
        static_cast<int32_t *>(out)[i] = static_cast<int32_t>(rt::rnd::bits_element(p.key, flat));
        break;
      case rt::RandomOp::Uniform:
        if (f64)
          static_cast<double *>(out)[i] =
              rt::rnd::uniform_f64(rt::rnd::element_pair(p.key, flat), p.lo, p.hi);
        else
          static_cast<float *>(out)[i] = rt::rnd::uniform_f32(
              rt::rnd::bits_element(p.key, flat), static_cast<float>(p.lo), static_cast<float>(p.hi));
        break;
      case rt::RandomOp::Normal:
        static_cast<float *>(out)[i] = rt::rnd::normal_f32(rt::rnd::bits_element(p.key, flat));
        break;
      case rt::RandomOp::Int:
        static_cast<int32_t *>(out)[i] = rt::rnd::randint_i32(
            rt::rnd::bits_element(high_key, flat), rt::rnd::bits_element(low_key, flat),
            static_cast<int32_t>(p.lo), static_cast<int32_t>(p.hi));
        break;
    }
  }
}

__global__ void random_key_kernel(const int32_t *seed, rt::rnd::Key *out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = rt::rnd::key_from_seed(seed[i]);
}

__global__ void fold_in_kernel(const rt::rnd::Key *key, const int32_t *data, rt::rnd::Key *out) {
  out[0] = rt::rnd::fold_in(key[0], data[0]);
}

}  // namespace

Tensor random_draw(rt::RandomOp op, const std::vector<Tensor> &operands, DType dtype,
                   const Shape &shape, const Shape &global) {
  const size_t params = rt::random_params(op);
  if (operands.size() < params || shape.size() > 8) fail("random draw: bad operands");
  DrawParams p;
  p.key = *reinterpret_cast<const rt::rnd::Key *>(operands[0].to_host().raw());
  if (params == 3) {
    p.lo = operands[1].to_host().get(0);
    p.hi = operands[2].to_host().get(0);
  }
  const Shape &g = global.empty() ? shape : global;
  p.rank = static_cast<int>(shape.size());
  int64_t ls = 1, gs = 1;
  for (int d = p.rank - 1; d >= 0; --d) {
    p.local_strides[d] = std::max<int64_t>(ls, 1);
    p.global_strides[d] = gs;
    ls *= shape[static_cast<size_t>(d)];
    gs *= g[static_cast<size_t>(d)];
    if (!global.empty())
      p.offset[d] = static_cast<int64_t>(operands[params + static_cast<size_t>(d)].to_host().get(0));
  }
  Tensor out = Tensor::empty(dtype, shape);
  const int64_t n = out.numel();
  if (n == 0) return out;
  random_draw_kernel<<<grid_for(n), kBlock, 0, tl_stream>>>(op, p, out.data<void>(), n,
                                                            dtype == DType::F64);
  check_cuda(cudaGetLastError(), "random draw kernel launch");
  return out;
}

Tensor random_key(const Tensor &seed) {
  Tensor out = Tensor::empty(DType::Key, seed.shape());
  const int64_t n = out.numel();
  if (n == 0) return out;
  random_key_kernel<<<grid_for(n), kBlock, 0, tl_stream>>>(seed.data<int32_t>(),
                                                           out.data<rt::rnd::Key>(), n);
  check_cuda(cudaGetLastError(), "key kernel launch");
  return out;
}

Tensor random_fold_in(const Tensor &key, const Tensor &data) {
  Tensor out = Tensor::empty(DType::Key, {});
  fold_in_kernel<<<1, 1, 0, tl_stream>>>(key.data<rt::rnd::Key>(), data.data<int32_t>(),
                                          out.data<rt::rnd::Key>());
  check_cuda(cudaGetLastError(), "fold_in kernel launch");
  return out;
}

Tensor key_data(const Tensor &keys) {
  Shape shape = keys.shape();
  shape.push_back(2);
  Tensor out = Tensor::empty(DType::I32, shape);
  check_cuda(cudaMemcpyAsync(out.data<void>(), keys.data<void>(), keys.nbytes(),
                             cudaMemcpyDeviceToDevice, tl_stream),
             "key_data copy");
  return out;
}

}  // namespace spmd::cu
