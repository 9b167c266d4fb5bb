// runtime/mpi/mpi_executor.cpp — the CPU MPI executor (spmdrt/mpi.h).
//
// One process per mesh position: world rank r runs position r with a
// DeviceContext on the MPI fabric. The launch is checked before any input is
// read (world size == mesh size, the same verdict on every rank, reported once).
// Timed iterations start after a world barrier; a step's time is the largest
// of the processes' times from that barrier to their finish, which is the
// whole-mesh step of StepClock up to the barrier's release skew (process
// clocks on different nodes are not comparable, durations are). OpenBLAS gets
// the node's cores divided by the job's processes on the node.
#include <chrono>

#include "internal.h"
#include "spmdrt/mpi.h"

namespace spmd::rt {
namespace {

class CpuMpiExecutor final : public Executor {
 public:
  CpuMpiExecutor(const std::vector<ProgramFunction> &functions, const std::vector<CpuBody> &bodies)
      : functions_(functions), bodies_(bodies), processes_(start_mpi_processes()) {}
  const char *name() const override { return "mpi"; }
  Processes &processes() override { return *processes_; }

  std::string check_launch(const ProgramFunction &f, const RunRequest &) override {
    return check_world_size(processes_->size(), f);
  }

  std::vector<int64_t> local_devices(const Mesh &) const override {
    return {static_cast<int64_t>(processes_->rank())};
  }

  std::vector<std::vector<Tensor>> run(size_t fn, const std::vector<std::vector<Tensor>> &locals,
                                       const RunRequest &request,
                                       std::vector<double> &seconds) override {
    const ProgramFunction &f = functions_.at(fn);
    // The node's cores are shared by the job's processes on it.
    detail::share_cores_among(processes_->local_size());
    std::unique_ptr<Fabric> fabric = make_mpi_fabric(f.mesh, request.deterministic);
    DeviceContext ctx(*fabric, processes_->rank());
    MeteredDevice metered(request, processes_->rank(), locals.at(0));
    std::vector<std::vector<Tensor>> out(1);
    StepClock clock(1);
    const int total = 1 + request.warmup + request.iters;
    for (int it = 0; it < total; ++it) {
      const bool timed = it > request.warmup;
      if (timed) {
        processes_->barrier();
        clock.start(0);
      }
      std::vector<Tensor> r = bodies_.at(fn)(ctx, locals.at(0));
      if (timed) {
        clock.finish(0);
        seconds.push_back(processes_->max(clock.step_seconds()));
      }
      if (it == 0) out[0] = std::move(r);
    }
    return out;
  }

 private:
  const std::vector<ProgramFunction> &functions_;
  const std::vector<CpuBody> &bodies_;
  std::unique_ptr<MpiProcesses> processes_;
};

}  // namespace

void run_on_mpi_mesh(MpiProcesses &processes, const Mesh &mesh,
                     const std::function<void(DeviceContext &)> &body) {
  if (processes.size() != mesh.num_devices())
    throw RuntimeError("this MPI job has " + std::to_string(processes.size()) +
                       " processes but the mesh " + format_mesh(mesh) + " has " +
                       std::to_string(mesh.num_devices()) + " positions, one per process");
  detail::share_cores_among(processes.local_size());
  std::unique_ptr<Fabric> fabric = make_mpi_fabric(mesh, false);
  DeviceContext ctx(*fabric, processes.rank());
  body(ctx);
}

ExecutorFactory mpi_cpu_executor(const std::vector<ProgramFunction> &functions,
                                 const std::vector<CpuBody> &bodies) {
  return [&functions, &bodies] { return std::make_unique<CpuMpiExecutor>(functions, bodies); };
}

}  // namespace spmd::rt
