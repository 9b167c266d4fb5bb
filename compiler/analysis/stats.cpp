// analysis/stats.cpp — see stats.h.
#include "analysis/stats.h"

#include <cstdio>
#include <sstream>

#include "ir/loops.h"
#include "ops/shape_rules.h"

namespace spmd {
namespace {

double bytes_of(const Type &t) {
  return static_cast<double>(t.numel()) * static_cast<double>(rt::dtype_size(t.dtype));
}

/// Appends the collectives `body` (of `f`) runs, each `times` times per run.
void collect(const ir::Module &m, const ir::Function &f, const std::vector<ir::Instr> &body,
             int64_t times, std::vector<CollectiveEvent> &out, int depth) {
  if (depth > 1000) return;
  const rt::Mesh &mesh = m.mesh_of(f);
  for (const ir::Instr &in : body) {
    if (in.op == OpCode::Call) {
      const ir::Function &callee = m.functions.at(static_cast<size_t>(in.attrs.callee));
      collect(m, callee, callee.body, times, out, depth + 1);
      continue;
    }
    if (in.op == OpCode::For) {
      const int64_t trips = ir::trip_count(in.attrs);
      const int64_t n = trips > 0 && times > INT64_MAX / trips ? INT64_MAX : times * trips;
      collect(m, f, in.regions.at(0).body, n, out, depth + 1);
      continue;
    }
    if (op_kind(in.op) != OpKind::Collective) continue;
    double n = static_cast<double>(axes_size(mesh, in.attrs.axes));
    bool permutes = false;
    for (auto &p : in.attrs.perm) permutes |= p.first != p.second;
    // A combined psum((a, b), axes) or all_gather((a, b), ...) is one collective
    // of all its operands' (results') bytes.
    double operand_bytes = 0, result_bytes = 0;
    for (ir::ValueId v : in.operands) operand_bytes += bytes_of(f.type(v));
    for (ir::ValueId v : in.results) result_bytes += bytes_of(f.type(v));
    CollectiveTraffic t = collective_traffic(in.op, n, operand_bytes, result_bytes, permutes);
    CollectiveEvent e;
    e.op = std::string(op_spelling(in.op));
    e.axes = axis_list_str(in.attrs.axes, mesh);
    e.axis_ids.assign(in.attrs.axes.begin(), in.attrs.axes.end());
    for (ir::ValueId v : in.operands)
      e.operand_types += (e.operand_types.empty() ? "" : ", ") + type_str(f.type(v), mesh);
    e.size_bytes = t.size_bytes;
    e.moved_bytes = t.moved_bytes;
    e.values = in.operands.empty() ? 1 : static_cast<int64_t>(in.operands.size());
    e.times = times;
    e.span = in.span;
    out.push_back(std::move(e));
  }
}

}  // namespace

CollectiveTraffic collective_traffic(OpCode op, double n, double operand_bytes, double result_bytes,
                                     bool permutes) {
  CollectiveTraffic t;
  switch (op) {
    case OpCode::Psum:
    case OpCode::Pmax:
    case OpCode::Pmin:
      t.size_bytes = operand_bytes;
      t.moved_bytes = 2 * (n - 1) / n * t.size_bytes;
      break;
    case OpCode::AllGather:
    case OpCode::AllGatherInvariant:
      t.size_bytes = result_bytes;
      t.moved_bytes = (n - 1) / n * t.size_bytes;
      break;
    case OpCode::PsumScatter:
    case OpCode::AllToAll:
      t.size_bytes = operand_bytes;
      t.moved_bytes = (n - 1) / n * t.size_bytes;
      break;
    case OpCode::Ppermute:
      t.size_bytes = operand_bytes;
      t.moved_bytes = permutes ? t.size_bytes : 0;
      break;
    default:  // pbroadcast, pscatter, axis_index: no communication
      break;
  }
  return t;
}

double FunctionStats::total_moved_bytes() const {
  double t = 0;
  for (const auto &[op, s] : by_op) t += s.moved_bytes;
  return t;
}

int64_t FunctionStats::communicating_count() const {
  int64_t c = 0;
  for (const auto &[op, s] : by_op)
    if (s.moved_bytes > 0 || op == "psum" || op == "all_gather" || op == "psum_scatter" ||
        op == "all_to_all" || op == "all_gather_invariant" || op == "pmax" || op == "pmin")
      c += s.count;
  return c;
}

std::vector<CollectiveEvent> collective_events(const ir::Module &module,
                                               const ir::Function &function) {
  std::vector<CollectiveEvent> events;
  collect(module, function, function.body, 1, events, 0);
  return events;
}

FunctionStats collective_stats(const ir::Module &module, const ir::Function &function) {
  FunctionStats stats;
  auto add = [](int64_t acc, int64_t a, int64_t b) {  // acc + a * b, saturating
    const __int128 r = static_cast<__int128>(acc) + static_cast<__int128>(a) * b;
    return r > INT64_MAX ? INT64_MAX : static_cast<int64_t>(r);
  };
  for (const CollectiveEvent &e : collective_events(module, function)) {
    CollectiveStat &s = stats.by_op[e.op];
    s.count = add(s.count, e.times, 1);
    s.values = add(s.values, e.times, e.values);
    s.size_bytes += static_cast<double>(e.times) * e.size_bytes;
    s.moved_bytes += static_cast<double>(e.times) * e.moved_bytes;
  }
  return stats;
}

std::string format_stats(const ir::Module &module, int only) {
  std::ostringstream out;
  for (size_t i = 0; i < module.functions.size(); ++i) {
    const ir::Function &f = module.functions[i];
    if (f.kind != ir::FunctionKind::Shmap || (only >= 0 && static_cast<int>(i) != only)) continue;
    const ir::MeshDef &mesh = module.meshes.at(static_cast<size_t>(f.mesh));
    FunctionStats s = collective_stats(module, f);
    out << f.name << " (mesh " << mesh.name << ", " << mesh.mesh.num_devices()
        << " devices): collectives per device\n";
    if (s.by_op.empty()) {
      out << "  (none)\n";
      continue;
    }
    char line[256];
    std::snprintf(line, sizeof line, "  %-22s %6s %16s %16s\n", "collective", "count", "size_bytes",
                  "moved_bytes");
    out << line;
    for (const auto &[op, st] : s.by_op) {
      std::snprintf(line, sizeof line, "  %-22s %6lld %16.0f %16.0f\n", op.c_str(),
                    static_cast<long long>(st.count), st.size_bytes, st.moved_bytes);
      out << line;
    }
    std::snprintf(line, sizeof line, "  %-22s %6s %16s %16.0f\n", "total", "", "",
                  s.total_moved_bytes());
    out << line;
  }
  return out.str();
}

}  // namespace spmd
