// analysis/cost.h — a roofline estimate of one shmap: flops and bytes per device.
//
// estimate_cost() counts what ONE device of the mesh computes and sends when it
// runs a shmap (def calls included, as if inlined; a `for` counts its body once
// per iteration), derives the arithmetic intensity (flops per byte
// communicated) and prices both with an alpha-beta model for a hardware
// profile. It backs `spmdc cost`.
//
// Flop conventions (per device, on the local shapes of the types):
//   * elementwise ops — arithmetic, comparisons, logical ops, `where`, and the
//     transcendentals (exp, log, tanh, sigmoid, rsqrt, ...) — 1 flop per
//     element of the result; a transcendental is NOT weighted more;
//   * `cast`, layout ops (reshape, transpose, slice, concat, pad, broadcast_to,
//     dynamic slices) and creation ops (constants, full, iota): 0;
//   * reductions (sum, max, min; mean is sum then a multiply): 1 flop per
//     element of the operand (n elements reduced = n flops);
//   * einsum/matmul: 2 * the product of the sizes of all distinct indices
//     (2*M*N*K for a matmul: a multiply and an add per term);
//   * collectives: 0 flops — the additions of psum/psum_scatter are done by
//     the collective library and are bandwidth-bound; they are priced by the
//     communication term instead.
// Bytes: analysis/stats.h's convention (nccl-tests): an all-reduce moves
// 2(n-1)/n of the array per device, all-gather / reduce-scatter / all-to-all
// (n-1)/n of the large buffer, a ppermute the whole array; pbroadcast,
// pscatter and axis_index move nothing.
//
// Time model: compute = flops / peak (or, with memory bandwidth in the
// profile, per op the slower of its flops and its bytes; the elementwise ops
// the backends fuse into one loop — analysis/fusion.h — count as one op that
// reads its inputs and writes its outputs once); communication = sum over collectives
// that move data of (alpha + moved_bytes / bandwidth); the estimate is their
// sum (no overlap) and the program is compute-bound when compute >=
// communication, i.e. when its arithmetic intensity exceeds the hardware's
// (peak / bandwidth, ignoring alpha). The built-in profiles price every flop
// at the dense bf16 peak, whatever the program's dtype.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/stats.h"
#include "ir/ir.h"
#include "spmdrt/kernels.h"

namespace spmd {

/// Hardware numbers for the alpha-beta model.
/// What a collective over some devices costs: alpha + moved bytes / beta.
/// Alpha and beta of one kind of collective on a link.
struct LinkFigures {
  double latency_s = 0;
  double bw_bytes_per_s = 0;
  bool operator==(const LinkFigures &) const = default;
};

/// Figures per kind of collective ("psum", ...), looked up by a string_view.
using CollectiveFigures = std::map<std::string, LinkFigures, std::less<>>;

struct LinkCost {
  double latency_s = 0;       // alpha: fixed cost of each collective that moves data
  double bw_bytes_per_s = 0;  // achievable bus bandwidth per device (0: not priced)
  /// Per kind of collective (collective_kind(): "psum", "all_gather",
  /// "psum_scatter", "all_to_all", "ppermute"), figures that replace the two
  /// above for that kind; kinds not named use them.
  CollectiveFigures by_collective = {};
  /// This link as collectives of `op`'s kind see it (`op` spelt as in the
  /// language: "psum", "all_gather_invariant", ...; by_collective left empty).
  LinkCost for_op(std::string_view op) const;
  bool operator==(const LinkCost &) const = default;
};

/// The kind of collective `op` is for a link's figures: psum, pmax and pmin
/// are "psum", all_gather and all_gather_invariant "all_gather", and so on;
/// "" for an op that is no collective that moves data.
std::string_view collective_kind(OpCode op);
/// The same for an op spelt as in the language ("pmax", "all_gather_invariant").
std::string_view collective_kind(std::string_view op);
/// The kinds a profile may name, in order.
const std::vector<std::string> &collective_kinds();

/// The rate a device reaches on matrix products whose smallest dimension is
/// `smallest_dim` (the smallest of the rows, columns and contracted length;
/// analysis/cost.h's contraction_smallest_dim). A thin product reads each
/// element for few flops, so it runs below the peak.
struct MatmulRate {
  double smallest_dim = 0;
  double flops_per_s = 0;
  bool operator==(const MatmulRate &) const = default;
};

/// The memory bandwidth an op whose operands and results add up to `bytes`
/// reaches (per device): small ones stay in the caches, large ones stream
/// from memory.
struct MemoryRate {
  double bytes = 0;
  double bw_bytes_per_s = 0;
  bool operator==(const MemoryRate &) const = default;
};

/// A machine as the cost model sees it (docs/sharding.md, "Hardware profiles").
/// The mesh is laid over nodes row-major: device d (analysis/..., rt::Mesh's
/// numbering, the last axis fastest) sits in node d / devices_per_node. A
/// collective over a set of axes runs on the slowest link its groups cross:
/// the largest alpha and the smallest beta among those axes' links.
struct HardwareProfile {
  std::string name;
  double flops_per_s = 0;     // peak compute per device
  double bw_bytes_per_s = 0;  // within a node: bus bandwidth per device (moved bytes / s)
  double latency_s = 0;       // within a node: alpha of each collective that moves data
  std::string description;
  /// Memory bandwidth per device (bytes / s); 0: not modelled (an op costs its
  /// flops only). When set, an op that computes costs max(flops / peak, bytes
  /// it reads and writes / this): elementwise ops are bandwidth-bound.
  double mem_bw_bytes_per_s = 0;
  /// Devices per node; 0: the whole mesh is one node.
  int64_t devices_per_node = 0;
  /// The link of collectives whose groups span nodes (required when
  /// devices_per_node > 0).
  std::optional<LinkCost> inter_node = std::nullopt;
  /// Per mesh axis name: that axis's link, overriding the node rule.
  std::map<std::string, LinkCost> axes = {};
  /// Within a node, per kind of collective (LinkCost::by_collective).
  CollectiveFigures intra_by_collective = {};
  /// Measured rates of thin matrix products, by increasing smallest
  /// dimension; empty: every product runs at flops_per_s.
  std::vector<MatmulRate> matmul_rates = {};
  /// Measured rates of thin products by the layout of the gemm the CPU runtime
  /// runs and which of its dimensions is the smallest, keyed "<layout>/<thin>"
  /// (layout_key()): "nn/m", "tn/k", ... ("t": that operand read transposed in
  /// place). Each list by increasing smallest dimension; above its last entry
  /// matmul_rates takes over. A product whose key has no list: matmul_rates.
  std::map<std::string, std::vector<MatmulRate>> matmul_layout_rates = {};
  /// Measured memory bandwidths by increasing bytes an op reads and writes;
  /// empty: every op at mem_bw_bytes_per_s.
  std::vector<MemoryRate> memory_rates = {};
  /// Elements per second per device of a transcendental function (tanh, exp, log, ...,
  /// pow: transcendental_elements()), measured in cache; 0: not modelled (such an op
  /// costs one flop per element, as an add does).
  double transcendental_rate = 0;
  /// Fixed seconds of one contraction op (the runtime's einsum: reading its spec,
  /// planning the gemms, allocating the result) and of each gemm it calls (a
  /// batched product calls one per batch element), measured on tiny products;
  /// 0: not modelled. A product costs these on top of its flops.
  double matmul_op_s = 0;
  double matmul_gemm_s = 0;

  /// The flop rate of a contraction whose smallest dimension is
  /// `smallest_dim` (0: not a matrix product; flops_per_s): interpolated
  /// between matmul_rates on a log scale of the dimension, in proportion to
  /// the dimension below the first (a product that thin is bound by the bytes
  /// it reads), the last rate above the last.
  double contraction_rate(double smallest_dim) const;
  /// The flop rate of the gemms of `gemm` (batch 0: not a product;
  /// flops_per_s): interpolated in matmul_layout_rates' list for its layout
  /// and thinnest dimension, then in matmul_rates above that list's last entry;
  /// contraction_rate(smallest dimension) when the profile has no such list.
  double contraction_rate(const rt::GemmShape &gemm) const;
  /// The key of matmul_layout_rates for `gemm`: "nn", "tn", "nt" or "tt" (a
  /// "t" for each operand read transposed), "/", and "m", "n" or "k", the
  /// smallest dimension (ties: k, then m).
  static std::string layout_key(const rt::GemmShape &gemm);
  /// The memory bandwidth of an op that reads and writes `bytes`:
  /// interpolated between memory_rates on a log scale of the bytes, the first
  /// rate below the first entry and the last above the last;
  /// mem_bw_bytes_per_s without memory_rates (0: not modelled).
  double memory_rate(double bytes) const;

  LinkCost intra_node() const { return {latency_s, bw_bytes_per_s, intra_by_collective}; }
  /// The link of mesh axis `axis` of `mesh`.
  LinkCost axis_link(const rt::Mesh &mesh, int axis) const;
  /// The link within a node as collectives of `op`'s kind see it (the same as
  /// intra_node().for_op(op), without copying the per-kind figures).
  LinkCost intra_for(std::string_view op) const;
  /// The link a collective of `op` over `axes` of `mesh` runs on (intra_node()
  /// for none), as that kind of collective sees it (LinkCost::for_op; "": the
  /// links' own figures).
  LinkCost link(const rt::Mesh &mesh, std::span<const int> axes, std::string_view op = "") const;
  /// True when some axis may differ from another (nodes or per-axis links).
  bool per_axis() const { return devices_per_node > 0 || !axes.empty(); }
  /// True when some link prices some kind of collective apart.
  bool per_collective() const;
};

/// The built-in profiles: "h100" and "h200" (one 8-GPU NVLink node each) and
/// "h100-ib" (8-GPU H100 nodes joined by InfiniBand).
const std::vector<HardwareProfile> &builtin_profiles();
/// The built-in profile named `name` (case-insensitive), if any.
std::optional<HardwareProfile> find_profile(const std::string &name);

struct CostReport {
  std::string function;
  int devices = 0;
  // Flops per device, by category, and their sum.
  double einsum_flops = 0;
  double elementwise_flops = 0;
  double reduction_flops = 0;
  double flops() const { return einsum_flops + elementwise_flops + reduction_flops; }
  /// Bytes the computing ops read and write (their local operands and results).
  double op_bytes = 0;
  /// Sum over computing ops of op_seconds() (the compute time when the
  /// profile models memory bandwidth).
  double op_seconds_sum = 0;
  /// Collectives per device (counts, nccl-tests size and moved bytes).
  FunctionStats comm;
  double comm_bytes() const { return comm.total_moved_bytes(); }
  int64_t comm_ops = 0;  // collectives that move data (each pays alpha once)
  /// flops / bytes communicated; nullopt when nothing is communicated.
  std::optional<double> intensity() const;

  // The alpha-beta estimate under `profile`.
  HardwareProfile profile;
  double compute_s = 0;
  double comm_s = 0;
  double total_s() const { return compute_s + comm_s; }
  bool compute_bound() const { return compute_s >= comm_s; }
};

/// Flops of one instruction whose operands and results have these (local)
/// types, by the conventions above; 0 for calls and loops (count their bodies).
double op_flops(OpCode op, std::span<const Type> operands, std::span<const Type> results,
                const Attrs &attrs);
/// Elements of one instruction that compute a transcendental function (exp, log, sin,
/// cos, tanh, sigmoid, erf, log1p, expm1, cbrt, and pow), counted by its (local) result
/// type; 0 for every other op. Priced at HardwareProfile::transcendental_rate.
double transcendental_elements(OpCode op, std::span<const Type> results);
/// The smallest of a two-operand contraction's gemm dimensions (contraction_of):
/// the product of the sizes of the labels only the first operand keeps (its
/// rows), of those only the second keeps (columns) and of the contracted ones
/// (a label missing from a group counts 1, so a matrix-vector product's is 1);
/// batch labels (in both operands and the result) do not count. 0 for other
/// contractions.
double contraction_smallest_dim(std::span<const Type> operands, const std::string &spec);
/// A contraction as the CPU runtime computes it: its gemms
/// (rt::einsum_gemm_shape) and the bytes its copies around them read and
/// write. Default: not a product.
struct Contraction {
  rt::GemmShape gemm = {};
  double copied_bytes = 0;
};
/// The Contraction of einsum `spec` over operands of these (local) types
/// (not a product unless there are two operands).
Contraction contraction_of(std::span<const Type> operands, const std::string &spec);
/// Seconds of one computing op (or fused group): flops at the peak (for a contraction,
/// at the profile's contraction_rate of its gemms, plus its copies' bytes at the
/// memory_rate of those bytes, plus matmul_op_s and matmul_gemm_s for each gemm) plus, with a
/// transcendental_rate in the profile, its `transcendentals` elements at that rate; with memory
/// bandwidth in the profile, the larger of that and its bytes at the profile's memory_rate(bytes).
double op_seconds(double flops, double bytes, const HardwareProfile &profile,
                  const Contraction &product = {}, double transcendentals = 0);

/// Seconds of one collective that sends `moved_bytes` per device under
/// `profile`: alpha + moved_bytes / bandwidth for a collective that moves
/// data (op_communicates), 0 for pbroadcast, pscatter and axis_index.
double collective_seconds(OpCode op, double moved_bytes, const HardwareProfile &profile);
/// The same for a collective over `axes` of `mesh`, on the link they cross.
double collective_seconds(OpCode op, double moved_bytes, const HardwareProfile &profile,
                          const rt::Mesh &mesh, std::span<const int> axes);

/// Counts flops and communication of `function` (a shmap of `module`) per
/// device and prices them with `profile`.
CostReport estimate_cost(const ir::Module &module, const ir::Function &function,
                         const HardwareProfile &profile);

/// `1.2 us`, `3.4 ms`, `0 s`: seconds for people.
std::string format_seconds(double seconds);
/// `512 B`, `1.5 KiB`, `64 MiB`: bytes for people.
std::string format_bytes(double bytes);

/// A readable table of one report.
std::string format_cost(const CostReport &report, const std::string &title);
/// The report as a JSON object (no trailing newline).
std::string cost_json(const CostReport &report);

}  // namespace spmd
