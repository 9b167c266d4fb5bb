// sharding/auto_shard.cpp — see auto_shard.h for the formulation.
//
// Steps: 1. one node per parameter, op (not constants) and result, with its
// candidates (strategies with equal layouts merged); 2. followers: an
// elementwise op with one non-constant operand that it can always take as it
// comes (complete, or a partial sum into a linear op) takes, for each
// candidate of its producer's root, its cheapest strategy, and joins that
// root; 3. one
// binary per candidate of each root with a choice, node costs (followers'
// included) as objective coefficients; 4. each use between two roots: a
// linear term when one side has one layout class, else edge variables with
// marginal rows; 5. the memory rows; 6. CBC; 7. the plan.
//
// One objective: lower_plan makes each distinct reshard of a value (one per
// ReshardKey, problem.h) once, however many uses need it, and evaluate()
// prices it so. The uses of a value are grouped by their consumer's root;
// a reshard only one group can need is priced on the pair (producer root,
// that root), once per group; one that two groups can need gets a *copy*
// node — candidate 0: the copy exists, 1: it does not — whose pair with the
// producer's root prices the copy, and whose pairs with those groups' roots
// forbid (infinite cost) a candidate needing it while it does not exist.
// The problem stays pairwise, so reduce.h, elimination and CBC apply.
#include "sharding/auto_shard.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "analysis/cost.h"
#include "sharding/block_search.h"
#include "sharding/explain.h"
#include "sharding/ilp.h"
#include "sharding/lagrangian.h"
#include "sharding/pairwise.h"
#include "sharding/polish.h"
#include "sharding/reduce.h"
#include "support/cpu_time.h"

namespace spmd::sharding {
namespace {

constexpr double kTimeScale = 1e6;                // the objective in microseconds
constexpr double kBytesScale = 1e-6;              // memory rows in megabytes
constexpr size_t kNoCbcStates = size_t{1} << 22;  // elimination's table limit without CBC
/// What CBC needs per variable of the ILP, at the least, before it checks
/// its clock (the root LP): ~60 s for the 152k variables of the 1,000-op
/// bench stack with memory rows, under load (docs/sharding.md).
constexpr double kCbcSecondsPerVariable = 1e-4;
/// Seconds charged per byte of a parameter's block: far below any real cost
/// difference (16 MiB weigh 17 ps), it only breaks ties between plans of
/// equal time towards the one that stores less — e.g. a batch that arrives
/// split rather than replicated and sliced locally (both free to reshard).
constexpr double kParamByteTieBreak = 1e-18;
/// Under a memory limit, at most this many searches (fit_estimate), each
/// lowering the rows' limit by the last plan's overshoot, and below that
/// plan's rows count by at least this share of the limit (and a byte).
constexpr int kMemoryRounds = 4;
constexpr double kMemoryRoundStep = 1e-4;
constexpr int kRefineNodes = 200;
/// The relaxation's last bests best_by_evaluate() compares (each costs an
/// evaluate()).
constexpr size_t kRelaxationPlans = 4;
/// The share of the time limit the polish (polish.h) may take when the
/// solvers spent the limit.
constexpr double kPolishShare = 0.05;

enum class NodeKind { Param, Op, Result, Copy };

struct Node {
  NodeKind kind = NodeKind::Op;
  int index = 0;             // parameter k, instruction i, result k or (copy) value
  int root = -1;             // the node whose variables decide this one
  std::vector<int> cands;    // a root's candidates (parameter/result: layout index; op: strategy)
  std::vector<int> follow;   // a follower: its strategy for each candidate of its root
  int follow_operand = -1;   // a follower: the operand it follows
  std::vector<double> cost;  // a root: objective per candidate (its followers' included)
};

class AutoBuilder {
 public:
  AutoBuilder(Problem &p, const AutoOptions &options, AutoReport &report, DiagnosticEngine &diags)
      : p_(p), options_(options), report_(report), diags_(&diags) {}

  std::optional<Plan> run() {
    const double start = options_.start_cpu_s.value_or(process_cpu_seconds());
    deadline_ = Deadline(start + options_.time_limit_s);
    report_.ops = static_cast<int>(p_.flat.body.size());
    make_nodes();
    make_followers();
    tie_like_results();
    for (const Node &n : nodes_)
      report_.followers += n.root != self(n) && n.kind == NodeKind::Op ? 1 : 0;
    make_costs();
    group_uses();
    number_roots();
    make_pairs();
    report_.build_seconds = process_cpu_seconds() - start;
    if (options_.memory_per_device && options_.fit_estimate) return fit_estimate(start);
    if (options_.memory_per_device) {
      rows_limit_ = *options_.memory_per_device;
      report_.memory_rounds = 1;
      report_.rows_limit = rows_limit_;
    }
    std::optional<std::vector<size_t>> pick = solve(start);
    if (!pick) return std::nullopt;
    return no_worse_than_baselines(best_by_evaluate(*pick, start));
  }

 private:
  int self(const Node &n) const { return static_cast<int>(&n - nodes_.data()); }

  bool is_constant(ir::ValueId v) const {
    int prod = p_.producer[static_cast<size_t>(v)];
    return prod >= 0 && p_.is_creation(prod);
  }

  /// The node that defines value v (not for constants).
  int producer_node(ir::ValueId v) const {
    int prod = p_.producer[static_cast<size_t>(v)];
    return prod < 0 ? param_node_[static_cast<size_t>(-prod - 1)]
                    : op_node_[static_cast<size_t>(prod)];
  }

  /// The strategy of op node n when its root takes candidate position a.
  int strategy_at(const Node &n, size_t a) const {
    return n.root == self(n) ? n.cands[a] : n.follow[a];
  }

  /// Value v's layout when the root of its producer takes candidate position a.
  const Sharding &out(ir::ValueId v, size_t a) const {
    const Node &n = nodes_[static_cast<size_t>(producer_node(v))];
    if (n.kind == NodeKind::Param)
      return p_.param_candidates[static_cast<size_t>(n.index)][static_cast<size_t>(n.cands[a])];
    int s = strategy_at(n, a);
    return p_.strategies[static_cast<size_t>(n.index)][static_cast<size_t>(s)]
        .results[static_cast<size_t>(p_.producer_result[static_cast<size_t>(v)])];
  }

  /// What use u requires when its consumer's root takes candidate position b.
  const Sharding &requirement_at(const Use &u, size_t b) const {
    if (u.instr == Use::kReturn) {
      const Node &n = nodes_[static_cast<size_t>(result_node_[static_cast<size_t>(u.operand)])];
      return p_.result_candidates[static_cast<size_t>(u.operand)]
                                 [static_cast<size_t>(strategy_at(n, b))];
    }
    const Node &n = nodes_[static_cast<size_t>(op_node_[static_cast<size_t>(u.instr)])];
    return p_.strategies[static_cast<size_t>(u.instr)][static_cast<size_t>(strategy_at(n, b))]
        .operands[static_cast<size_t>(u.operand)];
  }

  double reshard(ir::ValueId v, const Sharding &have, const Sharding &need) {
    if (have == need) return 0;
    const Type &t = p_.type(v);
    return p_.connector->cost(t.shape, t.dtype, have, need);
  }

  // 1. Nodes.
  void make_nodes() {
    const ir::Function &f = p_.flat;
    for (size_t k = 0; k < f.params.size(); ++k) {
      Node n;
      n.kind = NodeKind::Param;
      n.index = static_cast<int>(k);
      for (size_t c = 0; c < p_.param_candidates[k].size(); ++c)
        n.cands.push_back(static_cast<int>(c));
      param_node_.push_back(add(std::move(n)));
    }
    op_node_.assign(f.body.size(), -1);
    for (size_t i = 0; i < f.body.size(); ++i) {
      if (p_.is_creation(static_cast<int>(i))) continue;
      Node n;
      n.kind = NodeKind::Op;
      n.index = static_cast<int>(i);
      const auto &strategies = p_.strategies[i];
      // Merge strategies with equal layouts: keep the cheapest.
      std::map<std::pair<std::vector<Sharding>, std::vector<Sharding>>, int> seen;
      for (size_t s = 0; s < strategies.size(); ++s) {
        if (!options_.simplify) {
          n.cands.push_back(static_cast<int>(s));
          continue;
        }
        auto key = std::make_pair(strategies[s].operands, strategies[s].results);
        auto [it, inserted] = seen.emplace(key, static_cast<int>(n.cands.size()));
        if (inserted) {
          n.cands.push_back(static_cast<int>(s));
        } else if (strategies[s].cost() <
                   strategies[static_cast<size_t>(n.cands[it->second])].cost()) {
          n.cands[it->second] = static_cast<int>(s);
        }
      }
      if (n.cands.empty())
        throw std::logic_error("shard: `" + std::string(op_spelling(f.body[i].op)) +
                               "` has no strategy on this mesh");
      op_node_[i] = add(std::move(n));
    }
    for (size_t k = 0; k < f.results.size(); ++k) {
      Node n;
      n.kind = NodeKind::Result;
      n.index = static_cast<int>(k);
      for (size_t c = 0; c < p_.result_candidates[k].size(); ++c)
        n.cands.push_back(static_cast<int>(c));
      result_node_.push_back(add(std::move(n)));
    }
  }

  int add(Node n) {
    n.root = static_cast<int>(nodes_.size());
    nodes_.push_back(std::move(n));
    return static_cast<int>(nodes_.size() - 1);
  }

  // 2. Followers.
  void make_followers() {
    if (!options_.simplify) return;
    const ir::Function &f = p_.flat;
    for (size_t i = 0; i < f.body.size(); ++i) {
      if (op_node_[i] < 0 || p_.ops[i].rule.family != RuleFamily::Elementwise) continue;
      const ir::Instr &in = f.body[i];
      int operand = -1;
      for (size_t k = 0; k < in.operands.size(); ++k) {
        if (is_constant(in.operands[k])) continue;
        if (operand >= 0) {
          operand = -2;
          break;
        }
        operand = static_cast<int>(k);
      }
      if (operand < 0) continue;
      ir::ValueId v = in.operands[static_cast<size_t>(operand)];
      if (p_.type(v).shape != p_.type(in.results[0]).shape) continue;
      Node &q = nodes_[static_cast<size_t>(op_node_[i])];
      int root = nodes_[static_cast<size_t>(producer_node(v))].root;
      const Node &r = nodes_[static_cast<size_t>(root)];
      // An operand that may arrive as a partial sum the op cannot take as it
      // comes (a non-linear op) leaves the op its own choice: whether the
      // sum is completed whole (psum) or split (psum_scatter) depends on the
      // op's consumers, which a follower cannot see. Following here picked
      // the locally cheapest completion and made pure DP unreachable on a
      // training step (samples/global/train_dp.spmd). A linear op that passes
      // the partial sum on still follows.
      bool partial_in = false;
      for (size_t a = 0; a < r.cands.size() && !partial_in; ++a) {
        const Sharding &in_layout = out(v, a);
        if (in_layout.complete()) continue;
        bool takes_it = false;
        for (int s : q.cands)
          takes_it =
              takes_it ||
              p_.strategies[i][static_cast<size_t>(s)].operands[static_cast<size_t>(operand)] ==
                  in_layout;
        partial_in = !takes_it;
      }
      if (partial_in) continue;
      std::vector<int> follow;
      const auto &strategies = p_.strategies[i];
      for (size_t a = 0; a < r.cands.size(); ++a) {
        // Follow: take the operand as it comes (no reshard), keeping its
        // layout when that is possible; otherwise the cheapest strategy.
        const Sharding &in_layout = out(v, a);
        int pick = -1;
        double best = HUGE_VAL;
        int rank = 3;  // 0: same layout out, 1: no reshard, 2: cheapest
        for (int s : q.cands) {
          deadline_.check();
          const Strategy &st = strategies[static_cast<size_t>(s)];
          const Sharding &need = st.operands[static_cast<size_t>(operand)];
          double c = st.cost() + reshard(v, in_layout, need);
          int r_s = need == in_layout ? (st.results[0] == in_layout ? 0 : 1) : 2;
          if (r_s < rank || (r_s == rank && c < best * (1 - 1e-12))) {
            rank = r_s;
            best = c;
            pick = s;
          }
        }
        follow.push_back(pick);
      }
      q.root = root;
      q.follow = std::move(follow);
      q.follow_operand = operand;
    }
  }

  /// A result declared `like(w)` of an `auto` w takes w's layout: it follows
  /// w's node candidate for candidate (its candidates are w's, in order). Not
  /// a simplification but the declaration, so it holds without `simplify`.
  void tie_like_results() {
    const ir::Function &f = p_.flat;
    for (size_t k = 0; k < f.results.size(); ++k) {
      const ir::Result &r = f.results[k];
      if (!r.auto_spec || r.like_param < 0) continue;
      Node &q = nodes_[static_cast<size_t>(result_node_[k])];
      const Node &w = nodes_[static_cast<size_t>(param_node_[static_cast<size_t>(r.like_param)])];
      q.root = self(w);
      q.follow = w.cands;
    }
  }

  // 3. Node costs (a follower's land on its root's candidates).
  void make_costs() {
    for (Node &n : nodes_) {
      if (n.root != self(n)) continue;
      n.cost.assign(n.cands.size(), 0);
      if (n.kind == NodeKind::Param) {
        const Type &t = p_.type(p_.flat.params[static_cast<size_t>(n.index)].value);
        const auto &layouts = p_.param_candidates[static_cast<size_t>(n.index)];
        for (size_t a = 0; a < n.cands.size(); ++a)
          n.cost[a] = kParamByteTieBreak * local_bytes(p_.mesh, t.shape, t.dtype,
                                                       layouts[static_cast<size_t>(n.cands[a])]);
      }
      if (n.kind == NodeKind::Op)
        for (size_t a = 0; a < n.cands.size(); ++a)
          n.cost[a] =
              p_.weight(n.index) *
              p_.strategies[static_cast<size_t>(n.index)][static_cast<size_t>(n.cands[a])].cost();
    }
    for (Node &q : nodes_) {
      if (q.root == self(q) || q.kind != NodeKind::Op) continue;  // a tied result costs nothing
      Node &r = nodes_[static_cast<size_t>(q.root)];
      const double w = p_.weight(q.index);
      for (size_t a = 0; a < r.cands.size(); ++a)  // (its operand's reshard: make_pairs)
        r.cost[a] +=
            w *
            p_.strategies[static_cast<size_t>(q.index)][static_cast<size_t>(q.follow[a])].cost();
    }
  }

  // 4. Uses between roots (see the top of the file: one objective).
  using Key = ReshardKey;

  /// The uses of a value whose consumers share a root, and the reshard keys
  /// they need per candidate of that root.
  struct Group {
    int root = 0;
    std::vector<Use> uses;
    std::vector<std::set<Key>> keys;  // per candidate of root
  };
  struct ValueUses {
    ir::ValueId value = 0;
    int root = 0;       // the producer's root
    double weight = 1;  // Problem::use_weight (the same for every use of a value)
    std::vector<Group> groups;
    std::map<Key, int> copies;  // keys two groups can need: their copy node
  };

  /// The key use u needs when its consumer's root takes candidate position b.
  Key key_at(const Use &u, size_t b) const {
    const Sharding &need = requirement_at(u, b);
    if (u.instr == Use::kReturn) return {need, need.split_axes().bits()};
    const Node &n = nodes_[static_cast<size_t>(op_node_[static_cast<size_t>(u.instr)])];
    return {need, consumer_varying(p_, u.instr, strategy_at(n, b)).bits()};
  }

  /// Groups every value's uses by their consumer's root (a follower's
  /// operand: its producer's root) and makes the copy nodes.
  void group_uses() {
    const ir::Function &f = p_.flat;
    // The costly keys two groups can need (value_uses_ index, key); more
    // than options_.max_copy_nodes of them: each is priced once per group
    // that needs it instead (an upper bound of evaluate()), and the report
    // says so.
    std::vector<std::pair<size_t, Key>> shared;
    for (size_t v = 0; v < f.values.size(); ++v) {
      if (p_.uses[v].empty() || is_constant(static_cast<ir::ValueId>(v))) continue;
      ValueUses vu;
      vu.value = static_cast<ir::ValueId>(v);
      vu.root = nodes_[static_cast<size_t>(producer_node(vu.value))].root;
      vu.weight = p_.use_weight(vu.value, p_.uses[v].front());
      std::map<int, size_t> group_of;
      for (const Use &u : p_.uses[v]) {
        int consumer = u.instr == Use::kReturn ? result_node_[static_cast<size_t>(u.operand)]
                                               : op_node_[static_cast<size_t>(u.instr)];
        const int rc = nodes_[static_cast<size_t>(consumer)].root;
        auto [it, fresh] = group_of.emplace(rc, vu.groups.size());
        if (fresh) {
          vu.groups.emplace_back();
          vu.groups.back().root = rc;
          vu.groups.back().keys.resize(nodes_[static_cast<size_t>(rc)].cands.size());
        }
        Group &g = vu.groups[it->second];
        g.uses.push_back(u);
        for (size_t b = 0; b < g.keys.size(); ++b) g.keys[b].insert(key_at(u, b));
      }
      // A key is shared when two groups can need it and it can cost something
      // (a local slice is free).
      const size_t producer_cands = nodes_[static_cast<size_t>(vu.root)].cands.size();
      std::map<Key, int> groups_needing;
      for (const Group &g : vu.groups) {
        std::set<Key> any;
        for (const auto &keys : g.keys) any.insert(keys.begin(), keys.end());
        for (const Key &k : any) ++groups_needing[k];
      }
      for (const auto &[k, count] : groups_needing) {
        if (count < 2) continue;
        bool free = true;  // (counted once or per group: the same)
        for (size_t a = 0; a < producer_cands && free; ++a) {
          const Sharding &have = out(vu.value, a);
          free = have == k.first || reshard(vu.value, have, k.first) == 0;
        }
        if (!free) shared.push_back({value_uses_.size(), k});
      }
      value_uses_.push_back(std::move(vu));
    }
    if (shared.size() > options_.max_copy_nodes) {
      report_.shared_per_group = static_cast<int>(shared.size());
      return;
    }
    for (const auto &[index, k] : shared) {
      ValueUses &vu = value_uses_[index];
      Node n;
      n.kind = NodeKind::Copy;
      n.index = static_cast<int>(vu.value);
      n.cands = {0, 1};  // exists, does not
      n.cost = {0, 0};
      const int id = add(std::move(n));
      vu.copies.emplace(k, id);
      neighbours_.resize(nodes_.size());
      neighbours_[static_cast<size_t>(id)].push_back(vu.root);
      for (const Group &g : vu.groups) neighbours_[static_cast<size_t>(id)].push_back(g.root);
    }
    neighbours_.resize(nodes_.size());
  }

  void make_pairs() {
    std::map<std::pair<int, int>, size_t> pair_index;
    // Adds cost(i, j) for candidate i of root x and j of root y: on x's own
    // costs when x == y (i == j), on one side's costs when the other has one
    // candidate, else on their pair.
    auto add_term = [&](int x, int y, const auto &cost) {
      Node &xn = nodes_[static_cast<size_t>(x)];
      Node &yn = nodes_[static_cast<size_t>(y)];
      if (x == y) {
        for (size_t i = 0; i < xn.cands.size(); ++i) xn.cost[i] += cost(i, i);
        return;
      }
      if (xn.cands.size() == 1 || yn.cands.size() == 1) {
        for (size_t i = 0; i < xn.cands.size(); ++i)
          for (size_t j = 0; j < yn.cands.size(); ++j)
            (xn.cands.size() == 1 ? yn.cost[j] : xn.cost[i]) += cost(i, j);
        return;
      }
      // A pair joins the earlier variable to the later one (the next value
      // of a loop's carry runs from a later producer back to an earlier
      // consumer; a copy node may come before its producer's root).
      const bool backward = var_of_[static_cast<size_t>(x)] > var_of_[static_cast<size_t>(y)];
      const int first = backward ? y : x, second = backward ? x : y;
      auto [it, inserted] =
          pair_index.emplace(std::make_pair(first, second), pairwise_.pairs.size());
      const size_t n_second = nodes_[static_cast<size_t>(second)].cands.size();
      if (inserted) {
        PairwiseProblem::Pair pair;
        pair.u = var_of_[static_cast<size_t>(first)];
        pair.v = var_of_[static_cast<size_t>(second)];
        pair.cost.assign(nodes_[static_cast<size_t>(first)].cands.size() * n_second, 0);
        pairwise_.pairs.push_back(std::move(pair));
      }
      std::vector<double> &c = pairwise_.pairs[it->second].cost;
      for (size_t i = 0; i < xn.cands.size(); ++i)
        for (size_t j = 0; j < yn.cands.size(); ++j)
          c[backward ? j * n_second + i : i * n_second + j] += cost(i, j);
    };
    for (const ValueUses &vu : value_uses_) {
      const ir::ValueId v = vu.value;
      const double w = vu.weight;
      auto copy_cost = [&](size_t a, const Key &k) {
        const Sharding &have = out(v, a);
        return have == k.first ? 0.0 : w * reshard(v, have, k.first);
      };
      const size_t producer_cands = nodes_[static_cast<size_t>(vu.root)].cands.size();
      for (const Group &g : vu.groups) {
        // The keys only this group needs, once each: each distinct key's
        // copy cost per candidate of the producer priced once (the
        // candidates of the group's root share most keys), then summed per
        // candidate pair in the order of its keys.
        deadline_.check();
        std::vector<const Key *> distinct;
        // Per candidate b of the group's root: its keys' places in
        // `distinct` (-1: a key with a copy node, priced there).
        std::vector<std::vector<int>> index(g.keys.size());
        for (size_t b = 0; b < g.keys.size(); ++b)
          for (const Key &k : g.keys[b]) {
            if (vu.copies.count(k)) {
              index[b].push_back(-1);
              continue;
            }
            size_t at = 0;
            while (at < distinct.size() && !(*distinct[at] == k)) ++at;
            if (at == distinct.size()) distinct.push_back(&k);
            index[b].push_back(static_cast<int>(at));
          }
        std::vector<double> priced(producer_cands * distinct.size());
        for (size_t a = 0; a < producer_cands; ++a)
          for (size_t d = 0; d < distinct.size(); ++d)
            priced[a * distinct.size() + d] = copy_cost(a, *distinct[d]);
        add_term(vu.root, g.root, [&](size_t a, size_t b) {
          double c = 0;
          for (int d : index[b])
            if (d >= 0) c += priced[a * distinct.size() + static_cast<size_t>(d)];
          return c;
        });
        for (const auto &[k, z] : vu.copies) {
          bool needs = false;
          for (const auto &keys : g.keys) needs = needs || keys.count(k) > 0;
          if (!needs) continue;
          const Key &key = k;
          add_term(g.root, z, [&](size_t b, size_t copy) {  // copy 0: exists, 1: does not
            return copy == 1 && g.keys[b].count(key) ? HUGE_VAL : 0.0;
          });
        }
      }
      for (const auto &[k, z] : vu.copies) {
        const Key &key = k;
        add_term(vu.root, z,
                 [&](size_t a, size_t copy) { return copy == 0 ? copy_cost(a, key) : 0.0; });
      }
    }
    for (const Node &n : nodes_)
      if (n.root == self(n))
        pairwise_.unary[static_cast<size_t>(var_of_[static_cast<size_t>(self(n))])] = n.cost;
  }

  /// The pairwise problem's variables: one per root, ops in program order,
  /// each parameter just before its first use (so elimination keeps few
  /// nodes live), the results last.
  void number_roots() {
    const int n_instr = static_cast<int>(p_.flat.body.size());
    std::vector<std::pair<int, int>> order;  // (key, node)
    for (const Node &n : nodes_) {
      if (n.root != self(n)) continue;
      int key = 0;
      switch (n.kind) {
        case NodeKind::Op:
          key = 2 * n.index + 1;
          break;
        case NodeKind::Result:
          key = 2 * n_instr + 2 + n.index;
          break;
        case NodeKind::Copy:  // placed below, after its neighbours
          continue;
        case NodeKind::Param: {
          key = 2 * n_instr + 1;
          ir::ValueId v = p_.flat.params[static_cast<size_t>(n.index)].value;
          for (const Use &u : p_.uses[static_cast<size_t>(v)])
            if (u.instr != Use::kReturn) key = std::min(key, 2 * u.instr);
          break;
        }
      }
      order.push_back({key, self(n)});
    }
    // A copy node comes right after the last of its neighbours (the roots of
    // its value's producer and consumers): elimination then adds and removes
    // it at once, keeping those neighbours live until there (the copy ties
    // them all), never holding several copies' states at a time.
    std::vector<int> key_of(nodes_.size(), 0);
    for (auto [key, node] : order) key_of[static_cast<size_t>(node)] = key;
    for (const Node &n : nodes_) {
      if (n.kind != NodeKind::Copy) continue;
      int key = 0;
      for (int r : neighbours_[static_cast<size_t>(self(n))])
        key = std::max(key, key_of[static_cast<size_t>(r)]);
      order.push_back({key, self(n)});
    }
    std::stable_sort(order.begin(), order.end());
    var_of_.assign(nodes_.size(), -1);
    for (auto [key, node] : order) {
      var_of_[static_cast<size_t>(node)] = static_cast<int>(pairwise_.unary.size());
      pairwise_.unary.emplace_back();
      if (nodes_[static_cast<size_t>(node)].cands.size() > 1) ++report_.choice_nodes;
      if (nodes_[static_cast<size_t>(node)].kind == NodeKind::Copy) ++report_.copy_nodes;
    }
  }

  /// With a memory limit: false (after reporting) when the parameters alone,
  /// split as finely as the mesh allows, exceed it — no plan can fit.
  bool parameters_can_fit() {
    const double limit = *options_.memory_per_device;
    const ir::Function &f = p_.flat;
    double params_min = 0;
    for (size_t k = 0; k < f.params.size(); ++k) {
      const Type &t = p_.type(f.params[k].value);
      double smallest = HUGE_VAL;
      for (const Sharding &s : p_.param_candidates[k])
        smallest = std::min(smallest, local_bytes(p_.mesh, t.shape, t.dtype, s));
      params_min += smallest;
    }
    if (params_min <= limit) return true;
    auto &d = diags_->error("memory-limit", f.span,
                            "no layout of `" + f.name + "`'s parameters fits in " +
                                std::to_string(static_cast<int64_t>(limit)) +
                                " bytes per device: even split as finely as the mesh allows "
                                "they take " +
                                std::to_string(static_cast<int64_t>(params_min)) + " bytes");
    d.fix = "raise --memory-per-device, or use a mesh with more devices";
    return false;
  }

  // 5. Memory: parameters + live values at every program point <= the
  // rows' limit (rows_limit_: --memory-per-device, lowered by run() while
  // the estimate of the search's plan is over it).
  MemoryModel memory_model() {
    MemoryModel m;
    m.limit = rows_limit_;
    const ir::Function &f = p_.flat;
    const size_t n_values = p_.uses.size();
    // Bytes per candidate of `root` (a constant when it has one candidate).
    auto term_on = [&](int root, auto &&bytes) {
      const Node &n = nodes_[static_cast<size_t>(root)];
      std::vector<double> per_candidate;
      for (size_t a = 0; a < n.cands.size(); ++a) per_candidate.push_back(bytes(a));
      return m.term(n.cands.size() == 1 ? -1 : var_of_[static_cast<size_t>(root)], per_candidate);
    };
    // The bytes of value v on the candidates of its producer's root; an
    // array constant's (made in the layout its first use needs, as
    // evaluate() counts it) on its first consumer's. Computed once per
    // value, as a value is live at many points.
    std::vector<std::optional<MemoryModel::Term>> bytes_of(n_values);
    auto value_term = [&](ir::ValueId v) -> const MemoryModel::Term & {
      std::optional<MemoryModel::Term> &term = bytes_of[static_cast<size_t>(v)];
      if (term) return *term;
      const Type &t = p_.type(v);
      if (!is_constant(v)) {
        term = term_on(nodes_[static_cast<size_t>(producer_node(v))].root,
                       [&](size_t a) { return local_bytes(p_.mesh, t.shape, t.dtype, out(v, a)); });
        return *term;
      }
      const std::vector<Use> &uses = p_.uses[static_cast<size_t>(v)];
      const int consumer = uses.empty() ? -1
                           : uses.front().instr == Use::kReturn
                               ? result_node_[static_cast<size_t>(uses.front().operand)]
                               : op_node_[static_cast<size_t>(uses.front().instr)];
      if (consumer < 0) {  // unread: no bytes (evaluate())
        term = m.term(-1, {0.0});
        return *term;
      }
      term = term_on(nodes_[static_cast<size_t>(consumer)].root, [&](size_t b) {
        return local_bytes(p_.mesh, t.shape, t.dtype, requirement_at(uses.front(), b));
      });
      return *term;
    };
    // Instruction i's scratch (scratch_bytes) on its root's candidates, at
    // its point, when some candidate has any.
    std::vector<std::optional<MemoryModel::Term>> scratch(f.body.size());
    for (size_t i = 0; i < f.body.size(); ++i) {
      if (op_node_[i] < 0 || f.body[i].op != OpCode::Einsum) continue;
      const Node &n = nodes_[static_cast<size_t>(op_node_[i])];
      const size_t k = nodes_[static_cast<size_t>(n.root)].cands.size();
      std::vector<double> bytes;
      for (size_t b = 0; b < k; ++b)
        bytes.push_back(cached_scratch_bytes(p_, static_cast<int>(i), strategy_at(n, b)));
      if (*std::max_element(bytes.begin(), bytes.end()) > 0)
        scratch[i] = m.term(k == 1 ? -1 : var_of_[static_cast<size_t>(n.root)], bytes);
    }
    auto add = [&m](const MemoryModel::Term &term, MemoryModel::Sum &sum) {
      if (term.node < 0)
        sum.constant += m.bytes(term, 0);
      else
        sum.terms.push_back(term);
    };
    for (const ir::Param &param : f.params) add(value_term(param.value), m.shared);
    // A point whose live values are a subset of another point's never peaks
    // above it (bytes are never negative), so it adds no constraint. Next
    // points share most of their values: comparing each with the last point
    // kept drops nearly all of them (a training step's 4,000 points become
    // the few hundred where a value dies), which keeps the memory model, and
    // the reductions and relaxations over it, small. A point's scratch is an
    // item only it holds (id n_values + i).
    std::vector<std::vector<ir::ValueId>> kept;
    std::vector<std::vector<ir::ValueId>> points = memory_rows(p_);
    for (size_t i = 0; i < points.size(); ++i) {
      std::vector<ir::ValueId> &values = points[i];
      std::sort(values.begin(), values.end());
      if (scratch[i]) values.push_back(static_cast<ir::ValueId>(n_values + i));
      auto contains = [](const std::vector<ir::ValueId> &a, const std::vector<ir::ValueId> &b) {
        return std::includes(a.begin(), a.end(), b.begin(), b.end());
      };
      if (!kept.empty() && contains(kept.back(), values)) continue;
      while (!kept.empty() && contains(values, kept.back())) kept.pop_back();
      kept.push_back(std::move(values));
    }
    for (const std::vector<ir::ValueId> &values : kept) {
      MemoryModel::Sum point;
      point.terms.reserve(values.size());
      for (ir::ValueId v : values)
        add(static_cast<size_t>(v) < n_values ? value_term(v)
                                              : *scratch[static_cast<size_t>(v) - n_values],
            point);
      m.points.push_back(std::move(point));
    }
    return m;
  }

  double since(double t) const { return process_cpu_seconds() - t; }

  /// fit_estimate refines (spends its searches left) when the problem the
  /// solvers see has at most kRefineNodes nodes with a choice: its searches
  /// are cheap (the global samples: tens; shard_bench's 100-op training
  /// step: 375, which does not).
  bool small_problem() const {
    return (options_.simplify ? report_.reduced_nodes : report_.choice_nodes) <= kRefineNodes;
  }

  /// Under a memory limit: the search's rows (memory_model) state what
  /// depends on one choice at a time; the resharded copies (which depend on
  /// two: the producer's layout and the consumer's) and fusion decided on
  /// block shapes they cannot state, and views they count as values of their
  /// own. The limit bounds the estimate (evaluate()'s peak_bytes): while the
  /// search's plan is estimated over it, the search runs again with its rows'
  /// limit lowered by the overshoot, and below that plan's own rows count (so
  /// it cannot answer that plan again), at most kMemoryRounds times within
  /// the time limit. The first plan that fits is the answer (a lower rows'
  /// limit only takes plans away), else the cheaper baseline that fits, else
  /// a memory-limit error.
  std::optional<Plan> fit_estimate(double start) {
    const double limit = *options_.memory_per_device;
    const ir::Function &f = p_.flat;
    rows_limit_ = limit;
    const AutoReport built = report_;
    DiagnosticEngine &user = *diags_;
    DiagnosticEngine quiet;  // a lowered rows' limit nothing fits is not the user's error
    double solve_s = 0, reduce_s = 0, least_peak = HUGE_VAL;
    // A small problem (its searches are cheap) spends the searches left
    // after a plan fits on rows' limits between the highest that gave a
    // plan that fits and the lowest that gave one over: a higher limit can
    // admit a cheaper plan that fits.
    bool refine = false;  // (known after the first search's reductions)
    std::optional<Plan> best;
    AutoReport best_report;
    double best_s = HUGE_VAL, fits_at = 0, over_at = limit;
    // The answer by evaluate() among the plans met so far (best_by_evaluate,
    // then the baselines), kept when it fits and is the cheapest yet.
    auto consider = [&](const std::vector<size_t> &pick) {
      PlanCost c;
      Plan plan = no_worse_than_baselines(best_by_evaluate(pick, start), &c);
      if (!fits_limit(c)) {
        least_peak = std::min(least_peak, c.peak_bytes);
        return;
      }
      if (c.total_s() < best_s) {
        best = std::move(plan);
        best_report = report_;
        best_s = c.total_s();
      }
    };
    std::optional<std::vector<size_t>> last_pick;
    for (int round = 1;; ++round) {
      report_ = built;
      diags_ = round == 1 ? &user : &quiet;
      improved_by_blocks_ = false;
      std::optional<std::vector<size_t>> pick = solve(start);
      diags_ = &user;
      solve_s += report_.solve_seconds;
      reduce_s += report_.reduce_seconds;
      report_.solve_seconds = solve_s;
      report_.reduce_seconds = reduce_s;
      report_.memory_rounds = round;
      report_.rows_limit = rows_limit_;
      if (!pick) {
        if (round == 1) return std::nullopt;           // (reported)
        if (!best && last_pick) consider(*last_pick);  // the plans met before
        break;
      }
      if (round == 1) refine = small_problem();
      // The search's own plan decides whether to search again: when it is
      // estimated over the limit, a plan met on the way may fit, but a
      // search at a lower rows' limit usually finds a cheaper one (1,000-op
      // training step: 5.6 ms from the relaxation's early plans, 2.24 ms from
      // a second search). best_by_evaluate() then compares every plan met in
      // all the searches, so it runs once the own plan fits, or in the last.
      const PlanCost own = cost_of_pick(*pick);
      const bool own_fits = fits_limit(own);
      last_pick = *pick;
      const bool last = round == kMemoryRounds || since(start) >= options_.time_limit_s;
      if (own_fits || last) consider(*pick);
      if (own_fits) {
        fits_at = rows_limit_;
        if (!refine) break;
      } else {
        least_peak = std::min(least_peak, own.peak_bytes);
        over_at = std::min(over_at, rows_limit_);
      }
      if (round == kMemoryRounds || since(start) >= options_.time_limit_s) break;
      if (own_fits) {
        if (over_at - fits_at <= std::max(1.0, kMemoryRoundStep * limit)) break;
        rows_limit_ = (fits_at + over_at) / 2;
      } else {
        rows_limit_ = std::min(rows_limit_ - (own.peak_bytes - limit),
                               own.row_bytes - std::max(1.0, kMemoryRoundStep * limit));
      }
    }
    if (best) {
      best_report.solve_seconds = solve_s;
      best_report.reduce_seconds = reduce_s;
      best_report.memory_rounds = report_.memory_rounds;
      report_ = best_report;
      return best;
    }
    // No plan of the search fits: the cheaper baseline that does.
    const Baseline *fallback = nullptr;
    for (Baseline &b : baselines()) {
      if (!may_fit(b)) continue;
      const PlanCost &c = cost_of(b);
      if (std::isfinite(c.total_s()) && fits_limit(c) &&
          (!fallback || c.total_s() < fallback->cost->total_s()))
        fallback = &b;
    }
    if (fallback) {
      report_.status = "answered with " + std::string(fallback->name) +
                       ": the search's plans are estimated over the memory limit (the least " +
                       std::to_string(static_cast<int64_t>(least_peak)) + " bytes)";
      report_.optimal = false;
      report_.objective_s = fallback->cost->total_s();
      return fallback->plan;
    }
    auto &d = user.error(
        "memory-limit", f.span,
        "no plan for `" + f.name + "` found fits in " +
            std::to_string(static_cast<int64_t>(limit)) +
            " bytes per device: the least the search's plans are estimated to need is " +
            std::to_string(static_cast<int64_t>(least_peak)) +
            " (parameters, live values, resharded copies, array constants and einsum scratch, "
            "per device)");
    d.fix = "raise --memory-per-device, or split the parameters with written specs";
    return std::nullopt;
  }

  /// Whether a plan evaluate() priced at `c` fits the memory limit: the one
  /// check of a plan against the limit, which bounds the estimate
  /// (evaluate()'s peak_bytes; the search's own plans fit its memory rows).
  bool fits_limit(const PlanCost &c) const {
    return !options_.memory_per_device || c.peak_bytes <= *options_.memory_per_device;
  }

  /// A complete plan the search produced on its way (a choice of the
  /// reduced problem's nodes): best_by_evaluate() prices it.
  void saw(const std::vector<int> &choice) {
    std::vector<size_t> all = picked(choice);
    if (std::find(seen_.begin(), seen_.end(), all) == seen_.end()) seen_.push_back(std::move(all));
  }

  /// The search's plan (`pick`), or one evaluate() prices below it: the
  /// cheapest by evaluate() that fits the limit of the plans the search
  /// produced on its way (solve() keeps them: the exact solver's, the
  /// relaxation's last bests, the local search's, the block moves', CBC's)
  /// and of the cheapest of them polished by moves priced by evaluate()
  /// (polish.h). Past the copy-node budget the solvers minimise an upper
  /// bound of evaluate(), which can order plans otherwise. The plans are
  /// ranked by plan_seconds() (evaluate()'s total, without its memory
  /// walk) and evaluate() decides, in that order, the first that fits. The
  /// report's objective is then evaluate()'s total of the answer. A plan
  /// proven optimal for evaluate()'s own sum stands.
  Plan best_by_evaluate(const std::vector<size_t> &pick, double start) {
    answer_s_.reset();
    answer_.reset();
    if (report_.optimal && report_.shared_per_group == 0) return read_plan(pick);
    struct Candidate {
      std::vector<size_t> choice;
      double seconds = 0;
    };
    std::vector<Candidate> plans;
    plans.push_back({pick, plan_seconds(p_, read_plan(pick))});
    for (const std::vector<size_t> &choice : seen_)
      if (choice != pick) plans.push_back({choice, plan_seconds(p_, read_plan(choice))});
    const double searched = plans.front().seconds;
    report_.plans_compared = static_cast<int>(plans.size());
    // A plan within rounding of the search's does not displace it (the
    // search's plan comes first among equals).
    for (Candidate &c : plans) c.seconds = std::max(c.seconds, cheaper(searched));
    std::stable_sort(plans.begin(), plans.end(),
                     [](const Candidate &x, const Candidate &y) { return x.seconds < y.seconds; });
    // The polish (polish.h) from the cheapest, on every root's node, under
    // the memory rows before the reductions (which the solvers' plans fit).
    std::vector<int> from(plans.front().choice.begin(), plans.front().choice.end());
    if (options_.polish && (!memory_ || memory_->fits(from))) {
      PolishOptions po;
      // Its own share of the time limit when the solvers spent it all.
      po.time_limit_s =
          std::max(options_.time_limit_s - since(start), kPolishShare * options_.time_limit_s);
      // Block moves where block_search.h makes them: under a memory limit,
      // unless they are off.
      PolishResult r =
          polish(p_, polish_nodes(), memory_ ? &*memory_ : nullptr,
                 memory_ && options_.block_moves ? blocks(false) : std::vector<std::vector<int>>{},
                 from, po);
      report_.polish_moves = r.moves + r.shared_moves + r.block_moves;
      if (r.total_s < cheaper(plans.front().seconds))
        plans.insert(plans.begin(),
                     {std::vector<size_t>(r.choice.begin(), r.choice.end()), r.total_s});
    }
    if (options_.seen_plans)
      for (const Candidate &c : plans) options_.seen_plans->push_back(read_plan(c.choice));
    // evaluate() decides: the first in order that fits (the search's own
    // plan when none does, as before).
    std::optional<PlanCost> cost;
    size_t taken = 0;
    for (; taken < plans.size(); ++taken) {
      const PlanCost c = cost_of_pick(plans[taken].choice);
      if (std::isfinite(c.total_s()) && fits_limit(c)) {
        cost = c;
        break;
      }
    }
    if (!cost) return read_plan(pick);
    const std::vector<size_t> &best = plans[taken].choice;
    report_.objective_s = cost->total_s();
    answer_s_ = cost->total_s();
    Plan answer = read_plan(best);
    answer_ = answer;
    answer_cost_ = *cost;
    if (best != pick) {
      // (Proven optimal only for the per-consumer pricing.)
      if (report_.optimal) report_.status = "optimal for its per-consumer pricing";
      report_.optimal = false;
      const std::string how = report_.polish_moves > 0 && taken == 0
                                  ? "after " + std::to_string(report_.polish_moves) +
                                        (report_.polish_moves == 1 ? " move" : " moves") +
                                        " priced by evaluate()"
                                  : "another plan it met on its way";
      char line[320];
      std::snprintf(line, sizeof line, "; answered with a plan %s cheaper by evaluate(), %s (%s)",
                    format_seconds(searched - cost->total_s()).c_str(),
                    format_seconds(cost->total_s()).c_str(), how.c_str());
      report_.status += line;
    }
    return answer;
  }

  /// evaluate() of the plan of `pick` (a choice of every root), each
  /// plan priced once: fit_estimate prices its searches' own plans, and
  /// best_by_evaluate() the plans it ranks.
  PlanCost cost_of_pick(const std::vector<size_t> &pick) {
    auto it = costs_.find(pick);
    if (it == costs_.end()) it = costs_.emplace(pick, evaluate(p_, read_plan(pick))).first;
    return it->second;
  }

  /// Below `seconds` by more than rounding.
  static double cheaper(double seconds) { return seconds - 1e-9 * std::abs(seconds); }

  /// The search's nodes (one per pairwise variable, before the
  /// reductions) as polish.h moves them: a root's candidates set it, its
  /// followers and the results tied to it.
  std::vector<PolishNode> polish_nodes() const {
    std::vector<PolishNode> out(pairwise_.unary.size());
    for (const Node &n : nodes_) {
      PolishNode &pn = out[static_cast<size_t>(var_of_[static_cast<size_t>(n.root)])];
      pn.candidates = nodes_[static_cast<size_t>(n.root)].cands.size();
      if (n.kind == NodeKind::Copy) continue;
      PolishNode::Member m;
      m.kind = n.kind == NodeKind::Param    ? PolishNode::Member::Kind::Param
               : n.kind == NodeKind::Result ? PolishNode::Member::Kind::Result
                                            : PolishNode::Member::Kind::Op;
      m.index = n.index;
      for (size_t a = 0; a < pn.candidates; ++a) m.at.push_back(strategy_at(n, a));
      pn.members.push_back(std::move(m));
    }
    return out;
  }

  /// The search's plan against the two plans `--explain` prints next to it
  /// (pure DP and replicated), all priced by evaluate(). When the search's
  /// objective is only an upper bound (past the copy-node budget, reshards
  /// several consumers share are priced per consumer) or its plan is not
  /// proven optimal, a baseline can be cheaper — a transformer block's
  /// training step on 8 devices got a plan of 84.8 us where pure DP is
  /// 54.8 us — and then the cheapest baseline that fits is the answer.
  Plan no_worse_than_baselines(Plan plan, PlanCost *cost = nullptr) {
    // best_by_evaluate() priced its answer, which is usually `plan`.
    std::optional<PlanCost> known;
    if (answer_ && answer_->choice == plan.choice && answer_->params == plan.params &&
        answer_->results == plan.results)
      known = answer_cost_;
    if (report_.optimal && report_.shared_per_group == 0) {
      if (cost) *cost = known ? *known : evaluate(p_, plan);
      return plan;
    }
    const PlanCost own = known ? *known : evaluate(p_, plan);
    const double mine = own.total_s();
    double best = mine;
    const Baseline *better = nullptr;
    for (Baseline &b : baselines()) {
      if (!may_fit(b)) continue;
      const PlanCost &c = cost_of(b);
      if (!std::isfinite(c.total_s())) continue;
      if (!fits_limit(c)) continue;
      if (c.total_s() < best * (1 - 1e-9)) {
        best = c.total_s();
        better = &b;
      }
    }
    if (cost) *cost = better ? *better->cost : own;
    if (!better) return plan;
    const std::string why = report_.shared_per_group > 0
                                ? "its objective priced " +
                                      std::to_string(report_.shared_per_group) +
                                      " shared reshards once per consumer"
                                : "not proven optimal: " + report_.status;
    report_.status = "answered with " + std::string(better->name) +
                     ", which evaluate() prices below the search's plan (" + format_seconds(mine) +
                     "; " + why + ")";
    report_.optimal = false;
    report_.objective_s = best;
    return better->plan;
  }

  /// The two plans `--explain` prints next to the search's (pure DP, when
  /// there is one, and replicated), priced once.
  /// Each is priced by evaluate() when first needed (cost_of()): under a
  /// memory limit a baseline whose parameters alone exceed it never is.
  struct Baseline {
    const char *name;
    Plan plan;
    std::optional<PlanCost> cost;
  };
  std::vector<Baseline> &baselines() {
    if (!baselines_) {
      baselines_.emplace();
      BaselinePlans b = baseline_plans(p_);
      if (b.pure_dp) baselines_->push_back({"pure DP", std::move(*b.pure_dp), std::nullopt});
      baselines_->push_back({"replicated", std::move(b.replicated), std::nullopt});
    }
    return *baselines_;
  }
  const PlanCost &cost_of(Baseline &b) {
    if (!b.cost) b.cost = evaluate(p_, b.plan);
    return *b.cost;
  }
  /// False when baseline b cannot fit the memory limit: its parameters'
  /// blocks alone (evaluate()'s param_bytes, summed alike; its peak_bytes
  /// adds the live values to them) exceed it.
  bool may_fit(const Baseline &b) const {
    if (!options_.memory_per_device || b.cost) return true;
    const ir::Function &f = p_.flat;
    double param_bytes = 0;
    for (size_t k = 0; k < f.params.size(); ++k) {
      const Type &t = f.type(f.params[k].value);
      param_bytes += local_bytes(p_.mesh, t.shape, t.dtype, b.plan.params[k]);
    }
    return param_bytes <= *options_.memory_per_device;
  }

  /// A choice of the reduced problem as a choice of every root.
  std::vector<size_t> picked(const std::vector<int> &choice) const {
    if (!reduced_) return std::vector<size_t>(choice.begin(), choice.end());
    std::vector<int> all = reduced_->expand(choice);
    return std::vector<size_t>(all.begin(), all.end());
  }

  void report_no_fit(const ir::Function &f) {
    auto &d =
        diags_->error("memory-limit", f.span,
                      "no plan for `" + f.name + "` fits in " +
                          std::to_string(static_cast<int64_t>(*options_.memory_per_device)) +
                          " bytes per device (parameters and the values live at once, per device)");
    d.fix = "raise --memory-per-device, or split the parameters with written specs";
  }

  /// The relaxation's plan as the answer: optimal when its bound meets it.
  std::vector<size_t> accept(const Relaxation &r, const std::string &why) {
    report_.optimal = r.gap() <= 0;
    report_.objective_s = r.best->objective;
    report_.bound_s = r.bound;
    report_.gap = r.gap();
    char line[320];
    if (report_.optimal)
      std::snprintf(line, sizeof line, "optimal");
    else
      std::snprintf(line, sizeof line, "%s: at most %.2f%% above the optimum (proven bound %s)",
                    why.c_str(), 100 * r.gap(), format_seconds(r.bound).c_str());
    report_.status = line;
    return picked(r.best->choice);
  }

  /// The blocks of block_search.h (a parameter with everything tied to it)
  /// as nodes of the problem the solvers see.
  std::vector<std::vector<int>> blocks(bool reduced = true) const {
    std::vector<int> reduced_of;
    if (reduced_ && reduced) reduced_of = reduced_node_of(*reduced_);
    auto node = [&](int graph_node) {
      if (graph_node < 0) return -1;
      const int var = var_of_[static_cast<size_t>(nodes_[static_cast<size_t>(graph_node)].root)];
      if (var < 0 || !reduced_ || !reduced) return var;
      return reduced_of[static_cast<size_t>(var)];
    };
    std::vector<std::vector<int>> out;
    for (const ParamBlock &b : find_blocks(p_)) {
      std::vector<int> nodes;
      auto add = [&](int v) {
        if (v >= 0 && std::find(nodes.begin(), nodes.end(), v) == nodes.end()) nodes.push_back(v);
      };
      add(node(param_node_[static_cast<size_t>(b.param)]));
      if (nodes.empty()) continue;  // the parameter's layout is decided
      for (int i : b.instrs) add(node(op_node_[static_cast<size_t>(i)]));
      for (int k : b.params) add(node(param_node_[static_cast<size_t>(k)]));
      if (nodes.size() > 1) out.push_back(std::move(nodes));
    }
    return out;
  }

  /// Improves the relaxation's best plan by block moves (block_search.h)
  /// within the time left; CBC, if it runs, starts from the result.
  void improve_by_blocks(const PairwiseProblem &problem, const MemoryModel &memory, Relaxation &r,
                         double start) {
    BlockSearchOptions bo;
    bo.time_limit_s = options_.time_limit_s - since(start);
    if (bo.time_limit_s <= 0) return;
    BlockSearchResult b = block_search(problem, memory, blocks(), r.best->choice, bo);
    report_.block_moves = b.block_moves;
    saw(b.plan.choice);
    if (b.plan.objective < r.best->objective) {
      r.best = std::move(b.plan);
      r.bound = std::min(r.bound, r.best->objective);
      report_.solver += " + block moves";
      improved_by_blocks_ = true;
    }
  }

  // 6. Solve: elimination (with a memory limit, its Lagrangian relaxation)
  // while the tables stay small, else (or when the relaxation leaves a gap
  // and there is time) CBC.
  std::optional<std::vector<size_t>> solve(double start) {
    const ir::Function &f = p_.flat;
    if (options_.memory_per_device && !parameters_can_fit()) return std::nullopt;
    // Without CBC, the dynamic program is the only exact solver: give it room.
    const size_t states = ilp_solver_available()
                              ? options_.elimination_states
                              : std::max(options_.elimination_states, kNoCbcStates);
    const double t = process_cpu_seconds();
    std::optional<Relaxation> relaxed;  // with a memory limit
    // The memory model and the exact reductions (reduce.h), made once: the
    // reductions hold for every limit, so fit_estimate's later searches
    // only lower the limit. The solvers see the reduced problem.
    if (options_.memory_per_device && !memory_) memory_ = memory_model();
    MemoryModel *memory = memory_ ? &*memory_ : nullptr;
    if (memory) memory->limit = rows_limit_;  // (the polish checks the full rows)
    const PairwiseProblem *problem = &pairwise_;
    if (options_.simplify) {
      if (!reduced_) reduced_ = reduce(pairwise_, memory);
      problem = &reduced_->problem;
      if (memory) memory = &*reduced_->memory;
      report_.reduced_nodes = 0;
      for (const auto &costs : problem->unary) report_.reduced_nodes += costs.size() > 1 ? 1 : 0;
      report_.reduced_pairs = static_cast<int>(problem->pairs.size());
    }
    if (memory) memory->limit = rows_limit_;
    report_.reduce_seconds = since(t);
    // The time limit counts from the start of the search, in CPU time.
    const double time_left = options_.time_limit_s - since(start);
    if (states > 0 && !memory) {
      if (std::optional<Elimination> e = eliminate(*problem, states)) {
        saw(e->choice);
        report_.solver = "dynamic program";
        report_.solve_seconds = since(t);
        report_.optimal = true;
        report_.objective_s = report_.bound_s = e->objective;
        report_.status = "optimal";
        return picked(e->choice);
      }
    }
    if (states > 0 && memory) {
      RelaxOptions ro;
      ro.gap = options_.gap;
      ro.time_limit_s = time_left;
      ro.max_states = states;
      relaxed = relax_memory(*problem, *memory, ro, &relax_memo_);
      report_.eliminations = relaxed->eliminations;
      report_.exact_runs = relaxed->exact_runs;
      report_.solver = relaxed->heuristic           ? "Lagrangian relaxation by local search"
                       : relaxed->eliminations == 1 ? "dynamic program"
                                                    : "Lagrangian relaxation";
      if (relaxed->infeasible) {
        report_no_fit(f);
        return std::nullopt;
      }
      // Its last few bests (the last is `best`).
      const size_t n = relaxed->bests.size();
      for (size_t k = n > kRelaxationPlans ? n - kRelaxationPlans : 0; k < n; ++k)
        saw(relaxed->bests[k]);
      if (options_.block_moves && relaxed->best && relaxed->gap() > options_.gap)
        improve_by_blocks(*problem, *memory, *relaxed, start);
      if (relaxed->best && relaxed->gap() <= options_.gap) {
        report_.solve_seconds = since(t);
        return accept(*relaxed, "within the requested gap");
      }
    }
    if (!memory && states > 0) {
      // The elimination gave up (too many choices live at once): before CBC,
      // a plan in hand from a local search, so that a search stopped by the
      // time limit still answers (with the gap to a simple proven bound).
      Elimination local = local_search(*problem);
      if (std::isfinite(local.objective)) {
        saw(local.choice);
        relaxed.emplace();
        relaxed->best = std::move(local);
        relaxed->bound = std::min(lower_bound(*problem), relaxed->best->objective);
        report_.solver = "local search";
      }
    }
    if (!ilp_solver_available()) {
      if (relaxed && relaxed->best) {
        report_.solve_seconds = since(t);
        return accept(*relaxed, "stopped (no CBC in this spmdc to close the gap)");
      }
      diags_
          ->error("search-needs-cbc", f.span,
                  "this spmdc was built without CBC, and `" + f.name + "` needs it: " +
                      (relaxed && !relaxed->too_wide
                           ? std::string("the relaxation found no plan that fits the memory limit")
                           : std::string("too many choices are live at once for the exact "
                                         "dynamic program")))
          .fix =
          "install coinor-libcbc-dev (scripts/install-deps.sh) and reconfigure, or write "
          "more specs to shrink the search";
      return std::nullopt;
    }
    const bool have_plan = relaxed && relaxed->best;
    // CBC does not check its clock while it solves the root LP: with a plan
    // in hand, do not start it (nor build its ILP) when the ILP's size says
    // it cannot finish in time.
    const double left = options_.time_limit_s - since(start);
    const double needs =
        kCbcSecondsPerVariable * static_cast<double>(ilp_variables_bound(*problem));
    if (have_plan && left < needs) {
      report_.solve_seconds = since(t);
      char why[160];
      std::snprintf(why, sizeof why, "stopped at the %s time limit (CBC would need about %s)",
                    format_seconds(options_.time_limit_s).c_str(), format_seconds(needs).c_str());
      return accept(*relaxed, why);
    }
    // A plan the block moves improved is a good incumbent: CBC, started from
    // it, spends its root LP (about `needs`) before it can better it, so it
    // only starts when as much time again is left to search (at 100 forward
    // ops of the bench's training step: 6.2 s of 10 s, after which it ran
    // 16 s of CPU without improving on the block moves' plan).
    if (have_plan && improved_by_blocks_ && left < 2 * needs) {
      report_.solve_seconds = since(t);
      char why[200];
      std::snprintf(why, sizeof why,
                    "stopped after the block moves (CBC would need about %s of the %s left "
                    "before it could improve on them)",
                    format_seconds(needs).c_str(), format_seconds(left).c_str());
      return accept(*relaxed, why);
    }
    std::vector<int> first_var;
    double constant = 0;
    ilp_ = to_ilp(*problem, kTimeScale, first_var, constant);
    if (memory) add_memory_rows(ilp_, *memory, first_var, kBytesScale);
    report_.variables = ilp_.num_variables();
    report_.rows = static_cast<int>(ilp_.rows.size());
    if (have_plan)
      for (size_t v = 0; v < problem->unary.size(); ++v)
        if (first_var[v] >= 0) ilp_.start.push_back({first_var[v] + relaxed->best->choice[v], 1.0});
    report_.solver = have_plan ? report_.solver + " + CBC" : std::string("CBC");
    IlpSolution sol = solve_ilp(ilp_, std::max(options_.time_limit_s - since(start), 1e-9));
    report_.solve_seconds = since(t);
    using S = IlpSolution::Status;
    const bool cbc_plan = sol.status == S::Optimal || sol.status == S::Stopped;
    // CBC's plan (the largest variable of each node's).
    std::vector<int> pick(problem->unary.size(), 0);
    for (size_t v = 0; v < problem->unary.size() && cbc_plan; ++v) {
      if (first_var[v] < 0) continue;
      int best = 0;
      for (size_t a = 1; a < problem->unary[v].size(); ++a)
        if (sol.values[static_cast<size_t>(first_var[v]) + a] >
            sol.values[static_cast<size_t>(first_var[v] + best)])
          best = static_cast<int>(a);
      pick[v] = best;
    }
    if (cbc_plan) saw(pick);
    if (have_plan) {
      // The better of the two plans, and the better of the two bounds (CBC's
      // optimum proves the relaxation's plan optimal when it is no cheaper).
      if (cbc_plan)
        relaxed->bound = std::max(
            relaxed->bound,
            (sol.status == S::Optimal ? sol.objective : sol.bound) / kTimeScale + constant);
      if (!cbc_plan || sol.objective / kTimeScale + constant >= relaxed->best->objective) {
        relaxed->bound = std::min(relaxed->bound, relaxed->best->objective);
        return accept(*relaxed,
                      "stopped at the " + format_seconds(options_.time_limit_s) + " time limit");
      }
    }
    if (sol.status == S::Infeasible) {
      report_no_fit(f);
      return std::nullopt;
    }
    if (sol.status == S::NoSolution) {
      diags_
          ->error("search-time-limit", f.span,
                  "the sharding search found no plan for `" + f.name + "` within " +
                      format_seconds(options_.time_limit_s))
          .fix = "raise --time-limit, or write more specs to shrink the search";
      return std::nullopt;
    }
    report_.optimal = sol.status == S::Optimal;
    report_.objective_s = sol.objective / kTimeScale + constant;
    report_.bound_s = sol.bound / kTimeScale + constant;
    if (have_plan) report_.bound_s = std::max(report_.bound_s, relaxed->bound);
    report_.gap = report_.objective_s > 0
                      ? std::max(0.0, (report_.objective_s - report_.bound_s) / report_.objective_s)
                      : 0;
    char line[256];
    if (report_.optimal) {
      std::snprintf(line, sizeof line, "optimal");
    } else {
      std::snprintf(line, sizeof line,
                    "stopped at the %s time limit: at most %.2f%% above the optimum (proven "
                    "bound %s)",
                    format_seconds(options_.time_limit_s).c_str(), 100 * report_.gap,
                    format_seconds(report_.bound_s).c_str());
    }
    report_.status = line;
    return picked(pick);
  }

  // 7. The plan.
  Plan read_plan(const std::vector<size_t> &pick) {
    const ir::Function &f = p_.flat;
    Plan plan;
    plan.params.resize(f.params.size());
    plan.results.resize(f.results.size());
    plan.choice.assign(f.body.size(), -1);
    for (Node &n : nodes_) {
      size_t a = pick[static_cast<size_t>(var_of_[static_cast<size_t>(n.root)])];
      switch (n.kind) {
        case NodeKind::Param:
          plan.params[static_cast<size_t>(n.index)] =
              p_.param_candidates[static_cast<size_t>(n.index)][static_cast<size_t>(n.cands[a])];
          break;
        case NodeKind::Result:
          plan.results[static_cast<size_t>(n.index)] =
              p_.result_candidates[static_cast<size_t>(n.index)]
                                  [static_cast<size_t>(strategy_at(n, a))];
          break;
        case NodeKind::Op:
          plan.choice[static_cast<size_t>(n.index)] = strategy_at(n, a);
          break;
        case NodeKind::Copy:  // implied by the consumers' choices
          break;
      }
    }
    return plan;
  }

  Problem &p_;
  const AutoOptions &options_;
  AutoReport &report_;
  DiagnosticEngine *diags_;  // the caller's; fit_estimate's later rounds: its own
  double rows_limit_ = 0;    // the memory rows' limit (memory_model)
  std::vector<Node> nodes_;
  std::vector<int> param_node_, op_node_, result_node_;
  PairwiseProblem pairwise_;
  std::vector<int> var_of_;  // per node: its pairwise variable (roots only)
  std::vector<ValueUses> value_uses_;
  std::vector<std::vector<int>> neighbours_;  // per node: a copy node's roots (number_roots)
  std::optional<MemoryModel> memory_;         // the memory rows (their limit: rows_limit_)
  std::optional<std::vector<Baseline>> baselines_;
  std::optional<Reduced> reduced_;  // pairwise_ reduced (with simplify)
  RelaxMemo relax_memo_;            // the relaxations' minimisations (of reduced_ and memory_)
  IlpProblem ilp_;
  std::optional<double> answer_s_;  // evaluate()'s total of best_by_evaluate's answer
  std::optional<Plan> answer_;      // that answer
  PlanCost answer_cost_;            // and its evaluate()
  std::map<std::vector<size_t>, PlanCost> costs_;  // cost_of_pick()
  std::vector<std::vector<size_t>> seen_;  // the complete plans the solvers produced (saw())
  bool improved_by_blocks_ = false;        // improve_by_blocks() bettered the relaxation's plan
  Deadline deadline_;                      // the preparation throws OutOfTime past it
};

}  // namespace

std::optional<Plan> auto_shard(Problem &p, const AutoOptions &options, AutoReport &report,
                               DiagnosticEngine &diags) {
  return AutoBuilder(p, options, report, diags).run();
}

}  // namespace spmd::sharding
