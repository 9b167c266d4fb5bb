// transforms/peephole.cpp — see peephole.h.
#include "transforms/peephole.h"

#include <algorithm>

#include "ir/loops.h"
#include "ir/value_map.h"
#include "ops/shape_rules.h"
#include "ops/variance_rules.h"
#include "support/flat_hash_map.h"
#include "transforms/dce.h"

namespace spmd {
namespace {

bool elementwise(OpCode op) {
  switch (op_kind(op)) {
    case OpKind::Binary:
    case OpKind::Compare:
    case OpKind::Logical:
    case OpKind::Select:
      return true;
    default:
      return false;
  }
}

class Peephole {
 public:
  /// A block and an index in it.
  using Place = std::pair<const std::vector<ir::Instr> *, size_t>;

  explicit Peephole(const ir::Module &module, ir::Function &f) : f_(f), mesh_(module.mesh_of(f)) {}

  /// Counts the uses of every value (operands, next values, returns).
  void count_uses() {
    uses_.assign(f_.values.size(), 0);
    def_.reserve(f_.values.size());
    place_.reserve(f_.values.size());
    ir::for_each_instr(f_.body, [&](const ir::Instr &in) {
      for (ir::ValueId o : in.operands) ++uses_[o];
      for (const ir::Region &r : in.regions)
        for (ir::ValueId y : r.yields) ++uses_[y];
    });
    for (ir::ValueId r : f_.returns) ++uses_[r];
  }

  void run(std::vector<ir::Instr> &body) {
    const size_t scope = seen_.size();
    for (size_t index = 0; index < body.size(); ++index) {
      ir::Instr &in = body[index];
      for (ir::ValueId &o : in.operands) o = resolve(o);
      for (ir::Region &r : in.regions) {
        run(r.body);
        for (ir::ValueId &y : r.yields) y = resolve(y);
      }
      block_ = &body;
      while (rewrite(in)) {
      }
      if (auto same = unchanged(in)) {
        alias_[in.results[0]] = *same;  // its uses read `same`; dead code removes it
        continue;
      }
      if (auto same = equal_to_earlier(in)) {  // likewise; it reads nothing any more
        alias_[in.results[0]] = *same;
        for (ir::ValueId o : in.operands) --uses_[o];
        continue;
      }
      for (ir::ValueId r : in.results) def_[r] = &in;
      if (!in.results.empty()) place_[in.results[0]] = {&body, index};
      remember(in);
    }
    // What the block defines is not visible after it.
    for (; seen_.size() > scope; seen_.pop_back()) {
      const Seen &last = seen_.back();
      if (last.previous >= 0)
        *latest_seen_.find(last.key) = last.previous;
      else
        latest_seen_.erase(last.key);
    }
  }

  /// `v`, or the value it was found equal to (uses counted again).
  ir::ValueId resolve(ir::ValueId v) {
    const ir::ValueId *same = alias_.find(v);
    if (!same) return v;
    --uses_[v];
    ++uses_[*same];
    return *same;
  }

 private:
  ir::Instr *def(ir::ValueId v, OpCode op) const {
    ir::Instr *const *d = def_.find(v);
    return d && (*d)->op == op ? *d : nullptr;
  }

  /// Where the instruction `in` (one with results, seen by run) is: its block and index.
  const Place &place(const ir::Instr *in) const { return place_.at(in->results.at(0)); }

  bool is_zero(ir::ValueId v) const {
    ir::Instr *const *found = def_.find(v);
    if (!found) return false;
    const ir::Instr &d = **found;
    return (d.op == OpCode::Constant || d.op == OpCode::Full) && d.attrs.creation().value == 0.0;
  }

  /// Replaces `in` by `op(operands, attrs)` when that has exactly `in`'s result type.
  bool replace(ir::Instr &in, OpCode op, std::vector<ir::ValueId> operands, Attrs attrs) {
    if (in.results.size() != 1) return false;
    std::vector<Type> types;
    std::vector<AxisSet> variances;
    AxisSet all;
    for (ir::ValueId o : operands) {
      types.push_back(f_.type(o));
      all = all | f_.type(o).variance;
    }
    ShapeRuleResult shapes = infer_shapes(op, types, attrs, mesh_);
    const Type &want = f_.type(in.results[0]);
    if (!shapes.ok() || shapes.results.size() != 1 || shapes.results[0].dtype != want.dtype ||
        shapes.results[0].shape != want.shape || result_variance(op, all, attrs) != want.variance)
      return false;
    for (ir::ValueId o : in.operands) --uses_[o];
    for (ir::ValueId o : operands) ++uses_[o];
    in.op = op;
    in.operands = std::move(operands);
    in.attrs = std::move(attrs);
    pad_tree_[static_cast<size_t>(in.results[0])] = kUnknown;  // (it may have been a pad)
    return true;
  }

  /// A hash of the op and operands of `in`; equal_to_earlier compares in full.
  static size_t key(const ir::Instr &in) {
    size_t k = std::hash<int>()(static_cast<int>(in.op));
    for (ir::ValueId o : in.operands) k = k * 1000003u ^ std::hash<ir::ValueId>()(o);
    return k;
  }

  /// An instruction equal to `in` (op, operands, attributes, result type)
  /// seen before it where it is visible: a rewrite (or an operand found
  /// equal to another) can make two instructions equal that simplify's
  /// common subexpressions did not see as equal, e.g. `broadcast_to(x, s)`
  /// and `broadcast_to(reshape(x), s)`.
  std::optional<ir::ValueId> equal_to_earlier(const ir::Instr &in) const {
    if (in.results.size() != 1 || !in.regions.empty()) return std::nullopt;
    const int32_t *latest = latest_seen_.find(key(in));
    std::optional<ir::ValueId> earliest;  // (the first one seen that is equal)
    for (int32_t k = latest ? *latest : -1; k >= 0; k = seen_[static_cast<size_t>(k)].previous) {
      const ir::Instr *prev = seen_[static_cast<size_t>(k)].in;
      if (prev->op == in.op && prev->operands == in.operands && prev->attrs == in.attrs &&
          prev->results.size() == 1 && f_.type(prev->results[0]) == f_.type(in.results[0]))
        earliest = prev->results[0];  // (rewritten since, maybe: compared in full)
    }
    return earliest;
  }

  void remember(const ir::Instr &in) {
    if (in.results.size() != 1 || !in.regions.empty()) return;
    const size_t k = key(in);
    const auto index = static_cast<int32_t>(seen_.size());
    auto [latest, fresh] = latest_seen_.try_emplace(k, index);
    seen_.push_back({&in, k, fresh ? -1 : *latest});
    *latest = index;
  }

  bool rewrite(ir::Instr &in) {
    if ((in.op == OpCode::Add || in.op == OpCode::Sub) && sum_of_slices(in)) return true;
    if (in.op == OpCode::Add &&
        (add_of_negs(in) || add_of_neg(in) || add_of_pads(in) || add_of_selects(in) ||
         add_of_covering_pieces(in) || add_of_complementary_blocks(in)))
      return true;
    if (in.op == OpCode::Sub && (sub_of_neg(in) || sub_of_sub(in) || neg_minus(in))) return true;
    if (in.op == OpCode::Neg && neg_of_sub(in)) return true;
    if (elementwise(in.op) && implicit_broadcast(in)) return true;
    if (in.op == OpCode::BroadcastTo) return broadcast_of_broadcast(in);
    if (in.op == OpCode::DynamicUpdateSlice) return update_of_zeroed_block(in);
    if (in.op == OpCode::Slice) return tight_slice_limits(in);
    return false;
  }

  /// `dynamic_update_slice(x, dynamic_slice(x, i), i)` writes back what it
  /// read: it is x.
  std::optional<ir::ValueId> unchanged(const ir::Instr &in) const {
    if (in.op != OpCode::DynamicUpdateSlice) return std::nullopt;
    const ir::ValueId x = in.operands[0];
    const ir::Instr *block = def(in.operands[1], OpCode::DynamicSlice);
    if (block && block->operands[0] == x && block->operands[1] == in.operands[2] &&
        block->attrs.layout().dim == in.attrs.layout().dim && f_.type(x) == f_.type(in.results[0]))
      return x;
    return std::nullopt;
  }

  /// `x + -y`, `-y + x` -> `x - y`. Of `-a + -b`, the negation nothing
  /// else reads goes (`v1 - m` of a `v1 = -v0` read elsewhere too, not
  /// `-m - v0`).
  bool add_of_neg(ir::Instr &in) {
    const ir::Instr *n[2] = {def(in.operands[0], OpCode::Neg), def(in.operands[1], OpCode::Neg)};
    const size_t first = n[0] && n[1] && uses_[in.operands[0]] > 1 && uses_[in.operands[1]] == 1;
    for (size_t k : {first, 1 - first})
      if (n[k]) return replace(in, OpCode::Sub, {in.operands[1 - k], n[k]->operands[0]}, {});
    return false;
  }

  /// `-a + -b` -> `-(a + b)` when nothing else reads either negation (only
  /// a zero's sign can differ): the later negation becomes the sum. Likewise
  /// `n + n` with `n = -a` read only there -> `-(a + a)`.
  bool add_of_negs(ir::Instr &in) {
    ir::Instr *n0 = def(in.operands[0], OpCode::Neg), *n1 = def(in.operands[1], OpCode::Neg);
    if (!n0 || !n1 || uses_[n0->results[0]] != (n0 == n1 ? 2 : 1) ||
        uses_[n1->results[0]] != (n0 == n1 ? 2 : 1))
      return false;
    const auto p0 = place(n0), p1 = place(n1);
    if (p0.first != p1.first || !(f_.type(in.operands[0]) == f_.type(in.operands[1]))) return false;
    ir::Instr *later = p0.second > p1.second ? n0 : n1;
    Attrs none;
    if (!replace(*later, OpCode::Add, {n0->operands[0], n1->operands[0]}, none)) return false;
    f_.values[later->results[0]].name.clear();  // (no longer the value the name was given)
    return replace(in, OpCode::Neg, {later->results[0]}, none);
  }

  /// `x - -y` -> `x + y` (the same operation: subtracting adds the negation).
  bool sub_of_neg(ir::Instr &in) {
    if (const ir::Instr *n = def(in.operands[1], OpCode::Neg))
      return replace(in, OpCode::Add, {in.operands[0], n->operands[0]}, {});
    return false;
  }

  /// `x[s] + y[s]` -> `(x + y)[s]` (and `-`) when nothing else reads the
  /// slices and x and y have one shape: slicing picks elements, so the
  /// elements are the same sums (transposing twice slices each term of what
  /// was written as a slice of a sum). The later slice becomes the sum of
  /// the whole arrays (a new value), which the rewrites then simplify like
  /// any sum (`x + -y` to `x - y`).
  bool sum_of_slices(ir::Instr &in) {
    ir::Instr *s0 = def(in.operands[0], OpCode::Slice), *s1 = def(in.operands[1], OpCode::Slice);
    if (!s0 || !s1 || s0 == s1 || uses_[s0->results[0]] != 1 || uses_[s1->results[0]] != 1 ||
        !(s0->attrs == s1->attrs))
      return false;
    const ir::ValueId x = s0->operands[0], y = s1->operands[0];
    const Type &tx = f_.type(x), &ty = f_.type(y), &want = f_.type(in.results[0]);
    const auto p0 = place(s0), p1 = place(s1);
    if (tx.shape != ty.shape || tx.dtype != ty.dtype || p0.first != p1.first) return false;
    // The types of the whole sum and of its slice (which must be in's).
    const std::vector<Type> operands{tx, ty};
    ShapeRuleResult whole = infer_shapes(in.op, operands, Attrs{}, mesh_);
    if (!whole.ok() || whole.results.size() != 1) return false;
    Type sum_type = whole.results[0];
    sum_type.variance = result_variance(in.op, tx.variance | ty.variance, Attrs{});
    const Attrs slice = s0->attrs;
    const std::vector<Type> whole_sum{sum_type};
    ShapeRuleResult part = infer_shapes(OpCode::Slice, whole_sum, slice, mesh_);
    if (!part.ok() || part.results.size() != 1 || part.results[0].shape != want.shape ||
        part.results[0].dtype != want.dtype ||
        result_variance(OpCode::Slice, sum_type.variance, slice) != want.variance)
      return false;
    ir::Instr *later = p0.second > p1.second ? s0 : s1;
    const ir::ValueId sum = f_.add_value(sum_type, "", in.span);
    uses_.push_back(0);
    pad_tree_.push_back(kUnknown);
    // (The earlier slice is dead; its operand's uses stay counted, as for
    // every instruction a rewrite leaves dead, in case it is found equal to
    // a later one and read again.)
    --uses_[later->operands[0]];
    const ir::ValueId old = later->results[0];
    def_.erase(old);
    later->op = in.op;
    later->operands = {x, y};
    later->attrs = Attrs{};
    later->results = {sum};
    ++uses_[x];
    ++uses_[y];
    def_[sum] = later;
    // Copied first: place_[sum] may grow the map, which would leave a
    // reference from place_.at(old) dangling (found by AddressSanitizer).
    const auto where = place_.at(old);
    place_[sum] = where;
    const std::vector<ir::Instr> *block = block_;
    block_ = p0.first;
    while (rewrite(*later)) {
    }
    block_ = block;
    --uses_[in.operands[0]];
    --uses_[in.operands[1]];
    ++uses_[sum];
    in.op = OpCode::Slice;
    in.operands = {sum};
    in.attrs = slice;
    pad_tree_[static_cast<size_t>(in.results[0])] = kUnknown;
    return true;
  }

  /// `-a - b` -> `-(a + b)` when nothing else reads `-a` (negation is exact
  /// and rounding symmetric; only a zero's sign can differ): `-a - b` and
  /// `-b - a` are one sum, and transposing twice gives it as `-(a + b)`. The
  /// negation, in the block being rewritten, becomes the sum, so b must be
  /// defined before it.
  bool neg_minus(ir::Instr &in) {
    ir::Instr *n = def(in.operands[0], OpCode::Neg);
    if (!n || uses_[n->results[0]] != 1) return false;
    const auto at = place(n);
    if (at.first != block_) return false;
    if (ir::Instr *const *b = def_.find(in.operands[1])) {
      const auto b_at = place(*b);
      if (b_at.first == at.first && b_at.second > at.second) return false;
    }
    if (!replace(*n, OpCode::Add, {n->operands[0], in.operands[1]}, {})) return false;
    f_.values[n->results[0]].name.clear();  // (no longer the value the name was given)
    return replace(in, OpCode::Neg, {n->results[0]}, {});
  }

  /// `-(a - b)` -> `b - a` when nothing else reads `a - b` (rounding is
  /// symmetric; only a zero's sign can differ).
  bool neg_of_sub(ir::Instr &in) {
    const ir::Instr *d = def(in.operands[0], OpCode::Sub);
    if (!d || uses_[d->results[0]] != 1) return false;
    return replace(in, OpCode::Sub, {d->operands[1], d->operands[0]}, {});
  }

  /// `x - (a - b)` -> `x + (b - a)` when nothing else reads `a - b` (the
  /// same bits: rounding is symmetric, a - b = -(b - a)).
  bool sub_of_sub(ir::Instr &in) {
    ir::Instr *inner = def(in.operands[1], OpCode::Sub);
    if (!inner || uses_[inner->results[0]] != 1) return false;
    const ir::ValueId x = in.operands[0], d = inner->operands[1];
    if (!replace(in, OpCode::Add, {x, inner->results[0]}, {})) return false;
    inner->operands[1] = inner->operands[0];
    inner->operands[0] = d;
    return true;
  }

  /// The source of operand `v` when it only broadcasts (broadcast_to, or a
  /// reshape or a sum over dimensions of size 1 that adds or removes leading
  /// 1s), else nothing.
  std::optional<ir::ValueId> broadcast_source(ir::ValueId v) const {
    if (const ir::Instr *b = def(v, OpCode::BroadcastTo)) return b->operands[0];
    const ir::Instr *r = def(v, OpCode::Reshape);
    if (const ir::Instr *s = def(v, OpCode::ReduceSum)) {
      const Shape &from = f_.type(s->operands[0]).shape;
      bool ones = true;
      for (int64_t d : s->attrs.reduce().dims) ones = ones && from[static_cast<size_t>(d)] == 1;
      if (ones) r = s;
    }
    if (r && same_but_leading_ones(f_.type(r->operands[0]).shape, f_.type(v).shape))
      return r->operands[0];
    return std::nullopt;
  }

  bool implicit_broadcast(ir::Instr &in) {
    for (size_t k = 0; k < in.operands.size(); ++k)
      if (auto source = broadcast_source(in.operands[k])) {
        std::vector<ir::ValueId> operands = in.operands;
        operands[k] = *source;
        if (replace(in, in.op, std::move(operands), in.attrs)) return true;
      }
    return false;
  }

  bool broadcast_of_broadcast(ir::Instr &in) {
    if (auto source = broadcast_source(in.operands[0]))
      return replace(in, OpCode::BroadcastTo, {*source}, in.attrs);
    return false;
  }

  /// A tree of adds whose leaves are zero pads (stride 1) tiling the result
  /// along one dimension -> concat of the padded values in order.
  bool add_of_pads(ir::Instr &in) {
    std::vector<const ir::Instr *> pads;
    const Type &t = f_.type(in.results[0]);
    for (ir::ValueId o : in.operands)
      if (!collect_pads(o, t, pads)) return false;
    auto concat = tiling(pads, t.shape);
    return concat && replace(in, OpCode::Concat, std::move(concat->first), concat->second);
  }

  /// When zero pads (stride 1) tile `full` along one dimension: the concat of
  /// the padded values in order (operands, attributes).
  std::optional<std::pair<std::vector<ir::ValueId>, Attrs>> tiling(
      std::vector<const ir::Instr *> pads, const Shape &full) const {
    for (size_t dim = 0; dim < full.size(); ++dim) {
      std::sort(pads.begin(), pads.end(), [&](const ir::Instr *a, const ir::Instr *b) {
        return a->attrs.layout().start[dim] < b->attrs.layout().start[dim];
      });
      int64_t next = 0;
      bool tiles = true;
      for (const ir::Instr *p : pads) {
        const Shape &piece = f_.type(p->operands[0]).shape;
        for (size_t d = 0; d < full.size(); ++d)
          tiles = tiles && p->attrs.layout().stride[d] == 1 &&
                  (d == dim ? p->attrs.layout().start[d] == next
                            : p->attrs.layout().start[d] == 0 && piece[d] == full[d]);
        next += piece[dim];
      }
      if (!tiles || next != full[dim]) continue;
      std::vector<ir::ValueId> operands;
      for (const ir::Instr *p : pads) operands.push_back(p->operands[0]);
      Attrs a;
      a.layout().dim = static_cast<int64_t>(dim);
      return std::pair{std::move(operands), a};
    }
    return std::nullopt;
  }

  /// The leaves of the tree of adds and subtractions at `v` read only in
  /// the tree (all of type `t`), each with its sign in the sum, or false;
  /// also false past `budget` nodes (a gradient sums many cotangents in one
  /// long chain of adds: walking all of it again at every add would be
  /// quadratic).
  bool sum_leaves(ir::ValueId v, const Type &t, std::vector<std::pair<ir::ValueId, int>> &leaves,
                  int &budget, int sign = 1) const {
    if (!(f_.type(v) == t) || --budget < 0) return false;
    const ir::Instr *d = def(v, OpCode::Add);
    if (!d) d = def(v, OpCode::Sub);
    if (!d || uses_[v] != 1) {
      leaves.emplace_back(v, sign);
      return true;
    }
    return sum_leaves(d->operands[0], t, leaves, budget, sign) &&
           sum_leaves(d->operands[1], t, leaves, budget, d->op == OpCode::Sub ? -sign : sign);
  }

  /// A tree of adds (and subtractions) of one value x, added or subtracted,
  /// and of pieces, added, that are zero but in one place each, which
  /// together cover every element once: zero pads tiling a dimension, or
  /// `where(c, 0, a)` and `where(c, b, 0)` -> x + the concat (the
  /// `where(c, b, a)`), or the concat - x: each element is one piece and x
  /// (in either order: addition commutes) plus zeros. The last of the
  /// pieces (in one block) becomes the concat or select.
  bool add_of_covering_pieces(ir::Instr &in) {
    const Type &t = f_.type(in.results[0]);
    std::vector<std::pair<ir::ValueId, int>> leaves;
    int budget = 64;
    for (ir::ValueId o : in.operands)
      if (!sum_leaves(o, t, leaves, budget)) return false;
    std::vector<ir::ValueId> others;
    int other_sign = 1;
    std::vector<ir::Instr *> pads, selects;
    for (auto [v, sign] : leaves) {
      if (uses_[v] != 1 || sign < 0) {
        others.push_back(v);
        other_sign = sign;
      } else if (ir::Instr *p = def(v, OpCode::Pad)) {
        pads.push_back(p);
      } else if (ir::Instr *w = def(v, OpCode::Select)) {
        selects.push_back(w);
      } else {
        others.push_back(v);
        other_sign = sign;
      }
    }
    if (others.size() != 1 || leaves.size() < 3) return false;
    std::vector<ir::Instr *> pieces = pads.empty() ? selects : pads;
    if (!pads.empty() && !selects.empty()) return false;
    const auto where = place(pieces[0]);
    ir::Instr *last = pieces[0];
    for (ir::Instr *p : pieces) {
      const auto at = place(p);
      if (at.first != where.first) return false;
      if (at.second > place(last).second) last = p;
    }
    std::optional<std::pair<std::vector<ir::ValueId>, Attrs>> merged;
    OpCode op = OpCode::Concat;
    if (!pads.empty()) {
      merged = tiling(std::vector<const ir::Instr *>(pads.begin(), pads.end()), t.shape);
    } else if (selects.size() == 2) {
      const ir::Instr *s0 = selects[0], *s1 = selects[1];
      op = OpCode::Select;
      if (s0->operands[0] == s1->operands[0])
        for (auto [zero_first, zero_second] : {std::pair{s0, s1}, std::pair{s1, s0}})
          if (is_zero(zero_first->operands[1]) && is_zero(zero_second->operands[2]))
            merged = std::pair{std::vector<ir::ValueId>{s0->operands[0], zero_second->operands[1],
                                                        zero_first->operands[2]},
                               Attrs{}};
    }
    if (!merged || !replace(*last, op, std::move(merged->first), merged->second)) return false;
    f_.values[last->results[0]].name.clear();  // (no longer the value the name was given)
    if (other_sign < 0) return replace(in, OpCode::Sub, {last->results[0], others[0]}, {});
    return replace(in, OpCode::Add, {others[0], last->results[0]}, {});
  }

  /// The leaves of the tree of adds at `v`, if all are pads; every node has type `t`.
  bool collect_pads(ir::ValueId v, const Type &t, std::vector<const ir::Instr *> &pads) {
    if (!(f_.type(v) == t) || !is_pad_tree(v)) return false;
    const ir::Instr *d = def_.at(v);
    if (d->op == OpCode::Pad) {
      pads.push_back(d);
      return true;
    }
    return collect_pads(d->operands[0], t, pads) && collect_pads(d->operands[1], t, pads);
  }

  /// Whether `v` is a pad, or an add of two such trees of v's type. Remembered
  /// per value: a gradient sums many cotangents in one long chain of adds, and
  /// walking that chain again at every add of it would be quadratic.
  bool is_pad_tree(ir::ValueId v) {
    int8_t &known = pad_tree_[static_cast<size_t>(v)];
    if (known != kUnknown) return known == kYes;
    ir::Instr *const *found = def_.find(v);
    bool yes = false;
    if (found) {
      const ir::Instr *d = *found;
      yes =
          d->op == OpCode::Pad || (d->op == OpCode::Add && f_.type(d->operands[0]) == f_.type(v) &&
                                   f_.type(d->operands[1]) == f_.type(v) &&
                                   is_pad_tree(d->operands[0]) && is_pad_tree(d->operands[1]));
    }
    known = yes ? kYes : kNo;
    return yes;
  }

  /// `where(c, 0, a) + where(c, b, 0)` (either order) -> `where(c, b, a)`.
  bool add_of_selects(ir::Instr &in) {
    const ir::Instr *s0 = def(in.operands[0], OpCode::Select);
    const ir::Instr *s1 = def(in.operands[1], OpCode::Select);
    if (!s0 || !s1 || s0->operands[0] != s1->operands[0]) return false;
    for (auto [zero_first, zero_second] : {std::pair{s0, s1}, std::pair{s1, s0}})
      if (is_zero(zero_first->operands[1]) && is_zero(zero_second->operands[2]))
        return replace(in, OpCode::Select,
                       {s0->operands[0], zero_second->operands[1], zero_first->operands[2]}, {});
    return false;
  }

  /// `dynamic_update_slice(u, dynamic_slice(u, i) + y, i)` with
  /// `u = dynamic_update_slice(x, 0, i)` -> `dynamic_update_slice(x, y, i)`.
  bool update_of_zeroed_block(ir::Instr &in) {
    const ir::ValueId u = in.operands[0], i = in.operands[2];
    const ir::Instr *zeroed = def(u, OpCode::DynamicUpdateSlice);
    const ir::Instr *sum = def(in.operands[1], OpCode::Add);
    if (!zeroed || !sum || zeroed->operands[2] != i || !is_zero(zeroed->operands[1]) ||
        zeroed->attrs.layout().dim != in.attrs.layout().dim)
      return false;
    for (size_t k = 0; k < 2; ++k) {
      const ir::Instr *block = def(sum->operands[k], OpCode::DynamicSlice);
      if (block && block->operands[0] == u && block->operands[1] == i &&
          block->attrs.layout().dim == in.attrs.layout().dim &&
          block->attrs.layout().shape == f_.type(zeroed->operands[1]).shape &&
          f_.type(sum->operands[1 - k]).shape == block->attrs.layout().shape)
        return replace(in, OpCode::DynamicUpdateSlice,
                       {zeroed->operands[0], sum->operands[1 - k], i}, zeroed->attrs);
    }
    return false;
  }

  /// `dynamic_update_slice(a, dynamic_slice(a, i) + y, i) + dynamic_update_slice(x, 0, i)`
  /// (either order; the first is `a + dynamic_update_slice(0, y, i)` as
  /// simplify accumulates it in place) -> `a + dynamic_update_slice(x, y, i)`:
  /// in each element one of the two blocks adds a zero. The later of the two
  /// updates (both read only here) becomes the merged one; the rest is dead.
  bool add_of_complementary_blocks(ir::Instr &in) {
    const Type &t = f_.type(in.results[0]);
    for (size_t k = 0; k < 2; ++k) {
      ir::Instr *p = def(in.operands[k], OpCode::DynamicUpdateSlice);
      ir::Instr *q = def(in.operands[1 - k], OpCode::DynamicUpdateSlice);
      if (!p || !q || p == q || uses_[p->results[0]] != 1 || uses_[q->results[0]] != 1 ||
          !(f_.type(p->results[0]) == t) || !(f_.type(q->results[0]) == t))
        continue;
      const ir::ValueId a = p->operands[0], i = q->operands[2];
      const ir::Instr *sum = def(p->operands[1], OpCode::Add);
      if (!sum || p->operands[2] != i || p->attrs.layout().dim != q->attrs.layout().dim ||
          !is_zero(q->operands[1]) || !(f_.type(a) == t))
        continue;
      const auto pp = place(p), pq = place(q);
      if (pp.first != pq.first) continue;
      ir::Instr *later = pp.second > pq.second ? p : q;
      for (size_t j = 0; j < 2; ++j) {
        const ir::Instr *block = def(sum->operands[j], OpCode::DynamicSlice);
        const ir::ValueId y = sum->operands[1 - j];
        if (!block || block->operands[0] != a || block->operands[1] != i ||
            block->attrs.layout().dim != p->attrs.layout().dim ||
            f_.type(y).shape != f_.type(q->operands[1]).shape)
          continue;
        const ir::ValueId x = q->operands[0];
        if (!replace(*later, OpCode::DynamicUpdateSlice, {x, y, i}, q->attrs)) return false;
        f_.values[later->results[0]].name.clear();  // (no longer the value the name was given)
        return replace(in, OpCode::Add, {a, later->results[0]}, {});
      }
    }
    return false;
  }

  bool tight_slice_limits(ir::Instr &in) {
    const Shape &from = f_.type(in.operands[0]).shape, &to = f_.type(in.results[0]).shape;
    Attrs a = in.attrs;
    for (size_t d = 0; d < to.size(); ++d)
      if (to[d] > 0) {  // past the last element selected, by at most one step (no overflow)
        const int64_t last = a.layout().start[d] + (to[d] - 1) * a.layout().stride[d];
        a.layout().limit[d] = last + std::min(a.layout().stride[d], from[d] - last);
      }
    if (a == in.attrs) return false;
    return replace(in, OpCode::Slice, in.operands, std::move(a));
  }

  ir::Function &f_;
  const rt::Mesh &mesh_;
  // Dense per-value tables (ir/value_map.h) and a flat hash table: a
  // derivative's body has 100k+ instructions, and a node-based map's malloc
  // and cache misses per entry cost more than the rewrites.
  ir::ValueMap<ir::Instr *> def_;
  std::vector<int> uses_;
  ir::ValueMap<ir::ValueId> alias_;                // value -> the equal value it reads
  const std::vector<ir::Instr> *block_ = nullptr;  // the block of the instruction rewritten
  /// The instructions seen where the one rewritten is, as a stack (a
  /// block's are dropped at its end), each linked to the previous one with
  /// its key; latest_seen_ maps a key to the latest one.
  struct Seen {
    const ir::Instr *in;
    size_t key;
    int32_t previous;  // index in seen_, or -1
  };
  std::vector<Seen> seen_;
  FlatHashMap<int32_t> latest_seen_;
  /// Where each instruction seen is (its block and index), by its first result.
  ir::ValueMap<Place> place_;
  static constexpr int8_t kUnknown = -1, kNo = 0, kYes = 1;
  std::vector<int8_t> pad_tree_ = std::vector<int8_t>(f_.values.size(), kUnknown);
};

}  // namespace

void rewrite_peepholes(const ir::Module &module, ir::Function &function) {
  Peephole p(module, function);
  p.count_uses();
  p.run(function.body);
  for (ir::ValueId &r : function.returns) r = p.resolve(r);
  eliminate_dead_code(function);
}

}  // namespace spmd
