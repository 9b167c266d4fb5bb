// sharding/reduce.cpp — see reduce.h.
//
// Steps: 1. copy the problem into a mutable graph (nodes with candidate ids,
// costs and memory terms per sum; pairs merged per pair of nodes); 2. a
// worklist over the nodes, in order, each visit dropping dominated
// candidates and then removing the node when it has one candidate, joining
// it into its neighbour when it is a leaf, or minimising it out when it is
// a series node without memory terms — every change queues the nodes it
// touched; 3. the surviving nodes, in their original order, as a pairwise
// problem and a memory model.
#include "sharding/reduce.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <map>
#include <stdexcept>

namespace spmd::sharding {
namespace {

/// A leaf joins its neighbour only while the neighbour stays at most this
/// many times as wide (and at most kMaxJoined wide).
constexpr size_t kJoinGrowth = 4;
constexpr size_t kMaxJoined = 256;
/// A series node goes only when the pair it leaves has at most this many entries.
constexpr size_t kMaxSeriesPair = size_t{1} << 12;

struct Mem {
  int sum = 0;          // 0: shared; q + 1: point q
  uint32_t offset = 0;  // its bytes per candidate of the node: Reducer::pool_[offset...]
};

struct Node {
  bool alive = true;
  std::vector<int> ids;       // per candidate
  std::vector<double> unary;  // per candidate
  std::vector<Mem> mem;       // at most one per sum
  std::vector<int> pairs;     // incident pairs (some may be dead)
};

struct Pair {
  bool alive = true;
  int u = 0, v = 0;
  std::vector<double> cost;  // |u| x |v|, row-major
};

class Reducer {
 public:
  Reducer(const PairwiseProblem &p, const MemoryModel *m) : has_memory_(m != nullptr) {
    // 1. The mutable graph.
    const size_t n = p.unary.size();
    nodes_.resize(n);
    queued_.assign(n, false);
    out_.original_id.resize(n + 1);
    for (size_t v = 0; v < n; ++v) {
      out_.original_id[v] = static_cast<int>(out_.children.size());
      nodes_[v].unary = p.unary[v];
      for (size_t a = 0; a < p.unary[v].size(); ++a) {
        nodes_[v].ids.push_back(static_cast<int>(out_.children.size()));
        out_.children.emplace_back();
      }
    }
    out_.original_id[n] = static_cast<int>(out_.children.size());
    for (const PairwiseProblem::Pair &q : p.pairs) add_pair(q.u, q.v, q.cost, false);
    if (m) {
      pool_ = m->pool;
      exclusive_from_ = pool_.size();
      constants_.assign(m->points.size() + 1, 0);
      add_sum(m->shared, 0);
      for (size_t q = 0; q < m->points.size(); ++q) add_sum(m->points[q], static_cast<int>(q) + 1);
      limit_ = m->limit;
    }
  }

  Reduced run() {
    // 2. The worklist.
    for (size_t v = 0; v < nodes_.size(); ++v) push(static_cast<int>(v));
    while (!queue_.empty()) {
      int v = queue_.front();
      queue_.pop_front();
      queued_[static_cast<size_t>(v)] = false;
      visit(v);
    }
    return finish();
  }

 private:
  size_t size(int v) const { return nodes_[static_cast<size_t>(v)].ids.size(); }

  /// Pair q's cost between node x's candidate i and the other node's candidate j.
  double cost(const Pair &q, int x, size_t i, size_t j) const {
    return q.u == x ? q.cost[i * size(q.v) + j] : q.cost[j * size(q.v) + i];
  }
  int other(const Pair &q, int x) const { return q.u == x ? q.v : q.u; }

  void push(int v) {
    if (queued_[static_cast<size_t>(v)] || !nodes_[static_cast<size_t>(v)].alive) return;
    queued_[static_cast<size_t>(v)] = true;
    queue_.push_back(v);
  }

  void push_neighbours(int v) {
    for (int q : nodes_[static_cast<size_t>(v)].pairs)
      if (pairs_[static_cast<size_t>(q)].alive) push(other(pairs_[static_cast<size_t>(q)], v));
  }

  /// Adds `cost` (|u| x |v|) to the pair of u and v, made if there is none.
  void add_pair(int u, int v, const std::vector<double> &cost, bool transposed) {
    int lo = std::min(u, v), hi = std::max(u, v);
    bool flip = (u > v) != transposed;  // cost's rows are hi's candidates
    auto [it, inserted] = pair_of_.emplace(std::make_pair(lo, hi), static_cast<int>(pairs_.size()));
    if (inserted || !pairs_[static_cast<size_t>(it->second)].alive) {
      it->second = static_cast<int>(pairs_.size());
      pairs_.push_back(Pair{true, lo, hi, std::vector<double>(size(lo) * size(hi), 0)});
      nodes_[static_cast<size_t>(lo)].pairs.push_back(it->second);
      nodes_[static_cast<size_t>(hi)].pairs.push_back(it->second);
    }
    Pair &q = pairs_[static_cast<size_t>(it->second)];
    const size_t klo = size(lo), khi = size(hi);
    for (size_t a = 0; a < klo; ++a)
      for (size_t b = 0; b < khi; ++b)
        q.cost[a * khi + b] += flip ? cost[b * klo + a] : cost[a * khi + b];
  }

  /// A copy of the pool's bytes at `offset` (a node's `k` candidates).
  uint32_t copy_bytes(uint32_t offset, size_t k) {
    const auto at = static_cast<uint32_t>(pool_.size());
    pool_.resize(pool_.size() + k);
    for (size_t a = 0; a < k; ++a) pool_[at + a] = pool_[offset + a];
    return at;
  }

  void add_sum(const MemoryModel::Sum &sum, int index) {
    constants_[static_cast<size_t>(index)] += sum.constant;
    for (const MemoryModel::Term &t : sum.terms) {
      Node &n = nodes_[static_cast<size_t>(t.node)];
      // The sums come in index order, so this one's entry, if any, is the
      // last. A node's first term in a sum shares the model's bytes; a
      // second makes the sum of the two its own (from exclusive_from_ on,
      // each vector belongs to one entry and may change in place).
      if (n.mem.empty() || n.mem.back().sum != index) {
        n.mem.push_back(Mem{index, t.offset});
        continue;
      }
      Mem &x = n.mem.back();
      if (x.offset < exclusive_from_) x.offset = copy_bytes(x.offset, n.ids.size());
      for (size_t a = 0; a < t.size; ++a) pool_[x.offset + a] += pool_[t.offset + a];
    }
  }

  int degree(int v) const {
    int d = 0;
    for (int q : nodes_[static_cast<size_t>(v)].pairs) d += pairs_[static_cast<size_t>(q)].alive;
    return d;
  }

  void visit(int v) {
    Node &n = nodes_[static_cast<size_t>(v)];
    if (!n.alive) return;
    constant_terms(v);
    if (drop_dominated(v)) push_neighbours(v);
    if (size(v) == 1) return fix(v);
    const int d = degree(v);
    if (d == 1) {
      join_leaf(v);
    } else if (d == 2 && n.mem.empty()) {
      minimise_series(v);
    }
  }

  /// Memory terms that are equal for every candidate are constants.
  void constant_terms(int v) {
    Node &n = nodes_[static_cast<size_t>(v)];
    const size_t k = n.ids.size();
    for (size_t t = n.mem.size(); t-- > 0;) {
      const auto b = pool_.begin() + n.mem[t].offset;
      if (std::all_of(b, b + static_cast<long>(k), [&](double x) { return x == b[0]; })) {
        constants_[static_cast<size_t>(n.mem[t].sum)] += b[0];
        n.mem.erase(n.mem.begin() + static_cast<long>(t));
      }
    }
  }

  /// Whether candidate b of v is no worse than a in everything; `bytes`: the
  /// distinct byte vectors of v's memory terms (distinct_bytes()).
  bool dominates(int v, size_t b, size_t a, const std::vector<uint32_t> &bytes) const {
    const Node &n = nodes_[static_cast<size_t>(v)];
    if (!(n.unary[b] <= n.unary[a])) return false;
    for (uint32_t m : bytes)
      if (!(pool_[m + b] <= pool_[m + a])) return false;
    for (int qi : n.pairs) {
      const Pair &q = pairs_[static_cast<size_t>(qi)];
      if (!q.alive) continue;
      const size_t k = size(other(q, v));
      for (size_t j = 0; j < k; ++j)
        if (!(cost(q, v, b, j) <= cost(q, v, a, j))) return false;
    }
    return true;
  }

  /// The distinct byte vectors among v's memory terms. A value live at many
  /// points has one term per point, all with its bytes: dominance need only
  /// compare each distinct vector once (a training step's nodes hold ~100
  /// terms and a few distinct vectors).
  std::vector<uint32_t> distinct_bytes(int v) const {
    // Each term against the last few kept (equal terms come in runs): a
    // repeat missed only costs a comparison later.
    const auto k = static_cast<long>(size(v));
    std::vector<uint32_t> out;
    for (const Mem &m : nodes_[static_cast<size_t>(v)].mem) {
      bool seen = false;
      for (size_t i = out.size(); i-- > 0 && out.size() - i <= 8 && !seen;)
        seen = out[i] == m.offset || std::equal(pool_.begin() + out[i], pool_.begin() + out[i] + k,
                                                pool_.begin() + m.offset);
      if (!seen) out.push_back(m.offset);
    }
    return out;
  }

  /// Step 1; true when a candidate went.
  bool drop_dominated(int v) {
    const size_t k = size(v);
    std::vector<bool> gone(k, false);
    bool any = false;
    const std::vector<uint32_t> bytes = distinct_bytes(v);
    for (size_t a = 0; a < k; ++a)
      for (size_t b = 0; b < k; ++b) {
        if (b == a || gone[b] || !dominates(v, b, a, bytes)) continue;
        if (b > a && dominates(v, a, b, bytes)) continue;  // identical: the first stays
        gone[a] = any = true;
        break;
      }
    if (!any) return false;
    std::vector<size_t> keep;
    for (size_t a = 0; a < k; ++a)
      if (!gone[a]) keep.push_back(a);
    out_.removed_candidates += static_cast<int>(k - keep.size());
    restrict(v, keep);
    return true;
  }

  /// Node v keeps candidates `keep` (old positions, in order; may repeat).
  void restrict(int v, const std::vector<size_t> &keep) {
    Node &n = nodes_[static_cast<size_t>(v)];
    const size_t old = n.ids.size();
    for (int qi : n.pairs) {
      Pair &q = pairs_[static_cast<size_t>(qi)];
      if (!q.alive) continue;
      const int o = other(q, v);
      const size_t ko = size(o);
      std::vector<double> c;
      c.reserve(keep.size() * ko);
      if (q.u == v) {
        for (size_t a : keep)
          c.insert(c.end(), q.cost.begin() + static_cast<long>(a * ko),
                   q.cost.begin() + static_cast<long>((a + 1) * ko));
      } else {
        for (size_t j = 0; j < ko; ++j)
          for (size_t a : keep) c.push_back(q.cost[j * old + a]);
      }
      q.cost = std::move(c);
    }
    auto pick = [&](auto &xs) {
      std::remove_reference_t<decltype(xs)> ys;
      for (size_t a : keep) ys.push_back(xs[a]);
      xs = std::move(ys);
    };
    pick(n.ids);
    pick(n.unary);
    // Each distinct vector once (the entries of one value, live at many
    // points, share theirs): a new vector, as others may share the old.
    std::vector<std::pair<uint32_t, uint32_t>> done;  // (old, new), the last few
    for (Mem &m : n.mem) {
      uint32_t to = 0;
      bool seen = false;
      for (size_t i = done.size(); i-- > 0 && done.size() - i <= 8 && !seen;)
        if (done[i].first == m.offset) {
          to = done[i].second;
          seen = true;
        }
      if (!seen) {
        to = static_cast<uint32_t>(pool_.size());
        for (size_t a : keep) {
          const double x = pool_[m.offset + a];
          pool_.push_back(x);
        }
        done.push_back({m.offset, to});
      }
      m.offset = to;
    }
  }

  void kill_pair(int qi) {
    Pair &q = pairs_[static_cast<size_t>(qi)];
    q.alive = false;
    q.cost.clear();
  }

  /// Step 2.
  void fix(int v) {
    Node &n = nodes_[static_cast<size_t>(v)];
    for (int qi : n.pairs) {
      Pair &q = pairs_[static_cast<size_t>(qi)];
      if (!q.alive) continue;
      const int o = other(q, v);
      Node &on = nodes_[static_cast<size_t>(o)];
      for (size_t j = 0; j < on.ids.size(); ++j) on.unary[j] += cost(q, v, 0, j);
      kill_pair(qi);
      push(o);
    }
    constant_ += n.unary[0];
    for (const Mem &m : n.mem) constants_[static_cast<size_t>(m.sum)] += pool_[m.offset];
    out_.fixed_ids.push_back(n.ids[0]);
    n.alive = false;
  }

  int only_pair(int v) const {
    for (int qi : nodes_[static_cast<size_t>(v)].pairs)
      if (pairs_[static_cast<size_t>(qi)].alive) return qi;
    return -1;
  }

  /// Step 3: leaf v joins its neighbour.
  void join_leaf(int v) {
    const int qi = only_pair(v);
    const Pair &q = pairs_[static_cast<size_t>(qi)];
    const int u = other(q, v);
    Node &leaf = nodes_[static_cast<size_t>(v)];
    const size_t ku = size(u), kv = size(v);
    // Per candidate i of u, the leaf's candidates that can be best with it.
    std::vector<std::pair<size_t, size_t>> joined;  // (i, a)
    std::vector<double> through(kv);
    for (size_t i = 0; i < ku; ++i) {
      for (size_t a = 0; a < kv; ++a) through[a] = leaf.unary[a] + cost(q, u, i, a);
      for (size_t a = 0; a < kv; ++a) {
        bool beaten = false;
        for (size_t b = 0; b < kv && !beaten; ++b) {
          if (b == a || !(through[b] <= through[a])) continue;
          bool smaller = true;
          for (const Mem &m : leaf.mem)
            smaller = smaller && pool_[m.offset + b] <= pool_[m.offset + a];
          if (!smaller) continue;
          bool same = through[b] == through[a];
          for (const Mem &m : leaf.mem) same = same && pool_[m.offset + b] == pool_[m.offset + a];
          beaten = !same || b < a;  // of identical ones the first stays
        }
        if (!beaten) joined.push_back({i, a});
      }
      if (joined.size() > std::max(kJoinGrowth * ku, kv) || joined.size() > kMaxJoined) return;
    }
    // The joined candidates replace u's.
    std::vector<double> extra(joined.size());
    std::vector<size_t> rows(joined.size());
    std::vector<int> ids(joined.size());
    Node &un = nodes_[static_cast<size_t>(u)];
    for (size_t k = 0; k < joined.size(); ++k) {
      auto [i, a] = joined[k];
      rows[k] = i;
      extra[k] = leaf.unary[a] + cost(q, u, i, a);
      ids[k] = static_cast<int>(out_.children.size());
      out_.children.push_back({un.ids[i], leaf.ids[a]});
    }
    std::vector<Mem> moved;
    for (const Mem &m : leaf.mem) {
      // (The entries of one value share their vector: the last one made
      // serves a repeat.)
      if (!moved.empty() && leaf.mem[moved.size() - 1].offset == m.offset) {
        moved.push_back({m.sum, moved.back().offset});
        continue;
      }
      Mem j{m.sum, static_cast<uint32_t>(pool_.size())};
      for (auto [i, a] : joined) {
        const double x = pool_[m.offset + a];
        pool_.push_back(x);
      }
      moved.push_back(j);
    }
    kill_pair(qi);
    leaf.alive = false;
    restrict(u, rows);
    un.ids = std::move(ids);
    for (size_t k = 0; k < joined.size(); ++k) un.unary[k] += extra[k];
    for (const Mem &m : moved) {
      auto it =
          std::find_if(un.mem.begin(), un.mem.end(), [&](const Mem &x) { return x.sum == m.sum; });
      if (it == un.mem.end()) {
        un.mem.push_back(m);
      } else {  // (a new vector: the old one may be shared)
        const auto to = static_cast<uint32_t>(pool_.size());
        for (size_t k = 0; k < joined.size(); ++k) {
          const double x = pool_[it->offset + k] + pool_[m.offset + k];
          pool_.push_back(x);
        }
        it->offset = to;
      }
    }
    ++out_.joined_leaves;
    push(u);
    push_neighbours(u);
  }

  /// Step 4: series node v (no memory terms) between its two neighbours.
  void minimise_series(int v) {
    int q1 = -1, q2 = -1;
    for (int qi : nodes_[static_cast<size_t>(v)].pairs)
      if (pairs_[static_cast<size_t>(qi)].alive) (q1 < 0 ? q1 : q2) = qi;
    const Pair &a = pairs_[static_cast<size_t>(q1)];
    const Pair &b = pairs_[static_cast<size_t>(q2)];
    const int u = other(a, v), w = other(b, v);
    const size_t ku = size(u), kw = size(w), kv = size(v);
    if (ku * kw > kMaxSeriesPair) return;
    const Node &n = nodes_[static_cast<size_t>(v)];
    std::vector<double> table(ku * kw, HUGE_VAL);
    Reduced::Series s{nodes_[static_cast<size_t>(u)].ids, nodes_[static_cast<size_t>(w)].ids,
                      std::vector<int>(ku * kw, n.ids[0])};
    for (size_t i = 0; i < ku; ++i)
      for (size_t c = 0; c < kv; ++c) {
        const double left = n.unary[c] + cost(a, v, c, i);
        for (size_t j = 0; j < kw; ++j) {
          const double total = left + cost(b, v, c, j);
          if (total < table[i * kw + j]) {
            table[i * kw + j] = total;
            s.best[i * kw + j] = n.ids[c];
          }
        }
      }
    out_.series.push_back(std::move(s));
    kill_pair(q1);
    kill_pair(q2);
    nodes_[static_cast<size_t>(v)].alive = false;
    add_pair(u, w, table, false);
    ++out_.series_removed;
    push(u);
    push(w);
  }

  // 3. The reduced problem.
  Reduced finish() {
    std::vector<int> index(nodes_.size(), -1);
    for (size_t v = 0; v < nodes_.size(); ++v) {
      if (!nodes_[v].alive) continue;
      index[v] = static_cast<int>(out_.problem.unary.size());
      out_.problem.unary.push_back(nodes_[v].unary);
      out_.node_ids.push_back(nodes_[v].ids);
    }
    if (out_.problem.unary.empty()) {  // everything was decided
      out_.problem.unary.push_back({0.0});
      out_.node_ids.push_back({});
    }
    for (double &c : out_.problem.unary[0]) c += constant_;
    for (const Pair &q : pairs_) {
      if (!q.alive) continue;
      out_.problem.pairs.push_back(
          {index[static_cast<size_t>(q.u)], index[static_cast<size_t>(q.v)], q.cost});
    }
    // Pairs in order of their second node, then first (as the original's).
    std::stable_sort(out_.problem.pairs.begin(), out_.problem.pairs.end(),
                     [](const auto &x, const auto &y) {
                       return std::make_pair(x.v, x.u) < std::make_pair(y.v, y.u);
                     });
    if (has_memory_) {
      MemoryModel m;
      m.limit = limit_;
      m.points.resize(constants_.size() - 1);
      auto sum = [&](int s) -> MemoryModel::Sum & {
        return s == 0 ? m.shared : m.points[static_cast<size_t>(s - 1)];
      };
      for (size_t s = 0; s < constants_.size(); ++s)
        sum(static_cast<int>(s)).constant = constants_[s];
      std::vector<size_t> count(constants_.size(), 0);
      for (const Node &node : nodes_)
        if (node.alive)
          for (const Mem &x : node.mem) ++count[static_cast<size_t>(x.sum)];
      for (size_t s = 0; s < constants_.size(); ++s)
        sum(static_cast<int>(s)).terms.reserve(count[s]);
      // The vectors the surviving entries use, each once, in node order
      // (the order a sum reads them in).
      std::vector<uint32_t> moved_to(pool_.size(), UINT32_MAX);
      for (size_t v = 0; v < nodes_.size(); ++v) {
        if (!nodes_[v].alive) continue;
        const size_t k = nodes_[v].ids.size();
        for (const Mem &x : nodes_[v].mem) {
          uint32_t &to = moved_to[x.offset];
          if (to == UINT32_MAX) {
            to = static_cast<uint32_t>(m.pool.size());
            m.pool.insert(m.pool.end(), pool_.begin() + x.offset,
                          pool_.begin() + x.offset + static_cast<long>(k));
          }
          sum(x.sum).terms.push_back({index[v], to, static_cast<uint32_t>(k)});
        }
      }
      out_.memory = std::move(m);
    }
    return std::move(out_);
  }

  bool has_memory_;
  double limit_ = 0;
  std::vector<Node> nodes_;
  std::vector<Pair> pairs_;
  std::map<std::pair<int, int>, int> pair_of_;
  std::vector<double> constants_;  // per memory sum
  std::vector<double> pool_;       // the entries' bytes (Mem::offset)
  size_t exclusive_from_ = 0;      // add_sum's vectors: one entry's each
  double constant_ = 0;            // the costs of removed nodes
  std::deque<int> queue_;
  std::vector<bool> queued_;
  Reduced out_;
};

}  // namespace

std::vector<int> Reduced::expand(const std::vector<int> &choice) const {
  std::vector<bool> marked(children.size(), false);
  std::vector<int> stack;
  auto mark = [&](int id) {
    stack.push_back(id);
    while (!stack.empty()) {
      int x = stack.back();
      stack.pop_back();
      if (marked[static_cast<size_t>(x)]) continue;
      marked[static_cast<size_t>(x)] = true;
      for (int c : children[static_cast<size_t>(x)]) stack.push_back(c);
    }
  };
  for (int id : fixed_ids) mark(id);
  for (size_t r = 0; r < node_ids.size(); ++r)
    if (!node_ids[r].empty()) mark(node_ids[r][static_cast<size_t>(choice[r])]);
  auto chosen = [&](const std::vector<int> &ids) {
    size_t at = ids.size();
    for (size_t i = 0; i < ids.size(); ++i)
      if (marked[static_cast<size_t>(ids[i])]) {
        if (at != ids.size()) throw std::logic_error("reduce: two candidates of one node chosen");
        at = i;
      }
    if (at == ids.size()) throw std::logic_error("reduce: a series node's neighbour unchosen");
    return at;
  };
  for (size_t k = series.size(); k-- > 0;) {
    const Series &s = series[k];
    mark(s.best[chosen(s.u_ids) * s.w_ids.size() + chosen(s.w_ids)]);
  }
  std::vector<int> out(original_id.size() - 1, -1);
  for (size_t v = 0; v + 1 < original_id.size(); ++v) {
    const int first = original_id[v];
    const int end = original_id[v + 1];
    for (int id = first; id < end; ++id)
      if (marked[static_cast<size_t>(id)]) {
        if (out[v] >= 0) throw std::logic_error("reduce: two candidates of one node chosen");
        out[v] = id - first;
      }
    if (out[v] < 0) throw std::logic_error("reduce: a node left unchosen");
  }
  return out;
}

Reduced reduce(const PairwiseProblem &p, const MemoryModel *memory) {
  return Reducer(p, memory).run();
}

}  // namespace spmd::sharding
