// analysis/profile_measure.cpp — see profile_measure.h.
#include "analysis/profile_measure.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <tuple>

#include "spmdrt/kernels.h"

namespace spmd {

namespace {

using Clock = std::chrono::steady_clock;

/// Seconds per call of `op` over `axis` with a buffer of `len` f32 per device
/// (all_gather's buffer is its output), the best of `repeats` rounds; each
/// round runs enough calls to take a few milliseconds.
double time_collective(const MeshRunner &run, OpCode op, int axis, int64_t len, int64_t group,
                       int repeats) {
  const int calls = static_cast<int>(std::clamp<int64_t>((int64_t{8} << 20) / (len * 4), 2, 200));
  double best = HUGE_VAL;
  for (int r = 0; r < repeats; ++r) {
    double seconds = 0;
    run([&](rt::DeviceContext &ctx) {
      const std::vector<int> axes{axis};
      rt::Tensor x =
          rt::Tensor::full(rt::DType::F32, {op == OpCode::AllGather ? len / group : len}, 1.0);
      ctx.barrier();
      const auto t0 = Clock::now();
      for (int k = 0; k < calls; ++k) {
        rt::Tensor y;
        switch (op) {
          case OpCode::AllGather:
            y = ctx.all_gather(x, axes, 0, true);
            break;
          case OpCode::PsumScatter:
            y = ctx.reduce_scatter(x, axes, 0, true);
            break;
          case OpCode::AllToAll:
            y = ctx.all_to_all(x, axes, 0, 0);
            break;
          default:
            y = ctx.all_reduce(x, axes, rt::ReduceOp::Sum);
            break;
        }
      }
      ctx.barrier();
      if (ctx.device() == 0)
        seconds = std::chrono::duration<double>(Clock::now() - t0).count() / calls;
    });
    best = std::min(best, seconds);
  }
  return best;
}

/// Seconds per call of `step` on every device at once, the best of `repeats`
/// rounds of 3 calls.
double time_everywhere(const MeshRunner &run, int repeats,
                       const std::function<std::function<void()>()> &make_step) {
  const int calls = 3;
  double best = HUGE_VAL;
  for (int r = 0; r < repeats; ++r) {
    double seconds = 0;
    run([&](rt::DeviceContext &ctx) {
      std::function<void()> step = make_step();
      ctx.barrier();
      const auto t0 = Clock::now();
      for (int k = 0; k < calls; ++k) step();
      ctx.barrier();
      if (ctx.device() == 0)
        seconds = std::chrono::duration<double>(Clock::now() - t0).count() / calls;
    });
    best = std::min(best, seconds);
  }
  return best;
}

}  // namespace

rt::Mesh profile_mesh(const MeasureOptions &o) {
  if (o.devices_per_node > 0 && o.devices_per_node < o.devices)
    return rt::Mesh({{"node", o.devices / o.devices_per_node}, {"local", o.devices_per_node}});
  return rt::Mesh({{"d", o.devices}});
}

LinkCost fit_link(const std::vector<ProfilePoint> &points) {
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const ProfilePoint &p : points) {
    const double w = 1 / (p.seconds * p.seconds);
    sw += w;
    sx += w * p.moved;
    sy += w * p.seconds;
    sxx += w * p.moved * p.moved;
    sxy += w * p.moved * p.seconds;
  }
  const double den = sw * sxx - sx * sx;
  double slope = den > 0 ? (sw * sxy - sx * sy) / den : 0;
  double alpha = sw > 0 ? (sy - slope * sx) / sw : 0;
  if (alpha < 0) {  // through the origin instead
    alpha = 0;
    slope = sxx > 0 ? sxy / sxx : 0;
  }
  return {alpha, slope > 0 ? 1 / slope : 1e30};
}

MeasuredProfile measure_profile(const MeasureOptions &o, const MeshRunner &run) {
  const rt::Mesh mesh = profile_mesh(o);
  MeasuredProfile m;
  // The link inside a node: the last axis; between nodes: the first.
  struct Link {
    int axis;
    bool inter;
  };
  std::vector<Link> links{{static_cast<int>(mesh.axes().size()) - 1, false}};
  if (static_cast<int>(mesh.axes().size()) > 1) links.push_back({0, true});
  for (const Link &link : links) {
    const int64_t group = mesh.axis_size(link.axis);
    const double n = static_cast<double>(group);
    for (OpCode op : {OpCode::Psum, OpCode::AllGather, OpCode::PsumScatter, OpCode::AllToAll})
      for (double bytes = 8; bytes <= o.max_bytes; bytes *= 8) {
        const int64_t elems = std::max<int64_t>(static_cast<int64_t>(bytes) / 4, group);
        const int64_t len = (elems + group - 1) / group * group;  // divisible by the group
        const double buffer = static_cast<double>(len * 4);
        // nccl-tests' sizes: all_gather's is the gathered output.
        const double in = op == OpCode::AllGather ? buffer / n : buffer;
        const double out = op == OpCode::AllGather     ? buffer
                           : op == OpCode::PsumScatter ? buffer / n
                                                       : buffer;
        ProfilePoint p{op, link.inter, buffer, collective_traffic(op, n, in, out).moved_bytes, 0};
        p.seconds = time_collective(run, op, link.axis, len, group, o.repeats);
        m.points.push_back(p);
      }
  }
  // One fit of every kind together (what a kind not measured costs), and one
  // per kind (what a measured kind costs): the kinds differ (on the CPU an
  // all_to_all copies each block twice, a psum adds as it goes).
  auto fit_of = [&](bool inter) {
    std::vector<ProfilePoint> of;
    for (const ProfilePoint &p : m.points)
      if (p.inter == inter) of.push_back(p);
    LinkCost link = fit_link(of);
    for (const std::string &kind : collective_kinds()) {
      std::vector<ProfilePoint> kind_of;
      for (const ProfilePoint &p : of)
        if (collective_kind(p.op) == kind) kind_of.push_back(p);
      if (kind_of.size() < 2) continue;
      const LinkCost k = fit_link(kind_of);
      link.by_collective[kind] = {k.latency_s, k.bw_bytes_per_s};
    }
    return link;
  };
  HardwareProfile &profile = m.profile;
  const LinkCost intra = fit_of(false);
  profile.latency_s = intra.latency_s;
  profile.bw_bytes_per_s = intra.bw_bytes_per_s;
  profile.intra_by_collective = intra.by_collective;
  if (links.size() > 1) {
    profile.devices_per_node = o.devices_per_node;
    profile.inter_node = fit_of(true);
  }
  constexpr int64_t side = 512;
  const double matmul_s = time_everywhere(run, o.repeats, [&] {
    auto a = std::make_shared<rt::Tensor>(rt::Tensor::full(rt::DType::F32, {side, side}, 0.5));
    return std::function<void()>([a] { *a = rt::matmul(*a, *a); });
  });
  profile.flops_per_s = 2.0 * static_cast<double>(side * side * side) / matmul_s;
  // Thin products, only on request (--matmul-rates; docs/sharding.md, "Hardware
  // profiles"): smallest dimension s as the rows, the columns and the
  // contracted length in turn (each 2 side^2 s flops), side / s times each so a
  // step does three times the square product's flops. Without them the list
  // stays empty: every product at the peak.
  profile.matmul_rates.clear();
  if (o.matmul_rates) {
    for (const int64_t s : {int64_t{8}, int64_t{32}, int64_t{128}}) {
      const double thin_s = time_everywhere(run, o.repeats, [&] {
        using rt::DType, rt::Tensor;
        auto t = std::make_shared<std::vector<Tensor>>(std::vector<Tensor>{
            Tensor::full(DType::F32, {side, s}, 0.5), Tensor::full(DType::F32, {s, side}, 0.5),
            Tensor::full(DType::F32, {side, side}, 0.5)});
        const int64_t reps = side / s;
        return std::function<void()>([t, reps] {
          const auto &[tall, wide, square] = std::tie((*t)[0], (*t)[1], (*t)[2]);
          for (int64_t k = 0; k < reps; ++k) {
            Tensor c = rt::matmul(tall, wide);  // contracted length s
            c = rt::matmul(wide, square);       // s rows
            c = rt::matmul(square, tall);       // s columns
          }
        });
      });
      profile.matmul_rates.push_back(
          {static_cast<double>(s), 3 * 2.0 * static_cast<double>(side * side * side) / thin_s});
    }
    profile.matmul_rates.push_back({static_cast<double>(side), profile.flops_per_s});
  }
  // Every device adds two f32 arrays of `len` elements into a third, `reps`
  // times a step (the result replacing the last one's, whose buffer the
  // runtime reuses, as a program's ops do): bytes read and written per second.
  auto add_bandwidth = [&](int64_t len, int reps) {
    const double add_s = time_everywhere(run, o.repeats, [&] {
      using rt::DType, rt::Tensor;
      auto t = std::make_shared<std::vector<Tensor>>(std::vector<Tensor>{
          Tensor::full(DType::F32, {len}, 0.5), Tensor::full(DType::F32, {len}, 0.25), Tensor()});
      return std::function<void()>([t, reps] {
        for (int k = 0; k < reps; ++k) (*t)[2] = rt::binary(rt::BinaryOp::Add, (*t)[0], (*t)[1]);
      });
    });
    return 3.0 * 4.0 * static_cast<double>(len) * reps / add_s;
  };
  // 16 MiB arrays (48 MiB an add): what streams from memory.
  const int64_t len = int64_t{4} << 20;
  profile.mem_bw_bytes_per_s = add_bandwidth(len, 1);
  // Adds of 192 KiB and 3 MiB, whose arrays the caches can hold, then the
  // 48 MiB one (docs/sharding.md, "Hardware profiles").
  profile.memory_rates.clear();
  if (o.memory_rates) {
    for (const int64_t n : {int64_t{16} << 10, int64_t{256} << 10}) {
      const double bw = add_bandwidth(n, static_cast<int>(len / n / 4));
      profile.memory_rates.push_back({3.0 * 4.0 * static_cast<double>(n), bw});
    }
    profile.memory_rates.push_back(
        {3.0 * 4.0 * static_cast<double>(len), profile.mem_bw_bytes_per_s});
    // tanh of 16K f32 elements (64 KiB in, 64 KiB out: in cache), the same number of
    // elements per step as the 48 MiB add: elements per second, memory traffic
    // included (op_seconds adds these to the flops' time and compares with the bytes').
    const int64_t n = int64_t{16} << 10;
    const int reps = static_cast<int>(len / n);
    const double tanh_s = time_everywhere(run, o.repeats, [&] {
      using rt::DType, rt::Tensor;
      auto t = std::make_shared<std::vector<Tensor>>(
          std::vector<Tensor>{Tensor::full(DType::F32, {n}, 0.5), Tensor()});
      return std::function<void()>([t, reps] {
        for (int k = 0; k < reps; ++k) (*t)[1] = rt::unary(rt::UnaryOp::Tanh, (*t)[0]);
      });
    });
    profile.transcendental_rate = static_cast<double>(n) * reps / tanh_s;
  }
  return m;
}

std::string format_measurements(const MeasuredProfile &m) {
  const HardwareProfile &p = m.profile;
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-14s %-6s %12s %12s %12s %12s\n", "collective", "link",
                "bytes", "moved", "measured", "fitted");
  out += line;
  for (const ProfilePoint &q : m.points) {
    const LinkCost link = (q.inter ? *p.inter_node : p.intra_node()).for_op(op_spelling(q.op));
    std::snprintf(line, sizeof line, "%-14s %-6s %12s %12s %12s %12s\n",
                  std::string(op_spelling(q.op)).c_str(), q.inter ? "inter" : "intra",
                  format_bytes(q.bytes).c_str(), format_bytes(q.moved).c_str(),
                  format_seconds(q.seconds).c_str(),
                  format_seconds(link.latency_s + q.moved / link.bw_bytes_per_s).c_str());
    out += line;
  }
  auto fits = [&](const std::string &where, const LinkCost &l) {
    std::snprintf(line, sizeof line, "fit %s: alpha %s, beta %.3g B/s\n", where.c_str(),
                  format_seconds(l.latency_s).c_str(), l.bw_bytes_per_s);
    out += line;
    for (const std::string &kind : collective_kinds()) {
      auto it = l.by_collective.find(kind);
      if (it == l.by_collective.end()) continue;
      std::snprintf(line, sizeof line, "  %-14s alpha %s, beta %.3g B/s\n", kind.c_str(),
                    format_seconds(it->second.latency_s).c_str(), it->second.bw_bytes_per_s);
      out += line;
    }
  };
  fits("inside a node", p.intra_node());
  if (p.inter_node)
    fits("between nodes (" + std::to_string(p.devices_per_node) + " devices each)", *p.inter_node);
  std::snprintf(line, sizeof line, "matmul %.3g flop/s, memory %.3g B/s per device\n",
                p.flops_per_s, p.mem_bw_bytes_per_s);
  out += line;
  if (!p.memory_rates.empty()) {
    out += "memory by bytes an op reads and writes (bytes: B/s):";
    for (const MemoryRate &r : p.memory_rates) {
      std::snprintf(line, sizeof line, " %s: %.3g", format_bytes(r.bytes).c_str(),
                    r.bw_bytes_per_s);
      out += line;
    }
    out += "\n";
  }
  if (p.transcendental_rate > 0) {
    std::snprintf(line, sizeof line, "transcendental functions (tanh, in cache): %.3g elements/s\n",
                  p.transcendental_rate);
    out += line;
  }
  if (!p.matmul_rates.empty()) {
    out += "thin contractions (smallest dimension: flop/s):";
    for (const MatmulRate &r : p.matmul_rates) {
      std::snprintf(line, sizeof line, " %.0f: %.3g", r.smallest_dim, r.flops_per_s);
      out += line;
    }
    out += "\n";
  }
  return out;
}

}  // namespace spmd
