// transforms/simplify.cpp — see simplify.h.
#include "transforms/simplify.h"

#include <map>
#include <numeric>
#include <unordered_map>

namespace spmd {
namespace {

class Simplifier {
 public:
  explicit Simplifier(ir::Function f) : in_(std::move(f)) {
    remap_.assign(in_.values.size(), ir::kNoValue);
    def_.assign(in_.values.size(), kNotDefined);
  }

  ir::Function run() {
    std::vector<ir::Instr> body = std::move(in_.body);
    ir::Function out = std::move(in_);
    out.body.clear();
    out.body.reserve(body.size());
    for (ir::Instr &orig : body) {
      ir::Instr in = std::move(orig);
      for (auto &o : in.operands) o = resolve(o);
      if (auto v = fold(out, in)) {
        remap_[in.results[0]] = *v;
        continue;
      }
      if (auto c = fold_constant(out, in)) in = std::move(*c);
      canonicalize(out, in);
      if (const ir::Instr *prev = find_equal(out, in)) {
        for (size_t k = 0; k < in.results.size(); ++k) remap_[in.results[k]] = prev->results[k];
        continue;
      }
      for (auto r : in.results) def_[static_cast<size_t>(r)] = out.body.size();
      cse_[key(in)].push_back(out.body.size());
      out.body.push_back(std::move(in));
    }
    for (auto &r : out.returns) r = resolve(r);
    eliminate_dead(out);
    return out;
  }

 private:
  // A replaced value maps to its replacement, which is never replaced itself
  // (it was resolved when it was recorded), so one lookup is enough.
  ir::ValueId resolve(ir::ValueId v) const {
    ir::ValueId r = remap_[static_cast<size_t>(v)];
    return r == ir::kNoValue ? v : r;
  }

  const ir::Instr *def(const ir::Function &out, ir::ValueId v) const {
    size_t i = def_[static_cast<size_t>(v)];
    return i == kNotDefined ? nullptr : &out.body[i];
  }

  /// The scalar value of a constant or full op defining `v`, if any.
  std::optional<double> constant_value(const ir::Function &out, ir::ValueId v) const {
    const ir::Instr *d = def(out, v);
    if (!d || (d->op != OpCode::Constant && d->op != OpCode::Full)) return std::nullopt;
    return d->attrs.value;
  }

  std::optional<ir::ValueId> fold(const ir::Function &out, const ir::Instr &in) const {
    if (in.results.size() != 1) return std::nullopt;
    const Type &rt = out.type(in.results[0]);
    auto same_type = [&](ir::ValueId v) { return out.type(v) == rt; };
    switch (in.op) {
      case OpCode::Reshape:
      case OpCode::BroadcastTo:
        if (same_type(in.operands[0])) return in.operands[0];
        return std::nullopt;
      case OpCode::Transpose: {
        bool identity = true;
        for (size_t d = 0; d < in.attrs.dims.size(); ++d)
          identity &= in.attrs.dims[d] == static_cast<int64_t>(d);
        if (identity) return in.operands[0];
        return std::nullopt;
      }
      case OpCode::Cast:
        if (same_type(in.operands[0])) return in.operands[0];
        return std::nullopt;
      case OpCode::Neg: {
        const ir::Instr *d = def(out, in.operands[0]);
        if (d && d->op == OpCode::Neg) return d->operands[0];
        return std::nullopt;
      }
      case OpCode::Pbroadcast:
        if (in.attrs.axes.empty()) return in.operands[0];
        return std::nullopt;
      case OpCode::Select: {  // where(true, a, b) = a, where(false, a, b) = b
        auto c = constant_value(out, in.operands[0]);
        if (!c || out.type(in.operands[0]).rank() != 0) return std::nullopt;
        ir::ValueId pick = *c != 0 ? in.operands[1] : in.operands[2];
        if (same_type(pick)) return pick;
        return std::nullopt;
      }
      case OpCode::Mul:
        for (int k = 0; k < 2; ++k)
          if (constant_value(out, in.operands[k]) == 1.0 && same_type(in.operands[1 - k]))
            return in.operands[1 - k];
        return std::nullopt;
      case OpCode::Add:
        for (int k = 0; k < 2; ++k)
          if (constant_value(out, in.operands[k]) == 0.0 && same_type(in.operands[1 - k]))
            return in.operands[1 - k];
        return std::nullopt;
      case OpCode::Sub:
        if (constant_value(out, in.operands[1]) == 0.0 && same_type(in.operands[0]))
          return in.operands[0];
        return std::nullopt;
      case OpCode::Div:
      case OpCode::Pow:  // x / 1 = x ** 1 = x
        if (constant_value(out, in.operands[1]) == 1.0 && same_type(in.operands[0]))
          return in.operands[0];
        return std::nullopt;
      default:
        return std::nullopt;
    }
  }

  /// Instructions that compute a constant: replaced by that constant.
  std::optional<ir::Instr> fold_constant(const ir::Function &out, const ir::Instr &in) const {
    if (in.results.size() != 1) return std::nullopt;
    auto uniform_const = [&](ir::ValueId v) -> const ir::Instr * {
      const ir::Instr *d = def(out, v);
      return d && (d->op == OpCode::Constant || d->op == OpCode::Full) ? d : nullptr;
    };
    // pbroadcast of a constant: the constant, typed varying (no op needed).
    if (in.op == OpCode::Pbroadcast) {
      const ir::Instr *d = def(out, in.operands[0]);
      if (d && (d->op == OpCode::Constant || d->op == OpCode::Full)) {
        ir::Instr c = *d;
        c.results = in.results;
        c.span = in.span;
        return c;
      }
    }
    // Reshapes, broadcasts, negations and float casts of a uniform constant.
    if (in.op == OpCode::BroadcastTo || in.op == OpCode::Reshape || in.op == OpCode::Neg ||
        (in.op == OpCode::Cast && rt::is_float(in.attrs.dtype))) {
      const ir::Instr *d = def(out, in.operands[0]);
      if (d && (d->op == OpCode::Constant || d->op == OpCode::Full) &&
          rt::is_float(out.type(in.operands[0]).dtype)) {
        const Type &rt_ = out.type(in.results[0]);
        ir::Instr c = *d;
        c.op = rt_.rank() == 0 ? OpCode::Constant : OpCode::Full;
        c.attrs = Attrs{};
        c.attrs.dtype = rt_.dtype;
        c.attrs.shape = rt_.shape;
        c.attrs.value = in.op == OpCode::Neg ? -d->attrs.value : d->attrs.value;
        c.results = in.results;
        c.span = in.span;
        return c;
      }
    }
    OpKind kind = op_kind(in.op);
    // Comparisons of two scalar constants.
    if (kind == OpKind::Compare) {
      const ir::Instr *a = uniform_const(in.operands[0]);
      const ir::Instr *b = uniform_const(in.operands[1]);
      if (a && b && out.type(in.results[0]).rank() == 0) {
        double x = a->attrs.value, y = b->attrs.value;
        bool r = in.op == OpCode::Lt   ? x < y
                 : in.op == OpCode::Le ? x <= y
                 : in.op == OpCode::Gt ? x > y
                 : in.op == OpCode::Ge ? x >= y
                 : in.op == OpCode::Eq ? x == y
                                       : x != y;
        ir::Instr c;
        c.op = OpCode::Constant;
        c.attrs.dtype = DType::Bool;
        c.attrs.value = r ? 1 : 0;
        c.results = in.results;
        c.span = in.span;
        c.origin = in.origin;
        return c;
      }
    }
    // Arithmetic on two uniform constants of a float dtype.
    if (kind == OpKind::Binary && rt::is_float(out.type(in.results[0]).dtype)) {
      const ir::Instr *a = uniform_const(in.operands[0]);
      const ir::Instr *b = uniform_const(in.operands[1]);
      if (a && b) {
        double x = a->attrs.value, y = b->attrs.value, r;
        switch (in.op) {
          case OpCode::Add:
            r = x + y;
            break;
          case OpCode::Sub:
            r = x - y;
            break;
          case OpCode::Mul:
            r = x * y;
            break;
          case OpCode::Div:
            r = x / y;
            break;
          default:
            return std::nullopt;
        }
        const Type &t = out.type(in.results[0]);
        ir::Instr c = *a;
        c.op = t.rank() == 0 ? OpCode::Constant : OpCode::Full;
        c.attrs = Attrs{};
        c.attrs.dtype = t.dtype;
        c.attrs.shape = t.shape;
        c.attrs.value = r;
        c.results = in.results;
        c.span = in.span;
        return c;
      }
    }
    return std::nullopt;
  }

  void canonicalize(const ir::Function &out, ir::Instr &in) const {
    // Reshapes and broadcasts of a broadcast scalar are one broadcast of the scalar.
    if (in.op == OpCode::Reshape || in.op == OpCode::BroadcastTo) {
      const ir::Instr *d = def(out, in.operands[0]);
      if (d && (d->op == OpCode::Reshape || d->op == OpCode::BroadcastTo) &&
          out.type(d->operands[0]).rank() == 0) {
        Shape target = out.type(in.results[0]).shape;
        in.op = OpCode::BroadcastTo;
        in.operands[0] = d->operands[0];
        in.attrs = Attrs{};
        in.attrs.shape = target;
      }
    }
    bool commutative = in.op == OpCode::Add || in.op == OpCode::Mul || in.op == OpCode::Max ||
                       in.op == OpCode::Min || in.op == OpCode::Eq || in.op == OpCode::Ne ||
                       in.op == OpCode::And || in.op == OpCode::Or;
    if (commutative && constant_value(out, in.operands[0]) && !constant_value(out, in.operands[1]))
      std::swap(in.operands[0], in.operands[1]);
    // reshape(reshape(x)) -> reshape(x)
    if (in.op == OpCode::Reshape) {
      const ir::Instr *d = def(out, in.operands[0]);
      if (d && d->op == OpCode::Reshape) in.operands[0] = d->operands[0];
    }
  }

  /// A hash of the op and operands (equal instructions have equal keys;
  /// find_equal compares the rest).
  static uint64_t key(const ir::Instr &in) {
    uint64_t h = static_cast<uint64_t>(in.op) * 0x9e3779b97f4a7c15ull;
    for (auto o : in.operands) h = (h ^ static_cast<uint64_t>(o)) * 0x100000001b3ull + 0x7f4a7c15;
    return h;
  }

  const ir::Instr *find_equal(const ir::Function &out, const ir::Instr &in) const {
    auto it = cse_.find(key(in));
    if (it == cse_.end()) return nullptr;
    for (size_t idx : it->second) {
      const ir::Instr &prev = out.body[idx];
      if (prev.op != in.op || prev.operands != in.operands || !(prev.attrs == in.attrs) ||
          prev.results.size() != in.results.size())
        continue;
      bool same = true;
      for (size_t k = 0; k < in.results.size(); ++k)
        same &= out.type(prev.results[k]) == out.type(in.results[k]);
      if (same) return &prev;
    }
    return nullptr;
  }

  static void eliminate_dead(ir::Function &f) {
    std::vector<bool> live(f.values.size(), false);
    for (auto r : f.returns) live[r] = true;
    std::vector<bool> keep(f.body.size(), false);
    for (size_t i = f.body.size(); i-- > 0;) {
      const ir::Instr &in = f.body[i];
      bool used = false;
      for (auto r : in.results) used |= live[r];
      if (!used) continue;
      keep[i] = true;
      for (auto o : in.operands) live[o] = true;
    }
    std::vector<ir::Instr> body;
    for (size_t i = 0; i < f.body.size(); ++i)
      if (keep[i]) body.push_back(std::move(f.body[i]));
    f.body = std::move(body);
  }

  static constexpr size_t kNotDefined = ~size_t{0};
  ir::Function in_;
  std::vector<ir::ValueId> remap_;  // by value: its replacement, or kNoValue
  std::vector<size_t> def_;         // by value: its instruction in the output body
  std::unordered_map<uint64_t, std::vector<size_t>> cse_;
};

}  // namespace

ir::Function simplify(const ir::Module &module, ir::Function function) {
  (void)module;
  return Simplifier(std::move(function)).run();
}

}  // namespace spmd
