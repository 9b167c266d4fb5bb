// ops/shape_rules.cpp — result dtype and local shape of every op.
//
// One case per op kind, then per op where the kind is not enough. Errors are
// complete sentences that lowering attaches to the op's span.
#include "ops/shape_rules.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "ops/variance_rules.h"
#include "spmdrt/checked.h"

namespace spmd {
namespace {

std::string shp(const Shape &s) { return rt::shape_str(s); }

bool broadcast(const Shape &a, const Shape &b, Shape &out) {
  size_t n = std::max(a.size(), b.size());
  out.assign(n, 1);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    out[i] = da == 1 ? db : da;
  }
  return true;
}

ShapeRuleResult fail(std::string message) { return {{}, std::move(message)}; }
/// A result whose size cannot be represented (spmdrt/checked.h).
ShapeRuleResult too_large(std::string what) {
  return {{}, what + " is too large: an array may hold at most 2^60 bytes", "shape-too-large"};
}
ShapeRuleResult one(DType d, Shape s) { return {{Type{d, std::move(s), {}}}, {}}; }

bool valid_dim(int64_t d, int64_t rank) { return d >= 0 && d < rank; }

ShapeRuleResult einsum_shapes(std::span<const Type> ops, const Attrs &attrs) {
  EinsumSpec spec;
  std::string error;
  if (!parse_einsum(attrs.einsum().spec, spec, error)) return fail(error);
  if (spec.inputs.size() != ops.size())
    return fail("einsum spec `" + attrs.einsum().spec + "` names " +
                std::to_string(spec.inputs.size()) + " operands but " + std::to_string(ops.size()) +
                " were given");
  std::map<char, int64_t> sizes;
  for (size_t k = 0; k < ops.size(); ++k) {
    const std::string &idx = spec.inputs[k];
    if (static_cast<int64_t>(idx.size()) != ops[k].rank())
      return fail(std::string("the ") + (k == 0 ? "first" : "second") +
                  " einsum operand has rank " + std::to_string(ops[k].rank()) +
                  " but its indices `" + idx + "` have " + std::to_string(idx.size()));
    if (ops[k].dtype != ops[0].dtype) return fail("einsum operands must have the same dtype");
    for (size_t d = 0; d < idx.size(); ++d) {
      auto [it, inserted] = sizes.emplace(idx[d], ops[k].shape[d]);
      if (!inserted && it->second != ops[k].shape[d])
        return fail(std::string("einsum index `") + idx[d] + "` has size " +
                    std::to_string(it->second) + " and " + std::to_string(ops[k].shape[d]));
    }
  }
  Shape out;
  for (char c : spec.output) {
    auto it = sizes.find(c);
    if (it == sizes.end())
      return fail(std::string("einsum output index `") + c + "` appears in no operand");
    out.push_back(it->second);
  }
  if (ops[0].dtype == DType::Bool) return fail("einsum does not take bool operands");
  return one(ops[0].dtype, std::move(out));
}

ShapeRuleResult collective_shapes(OpCode op, const Type &x, const Attrs &attrs,
                                  const rt::Mesh &mesh) {
  int64_t n = axes_size(mesh, attrs.collective().axes);
  Shape s = x.shape;
  auto need_dim = [&](int64_t d) { return valid_dim(d, x.rank()); };
  // Sums and extrema combine values arithmetically, as reductions do.
  if ((op == OpCode::Psum || op == OpCode::PsumScatter || op == OpCode::Pmax ||
       op == OpCode::Pmin) &&
      x.dtype == DType::Bool)
    return fail("cannot combine bool values; cast them first (e.g. to i32)");
  switch (op) {
    case OpCode::Psum:
    case OpCode::Pmax:
    case OpCode::Pmin:
    case OpCode::Pbroadcast:
    case OpCode::Ppermute:
      return one(x.dtype, std::move(s));
    case OpCode::AllGather:
    case OpCode::AllGatherInvariant:
      if (attrs.collective().tiled) {
        if (!need_dim(attrs.collective().dim))
          return fail("gather dimension " + std::to_string(attrs.collective().dim) +
                      " is out of range for " + shp(s));
        auto g = rt::checked_mul(s[attrs.collective().dim], n);
        if (!g) return too_large("the gathered array");
        s[attrs.collective().dim] = *g;
      } else {
        if (attrs.collective().dim < 0 || attrs.collective().dim > x.rank())
          return fail("gather dimension " + std::to_string(attrs.collective().dim) +
                      " is out of range");
        s.insert(s.begin() + attrs.collective().dim, n);
      }
      return one(x.dtype, std::move(s));
    case OpCode::PsumScatter:
    case OpCode::Pscatter:
      if (!need_dim(attrs.collective().dim))
        return fail("scatter dimension " + std::to_string(attrs.collective().dim) +
                    " is out of range for " + shp(s));
      if (attrs.collective().tiled) {
        if (s[attrs.collective().dim] % n != 0)
          return fail("scatter dimension " + std::to_string(attrs.collective().dim) + " has size " +
                      std::to_string(s[attrs.collective().dim]) + ", not divisible by the " +
                      std::to_string(n) + " devices along the axes");
        s[attrs.collective().dim] /= n;
      } else {
        if (s[attrs.collective().dim] != n)
          return fail("untiled scatter needs dimension " + std::to_string(attrs.collective().dim) +
                      " to equal the number of devices (" + std::to_string(n) + ")");
        s.erase(s.begin() + attrs.collective().dim);
      }
      return one(x.dtype, std::move(s));
    case OpCode::AllToAll:
      if (!need_dim(attrs.collective().dim) || !need_dim(attrs.collective().concat_dim))
        return fail("all_to_all split/concat dimension out of range for " + shp(s));
      if (s[attrs.collective().dim] % n != 0)
        return fail("all_to_all split dimension " + std::to_string(attrs.collective().dim) +
                    " has size " + std::to_string(s[attrs.collective().dim]) +
                    ", not divisible by the " + std::to_string(n) + " devices along the axes");
      s[attrs.collective().dim] /= n;
      if (auto c = rt::checked_mul(s[attrs.collective().concat_dim], n)) {
        s[attrs.collective().concat_dim] = *c;
      } else {
        return too_large("the result of all_to_all");
      }
      return one(x.dtype, std::move(s));
    default:
      return fail("internal: not a collective");
  }
}

/// A key where a number is needed: a random key is no number (spmdrt/random.h).
ShapeRuleResult key_as_number(OpCode op) {
  return {{},
          "a random key is not a number: `" + std::string(op_display_name(op)) +
              "` cannot take it; draw numbers from it with uniform(key, shape), "
              "normal(key, shape) or random_bits(key, shape)",
          "key-as-number"};
}

/// True when `op` computes with its operands' values (so a key cannot be one):
/// arithmetic, comparisons, where, reductions, contractions, casts, creation
/// of key values, and the collectives that combine values.
bool computes_with_values(OpCode op) {
  switch (op_kind(op)) {
    case OpKind::Unary:
      return op != OpCode::StopGradient;
    case OpKind::Binary:
    case OpKind::Compare:
    case OpKind::Logical:
    case OpKind::Select:
    case OpKind::Reduce:
    case OpKind::Contraction:
      return true;
    case OpKind::Collective:
      return op == OpCode::Psum || op == OpCode::Pmax || op == OpCode::Pmin ||
             op == OpCode::PsumScatter;
    default:
      return false;
  }
}

ShapeRuleResult random_shapes(OpCode op, std::span<const Type> ops, const Attrs &attrs) {
  const std::string name(op_spelling(op));
  switch (op) {
    case OpCode::RandomKey:
      if (ops[0].dtype != DType::I32)
        return fail(std::string("key(seed) needs an i32 seed, got ") + dtype_name(ops[0].dtype));
      return one(DType::Key, ops[0].shape);
    case OpCode::RandomFoldIn:
      if (ops[0].dtype != DType::Key || ops[0].rank() != 0)
        return fail("fold_in needs one key (a key[] scalar) as its first operand, got " +
                    shape_type_str(ops[0].dtype, ops[0].shape));
      if (ops[1].dtype != DType::I32 || ops[1].rank() != 0)
        return fail("fold_in folds in an i32 scalar, got " +
                    shape_type_str(ops[1].dtype, ops[1].shape));
      return one(DType::Key, {});
    case OpCode::KeyData: {
      if (ops[0].dtype != DType::Key)
        return fail(std::string("key_data needs keys, got ") + dtype_name(ops[0].dtype));
      Shape s = ops[0].shape;
      s.push_back(2);
      return one(DType::I32, std::move(s));
    }
    default:
      break;
  }
  // The draws: (key, params..., offsets...).
  const RandomAttrs &r = attrs.random();
  if (ops[0].dtype != DType::Key || ops[0].rank() != 0)
    return fail(name + " draws from one key (a key[] scalar), got " +
                shape_type_str(ops[0].dtype, ops[0].shape) +
                (ops[0].dtype == DType::Key ? "; index the keys of a split: keys[0]" : ""));
  for (int64_t d : r.shape)
    if (d < 0) return fail("negative dimension in shape " + shp(r.shape));
  const size_t params = random_param_count(op);
  if (ops.size() < params) return fail(name + " needs " + std::to_string(params) + " operands");
  DType want = DType::F32;
  switch (op) {
    case OpCode::RandomSplit:
      want = DType::Key;
      break;
    case OpCode::RandomBits:
    case OpCode::RandomInt:
      want = DType::I32;
      break;
    case OpCode::RandomUniform:
      want = r.dtype == DType::F64 ? DType::F64 : DType::F32;
      break;
    default:
      break;
  }
  if (r.dtype != want)
    return fail(name + " draws " + dtype_name(want) + " values" +
                (op == OpCode::RandomUniform ? " (or f64)" : "") + ", not " + dtype_name(r.dtype));
  for (size_t k = 1; k < params; ++k)
    if (ops[k].dtype != want || ops[k].rank() != 0)
      return fail(std::string("the ") + (k == 1 ? "lower" : "upper") + " bound of " + name +
                  " must be a " + dtype_name(want) + " scalar, got " +
                  shape_type_str(ops[k].dtype, ops[k].shape));
  const size_t offsets = ops.size() - params;
  if (r.global.empty()) {
    if (offsets != 0) return fail(name + " has block offsets but no global shape");
  } else {
    if (r.global.size() != r.shape.size() || offsets != r.shape.size())
      return fail(name + " needs one offset per dimension of its global shape " + shp(r.global));
    for (size_t d = 0; d < r.shape.size(); ++d) {
      if (r.shape[d] > r.global[d])
        return fail("the block " + shp(r.shape) + " of " + name + " exceeds its global shape " +
                    shp(r.global));
      if (ops[params + d].dtype != DType::I32 || ops[params + d].rank() != 0)
        return fail("the block offsets of " + name + " must be i32 scalars");
    }
  }
  return one(r.dtype, r.shape);
}

}  // namespace

int64_t axes_size(const rt::Mesh &mesh, const std::vector<int> &axes) {
  int64_t n = 1;
  for (int a : axes) n *= mesh.axis_size(a);
  return n;
}

bool parse_einsum(std::string_view spec, EinsumSpec &out, std::string &error) {
  out = {};
  auto arrow = spec.find("->");
  if (arrow == std::string_view::npos) {
    error = "einsum spec `" + std::string(spec) + "` needs an explicit output (`->`)";
    return false;
  }
  std::string lhs(spec.substr(0, arrow)), rhs(spec.substr(arrow + 2));
  std::string cur;
  for (char c : lhs) {
    if (c == ' ') continue;
    if (c == ',') {
      out.inputs.push_back(cur);
      cur.clear();
    } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      cur += c;
    } else {
      error = std::string("einsum spec has an invalid character `") + c + "`";
      return false;
    }
  }
  out.inputs.push_back(cur);
  for (char c : rhs) {
    if (c == ' ') continue;
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) {
      error = std::string("einsum spec has an invalid character `") + c + "`";
      return false;
    }
    out.output += c;
  }
  for (const auto &s : out.inputs) {
    std::set<char> seen(s.begin(), s.end());
    if (seen.size() != s.size()) {
      error = "einsum operand indices `" + s + "` repeat an index (diagonals are not supported)";
      return false;
    }
  }
  std::set<char> seen(out.output.begin(), out.output.end());
  if (seen.size() != out.output.size()) {
    error = "einsum output `" + out.output + "` repeats an index";
    return false;
  }
  if (out.inputs.size() > 2) {
    error = "einsum takes one or two operands";
    return false;
  }
  return true;
}

std::string einsum_to_string(const EinsumSpec &spec) {
  std::string s;
  for (size_t i = 0; i < spec.inputs.size(); ++i) s += (i ? "," : "") + spec.inputs[i];
  return s + "->" + spec.output;
}

namespace {

/// infer_shapes without the final size check.
ShapeRuleResult infer_shapes_of(OpCode op, std::span<const Type> ops, const Attrs &attrs,
                                const rt::Mesh &mesh) {
  const OpInfo &info = op_info(op);
  if (computes_with_values(op))
    for (const Type &t : ops)
      if (t.dtype == DType::Key) return key_as_number(op);
  if ((op == OpCode::Cast && attrs.cast().dtype == DType::Key) ||
      (info.kind == OpKind::Creation && attrs.creation().dtype == DType::Key))
    return fail("keys are not made from numbers: use key(seed) with an i32 seed");
  switch (info.kind) {
    case OpKind::Random:
      return random_shapes(op, ops, attrs);
    case OpKind::Creation:
      if (op == OpCode::Constant) return one(attrs.creation().dtype, {});
      for (int64_t d : attrs.creation().shape)
        if (d < 0) return fail("negative dimension in shape " + shp(attrs.creation().shape));
      if (op == OpCode::Iota &&
          !valid_dim(attrs.creation().dim, static_cast<int64_t>(attrs.creation().shape.size())))
        return fail("iota dimension " + std::to_string(attrs.creation().dim) +
                    " is out of range for " + shp(attrs.creation().shape));
      if (op == OpCode::Iota && attrs.creation().dtype == DType::Bool)
        return fail("iota cannot be bool");
      if (op == OpCode::Iota && attrs.creation().dtype == DType::I32 &&
          attrs.creation().shape[static_cast<size_t>(attrs.creation().dim)] > int64_t{1} << 31)
        return fail(
            "an i32 iota counts at most to 2^31 - 1, but dimension " +
            std::to_string(attrs.creation().dim) + " has size " +
            std::to_string(attrs.creation().shape[static_cast<size_t>(attrs.creation().dim)]) +
            "; use an f32 or f64 iota");
      return one(attrs.creation().dtype, attrs.creation().shape);
    case OpKind::Unary: {
      const Type &x = ops[0];
      if (op == OpCode::Cast) return one(attrs.cast().dtype, x.shape);
      if (op == OpCode::StopGradient) return one(x.dtype, x.shape);
      if (op == OpCode::Not) {
        if (x.dtype != DType::Bool) return fail("logical_not needs a bool operand");
        return one(DType::Bool, x.shape);
      }
      bool int_ok = op_accepts_int(op);  // spmdrt/unary_math.def
      if (x.dtype == DType::Bool || (!int_ok && !rt::is_float(x.dtype)))
        return fail(std::string("`") + std::string(info.spelling) + "` needs a floating-point " +
                    "operand, got " + dtype_name(x.dtype));
      return one(x.dtype, x.shape);
    }
    case OpKind::Binary:
    case OpKind::Compare:
    case OpKind::Logical: {
      const Type &a = ops[0], &b = ops[1];
      if (a.dtype != b.dtype)
        return fail(std::string("operands have different dtypes ") + dtype_name(a.dtype) + " and " +
                    dtype_name(b.dtype) + "; use cast(x, dtype)");
      Shape s;
      if (!broadcast(a.shape, b.shape, s))
        return fail("shapes " + shp(a.shape) + " and " + shp(b.shape) + " do not broadcast");
      if (info.kind == OpKind::Logical) {
        if (a.dtype != DType::Bool) return fail("logical operators need bool operands");
        return one(DType::Bool, std::move(s));
      }
      if (a.dtype == DType::Bool && info.kind == OpKind::Binary)
        return fail("arithmetic on bool values; cast them first");
      return one(info.kind == OpKind::Compare ? DType::Bool : a.dtype, std::move(s));
    }
    case OpKind::Select: {
      if (ops[0].dtype != DType::Bool) return fail("the condition of `where` must be bool");
      if (ops[1].dtype != ops[2].dtype)
        return fail(std::string("the branches of `where` have different dtypes ") +
                    dtype_name(ops[1].dtype) + " and " + dtype_name(ops[2].dtype));
      Shape s1, s2;
      if (!broadcast(ops[1].shape, ops[2].shape, s1) || !broadcast(ops[0].shape, s1, s2))
        return fail("the operands of `where` do not broadcast together");
      return one(ops[1].dtype, std::move(s2));
    }
    case OpKind::Reduce: {
      const Type &x = ops[0];
      Shape s;
      for (size_t i = 1; i < attrs.reduce().dims.size(); ++i)
        if (attrs.reduce().dims[i] <= attrs.reduce().dims[i - 1])
          return fail("reduction axes must be distinct");
      for (int64_t d : attrs.reduce().dims)
        if (!valid_dim(d, x.rank()))
          return fail("reduction axis " + std::to_string(d) + " is out of range for " +
                      shp(x.shape));
      for (int64_t d = 0; d < x.rank(); ++d)
        if (std::find(attrs.reduce().dims.begin(), attrs.reduce().dims.end(), d) ==
            attrs.reduce().dims.end())
          s.push_back(x.shape[d]);
      if (x.dtype == DType::Bool) return fail("cannot reduce bool values; cast them first");
      if (op != OpCode::ReduceSum)
        for (int64_t d : attrs.reduce().dims)
          if (x.shape[d] == 0)
            return fail(std::string(op_spelling(op)) + " over an empty dimension");
      if (op == OpCode::ArgMax || op == OpCode::ArgMin) return one(DType::I32, std::move(s));
      return one(x.dtype, std::move(s));
    }
    case OpKind::Contraction:
      return einsum_shapes(ops, attrs);
    case OpKind::Layout:
      break;
    case OpKind::Collective:
      if (op == OpCode::AxisIndex) return one(DType::I32, {});
      if (is_combinable_collective(op)) {
        // psum((a, b, ...), axes), all_gather((a, b, ...), axes, ...), ...: one
        // result per operand, as the op gives it for that operand alone.
        if (ops.empty()) return fail("a combined collective needs at least one operand");
        ShapeRuleResult r;
        for (size_t k = 0; k < ops.size(); ++k) {
          ShapeRuleResult one_result = collective_shapes(op, ops[k], attrs, mesh);
          if (!one_result.ok())
            return ops.size() == 1
                       ? one_result
                       : ShapeRuleResult{{},
                                         "component " + std::to_string(k) + ": " + one_result.error,
                                         one_result.code};
          r.results.push_back(std::move(one_result.results.at(0)));
        }
        return r;
      }
      return collective_shapes(op, ops[0], attrs, mesh);
    case OpKind::Call:
      return fail("internal: call types come from the callee");
    case OpKind::Control:
      return fail("internal: loop types come from their carried values");
    case OpKind::Effect:
      return {};  // print: no results; any operands (the format's holes are checked by lowering)
  }
  // Layout ops.
  const Type &x = ops[0];
  switch (op) {
    case OpCode::Reshape:
      if (!rt::shape_fits(attrs.layout().shape, static_cast<int64_t>(rt::dtype_size(x.dtype))))
        return too_large(shape_type_str(x.dtype, attrs.layout().shape));
      if (rt::num_elements(attrs.layout().shape) != x.numel())
        return fail("cannot reshape " + shp(x.shape) + " (" + std::to_string(x.numel()) +
                    " elements) to " + shp(attrs.layout().shape));
      return one(x.dtype, attrs.layout().shape);
    case OpCode::Transpose: {
      if (static_cast<int64_t>(attrs.layout().dims.size()) != x.rank())
        return fail("transpose permutation has " + std::to_string(attrs.layout().dims.size()) +
                    " entries but the operand has rank " + std::to_string(x.rank()));
      std::vector<bool> seen(attrs.layout().dims.size(), false);
      Shape s;
      for (int64_t d : attrs.layout().dims) {
        if (!valid_dim(d, x.rank()) || seen[d]) return fail("transpose needs a permutation");
        seen[d] = true;
        s.push_back(x.shape[d]);
      }
      return one(x.dtype, std::move(s));
    }
    case OpCode::Reverse: {
      for (size_t i = 0; i < attrs.layout().dims.size(); ++i) {
        if (!valid_dim(attrs.layout().dims[i], x.rank()))
          return fail("flip dimension " + std::to_string(attrs.layout().dims[i]) +
                      " is out of range for " + shp(x.shape));
        if (i > 0 && attrs.layout().dims[i] <= attrs.layout().dims[i - 1])
          return fail("flip dimensions must be distinct and sorted");
      }
      return one(x.dtype, x.shape);
    }
    case OpCode::BroadcastTo: {
      Shape s;
      if (x.rank() > static_cast<int64_t>(attrs.layout().shape.size()) ||
          !broadcast(x.shape, attrs.layout().shape, s) || s != attrs.layout().shape)
        return fail("cannot broadcast " + shp(x.shape) + " to " + shp(attrs.layout().shape));
      return one(x.dtype, attrs.layout().shape);
    }
    case OpCode::Slice: {
      if (attrs.layout().start.size() != x.shape.size() ||
          attrs.layout().limit.size() != x.shape.size() ||
          attrs.layout().stride.size() != x.shape.size())
        return fail("slice needs one start/limit/stride per dimension");
      Shape s;
      for (size_t d = 0; d < x.shape.size(); ++d) {
        int64_t b = attrs.layout().start[d], e = attrs.layout().limit[d],
                st = attrs.layout().stride[d];
        if (st <= 0) return fail("slice steps must be positive");
        if (b < 0 || e > x.shape[d] || b > e)
          return fail("slice " + std::to_string(b) + ":" + std::to_string(e) +
                      " is out of bounds for dimension " + std::to_string(d) + " of size " +
                      std::to_string(x.shape[d]));
        s.push_back(rt::range_length(b, e, st));
      }
      return one(x.dtype, std::move(s));
    }
    case OpCode::Pad: {
      if (attrs.layout().shape.size() != x.shape.size() ||
          attrs.layout().start.size() != x.shape.size() ||
          attrs.layout().stride.size() != x.shape.size())
        return fail("pad needs a target shape, start and stride per dimension");
      for (size_t d = 0; d < x.shape.size(); ++d) {
        if (attrs.layout().stride[d] <= 0) return fail("pad strides must be positive");
        if (attrs.layout().start[d] < 0) return fail("pad starts must not be negative");
        if (x.shape[d] == 0) continue;
        auto span = rt::checked_mul(x.shape[d] - 1, attrs.layout().stride[d]);
        auto last = span ? rt::checked_add(attrs.layout().start[d], *span) : std::nullopt;
        if (!last || *last >= attrs.layout().shape[d])
          return fail("pad places elements outside the target shape");
      }
      return one(x.dtype, attrs.layout().shape);
    }
    case OpCode::Concat: {
      if (!valid_dim(attrs.layout().dim, x.rank()))
        return fail("concat axis " + std::to_string(attrs.layout().dim) + " is out of range");
      Shape s = x.shape;
      for (size_t k = 1; k < ops.size(); ++k) {
        if (ops[k].dtype != x.dtype) return fail("concat operands have different dtypes");
        if (ops[k].rank() != x.rank()) return fail("concat operands have different ranks");
        for (int64_t d = 0; d < x.rank(); ++d)
          if (d != attrs.layout().dim && ops[k].shape[d] != x.shape[d])
            return fail("concat operands " + shp(x.shape) + " and " + shp(ops[k].shape) +
                        " differ outside the concatenation axis");
        auto sum = rt::checked_add(s[attrs.layout().dim], ops[k].shape[attrs.layout().dim]);
        if (!sum) return too_large("the concatenation");
        s[attrs.layout().dim] = *sum;
      }
      return one(x.dtype, std::move(s));
    }
    case OpCode::DynamicSlice: {
      if (ops[1].dtype != DType::I32 || ops[1].rank() != 0)
        return fail("dynamic_slice needs an i32 scalar index");
      if (!valid_dim(attrs.layout().dim, x.rank()) || attrs.layout().shape.size() != x.shape.size())
        return fail("dynamic_slice dimension out of range");
      return one(x.dtype, attrs.layout().shape);
    }
    case OpCode::Constrain:
      if (attrs.constrain().sharding.size() > x.shape.size())
        return fail("the partition spec of `constrain` is longer than the value's rank");
      return one(x.dtype, x.shape);
    case OpCode::Take:
    case OpCode::ScatterAdd: {
      // take(x, ids): x.shape[:axis] + ids.shape + x.shape[axis+1:];
      // scatter_add(x, updates, ids): x's shape, updates shaped as take's result.
      const Type &ids = op == OpCode::Take ? ops[1] : ops[2];
      const int64_t axis = attrs.gather().axis;
      if (ids.dtype != DType::I32)
        return fail("the ids must be i32, not " + std::string(dtype_name(ids.dtype)));
      if (!valid_dim(axis, x.rank()))
        return fail("axis " + std::to_string(axis) + " is out of range for " + shp(x.shape));
      Shape gathered(x.shape.begin(), x.shape.begin() + axis);
      gathered.insert(gathered.end(), ids.shape.begin(), ids.shape.end());
      gathered.insert(gathered.end(), x.shape.begin() + axis + 1, x.shape.end());
      if (op == OpCode::Take) return one(x.dtype, std::move(gathered));
      if (x.dtype == DType::Bool || x.dtype == DType::Key)
        return fail("cannot add " + std::string(dtype_name(x.dtype)) + " values");
      if (ops[1].dtype != x.dtype)
        return fail("the updates are " + std::string(dtype_name(ops[1].dtype)) + ", the array " +
                    std::string(dtype_name(x.dtype)));
      if (ops[1].shape != gathered)
        return fail("the updates must have the shape take would give, " + shp(gathered) + ", not " +
                    shp(ops[1].shape));
      return one(x.dtype, x.shape);
    }
    case OpCode::DynamicUpdateSlice: {
      if (ops[2].dtype != DType::I32 || ops[2].rank() != 0)
        return fail("dynamic_update_slice needs an i32 scalar index");
      if (ops[1].dtype != x.dtype || ops[1].rank() != x.rank())
        return fail("dynamic_update_slice update does not match the operand");
      return one(x.dtype, x.shape);
    }
    default:
      return fail("internal: unhandled layout op");
  }
}

}  // namespace

ShapeRuleResult infer_shapes(OpCode op, std::span<const Type> ops, const Attrs &attrs,
                             const rt::Mesh &mesh) {
  ShapeRuleResult r = infer_shapes_of(op, ops, attrs, mesh);
  for (const Type &t : r.results)
    if (!rt::shape_fits(t.shape, static_cast<int64_t>(rt::dtype_size(t.dtype))))
      return too_large(shape_type_str(t.dtype, t.shape));
  return r;
}

bool same_but_leading_ones(const Shape &a, const Shape &b) {
  auto strip = [](const Shape &s) {
    auto it = std::find_if(s.begin(), s.end(), [](int64_t n) { return n != 1; });
    return Shape(it, s.end());
  };
  return strip(a) == strip(b);
}

}  // namespace spmd
