// runtime/mpi/mpi_fabric.cpp — the language's collectives as MPI calls (spmdrt/mpi.h).
//
// World rank r is mesh position r. A collective over axes A runs on the
// communicator of the ranks that differ from the caller only along A:
// MPI_Comm_split(world, color = the position with A's coordinates zeroed,
// key = rank along A), made on first use and cached (every process reaches its
// first use of A at the same collective, since all run the same program).
//
// Layout around the calls is the CUDA runtime's: a gather lands in [n, ...]
// and is unpacked to the gathered dimension; reduce-scatter and all-to-all pack
// the blocks of their dimension to the front first. bf16 has no MPI reduction:
// it is widened to f32, reduced, and rounded once (as the simulated fabric
// does). Float max/min use an MPI_Op that propagates NaN like the kernels.
//
// Deterministic reductions (rank order, bit-identical to the simulated fabric):
//   all_reduce: split the flat array into n slices; MPI_Alltoallv hands every
//     rank its slice from all members; it reduces them in rank order
//     (detail::reduce_in_rank_order) and MPI_Allgatherv assembles the result.
//   reduce_scatter: MPI_Alltoall of the packed blocks, then the same reduction.
#include <mpi.h>

#include <climits>
#include <map>

#include "internal.h"
#include "spmdrt/mpi.h"

namespace spmd::rt {
namespace {

using detail::fail;

void check_mpi(int status, const char *what) {
  if (status == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(status, text, &length);
  fail(std::string(what) + " failed: " + std::string(text, length));
}

/// The MPI datatype moving elements of `dtype` (bf16 and bool as raw integers).
MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return MPI_FLOAT;
    case DType::F64:
      return MPI_DOUBLE;
    case DType::BF16:
      return MPI_UINT16_T;
    case DType::I32:
      return MPI_INT32_T;
    case DType::Bool:
      return MPI_UINT8_T;
    case DType::Key:
      return MPI_UINT64_T;
  }
  fail("unknown dtype");
}

int count_of(int64_t n, const char *op) {
  if (n > INT_MAX)
    fail(std::string(op) + ": " + std::to_string(n) +
         " elements in one MPI message; at most 2^31 - 1 are supported");
  return static_cast<int>(n);
}

/// max/min that propagate NaN like the host kernels (MPI_MAX need not).
template <typename T, bool kMax>
void nan_propagating(void *in, void *inout, int *len, MPI_Datatype *) {
  const T *a = static_cast<const T *>(in);
  T *b = static_cast<T *>(inout);
  for (int i = 0; i < *len; ++i) {
    const T x = a[i], y = b[i];
    b[i] = (x != x) ? x : (y != y) ? y : (kMax ? (x > y ? x : y) : (x < y ? x : y));
  }
}

/// Moves axis 0 of `g` ([n, x...]) to position `dim`; tiled merges it into the next.
Tensor unpack_leading(const Tensor &g, int64_t dim, bool tiled) {
  const auto rank = static_cast<int64_t>(g.shape().size());
  std::vector<int64_t> perm;
  for (int64_t d = 1; d <= dim; ++d) perm.push_back(d);
  perm.push_back(0);
  for (int64_t d = dim + 1; d < rank; ++d) perm.push_back(d);
  Tensor moved = dim == 0 ? g : transpose(g, perm);
  if (!tiled) return moved;
  Shape merged = moved.shape();
  merged[dim] *= merged[dim + 1];
  merged.erase(merged.begin() + dim + 1);
  return moved.reshaped(merged);
}

/// Splits `dim` of x into n blocks and makes the block index the leading
/// dimension: [.., n*b, ..] -> [n, .., b, ..] (contiguous per block).
Tensor pack_blocks(const Tensor &x, int64_t dim, int64_t n) {
  Shape split = x.shape();
  split[dim] /= n;
  split.insert(split.begin() + dim, n);
  if (dim == 0) return x.reshaped(split);
  std::vector<int64_t> perm{dim};
  for (int64_t d = 0; d < static_cast<int64_t>(split.size()); ++d)
    if (d != dim) perm.push_back(d);
  return transpose(x.reshaped(split), perm);
}

class MpiFabric final : public Fabric {
 public:
  MpiFabric(const Mesh &mesh, bool deterministic) : mesh_(mesh), deterministic_(deterministic) {
    check_mpi(MPI_Op_create(&nan_propagating<float, true>, 1, &max_f32_), "MPI_Op_create");
    check_mpi(MPI_Op_create(&nan_propagating<float, false>, 1, &min_f32_), "MPI_Op_create");
    check_mpi(MPI_Op_create(&nan_propagating<double, true>, 1, &max_f64_), "MPI_Op_create");
    check_mpi(MPI_Op_create(&nan_propagating<double, false>, 1, &min_f64_), "MPI_Op_create");
  }
  ~MpiFabric() override {
    for (auto &[axes, c] : comms_) MPI_Comm_free(&c);
    for (MPI_Op *op : {&max_f32_, &min_f32_, &max_f64_, &min_f64_}) MPI_Op_free(op);
  }
  MpiFabric(const MpiFabric &) = delete;
  MpiFabric &operator=(const MpiFabric &) = delete;

  const Mesh &mesh() const override { return mesh_; }

  Tensor all_reduce(int64_t device, const Tensor &x, const std::vector<int> &axes,
                    ReduceOp op) override {
    MPI_Comm c = comm(device, axes);
    if (deterministic_) return all_reduce_in_rank_order(device, x, axes, op, c);
    if (x.dtype() == DType::BF16)  // accumulate in f32, round once
      return cast(all_reduce(device, cast(x, DType::F32), axes, op), DType::BF16);
    Tensor out = Tensor::empty(x.dtype(), x.shape());
    check_mpi(MPI_Allreduce(x.raw(), out.raw(), count_of(x.numel(), "psum"), mpi_type(x.dtype()),
                            mpi_op(op, x.dtype()), c),
              "MPI_Allreduce");
    return out;
  }

  Tensor all_gather(int64_t device, const Tensor &x, const std::vector<int> &axes, int64_t dim,
                    bool tiled) override {
    MPI_Comm c = comm(device, axes);
    const int64_t n = mesh_.group_size(axes);
    Shape gathered = x.shape();
    gathered.insert(gathered.begin(), n);  // [n, ...] in rank order
    Tensor g = Tensor::empty(x.dtype(), gathered);
    const int count = count_of(x.numel(), "all_gather");
    check_mpi(
        MPI_Allgather(x.raw(), count, mpi_type(x.dtype()), g.raw(), count, mpi_type(x.dtype()), c),
        "MPI_Allgather");
    return unpack_leading(g, dim, tiled);
  }

  Tensor reduce_scatter(int64_t device, const Tensor &x, const std::vector<int> &axes, int64_t dim,
                        bool tiled) override {
    MPI_Comm c = comm(device, axes);
    const int64_t n = mesh_.group_size(axes);
    Shape out_shape = x.shape();
    if (tiled) {
      out_shape[dim] /= n;
    } else {
      out_shape.erase(out_shape.begin() + dim);
    }
    const Tensor packed = pack_blocks(x, dim, n);  // block r is contiguous
    const int count = count_of(num_elements(out_shape), "psum_scatter");
    if (deterministic_) {
      Tensor blocks = Tensor::empty(x.dtype(), packed.shape());  // [sender][my block]
      check_mpi(MPI_Alltoall(packed.raw(), count, mpi_type(x.dtype()), blocks.raw(), count,
                             mpi_type(x.dtype()), c),
                "MPI_Alltoall");
      Tensor out = Tensor::empty(x.dtype(), out_shape);
      reduce_slices(ReduceOp::Sum, blocks, n, count, out.raw());
      return out;
    }
    if (x.dtype() == DType::BF16)
      return cast(reduce_scatter(device, cast(x, DType::F32), axes, dim, tiled), DType::BF16);
    Tensor out = Tensor::empty(x.dtype(), out_shape);
    check_mpi(
        MPI_Reduce_scatter_block(packed.raw(), out.raw(), count, mpi_type(x.dtype()), MPI_SUM, c),
        "MPI_Reduce_scatter_block");
    return out;
  }

  Tensor all_to_all(int64_t device, const Tensor &x, const std::vector<int> &axes,
                    int64_t split_dim, int64_t concat_dim) override {
    MPI_Comm c = comm(device, axes);
    const int64_t n = mesh_.group_size(axes);
    const Tensor packed = pack_blocks(x, split_dim, n);  // [n, ..., b, ...]
    Tensor received = Tensor::empty(x.dtype(), packed.shape());
    const int count = count_of(x.numel() / n, "all_to_all");
    check_mpi(MPI_Alltoall(packed.raw(), count, mpi_type(x.dtype()), received.raw(), count,
                           mpi_type(x.dtype()), c),
              "MPI_Alltoall");
    // received[s] is sender s's block; concatenate along concat_dim in sender order.
    Shape stacked = x.shape();
    stacked[split_dim] /= n;
    stacked.insert(stacked.begin(), n);
    return unpack_leading(received.reshaped(stacked), concat_dim, true);
  }

  Tensor ppermute(int64_t device, const Tensor &x, const std::vector<int> &axes,
                  const PermutePairs &perm) override {
    MPI_Comm c = comm(device, axes);
    const int64_t me = mesh_.rank_in_group(device, axes);
    Tensor out = Tensor::zeros(x.dtype(), x.shape());  // non-receivers keep zeros
    const int count = count_of(x.numel(), "ppermute");
    std::vector<MPI_Request> requests;
    for (const auto &[src, dst] : perm) {
      if (dst == me) {
        requests.emplace_back();
        check_mpi(MPI_Irecv(out.raw(), count, mpi_type(x.dtype()), static_cast<int>(src), 0, c,
                            &requests.back()),
                  "MPI_Irecv");
      }
      if (src == me) {
        requests.emplace_back();
        check_mpi(MPI_Isend(x.raw(), count, mpi_type(x.dtype()), static_cast<int>(dst), 0, c,
                            &requests.back()),
                  "MPI_Isend");
      }
    }
    check_mpi(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE),
              "MPI_Waitall");
    return out;
  }

  void barrier(int64_t) override { check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

 private:
  /// The communicator of the ranks that differ from `device` only along `axes`.
  MPI_Comm comm(int64_t device, const std::vector<int> &axes) {
    auto it = comms_.find(axes);
    if (it != comms_.end()) return it->second;
    std::vector<int64_t> c = mesh_.coords(device);
    for (int a : axes) c[a] = 0;
    const int color = static_cast<int>(mesh_.device_at(c));
    const int key = static_cast<int>(mesh_.rank_in_group(device, axes));
    MPI_Comm out = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split(MPI_COMM_WORLD, color, key, &out), "MPI_Comm_split");
    comms_[axes] = out;
    return out;
  }

  MPI_Op mpi_op(ReduceOp op, DType dtype) const {
    switch (op) {
      case ReduceOp::Sum:
        return MPI_SUM;
      case ReduceOp::Max:
        return dtype == DType::F32 ? max_f32_ : dtype == DType::F64 ? max_f64_ : MPI_MAX;
      case ReduceOp::Min:
        return dtype == DType::F32 ? min_f32_ : dtype == DType::F64 ? min_f64_ : MPI_MIN;
    }
    fail("unknown reduction");
  }

  /// out = reduction in rank order of the n consecutive `count`-element slices of `slices`.
  static void reduce_slices(ReduceOp op, const Tensor &slices, int64_t n, int64_t count,
                            std::byte *out) {
    const auto bytes = static_cast<int64_t>(dtype_size(slices.dtype())) * count;
    std::vector<const std::byte *> inputs;
    for (int64_t r = 0; r < n; ++r) inputs.push_back(slices.raw() + r * bytes);
    detail::reduce_in_rank_order(op, slices.dtype(), inputs, count, out);
  }

  Tensor all_reduce_in_rank_order(int64_t device, const Tensor &x, const std::vector<int> &axes,
                                  ReduceOp op, MPI_Comm c) {
    const int64_t n = mesh_.group_size(axes);
    const int64_t me = mesh_.rank_in_group(device, axes);
    const int64_t per = (x.numel() + n - 1) / n;
    auto begin = [&](int64_t r) { return std::min(x.numel(), r * per); };
    auto length = [&](int64_t r) { return std::min(x.numel(), begin(r) + per) - begin(r); };
    std::vector<int> send_counts, send_offsets, recv_counts, recv_offsets;
    for (int64_t r = 0; r < n; ++r) {
      send_counts.push_back(count_of(length(r), "psum"));
      send_offsets.push_back(count_of(begin(r), "psum"));
      recv_counts.push_back(count_of(length(me), "psum"));
      recv_offsets.push_back(count_of(r * length(me), "psum"));
    }
    const MPI_Datatype type = mpi_type(x.dtype());
    Tensor slices = Tensor::empty(x.dtype(), {n * length(me)});  // my slice from every member
    check_mpi(MPI_Alltoallv(x.raw(), send_counts.data(), send_offsets.data(), type, slices.raw(),
                            recv_counts.data(), recv_offsets.data(), type, c),
              "MPI_Alltoallv");
    Tensor mine = Tensor::empty(x.dtype(), {length(me)});
    reduce_slices(op, slices, n, length(me), mine.raw());
    Tensor out = Tensor::empty(x.dtype(), x.shape());
    check_mpi(MPI_Allgatherv(mine.raw(), recv_counts[0], type, out.raw(), send_counts.data(),
                             send_offsets.data(), type, c),
              "MPI_Allgatherv");
    return out;
  }

  Mesh mesh_;
  bool deterministic_;
  std::map<std::vector<int>, MPI_Comm> comms_;
  MPI_Op max_f32_ = MPI_OP_NULL, min_f32_ = MPI_OP_NULL, max_f64_ = MPI_OP_NULL,
         min_f64_ = MPI_OP_NULL;
};

}  // namespace

std::unique_ptr<Fabric> make_mpi_fabric(const Mesh &mesh, bool deterministic) {
  return std::make_unique<MpiFabric>(mesh, deterministic);
}

}  // namespace spmd::rt
