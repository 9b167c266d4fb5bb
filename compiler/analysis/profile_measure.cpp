// analysis/profile_measure.cpp — see profile_measure.h.
#include "analysis/profile_measure.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "spmdrt/kernels.h"

namespace spmd {

namespace {

using Clock = std::chrono::steady_clock;

/// The median of `rounds` (not empty), the mean of the middle two when even.
/// The median, not the fastest: a program's steps are timed by their median,
/// and on a machine with fewer cores than devices the fastest of a few rounds
/// is one where the scheduler happened to run every device evenly (at 8
/// devices on 2 cores it rated a 512^3 product ~20% faster than the median).
double median(std::vector<double> rounds) {
  std::sort(rounds.begin(), rounds.end());
  const size_t n = rounds.size();
  return n % 2 ? rounds[n / 2] : (rounds[n / 2 - 1] + rounds[n / 2]) / 2;
}

/// The longest time any device measured from its own `start` (taken right
/// after a barrier) to now (right after the closing barrier). Not device 0's
/// alone: with more devices than cores a device may run only after the others
/// have started, and from its late start it would time less than the whole.
double longest(rt::DeviceContext &ctx, Clock::time_point start) {
  rt::Tensor t = rt::Tensor::full(rt::DType::F64, {1},
                                  std::chrono::duration<double>(Clock::now() - start).count());
  std::vector<int> every_axis(ctx.mesh().axes().size());
  for (size_t a = 0; a < every_axis.size(); ++a) every_axis[a] = static_cast<int>(a);
  t = ctx.all_reduce(t, every_axis, rt::ReduceOp::Max);
  double seconds = 0;
  std::memcpy(&seconds, t.raw(), sizeof seconds);
  return seconds;
}

/// Seconds per call of the step `make_step(ctx)` returns for each device, every
/// device running `calls` of them at once, the median of `repeats` rounds.
double time_rounds(const MeshRunner &run, int repeats, int calls,
                   const std::function<std::function<void()>(rt::DeviceContext &)> &make_step) {
  std::vector<double> rounds;
  for (int r = 0; r < repeats; ++r) {
    double seconds = 0;
    run([&](rt::DeviceContext &ctx) {
      const std::function<void()> step = make_step(ctx);
      ctx.barrier();
      const auto t0 = Clock::now();
      for (int k = 0; k < calls; ++k) step();
      ctx.barrier();
      const double elapsed = longest(ctx, t0);
      if (ctx.device() == 0) seconds = elapsed / calls;
    });
    rounds.push_back(seconds);
  }
  return median(rounds);
}

/// Seconds per call of `op` over `axis` with a buffer of `len` f32 per device
/// (all_gather's buffer is its output), the median of `repeats` rounds; each
/// round runs enough calls to take a few milliseconds.
double time_collective(const MeshRunner &run, OpCode op, int axis, int64_t len, int64_t group,
                       int repeats) {
  const int calls = static_cast<int>(std::clamp<int64_t>((int64_t{8} << 20) / (len * 4), 2, 200));
  return time_rounds(run, repeats, calls, [&](rt::DeviceContext &ctx) {
    const rt::Tensor x =
        rt::Tensor::full(rt::DType::F32, {op == OpCode::AllGather ? len / group : len}, 1.0);
    return std::function<void()>([&ctx, op, axes = std::vector<int>{axis}, x] {
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
    });
  });
}

/// Seconds per call of `step` on every device at once, the median of `repeats`
/// rounds of 3 calls.
double time_everywhere(const MeshRunner &run, int repeats,
                       const std::function<std::function<void()>()> &make_step) {
  return time_rounds(run, repeats, 3, [&](rt::DeviceContext &) { return make_step(); });
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
  // Thin products (docs/sharding.md, "Hardware profiles"): for each layout of
  // the gemm (an operand read transposed in place or not) and each of its
  // dimensions, products whose dimension is s = 8, 32, 128 and the other two
  // 256, 512 / s of them a step (each step 4 * 256^3 flops: ~10 ms on 8
  // devices sharing 2 cores, a few of the scheduler's time slices). matmul_rates
  // gets the plain layout's three products together (the rate of a product
  // thin in an unknown dimension); the square product tops both lists.
  profile.matmul_rates.clear();
  profile.matmul_layout_rates.clear();
  profile.matmul_op_s = profile.matmul_gemm_s = 0;
  if (o.matmul_rates) {
    constexpr int64_t thin_side = 256;
    constexpr double step_flops = 4.0 * thin_side * thin_side * thin_side;
    const std::vector<int64_t> thin_dims{8, 32, 128};
    std::map<int64_t, double> plain_seconds;  // s: the nn products' seconds, summed
    for (const char *layout : {"nn", "tn", "nt", "tt"}) {
      const bool ta = layout[0] == 't', tb = layout[1] == 't';
      const std::string spec = std::string(ta ? "ji" : "ij") + "," + (tb ? "kj" : "jk") + "->ik";
      for (const char thin : {'m', 'n', 'k'})
        for (const int64_t s : thin_dims) {
          const int64_t m = thin == 'm' ? s : thin_side, n = thin == 'n' ? s : thin_side,
                        k = thin == 'k' ? s : thin_side;
          const double seconds = time_everywhere(run, o.repeats, [&] {
            using rt::DType, rt::Tensor;
            auto t = std::make_shared<std::vector<Tensor>>(std::vector<Tensor>{
                Tensor::full(DType::F32, ta ? rt::Shape{k, m} : rt::Shape{m, k}, 0.5),
                Tensor::full(DType::F32, tb ? rt::Shape{n, k} : rt::Shape{k, n}, 0.5)});
            const int64_t reps = 2 * thin_side / s;
            return std::function<void()>([t, reps, spec] {
              for (int64_t r = 0; r < reps; ++r) rt::Tensor c = rt::einsum(spec, *t);
            });
          });
          const rt::GemmShape gemm{
              .batch = 1, .m = m, .k = k, .n = n, .trans_a = ta, .trans_b = tb};
          profile.matmul_layout_rates[HardwareProfile::layout_key(gemm)].push_back(
              {static_cast<double>(s), step_flops / seconds});
          if (!ta && !tb) plain_seconds[s] += seconds;
        }
    }
    for (const auto &[s, seconds] : plain_seconds)
      profile.matmul_rates.push_back({static_cast<double>(s), 3 * step_flops / seconds});
    profile.matmul_rates.push_back({static_cast<double>(side), profile.flops_per_s});
    // The fixed costs of a product: 200 einsums of 4 x 4 matrices a step, batched
    // 1 and 65 times; the difference per extra batch element is a gemm's, the
    // rest of the unbatched one the op's.
    auto tiny = [&](int64_t batch) {
      return time_everywhere(run, o.repeats,
                             [&] {
                               using rt::DType, rt::Tensor;
                               auto t = std::make_shared<std::vector<Tensor>>(std::vector<Tensor>{
                                   Tensor::full(DType::F32, {batch, 4, 4}, 0.5),
                                   Tensor::full(DType::F32, {batch, 4, 4}, 0.5)});
                               return std::function<void()>([t] {
                                 for (int r = 0; r < 200; ++r)
                                   rt::Tensor c = rt::einsum("bij,bjk->bik", *t);
                               });
                             }) /
             200;
    };
    const double one = tiny(1), many = tiny(65);
    profile.matmul_gemm_s = std::max(0.0, (many - one) / 64);
    profile.matmul_op_s = std::max(0.0, one - profile.matmul_gemm_s);
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
  if (p.matmul_op_s > 0 || p.matmul_gemm_s > 0) {
    std::snprintf(line, sizeof line, "each product op %s, each gemm in it %s more\n",
                  format_seconds(p.matmul_op_s).c_str(), format_seconds(p.matmul_gemm_s).c_str());
    out += line;
  }
  for (const auto &[key, rates] : p.matmul_layout_rates) {
    out += "  layout " + key + ":";
    for (const MatmulRate &r : rates) {
      std::snprintf(line, sizeof line, " %.0f: %.3g", r.smallest_dim, r.flops_per_s);
      out += line;
    }
    out += "\n";
  }
  return out;
}

}  // namespace spmd
