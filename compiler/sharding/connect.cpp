// sharding/connect.cpp — see connect.h.
//
// The search: from the source sharding, Dijkstra over every sharding the
// steps can reach (partial axes only shrink, so the space is finite: each
// mesh axis splits one dimension in some position, is partial, or
// replicates). Costs are compared as integer picoseconds, then by the number
// of steps, so equal-cost alternatives resolve the same way every time.
#include "sharding/connect.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <queue>

#include "analysis/stats.h"
#include "ops/shape_rules.h"

namespace spmd::sharding {

namespace {

/// Ordered non-empty subsets of `set` of at most `max_size` elements.
std::vector<std::vector<int>> ordered_subsets(const std::vector<int> &set, size_t max_size) {
  std::vector<std::vector<int>> out;
  std::vector<int> current;
  std::vector<bool> used(set.size(), false);
  std::function<void()> rec = [&] {
    if (!current.empty()) out.push_back(current);
    if (current.size() == max_size) return;
    for (size_t i = 0; i < set.size(); ++i) {
      if (used[i]) continue;
      used[i] = true;
      current.push_back(set[i]);
      rec();
      current.pop_back();
      used[i] = false;
    }
  };
  rec();
  return out;
}

constexpr size_t kMaxAxesPerStep = 3;

int64_t product(const rt::Mesh &mesh, const std::vector<int> &axes) {
  int64_t n = 1;
  for (int a : axes) n *= mesh.axis_size(a);
  return n;
}

}  // namespace

int ReshardPlan::collectives() const {
  int n = 0;
  for (const ReshardStep &s : steps) n += op_communicates(s.op) ? 1 : 0;
  return n;
}

std::string step_str(const ReshardStep &step, const rt::Mesh &mesh) {
  std::string axes = axis_list_str(step.axes, mesh);
  switch (step.op) {
    case OpCode::Psum:
      return "psum(v, " + axes + ")";
    case OpCode::PsumScatter:
      return "psum_scatter(v, " + axes + ", scatter_dimension=" + std::to_string(step.dim) + ")";
    case OpCode::AllGather:
    case OpCode::AllGatherInvariant:
      return "all_gather(v, " + axes + ", axis=" + std::to_string(step.dim) + ")";
    case OpCode::AllToAll:
      return "all_to_all(v, " + axes + ", split_axis=" + std::to_string(step.dim2) +
             ", concat_axis=" + std::to_string(step.dim) + ")";
    case OpCode::Pscatter:
      return "pscatter(v, " + axes + ", axis=" + std::to_string(step.dim) + ")";
    default:
      return std::string(op_spelling(step.op));
  }
}

struct Connector::Tree {
  struct Node {
    Sharding sharding;
    int64_t cost_ps = 0;  // picoseconds
    int steps = 0;
    int parent = -1;
    ReshardStep via;
    bool done = false;
  };
  using Key = std::pair<int64_t, int>;  // (cost, steps)
  using Entry = std::pair<Key, int>;
  std::vector<Node> nodes;
  std::map<Sharding, int> index;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;  // the frontier
  std::optional<Sharding> goal;  // a directed search's target: only steps towards it
  bool capped = false;           // stopped at kMaxReshardLayouts
};

namespace {

bool is_prefix(const std::vector<int> &a, const std::vector<int> &b) {
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

}  // namespace

Connector::Connector(const rt::Mesh &mesh, HardwareProfile profile, size_t max_layouts)
    : mesh_(mesh),
      profile_(std::move(profile)),
      exhaustive_(exhaustive_mesh(mesh_)),
      max_layouts_(max_layouts) {}

Connector::~Connector() = default;

void Connector::price(ReshardStep &step, const Shape &global, DType dtype,
                      const Sharding &before) const {
  double b = local_bytes(mesh_, global, dtype, before),
         a = local_bytes(mesh_, global, dtype, step.after);
  double n = static_cast<double>(product(mesh_, step.axes));
  step.moved_bytes = collective_traffic(step.op, n, b, a).moved_bytes;
  step.seconds = collective_seconds(step.op, step.moved_bytes, profile_, mesh_, step.axes);
}

std::unique_ptr<Connector::Tree> Connector::start(const Sharding &src,
                                                  std::optional<Sharding> goal) const {
  auto t = std::make_unique<Tree>();
  t->goal = std::move(goal);
  t->index.emplace(src, 0);
  t->nodes.push_back(Tree::Node{src, 0, 0, -1, {}, false});
  t->queue.push({{0, 0}, 0});
  return t;
}

void Connector::grow(Tree &t, const Shape &global, DType dtype, const Sharding &stop) {
  const int rank = static_cast<int>(global.size());
  const int num_axes = static_cast<int>(mesh_.axes().size());
  auto fits_dim = [&](const std::vector<int> &axes, int64_t d) {
    return global[d] % product(mesh_, axes) == 0;
  };
  auto relax = [&](int from, ReshardStep step) {
    const Tree::Node &f = t.nodes[from];
    price(step, global, dtype, f.sharding);
    int64_t cost = f.cost_ps + std::llround(step.seconds * 1e12);
    int steps = f.steps + 1;
    auto pos = t.index.find(step.after);
    if (pos == t.index.end()) {
      // Past the budget no new layout is added: the search finishes over
      // the layouts it has (and the caller plans around it).
      if (t.nodes.size() >= max_layouts_) {
        t.capped = true;
        return;
      }
      pos = t.index.emplace(step.after, static_cast<int>(t.nodes.size())).first;
      t.nodes.push_back(Tree::Node{step.after, cost, steps, from, step, false});
    } else {
      Tree::Node &n2 = t.nodes[pos->second];
      if (n2.done || Tree::Key{cost, steps} >= Tree::Key{n2.cost_ps, n2.steps}) return;
      n2.cost_ps = cost;
      n2.steps = steps;
      n2.parent = from;
      n2.via = step;
    }
    t.queue.push({{cost, steps}, pos->second});
  };

  if (auto it = t.index.find(stop); it != t.index.end() && t.nodes[it->second].done) return;
  while (!t.queue.empty()) {
    deadline_.check();
    auto [key, i] = t.queue.top();
    t.queue.pop();
    if (t.nodes[i].done || key != Tree::Key{t.nodes[i].cost_ps, t.nodes[i].steps}) continue;
    t.nodes[i].done = true;
    const Sharding s = t.nodes[i].sharding;
    std::vector<int> partial = s.partial.axes(), free;
    AxisSet used = s.used();
    for (int a = 0; a < num_axes; ++a)
      if (!used.contains(a)) free.push_back(a);
    if (t.goal) {
      // Towards the goal only: each dimension's axes stay a prefix of what
      // they were or grow as a prefix of the goal's; partial axes the goal
      // keeps are kept, the others summed at once or scattered into place.
      const Sharding &g = *t.goal;
      const AxisSet removable = s.partial - g.partial;
      if (!removable.empty()) {
        ReshardStep st{OpCode::Psum, removable.axes(), 0, 0, s};
        st.after.partial = g.partial & s.partial;
        relax(i, st);
      }
      for (int d = 0; d < rank; ++d) {
        if (!is_prefix(s.dims[d], g.dims[d])) continue;
        const size_t have = s.dims[d].size();
        for (size_t k = 1; have + k <= g.dims[d].size(); ++k) {
          std::vector<int> next(g.dims[d].begin() + static_cast<long>(have),
                                g.dims[d].begin() + static_cast<long>(have + k));
          AxisSet n = AxisSet::of_all(next);
          if (removable.contains_all(n)) {
            ReshardStep st{OpCode::PsumScatter, next, d, 0, s};
            st.after.partial = s.partial - n;
            st.after.dims[d] = std::vector<int>(g.dims[d].begin(),
                                                g.dims[d].begin() + static_cast<long>(have + k));
            relax(i, st);
          }
          if ((n & used).empty()) {
            ReshardStep st{OpCode::Pscatter, next, d, 0, s};
            st.after.dims[d] = std::vector<int>(g.dims[d].begin(),
                                                g.dims[d].begin() + static_cast<long>(have + k));
            relax(i, st);
          }
        }
      }
      for (int d = 0; d < rank; ++d) {
        const std::vector<int> &axes = s.dims[d];
        for (size_t k = 1; k <= axes.size(); ++k) {
          std::vector<int> suffix(axes.end() - static_cast<long>(k), axes.end());
          ReshardStep gather{OpCode::AllGather, suffix, d, 0, s};
          gather.after.dims[d].resize(axes.size() - k);
          relax(i, gather);
          for (int e = 0; e < rank; ++e) {
            const size_t have = s.dims[e].size();
            if (e == d || !is_prefix(s.dims[e], g.dims[e]) || have + k > g.dims[e].size() ||
                !std::equal(suffix.begin(), suffix.end(),
                            g.dims[e].begin() + static_cast<long>(have)))
              continue;
            ReshardStep m{OpCode::AllToAll, suffix, d, e, gather.after};
            m.after.dims[e].insert(m.after.dims[e].end(), suffix.begin(), suffix.end());
            relax(i, m);
          }
        }
      }
    } else {
      // psum over some partial axes.
      for (const auto &a : nonempty_subsets(partial)) {
        ReshardStep st{OpCode::Psum, a, 0, 0, s};
        st.after.partial = s.partial - AxisSet::of_all(a);
        relax(i, st);
      }
      // psum_scatter of partial axes onto a dimension.
      for (const auto &a : ordered_subsets(partial, kMaxAxesPerStep))
        for (int d = 0; d < rank; ++d) {
          ReshardStep st{OpCode::PsumScatter, a, d, 0, s};
          st.after.partial = s.partial - AxisSet::of_all(a);
          st.after.dims[d].insert(st.after.dims[d].end(), a.begin(), a.end());
          if (fits_dim(st.after.dims[d], d)) relax(i, st);
        }
      // all_gather and all_to_all of the minor axes of a dimension.
      for (int d = 0; d < rank; ++d) {
        const std::vector<int> &axes = s.dims[d];
        for (size_t k = 1; k <= axes.size() && k <= kMaxAxesPerStep; ++k) {
          std::vector<int> suffix(axes.end() - static_cast<long>(k), axes.end());
          ReshardStep g{OpCode::AllGather, suffix, d, 0, s};
          g.after.dims[d].resize(axes.size() - k);
          relax(i, g);
          for (int e = 0; e < rank; ++e) {
            if (e == d) continue;
            ReshardStep m{OpCode::AllToAll, suffix, d, e, g.after};
            m.after.dims[e].insert(m.after.dims[e].end(), suffix.begin(), suffix.end());
            if (fits_dim(m.after.dims[e], e)) relax(i, m);
          }
        }
      }
      // pscatter (a local slice) along replicated axes.
      for (const auto &a : ordered_subsets(free, kMaxAxesPerStep))
        for (int d = 0; d < rank; ++d) {
          ReshardStep st{OpCode::Pscatter, a, d, 0, s};
          st.after.dims[d].insert(st.after.dims[d].end(), a.begin(), a.end());
          if (fits_dim(st.after.dims[d], d)) relax(i, st);
        }
    }
    if (s == stop) return;
  }
}

ReshardPlan Connector::path(const Tree &t, int node) {
  ReshardPlan plan;
  plan.possible = true;
  for (int i = node; t.nodes[i].parent >= 0; i = t.nodes[i].parent)
    plan.steps.push_back(t.nodes[i].via);
  std::reverse(plan.steps.begin(), plan.steps.end());
  for (const ReshardStep &s : plan.steps) {
    plan.seconds += s.seconds;
    plan.moved_bytes += s.moved_bytes;
  }
  return plan;
}

ReshardPlan Connector::direct(const Shape &global, DType dtype, const Sharding &src,
                              const Sharding &dst) const {
  ReshardPlan plan;
  plan.possible = true;
  plan.search = ReshardSearch::Direct;
  Sharding at = src;
  auto add = [&](ReshardStep step) {
    price(step, global, dtype, at);
    at = step.after;
    plan.seconds += step.seconds;
    plan.moved_bytes += step.moved_bytes;
    plan.steps.push_back(std::move(step));
  };
  if (AxisSet sum = src.partial - dst.partial; !sum.empty()) {
    ReshardStep st{OpCode::Psum, sum.axes(), 0, 0, at};
    st.after.partial = dst.partial;
    add(st);
  }
  std::vector<size_t> common(global.size(), 0);
  for (size_t d = 0; d < global.size(); ++d) {
    const std::vector<int> &have = at.dims[d], &want = dst.dims[d];
    while (common[d] < have.size() && common[d] < want.size() && have[common[d]] == want[common[d]])
      ++common[d];
    if (common[d] == have.size()) continue;
    ReshardStep st{OpCode::AllGather,
                   std::vector<int>(have.begin() + static_cast<long>(common[d]), have.end()),
                   static_cast<int64_t>(d), 0, at};
    st.after.dims[d].resize(common[d]);
    add(st);
  }
  for (size_t d = 0; d < global.size(); ++d) {
    const std::vector<int> &want = dst.dims[d];
    if (common[d] == want.size()) continue;
    ReshardStep st{OpCode::Pscatter,
                   std::vector<int>(want.begin() + static_cast<long>(common[d]), want.end()),
                   static_cast<int64_t>(d), 0, at};
    st.after.dims[d] = want;
    add(st);
  }
  return plan;
}

size_t Connector::PlanKeyHash::operator()(const PlanKeyView &k) const {
  uint64_t h = 0x9e3779b97f4a7c15ULL ^ static_cast<uint64_t>(k.dtype);
  auto mix = [&h](uint64_t x) { h = (h ^ x) * 0x100000001b3ULL + (h >> 29); };
  for (int64_t d : k.global) mix(static_cast<uint64_t>(d));
  for (const Sharding *s : {&k.src, &k.dst}) {
    mix(0xabcdef);
    for (const std::vector<int> &axes : s->dims) {
      mix(axes.size());
      for (int a : axes) mix(static_cast<uint64_t>(a) + 1);
    }
    mix(s->partial.bits());
  }
  return static_cast<size_t>(h);
}

const ReshardPlan &Connector::plan(const Shape &global, DType dtype, const Sharding &src,
                                   const Sharding &dst) {
  if (auto it = plans_.find(PlanKeyView{global, dtype, src, dst}); it != plans_.end())
    return it->second;
  ReshardPlan out;
  if (src.dims.size() != global.size() || dst.dims.size() != global.size() ||
      !src.partial.contains_all(dst.partial) || !fits(mesh_, global, dst)) {
    // Partial axes are only ever summed away; a layout must fit the array.
  } else if (src == dst) {
    out.possible = true;
  } else {
    bool done = false;
    auto tkey = std::make_tuple(global, dtype, src);
    auto it = trees_.find(tkey);
    if (exhaustive_ && it == trees_.end() && tree_layouts_ < kMaxConnectorLayouts)
      it = trees_.emplace(tkey, start(src, std::nullopt)).first;
    if (it != trees_.end()) {
      Tree &t = *it->second;
      const size_t before = t.nodes.size();
      grow(t, global, dtype, dst);
      tree_layouts_ += t.nodes.size() - before;
      if (auto n = t.index.find(dst); n != t.index.end() && t.nodes[n->second].done) {
        out = path(t, n->second);
        done = true;
      } else if (!t.capped) {
        done = true;  // every layout reachable was seen: none is dst
      }
    }
    if (!done) {
      std::unique_ptr<Tree> t = start(src, dst);
      grow(*t, global, dtype, dst);
      if (auto n = t->index.find(dst); n != t->index.end() && t->nodes[n->second].done) {
        out = path(*t, n->second);
        out.search = ReshardSearch::Directed;
      } else {
        out = direct(global, dtype, src, dst);
      }
    }
  }
  return plans_.emplace(PlanKey{global, dtype, src, dst}, std::move(out)).first->second;
}

ReshardPlan Connector::connect(const Shape &global, DType dtype, const Sharding &src,
                               const Sharding &dst) {
  return plan(global, dtype, src, dst);
}

double Connector::seconds(const Shape &global, DType dtype, const Sharding &src,
                          const Sharding &dst) {
  const ReshardPlan &p = plan(global, dtype, src, dst);
  return p.possible ? p.seconds : HUGE_VAL;
}

double Connector::cost(const Shape &global, DType dtype, const Sharding &src, const Sharding &dst) {
  if (src == dst) return 0;
  if (!exhaustive_) {
    // The searches (propagation, --auto) price up to millions of pairs: on a
    // large mesh each is the direct plan's cost, an upper bound of what
    // connect() then plans (the direct plan is one of the directed search's
    // paths), computed without a search and not remembered.
    deadline_.check();
    if (src.dims.size() != global.size() || dst.dims.size() != global.size() ||
        !src.partial.contains_all(dst.partial) || !fits(mesh_, global, dst))
      return HUGE_VAL;
    return direct(global, dtype, src, dst).seconds;
  }
  const ReshardPlan &p = plan(global, dtype, src, dst);
  return p.possible ? p.seconds : HUGE_VAL;
}

}  // namespace spmd::sharding
