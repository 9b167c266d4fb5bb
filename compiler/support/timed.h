// support/timed.h — `-v` timings of the phases and passes.
//
// The driver's `-v` logs every phase of compilation and every pass of a
// derivation with its wall-clock and CPU time and the process's peak
// resident memory so far (debug level), so that a slow or memory-hungry pass
// on a large program shows without a profiler; bench/compiler_bench times
// whole commands.
#pragma once

#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <chrono>
#include <ctime>
#include <utility>

namespace spmd {

/// Runs `fn()` and, when debug logging is on, logs `phase <name>: <wall> ms
/// (<cpu> ms CPU, peak RSS <n> MiB)`; returns what `fn` returns.
template <typename Fn>
decltype(auto) timed(const char *name, Fn &&fn) {
  if (!spdlog::should_log(spdlog::level::debug)) return std::forward<Fn>(fn)();
  struct Log {
    const char *name;
    std::chrono::steady_clock::time_point wall = std::chrono::steady_clock::now();
    std::clock_t cpu = std::clock();
    ~Log() {
      rusage usage{};
      getrusage(RUSAGE_SELF, &usage);
      spdlog::debug(
          "phase {}: {:.3f} ms ({:.3f} ms CPU, peak RSS {} MiB)", name,
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall)
              .count(),
          1000.0 * static_cast<double>(std::clock() - cpu) / CLOCKS_PER_SEC,
          usage.ru_maxrss / 1024);
    }
  } log{name};
  return std::forward<Fn>(fn)();
}

}  // namespace spmd
