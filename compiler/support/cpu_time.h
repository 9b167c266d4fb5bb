// support/cpu_time.h — the CPU time this process has used, for budgets that
// must not depend on how loaded the machine is.
//
// A search given "1 second" by wall-clock time finds less on a machine whose
// cores are shared with other work; measured in the process's CPU time it
// does the same work whatever the load (the sharding search is
// single-threaded, so this is its own time).
#pragma once

#include <ctime>

namespace spmd {

/// Seconds of CPU time used by this process so far (all its threads).
inline double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

}  // namespace spmd
