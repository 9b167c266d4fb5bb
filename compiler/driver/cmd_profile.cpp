// driver/cmd_profile.cpp — `spmdc profile`: measure the machine it runs on.
//
// Measures the CPU runtime's simulated mesh (one thread per device,
// spmdrt/collectives.h) with analysis/profile_measure.h and writes a hardware
// profile file (analysis/profile_file.h) that `spmdc shard --profile` and
// `spmdc cost --profile` read. `spmdc-profile` (tools/spmdc_profile.cpp) does
// the same over MPI processes.
#include <iostream>

#include "analysis/profile_file.h"
#include "analysis/profile_measure.h"
#include "driver/commands.h"
#include "driver/profile_options.h"
#include "spmdrt/collectives.h"

namespace spmd::driver {

namespace {

int run_profile(const ProfileOptions &o) {
  if (std::string why = check_profile_options(o); !why.empty()) {
    std::cerr << "spmdc: error: " << why << "\n";
    return kExitUserError;
  }
  const rt::Mesh mesh = profile_mesh(o.measure);
  MeasuredProfile m = measure_profile(
      o.measure,
      [&](const std::function<void(rt::DeviceContext &)> &body) { rt::run_on_mesh(mesh, body); });
  m.profile.name = o.name;
  m.profile.description = "measured by `spmdc profile` on the CPU runtime's simulated mesh of " +
                          std::to_string(o.measure.devices) + " devices (one thread each), " +
                          "collectives of 8 B to " + format_bytes(o.measure.max_bytes);
  if (!o.quiet) std::cerr << format_measurements(m);
  const std::string text = profile_json(m.profile);
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
  add_profile_options(cmd, o, "Devices of the simulated mesh (default 8)");
  out.push_back({cmd, [] { return run_profile(o); }});
}

}  // namespace spmd::driver
