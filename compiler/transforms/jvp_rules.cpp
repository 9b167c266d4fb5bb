// transforms/jvp_rules.cpp — tangent rules, one case per op (an exhaustive switch).
//
// Notation in the comments: x, y operands, r the primal result, dx, dy tangents.
// A tangent has its primal's type, so every rule is typed like the primal op.
#include "transforms/jvp_rules.h"

namespace spmd {
namespace {

class Rules {
 public:
  Rules(Emitter &e, const JvpRuleInput &in)
      : e_(e), in_(in), x_(in.instr.operands), r_(in.instr.results[0]) {}

  std::optional<ir::ValueId> run();

 private:
  bool has(size_t k) const { return in_.tangents[k].has_value(); }
  ir::ValueId t(size_t k) const { return *in_.tangents[k]; }
  /// Tangent of operand k, or zeros of its type.
  ir::ValueId t_or_zero(size_t k) { return has(k) ? t(k) : e_.zeros(e_.type(x_[k])); }
  /// Broadcasts a tangent term up to the result's shape.
  ir::ValueId to_result_shape(ir::ValueId v) { return e_.broadcast_to(v, e_.type(r_).shape); }
  ir::ValueId same_op_on_tangents() {
    ir::ValueList ops;
    for (size_t k = 0; k < x_.size(); ++k) ops.push_back(t_or_zero(k));
    return e_.op(in_.instr.op, ops, in_.instr.attrs, span());
  }
  SourceSpan span() const { return in_.instr.span; }
  ir::ValueId c(double v) { return e_.scalar_like(r_, v, span()); }

  Emitter &e_;
  const JvpRuleInput &in_;
  const ir::ValueList &x_;
  ir::ValueId r_;
};

std::optional<ir::ValueId> Rules::run() {
  const ir::Instr &instr = in_.instr;
  const Attrs &a = instr.attrs;
  if (!rt::is_float(e_.type(r_).dtype) && instr.op != OpCode::Call) return std::nullopt;
  switch (instr.op) {
    case OpCode::Constant:
    case OpCode::Full:
    case OpCode::Iota:
    case OpCode::Sign:      // piecewise constant
    case OpCode::FloorDiv:  // piecewise constant
      return std::nullopt;
    case OpCode::Neg:  // d(-x) = -dx
      return e_.neg(t(0), span());
    case OpCode::Exp:  // d exp(x) = r dx
      return e_.mul(r_, t(0), span());
    case OpCode::Log:  // d log(x) = dx / x
      return e_.div(t(0), x_[0], span());
    case OpCode::Sin:  // d sin(x) = cos(x) dx
      return e_.mul(e_.op(OpCode::Cos, {x_[0]}, {}, span()), t(0), span());
    case OpCode::Cos:  // d cos(x) = -sin(x) dx
      return e_.neg(e_.mul(e_.op(OpCode::Sin, {x_[0]}, {}, span()), t(0), span()), span());
    case OpCode::Tanh:  // d tanh(x) = (1 - r^2) dx
      return e_.mul(e_.sub(c(1), e_.mul(r_, r_, span()), span()), t(0), span());
    case OpCode::Sqrt:  // d sqrt(x) = dx / (2 r)
      return e_.div(t(0), e_.mul(c(2), r_, span()), span());
    case OpCode::Rsqrt:  // d x^(-1/2) = -1/2 r / x dx
      return e_.mul(e_.mul(c(-0.5), e_.div(r_, x_[0], span()), span()), t(0), span());
    case OpCode::Abs:  // d |x| = sign(x) dx
      return e_.mul(e_.op(OpCode::Sign, {x_[0]}, {}, span()), t(0), span());
    case OpCode::Logistic:  // d s(x) = r (1 - r) dx
      return e_.mul(e_.mul(r_, e_.sub(c(1), r_, span()), span()), t(0), span());
    case OpCode::Erf: {  // d erf(x) = 2/sqrt(pi) exp(-x^2) dx
      ir::ValueId x2 = e_.mul(x_[0], x_[0], span());
      ir::ValueId g = e_.op(OpCode::Exp, {e_.neg(x2, span())}, {}, span());
      return e_.mul(e_.mul(c(1.1283791670955126), g, span()), t(0), span());
    }
    case OpCode::Log1p:  // d log(1 + x) = dx / (1 + x)
      return e_.div(t(0), e_.add(c(1), x_[0], span()), span());
    case OpCode::Expm1:  // d (exp(x) - 1) = exp(x) dx = (r + 1) dx
      return e_.mul(e_.add(r_, c(1), span()), t(0), span());
    case OpCode::Cbrt:  // d x^(1/3) = dx / (3 r^2)
      return e_.div(t(0), e_.mul(c(3), e_.mul(r_, r_, span()), span()), span());
    case OpCode::StopGradient:  // no derivative flows through it
      return std::nullopt;
    case OpCode::RandomKey:  // random numbers have no derivative (as stop_gradient): d = 0
    case OpCode::RandomFoldIn:
    case OpCode::KeyData:
    case OpCode::RandomSplit:
    case OpCode::RandomBits:
    case OpCode::RandomUniform:
    case OpCode::RandomNormal:
    case OpCode::RandomInt:
      return std::nullopt;
    case OpCode::Cast:  // casts between float types are linear
      if (!rt::is_float(e_.type(x_[0]).dtype)) return std::nullopt;
      return e_.cast(t(0), a.cast().dtype, span());
    case OpCode::Not:
    case OpCode::Lt:
    case OpCode::Le:
    case OpCode::Gt:
    case OpCode::Ge:
    case OpCode::Eq:
    case OpCode::Ne:
    case OpCode::And:
    case OpCode::Or:
      return std::nullopt;
    case OpCode::Add:  // d(x + y) = dx + dy
      if (has(0) && has(1)) return e_.add(t(0), t(1), span());
      return to_result_shape(has(0) ? t(0) : t(1));
    case OpCode::Sub:  // d(x - y) = dx - dy
      if (has(0) && has(1)) return e_.sub(t(0), t(1), span());
      return to_result_shape(has(0) ? t(0) : e_.neg(t(1), span()));
    case OpCode::Mul: {  // d(x y) = dx y + x dy
      std::optional<ir::ValueId> d;
      if (has(0)) d = e_.mul(t(0), x_[1], span());
      if (has(1)) {
        ir::ValueId term = e_.mul(x_[0], t(1), span());
        d = d ? e_.add(*d, term, span()) : term;
      }
      return d;
    }
    case OpCode::Div: {  // d(x / y) = (dx - r dy) / y
      ir::ValueId num;
      if (has(0) && has(1))
        num = e_.sub(t(0), e_.mul(r_, t(1), span()), span());
      else if (has(0))
        num = t(0);
      else
        num = e_.neg(e_.mul(r_, t(1), span()), span());
      return to_result_shape(e_.div(num, x_[1], span()));
    }
    case OpCode::Rem: {  // d(x % y) = dx - (x // y) dy
      std::optional<ir::ValueId> d;
      if (has(0)) d = to_result_shape(t(0));
      if (has(1)) {
        ir::ValueId q = e_.op(OpCode::FloorDiv, {x_[0], x_[1]}, {}, span());
        ir::ValueId term = e_.mul(q, t(1), span());
        d = d ? e_.sub(*d, term, span()) : e_.neg(term, span());
      }
      return d;
    }
    case OpCode::Pow: {  // d(x^y) = y x^(y-1) dx + log(x) r dy
      std::optional<ir::ValueId> d;
      if (has(0)) {
        ir::ValueId ym1 = e_.sub(x_[1], e_.scalar_like(x_[1], 1, span()), span());
        ir::ValueId coeff = e_.mul(x_[1], e_.op(OpCode::Pow, {x_[0], ym1}, {}, span()), span());
        d = e_.mul(coeff, t(0), span());
      }
      if (has(1)) {
        ir::ValueId term =
            e_.mul(e_.mul(e_.op(OpCode::Log, {x_[0]}, {}, span()), r_, span()), t(1), span());
        d = d ? e_.add(*d, term, span()) : term;
      }
      return to_result_shape(*d);
    }
    case OpCode::Max:    // d max(x, y) = dx where x > y, else dy
    case OpCode::Min: {  // d min(x, y) = dx where x < y, else dy
      OpCode cmp = instr.op == OpCode::Max ? OpCode::Gt : OpCode::Lt;
      ir::ValueId pick = e_.op(cmp, {x_[0], x_[1]}, {}, span());
      return e_.op(OpCode::Select, {pick, t_or_zero(0), t_or_zero(1)}, {}, span());
    }
    case OpCode::Select:  // d where(c, x, y) = where(c, dx, dy)
      if (!has(1) && !has(2)) return std::nullopt;
      return e_.op(OpCode::Select, {x_[0], t_or_zero(1), t_or_zero(2)}, {}, span());
    case OpCode::ReduceSum:  // linear
      return e_.op(instr.op, {t(0)}, a, span());
    case OpCode::ArgMax:  // integer results have no tangent
    case OpCode::ArgMin:
      return std::nullopt;
    case OpCode::ReduceMax:
    case OpCode::ReduceMin: {
      // The tangent flows from the elements equal to the extreme, averaged over ties:
      // dr = sum(m dx) / sum(m), m = (x == r broadcast back).
      const Type xt = e_.type(x_[0]);
      ir::ValueId back = e_.expand_reduced(r_, xt.shape, a.reduce().dims, span());
      ir::ValueId mask = e_.cast(e_.op(OpCode::Eq, {x_[0], back}, {}, span()), xt.dtype, span());
      ir::ValueId num = e_.reduce_sum(e_.mul(mask, t(0), span()), a.reduce().dims, span());
      ir::ValueId den = e_.reduce_sum(mask, a.reduce().dims, span());
      return e_.div(num, den, span());
    }
    case OpCode::Einsum: {  // bilinear: d(x . y) = dx . y + x . dy
      if (x_.size() == 1) return e_.op(OpCode::Einsum, {t(0)}, a, span());
      std::optional<ir::ValueId> d;
      if (has(0)) d = e_.op(OpCode::Einsum, {t(0), x_[1]}, a, span());
      if (has(1)) {
        ir::ValueId term = e_.op(OpCode::Einsum, {x_[0], t(1)}, a, span());
        d = d ? e_.add(*d, term, span()) : term;
      }
      return d;
    }
    // Linear layout ops and collectives: the same op on the tangents.
    case OpCode::Reshape:
    case OpCode::Constrain:
    case OpCode::Transpose:
    case OpCode::Reverse:
    case OpCode::BroadcastTo:
    case OpCode::Slice:
    case OpCode::Pad:
    case OpCode::Concat:
    case OpCode::Psum:
    case OpCode::Pbroadcast:
    case OpCode::AllGather:
    case OpCode::AllGatherInvariant:
    case OpCode::PsumScatter:
    case OpCode::Pscatter:
    case OpCode::AllToAll:
    case OpCode::Ppermute:
      return same_op_on_tangents();
    case OpCode::DynamicSlice:  // linear in x; the index is data, not differentiated
      return e_.op(instr.op, {t(0), x_[1]}, a, span());
    case OpCode::DynamicUpdateSlice:
      return e_.op(instr.op, {t_or_zero(0), t_or_zero(1), x_[2]}, a, span());
    case OpCode::Take:  // d take(x, ids) = take(dx, ids); the ids are data
      return e_.op(instr.op, {t(0), x_[1]}, a, span());
    case OpCode::ScatterAdd:  // d scatter_add(x, u, ids) = scatter_add(dx, du, ids)
      return e_.op(instr.op, {t_or_zero(0), t_or_zero(1), x_[2]}, a, span());
    case OpCode::Pmax:
    case OpCode::Pmin:
      throw TransformError(
          "not-differentiable", span(),
          "`" + std::string(op_spelling(instr.op)) +
              "` is not differentiable in spmdc (the derivative would have to pick the devices "
              "holding the extreme value); rewrite with psum, or keep it out of the path to the "
              "differentiated inputs");
    case OpCode::AxisIndex:
      return std::nullopt;
    case OpCode::DebugPrint:  // no results: it prints the primal values (JAX's jvp of debug.print)
      return std::nullopt;
    case OpCode::Call:
    case OpCode::For:
      throw std::logic_error("jvp: calls are inlined first; loops are handled by jvp.cpp");
  }
  return std::nullopt;
}

}  // namespace

std::optional<ir::ValueId> apply_jvp_rule(Emitter &e, const JvpRuleInput &in) {
  if (in.instr.results.empty()) return std::nullopt;  // print: nothing to differentiate
  return Rules(e, in).run();
}

}  // namespace spmd
