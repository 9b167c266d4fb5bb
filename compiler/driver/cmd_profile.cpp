// driver/cmd_profile.cpp — `spmdc profile`: measure the machine it runs on.
//
// Runs each collective of the CPU runtime's simulated mesh (one thread per
// device, spmdrt/collectives.h) at sizes from 8 B up, like nccl-tests, times a
// matrix product and an elementwise add on every device at once, fits the
// collectives' times to
// alpha + moved bytes / beta (analysis/stats.h's byte convention, the one the
// cost model prices) and writes a hardware profile file (analysis/
// profile_file.h) that `spmdc shard --profile` and `spmdc cost --profile` read.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "analysis/cost.h"
#include "analysis/profile_file.h"
#include "analysis/stats.h"
#include "driver/commands.h"
#include "spmdrt/collectives.h"

namespace spmd::driver {

namespace {

struct ProfileOptions {
  int64_t devices = 8;
  std::string output;  // -o FILE; empty: stdout
  std::string name = "measured-cpu";
  double max_bytes = 16 << 20;
  int repeats = 3;
  bool quiet = false;
};

using Clock = std::chrono::steady_clock;

/// One measured point: a collective of `bytes` (nccl-tests' buffer size).
struct Point {
  OpCode op;
  double bytes = 0, moved = 0, seconds = 0;
};

/// Seconds per call of `op` with a buffer of `bytes` per device (the best of
/// `repeats` rounds; each round runs enough calls to take a few milliseconds).
double time_collective(const rt::Mesh &mesh, OpCode op, int64_t bytes, int repeats) {
  const int64_t n = mesh.num_devices();
  const int64_t elems = std::max<int64_t>(bytes / 4, n);  // f32, divisible below
  const int64_t len = (elems + n - 1) / n * n;
  const int calls = static_cast<int>(std::clamp<int64_t>((int64_t{8} << 20) / (len * 4), 2, 200));
  double best = HUGE_VAL;
  for (int r = 0; r < repeats; ++r) {
    double seconds = 0;
    rt::run_on_mesh(mesh, [&](rt::DeviceContext &ctx) {
      const std::vector<int> axes{0};
      // all_gather's buffer is its output: each device contributes 1/n.
      rt::Tensor x = rt::Tensor::full(rt::DType::F32, {op == OpCode::AllGather ? len / n : len},
                                      1.0);
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

/// flop/s per device while every device multiplies at once (f32 matmul).
double measure_flops(const rt::Mesh &mesh, int repeats) {
  const int64_t m = 512;
  double best = HUGE_VAL;
  const int calls = 3;
  for (int r = 0; r < repeats; ++r) {
    double seconds = 0;
    rt::run_on_mesh(mesh, [&](rt::DeviceContext &ctx) {
      rt::Tensor a = rt::Tensor::full(rt::DType::F32, {m, m}, 0.5);
      ctx.barrier();
      const auto t0 = Clock::now();
      for (int k = 0; k < calls; ++k) a = rt::matmul(a, a);
      ctx.barrier();
      if (ctx.device() == 0)
        seconds = std::chrono::duration<double>(Clock::now() - t0).count() / calls;
    });
    best = std::min(best, seconds);
  }
  return 2.0 * static_cast<double>(m * m * m) / best;
}

/// Memory bandwidth per device while every device adds two 16 MiB f32 arrays
/// at once (reads 32 MiB, writes 16 MiB).
double measure_memory_bw(const rt::Mesh &mesh, int repeats) {
  const int64_t len = int64_t{4} << 20;
  double best = HUGE_VAL;
  const int calls = 3;
  for (int r = 0; r < repeats; ++r) {
    double seconds = 0;
    rt::run_on_mesh(mesh, [&](rt::DeviceContext &ctx) {
      rt::Tensor a = rt::Tensor::full(rt::DType::F32, {len}, 0.5);
      rt::Tensor b = rt::Tensor::full(rt::DType::F32, {len}, 0.25);
      ctx.barrier();
      const auto t0 = Clock::now();
      for (int k = 0; k < calls; ++k) a = rt::binary(rt::BinaryOp::Add, a, b);
      ctx.barrier();
      if (ctx.device() == 0)
        seconds = std::chrono::duration<double>(Clock::now() - t0).count() / calls;
    });
    best = std::min(best, seconds);
  }
  return 3.0 * 4.0 * static_cast<double>(len) / best;
}

/// Least squares seconds = alpha + moved / beta over `points`, each weighted
/// by 1 / seconds^2 (relative errors count, so 32 B and 16 MiB weigh alike).
LinkCost fit(const std::vector<Point> &points) {
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const Point &p : points) {
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

int run_profile(const ProfileOptions &o) {
  if (o.devices < 2 || o.devices > 64) {
    std::cerr << "spmdc: error: --devices takes 2 to 64 devices\n";
    return kExitUserError;
  }
  if (!(o.max_bytes >= 8) || o.max_bytes > double(int64_t{1} << 30) || o.repeats < 1) {
    std::cerr << "spmdc: error: --max-bytes takes 8 B to 1 GiB and --repeats at least 1\n";
    return kExitUserError;
  }
  const rt::Mesh mesh({{"d", o.devices}});
  const double n = static_cast<double>(o.devices);
  std::vector<Point> points;
  for (OpCode op : {OpCode::Psum, OpCode::AllGather, OpCode::PsumScatter, OpCode::AllToAll})
    for (double bytes = 8; bytes <= o.max_bytes; bytes *= 8) {
      const int64_t len = std::max<int64_t>(static_cast<int64_t>(bytes) / 4, o.devices);
      const double buffer = static_cast<double>((len + o.devices - 1) / o.devices * o.devices * 4);
      // nccl-tests' sizes: all_gather's is the gathered output.
      const double in = op == OpCode::AllGather ? buffer / n : buffer;
      const double out = op == OpCode::AllGather ? buffer
                         : op == OpCode::PsumScatter ? buffer / n
                                                     : buffer;
      Point p{op, buffer, collective_traffic(op, n, in, out).moved_bytes, 0};
      p.seconds = time_collective(mesh, op, static_cast<int64_t>(bytes), o.repeats);
      points.push_back(p);
    }
  const LinkCost link = fit(points);
  HardwareProfile profile;
  profile.name = o.name;
  profile.flops_per_s = measure_flops(mesh, o.repeats);
  profile.mem_bw_bytes_per_s = measure_memory_bw(mesh, o.repeats);
  profile.latency_s = link.latency_s;
  profile.bw_bytes_per_s = link.bw_bytes_per_s;
  profile.description = "measured by `spmdc profile` on the CPU runtime's simulated mesh of " +
                        std::to_string(o.devices) + " devices (one thread each), " +
                        "collectives of 8 B to " + format_bytes(o.max_bytes);
  if (!o.quiet) {
    std::fprintf(stderr, "%-14s %12s %12s %12s %12s\n", "collective", "bytes", "moved",
                 "measured", "fitted");
    for (const Point &p : points)
      std::fprintf(stderr, "%-14s %12s %12s %12s %12s\n", std::string(op_spelling(p.op)).c_str(),
                   format_bytes(p.bytes).c_str(), format_bytes(p.moved).c_str(),
                   format_seconds(p.seconds).c_str(),
                   format_seconds(link.latency_s + p.moved / link.bw_bytes_per_s).c_str());
    std::fprintf(stderr,
                 "fit: alpha %s, beta %.3g B/s; matmul %.3g flop/s, memory %.3g B/s per device\n",
                 format_seconds(link.latency_s).c_str(), link.bw_bytes_per_s, profile.flops_per_s,
                 profile.mem_bw_bytes_per_s);
  }
  const std::string text = profile_json(profile);
  if (o.output.empty()) {
    std::cout << text;
    return kExitOk;
  }
  CommonOptions none;
  return write_output(none, o.output, text);
}

}  // namespace

void register_profile_command(CLI::App &app, std::vector<Command> &out) {
  static ProfileOptions o;
  CLI::App *cmd = app.add_subcommand(
      "profile",
      "Measure this machine's simulated mesh (collectives from 8 B up, a matmul) and write a "
      "hardware profile file for --profile");
  cmd->add_option("--devices", o.devices, "Devices of the simulated mesh (default 8)");
  cmd->add_option("-o,--output", o.output, "Write the profile to FILE (default: stdout)")
      ->type_name("FILE");
  cmd->add_option("--name", o.name, "The profile's name (default measured-cpu)");
  cmd->add_option("--max-bytes", o.max_bytes,
                  "Largest collective buffer in bytes (default 16 MiB; sizes grow 8x from 8 B)");
  cmd->add_option("--repeats", o.repeats, "Rounds per size; the fastest counts (default 3)");
  cmd->add_flag("-q,--quiet", o.quiet, "Do not print the table of measurements");
  out.push_back({cmd, [] { return run_profile(o); }});
}

}  // namespace spmd::driver
