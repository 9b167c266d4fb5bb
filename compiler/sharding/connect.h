// sharding/connect.h — resharding: the cheapest collectives from one sharding to another.
//
// connect(src, dst) answers the hidet RFC's question "which communication
// turns an array laid out as src into one laid out as dst, and what does it
// cost?" for any two shardings on an n-D mesh, partial sums included. A plan
// is a sequence of steps, each one op of the language on the local blocks:
//
//   psum(x, A)                        partial over A -> complete along A
//   psum_scatter(x, A, dim=d)         partial over A -> d also split over A (minor)
//   all_gather(x, A, axis=d)          d split over ..., A -> A no longer splits d
//                                     (A = the minor-most axes of d)
//   all_to_all(x, A, split=e, concat=d) the minor axes A of d move to e (minor)
//   pscatter(x, A, axis=d)            replicated along A -> d also split over A
//                                     (a local slice: no communication)
//
// Costs follow analysis/ (the conventions of `spmdc print --stats` and
// `spmdc cost`): bytes sent per device as nccl-tests count them, and time =
// alpha + bytes / bandwidth per collective that moves data under a hardware
// profile. The plan is a shortest path (Dijkstra, ties to fewer steps) over
// the shardings of the array, so it is the cheapest sequence of these steps;
// e.g. replicated -> split is a free local slice, partial -> split a single
// psum_scatter, a split moving between dimensions one all_to_all.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "analysis/cost.h"
#include "sharding/budget.h"
#include "sharding/sharding.h"

namespace spmd::sharding {

struct ReshardStep {
  OpCode op = OpCode::Psum;  // Psum, PsumScatter, AllGather, AllToAll or Pscatter
  std::vector<int> axes;     // in the order the collective names them (major first)
  int64_t dim = 0;           // scatter/gather dimension; all_to_all: the dimension left
  int64_t dim2 = 0;          // all_to_all: the dimension the axes move to
  Sharding after;            // the layout after this step
  double moved_bytes = 0;    // sent per device (analysis/stats.h convention)
  double seconds = 0;        // alpha + bytes / bandwidth (0 for pscatter)
};

/// How a plan was found (sharding/budget.h): a shortest path over every
/// layout (the cheapest plan of these steps), one over the layouts on the way
/// to the target (large meshes), or the direct plan (sum, gather what
/// differs, slice) when even that search passes its budget.
enum class ReshardSearch { Exhaustive, Directed, Direct };

struct ReshardPlan {
  bool possible = false;  // false only when dst is not a layout of the array
  ReshardSearch search = ReshardSearch::Exhaustive;
  std::vector<ReshardStep> steps;
  double seconds = 0;
  double moved_bytes = 0;
  int collectives() const;  // steps that move data
};

/// `all_gather(x, (i, j), axis=1)`-style text of one step, axes named from `mesh`.
std::string step_str(const ReshardStep &step, const rt::Mesh &mesh);

/// Plans reshardings on one mesh under one hardware profile; remembers the
/// shortest-path trees it computes (keyed by array shape, dtype and source)
/// and the plans (by source and target). Every search is bounded
/// (sharding/budget.h); with a deadline set, a search past it throws OutOfTime.
class Connector {
 public:
  /// `max_layouts`: the budget of each search (tests lower it to reach the fallbacks).
  Connector(const rt::Mesh &mesh, HardwareProfile profile, size_t max_layouts = kMaxReshardLayouts);
  ~Connector();
  Connector(const Connector &) = delete;
  Connector &operator=(const Connector &) = delete;

  ReshardPlan connect(const Shape &global, DType dtype, const Sharding &src, const Sharding &dst);
  /// The plan's seconds only (the same search, no steps built).
  double cost(const Shape &global, DType dtype, const Sharding &src, const Sharding &dst);
  /// connect()'s seconds (infinite when it is impossible), without copying
  /// the plan: what evaluate() charges. cost() is an upper bound of it on
  /// large meshes, where it plans the direct path only.
  double seconds(const Shape &global, DType dtype, const Sharding &src, const Sharding &dst);

  const rt::Mesh &mesh() const { return mesh_; }
  const HardwareProfile &profile() const { return profile_; }
  void set_deadline(Deadline deadline) { deadline_ = deadline; }

 private:
  struct Tree;
  const ReshardPlan &plan(const Shape &global, DType dtype, const Sharding &src,
                          const Sharding &dst);
  std::unique_ptr<Tree> start(const Sharding &src, std::optional<Sharding> goal) const;
  /// Dijkstra until `stop` is settled, the frontier is empty or the budget is spent.
  void grow(Tree &t, const Shape &global, DType dtype, const Sharding &stop);
  static ReshardPlan path(const Tree &t, int node);
  ReshardPlan direct(const Shape &global, DType dtype, const Sharding &src,
                     const Sharding &dst) const;
  /// Fills the step's bytes and seconds, from the layout before it.
  void price(ReshardStep &step, const Shape &global, DType dtype, const Sharding &before) const;

  rt::Mesh mesh_;
  HardwareProfile profile_;
  bool exhaustive_;  // few enough mesh axes to search every layout
  size_t max_layouts_;
  size_t tree_layouts_ = 0;  // layouts held by trees_ (at most kMaxConnectorLayouts)
  Deadline deadline_;
  std::map<std::tuple<Shape, DType, Sharding>, std::unique_ptr<Tree>> trees_;
  /// A plan's key: the array and the two layouts. Hashed, and looked up by a
  /// view of the caller's values (no copy): the searches ask for millions of
  /// plans, nearly all already made, and a tree map's key copies and
  /// comparisons of layouts were a fifth of a training step's search.
  struct PlanKey {
    Shape global;
    DType dtype;
    Sharding src, dst;
  };
  struct PlanKeyView {
    const Shape &global;
    DType dtype;
    const Sharding &src, &dst;
  };
  struct PlanKeyHash {
    using is_transparent = void;
    size_t operator()(const PlanKeyView &k) const;
    size_t operator()(const PlanKey &k) const {
      return (*this)(PlanKeyView{k.global, k.dtype, k.src, k.dst});
    }
  };
  struct PlanKeyEqual {
    using is_transparent = void;
    template <typename A, typename B>
    bool operator()(const A &a, const B &b) const {
      return a.dtype == b.dtype && a.global == b.global && a.src == b.src && a.dst == b.dst;
    }
  };
  std::unordered_map<PlanKey, ReshardPlan, PlanKeyHash, PlanKeyEqual> plans_;
};

}  // namespace spmd::sharding
