// bench/mesh_timing.h — timing one step of a simulated mesh, shared by the benchmarks.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

#include "spmdrt/collectives.h"

namespace spmd::bench {

/// Median microseconds of one call of the step `make(ctx)` returns for each device: a
/// warm-up call, then `iterations` calls with a barrier before and after each (device
/// 0's clock), as the steps of an executable are timed.
inline double median_call_us(
    const rt::Mesh &mesh, int iterations,
    const std::function<std::function<void()>(rt::DeviceContext &)> &make) {
  std::vector<double> us;
  rt::run_on_mesh(mesh, [&](rt::DeviceContext &ctx) {
    const std::function<void()> once = make(ctx);
    once();  // warm-up
    for (int i = 0; i < iterations; ++i) {
      ctx.barrier();
      const auto start = std::chrono::steady_clock::now();
      once();
      ctx.barrier();
      const auto stop = std::chrono::steady_clock::now();
      if (ctx.device() == 0)
        us.push_back(std::chrono::duration<double>(stop - start).count() * 1e6);
    }
  });
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

}  // namespace spmd::bench
