// sharding/pairwise.cpp — see pairwise.h.
#include "sharding/pairwise.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "sharding/plan_walker.h"

namespace spmd::sharding {
namespace {

/// Groups equal vectors: class index per item, and one representative per class.
std::vector<int> classes(const std::vector<std::vector<double>> &items, std::vector<int> &reps) {
  std::map<std::vector<double>, int> seen;
  std::vector<int> out;
  for (size_t i = 0; i < items.size(); ++i) {
    auto [it, inserted] = seen.emplace(items[i], static_cast<int>(reps.size()));
    if (inserted) reps.push_back(static_cast<int>(i));
    out.push_back(it->second);
  }
  return out;
}

}  // namespace

MemoryModel::Term MemoryModel::term(int node, const std::vector<double> &bytes) {
  Term t{node, static_cast<uint32_t>(pool.size()), static_cast<uint32_t>(bytes.size())};
  pool.insert(pool.end(), bytes.begin(), bytes.end());
  return t;
}

bool MemoryModel::fits(const std::vector<int> &choice) const {
  // shared + max(points) <= limit exactly when every shared + point is: the
  // same sums, compared one by one.
  const double base = at(shared, choice);
  if (points.empty()) return base + 0.0 <= limit;
  for (const Sum &point : points)
    if (base + at(point, choice) > limit) return false;
  return true;
}

double MemoryModel::peak(const std::vector<int> &choice) const {
  double most = 0;
  for (const Sum &point : points) most = std::max(most, at(point, choice));
  return at(shared, choice) + most;
}

namespace {

/// The cost of `pair` with both its nodes as in `choice`.
double pair_cost(const PairwiseProblem &p, const PairwiseProblem::Pair &pair,
                 const std::vector<int> &choice) {
  return pair.cost[static_cast<size_t>(choice[static_cast<size_t>(pair.u)]) *
                       p.unary[static_cast<size_t>(pair.v)].size() +
                   static_cast<size_t>(choice[static_cast<size_t>(pair.v)])];
}

/// Per node, the indices of the pairs it is in.
std::vector<std::vector<size_t>> pairs_by_node(const PairwiseProblem &p) {
  std::vector<std::vector<size_t>> pairs_of(p.unary.size());
  for (size_t k = 0; k < p.pairs.size(); ++k) {
    pairs_of[static_cast<size_t>(p.pairs[k].u)].push_back(k);
    pairs_of[static_cast<size_t>(p.pairs[k].v)].push_back(k);
  }
  return pairs_of;
}

}  // namespace

double objective(const PairwiseProblem &p, const std::vector<int> &choice) {
  double total = 0;
  for (size_t v = 0; v < p.unary.size(); ++v) total += p.unary[v][static_cast<size_t>(choice[v])];
  for (const PairwiseProblem::Pair &pair : p.pairs) total += pair_cost(p, pair, choice);
  return total;
}

namespace {

/// Iterated conditional modes from `choice`: nodes move, one at a time in
/// index order, to the candidate cheapest given their neighbours' choices,
/// until no move helps or `max_rounds` sweeps have run.
Elimination improve(const PairwiseProblem &p, std::vector<int> choice, int max_rounds,
                    const std::vector<std::vector<size_t>> &pairs_of) {
  const size_t n = p.unary.size();
  Elimination e;
  e.choice = std::move(choice);
  for (int round = 0; round < max_rounds; ++round) {
    bool moved = false;
    for (size_t v = 0; v < n; ++v) {
      if (p.unary[v].size() < 2) continue;
      int best = e.choice[v];
      double best_cost = HUGE_VAL;
      for (size_t a = 0; a < p.unary[v].size(); ++a) {
        double c = p.unary[v][a];
        for (size_t k : pairs_of[v]) {
          const PairwiseProblem::Pair &pair = p.pairs[k];
          const size_t width = p.unary[static_cast<size_t>(pair.v)].size();
          c += static_cast<size_t>(pair.u) == v
                   ? pair.cost[a * width +
                               static_cast<size_t>(e.choice[static_cast<size_t>(pair.v)])]
                   : pair.cost[static_cast<size_t>(e.choice[static_cast<size_t>(pair.u)]) * width +
                               a];
        }
        if (c < best_cost * (1 - 1e-12)) {
          best_cost = c;
          best = static_cast<int>(a);
        }
      }
      if (best != e.choice[v]) {
        e.choice[v] = best;
        moved = true;
      }
    }
    if (!moved) break;
  }
  e.objective = objective(p, e.choice);
  return e;
}

}  // namespace

Elimination local_search(const PairwiseProblem &p, int max_rounds) {
  const size_t n = p.unary.size();
  const std::vector<std::vector<size_t>> pairs_of = pairs_by_node(p);
  // Start 1: every node at its cheapest candidate (splitting, where compute
  // dominates). Start 2: every node at its first candidate (the unsplit
  // strategy comes first: the replicated plan, or close to it after
  // reduce()). Where communication dominates, the sweeps from start 1 can
  // stop at a plan that talks at every op, far worse than replicating; the
  // better of the two is kept.
  std::vector<int> cheapest(n, 0);
  for (size_t v = 0; v < n; ++v)
    cheapest[v] = static_cast<int>(std::min_element(p.unary[v].begin(), p.unary[v].end()) -
                                   p.unary[v].begin());
  Elimination from_cheapest = improve(p, std::move(cheapest), max_rounds, pairs_of);
  Elimination from_first = improve(p, std::vector<int>(n, 0), max_rounds, pairs_of);
  return from_first.objective < from_cheapest.objective ? from_first : from_cheapest;
}

Elimination local_search_within(const PairwiseProblem &p, const MemoryModel &memory,
                                std::vector<int> start, int max_rounds) {
  const size_t n = p.unary.size();
  PlanWalker w(p, memory, start);
  using Move = PlanWalker::Move;
  Move best, single, block;  // (reused: no allocation per candidate)
  for (int round = 0; round < max_rounds; ++round) {
    bool moved = false;
    for (size_t v = 0; v < n; ++v) {
      if (p.unary[v].size() < 2) continue;
      const int from = w.at(v);
      best.clear();
      double best_change = 0;
      for (size_t a = 0; a < p.unary[v].size(); ++a) {
        if (static_cast<int>(a) == from) continue;
        // v alone, then v with each neighbour at its cheapest given v = a.
        single.assign(1, {v, static_cast<int>(a)});
        block = single;
        w.set(v, static_cast<int>(a));
        for (size_t k : w.pairs_of(v)) {
          const PairwiseProblem::Pair &pair = p.pairs[k];
          const auto u = static_cast<size_t>(static_cast<size_t>(pair.u) == v ? pair.v : pair.u);
          if (p.unary[u].size() < 2) continue;
          const int cheapest = w.cheapest(u);
          if (cheapest != w.at(u) &&
              std::none_of(block.begin(), block.end(), [&](const auto &m) { return m.first == u; }))
            block.push_back({u, cheapest});
        }
        w.set(v, from);
        for (const Move *m : {&single, &block}) {
          if (m == &block && block.size() == 1) continue;
          const double c = w.change(*m);
          if (c < best_change - 1e-12 * std::abs(best_change) && std::isfinite(c) && w.fits(*m)) {
            best_change = c;
            best = *m;
          }
        }
      }
      if (!best.empty() && best_change < 0) {
        w.make(best);
        moved = true;
      }
    }
    w.recount();  // no drift from the running sums
    if (!moved) break;
  }
  // Rounding in the running sums could let a move past the limit by a hair;
  // the start fits, so it is the answer then.
  std::vector<int> choice = w.choice();
  if (!memory.fits(choice)) choice = std::move(start);
  return Elimination{choice, objective(p, choice), 0};
}

double lower_bound(const PairwiseProblem &p) {
  double total = 0;
  for (const auto &costs : p.unary) total += *std::min_element(costs.begin(), costs.end());
  for (const PairwiseProblem::Pair &pair : p.pairs)
    total += *std::min_element(pair.cost.begin(), pair.cost.end());
  return total;
}

size_t ilp_variables_bound(const PairwiseProblem &p) {
  size_t n = 0;
  for (const auto &costs : p.unary) n += costs.size() > 1 ? costs.size() : 0;
  for (const PairwiseProblem::Pair &pair : p.pairs) n += pair.cost.size();
  return n;
}

void add_memory_rows(IlpProblem &ilp, const MemoryModel &m, const std::vector<int> &first_var,
                     double scale) {
  // A sum as terms on the variables, and what it adds for certain.
  auto terms_of = [&](const MemoryModel::Sum &sum, std::vector<std::pair<int, double>> &terms) {
    double constant = sum.constant;
    for (const MemoryModel::Term &t : sum.terms) {
      int first = first_var[static_cast<size_t>(t.node)];
      if (first < 0) {
        constant += m.bytes(t, 0);
        continue;
      }
      for (size_t a = 0; a < t.size; ++a)
        if (m.bytes(t, a) != 0)
          terms.push_back({first + static_cast<int>(a), m.bytes(t, a) * scale});
    }
    return constant;
  };
  std::vector<std::pair<int, double>> shared;
  const double shared_constant = terms_of(m.shared, shared);
  const int total = ilp.add_variable(0, 0, 1e300, false);
  shared.push_back({total, -1.0});
  ilp.add_row(std::move(shared), 'E', -shared_constant * scale);
  for (const MemoryModel::Sum &point : m.points) {
    std::vector<std::pair<int, double>> terms = {{total, 1.0}};
    const double constant = terms_of(point, terms);
    ilp.add_row(std::move(terms), 'L', (m.limit - constant) * scale);
  }
}

IlpProblem to_ilp(const PairwiseProblem &p, double scale, std::vector<int> &first_var,
                  double &constant) {
  IlpProblem ilp;
  const size_t n = p.unary.size();
  first_var.assign(n, -1);
  constant = 0;
  // A cost on candidate a of node v (a constant when v has one candidate).
  auto add = [&](int v, size_t a, double c) {
    if (first_var[static_cast<size_t>(v)] < 0) {
      constant += c;
      return;
    }
    size_t var = static_cast<size_t>(first_var[static_cast<size_t>(v)]) + a;
    if (std::isfinite(c))
      ilp.objective[var] += c * scale;
    else
      ilp.upper[var] = 0;  // forbidden
  };
  for (size_t v = 0; v < n; ++v) {
    if (p.unary[v].size() < 2) continue;
    std::vector<std::pair<int, double>> one_hot;
    for (size_t a = 0; a < p.unary[v].size(); ++a) {
      int var = ilp.add_variable(0, 0, 1, true);
      if (a == 0) first_var[v] = var;
      one_hot.push_back({var, 1.0});
    }
    ilp.add_row(std::move(one_hot), 'E', 1);
  }
  for (size_t v = 0; v < n; ++v)
    for (size_t a = 0; a < p.unary[v].size(); ++a) add(static_cast<int>(v), a, p.unary[v][a]);
  for (const PairwiseProblem::Pair &pair : p.pairs) {
    const size_t ku = p.unary[static_cast<size_t>(pair.u)].size();
    const size_t kv = p.unary[static_cast<size_t>(pair.v)].size();
    // Candidates that behave alike on this pair share a class.
    std::vector<std::vector<double>> rows(ku), cols(kv);
    for (size_t a = 0; a < ku; ++a)
      for (size_t b = 0; b < kv; ++b) {
        rows[a].push_back(pair.cost[a * kv + b]);
        cols[b].push_back(pair.cost[a * kv + b]);
      }
    std::vector<int> row_rep, col_rep;
    std::vector<int> row_class = classes(rows, row_rep), col_class = classes(cols, col_rep);
    if (row_rep.size() == 1 || first_var[static_cast<size_t>(pair.u)] < 0) {
      for (size_t b = 0; b < kv; ++b)
        add(pair.v, b, pair.cost[static_cast<size_t>(row_rep[0]) * kv + b]);
      continue;
    }
    if (col_rep.size() == 1 || first_var[static_cast<size_t>(pair.v)] < 0) {
      for (size_t a = 0; a < ku; ++a)
        add(pair.u, a, pair.cost[a * kv + static_cast<size_t>(col_rep[0])]);
      continue;
    }
    // Edge variables over the classes, tied to the nodes by marginal rows.
    std::vector<std::vector<std::pair<int, double>>> u_rows(row_rep.size()), v_rows(col_rep.size());
    for (size_t a = 0; a < ku; ++a)
      u_rows[static_cast<size_t>(row_class[a])].push_back(
          {first_var[static_cast<size_t>(pair.u)] + static_cast<int>(a), -1.0});
    for (size_t b = 0; b < kv; ++b)
      v_rows[static_cast<size_t>(col_class[b])].push_back(
          {first_var[static_cast<size_t>(pair.v)] + static_cast<int>(b), -1.0});
    for (size_t s = 0; s < row_rep.size(); ++s)
      for (size_t t = 0; t < col_rep.size(); ++t) {
        double c =
            pair.cost[static_cast<size_t>(row_rep[s]) * kv + static_cast<size_t>(col_rep[t])];
        if (!std::isfinite(c)) continue;  // this pair of classes cannot meet
        int e = ilp.add_variable(c * scale, 0, 1, false);
        u_rows[s].push_back({e, 1.0});
        v_rows[t].push_back({e, 1.0});
      }
    for (auto &row : u_rows) ilp.add_row(std::move(row), 'E', 0);
    for (auto &row : v_rows) ilp.add_row(std::move(row), 'E', 0);
  }
  return ilp;
}

std::optional<Elimination> eliminate(const PairwiseProblem &p, size_t max_states) {
  const int n = static_cast<int>(p.unary.size());
  std::vector<int> last(static_cast<size_t>(n));
  for (int v = 0; v < n; ++v) last[static_cast<size_t>(v)] = v;
  std::vector<std::vector<const PairwiseProblem::Pair *>> into(static_cast<size_t>(n));
  for (const auto &pair : p.pairs) {
    last[static_cast<size_t>(pair.u)] = std::max(last[static_cast<size_t>(pair.u)], pair.v);
    into[static_cast<size_t>(pair.v)].push_back(&pair);
  }
  // The live nodes and the table over their candidates (mixed radix, the
  // last node least significant).
  std::vector<int> active;
  std::vector<double> table = {0.0};
  struct Step {
    int node;                 // eliminated
    std::vector<int> rest;    // the live nodes after it went, in order
    std::vector<int> argmin;  // its best candidate per state of `rest`
  };
  std::vector<Step> steps;
  Elimination out;
  auto radix = [&](int v) { return p.unary[static_cast<size_t>(v)].size(); };
  for (int v = 0; v < n; ++v) {
    const size_t kv = radix(v);
    if (kv == 0 || table.size() * kv > max_states) return std::nullopt;
    // Strides of the live nodes (before v joins, they gain the factor kv).
    std::vector<size_t> stride(active.size());
    for (size_t i = active.size(), s = 1; i-- > 0;) {
      stride[i] = s;
      s *= radix(active[i]);
    }
    auto position = [&](int u) {
      return static_cast<size_t>(std::find(active.begin(), active.end(), u) - active.begin());
    };
    struct Term {
      const PairwiseProblem::Pair *pair;
      size_t stride, radix;
    };
    std::vector<Term> terms;
    for (const auto *pair : into[static_cast<size_t>(v)]) {
      size_t pos = position(pair->u);
      terms.push_back({pair, stride[pos], radix(pair->u)});
    }
    std::vector<double> next(table.size() * kv);
    for (size_t s = 0; s < table.size(); ++s)
      for (size_t b = 0; b < kv; ++b) {
        double c = table[s] + p.unary[static_cast<size_t>(v)][b];
        for (const Term &t : terms) c += t.pair->cost[((s / t.stride) % t.radix) * kv + b];
        next[s * kv + b] = c;
      }
    active.push_back(v);
    table = std::move(next);
    out.largest_table = std::max(out.largest_table, table.size());
    // Eliminate the nodes no later node needs.
    for (size_t i = active.size(); i-- > 0;) {
      int e = active[i];
      if (last[static_cast<size_t>(e)] > v) continue;
      size_t inner = 1;  // product of the radices after position i
      for (size_t j = i + 1; j < active.size(); ++j) inner *= radix(active[j]);
      const size_t ke = radix(e);
      const size_t outer = table.size() / (inner * ke);
      std::vector<double> reduced(outer * inner, HUGE_VAL);
      std::vector<int> argmin(outer * inner, 0);
      for (size_t o = 0; o < outer; ++o)
        for (size_t a = 0; a < ke; ++a)
          for (size_t in = 0; in < inner; ++in) {
            double c = table[(o * ke + a) * inner + in];
            size_t r = o * inner + in;
            if (c < reduced[r]) {
              reduced[r] = c;
              argmin[r] = static_cast<int>(a);
            }
          }
      active.erase(active.begin() + static_cast<long>(i));
      table = std::move(reduced);
      steps.push_back({e, active, std::move(argmin)});
    }
  }
  if (table.size() != 1 || !std::isfinite(table[0])) return std::nullopt;
  out.objective = table[0];
  // Back substitution: a node's best candidate given the nodes eliminated after it.
  out.choice.assign(static_cast<size_t>(n), 0);
  for (size_t k = steps.size(); k-- > 0;) {
    const Step &st = steps[k];
    size_t s = 0;
    for (int u : st.rest)
      s = s * radix(u) + static_cast<size_t>(out.choice[static_cast<size_t>(u)]);
    out.choice[static_cast<size_t>(st.node)] = st.argmin[s];
  }
  return out;
}

}  // namespace spmd::sharding
