// driver/profile_tool/main.cpp — `spmdc-profile`: `spmdc profile` over MPI.
//
//   mpirun -np 8 spmdc-profile -o here.json [--devices-per-node 4]
//
// Each MPI process is one device (mesh position = world rank), and the
// collectives are the MPI fabric's (spmdrt/mpi.h), the ones CPU executables
// use under mpirun: the profile prices what a program built for MPI pays.
// Started without mpirun it is one process and says how to start it. Without
// --devices-per-node, a job spread over several nodes (fewer processes per node
// than in the job, as MPI_COMM_TYPE_SHARED reports) measures the link inside a
// node and the one between nodes separately. A separate program, not a
// subcommand, so that spmdc itself does not load MPI. Rank 0 prints and writes.
#include <fstream>
#include <iostream>

#include "analysis/profile_file.h"
#include "driver/profile_options.h"
#include "spmdrt/mpi.h"
#include "spmdrt/parallel.h"

int main(int argc, char **argv) {
  using namespace spmd;
  rt::keep_freed_memory();  // as the executables it measures for do
  rt::single_threaded_blas();
  driver::ProfileOptions o;
  o.name = "measured-mpi";
  CLI::App app(
      "Measure the collectives between MPI processes (one device each; start with mpirun -np N) "
      "and write a hardware profile file for --profile",
      "spmdc-profile");
  driver::add_profile_options(&app, o,
                              "Devices: must equal the number of MPI processes (default: that "
                              "number)");
  bool devices_given = false;
  try {
    app.parse(argc, argv);
    devices_given = app.count("--devices") > 0;
  } catch (const CLI::ParseError &e) {
    return app.exit(e);
  }
  if (!rt::mpi_available()) {
    std::cerr << "spmdc-profile: error: this build has no MPI (OpenMPI was not found when spmdc "
                 "was configured); `spmdc profile` measures the simulated mesh instead\n";
    return 1;
  }
  if (!rt::launched_by_mpi()) {
    std::cerr << "spmdc-profile: error: start it with mpirun (or srun), one process per device: "
                 "`mpirun -np 8 spmdc-profile -o profile.json`; `spmdc profile` measures the "
                 "simulated mesh of one process\n";
    return 1;
  }
  try {
    std::unique_ptr<rt::MpiProcesses> processes = rt::start_mpi_processes();
    const int world = processes->size();
    const bool lead = processes->rank() == 0;
    if (devices_given && o.measure.devices != world) {
      if (lead)
        std::cerr << "spmdc-profile: error: --devices " << o.measure.devices << " but the job has "
                  << world << " processes (one device each)\n";
      return 1;
    }
    o.measure.devices = world;
    if (o.measure.devices_per_node == 0 && processes->local_size() < world &&
        world % processes->local_size() == 0)
      o.measure.devices_per_node = processes->local_size();
    if (std::string why = driver::check_profile_options(o); !why.empty()) {
      if (lead) std::cerr << "spmdc-profile: error: " << why << "\n";
      return 1;
    }
    const rt::Mesh mesh = profile_mesh(o.measure);
    MeasuredProfile m =
        measure_profile(o.measure, [&](const std::function<void(rt::DeviceContext &)> &body) {
          rt::run_on_mpi_mesh(*processes, mesh, body);
        });
    if (!lead) return 0;
    m.profile.name = o.name;
    m.profile.description = "measured by `spmdc-profile` over " + std::to_string(world) +
                            " MPI processes (one device each" +
                            (o.measure.devices_per_node > 0
                                 ? ", " + std::to_string(o.measure.devices_per_node) + " per node"
                                 : std::string()) +
                            "), collectives of 8 B to " + format_bytes(o.measure.max_bytes);
    if (!o.quiet) std::cerr << format_measurements(m);
    const std::string text = profile_json(m.profile);
    if (o.output.empty()) {
      std::cout << text;
      return 0;
    }
    std::ofstream out(o.output);
    out << text;
    if (!out.flush()) {
      std::cerr << "spmdc-profile: error: cannot write " << o.output << "\n";
      return 1;
    }
    return 0;
  } catch (const std::exception &e) {
    std::cerr << "spmdc-profile: error: " << e.what() << "\n";
    return 1;
  }
}
