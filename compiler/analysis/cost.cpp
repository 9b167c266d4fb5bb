// analysis/cost.cpp — see cost.h.
//
// Walks the instructions of a shmap (recursing into calls and loop bodies),
// adds up flops by category, reuses collective_stats for the bytes, and
// formats the result as a table or JSON.
#include "analysis/cost.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "analysis/fusion.h"
#include "ir/loops.h"

namespace spmd {
namespace {

double numel(const Type &t) { return static_cast<double>(t.numel()); }

/// The size of each index label of an einsum's inputs (`lhs`: the spec
/// before "->").
std::map<char, int64_t> label_sizes(std::span<const Type> operands, const std::string &lhs) {
  std::map<char, int64_t> size;
  size_t operand = 0, pos = 0;
  for (char ch : lhs) {
    if (ch == ',') {
      ++operand;
      pos = 0;
      continue;
    }
    if (!std::isalpha(static_cast<unsigned char>(ch)) || operand >= operands.size()) continue;
    const Type &t = operands[operand];
    if (pos < t.shape.size()) size[ch] = std::max(size[ch], t.shape[pos]);
    ++pos;
  }
  return size;
}

/// 2 * product of the sizes of the distinct indices of an einsum.
double einsum_flops(std::span<const Type> operands, const std::string &spec) {
  double p = 2;
  for (const auto &[c, n] : label_sizes(operands, spec.substr(0, spec.find("->"))))
    p *= static_cast<double>(n);
  return p;
}

double type_bytes(const Type &t) { return numel(t) * static_cast<double>(rt::dtype_size(t.dtype)); }

void count(const ir::Module &m, const ir::Function &f, const std::vector<ir::Instr> &body,
           const std::vector<ir::ValueId> &live_out, double times, CostReport &r, int depth);

/// One fused group of elementwise ops (analysis/fusion.h) as the backends run
/// it: one loop that reads each input once and writes only the outputs, so its
/// bytes are those of its inputs and outputs, not of every member's operands
/// and results; its flops are the members'.
void count_group(const ir::Function &f, const std::vector<ir::Instr> &body,
                 const fusion::FusedGroup &group, double times, CostReport &r) {
  double flops = 0, bytes = 0, transcendentals = 0;
  std::vector<Type> operands, results;
  for (size_t i : group.members) {
    const ir::Instr &in = body[i];
    operands.clear();
    results.clear();
    for (ir::ValueId v : in.operands) operands.push_back(f.type(v));
    for (ir::ValueId v : in.results) results.push_back(f.type(v));
    flops += op_flops(in.op, operands, results, in.attrs);
    transcendentals += transcendental_elements(in.op, results);
  }
  for (ir::ValueId v : group.inputs) bytes += type_bytes(f.type(v));
  for (ir::ValueId v : group.outputs) bytes += type_bytes(f.type(v));
  r.op_bytes += times * bytes;
  r.op_seconds_sum += times * op_seconds(flops, bytes, r.profile, {}, transcendentals);
  r.elementwise_flops += times * flops;
}

/// One instruction that is not in a fused group.
void count_instr(const ir::Module &m, const ir::Function &f, const ir::Instr &in, double times,
                 CostReport &r, int depth) {
  switch (op_kind(in.op)) {
    case OpKind::Unary:
    case OpKind::Binary:
    case OpKind::Compare:
    case OpKind::Logical:
    case OpKind::Select:
    case OpKind::Reduce:
    case OpKind::Contraction: {
      std::vector<Type> operands, results;
      for (ir::ValueId v : in.operands) operands.push_back(f.type(v));
      for (ir::ValueId v : in.results) results.push_back(f.type(v));
      const double one = op_flops(in.op, operands, results, in.attrs);
      const Contraction product = op_kind(in.op) == OpKind::Contraction
                                      ? contraction_of(operands, in.attrs.einsum().spec)
                                      : Contraction{};
      double bytes = 0;
      for (const Type &t : operands) bytes += type_bytes(t);
      for (const Type &t : results) bytes += type_bytes(t);
      r.op_bytes += times * bytes;
      r.op_seconds_sum += times * op_seconds(one, bytes, r.profile, product,
                                             transcendental_elements(in.op, results));
      double flops = times * one;
      OpKind kind = op_kind(in.op);
      (kind == OpKind::Reduce        ? r.reduction_flops
       : kind == OpKind::Contraction ? r.einsum_flops
                                     : r.elementwise_flops) += flops;
      break;
    }
    case OpKind::Call: {
      const ir::Function &callee = m.functions.at(static_cast<size_t>(in.attrs.call().callee));
      count(m, callee, callee.body, callee.returns, times, r, depth + 1);
      break;
    }
    case OpKind::Control:
      // for k in range(...): the body once per iteration.
      for (const ir::Region &region : in.regions)
        count(m, f, region.body, region.yields,
              times * static_cast<double>(ir::trip_count(in.attrs)), r, depth + 1);
      break;
    default:  // creation, layout, collectives: no flops
      break;
  }
}

/// A block (a function's body or a loop body whose results are `live_out`).
/// With memory_rates in the profile (the cache-aware model, docs/sharding.md,
/// "Hardware profiles"), its elementwise ops are grouped as the backends fuse
/// them; otherwise each op reads and writes its own operands and results.
void count(const ir::Module &m, const ir::Function &f, const std::vector<ir::Instr> &body,
           const std::vector<ir::ValueId> &live_out, double times, CostReport &r, int depth) {
  if (depth > 1000) return;
  if (r.profile.memory_rates.empty()) {
    for (const ir::Instr &in : body) count_instr(m, f, in, times, r, depth);
    return;
  }
  const fusion::FusionPlan plan = fusion::plan_fusion(f, body, live_out);
  for (const fusion::Step &step : plan.steps) {
    if (step.is_group)
      count_group(f, body, plan.groups[step.index], times, r);
    else
      count_instr(m, f, body[step.index], times, r, depth);
  }
}

std::string fmt_num(double v) {
  char b[64];
  if (v == 0) return "0";
  if (std::abs(v) >= 1e6 || std::abs(v) < 1e-2)
    std::snprintf(b, sizeof b, "%.4g", v);
  else if (v == std::floor(v))
    std::snprintf(b, sizeof b, "%.0f", v);
  else
    std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

}  // namespace

std::string format_seconds(double s) {
  char b[64];
  if (s == 0) return "0 s";
  if (s < 1e-6)
    std::snprintf(b, sizeof b, "%.3g ns", s * 1e9);
  else if (s < 1e-3)
    std::snprintf(b, sizeof b, "%.3g us", s * 1e6);
  else if (s < 1)
    std::snprintf(b, sizeof b, "%.3g ms", s * 1e3);
  else
    std::snprintf(b, sizeof b, "%.3g s", s);
  return b;
}

std::string format_bytes(double b) {
  char out[64];
  if (b < 1024)
    std::snprintf(out, sizeof out, "%.0f B", b);
  else if (b < 1024.0 * 1024)
    std::snprintf(out, sizeof out, "%.3g KiB", b / 1024);
  else if (b < 1024.0 * 1024 * 1024)
    std::snprintf(out, sizeof out, "%.3g MiB", b / 1024 / 1024);
  else
    std::snprintf(out, sizeof out, "%.3g GiB", b / 1024 / 1024 / 1024);
  return out;
}

namespace {

std::string json_num(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

std::string json_str(const std::string &s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
      continue;
    }
    o += c;
  }
  return o + "\"";
}

bool moves_data(const std::string &op) {
  return op != "pbroadcast" && op != "pscatter" && op != "axis_index";
}

}  // namespace

const std::vector<HardwareProfile> &builtin_profiles() {
  // One GPU of an 8-GPU NVLink 4 node (NVSwitch): 450 GB/s per direction per
  // GPU, of which NCCL's all-gather / reduce-scatter reach a bus bandwidth of
  // about 370 GB/s; dense bf16 peak 989 TFLOP/s (H200 has the H100 SXM's
  // compute and NVLink; only its HBM is larger and faster, which this model
  // does not see); a few microseconds of latency per collective.
  static const std::vector<HardwareProfile> profiles = {
      {.name = "h100",
       .flops_per_s = 989e12,
       .bw_bytes_per_s = 370e9,
       .latency_s = 5e-6,
       .description = "NVIDIA H100 SXM, 8-GPU NVLink node: 989 TFLOP/s dense bf16, 370 GB/s bus "
                      "bandwidth, 5 us per collective"},
      {.name = "h200",
       .flops_per_s = 989e12,
       .bw_bytes_per_s = 370e9,
       .latency_s = 5e-6,
       .description = "NVIDIA H200 SXM, 8-GPU NVLink node: 989 TFLOP/s dense bf16, 370 GB/s bus "
                      "bandwidth, 5 us per collective"},
      // H100 nodes of 8 joined by one 400 Gb/s InfiniBand NDR port per GPU
      // (50 GB/s, of which NCCL's collectives across nodes reach about 40 GB/s
      // bus bandwidth), with about 15 us of latency per collective.
      {.name = "h100-ib",
       .flops_per_s = 989e12,
       .bw_bytes_per_s = 370e9,
       .latency_s = 5e-6,
       .description = "NVIDIA H100 SXM, 8-GPU NVLink nodes joined by InfiniBand NDR: 370 GB/s and "
                      "5 us within a node, 40 GB/s and 15 us across nodes",
       .devices_per_node = 8,
       .inter_node = LinkCost{15e-6, 40e9}},
  };
  return profiles;
}

namespace {

/// The link axis `axis` of `mesh` runs on when it is not the one within a
/// node: its named link, or the link between nodes; nullptr for within.
const LinkCost *outer_link(const HardwareProfile &p, const rt::Mesh &mesh, int axis) {
  auto named = p.axes.find(mesh.axes().at(static_cast<size_t>(axis)).name);
  if (named != p.axes.end()) return &named->second;
  if (p.devices_per_node <= 0 || !p.inter_node) return nullptr;
  // The devices that differ only in `axis` are `stride` apart; they share a
  // node when their whole block does and blocks tile the nodes.
  int64_t stride = 1;
  for (size_t a = static_cast<size_t>(axis) + 1; a < mesh.axes().size(); ++a)
    stride *= mesh.axes()[a].size;
  const int64_t block = stride * mesh.axis_size(axis);
  const bool within = block <= p.devices_per_node && p.devices_per_node % block == 0;
  return within ? nullptr : &*p.inter_node;
}

/// alpha and beta, or the figures `by` gives `op`'s kind.
LinkCost figures_for(double latency_s, double bw_bytes_per_s, const CollectiveFigures &by,
                     std::string_view op) {
  if (!by.empty())
    if (auto it = by.find(collective_kind(op)); it != by.end())
      return {it->second.latency_s, it->second.bw_bytes_per_s};
  return {latency_s, bw_bytes_per_s};
}

}  // namespace

LinkCost HardwareProfile::axis_link(const rt::Mesh &mesh, int axis) const {
  const LinkCost *outer = outer_link(*this, mesh, axis);
  return outer ? *outer : intra_node();
}

LinkCost HardwareProfile::intra_for(std::string_view op) const {
  return figures_for(latency_s, bw_bytes_per_s, intra_by_collective, op);
}

std::string_view collective_kind(std::string_view op) {
  if (op == "pmax" || op == "pmin") return "psum";
  if (op == "all_gather_invariant") return "all_gather";
  for (const std::string &kind : collective_kinds())
    if (op == kind) return op;
  return "";
}

std::string_view collective_kind(OpCode op) { return collective_kind(op_spelling(op)); }

const std::vector<std::string> &collective_kinds() {
  static const std::vector<std::string> kinds = {"psum", "all_gather", "psum_scatter", "all_to_all",
                                                 "ppermute"};
  return kinds;
}

LinkCost LinkCost::for_op(std::string_view op) const {
  return figures_for(latency_s, bw_bytes_per_s, by_collective, op);
}

bool HardwareProfile::per_collective() const {
  if (!intra_by_collective.empty() || (inter_node && !inter_node->by_collective.empty()))
    return true;
  for (const auto &[name, l] : axes)
    if (!l.by_collective.empty()) return true;
  return false;
}

LinkCost HardwareProfile::link(const rt::Mesh &mesh, std::span<const int> axes_used,
                               std::string_view op) const {
  if (axes_used.empty() || !per_axis()) return intra_for(op);
  LinkCost out{0, 0};
  bool first = true;
  for (int a : axes_used) {
    const LinkCost *outer = outer_link(*this, mesh, a);
    const LinkCost l = outer ? outer->for_op(op) : intra_for(op);
    out.latency_s = first ? l.latency_s : std::max(out.latency_s, l.latency_s);
    // 0 is "not priced" (infinitely fast): the slowest priced link bounds it.
    if (l.bw_bytes_per_s > 0)
      out.bw_bytes_per_s = out.bw_bytes_per_s > 0 ? std::min(out.bw_bytes_per_s, l.bw_bytes_per_s)
                                                  : l.bw_bytes_per_s;
    first = false;
  }
  return out;
}

std::optional<HardwareProfile> find_profile(const std::string &name) {
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const HardwareProfile &p : builtin_profiles())
    if (p.name == lower) return p;
  return std::nullopt;
}

double transcendental_elements(OpCode op, std::span<const Type> results) {
  switch (op) {
    case OpCode::Exp:
    case OpCode::Log:
    case OpCode::Sin:
    case OpCode::Cos:
    case OpCode::Tanh:
    case OpCode::Logistic:
    case OpCode::Erf:
    case OpCode::Log1p:
    case OpCode::Expm1:
    case OpCode::Cbrt:
    case OpCode::Pow:
      return numel(results[0]);
    default:
      return 0;
  }
}

double op_flops(OpCode op, std::span<const Type> operands, std::span<const Type> results,
                const Attrs &attrs) {
  switch (op_kind(op)) {
    case OpKind::Unary:
      return op == OpCode::Cast || op == OpCode::StopGradient ? 0 : numel(results[0]);
    case OpKind::Binary:
    case OpKind::Compare:
    case OpKind::Logical:
    case OpKind::Select:
      return numel(results[0]);
    case OpKind::Reduce:
      return numel(operands[0]);
    case OpKind::Random:  // a Threefry per element, counted as one op as elementwise ones are
      return numel(results[0]);
    case OpKind::Contraction:
      return einsum_flops(operands, attrs.einsum().spec);
    case OpKind::Layout:  // data movement, but scatter_add adds every update
      return op == OpCode::ScatterAdd ? numel(operands[1]) : 0;
    case OpKind::Creation:
    case OpKind::Collective:
    case OpKind::Call:
    case OpKind::Control:
    case OpKind::Effect:
      return 0;
  }
  return 0;
}

namespace {

double link_seconds(double moved_bytes, const LinkCost &link) {
  return link.latency_s + (link.bw_bytes_per_s > 0 ? moved_bytes / link.bw_bytes_per_s : 0);
}

}  // namespace

namespace {

/// The rate at `dim` in `rates` (by increasing smallest dimension, not
/// empty): interpolated on a log scale of the dimension, in proportion to it
/// below the first entry, the last entry's rate above the last.
double interpolate_rate(const std::vector<MatmulRate> &rates, double dim) {
  const MatmulRate &first = rates.front();
  if (dim <= first.smallest_dim) return first.flops_per_s * dim / first.smallest_dim;
  for (size_t k = 1; k < rates.size(); ++k) {
    const MatmulRate &lo = rates[k - 1], &hi = rates[k];
    if (dim > hi.smallest_dim) continue;
    const double t = std::log(dim / lo.smallest_dim) / std::log(hi.smallest_dim / lo.smallest_dim);
    return lo.flops_per_s + t * (hi.flops_per_s - lo.flops_per_s);
  }
  return rates.back().flops_per_s;
}

}  // namespace

double HardwareProfile::contraction_rate(double smallest_dim) const {
  if (smallest_dim <= 0 || matmul_rates.empty()) return flops_per_s;
  return interpolate_rate(matmul_rates, smallest_dim);
}

std::string HardwareProfile::layout_key(const rt::GemmShape &g) {
  std::string key{g.trans_a ? 't' : 'n', g.trans_b ? 't' : 'n', '/'};
  const int64_t smallest = std::min({g.m, g.n, g.k});
  key += g.k == smallest ? 'k' : g.m == smallest ? 'm' : 'n';
  return key;
}

double HardwareProfile::contraction_rate(const rt::GemmShape &g) const {
  if (g.batch <= 0) return flops_per_s;
  const auto smallest = static_cast<double>(std::min({g.m, g.n, g.k}));
  const auto it = matmul_layout_rates.find(layout_key(g));
  if (it == matmul_layout_rates.end() || it->second.empty()) return contraction_rate(smallest);
  std::vector<MatmulRate> rates = it->second;
  for (const MatmulRate &r : matmul_rates)
    if (r.smallest_dim > rates.back().smallest_dim) rates.push_back(r);
  return interpolate_rate(rates, smallest);
}

double HardwareProfile::memory_rate(double bytes) const {
  if (memory_rates.empty()) return mem_bw_bytes_per_s;
  if (bytes <= memory_rates.front().bytes) return memory_rates.front().bw_bytes_per_s;
  for (size_t k = 1; k < memory_rates.size(); ++k) {
    const MemoryRate &lo = memory_rates[k - 1], &hi = memory_rates[k];
    if (bytes > hi.bytes) continue;
    const double t = std::log(bytes / lo.bytes) / std::log(hi.bytes / lo.bytes);
    return lo.bw_bytes_per_s + t * (hi.bw_bytes_per_s - lo.bw_bytes_per_s);
  }
  return memory_rates.back().bw_bytes_per_s;
}

double contraction_smallest_dim(std::span<const Type> operands, const std::string &spec) {
  const rt::GemmShape g = contraction_of(operands, spec).gemm;
  return g.batch > 0 ? static_cast<double>(std::min({g.m, g.n, g.k})) : 0;
}

Contraction contraction_of(std::span<const Type> operands, const std::string &spec) {
  Contraction c;
  if (operands.size() != 2) return c;
  const rt::Shape shapes[2] = {operands[0].shape, operands[1].shape};
  c.gemm = rt::einsum_gemm_shape(spec, shapes);
  // Each copy reads and writes its elements once.
  c.copied_bytes = 2.0 * static_cast<double>(c.gemm.copied_elements) *
                   static_cast<double>(rt::dtype_size(operands[0].dtype));
  return c;
}

double op_seconds(double flops, double bytes, const HardwareProfile &profile,
                  const Contraction &product, double transcendentals) {
  const double rate = profile.contraction_rate(product.gemm);
  double compute = rate > 0 ? flops / rate : 0;
  if (product.copied_bytes > 0) {
    const double copy_bw = profile.memory_rate(product.copied_bytes);
    if (copy_bw > 0) compute += product.copied_bytes / copy_bw;
  }
  if (product.gemm.batch > 0)
    compute +=
        profile.matmul_op_s + static_cast<double>(product.gemm.batch) * profile.matmul_gemm_s;
  if (profile.transcendental_rate > 0) compute += transcendentals / profile.transcendental_rate;
  const double bw = profile.memory_rate(bytes);
  if (bw <= 0) return compute;
  return std::max(compute, bytes / bw);
}

double collective_seconds(OpCode op, double moved_bytes, const HardwareProfile &profile) {
  if (!op_communicates(op)) return 0;
  return link_seconds(moved_bytes, profile.intra_for(op_spelling(op)));
}

double collective_seconds(OpCode op, double moved_bytes, const HardwareProfile &profile,
                          const rt::Mesh &mesh, std::span<const int> axes) {
  if (!op_communicates(op)) return 0;
  return link_seconds(moved_bytes, profile.link(mesh, axes, op_spelling(op)));
}

std::optional<double> CostReport::intensity() const {
  double b = comm_bytes();
  if (b <= 0) return std::nullopt;
  return flops() / b;
}

CostReport estimate_cost(const ir::Module &module, const ir::Function &function,
                         const HardwareProfile &profile) {
  CostReport r;
  r.function = function.name;
  r.devices = static_cast<int>(module.mesh_of(function).num_devices());
  r.profile = profile;
  count(module, function, function.body, function.returns, 1.0, r, 0);
  r.comm = collective_stats(module, function);
  for (const auto &[op, s] : r.comm.by_op)
    if (moves_data(op)) r.comm_ops += s.count;
  r.profile = profile;
  r.compute_s = profile.mem_bw_bytes_per_s > 0 || !profile.memory_rates.empty() ||
                        !profile.matmul_rates.empty() || !profile.matmul_layout_rates.empty() ||
                        profile.matmul_op_s > 0 || profile.matmul_gemm_s > 0
                    ? r.op_seconds_sum
                : profile.flops_per_s > 0 ? r.flops() / profile.flops_per_s
                                          : 0;
  if (!profile.per_axis() && !profile.per_collective()) {
    r.comm_s = static_cast<double>(r.comm_ops) * profile.latency_s +
               (profile.bw_bytes_per_s > 0 ? r.comm_bytes() / profile.bw_bytes_per_s : 0);
    return r;
  }
  // Each collective on the link its axes cross, as its kind sees that link.
  const rt::Mesh &mesh = module.mesh_of(function);
  for (const CollectiveEvent &e : collective_events(module, function)) {
    if (!moves_data(e.op)) continue;
    const double times = static_cast<double>(e.times);
    r.comm_s += times * link_seconds(e.moved_bytes, profile.link(mesh, e.axis_ids, e.op));
  }
  return r;
}

std::string format_cost(const CostReport &r, const std::string &title) {
  std::ostringstream out;
  char line[256];
  out << title << " — per device, " << r.devices << " devices\n";
  std::snprintf(line, sizeof line, "  %-28s %16s\n", "flops", fmt_num(r.flops()).c_str());
  out << line;
  std::snprintf(line, sizeof line, "    %-26s %16s\n", "einsum/matmul",
                fmt_num(r.einsum_flops).c_str());
  out << line;
  std::snprintf(line, sizeof line, "    %-26s %16s\n", "elementwise",
                fmt_num(r.elementwise_flops).c_str());
  out << line;
  std::snprintf(line, sizeof line, "    %-26s %16s\n", "reductions",
                fmt_num(r.reduction_flops).c_str());
  out << line;
  std::snprintf(line, sizeof line, "  %-22s %5s %16s %16s\n", "collective", "count", "size_bytes",
                "moved_bytes");
  out << line;
  if (r.comm.by_op.empty()) out << "  (none)\n";
  for (const auto &[op, s] : r.comm.by_op) {
    std::snprintf(line, sizeof line, "  %-22s %5lld %16s %16s\n", op.c_str(),
                  static_cast<long long>(s.count), fmt_num(s.size_bytes).c_str(),
                  fmt_num(s.moved_bytes).c_str());
    out << line;
  }
  std::snprintf(line, sizeof line, "  %-28s %16s\n", "communication (bytes)",
                fmt_num(r.comm_bytes()).c_str());
  out << line;
  auto ai = r.intensity();
  std::snprintf(line, sizeof line, "  %-28s %16s\n", "arithmetic intensity",
                ai ? (fmt_num(*ai) + " flop/B").c_str() : "none (no communication)");
  out << line;
  const HardwareProfile &p = r.profile;
  out << "  estimate on " << p.name << ": " << fmt_num(p.flops_per_s) << " flop/s, "
      << fmt_num(p.bw_bytes_per_s) << " B/s, alpha " << format_seconds(p.latency_s)
      << " (hardware intensity "
      << (p.bw_bytes_per_s > 0 ? fmt_num(p.flops_per_s / p.bw_bytes_per_s) : std::string("inf"))
      << " flop/B)\n";
  if (p.mem_bw_bytes_per_s > 0 || !p.memory_rates.empty()) {
    out << "    memory: ";
    if (p.memory_rates.empty()) {
      out << fmt_num(p.mem_bw_bytes_per_s) << " B/s";
    } else {
      for (size_t k = 0; k < p.memory_rates.size(); ++k)
        out << (k ? ", " : "") << fmt_num(p.memory_rates[k].bw_bytes_per_s) << " B/s at "
            << format_bytes(p.memory_rates[k].bytes);
    }
    out << " (each op, or fused loop of elementwise ops, the slower of its flops and its "
        << "bytes, " << fmt_num(r.op_bytes) << " bytes in all)\n";
  }
  if (!p.matmul_rates.empty() || !p.matmul_layout_rates.empty()) {
    out << "    thin products:";
    for (size_t k = 0; k < p.matmul_rates.size(); ++k)
      out << (k ? ", " : " ") << fmt_num(p.matmul_rates[k].flops_per_s) << " flop/s at "
          << fmt_num(p.matmul_rates[k].smallest_dim);
    if (!p.matmul_layout_rates.empty())
      out << (p.matmul_rates.empty() ? " " : "; ") << p.matmul_layout_rates.size()
          << " lists by gemm layout and thinnest dimension";
    out << " (each product at the rate of its smallest dimension)\n";
  }
  if (p.matmul_op_s > 0 || p.matmul_gemm_s > 0)
    out << "    each product op " << format_seconds(p.matmul_op_s) << ", each gemm in it "
        << format_seconds(p.matmul_gemm_s) << " more\n";
  if (p.devices_per_node > 0 && p.inter_node)
    out << "    across nodes of " << p.devices_per_node
        << " devices: " << fmt_num(p.inter_node->bw_bytes_per_s) << " B/s, alpha "
        << format_seconds(p.inter_node->latency_s) << "\n";
  for (const auto &[axis, l] : p.axes)
    out << "    axis " << axis << ": " << fmt_num(l.bw_bytes_per_s) << " B/s, alpha "
        << format_seconds(l.latency_s) << "\n";
  // Kinds of collective priced apart, on each link that names some.
  auto kinds = [&](const std::string &where, const CollectiveFigures &by) {
    for (const auto &[kind, f] : by)
      out << "    " << kind << where << ": " << fmt_num(f.bw_bytes_per_s) << " B/s, alpha "
          << format_seconds(f.latency_s) << "\n";
  };
  kinds("", p.intra_by_collective);
  if (p.inter_node) kinds(" across nodes", p.inter_node->by_collective);
  for (const auto &[axis, l] : p.axes) kinds(" on axis " + axis, l.by_collective);
  std::snprintf(line, sizeof line, "  %-28s %16s\n", "compute time",
                format_seconds(r.compute_s).c_str());
  out << line;
  std::snprintf(line, sizeof line,
                p.per_collective() ? "  %-28s %16s   (%lld collectives, each alpha + bytes / bw "
                                     "of its kind on the link its axes cross)\n"
                : p.per_axis()     ? "  %-28s %16s   (%lld collectives, each alpha + bytes / bw of "
                                     "the link its axes cross)\n"
                                   : "  %-28s %16s   (%lld collectives x alpha + bytes / bw)\n",
                "communication time", format_seconds(r.comm_s).c_str(),
                static_cast<long long>(r.comm_ops));
  out << line;
  std::snprintf(line, sizeof line, "  %-28s %16s   %s\n", "total (no overlap)",
                format_seconds(r.total_s()).c_str(),
                r.compute_bound() ? "compute-bound" : "communication-bound");
  out << line;
  return out.str();
}

std::string cost_json(const CostReport &r) {
  std::ostringstream o;
  o << "{\"function\": " << json_str(r.function) << ", \"devices\": " << r.devices
    << ", \"flops\": " << json_num(r.flops()) << ", \"einsum_flops\": " << json_num(r.einsum_flops)
    << ", \"elementwise_flops\": " << json_num(r.elementwise_flops)
    << ", \"reduction_flops\": " << json_num(r.reduction_flops) << ", \"collectives\": {";
  bool first = true;
  for (const auto &[op, s] : r.comm.by_op) {
    o << (first ? "" : ", ") << json_str(op) << ": {\"count\": " << s.count
      << ", \"size_bytes\": " << json_num(s.size_bytes)
      << ", \"moved_bytes\": " << json_num(s.moved_bytes) << "}";
    first = false;
  }
  auto ai = r.intensity();
  o << "}, \"comm_bytes\": " << json_num(r.comm_bytes())
    << ", \"arithmetic_intensity\": " << (ai ? json_num(*ai) : std::string("null"))
    << ", \"profile\": {\"name\": " << json_str(r.profile.name)
    << ", \"flops_per_s\": " << json_num(r.profile.flops_per_s)
    << ", \"bw_bytes_per_s\": " << json_num(r.profile.bw_bytes_per_s)
    << ", \"latency_s\": " << json_num(r.profile.latency_s) << "}"
    << ", \"compute_s\": " << json_num(r.compute_s) << ", \"comm_s\": " << json_num(r.comm_s)
    << ", \"total_s\": " << json_num(r.total_s())
    << ", \"bound\": " << (r.compute_bound() ? "\"compute\"" : "\"communication\"") << "}";
  return o.str();
}

}  // namespace spmd
