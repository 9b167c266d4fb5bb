// spmdrt/cuda.h — the CUDA + NCCL runtime the emitted CUDA programs call (spmdrt_cuda).
//
// The GPU twin of kernels.h + collectives.h + program.h, with the same call
// shapes so the CUDA emitter mirrors the CPU one: cu::Tensor is a dtype, a
// shape and a reference-counted device buffer on the calling thread's GPU;
// the non-elementwise ops are runtime functions (reductions are a real
// block-per-row tree reduction kernel, contractions call cuBLAS, layout ops
// are one generic strided-copy kernel); fused elementwise kernels are emitted
// per program. A DeviceContext belongs to one mesh position = one GPU, driven
// by one host thread of this process; its collectives go to NCCL on
// communicators split from one world communicator (ncclCommSplit), one per
// group of devices along each axis set, created on first use:
//
//   psum/pmax/pmin -> ncclAllReduce       all_gather   -> ncclAllGather (+ unpack)
//   psum_scatter   -> ncclReduceScatter (pack first)   all_to_all -> ncclAlltoAll (NCCL >= 2.28)
//                                                         or grouped ncclSend/ncclRecv
//   ppermute       -> grouped ncclSend/ncclRecv, non-receivers get zeros
//   pbroadcast, pscatter, axis_index -> no communication
//
// Every CUDA/cuBLAS/NCCL call is checked; while a collective runs its stream is
// polled together with ncclCommGetAsyncError, and an error aborts the
// communicator and throws rt::RuntimeError naming the collective and the
// .spmd line (set by the emitted code with ctx.at(...)). The process/thread
// structure is isolated in the executors: cuda_executor() drives every GPU of
// the mesh from one process, cuda_mpi_executor() one GPU per MPI process
// (ncclCommInitRank with an id broadcast by MPI); the emitted code and the
// collectives are the same.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spmdrt/kernels.h"
#include "spmdrt/mesh.h"
#include "spmdrt/program.h"
#include "spmdrt/tensor.h"

namespace spmd::cu {

using rt::DType;
using rt::ReduceOp;
using rt::Shape;

/// Throws rt::RuntimeError naming `what` when `status` is not cudaSuccess.
void check_cuda(cudaError_t status, const char *what);

class Tensor {
 public:
  Tensor() = default;
  /// Uninitialised device memory on the current GPU.
  static Tensor empty(DType dtype, Shape shape);
  static Tensor zeros(DType dtype, Shape shape);
  static Tensor full(DType dtype, Shape shape, double value);
  static Tensor scalar(DType dtype, double value) { return full(dtype, {}, value); }
  static Tensor from_host(const rt::Tensor &host);
  rt::Tensor to_host() const;

  DType dtype() const { return dtype_; }
  const Shape &shape() const { return shape_; }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * rt::dtype_size(dtype_); }
  bool defined() const { return buffer_ != nullptr; }
  /// True when no other tensor shares this one's buffer (it may be updated in place).
  bool unique() const { return buffer_ != nullptr && buffer_.use_count() == 1; }
  template <typename T>
  T *data() const {
    return reinterpret_cast<T *>(buffer_.get());
  }
  /// Same buffer, new shape (same element count).
  Tensor reshaped(Shape shape) const;

 private:
  DType dtype_ = DType::F32;
  Shape shape_;
  int64_t numel_ = 0;
  std::shared_ptr<std::byte> buffer_;
};

/// Grid and block sizes for a grid-stride loop over n elements.
dim3 grid_for(int64_t n);
inline constexpr int kBlock = 256;
/// The stream every runtime kernel of this thread runs on (set by the executor).
cudaStream_t current_stream();

Tensor iota(DType dtype, const Shape &shape, int64_t dim);
/// The random ops, as rt::random_draw, rt::random_key, rt::random_fold_in and
/// rt::key_data (every element through spmdrt/random.h: the same bits).
Tensor random_draw(rt::RandomOp op, const std::vector<Tensor> &operands, DType dtype,
                   const Shape &shape, const Shape &global);
Tensor random_key(const Tensor &seed);
Tensor random_fold_in(const Tensor &key, const Tensor &data);
Tensor key_data(const Tensor &keys);
Tensor reduce(ReduceOp op, const Tensor &x, const std::vector<int64_t> &dims);
/// argmax (Max) / argmin (Min) over `dims`: i32 indices, as rt::arg_reduce.
Tensor arg_reduce(ReduceOp op, const Tensor &x, const std::vector<int64_t> &dims);
/// One or two operands; f32/f64 via cuBLAS (transpose + batched gemm).
Tensor einsum(const std::string &spec, const std::vector<Tensor> &operands);
Tensor reshape(const Tensor &x, const Shape &shape);
Tensor transpose(const Tensor &x, const std::vector<int64_t> &perm);
/// Reverses the order of the elements along each of `dims` (as rt::reverse).
Tensor reverse(const Tensor &x, const std::vector<int64_t> &dims);
Tensor broadcast_to(const Tensor &x, const Shape &shape);
Tensor slice(const Tensor &x, const std::vector<int64_t> &start, const std::vector<int64_t> &limit,
             const std::vector<int64_t> &stride);
Tensor pad_into(const Tensor &x, const Shape &shape, const std::vector<int64_t> &start,
                const std::vector<int64_t> &stride);
Tensor concat(const std::vector<Tensor> &parts, int64_t dim);
/// Block `index` (an i32 scalar tensor) of `size` along `dim`, clamped like XLA.
Tensor dynamic_slice(const Tensor &x, const Tensor &index, int64_t dim, int64_t size);
Tensor dynamic_update_slice(const Tensor &x, const Tensor &update, const Tensor &index,
                            int64_t dim);
/// The same, writing into `x`'s own buffer when no other tensor shares it.
Tensor dynamic_update_slice(Tensor &&x, const Tensor &update, const Tensor &index, int64_t dim);
/// As rt::take and rt::scatter_add (the same bits: each element sums its
/// updates in the order of the ids).
Tensor take(const Tensor &x, const Tensor &ids, int64_t axis, rt::IndexMode mode);
Tensor scatter_add(const Tensor &x, const Tensor &updates, const Tensor &ids, int64_t axis,
                   rt::IndexMode mode);
/// Layout kernels around collectives: pack_blocks splits `dim` into n blocks and
/// makes the block index the leading dimension ([.., n*b, ..] -> [n, .., b, ..]);
/// unpack_blocks is its inverse.
Tensor pack_blocks(const Tensor &x, int64_t dim, int64_t n);
Tensor unpack_blocks(const Tensor &x, int64_t dim);

class Fabric;  // communicators of the whole mesh; defined in runtime/cuda/

class DeviceContext {
 public:
  DeviceContext(Fabric &fabric, int64_t device);
  int64_t device() const { return device_; }
  const rt::Mesh &mesh() const;
  int64_t axis_index(const std::vector<int> &axes) const;
  /// Records the .spmd location of the statement being executed (for errors).
  void at(const char *where) { where_ = where; }

  Tensor all_reduce(const Tensor &x, const std::vector<int> &axes, ReduceOp op);
  /// A combined psum/pmax/pmin: one ncclAllReduce per tensor inside one
  /// ncclGroupStart/End, so NCCL launches them together.
  std::vector<Tensor> all_reduce(const std::vector<Tensor> &xs, const std::vector<int> &axes,
                                 ReduceOp op);
  /// Gathers into a [n, ...] buffer (ncclAllGather) and unpacks when dim != 0.
  Tensor all_gather(const Tensor &x, const std::vector<int> &axes, int64_t dim, bool tiled);
  /// A combined all_gather: one ncclAllGather per tensor inside one
  /// ncclGroupStart/End, then each unpacked as by all_gather(x).
  std::vector<Tensor> all_gather(const std::vector<Tensor> &xs, const std::vector<int> &axes,
                                 int64_t dim, bool tiled);
  /// Packs blocks of `dim` to the front when dim != 0, then ncclReduceScatter.
  Tensor reduce_scatter(const Tensor &x, const std::vector<int> &axes, int64_t dim, bool tiled);
  /// A combined psum_scatter: each tensor packed, then one ncclReduceScatter
  /// per tensor inside one ncclGroupStart/End.
  std::vector<Tensor> reduce_scatter(const std::vector<Tensor> &xs, const std::vector<int> &axes,
                                     int64_t dim, bool tiled);
  Tensor all_to_all(const Tensor &x, const std::vector<int> &axes, int64_t split_dim,
                    int64_t concat_dim);
  /// Ranks are in the group over `axes` (first axis major), as on the CPU.
  Tensor ppermute(const Tensor &x, const std::vector<int> &axes,
                  const std::vector<std::pair<int64_t, int64_t>> &perm);

 private:
  Fabric *fabric_;
  int64_t device_;
  const char *where_ = "";
};

/// The in-language print on GPU `ctx` (spmdrt/debug_print.h): the values
/// are gathered over `label_axes` on the GPUs, copied to the host, and device
/// 0 writes the lines.
void debug_print(DeviceContext &ctx, std::string_view format, const std::vector<Tensor> &values,
                 const std::vector<int> &label_axes);

/// `spmdc build --check-nan` (spmdrt/debug_print.h): copies `value` to the
/// host and throws rt::NonFiniteError at a NaN or an infinity.
void check_finite(const DeviceContext &ctx, const Tensor &value, std::string_view op,
                  std::string_view where, bool invariant);

using CudaBody = std::function<std::vector<Tensor>(DeviceContext &, const std::vector<Tensor> &)>;

/// One host thread per GPU; a mesh larger than the visible GPUs is an error.
rt::ExecutorFactory cuda_executor(const std::vector<rt::ProgramFunction> &functions,
                                  const std::vector<CudaBody> &bodies);

/// One process per GPU under mpirun/srun (empty without MPI): world rank r runs
/// mesh position r on GPU `local rank` of its node (cudaSetDevice); rank 0's
/// ncclGetUniqueId is broadcast with MPI, ncclCommInitRank makes the world
/// communicator, and the axis communicators are split from it as above.
rt::ExecutorFactory cuda_mpi_executor(const std::vector<rt::ProgramFunction> &functions,
                                      const std::vector<CudaBody> &bodies);

}  // namespace spmd::cu
