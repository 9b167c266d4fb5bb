// sharding/limited_elimination.cpp — see limited_elimination.h.
//
// Steps (the elimination of pairwise.cpp, with lists for numbers): 1. the
// live nodes after each step (the same order as the elimination); 2. a
// backward pass: for each step and each choice of the live nodes, the least
// T + lambda * bytes that the nodes still to come can add; 3. the nodes in
// order: each candidate of the new node extends every label of every table
// entry; a node no later node needs is minimised out by merging the lists
// of its candidates into their Pareto set, each surviving label recording
// which candidate it took; a label goes when even the best completion
// (step 2) cannot meet the limit with T <= upper; 4. the fastest label of
// the last entry, and its choice read back through the records.
#include "sharding/limited_elimination.h"

#include <algorithm>
#include <cmath>

namespace spmd::sharding {
namespace {

struct Label {
  double time, bytes;
  int ref;  // the record of the last node minimised out on its way (-1: none)
};
struct Record {
  int parent, node, cand;
};

}  // namespace

std::optional<LimitedResult> eliminate_limited(const PairwiseProblem &p,
                                               const std::vector<std::vector<double>> &weight,
                                               double constant, const LimitedOptions &options) {
  const int n = static_cast<int>(p.unary.size());
  auto radix = [&](int v) { return p.unary[static_cast<size_t>(v)].size(); };
  std::vector<int> last(static_cast<size_t>(n));
  for (int v = 0; v < n; ++v) last[static_cast<size_t>(v)] = v;
  std::vector<std::vector<const PairwiseProblem::Pair *>> into(static_cast<size_t>(n));
  for (const auto &pair : p.pairs) {
    last[static_cast<size_t>(pair.u)] = std::max(last[static_cast<size_t>(pair.u)], pair.v);
    into[static_cast<size_t>(pair.v)].push_back(&pair);
  }
  // 1. The live nodes after each step v (live[v + 1]; live[0] is none).
  std::vector<std::vector<int>> live(static_cast<size_t>(n) + 1);
  for (int v = 0; v < n; ++v) {
    std::vector<int> a = live[static_cast<size_t>(v)];
    a.push_back(v);
    std::vector<int> kept;
    for (int u : a)
      if (last[static_cast<size_t>(u)] > v) kept.push_back(u);
    live[static_cast<size_t>(v) + 1] = std::move(kept);
  }
  auto table_size = [&](const std::vector<int> &nodes) {
    size_t s = 1;
    for (int u : nodes) s *= radix(u);
    return s;
  };
  for (const auto &nodes : live)
    if (table_size(nodes) > options.max_states) return std::nullopt;
  // 2. future[v][s]: the least T + lambda * bytes of the nodes after v
  // (with their pairs), for choice s of live[v] (mixed radix, last node
  // least significant).
  const double lambda = options.lambda;
  std::vector<std::vector<double>> future(static_cast<size_t>(n) + 1);
  future[static_cast<size_t>(n)] = {0.0};
  for (int v = n; v-- > 0;) {
    const std::vector<int> &before = live[static_cast<size_t>(v)];
    const std::vector<int> &after = live[static_cast<size_t>(v) + 1];
    const size_t kv = radix(v);
    std::vector<double> &f = future[static_cast<size_t>(v)];
    f.assign(table_size(before), HUGE_VAL);
    std::vector<size_t> digit(before.size());
    // Where each node of `after` is: a position of `before`, or v itself.
    std::vector<int> from(after.size());
    for (size_t j = 0; j < after.size(); ++j)
      from[j] = after[j] == v ? -1
                              : static_cast<int>(std::find(before.begin(), before.end(), after[j]) -
                                                 before.begin());
    std::vector<std::pair<size_t, const PairwiseProblem::Pair *>> terms;
    for (const auto *pair : into[static_cast<size_t>(v)])
      terms.push_back(
          {static_cast<size_t>(std::find(before.begin(), before.end(), pair->u) - before.begin()),
           pair});
    for (size_t s = 0; s < f.size(); ++s) {
      for (size_t i = before.size(), x = s; i-- > 0;) {
        digit[i] = x % radix(before[i]);
        x /= radix(before[i]);
      }
      double best = HUGE_VAL;
      for (size_t b = 0; b < kv; ++b) {
        double c = p.unary[static_cast<size_t>(v)][b] + lambda * weight[static_cast<size_t>(v)][b];
        for (auto [pos, pair] : terms) c += pair->cost[digit[pos] * kv + b];
        size_t t = 0;
        for (size_t j = 0; j < after.size(); ++j)
          t = t * radix(after[j]) + (from[j] < 0 ? b : digit[static_cast<size_t>(from[j])]);
        best = std::min(best, c + future[static_cast<size_t>(v) + 1][t]);
      }
      f[s] = best;
    }
  }
  // A label with these T and bytes at a table entry whose completions add
  // at least `rest` cannot meet the limit with T <= upper.
  const double slack = 1e-9 * (std::abs(options.upper) + lambda * std::abs(options.limit));
  auto hopeless = [&](const Label &l, double rest) {
    return !(l.bytes <= options.limit * (1 + 1e-12)) ||
           !(l.time + lambda * (l.bytes - options.limit) + rest <= options.upper + slack);
  };

  // 3. The nodes in order.
  std::vector<Record> records;
  LimitedResult out;
  std::vector<int> active;
  std::vector<std::vector<Label>> table = {{Label{0, constant, -1}}};
  for (int v = 0; v < n; ++v) {
    const size_t kv = radix(v);
    std::vector<size_t> stride(active.size());
    for (size_t i = active.size(), s = 1; i-- > 0;) {
      stride[i] = s;
      s *= radix(active[i]);
    }
    struct Term {
      const PairwiseProblem::Pair *pair;
      size_t stride, radix;
    };
    std::vector<Term> terms;
    for (const auto *pair : into[static_cast<size_t>(v)]) {
      size_t pos =
          static_cast<size_t>(std::find(active.begin(), active.end(), pair->u) - active.begin());
      terms.push_back({pair, stride[pos], radix(pair->u)});
    }
    std::vector<std::vector<Label>> next(table.size() * kv);
    for (size_t s = 0; s < table.size(); ++s)
      for (size_t b = 0; b < kv; ++b) {
        double add = p.unary[static_cast<size_t>(v)][b];
        for (const Term &t : terms) add += t.pair->cost[((s / t.stride) % t.radix) * kv + b];
        const double bytes = weight[static_cast<size_t>(v)][b];
        std::vector<Label> &list = next[s * kv + b];
        list.reserve(table[s].size());
        for (const Label &l : table[s]) {
          Label m{l.time + add, l.bytes + bytes, l.ref};
          if (!(m.bytes <= options.limit * (1 + 1e-12))) continue;
          list.push_back(m);
        }
        out.labels += list.size();
      }
    if (out.labels > options.max_labels) return std::nullopt;
    active.push_back(v);
    table = std::move(next);
    // Minimise out the nodes no later node needs.
    for (size_t i = active.size(); i-- > 0;) {
      const int e = active[i];
      if (last[static_cast<size_t>(e)] > v) continue;
      size_t inner = 1;
      for (size_t j = i + 1; j < active.size(); ++j) inner *= radix(active[j]);
      const size_t ke = radix(e);
      const size_t outer = table.size() / (inner * ke);
      std::vector<std::vector<Label>> reduced(outer * inner);
      struct Entry {
        double bytes, time;
        int cand, ref;
      };
      std::vector<Entry> all;
      for (size_t o = 0; o < outer; ++o)
        for (size_t in = 0; in < inner; ++in) {
          all.clear();
          for (size_t a = 0; a < ke; ++a)
            for (const Label &l : table[(o * ke + a) * inner + in])
              all.push_back({l.bytes, l.time, static_cast<int>(a), l.ref});
          std::sort(all.begin(), all.end(), [](const Entry &x, const Entry &y) {
            return x.bytes != y.bytes ? x.bytes < y.bytes
                                      : (x.time != y.time ? x.time < y.time : x.cand < y.cand);
          });
          // The Pareto set: by growing bytes, strictly falling time.
          std::vector<Label> &list = reduced[o * inner + in];
          double best = HUGE_VAL;
          for (const Entry &x : all) {
            if (!(x.time < best)) continue;
            best = x.time;
            records.push_back({x.ref, e, x.cand});
            list.push_back({x.time, x.bytes, static_cast<int>(records.size()) - 1});
          }
        }
      active.erase(active.begin() + static_cast<long>(i));
      table = std::move(reduced);
    }
    // Drop the labels no completion can save (the table is over live[v + 1]).
    const std::vector<double> &f = future[static_cast<size_t>(v) + 1];
    for (size_t s = 0; s < table.size(); ++s) {
      std::vector<Label> &list = table[s];
      list.erase(std::remove_if(list.begin(), list.end(),
                                [&](const Label &l) { return hopeless(l, f[s]); }),
                 list.end());
    }
  }
  // 4. The fastest label left (the last of the Pareto set).
  if (table.size() != 1 || table[0].empty()) return out;  // none meets the limit under `upper`
  const Label &best = table[0].back();
  if (!(best.time <= options.upper + slack)) return out;
  out.found = true;
  out.objective = best.time;
  out.bytes = best.bytes;
  out.choice.assign(static_cast<size_t>(n), 0);
  for (int r = best.ref; r >= 0; r = records[static_cast<size_t>(r)].parent)
    out.choice[static_cast<size_t>(records[static_cast<size_t>(r)].node)] =
        records[static_cast<size_t>(r)].cand;
  return out;
}

}  // namespace spmd::sharding
