// sharding/polish.cpp — see polish.h.
#include "sharding/polish.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>

#include "sharding/plan_walker.h"
#include "support/cpu_time.h"

namespace spmd::sharding {

namespace {

double instr_seconds(const Problem &p, const Plan &plan, size_t i) {
  const int s = plan.choice[i];
  if (s < 0) return 0;
  const Strategy &st = p.strategies[i][static_cast<size_t>(s)];
  const double w = p.weight(static_cast<int>(i));
  return w * st.compute_s + w * st.finish_s;
}

void set_member(const Problem &p, Plan &plan, const PolishNode::Member &m, int a) {
  const auto k = static_cast<size_t>(m.index);
  const auto at = static_cast<size_t>(m.at[static_cast<size_t>(a)]);
  switch (m.kind) {
    case PolishNode::Member::Kind::Param:
      plan.params[k] = p.param_candidates[k][at];
      break;
    case PolishNode::Member::Kind::Result:
      plan.results[k] = p.result_candidates[k][at];
      break;
    case PolishNode::Member::Kind::Op:
      plan.choice[k] = static_cast<int>(at);
      break;
  }
}

/// A value read by more nodes is left to the other moves (each layout
/// tried costs a pass over its readers), and at most this many layouts of a
/// value are tried.
constexpr size_t kMaxReaders = 16;
constexpr size_t kMaxLayouts = 32;

class Polisher {
 public:
  Polisher(Problem &p, const std::vector<PolishNode> &nodes, const MemoryModel *memory,
           std::vector<int> start)
      : p_(p), nodes_(nodes), memory_(memory), choice_(std::move(start)) {
    plan_ = plan_of(p, nodes, choice_);
    param_at_.assign(p.flat.params.size(), 0);
    result_at_.assign(p.flat.results.size(), 0);
    for (size_t v = 0; v < nodes.size(); ++v) set_plan(v, choice_[v]);
    // The ops' own seconds per node and candidate (a node's members are
    // disjoint from every other node's).
    unary_.resize(nodes.size());
    affected_.resize(nodes.size());
    nodes_of_value_.resize(p.uses.size());
    readers_.resize(p.uses.size());
    for (size_t v = 0; v < nodes.size(); ++v) {
      unary_[v].assign(nodes[v].candidates, 0);
      for (const PolishNode::Member &m : nodes[v].members) {
        if (m.kind == PolishNode::Member::Kind::Op) {
          const auto i = static_cast<size_t>(m.index);
          const double w = p.weight(m.index);
          for (size_t a = 0; a < nodes[v].candidates; ++a) {
            const Strategy &st = p.strategies[i][static_cast<size_t>(m.at[a])];
            unary_[v][a] += w * st.compute_s + w * st.finish_s;
          }
        }
        // The values whose reshards depend on this member: what it produces
        // and what it reads (constants cost nothing).
        auto touch = [&](ir::ValueId x) {
          const int prod = p.producer[static_cast<size_t>(x)];
          if (prod >= 0 && p.is_creation(prod)) return;
          if (std::find(affected_[v].begin(), affected_[v].end(), x) == affected_[v].end())
            affected_[v].push_back(x);
        };
        auto read = [&](ir::ValueId x, int operand) {
          touch(x);
          const int prod = p.producer[static_cast<size_t>(x)];
          if (prod < 0 || !p.is_creation(prod))
            readers_[static_cast<size_t>(x)].push_back({v, &m, operand});
        };
        switch (m.kind) {
          case PolishNode::Member::Kind::Param:
            touch(p.flat.params[static_cast<size_t>(m.index)].value);
            break;
          case PolishNode::Member::Kind::Result:
            read(p.flat.returns[static_cast<size_t>(m.index)], 0);
            break;
          case PolishNode::Member::Kind::Op: {
            const ir::Instr &in = p.flat.body[static_cast<size_t>(m.index)];
            for (size_t k = 0; k < in.operands.size(); ++k)
              read(in.operands[k], static_cast<int>(k));
            for (ir::ValueId x : in.results) touch(x);
            break;
          }
        }
      }
      for (ir::ValueId x : affected_[v]) nodes_of_value_[static_cast<size_t>(x)].push_back(v);
    }
    value_cost_.assign(p.uses.size(), 0);
    for (size_t x = 0; x < p.uses.size(); ++x)
      value_cost_[x] = value_seconds(static_cast<ir::ValueId>(x));
    recount();
    if (memory_) {
      // PlanWalker keeps the memory sums; its pairwise problem only sizes the nodes.
      shape_.unary.resize(nodes.size());
      for (size_t v = 0; v < nodes.size(); ++v) shape_.unary[v].assign(nodes[v].candidates, 0);
      walker_.emplace(shape_, *memory_, choice_);
    }
  }

  /// evaluate()'s total of the plan as it stands (kept by the moves' changes).
  double total() const { return infinite_ > 0 ? HUGE_VAL : finite_; }
  const std::vector<int> &choice() const { return choice_; }

  /// The change of the total if node v took candidate a (infinite when a
  /// reshard it needs is impossible).
  double price(size_t v, int a) {
    const int from = choice_[v];
    if (a == from) return 0;
    set_plan(v, a);
    double d = unary_[v][static_cast<size_t>(a)] - unary_[v][static_cast<size_t>(from)];
    int infinite = 0;
    for (ir::ValueId x : affected_[v]) {
      const double c = value_seconds(x), old = value_cost_[static_cast<size_t>(x)];
      infinite += std::isinf(c) ? 1 : 0;
      infinite -= std::isinf(old) ? 1 : 0;
      d += (std::isinf(c) ? 0 : c) - (std::isinf(old) ? 0 : old);
    }
    set_plan(v, from);
    return infinite > 0 ? HUGE_VAL : infinite < 0 ? -HUGE_VAL : d;
  }

  /// Node v to candidate a (the plan, its costs; not the memory sums).
  void set(size_t v, int a) {
    if (a == choice_[v]) return;
    set_plan(v, a);
    finite_ += unary_[v][static_cast<size_t>(a)] - unary_[v][static_cast<size_t>(choice_[v])];
    for (ir::ValueId x : affected_[v]) {
      double &cost = value_cost_[static_cast<size_t>(x)];
      remove(cost);
      cost = value_seconds(x);
      add(cost);
    }
    choice_[v] = a;
  }

  /// Node v's cheapest candidate given the rest of the plan.
  int cheapest(size_t v) {
    int best = choice_[v];
    double least = 0;
    // A candidate can save at most the reshards around v (they cost >= 0):
    // one whose own cost rises by more is not priced.
    double around = 0;
    for (ir::ValueId x : affected_[v]) around += value_cost_[static_cast<size_t>(x)];
    const double here = unary_[v][static_cast<size_t>(choice_[v])];
    for (size_t a = 0; a < nodes_[v].candidates; ++a) {
      if (unary_[v][a] - here - around >= least) continue;
      const double d = price(v, static_cast<int>(a));
      if (d < least - 1e-12 * std::abs(finite_)) {
        least = d;
        best = static_cast<int>(a);
      }
    }
    return best;
  }

  bool fits(const PlanWalker::Move &move) { return !walker_ || walker_->fits(move); }
  /// Records a move already set() in the memory sums.
  void made(const PlanWalker::Move &move) {
    if (walker_) walker_->make(move);
  }

  /// The nodes that read value x (in order, each once).
  std::vector<size_t> reader_nodes(ir::ValueId x) const {
    std::vector<size_t> out;
    for (const Reader &r : readers_[static_cast<size_t>(x)])
      if (out.empty() || out.back() != r.node) out.push_back(r.node);
    return out;
  }

  /// The layouts value x's readers can need (at most `cap`).
  std::vector<const Sharding *> needs_of(ir::ValueId x, size_t cap) {
    struct Need {
      const Sharding *layout;
      size_t last_node;
      int nodes;
    };
    std::vector<Need> all;
    for (const Reader &r : readers_[static_cast<size_t>(x)])
      for (size_t a = 0; a < nodes_[r.node].candidates; ++a) {
        const Sharding &need = need_at(r, a);
        auto it =
            std::find_if(all.begin(), all.end(), [&](const Need &n) { return *n.layout == need; });
        if (it == all.end()) {
          all.push_back({&need, r.node, 1});
        } else if (it->last_node != r.node) {
          it->last_node = r.node;
          ++it->nodes;
        }
      }
    // Only a layout two readers can need (one reader alone is a single
    // move) that costs a reshard to make (else each reader's own move sees
    // all it changes).
    std::vector<const Sharding *> out;
    const Sharding *have = layout_of(x);
    const Type &t = p_.type(x);
    for (const Need &n : all)
      if (n.nodes > 1 && out.size() < cap && have && *n.layout != *have &&
          p_.connector->seconds(t.shape, t.dtype, *have, *n.layout) > 0)
        out.push_back(n.layout);
    return out;
  }

  /// Whether moving `readers` onto `layout` of x may pay: their own costs
  /// (compute and finish) rise by less than all the reshards around them
  /// cost (a heuristic: the readers' second pass may keep fewer of them).
  bool promising(ir::ValueId x, const std::vector<size_t> &readers, const Sharding &layout) {
    double rise = 0, around = 0;
    seen_values_.clear();
    for (size_t v : readers) {
      double least = HUGE_VAL;
      for (size_t a = 0; a < nodes_[v].candidates; ++a) {
        bool all = true;
        for (const Reader &r : readers_[static_cast<size_t>(x)])
          all = all && (r.node != v || need_at(r, a) == layout);
        if (all) least = std::min(least, unary_[v][a] - unary_[v][static_cast<size_t>(choice_[v])]);
      }
      if (std::isfinite(least)) rise += least;
      for (ir::ValueId y : affected_[v])
        if (std::find(seen_values_.begin(), seen_values_.end(), y) == seen_values_.end()) {
          seen_values_.push_back(y);
          if (std::isfinite(value_cost_[static_cast<size_t>(y)]))
            around += value_cost_[static_cast<size_t>(y)];
        }
    }
    return rise < around;
  }

  /// Node v's cheapest candidate among those whose every read of x needs
  /// `layout`, or -1.
  int cheapest_needing(size_t v, ir::ValueId x, const Sharding &layout) {
    int best = -1;
    double least = HUGE_VAL;
    for (size_t a = 0; a < nodes_[v].candidates; ++a) {
      bool all = true;
      for (const Reader &r : readers_[static_cast<size_t>(x)])
        all = all && (r.node != v || need_at(r, a) == layout);
      if (!all) continue;
      const double d = price(v, static_cast<int>(a));
      if (best < 0 || d < least) {
        least = d;
        best = static_cast<int>(a);
      }
    }
    return best;
  }

  /// The nodes sharing a value with node v (not v).
  std::vector<size_t> around(size_t v) const {
    std::vector<size_t> out;
    for (ir::ValueId x : affected_[v])
      for (size_t u : nodes_of_value_[static_cast<size_t>(x)])
        if (u != v && std::find(out.begin(), out.end(), u) == out.end()) out.push_back(u);
    return out;
  }

  /// Marks the nodes sharing a value with node v.
  void mark_around(size_t v, std::vector<char> &marks) const {
    marks[v] = 1;
    for (ir::ValueId x : affected_[v])
      for (size_t u : nodes_of_value_[static_cast<size_t>(x)]) marks[u] = 1;
  }

  /// The total summed again: the running one drifts by rounding.
  void recount() {
    finite_ = 0;
    infinite_ = 0;
    for (size_t i = 0; i < p_.flat.body.size(); ++i) finite_ += instr_seconds(p_, plan_, i);
    for (double c : value_cost_) add(c);
  }

 private:
  void add(double c) {
    if (std::isinf(c))
      ++infinite_;
    else
      finite_ += c;
  }
  void remove(double c) {
    if (std::isinf(c))
      --infinite_;
    else
      finite_ -= c;
  }

  void set_plan(size_t v, int a) {
    for (const PolishNode::Member &m : nodes_[v].members) {
      set_member(p_, plan_, m, a);
      if (m.kind == PolishNode::Member::Kind::Param)
        param_at_[static_cast<size_t>(m.index)] = m.at[static_cast<size_t>(a)];
      if (m.kind == PolishNode::Member::Kind::Result)
        result_at_[static_cast<size_t>(m.index)] = m.at[static_cast<size_t>(a)];
    }
  }

  /// reshard_seconds(p_, plan_, x), the connector's seconds remembered by
  /// the layouts' addresses (each a candidate's or a strategy's, which
  /// also names the value).
  double value_seconds(ir::ValueId x) {
    const Sharding *have = layout_of(x);
    if (!have) return 0;  // a constant
    const Type &t = p_.type(x);
    double s = 0;
    for_each_reshard(p_, plan_, x, *have, [&](const Sharding &need, Use u) {
      const Sharding *at =
          u.instr == Use::kReturn
              ? &p_.result_candidates[static_cast<size_t>(u.operand)][static_cast<size_t>(
                    result_at_[static_cast<size_t>(u.operand)])]
              : &need;
      auto [it, fresh] = seconds_.try_emplace({have, at}, 0.0);
      if (fresh) it->second = p_.connector->seconds(t.shape, t.dtype, *have, need);
      s += p_.use_weight(x, u) * it->second;
    });
    return s;
  }

  /// A read of a value by a node's member: its operand (a result's: 0).
  struct Reader {
    size_t node = 0;
    const PolishNode::Member *member = nullptr;
    int operand = 0;
  };
  const Sharding &need_at(const Reader &r, size_t a) const {
    const auto at = static_cast<size_t>(r.member->at[a]);
    const auto k = static_cast<size_t>(r.member->index);
    if (r.member->kind == PolishNode::Member::Kind::Result) return p_.result_candidates[k][at];
    return p_.strategies[k][at].operands[static_cast<size_t>(r.operand)];
  }

  /// Value x's layout in the plan (a candidate's or a strategy's), or
  /// nullptr for a constant.
  const Sharding *layout_of(ir::ValueId x) const {
    const int prod = p_.producer[static_cast<size_t>(x)];
    if (prod < 0) {
      const auto k = static_cast<size_t>(-prod - 1);
      return &p_.param_candidates[k][static_cast<size_t>(param_at_[k])];
    }
    const int choice = plan_.choice[static_cast<size_t>(prod)];
    if (choice < 0) return nullptr;
    return &p_.strategies[static_cast<size_t>(prod)][static_cast<size_t>(choice)].results.at(
        static_cast<size_t>(p_.producer_result[static_cast<size_t>(x)]));
  }

  struct PairHash {
    size_t operator()(const std::pair<const Sharding *, const Sharding *> &k) const {
      return std::hash<const void *>()(k.first) * 31 + std::hash<const void *>()(k.second);
    }
  };

  Problem &p_;
  const std::vector<PolishNode> &nodes_;
  const MemoryModel *memory_;
  std::vector<int> choice_;
  Plan plan_;
  std::vector<std::vector<double>> unary_;
  std::vector<std::vector<ir::ValueId>> affected_;
  std::vector<std::vector<size_t>> nodes_of_value_;
  std::vector<std::vector<Reader>> readers_;  // per value
  std::vector<ir::ValueId> seen_values_;      // promising()'s
  std::vector<int> param_at_, result_at_;     // per parameter, result: its candidate
  std::unordered_map<std::pair<const Sharding *, const Sharding *>, double, PairHash> seconds_;
  std::vector<double> value_cost_;  // per value: reshard_seconds
  double finite_ = 0;               // the total without the infinite value costs
  int infinite_ = 0;                // how many value costs are infinite
  PairwiseProblem shape_;
  std::optional<PlanWalker> walker_;
};

}  // namespace

Plan plan_of(const Problem &p, const std::vector<PolishNode> &nodes,
             const std::vector<int> &choice) {
  Plan plan;
  plan.params.resize(p.flat.params.size());
  plan.results.resize(p.flat.results.size());
  plan.choice.assign(p.flat.body.size(), -1);
  for (size_t v = 0; v < nodes.size(); ++v)
    for (const PolishNode::Member &m : nodes[v].members) set_member(p, plan, m, choice[v]);
  return plan;
}

double plan_seconds(Problem &p, const Plan &plan) {
  double t = 0;
  for (size_t i = 0; i < p.flat.body.size(); ++i) t += instr_seconds(p, plan, i);
  for (size_t x = 0; x < p.uses.size(); ++x)
    t += reshard_seconds(p, plan, static_cast<ir::ValueId>(x));
  return t;
}

PolishResult polish(Problem &p, const std::vector<PolishNode> &nodes, const MemoryModel *memory,
                    const std::vector<std::vector<int>> &blocks, std::vector<int> start,
                    const PolishOptions &options) {
  const double deadline = process_cpu_seconds() + options.time_limit_s;
  Polisher w(p, nodes, memory, std::move(start));

  PolishResult out;
  out.start_s = w.total();
  // The nodes with a choice and a member; blocks of at least two of them.
  auto movable = [&](int v) {
    const PolishNode &n = nodes[static_cast<size_t>(v)];
    return v >= 0 && n.candidates > 1 && !n.members.empty();
  };
  std::vector<std::vector<int>> useful;
  for (const std::vector<int> &block : blocks) {
    if (block.empty() || !movable(block.front())) continue;
    std::vector<int> members;
    for (int v : block)
      if (movable(v) && std::find(members.begin(), members.end(), v) == members.end())
        members.push_back(v);
    if (members.size() > 1) useful.push_back(std::move(members));
  }
  std::vector<char> dirty(nodes.size(), 1), next(nodes.size(), 0);
  PlanWalker::Move move, best;
  std::vector<int> keep;
  std::vector<size_t> readers;
  for (int round = 0; round < options.max_rounds; ++round) {
    if (process_cpu_seconds() > deadline) break;
    const double before = w.total();
    bool moved = false;
    // Makes the best move found (its nodes' neighbours are looked at next round).
    auto take_best = [&](int &count) {
      for (const auto &[v, a] : best) {
        w.set(v, a);
        w.mark_around(v, next);
      }
      w.made(best);
      ++count;
      moved = true;
    };
    // One node at a time.
    for (size_t v = 0; v < nodes.size(); ++v) {
      if (!dirty[v] || !movable(static_cast<int>(v))) continue;
      if ((v & 63) == 0 && process_cpu_seconds() > deadline) break;
      const int a = w.cheapest(v);
      if (a == w.choice()[v]) continue;
      move.assign(1, {v, a});
      if (!w.fits(move)) continue;
      w.set(v, a);
      w.made(move);
      w.mark_around(v, next);
      ++out.moves;
      moved = true;
    }
    // The readers of a value agreeing on one layout of it (one reshard
    // serves them all): each to its cheapest candidate needing that layout,
    // then each to its cheapest.
    for (size_t xi = 0; xi < p.uses.size(); ++xi) {
      if ((xi & 63) == 0 && process_cpu_seconds() > deadline) break;
      const auto x = static_cast<ir::ValueId>(xi);
      readers = w.reader_nodes(x);
      readers.erase(std::remove_if(readers.begin(), readers.end(),
                                   [&](size_t u) { return !movable(static_cast<int>(u)); }),
                    readers.end());
      if (readers.size() < 2 || readers.size() > kMaxReaders) continue;
      if (std::none_of(readers.begin(), readers.end(),
                       [&](size_t u) { return dirty[u] != 0 || next[u] != 0; }))
        continue;
      keep.clear();
      for (size_t u : readers) keep.push_back(w.choice()[u]);
      const double base = w.total();
      double best_change = -1e-12 * std::abs(base);
      best.clear();
      for (const Sharding *layout : w.needs_of(x, kMaxLayouts)) {
        if (!w.promising(x, readers, *layout)) continue;
        for (size_t u : readers) {
          const int a = w.cheapest_needing(u, x, *layout);
          if (a >= 0) w.set(u, a);
        }
        for (size_t u : readers) w.set(u, w.cheapest(u));
        const double change = w.total() - base;
        move.clear();
        for (size_t i = 0; i < readers.size(); ++i)
          if (w.choice()[readers[i]] != keep[i])
            move.push_back({readers[i], w.choice()[readers[i]]});
        for (size_t i = readers.size(); i-- > 0;) w.set(readers[i], keep[i]);
        if (std::isfinite(change) && change < best_change && !move.empty() && w.fits(move)) {
          best_change = change;
          best = move;
        }
      }
      if (best.empty()) continue;
      take_best(out.shared_moves);
    }
    // Block moves, of the blocks next to a node this polish moved (the
    // search's block moves swept them all from its plan already).
    for (const std::vector<int> &block : useful) {
      if (process_cpu_seconds() > deadline) break;
      if (std::none_of(block.begin(), block.end(), [&](int v) {
            return (round > 0 && dirty[static_cast<size_t>(v)] != 0) ||
                   next[static_cast<size_t>(v)] != 0;
          }))
        continue;
      const auto anchor = static_cast<size_t>(block.front());
      const int from = w.choice()[anchor];
      keep.resize(block.size());
      for (size_t i = 0; i < block.size(); ++i) keep[i] = w.choice()[static_cast<size_t>(block[i])];
      const double base = w.total();
      double best_change = -1e-12 * std::abs(base);
      best.clear();
      for (size_t a = 0; a < nodes[anchor].candidates; ++a) {
        if (static_cast<int>(a) == from) continue;
        w.set(anchor, static_cast<int>(a));
        for (int sweep = 0; sweep < 2; ++sweep)
          for (size_t i = 1; i < block.size(); ++i) {
            const auto v = static_cast<size_t>(block[i]);
            w.set(v, w.cheapest(v));
          }
        const double change = w.total() - base;
        move.clear();
        for (size_t i = 0; i < block.size(); ++i) {
          const auto v = static_cast<size_t>(block[i]);
          if (w.choice()[v] != keep[i]) move.push_back({v, w.choice()[v]});
        }
        for (size_t i = block.size(); i-- > 0;) w.set(static_cast<size_t>(block[i]), keep[i]);
        if (std::isfinite(change) && change < best_change && w.fits(move)) {
          best_change = change;
          best = move;
        }
      }
      if (best.empty()) continue;
      take_best(out.block_moves);
    }
    ++out.rounds;
    w.recount();
    if (!moved || before - w.total() <= options.min_gain * std::abs(before)) break;
    dirty.swap(next);
    std::fill(next.begin(), next.end(), 0);
  }
  out.total_s = w.total();
  out.choice = w.choice();

  return out;
}

}  // namespace spmd::sharding
