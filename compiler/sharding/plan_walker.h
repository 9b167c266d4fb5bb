// sharding/plan_walker.h — a plan of a pairwise problem walked by moves under a
// memory limit: the moves' cost changes priced incrementally (only the pairs
// they touch), the memory model's sums kept up to date as moves are made, and
// whether a move keeps every point within the limit. The move-based searches
// share it: local_search_within (pairwise.h: one node, or one node with its
// neighbours at their cheapest) and block_search (block_search.h: a parameter
// with everything tied to it).
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

#include "sharding/pairwise.h"

namespace spmd::sharding {

/// A plan with its memory sums kept up to date, and moves priced against it.
class PlanWalker {
 public:
  using Move = std::vector<std::pair<size_t, int>>;  // (node, candidate)

  PlanWalker(const PairwiseProblem &p, const MemoryModel &m, std::vector<int> choice)
      : p_(p),
        m_(m),
        choice_(std::move(choice)),
        pairs_of_(p.unary.size()),
        where_begin_(p.unary.size() + 1, 0),
        point_(m.points.size()),
        delta_(m.points.size(), 0),
        marked_(m.points.size(), 0),
        pair_mark_(p.pairs.size(), 0) {
    for (size_t k = 0; k < p.pairs.size(); ++k) {
      pairs_of_[static_cast<size_t>(p.pairs[k].u)].push_back(k);
      pairs_of_[static_cast<size_t>(p.pairs[k].v)].push_back(k);
    }
    // Each node's terms, the shared sum's first, then the points' in order
    // (one array: a training step's model has ~10^6 terms).
    auto each_term = [&](auto &&f) {
      for (const MemoryModel::Term &t : m.shared.terms) f(-1, t);
      for (size_t q = 0; q < m.points.size(); ++q)
        for (const MemoryModel::Term &t : m.points[q].terms) f(static_cast<int>(q), t);
    };
    each_term(
        [&](int, const MemoryModel::Term &t) { ++where_begin_[static_cast<size_t>(t.node) + 1]; });
    for (size_t v = 0; v < p.unary.size(); ++v) where_begin_[v + 1] += where_begin_[v];
    where_.resize(where_begin_.back());
    std::vector<uint32_t> next(where_begin_.begin(), where_begin_.end() - 1);
    each_term([&](int sum, const MemoryModel::Term &t) {
      where_[next[static_cast<size_t>(t.node)]++] = {sum, t.offset};
    });
    recount();
  }

  const std::vector<int> &choice() const { return choice_; }
  /// The indices (into p.pairs) of the pairs node v is in.
  const std::vector<size_t> &pairs_of(size_t v) const { return pairs_of_[v]; }
  int at(size_t v) const { return choice_[v]; }
  void set(size_t v, int a) { choice_[v] = a; }

  void recount() {
    shared_ = m_.at(m_.shared, choice_);
    for (size_t q = 0; q < point_.size(); ++q) point_[q] = m_.at(m_.points[q], choice_);
  }

  double pair_cost(size_t k) const {
    const PairwiseProblem::Pair &pair = p_.pairs[k];
    return pair.cost[static_cast<size_t>(choice_[static_cast<size_t>(pair.u)]) *
                         p_.unary[static_cast<size_t>(pair.v)].size() +
                     static_cast<size_t>(choice_[static_cast<size_t>(pair.v)])];
  }

  /// Marks node v and its neighbours.
  void mark_around(size_t v, std::vector<char> &marks) const {
    marks[v] = 1;
    for (size_t k : pairs_of_[v]) {
      marks[static_cast<size_t>(p_.pairs[k].u)] = 1;
      marks[static_cast<size_t>(p_.pairs[k].v)] = 1;
    }
  }

  /// Node v's unary and pairs as the plan stands.
  double cost_here(size_t v) const {
    double c = p_.unary[v][static_cast<size_t>(choice_[v])];
    for (size_t k : pairs_of_[v]) c += pair_cost(k);
    return c;
  }

  /// Node v's cheapest candidate given the rest of the plan.
  int cheapest(size_t v) {
    const int keep = choice_[v];
    int best = keep;
    double least = cost_here(v);
    for (size_t b = 0; b < p_.unary[v].size(); ++b) {
      if (static_cast<int>(b) == keep) continue;
      choice_[v] = static_cast<int>(b);
      const double c = cost_here(v);
      if (c < least * (1 - 1e-12)) {
        least = c;
        best = static_cast<int>(b);
      }
    }
    choice_[v] = keep;
    return best;
  }

  /// The objective's change if `move` were made (each pair counted once).
  double change(const Move &move) {
    pairs_.clear();
    for (const auto &[v, a] : move)
      for (size_t k : pairs_of_[v])
        if (!pair_mark_[k]) {
          pair_mark_[k] = 1;
          pairs_.push_back(k);
        }
    std::sort(pairs_.begin(), pairs_.end());  // a fixed order of summing
    auto local = [&] {
      double c = 0;
      for (const auto &[v, a] : move) c += p_.unary[v][static_cast<size_t>(choice_[v])];
      for (size_t k : pairs_) c += pair_cost(k);
      return c;
    };
    const double before = local();
    old_.clear();
    for (const auto &[v, a] : move) {
      old_.push_back(choice_[v]);
      choice_[v] = a;
    }
    const double after = local();
    for (size_t i = move.size(); i-- > 0;) choice_[move[i].first] = old_[i];
    for (size_t k : pairs_) pair_mark_[k] = 0;
    return after - before;
  }

  /// Whether the plan with `move` made stays within the limit.
  bool fits(const Move &move) {
    gather(move);
    const double room = m_.limit - (shared_ + shared_delta_);
    bool ok = true;
    for (size_t q : touched_) ok = ok && point_[q] + delta_[q] <= room;
    // More shared bytes also lower the room of every point the move is not in.
    if (ok && shared_delta_ > 0)
      for (size_t q = 0; q < point_.size() && ok; ++q) ok = marked_[q] || point_[q] <= room;
    release();
    return ok;
  }

  void make(const Move &move) {
    gather(move);
    shared_ += shared_delta_;
    for (size_t q : touched_) point_[q] += delta_[q];
    release();
    for (const auto &[v, a] : move) choice_[v] = a;
  }

 private:
  struct Where {
    int sum = -1;         // a point's index, or -1 for the shared sum
    uint32_t offset = 0;  // the term's bytes in m_.pool
  };

  void gather(const Move &move) {
    shared_delta_ = 0;
    touched_.clear();
    for (const auto &[v, a] : move)
      for (uint32_t k = where_begin_[v]; k < where_begin_[v + 1]; ++k) {
        const Where &w = where_[k];
        const double d = m_.pool[w.offset + static_cast<size_t>(a)] -
                         m_.pool[w.offset + static_cast<size_t>(choice_[v])];
        if (w.sum < 0) {
          shared_delta_ += d;
          continue;
        }
        const auto q = static_cast<size_t>(w.sum);
        if (!marked_[q]) touched_.push_back(q);
        marked_[q] = 1;
        delta_[q] += d;
      }
  }
  void release() {
    for (size_t q : touched_) {
      delta_[q] = 0;
      marked_[q] = 0;
    }
  }

  const PairwiseProblem &p_;
  const MemoryModel &m_;
  std::vector<int> choice_;
  std::vector<std::vector<size_t>> pairs_of_;
  // Node v's terms: where_[where_begin_[v]] up to where_[where_begin_[v + 1]].
  std::vector<uint32_t> where_begin_;
  std::vector<Where> where_;
  double shared_ = 0, shared_delta_ = 0;
  std::vector<double> point_, delta_;
  std::vector<char> marked_, pair_mark_;
  std::vector<size_t> touched_, pairs_;
  std::vector<int> old_;
};

}  // namespace spmd::sharding
