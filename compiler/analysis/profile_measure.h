// analysis/profile_measure.h — measuring a machine into a hardware profile.
//
// `spmdc profile` (threads: the CPU runtime's simulated mesh) and
// `spmdc-profile` (one MPI process per device, started by mpirun or srun)
// measure the same things on whatever fabric runs the mesh: each collective
// at buffer sizes from 8 B up, like nccl-tests, fitted to
// alpha + moved bytes / beta (analysis/stats.h's byte convention, the one the
// cost model prices); an f32 matrix product and an elementwise add on every
// device at once (peak flop/s and memory bandwidth per device). With devices
// per node set, the mesh is laid out as (node, local) and the collectives are
// measured and fitted twice: over `local` (the link inside a node) and over
// `node` (the link between nodes).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "analysis/cost.h"
#include "spmdrt/collectives.h"

namespace spmd {

/// Runs `body` once on every device of the mesh at the same time, and returns
/// when all are done: rt::run_on_mesh for threads, or each MPI process calling
/// it once with its own DeviceContext.
using MeshRunner = std::function<void(const std::function<void(rt::DeviceContext &)> &)>;

struct MeasureOptions {
  int64_t devices = 8;           // devices of the mesh
  int64_t devices_per_node = 0;  // 0 or devices: one node
  double max_bytes = 16 << 20;   // largest collective buffer
  int repeats = 5;               // rounds per size; their median counts
  bool matmul_rates = true;      // time thin products (matmul_rates, matmul_layout_rates)
  // Also time adds of two smaller sizes and tanh (memory_rates, transcendental_rate).
  bool memory_rates = true;
};

/// One measured collective: `bytes` is nccl-tests' buffer size, `moved` what
/// the cost model counts as moved, over the link `inter` (between nodes) or not.
struct ProfilePoint {
  OpCode op = OpCode::Psum;
  bool inter = false;
  double bytes = 0, moved = 0, seconds = 0;
};

struct MeasuredProfile {
  HardwareProfile profile;  // name and description left to the caller
  std::vector<ProfilePoint> points;
};

/// The mesh measure_profile() runs on: (d: devices), or (node: devices /
/// devices_per_node, local: devices_per_node) when there are several nodes.
rt::Mesh profile_mesh(const MeasureOptions &o);

/// Measures the machine through `run` (on profile_mesh(o)). The figures are
/// those device 0 timed (each timing runs from a barrier to a barrier, so it
/// covers every device); on other devices the result is not meaningful.
MeasuredProfile measure_profile(const MeasureOptions &o, const MeshRunner &run);

/// Least squares seconds = alpha + moved / beta over `points`, each weighted by
/// 1 / seconds^2 (relative errors count, so 32 B and 16 MiB weigh alike); a
/// negative alpha is refitted through the origin.
LinkCost fit_link(const std::vector<ProfilePoint> &points);

/// The table of measured and fitted times `spmdc profile` prints.
std::string format_measurements(const MeasuredProfile &m);

}  // namespace spmd
