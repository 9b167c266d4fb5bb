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

/// Adds what `body` (of `f`) communicates when it runs `times` times.
void accumulate(const ir::Module &m, const ir::Function &f, const std::vector<ir::Instr> &body,
                int64_t times, FunctionStats &stats, int depth) {
  if (depth > 1000) return;
  const rt::Mesh &mesh = m.mesh_of(f);
  for (const ir::Instr &in : body) {
    if (in.op == OpCode::Call) {
      const ir::Function &callee = m.functions.at(static_cast<size_t>(in.attrs.callee));
      accumulate(m, callee, callee.body, times, stats, depth + 1);
      continue;
    }
    if (in.op == OpCode::For) {
      const int64_t trips = ir::trip_count(in.attrs);
      const int64_t n = trips > 0 && times > INT64_MAX / trips ? INT64_MAX : times * trips;
      accumulate(m, f, in.regions.at(0).body, n, stats, depth + 1);
      continue;
    }
    if (op_kind(in.op) != OpKind::Collective) continue;
    double n = static_cast<double>(axes_size(mesh, in.attrs.axes));
    double size = 0, moved = 0;
    switch (in.op) {
      case OpCode::Psum:
      case OpCode::Pmax:
      case OpCode::Pmin:  // a combined psum((a, b), axes) is one collective of all its bytes
        for (ir::ValueId v : in.operands) size += bytes_of(f.type(v));
        moved = 2 * (n - 1) / n * size;
        break;
      case OpCode::AllGather:
      case OpCode::AllGatherInvariant:
        size = bytes_of(f.type(in.results[0]));
        moved = (n - 1) / n * size;
        break;
      case OpCode::PsumScatter:
      case OpCode::AllToAll:
        size = bytes_of(f.type(in.operands[0]));
        moved = (n - 1) / n * size;
        break;
      case OpCode::Ppermute: {
        size = bytes_of(f.type(in.operands[0]));
        bool moves = false;
        for (auto &p : in.attrs.perm) moves |= p.first != p.second;
        moved = moves ? size : 0;
        break;
      }
      default:  // pbroadcast, pscatter, axis_index: no communication
        break;
    }
    CollectiveStat &s = stats.by_op[std::string(op_spelling(in.op))];
    const int64_t values = in.operands.empty() ? 1 : static_cast<int64_t>(in.operands.size());
    auto add = [](int64_t acc, int64_t a, int64_t b) {  // acc + a * b, saturating
      const __int128 r = static_cast<__int128>(acc) + static_cast<__int128>(a) * b;
      return r > INT64_MAX ? INT64_MAX : static_cast<int64_t>(r);
    };
    s.count = add(s.count, times, 1);
    s.values = add(s.values, times, values);
    s.size_bytes += static_cast<double>(times) * size;
    s.moved_bytes += static_cast<double>(times) * moved;
  }
}

}  // namespace

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

FunctionStats collective_stats(const ir::Module &module, const ir::Function &function) {
  FunctionStats stats;
  accumulate(module, function, function.body, 1, stats, 0);
  return stats;
}

std::string format_stats(const ir::Module &module) {
  std::ostringstream out;
  for (const ir::Function &f : module.functions) {
    if (f.kind != ir::FunctionKind::Shmap) continue;
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
