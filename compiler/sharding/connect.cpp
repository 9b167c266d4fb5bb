// sharding/connect.cpp — see connect.h.
//
// The search: from the source sharding, Dijkstra over every sharding the
// steps can reach (partial axes only shrink, so the space is finite: each
// mesh axis splits one dimension in some position, is partial, or
// replicates). Costs are compared as integer picoseconds, then by the number
// of steps, so equal-cost alternatives resolve the same way every time.
#include "sharding/connect.h"

#include <cmath>
#include <functional>
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
  std::vector<Node> nodes;
  std::map<Sharding, int> index;
};

Connector::Connector(const rt::Mesh &mesh, HardwareProfile profile)
    : mesh_(mesh), profile_(std::move(profile)) {}

Connector::~Connector() = default;

const Connector::Tree &Connector::tree(const Shape &global, DType dtype, const Sharding &src) {
  auto key = std::make_tuple(global, dtype, src);
  auto it = trees_.find(key);
  if (it != trees_.end()) return *it->second;
  auto tree = std::make_unique<Tree>();
  Tree &t = *tree;
  const int rank = static_cast<int>(global.size());
  const int num_axes = static_cast<int>(mesh_.axes().size());

  auto bytes = [&](const Sharding &s) { return local_bytes(mesh_, global, dtype, s); };
  auto fits_dim = [&](const std::vector<int> &axes, int64_t d) {
    return global[d] % product(mesh_, axes) == 0;
  };
  using Key = std::pair<int64_t, int>;  // (cost, steps)
  using Entry = std::pair<Key, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;
  auto relax = [&](int from, ReshardStep step) {
    const Tree::Node &f = t.nodes[from];
    double before = bytes(f.sharding), after = bytes(step.after);
    double n = static_cast<double>(product(mesh_, step.axes));
    step.moved_bytes = collective_traffic(step.op, n, before, after).moved_bytes;
    step.seconds = collective_seconds(step.op, step.moved_bytes, profile_);
    int64_t cost = f.cost_ps + std::llround(step.seconds * 1e12);
    int steps = f.steps + 1;
    auto [pos, inserted] = t.index.emplace(step.after, static_cast<int>(t.nodes.size()));
    if (inserted) {
      t.nodes.push_back(Tree::Node{step.after, cost, steps, from, step, false});
    } else {
      Tree::Node &n2 = t.nodes[pos->second];
      if (n2.done || Key{cost, steps} >= Key{n2.cost_ps, n2.steps}) return;
      n2.cost_ps = cost;
      n2.steps = steps;
      n2.parent = from;
      n2.via = step;
    }
    queue.push({{cost, steps}, pos->second});
  };

  t.index.emplace(src, 0);
  t.nodes.push_back(Tree::Node{src, 0, 0, -1, {}, false});
  queue.push({{0, 0}, 0});
  while (!queue.empty()) {
    auto [key, i] = queue.top();
    queue.pop();
    if (t.nodes[i].done || key != Key{t.nodes[i].cost_ps, t.nodes[i].steps}) continue;
    t.nodes[i].done = true;
    const Sharding s = t.nodes[i].sharding;
    std::vector<int> partial = s.partial.axes(), free;
    AxisSet used = s.used();
    for (int a = 0; a < num_axes; ++a)
      if (!used.contains(a)) free.push_back(a);
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
  auto [pos, inserted] = trees_.emplace(key, std::move(tree));
  return *pos->second;
}

ReshardPlan Connector::connect(const Shape &global, DType dtype, const Sharding &src,
                               const Sharding &dst) {
  ReshardPlan plan;
  if (src.dims.size() != global.size() || dst.dims.size() != global.size()) return plan;
  const Tree &t = tree(global, dtype, src);
  auto it = t.index.find(dst);
  if (it == t.index.end()) return plan;
  plan.possible = true;
  for (int i = it->second; t.nodes[i].parent >= 0; i = t.nodes[i].parent)
    plan.steps.push_back(t.nodes[i].via);
  std::reverse(plan.steps.begin(), plan.steps.end());
  for (const ReshardStep &s : plan.steps) {
    plan.seconds += s.seconds;
    plan.moved_bytes += s.moved_bytes;
  }
  return plan;
}

double Connector::cost(const Shape &global, DType dtype, const Sharding &src, const Sharding &dst) {
  if (src == dst) return 0;
  const Tree &t = tree(global, dtype, src);
  auto it = t.index.find(dst);
  if (it == t.index.end()) return HUGE_VAL;
  return static_cast<double>(t.nodes[it->second].cost_ps) * 1e-12;
}

}  // namespace spmd::sharding
