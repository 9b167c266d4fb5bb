// tests/mpi/collectives_check.cpp — every collective over MPI against the simulated fabric.
//
// Run as `mpirun -np 6 mpi_collectives_check` (mesh (x: 2, y: 3), rank r at
// position r). Every rank also runs the whole mesh on the simulated fabric in
// its own process (rt::run_on_mesh) and compares its MPI result with its
// position's simulated one, for every collective, dtype, axis set (one axis,
// both, both reversed), dimension, tiling and a partial permutation, in both
// modes: deterministic results must be bitwise equal; with MPI's reductions,
// data movement, integer, bool, max and min results must be bitwise equal and
// float sums within 1e-6 of the largest magnitude (bf16: two ulps). Prints one
// line per failure and exits 1 on any.
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>

#include "spmdrt/kernels.h"
#include "spmdrt/mpi.h"

using namespace spmd::rt;

namespace {

using Collective = std::function<Tensor(DeviceContext &, const Tensor &)>;

struct Case {
  std::string name;
  DType dtype;
  Shape shape;
  Collective op;
  bool exact_sum = false;  // a float sum whose order MPI may change
};

/// Device d's input: a different random array per device, with a NaN on device 4 when asked.
Tensor input(const Case &c, int64_t device) {
  Tensor x = random_tensor(c.dtype, c.shape, 1000 + static_cast<uint64_t>(device));
  if (c.name.find("nan") != std::string::npos && device == 4 && x.numel() > 2)
    x.set(2, std::numeric_limits<double>::quiet_NaN());
  return x;
}

bool close_enough(const Tensor &a, const Tensor &b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  double scale = 1.0;
  for (int64_t i = 0; i < b.numel(); ++i) scale = std::max(scale, std::abs(b.get(i)));
  const double tol = (a.dtype() == DType::BF16 ? 0.0078125 : 1e-6) * scale;
  for (int64_t i = 0; i < a.numel(); ++i)
    if (!(std::abs(a.get(i) - b.get(i)) <= tol)) return false;
  return true;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  const std::vector<std::pair<std::string, std::vector<int>>> groups = {
      {"x", {0}}, {"y", {1}}, {"xy", {0, 1}}, {"yx", {1, 0}}};
  const std::vector<std::pair<std::string, ReduceOp>> reductions = {
      {"sum", ReduceOp::Sum}, {"max", ReduceOp::Max}, {"min", ReduceOp::Min}};
  for (auto [gname, axes] : groups) {
    for (DType dtype : {DType::F32, DType::F64, DType::BF16, DType::I32, DType::Bool})
      for (auto [rname, op] : reductions) {
        if (dtype == DType::Bool && op == ReduceOp::Sum) continue;
        const bool float_sum = op == ReduceOp::Sum && is_float(dtype);
        out.push_back({"all_reduce " + rname + " " + dtype_name(dtype) + " over " + gname,
                       dtype,
                       {5, 7},
                       [axes, op](DeviceContext &ctx, const Tensor &x) {
                         return ctx.all_reduce(x, axes, op);
                       },
                       float_sum});
      }
    out.push_back({"all_reduce max with nan over " + gname,
                   DType::F32,
                   {4},
                   [axes](DeviceContext &ctx, const Tensor &x) {
                     return ctx.all_reduce(x, axes, ReduceOp::Max);
                   }});
    for (int64_t dim : {0, 1})
      for (bool tiled : {true, false}) {
        out.push_back({"all_gather dim " + std::to_string(dim) + (tiled ? " tiled" : " untiled") +
                           " over " + gname,
                       DType::F32,
                       {2, 3},
                       [axes, dim, tiled](DeviceContext &ctx, const Tensor &x) {
                         return ctx.all_gather(x, axes, dim, tiled);
                       }});
      }
    out.push_back({"all_gather untiled last dim over " + gname,
                   DType::I32,
                   {2, 3},
                   [axes](DeviceContext &ctx, const Tensor &x) {
                     return ctx.all_gather(x, axes, 2, false);
                   }});
    for (DType dtype : {DType::F32, DType::BF16, DType::I32})
      for (int64_t dim : {0, 1}) {
        out.push_back({"psum_scatter tiled dim " + std::to_string(dim) + " " + dtype_name(dtype) +
                           " over " + gname,
                       dtype,
                       {12, 6},
                       [axes, dim](DeviceContext &ctx, const Tensor &x) {
                         return ctx.reduce_scatter(x, axes, dim, true);
                       },
                       is_float(dtype)});
      }
    const int64_t n = axes.size() == 2 ? 6 : axes[0] == 0 ? 2 : 3;  // group size on (x: 2, y: 3)
    out.push_back({"psum_scatter untiled over " + gname,
                   DType::F64,
                   {4, n},
                   [axes](DeviceContext &ctx, const Tensor &x) {
                     return ctx.reduce_scatter(x, axes, 1, false);
                   },
                   true});
    for (int64_t split : {0, 1})
      for (int64_t concat : {0, 1}) {
        out.push_back({"all_to_all " + std::to_string(split) + "->" + std::to_string(concat) +
                           " over " + gname,
                       DType::F32,
                       {6, 12},
                       [axes, split, concat](DeviceContext &ctx, const Tensor &x) {
                         return ctx.all_to_all(x, axes, split, concat);
                       }});
      }
  }
  out.push_back(
      {"ppermute shift along y", DType::F32, {3, 2}, [](DeviceContext &ctx, const Tensor &x) {
         return ctx.ppermute(x, {1}, {{0, 1}, {1, 2}, {2, 0}});
       }});
  out.push_back({"ppermute partial with a self pair along y",
                 DType::BF16,
                 {4},
                 [](DeviceContext &ctx, const Tensor &x) {
                   return ctx.ppermute(x, {1}, {{2, 0}, {1, 1}});
                 }});
  out.push_back(
      {"ppermute swap along x", DType::Bool, {5}, [](DeviceContext &ctx, const Tensor &x) {
         return ctx.ppermute(x, {0}, {{0, 1}, {1, 0}});
       }});
  out.push_back({"ppermute over (y, x): a cycle of the six ranks",
                 DType::F64,
                 {2, 2},
                 [](DeviceContext &ctx, const Tensor &x) {
                   return ctx.ppermute(x, {1, 0}, {{0, 3}, {3, 1}, {1, 5}, {5, 2}, {2, 4}, {4, 0}});
                 }});
  out.push_back(
      {"axis_index and barrier", DType::I32, {1}, [](DeviceContext &ctx, const Tensor &x) {
         ctx.barrier();
         return Tensor::scalar(DType::I32, double(ctx.axis_index({1, 0})));
       }});
  return out;
}

}  // namespace

int main() {
  std::unique_ptr<MpiProcesses> procs = start_mpi_processes();
  const Mesh mesh({{"x", 2}, {"y", 3}});
  const int rank = procs->rank();
  if (procs->size() != mesh.num_devices()) {
    if (rank == 0) std::fprintf(stderr, "run with mpirun -np 6\n");
    return 2;
  }
  int failures = 0, checked = 0;
  const std::vector<Case> all = cases();
  for (bool deterministic : {true, false}) {
    std::unique_ptr<Fabric> fabric = make_mpi_fabric(mesh, deterministic);
    DeviceContext ctx(*fabric, rank);
    for (const Case &c : all) {
      std::vector<Tensor> expected(static_cast<size_t>(mesh.num_devices()));
      run_on_mesh(mesh, [&](DeviceContext &sim) {
        expected[sim.device()] = c.op(sim, input(c, sim.device()));
      });
      const Tensor got = c.op(ctx, input(c, rank));
      const Tensor &want = expected[static_cast<size_t>(rank)];
      const bool ok =
          (deterministic || !c.exact_sum) ? got.bitwise_equal(want) : close_enough(got, want);
      ++checked;
      if (!ok) {
        ++failures;
        std::printf("FAIL rank %d (%s): %s: got %s, want %s\n", rank,
                    deterministic ? "deterministic" : "MPI reductions", c.name.c_str(),
                    format_tensor(got, 20).c_str(), format_tensor(want, 20).c_str());
      }
    }
  }
  const double total = procs->max(static_cast<double>(failures));
  if (rank == 0)
    std::printf("%s: %d cases per rank in two modes, %d rank(s) failing\n",
                total == 0 ? "ok" : "FAIL", checked, static_cast<int>(total > 0));
  return total == 0 ? 0 : 1;
}
