// sharding/budget.h — the limits on the sharding phase's searches.
//
// Every search or enumeration of the sharding phase is bounded (issue 30,
// docs/limits.md): the layouts a reshard search visits, the strategies listed
// per op, and for `spmdc shard --auto` a CPU-time deadline that every step
// checks, the preparation included. A step past the deadline throws
// OutOfTime; sharding/shard.cpp turns it into a located `search-time-limit`
// error.
#pragma once

#include <cmath>
#include <cstddef>

#include "support/cpu_time.h"

namespace spmd::sharding {

/// A shortest-path search over the layouts of one array visits at most this
/// many layouts; past it the reshard is planned by a search restricted to
/// steps towards the target, and past that again by the direct plan.
inline constexpr size_t kMaxReshardLayouts = 20000;

/// Meshes with at most this many axes are searched over every layout (the
/// plan is the cheapest of all); larger meshes only over the layouts on the
/// way to the target (each dimension's axes a prefix of its source or target
/// axes).
inline constexpr int kExhaustiveReshardAxes = 4;

/// The exhaustive searches of one Connector (one per source layout) hold at
/// most this many layouts together; past it, new sources are searched
/// towards their target only.
inline constexpr size_t kMaxConnectorLayouts = 200000;

/// Strategies listed for one op (before the one that matches the propagated
/// layouts, which propagation always adds).
inline constexpr size_t kMaxStrategiesPerOp = 4096;

/// `shard --auto`'s search lists fewer: its pair tables hold the product of
/// two neighbours' candidates; on a mesh of more than kExhaustiveReshardAxes
/// axes fewer again.
inline constexpr size_t kMaxAutoCandidates = 1024;
inline constexpr size_t kMaxAutoCandidatesLargeMesh = 128;

/// Thrown when a Deadline has passed.
struct OutOfTime {};

/// A point in process CPU time (support/cpu_time.h); infinite by default.
class Deadline {
 public:
  Deadline() = default;
  explicit Deadline(double at_cpu_seconds) : at_(at_cpu_seconds) {}
  bool passed() const { return std::isfinite(at_) && process_cpu_seconds() >= at_; }
  /// Throws OutOfTime once the deadline has passed (reads the clock every
  /// 64th call: cheap enough for inner loops).
  void check() const {
    if (std::isfinite(at_) && (++calls_ & 63) == 0 && process_cpu_seconds() >= at_)
      throw OutOfTime{};
  }
  double at() const { return at_; }

 private:
  double at_ = HUGE_VAL;
  mutable unsigned calls_ = 0;
};

}  // namespace spmd::sharding
