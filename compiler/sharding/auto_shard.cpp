// sharding/auto_shard.cpp — see auto_shard.h for the formulation.
//
// Steps: 1. one node per parameter, op (not constants) and result, with its
// candidates (strategies with equal layouts merged); 2. followers: an
// elementwise op with one non-constant operand takes, for each candidate of
// its producer's root, its cheapest strategy, and joins that root; 3. one
// binary per candidate of each root with a choice, node costs (followers'
// included) as objective coefficients; 4. each use between two roots: a
// linear term when one side has one layout class, else edge variables with
// marginal rows; 5. the memory rows; 6. CBC; 7. the plan.
#include "sharding/auto_shard.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>

#include "analysis/cost.h"
#include "sharding/ilp.h"
#include "sharding/pairwise.h"

namespace spmd::sharding {
namespace {

constexpr double kTimeScale = 1e6;                // the objective in microseconds
constexpr double kBytesScale = 1e-6;              // memory rows in megabytes
constexpr size_t kNoCbcStates = size_t{1} << 22;  // elimination's table limit without CBC
/// Seconds charged per byte of a parameter's block: far below any real cost
/// difference (16 MiB weigh 17 ps), it only breaks ties between plans of
/// equal time towards the one that stores less — e.g. a batch that arrives
/// split rather than replicated and sliced locally (both free to reshard).
constexpr double kParamByteTieBreak = 1e-18;

enum class NodeKind { Param, Op, Result };

struct Node {
  NodeKind kind = NodeKind::Op;
  int index = 0;             // parameter k, instruction i or result k
  int root = -1;             // the node whose variables decide this one
  std::vector<int> cands;    // a root's candidates (parameter/result: layout index; op: strategy)
  std::vector<int> follow;   // a follower: its strategy for each candidate of its root
  int follow_operand = -1;   // a follower: the operand it follows
  std::vector<double> cost;  // a root: objective per candidate (its followers' included)
};

class AutoBuilder {
 public:
  AutoBuilder(Problem &p, const AutoOptions &options, AutoReport &report, DiagnosticEngine &diags)
      : p_(p), options_(options), report_(report), diags_(diags) {}

  std::optional<Plan> run() {
    auto start = std::chrono::steady_clock::now();
    report_.ops = static_cast<int>(p_.flat.body.size());
    make_nodes();
    make_followers();
    for (const Node &n : nodes_) report_.followers += n.root != self(n) ? 1 : 0;
    make_costs();
    number_roots();
    make_pairs();
    report_.build_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::optional<std::vector<size_t>> pick = solve();
    if (!pick) return std::nullopt;
    return read_plan(*pick);
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
      return p_.result_candidates[static_cast<size_t>(u.operand)][static_cast<size_t>(n.cands[b])];
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
      std::vector<int> follow;
      const auto &strategies = p_.strategies[i];
      for (size_t a = 0; a < r.cands.size(); ++a) {
        // Follow: take the operand as it comes (no reshard), keeping its
        // layout when that is possible; otherwise (a partial sum into a
        // non-linear op) the cheapest strategy.
        const Sharding &in_layout = out(v, a);
        int pick = -1;
        double best = HUGE_VAL;
        int rank = 3;  // 0: same layout out, 1: no reshard, 2: cheapest
        for (int s : q.cands) {
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
              p_.strategies[static_cast<size_t>(n.index)][static_cast<size_t>(n.cands[a])].cost();
    }
    for (Node &q : nodes_) {
      if (q.root == self(q)) continue;
      Node &r = nodes_[static_cast<size_t>(q.root)];
      const ir::Instr &in = p_.flat.body[static_cast<size_t>(q.index)];
      ir::ValueId v = in.operands[static_cast<size_t>(q.follow_operand)];
      for (size_t a = 0; a < r.cands.size(); ++a) {
        const Strategy &st =
            p_.strategies[static_cast<size_t>(q.index)][static_cast<size_t>(q.follow[a])];
        r.cost[a] +=
            st.cost() + reshard(v, out(v, a), st.operands[static_cast<size_t>(q.follow_operand)]);
      }
    }
  }

  // 4. Uses between roots: a cost on one root's candidates, or a pair term.
  void make_pairs() {
    const ir::Function &f = p_.flat;
    std::map<std::pair<int, int>, size_t> pair_index;
    for (size_t v = 0; v < f.values.size(); ++v) {
      if (p_.uses[v].empty() || is_constant(static_cast<ir::ValueId>(v))) continue;
      const ir::ValueId value = static_cast<ir::ValueId>(v);
      const int rp = nodes_[static_cast<size_t>(producer_node(value))].root;
      for (const Use &u : p_.uses[v]) {
        int consumer = u.instr == Use::kReturn ? result_node_[static_cast<size_t>(u.operand)]
                                               : op_node_[static_cast<size_t>(u.instr)];
        const Node &c = nodes_[static_cast<size_t>(consumer)];
        if (c.root != consumer && c.follow_operand == u.operand) continue;  // folded in
        const int rc = c.root;
        Node &pn = nodes_[static_cast<size_t>(rp)];
        Node &cn = nodes_[static_cast<size_t>(rc)];
        if (rp == rc) {
          for (size_t a = 0; a < pn.cands.size(); ++a)
            pn.cost[a] += reshard(value, out(value, a), requirement_at(u, a));
          continue;
        }
        if (pn.cands.size() == 1 || cn.cands.size() == 1) {
          for (size_t a = 0; a < pn.cands.size(); ++a)
            for (size_t b = 0; b < cn.cands.size(); ++b) {
              double r = reshard(value, out(value, a), requirement_at(u, b));
              (pn.cands.size() == 1 ? cn.cost[b] : pn.cost[a]) += r;
            }
          continue;
        }
        auto [it, inserted] = pair_index.emplace(std::make_pair(rp, rc), pairwise_.pairs.size());
        if (inserted) {
          PairwiseProblem::Pair pair;
          pair.u = var_of_[static_cast<size_t>(rp)];
          pair.v = var_of_[static_cast<size_t>(rc)];
          if (pair.u >= pair.v) throw std::logic_error("shard: a use before its producer");
          pair.cost.assign(pn.cands.size() * cn.cands.size(), 0);
          pairwise_.pairs.push_back(std::move(pair));
        }
        std::vector<double> &cost = pairwise_.pairs[it->second].cost;
        for (size_t a = 0; a < pn.cands.size(); ++a)
          for (size_t b = 0; b < cn.cands.size(); ++b)
            cost[a * cn.cands.size() + b] += reshard(value, out(value, a), requirement_at(u, b));
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
    std::stable_sort(order.begin(), order.end());
    var_of_.assign(nodes_.size(), -1);
    for (auto [key, node] : order) {
      var_of_[static_cast<size_t>(node)] = static_cast<int>(pairwise_.unary.size());
      pairwise_.unary.emplace_back();
      if (nodes_[static_cast<size_t>(node)].cands.size() > 1) ++report_.choice_nodes;
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
    auto &d = diags_.error("memory-limit", f.span,
                           "no layout of `" + f.name + "`'s parameters fits in " +
                               std::to_string(static_cast<int64_t>(limit)) +
                               " bytes per device: even split as finely as the mesh allows "
                               "they take " +
                               std::to_string(static_cast<int64_t>(params_min)) + " bytes");
    d.fix = "raise --memory-per-device, or use a mesh with more devices";
    return false;
  }

  // 5. Memory: parameters + live values at every program point <= the limit.
  void make_memory_rows(const std::vector<int> &first_var, double &constant_bytes) {
    const double limit = *options_.memory_per_device;
    const ir::Function &f = p_.flat;
    // The bytes of value v as terms on its root's candidates (or a constant).
    auto value_terms = [&](ir::ValueId v, std::vector<std::pair<int, double>> &terms,
                           double &constant) {
      int r = nodes_[static_cast<size_t>(producer_node(v))].root;
      const Node &n = nodes_[static_cast<size_t>(r)];
      const Type &t = p_.type(v);
      int first = first_var[static_cast<size_t>(var_of_[static_cast<size_t>(r)])];
      if (first < 0) {
        constant += local_bytes(p_.mesh, t.shape, t.dtype, out(v, 0));
        return;
      }
      for (size_t a = 0; a < n.cands.size(); ++a)
        terms.push_back({first + static_cast<int>(a),
                         local_bytes(p_.mesh, t.shape, t.dtype, out(v, a)) * kBytesScale});
    };
    std::vector<std::pair<int, double>> params;
    double params_constant = 0;
    for (const ir::Param &param : f.params) value_terms(param.value, params, params_constant);
    // The parameters' total, as one continuous variable.
    int total = ilp_.add_variable(0, 0, 1e300, false);
    params.push_back({total, -1.0});
    ilp_.add_row(std::move(params), 'E', -params_constant * kBytesScale);
    std::vector<ir::ValueId> previous;
    for (auto &values : live_values(p_)) {
      if (values == previous) continue;
      previous = values;
      std::vector<std::pair<int, double>> terms = {{total, 1.0}};
      double constant = 0;
      for (ir::ValueId v : values) value_terms(v, terms, constant);
      ilp_.add_row(std::move(terms), 'L', (limit - constant) * kBytesScale);
    }
    constant_bytes = params_constant;
  }

  /// Whether the plan of pairwise choice `choice` fits the memory limit.
  bool fits(const std::vector<int> &choice) {
    std::vector<size_t> pick(choice.begin(), choice.end());
    return evaluate(p_, read_plan(pick)).peak_bytes <= *options_.memory_per_device;
  }

  /// A plan under the memory limit by elimination (no proof of optimality):
  /// every byte a candidate defines (a parameter's block, an op's results)
  /// costs lambda seconds, and a bisection over lambda = 2^k s/B finds the
  /// smallest penalty whose optimum fits; then the cut between that plan and
  /// the cheaper one just below the threshold. The objective is unpenalised.
  std::optional<Elimination> fitting_elimination(size_t states,
                                                 const std::vector<int> &unconstrained) {
    const std::vector<std::vector<double>> base = pairwise_.unary;
    std::vector<std::vector<double>> bytes(base.size());
    for (size_t v = 0; v < base.size(); ++v) bytes[v].assign(base[v].size(), 0);
    const ir::Function &f = p_.flat;
    for (size_t v = 0; v < f.values.size(); ++v) {
      ir::ValueId value = static_cast<ir::ValueId>(v);
      if (is_constant(value) || (p_.uses[v].empty() && !p_.is_param(value))) continue;
      int prod = p_.producer[v];
      if (prod >= 0 && op_node_[static_cast<size_t>(prod)] < 0) continue;
      int root = nodes_[static_cast<size_t>(producer_node(value))].root;
      std::vector<double> &b = bytes[static_cast<size_t>(var_of_[static_cast<size_t>(root)])];
      const Type &t = p_.type(value);
      for (size_t a = 0; a < b.size(); ++a)
        b[a] += local_bytes(p_.mesh, t.shape, t.dtype, out(value, a));
    }
    struct Trial {
      std::optional<Elimination> e;  // the penalised optimum, priced without the penalty
      bool fits = false;
    };
    auto solve_with = [&](int k) -> Trial {
      const double lambda = std::ldexp(1.0, k);
      for (size_t v = 0; v < base.size(); ++v)
        for (size_t a = 0; a < base[v].size(); ++a)
          pairwise_.unary[v][a] = base[v][a] + lambda * bytes[v][a];
      std::optional<Elimination> e = eliminate(pairwise_, states);
      pairwise_.unary = base;
      if (!e) return {};
      e->objective = pairwise_objective(e->choice);
      bool ok = fits(e->choice);
      return {std::move(e), ok};
    };
    int lo = -64, hi = -8;  // 2^-64 s/B changes nothing; 2^-8 s/B outweighs any time
    Trial above = solve_with(hi);
    if (!above.fits) return std::nullopt;
    std::optional<Elimination> best = above.e;
    std::vector<int> below = unconstrained;  // the cheapest plan seen that does not fit
    while (hi - lo > 1) {
      int mid = (lo + hi) / 2;
      Trial t = solve_with(mid);
      if (t.fits) {
        hi = mid;
        if (t.e->objective < best->objective) best = t.e;
        above = std::move(t);
      } else {
        lo = mid;
        if (t.e) below = t.e->choice;
      }
    }
    // Penalties move whole families of alike nodes at once (the blocks of a
    // stack): mixing the two plans either side of the threshold — the first
    // nodes as in the one that does not fit, the rest as in the one that
    // does — keeps as much of the cheaper plan as fits (bisection on the cut).
    const std::vector<int> &fit = above.e->choice;
    auto mix = [&](size_t cut) {
      std::vector<int> c = fit;
      std::copy(below.begin(), below.begin() + static_cast<long>(cut), c.begin());
      return c;
    };
    size_t ok = 0, bad = below.size();
    while (bad - ok > 1) {
      size_t mid = (ok + bad) / 2;
      (fits(mix(mid)) ? ok : bad) = mid;
    }
    std::vector<int> mixed = mix(ok);
    double objective = pairwise_objective(mixed);
    if (objective < best->objective) best = Elimination{std::move(mixed), objective, 0};
    return best;
  }

  /// The pairwise objective of a choice.
  double pairwise_objective(const std::vector<int> &choice) const {
    double total = 0;
    for (size_t v = 0; v < pairwise_.unary.size(); ++v)
      total += pairwise_.unary[v][static_cast<size_t>(choice[v])];
    for (const PairwiseProblem::Pair &pair : pairwise_.pairs)
      total += pair.cost[static_cast<size_t>(choice[static_cast<size_t>(pair.u)]) *
                             pairwise_.unary[static_cast<size_t>(pair.v)].size() +
                         static_cast<size_t>(choice[static_cast<size_t>(pair.v)])];
    return total;
  }

  // 6. Solve: elimination when narrow and unconstrained, else CBC.
  std::optional<std::vector<size_t>> solve() {
    const ir::Function &f = p_.flat;
    if (options_.memory_per_device && !parameters_can_fit()) return std::nullopt;
    // Without CBC, the dynamic program is the only exact solver: give it room.
    const size_t states = ilp_solver_available()
                              ? options_.elimination_states
                              : std::max(options_.elimination_states, kNoCbcStates);
    auto t = std::chrono::steady_clock::now();
    std::optional<Elimination> fitting;  // with a memory limit: a plan that fits, or none
    if (states > 0) {
      // Exact without a memory limit; with one, still the answer when the
      // unconstrained optimum fits (it is then optimal under the limit too).
      std::optional<Elimination> e = eliminate(pairwise_, states);
      if (e && options_.memory_per_device && !fits(e->choice)) {
        // Not the answer, but a penalised elimination finds a plan that fits:
        // CBC starts from it, and it stands when CBC finds nothing better.
        if (ilp_solver_available()) fitting = fitting_elimination(states, e->choice);
        e.reset();
      }
      if (e) {
        report_.solver = "dynamic program";
        report_.solve_seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
        report_.optimal = true;
        report_.objective_s = report_.bound_s = e->objective;
        report_.status = "optimal";
        std::vector<size_t> pick;
        for (int c : e->choice) pick.push_back(static_cast<size_t>(c));
        return pick;
      }
    }
    if (!ilp_solver_available()) {
      diags_
          .error("search-needs-cbc", f.span,
                 "this spmdc was built without CBC, and `" + f.name + "` needs it: " +
                     (options_.memory_per_device
                          ? std::string("its cheapest plan does not fit the memory limit")
                          : std::string("too many choices are live at once for the exact "
                                        "dynamic program")))
          .fix =
          "install coinor-libcbc-dev (scripts/install-deps.sh) and reconfigure, or write "
          "more specs to shrink the search";
      return std::nullopt;
    }
    std::vector<int> first_var;
    double constant = 0;
    ilp_ = to_ilp(pairwise_, kTimeScale, first_var, constant);
    double constant_bytes = 0;
    if (options_.memory_per_device) make_memory_rows(first_var, constant_bytes);
    report_.variables = ilp_.num_variables();
    report_.rows = static_cast<int>(ilp_.rows.size());
    report_.solver = "CBC";
    if (fitting)
      for (size_t v = 0; v < pairwise_.unary.size(); ++v)
        if (first_var[v] >= 0) ilp_.start.push_back({first_var[v] + fitting->choice[v], 1.0});
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    // The penalised elimination used up the time limit: CBC would only
    // overrun it (it does not check its clock in the root LP), so do not start it.
    IlpSolution sol;
    if (!fitting || elapsed < options_.time_limit_s)
      sol = solve_ilp(ilp_, std::max(options_.time_limit_s - elapsed, 1e-9));
    report_.solve_seconds = elapsed + sol.seconds;
    using S = IlpSolution::Status;
    // CBC stopped with nothing better than the penalised elimination's plan.
    if (fitting && (sol.status == S::NoSolution || sol.status == S::Infeasible ||
                    (sol.status == S::Stopped &&
                     sol.objective / kTimeScale + constant > fitting->objective))) {
      report_.solver = "dynamic program with a memory penalty, then CBC";
      report_.optimal = false;
      report_.objective_s = fitting->objective;
      report_.bound_s = sol.status == S::Stopped ? sol.bound / kTimeScale + constant : 0;
      char line[256];
      std::snprintf(line, sizeof line,
                    "stopped at the %.3g s time limit: a plan that fits, found by a dynamic "
                    "program that penalises memory, not proven optimal",
                    options_.time_limit_s);
      report_.status = line;
      return std::vector<size_t>(fitting->choice.begin(), fitting->choice.end());
    }
    if (sol.status == S::Infeasible) {
      auto &d = diags_.error(
          "memory-limit", f.span,
          "no plan for `" + f.name + "` fits in " +
              std::to_string(static_cast<int64_t>(*options_.memory_per_device)) +
              " bytes per device (parameters and the values live at once, per device)");
      d.fix = "raise --memory-per-device, or split the parameters with written specs";
      return std::nullopt;
    }
    if (sol.status == S::NoSolution) {
      diags_
          .error("search-time-limit", f.span,
                 "the sharding search found no plan for `" + f.name + "` within " +
                     format_seconds(options_.time_limit_s))
          .fix = "raise --time-limit, or write more specs to shrink the search";
      return std::nullopt;
    }
    std::vector<size_t> pick(pairwise_.unary.size(), 0);
    for (size_t v = 0; v < pairwise_.unary.size(); ++v) {
      if (first_var[v] < 0) continue;
      size_t best = 0;
      for (size_t a = 1; a < pairwise_.unary[v].size(); ++a)
        if (sol.values[static_cast<size_t>(first_var[v]) + a] >
            sol.values[static_cast<size_t>(first_var[v]) + best])
          best = a;
      pick[v] = best;
    }
    report_.optimal = sol.status == S::Optimal;
    report_.objective_s = sol.objective / kTimeScale + constant;
    report_.bound_s = sol.bound / kTimeScale + constant;
    char line[256];
    if (report_.optimal) {
      std::snprintf(line, sizeof line, "optimal");
    } else {
      double gap = report_.objective_s > 0
                       ? 100 * (report_.objective_s - report_.bound_s) / report_.objective_s
                       : 0;
      std::snprintf(line, sizeof line,
                    "stopped at the %.3g s time limit: the best plan found, at most %.1f%% above "
                    "the bound CBC proved",
                    options_.time_limit_s, gap);
    }
    report_.status = line;
    return pick;
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
              p_.result_candidates[static_cast<size_t>(n.index)][static_cast<size_t>(n.cands[a])];
          break;
        case NodeKind::Op:
          plan.choice[static_cast<size_t>(n.index)] = strategy_at(n, a);
          break;
      }
    }
    return plan;
  }

  Problem &p_;
  const AutoOptions &options_;
  AutoReport &report_;
  DiagnosticEngine &diags_;
  std::vector<Node> nodes_;
  std::vector<int> param_node_, op_node_, result_node_;
  PairwiseProblem pairwise_;
  std::vector<int> var_of_;  // per node: its pairwise variable (roots only)
  IlpProblem ilp_;
};

}  // namespace

std::optional<Plan> auto_shard(Problem &p, const AutoOptions &options, AutoReport &report,
                               DiagnosticEngine &diags) {
  return AutoBuilder(p, options, report, diags).run();
}

}  // namespace spmd::sharding
