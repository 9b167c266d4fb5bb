// sharding/lagrangian.cpp — see lagrangian.h.
#include "sharding/lagrangian.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "sharding/limited_elimination.h"
#include "support/cpu_time.h"

namespace spmd::sharding {

double Relaxation::gap() const {
  if (!best) return HUGE_VAL;
  if (best->objective <= 0) return 0;
  return std::max(0.0, (best->objective - bound) / best->objective);
}

namespace {

/// Relative tolerance for "no plan lies below the line".
constexpr double kTolerance = 1e-12;
/// Multiplier sets (points to weigh) tried before giving up on the gap.
constexpr int kRounds = 3;
/// Eliminations per multiplier set (the hull search ends far sooner).
constexpr int kSteps = 40;
/// Eliminations with labels (limited_elimination.h) when a gap remains.
constexpr int kExactRuns = 4;

class Relaxer {
 public:
  Relaxer(const PairwiseProblem &p, const MemoryModel &m, const RelaxOptions &o, RelaxMemo *memo)
      : p_(p), m_(m), o_(o), memo_(memo), work_(p), start_(process_cpu_seconds()) {
    out_.bound = -HUGE_VAL;
  }

  Relaxation run() {
    std::optional<Trial> free = solve_time_only();
    if (!free) return finish();
    if (m_.fits(free->choice)) {  // the unlimited optimum fits: optimal
      if (!out_.heuristic) out_.bound = free->time;
      return finish();
    }
    std::vector<int> tried;
    int point = peak_point(free->choice);
    // The first round always runs to its smallest plan, whatever the time:
    // a plan that fits is worth more than the time limit.
    for (int round = 0; round < kRounds && (round == 0 || !done()); ++round) {
      tried.push_back(point);
      std::optional<Trial> high = search({point}, *free);
      if (!high) break;
      // Next, weigh the point where the plan on the fitting side peaks.
      point = peak_point(high->choice);
      if (std::find(tried.begin(), tried.end(), point) != tried.end()) break;
    }
    if (out_.best && !done() && !out_.heuristic) exact(peak_point(out_.best->choice));
    // Without exact minima the hull search's plans sit at the limit's edge
    // for some weights, not at the best plan that fits: improve the best one
    // by moves that keep it fitting.
    if (out_.best && out_.heuristic && !out_of_time())
      offer(local_search_within(p_, m_, out_.best->choice).choice);
    return finish();
  }

 private:
  struct Trial {
    std::vector<int> choice;
    double time = 0;   // T
    double bytes = 0;  // the weighted memory
  };
  /// Per-candidate weights of shared + sum_p pi_p point_p (pi uniform over
  /// `points`), and the part no choice changes.
  struct Weights {
    std::vector<std::vector<double>> w;
    double constant = 0;
  };

  double elapsed() const { return process_cpu_seconds() - start_; }
  bool out_of_time() const { return elapsed() >= o_.time_limit_s; }
  bool done() const { return out_.infeasible || out_of_time() || out_.gap() <= o_.gap; }

  Relaxation finish() {
    // The time-only problem's simple bound holds under the limit too; it is
    // all there is when no elimination ran.
    if (out_.heuristic) out_.bound = std::max(out_.bound, lower_bound(p_));
    if (out_.best) out_.bound = std::min(out_.bound, out_.best->objective);
    return std::move(out_);
  }

  int peak_point(const std::vector<int> &choice) const {
    int at = -1;
    double most = -HUGE_VAL;
    for (size_t q = 0; q < m_.points.size(); ++q) {
      double b = m_.at(m_.points[q], choice);
      if (b > most) {
        most = b;
        at = static_cast<int>(q);
      }
    }
    return at;
  }

  Weights weights(const std::vector<int> &points) const {
    Weights w;
    w.w.resize(p_.unary.size());
    for (size_t v = 0; v < p_.unary.size(); ++v) w.w[v].assign(p_.unary[v].size(), 0);
    auto add = [&](const MemoryModel::Sum &sum, double share) {
      w.constant += share * sum.constant;
      for (const MemoryModel::Term &t : sum.terms)
        for (size_t a = 0; a < t.size; ++a)
          w.w[static_cast<size_t>(t.node)][a] += share * m_.bytes(t, a);
    };
    add(m_.shared, 1);
    for (int q : points)
      if (q >= 0) add(m_.points[static_cast<size_t>(q)], 1.0 / static_cast<double>(points.size()));
    return w;
  }

  double weighed(const Weights &w, const std::vector<int> &choice) const {
    double total = w.constant;
    for (size_t v = 0; v < choice.size(); ++v) total += w.w[v][static_cast<size_t>(choice[v])];
    return total;
  }

  /// A plan that fits: the best so far when it is cheaper.
  void offer(const std::vector<int> &choice) {
    if (m_.fits(choice)) offer_fitting(choice);
  }

  /// offer() of a plan known to fit.
  void offer_fitting(const std::vector<int> &choice) {
    double t = objective(p_, choice);
    if (!out_.best || t < out_.best->objective) {
      out_.best = Elimination{choice, t, 0};
      out_.bests.push_back(choice);
    }
  }

  /// argmin of time_weight * T + lambda * weighed bytes; with time_weight 1
  /// its value is g(lambda) + lambda * (L - constant), a lower bound.
  std::optional<Trial> solve(const std::vector<int> &points, const Weights &w, double lambda,
                             double time_weight) {
    RelaxMemo::Key key{points, lambda, time_weight, out_.too_wide};
    std::optional<Elimination> e;
    if (memo_) {
      if (auto it = memo_->runs.find(key); it != memo_->runs.end()) {
        const RelaxMemo::Run &run = it->second;
        out_.eliminations += run.eliminated ? 1 : 0;
        if (run.too_wide) out_.too_wide = out_.heuristic = true;
        out_.local_searches += run.local ? 1 : 0;
        e = run.e;
      }
    }
    if (!e) {
      RelaxMemo::Run run;
      e = minimise(w, lambda, time_weight, run);
      if (memo_) {
        run.e = *e;
        memo_->runs.emplace(std::move(key), std::move(run));
      }
    }
    if (!std::isfinite(e->objective)) return std::nullopt;
    if (time_weight == 1 && !out_.heuristic)
      out_.bound = std::max(out_.bound, e->objective + lambda * (w.constant - m_.limit));
    Trial t{e->choice, objective(p_, e->choice), weighed(w, e->choice)};
    offer(t.choice);
    return t;
  }

  /// The minimisation of solve(), recorded in `run`.
  Elimination minimise(const Weights &w, double lambda, double time_weight, RelaxMemo::Run &run) {
    // Forbidden candidates and pairs (infinite costs) stay forbidden.
    auto scaled = [time_weight](double c) { return std::isinf(c) ? c : time_weight * c; };
    for (size_t v = 0; v < p_.unary.size(); ++v)
      for (size_t a = 0; a < p_.unary[v].size(); ++a)
        work_.unary[v][a] = scaled(p_.unary[v][a]) + lambda * w.w[v][a];
    if (time_weight == 0)
      for (auto &pair : work_.pairs)
        for (double &c : pair.cost) c = scaled(c);
    // Once a table has grown too large, the same problem with other weights
    // would too: every later minimisation is a local search's (a plan, no
    // bound).
    std::optional<Elimination> e;
    if (!out_.too_wide) {
      e = eliminate(work_, o_.max_states);
      ++out_.eliminations;
      run.eliminated = true;
      if (!e) out_.too_wide = out_.heuristic = run.too_wide = true;
    }
    if (!e) {
      e = local_search(work_);
      ++out_.local_searches;
      run.local = true;
    }
    if (time_weight == 0) work_.pairs = p_.pairs;
    return std::move(*e);
  }

  std::optional<Trial> solve_time_only() { return solve({}, weights({}), 0, 1); }

  /// The hull search over lambda for the points `points`, from the plan
  /// `low` that does not fit; returns the last plan on the fitting side.
  std::optional<Trial> search(const std::vector<int> &points, Trial low) {
    const Weights w = weights(points);
    low.bytes = weighed(w, low.choice);
    // The least weighed memory (time ignored): over the limit, nothing fits.
    std::optional<Trial> high = solve(points, w, 1, 0);
    if (!high) return std::nullopt;
    if (high->bytes > m_.limit * (1 + kTolerance)) {
      // Proven only when `high` is the exact minimum.
      out_.infeasible = !out_.heuristic;
      return std::nullopt;
    }
    for (int step = 0; step < kSteps && !done(); ++step) {
      if (!(low.bytes > high->bytes)) break;
      double lambda = std::max(0.0, (high->time - low.time) / (low.bytes - high->bytes));
      double line = low.time + lambda * low.bytes;
      std::optional<Trial> t = solve(points, w, lambda, 1);
      if (!t) break;
      // The multiplier of the best bound at this point, for exact().
      const double g = t->time + lambda * (t->bytes - m_.limit);
      auto [it, fresh] = lambda_.emplace(points[0], std::make_pair(g, lambda));
      if (!fresh && g > it->second.first) it->second = {g, lambda};
      if (g > best_lambda_.first) best_lambda_ = {g, lambda};
      if (t->time + lambda * t->bytes >= line - kTolerance * std::abs(line)) break;  // lambda*
      (t->bytes > m_.limit ? low : *high) = std::move(*t);
    }
    mix(low.choice, high->choice);
    mix(high->choice, low.choice);
    return high;
  }

  /// The exact optimum under the limit at one point (limited_elimination.h):
  /// a lower bound, and the optimum when its plan fits at every point. When
  /// the plan peaks higher elsewhere, the same point again with its limit
  /// lowered by that difference (a restriction, not a relaxation: no bound)
  /// gives plans that fit. At most kExactRuns eliminations with labels.
  void exact(int point) {
    const Weights w = weights({point});
    double limit = m_.limit;
    for (int run = 0; run < kExactRuns && !done(); ++run) {
      LimitedOptions lo;
      lo.limit = limit;
      lo.upper = out_.best->objective;
      lo.max_labels = o_.max_labels;
      lo.max_states = o_.max_states;
      auto it = lambda_.find(point);
      lo.lambda = it != lambda_.end() ? it->second.second : best_lambda_.second;
      std::optional<LimitedResult> r = eliminate_limited(p_, w.w, w.constant, lo);
      if (!r) {
        out_.labels_exceeded = true;
        return;
      }
      out_.labels += r->labels;
      ++out_.exact_runs;
      const bool relaxed = limit == m_.limit;
      if (!r->found) {  // nothing that fits here beats the plan
        if (relaxed) out_.bound = out_.best->objective;
        return;
      }
      if (relaxed) out_.bound = std::max(out_.bound, r->objective);
      offer(r->choice);
      if (m_.fits(r->choice)) {  // with the full limit: the optimum
        if (relaxed) out_.bound = out_.best->objective;
        return;
      }
      // Leave the room this plan's peak took over this point: it is then out.
      limit = std::min(limit, m_.limit - (m_.peak(r->choice) - weighed(w, r->choice)));
    }
  }

  /// Plans that take the first nodes as in `first` and the rest as in
  /// `rest`: the longest such prefix that fits (by bisection; offered).
  void mix(const std::vector<int> &first, const std::vector<int> &rest) {
    auto mixed = [&](size_t cut) {
      std::vector<int> c = rest;
      std::copy(first.begin(), first.begin() + static_cast<long>(cut), c.begin());
      return c;
    };
    size_t ok = 0, bad = first.size();
    if (!m_.fits(mixed(ok))) {
      offer(mixed(bad));
      return;
    }
    if (std::vector<int> all = mixed(bad); m_.fits(all)) {
      offer_fitting(all);
      return;
    }
    // Each sum of the memory model at mixed(cut) is its value at `rest` plus
    // the changes of the nodes before `cut`: prefix sums by node make each
    // step of the bisection cost a binary search per sum, not a pass over
    // every term (a training step's model holds ~10^5 terms).
    struct Prefix {
      double base = 0;
      std::vector<int> node;    // increasing
      std::vector<double> sum;  // the changes of node[0..i]
      double at(size_t cut) const {
        const auto i =
            std::lower_bound(node.begin(), node.end(), static_cast<int>(cut)) - node.begin();
        return base + (i > 0 ? sum[static_cast<size_t>(i - 1)] : 0.0);
      }
    };
    std::vector<std::pair<int, double>> changes;  // (reused by every sum)
    auto prefix = [&](const MemoryModel::Sum &sum) {
      Prefix out;
      out.base = m_.at(sum, rest);
      changes.clear();
      for (const MemoryModel::Term &t : sum.terms) {
        const auto v = static_cast<size_t>(t.node);
        const double d =
            m_.bytes(t, static_cast<size_t>(first[v])) - m_.bytes(t, static_cast<size_t>(rest[v]));
        if (d != 0) changes.push_back({t.node, d});
      }
      // (reduce.h's model lists each sum's terms by node: sorted already.)
      if (!std::is_sorted(changes.begin(), changes.end()))
        std::sort(changes.begin(), changes.end());
      out.node.reserve(changes.size());
      out.sum.reserve(changes.size());
      double running = 0;
      for (const auto &[v, d] : changes) {
        running += d;
        out.node.push_back(v);
        out.sum.push_back(running);
      }
      return out;
    };
    const Prefix shared = prefix(m_.shared);
    std::vector<Prefix> points;
    points.reserve(m_.points.size());
    for (const MemoryModel::Sum &point : m_.points) points.push_back(prefix(point));
    auto fits = [&](size_t cut) {
      const double room = m_.limit - shared.at(cut);
      for (const Prefix &point : points)
        if (point.at(cut) > room) return false;
      return true;
    };
    while (bad - ok > 1) {
      size_t mid = (ok + bad) / 2;
      (fits(mid) ? ok : bad) = mid;
    }
    // Sums in another order can round differently: the exact check decides.
    // (mixed(0) fits: checked above.)
    while (ok > 0 && !m_.fits(mixed(ok))) --ok;
    offer_fitting(mixed(ok));
  }

  const PairwiseProblem &p_;
  const MemoryModel &m_;
  const RelaxOptions &o_;
  RelaxMemo *memo_;  // or nullptr
  PairwiseProblem work_;
  double start_;                                     // process CPU seconds
  std::map<int, std::pair<double, double>> lambda_;  // per point searched: (best bound, its lambda)
  std::pair<double, double> best_lambda_{-HUGE_VAL, 0};  // over all points
  Relaxation out_;
};

}  // namespace

Relaxation relax_memory(const PairwiseProblem &p, const MemoryModel &memory,
                        const RelaxOptions &options, RelaxMemo *memo) {
  return Relaxer(p, memory, options, memo).run();
}

}  // namespace spmd::sharding
