// ir/printer.cpp — IR to .spmd source and raw dumps (see printer.h).
#include "ir/printer.h"

#include <charconv>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "ir/parallel_copy.h"
#include "ops/shape_rules.h"
#include "ops/variance_rules.h"
#include "support/unique_names.h"

namespace spmd::ir {
namespace {

std::string shape_tuple(const Shape &s) {
  if (s.empty()) return "()";
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

std::string int_tuple(const std::vector<int64_t> &v) { return shape_tuple(v); }

/// A .spmd string literal holding `text` (`\"` and `\\` are its escapes).
std::string quote_string(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

bool is_keyword(const std::string &n) {
  static const std::set<std::string> kw = {"import", "mesh", "def", "shmap", "sharded", "on",
                                           "return", "for",  "in",  "range", "if",      "else",
                                           "and",    "or",   "not", "true",  "false",   "None"};
  return kw.count(n) > 0;
}

/// Assigns printable unique names to the values of one function.
class Namer {
 public:
  Namer(const Function &f, const rt::Mesh &mesh) : f_(f) {
    taken_.expect(f.values.size() + mesh.axes().size());
    for (const auto &a : mesh.axes()) taken_.reserve(a.name);
    names_.resize(f.values.size());
    for (const auto &p : f.params) assign(p.value);
  }
  const std::string &name(ValueId v) {
    if (names_[v].empty()) assign(v);
    return names_[v];
  }
  /// Gives `b` the printed name of `a` (loop-carried values share one name).
  void share(ValueId a, ValueId b) { names_[b] = name(a); }
  /// A name no value has or will have (`t7`).
  std::string fresh() {
    std::string n;
    do n = "t" + std::to_string(next_temp_++);
    while (taken_.taken(n));
    taken_.reserve(n);
    return n;
  }

 private:
  void assign(ValueId v) {
    std::string base = f_.values[v].name;
    if (base.empty() || is_keyword(base)) {
      names_[v] = fresh();
      return;
    }
    // A name printed earlier with a uniquifying suffix (`acc_2`) is reduced
    // to its base, so printing a printed program gives the same names.
    size_t us = base.find_last_of('_');
    if (us != std::string::npos && us > 0 && us + 1 < base.size() &&
        base.find_first_not_of("0123456789", us + 1) == std::string::npos)
      base = base.substr(0, us);
    names_[v] = taken_.claim(base);
  }
  const Function &f_;
  std::vector<std::string> names_;
  UniqueNames taken_;
  int next_temp_ = 0;
};

class FunctionPrinter {
 public:
  FunctionPrinter(const Module &m, const Function &f, const PrintOptions &o,
                  const std::vector<std::string> &fn_names)
      : m_(m), f_(f), o_(o), mesh_(m.mesh_of(f)), namer_(f, mesh_), fn_names_(fn_names) {
    def_.assign(f.values.size(), nullptr);
    record_definitions(f.body);
    decide_inlining();
  }

  /// A result's spec as written: `like(w)`, `auto` or `P(...)`.
  std::string result_spec_str(const Result &r) {
    if (r.like_param >= 0)
      return "like(" + namer_.name(f_.params[static_cast<size_t>(r.like_param)].value) + ")";
    return r.auto_spec ? "auto" : spec_str(r.spec, mesh_);
  }

  std::string print() {
    std::ostringstream out;
    if (!f_.comment.empty()) {
      std::istringstream lines(f_.comment);
      std::string line;
      while (std::getline(lines, line)) out << "# " << line << "\n";
    }
    bool shmap = is_top_level(f_);  // a signature with global types, specs and a mesh
    if (f_.kind == FunctionKind::Shmap && !f_.auto_pbroadcast) out << "[[no_auto_pbroadcast]]\n";
    out << function_keyword(f_.kind) << " " << fn_names_[index_of()] << "(";
    for (size_t i = 0; i < f_.params.size(); ++i) {
      const Param &p = f_.params[i];
      const Type &t = f_.type(p.value);
      out << (i ? ", " : "") << namer_.name(p.value) << ": ";
      if (shmap) {
        out << shape_type_str(t.dtype, p.global_shape) << " @ "
            << (p.auto_spec ? "auto" : spec_str(p.spec, mesh_));
      } else {
        out << shape_type_str(t.dtype, t.shape);
      }
    }
    out << ") -> ";
    bool parens = f_.results.size() != 1 || (shmap && !f_.results[0].name.empty());
    if (parens) out << "(";
    for (size_t k = 0; k < f_.results.size(); ++k) {
      const Type &t = f_.type(f_.returns[k]);
      out << (k ? ", " : "");
      if (shmap) {
        if (!f_.results[k].name.empty()) out << f_.results[k].name << ": ";
        out << shape_type_str(t.dtype, f_.results[k].global_shape) << " @ "
            << result_spec_str(f_.results[k]);
      } else {
        out << shape_type_str(t.dtype, t.shape);
      }
    }
    if (parens) out << ")";
    if (shmap) out << " on " << m_.meshes[static_cast<size_t>(f_.mesh)].name;
    out << " {";
    if (!shmap && o_.types) {
      // The variance this instance was typed for (signatures carry none).
      out << "  # variance:";
      for (size_t i = 0; i < f_.params.size(); ++i)
        out << (i ? ", " : " ") << namer_.name(f_.params[i].value) << " "
            << axis_set_str(f_.type(f_.params[i].value).variance, mesh_);
      out << " ->";
      for (size_t k = 0; k < f_.returns.size(); ++k)
        out << (k ? ", " : " ") << axis_set_str(f_.type(f_.returns[k]).variance, mesh_);
    }
    out << "\n";
    print_block(out, f_.body, "  ");
    out << "  return";
    for (size_t k = 0; k < f_.returns.size(); ++k)
      out << (k ? ", " : " ") << operand(f_.returns[k], std::nullopt);
    out << "\n}\n";
    return out.str();
  }

 private:
  void print_block(std::ostringstream &out, const std::vector<Instr> &body,
                   const std::string &indent) {
    for (const Instr &in : body) {
      if (inlined(in)) continue;
      if (in.op == OpCode::For) {
        print_for(out, in, indent);
        continue;
      }
      out << indent;
      if (in.results.empty()) {  // print: a statement of its own
        out << expr(in) << "\n";
        continue;
      }
      const bool annotate = o_.types || varying_constant(in);
      for (size_t k = 0; k < in.results.size(); ++k) {
        out << (k ? ", " : "") << namer_.name(in.results[k]);
        if (annotate) out << ": " << type_str(f_.type(in.results[k]), mesh_);
      }
      out << " = " << expr(in);
      if (o_.types && o_.mark_inserted && in.origin == Origin::AutoPbroadcast) out << "  # auto";
      if (!in.comment.empty()) out << "  # " << in.comment;
      out << "\n";
    }
  }

  /// A constant created with a variance its operands do not give it (a
  /// transform may type `zeros(...)` as varying where it is used so). Printed
  /// with its type, `t: f32[4]{i} = zeros((4,))`, so that reading the text
  /// back types it the same at the same place (unannotated, it would be
  /// invariant and re-created with the variance at its first use).
  bool varying_constant(const Instr &in) const {
    if (f_.kind != FunctionKind::Shmap || op_kind(in.op) != OpKind::Creation ||
        in.results.size() != 1)
      return false;
    SmallVector<AxisSet, 4> operand_vars;
    for (ValueId o : in.operands) operand_vars.push_back(f_.type(o).variance);
    const auto rvs = result_variances(in.op, operand_vars, 1, in.attrs);
    return !rvs.empty() && f_.type(in.results[0]).variance != rvs[0];
  }

  /// `for k in range(a, b) { ... }`: a carried value has one printed name for
  /// its initial value's copy, the loop body's parameter, its next value and
  /// the loop's result.
  void print_for(std::ostringstream &out, const Instr &in, const std::string &indent) {
    const Region &r = in.regions.at(0);
    // The carried values take their next values all at once: a parallel copy
    // whose locations are the loop's results (the body's parameters stand for
    // them), written as plain copies with temporaries (negative ids) for cycles.
    std::unordered_map<ValueId, ValueId> carried_of;  // body parameter -> loop result
    for (size_t k = 0; k < in.results.size(); ++k) {
      carried_of[r.params[k + 1]] = in.results[k];
      namer_.share(in.results[k], r.params[k + 1]);
    }
    std::vector<Copy<ValueId>> update;
    for (size_t k = 0; k < r.yields.size(); ++k) {
      auto c = carried_of.find(r.yields[k]);
      update.push_back({in.results[k], c == carried_of.end() ? r.yields[k] : c->second});
    }
    ValueId next_temporary = kNoValue;
    const auto steps =
        sequentialize_parallel_copy<ValueId>(update, [&] { return --next_temporary; });
    // Reading the printed loop back carries the values in the order the body
    // first assigns them; printing them in that order makes printing a
    // printed program give the same text.
    std::vector<size_t> order;
    std::unordered_map<ValueId, size_t> index_of_result;
    for (size_t k = 0; k < in.results.size(); ++k) index_of_result[in.results[k]] = k;
    std::vector<bool> listed(in.results.size(), false);
    for (const auto &step : steps)
      if (step.destination >= 0 && !listed[index_of_result.at(step.destination)]) {
        listed[index_of_result.at(step.destination)] = true;
        order.push_back(index_of_result.at(step.destination));
      }
    for (size_t k = 0; k < in.results.size(); ++k)
      if (!listed[k]) order.push_back(k);

    for (size_t k : order) {
      const std::string &carried = namer_.name(in.results[k]);
      std::string init = operand(in.operands[k], std::nullopt);
      if (init != carried) {
        out << indent << carried;
        if (o_.types) out << ": " << type_str(f_.type(in.results[k]), mesh_);
        out << " = " << init << "\n";
      }
    }
    if (in.attrs.loop().unroll || in.attrs.loop().remat) {
      out << indent << "[[";
      if (in.attrs.loop().unroll) out << "unroll" << (in.attrs.loop().remat ? ", " : "");
      if (in.attrs.loop().remat) out << "remat";
      out << "]]\n";
    }
    out << indent << "for " << namer_.name(r.params[0]) << " in range(" << in.attrs.loop().start
        << ", " << in.attrs.loop().stop;
    if (in.attrs.loop().step != 1) out << ", " << in.attrs.loop().step;
    out << ") {";
    if (o_.types && !in.results.empty()) {
      out << "  # carries";
      for (size_t i = 0; i < order.size(); ++i)
        out << (i ? ", " : " ") << namer_.name(in.results[order[i]]) << ": "
            << type_str(f_.type(in.results[order[i]]), mesh_);
    }
    out << "\n";
    print_block(out, r.body, indent + "  ");
    std::unordered_map<ValueId, std::string> temporaries;
    auto location = [&](ValueId v) -> std::string {
      if (v >= 0) return operand(v, std::nullopt);
      auto t = temporaries.find(v);
      if (t == temporaries.end()) t = temporaries.emplace(v, namer_.fresh()).first;
      return t->second;
    };
    for (const auto &step : steps) {
      std::string destination = location(step.destination);
      out << indent << "  " << destination << " = " << location(step.source) << "\n";
    }
    out << indent << "}\n";
  }

  size_t index_of() const { return static_cast<size_t>(&f_ - m_.functions.data()); }

  void record_definitions(const std::vector<Instr> &body) {
    for (const Instr &in : body) {
      for (ValueId r : in.results) def_[static_cast<size_t>(r)] = &in;
      for (const Region &r : in.regions) record_definitions(r.body);
    }
  }

  bool is_constant(ValueId v) const {
    const Instr *d = def_[static_cast<size_t>(v)];
    return d && d->op == OpCode::Constant;
  }

  /// A constant used only as a partner of a binary op with a same-dtype
  /// non-constant operand is printed in place as a literal. One pass over
  /// every use decides it for all constants.
  void decide_inlining() {
    inline_.assign(f_.values.size(), true);
    visit_uses(f_.body);
    for (ValueId r : f_.returns) inline_[static_cast<size_t>(r)] = false;
  }
  void visit_uses(const std::vector<Instr> &body) {
    for (const Instr &user : body) {
      for (size_t k = 0; k < user.operands.size(); ++k)
        if (is_constant(user.operands[k]) && !literal_ok_in(user, k))
          inline_[static_cast<size_t>(user.operands[k])] = false;
      for (const Region &r : user.regions) {
        for (ValueId y : r.yields) inline_[static_cast<size_t>(y)] = false;
        visit_uses(r.body);
      }
    }
  }
  bool inlined(const Instr &in) const {
    return in.op == OpCode::Constant && inline_[static_cast<size_t>(in.results[0])];
  }
  bool literal_ok_in(const Instr &user, size_t k) const {
    OpKind kind = op_kind(user.op);
    if (kind != OpKind::Binary && kind != OpKind::Compare && kind != OpKind::Select) return false;
    if (kind == OpKind::Select && k == 0) return false;
    DType d = f_.type(user.operands[k]).dtype;
    for (size_t j = 0; j < user.operands.size(); ++j) {
      if (j == k || (kind == OpKind::Select && j == 0)) continue;
      bool other_const = is_constant(user.operands[j]);
      if (!other_const && f_.type(user.operands[j]).dtype == d &&
          f_.type(user.operands[j]).variance.contains_all(f_.type(user.operands[k]).variance))
        return true;
    }
    return false;
  }

  std::string literal(const Instr &c) {
    return format_number(c.attrs.creation().value, c.attrs.creation().dtype);
  }

  std::string operand(ValueId v, std::optional<int> /*unused*/) {
    const Instr *d = def_[static_cast<size_t>(v)];
    if (d && inlined(*d)) {
      std::string lit = literal(*d);
      return lit[0] == '-' ? "(" + lit + ")" : lit;
    }
    return namer_.name(v);
  }
  std::string op(ValueId v) { return operand(v, std::nullopt); }

  std::string axes(const Instr &in) { return axis_list_str(in.attrs.collective().axes, mesh_); }
  /// `x`, or `(a, b, c)` for a combined collective of several operands.
  std::string operand_or_tuple(const Instr &in) {
    if (in.operands.size() == 1) return op(in.operands[0]);
    std::string s = "(";
    for (size_t k = 0; k < in.operands.size(); ++k) s += (k ? ", " : "") + op(in.operands[k]);
    return s + ")";
  }

  std::string expr(const Instr &in) {
    const Attrs &a = in.attrs;
    auto call1 = [&](std::string_view name) {
      return std::string(name) + "(" + op(in.operands[0]) + ")";
    };
    auto infix = [&](const char *sym) {
      return op(in.operands[0]) + " " + sym + " " + op(in.operands[1]);
    };
    switch (in.op) {
      case OpCode::Constant: {
        bool natural = a.creation().dtype == DType::F32 || a.creation().dtype == DType::I32 ||
                       a.creation().dtype == DType::Bool;
        if (natural) return literal(in);
        return "full((), " + format_number(a.creation().value, a.creation().dtype) + ", " +
               dtype_name(a.creation().dtype) + ")";
      }
      case OpCode::Full: {
        std::string d = a.creation().dtype == DType::F32
                            ? ""
                            : std::string(", ") + dtype_name(a.creation().dtype);
        if (a.creation().value == 0 && !std::signbit(a.creation().value))
          return "zeros(" + shape_tuple(a.creation().shape) + d + ")";
        if (a.creation().value == 1) return "ones(" + shape_tuple(a.creation().shape) + d + ")";
        return "full(" + shape_tuple(a.creation().shape) + ", " +
               format_number(a.creation().value, a.creation().dtype) + ", " +
               dtype_name(a.creation().dtype) + ")";
      }
      case OpCode::Iota:
        return "iota(" + shape_tuple(a.creation().shape) +
               ", dim=" + std::to_string(a.creation().dim) +
               ", dtype=" + dtype_name(a.creation().dtype) + ")";
#define UNARY_MATH(Name, spelling, kernel, scalar_fn, Domain, Linearity) case OpCode::Name:
#include "spmdrt/unary_math.def"
        if (in.op == OpCode::Neg) return "-" + op(in.operands[0]);
        return call1(op_spelling(in.op));
      case OpCode::StopGradient:
        return call1(op_spelling(in.op));
      case OpCode::Cast:
        return "cast(" + op(in.operands[0]) + ", " + dtype_name(a.cast().dtype) + ")";
#define BINARY_MATH(Name, spelling, kernel, scalar_fn, Kind, symbol, BoolOk, Linearity) \
  case OpCode::Name:
#include "spmdrt/binary_math.def"
        if (!op_symbol(in.op).empty()) return infix(op_symbol(in.op).data());  // a literal
        return std::string(op_spelling(in.op)) + "(" + op(in.operands[0]) + ", " +
               op(in.operands[1]) + ")";
      case OpCode::Select:
        return "where(" + op(in.operands[0]) + ", " + op(in.operands[1]) + ", " +
               op(in.operands[2]) + ")";
      case OpCode::ReduceSum:
      case OpCode::ReduceMax:
      case OpCode::ReduceMin:
      case OpCode::ArgMax:
      case OpCode::ArgMin:
      case OpCode::Reverse: {
        std::string s = std::string(op_spelling(in.op)) + "(" + op(in.operands[0]);
        int64_t rank = f_.type(in.operands[0]).rank();
        const std::vector<int64_t> &dims =
            op_attr_family(in.op) == AttrFamily::Layout ? a.layout().dims : a.reduce().dims;
        bool all = static_cast<int64_t>(dims.size()) == rank;
        if (!all || rank == 0) s += ", axes=" + int_tuple(dims);
        return s + ")";
      }
      case OpCode::Einsum: {
        if (in.operands.size() == 2 &&
            (a.einsum().spec == "ij,jk->ik" || a.einsum().spec == "j,jk->k" ||
             a.einsum().spec == "ij,j->i" || a.einsum().spec == "j,j->"))
          return op(in.operands[0]) + " @ " + op(in.operands[1]);
        std::string s = "einsum(\"" + a.einsum().spec + "\"";
        for (ValueId o : in.operands) s += ", " + op(o);
        return s + ")";
      }
      case OpCode::Reshape:
        return "reshape(" + op(in.operands[0]) + ", " + shape_tuple(a.layout().shape) + ")";
      case OpCode::Constrain:
        return "constrain(" + op(in.operands[0]) + ", " + spec_str(a.constrain().sharding, mesh_) +
               ")";
      case OpCode::Transpose:
        return "transpose(" + op(in.operands[0]) + ", " + int_tuple(a.layout().dims) + ")";
      case OpCode::BroadcastTo:
        return "broadcast_to(" + op(in.operands[0]) + ", " + shape_tuple(a.layout().shape) + ")";
      case OpCode::Slice: {
        const Shape &s = f_.type(in.operands[0]).shape;
        std::string out = op(in.operands[0]) + "[";
        for (size_t d = 0; d < s.size(); ++d) {
          out += d ? ", " : "";
          bool full_range = a.layout().start[d] == 0 && a.layout().limit[d] == s[d];
          if (!full_range || a.layout().stride[d] == 1) {
            if (a.layout().start[d] != 0) out += std::to_string(a.layout().start[d]);
            out += ":";
            if (a.layout().limit[d] != s[d]) out += std::to_string(a.layout().limit[d]);
          } else {
            out += ":";
          }
          if (a.layout().stride[d] != 1) out += ":" + std::to_string(a.layout().stride[d]);
        }
        if (s.empty()) out += ":";  // not reachable: rank-0 values are not sliced
        return out + "]";
      }
      case OpCode::Pad:
        return "pad(" + op(in.operands[0]) + ", " + shape_tuple(a.layout().shape) +
               ", start=" + int_tuple(a.layout().start) +
               ", stride=" + int_tuple(a.layout().stride) + ")";
      case OpCode::Concat: {
        std::string s = "concat((";
        for (size_t k = 0; k < in.operands.size(); ++k) s += (k ? ", " : "") + op(in.operands[k]);
        if (in.operands.size() == 1) s += ",";
        return s + "), axis=" + std::to_string(a.layout().dim) + ")";
      }
      case OpCode::DynamicSlice:
        return "dynamic_slice(" + op(in.operands[0]) + ", " + op(in.operands[1]) +
               ", size=" + std::to_string(a.layout().shape[a.layout().dim]) +
               ", axis=" + std::to_string(a.layout().dim) + ")";
      case OpCode::DynamicUpdateSlice:
        return "dynamic_update_slice(" + op(in.operands[0]) + ", " + op(in.operands[1]) + ", " +
               op(in.operands[2]) + ", axis=" + std::to_string(a.layout().dim) + ")";
      case OpCode::Take:
      case OpCode::ScatterAdd: {
        std::string s = std::string(op_spelling(in.op)) + "(";
        for (size_t k = 0; k < in.operands.size(); ++k) s += (k ? ", " : "") + op(in.operands[k]);
        if (a.gather().axis != 0) s += ", axis=" + std::to_string(a.gather().axis);
        if (a.gather().mode == rt::IndexMode::Fill) s += ", mode=\"fill\"";
        return s + ")";
      }
      case OpCode::Psum:
      case OpCode::Pmax:
      case OpCode::Pmin:
        // (combined: psum((a, b, c), axes))
        return std::string(op_spelling(in.op)) + "(" + operand_or_tuple(in) + ", " + axes(in) + ")";
      case OpCode::Pbroadcast:
        return std::string(op_spelling(in.op)) + "(" + op(in.operands[0]) + ", " + axes(in) + ")";
      case OpCode::AllGather:
      case OpCode::AllGatherInvariant:
      case OpCode::Pscatter: {
        std::string s =
            std::string(op_spelling(in.op)) + "(" + operand_or_tuple(in) + ", " + axes(in);
        if (a.collective().dim != 0) s += ", axis=" + std::to_string(a.collective().dim);
        if (!a.collective().tiled) s += ", tiled=false";
        return s + ")";
      }
      case OpCode::PsumScatter: {  // (combined: psum_scatter((a, b), axes))
        std::string s = "psum_scatter(" + operand_or_tuple(in) + ", " + axes(in);
        if (a.collective().dim != 0)
          s += ", scatter_dimension=" + std::to_string(a.collective().dim);
        if (!a.collective().tiled) s += ", tiled=false";
        return s + ")";
      }
      case OpCode::AllToAll:
        return "all_to_all(" + op(in.operands[0]) + ", " + axes(in) +
               ", split_axis=" + std::to_string(a.collective().dim) +
               ", concat_axis=" + std::to_string(a.collective().concat_dim) + ")";
      case OpCode::Ppermute: {
        std::string s = "ppermute(" + op(in.operands[0]) + ", " + axes(in) + ", perm=[";
        for (size_t k = 0; k < a.collective().perm.size(); ++k)
          s += (k ? ", " : "") + std::string("(") + std::to_string(a.collective().perm[k].first) +
               ", " + std::to_string(a.collective().perm[k].second) + ")";
        return s + "])";
      }
      case OpCode::AxisIndex:
        return "axis_index(" + axes(in) + ")";
      case OpCode::RandomKey:
      case OpCode::KeyData:
        return call1(op_spelling(in.op));
      case OpCode::RandomFoldIn:
        return "fold_in(" + op(in.operands[0]) + ", " + op(in.operands[1]) + ")";
      case OpCode::RandomSplit:
      case OpCode::RandomBits:
      case OpCode::RandomUniform:
      case OpCode::RandomNormal:
      case OpCode::RandomInt: {
        const RandomAttrs &r = a.random();
        const size_t params = random_param_count(in.op);
        std::string s = std::string(op_spelling(in.op)) + "(" + op(in.operands[0]) + ", " +
                        shape_tuple(r.shape);
        for (size_t k = 1; k < params; ++k) s += ", " + op(in.operands[k]);
        if (in.op == OpCode::RandomUniform && r.dtype != DType::F32)
          s += std::string(", dtype=") + dtype_name(r.dtype);
        if (!r.global.empty()) {
          s += ", global_shape=" + shape_tuple(r.global) + ", offset=[";
          for (size_t k = params; k < in.operands.size(); ++k)
            s += (k > params ? ", " : "") + op(in.operands[k]);
          s += "]";
        }
        return s + ")";
      }
      case OpCode::For:
        return "?";  // printed as a statement by print_for
      case OpCode::Call: {
        std::string s = fn_names_[static_cast<size_t>(a.call().callee)] + "(";
        for (size_t k = 0; k < in.operands.size(); ++k) s += (k ? ", " : "") + op(in.operands[k]);
        return s + ")";
      }
      case OpCode::DebugPrint: {
        std::string s = "print(" + quote_string(a.print().format);
        for (ValueId o : in.operands) s += ", " + op(o);
        return s + ")";
      }
    }
    return "?";
  }

  const Module &m_;
  const Function &f_;
  const PrintOptions &o_;
  const rt::Mesh &mesh_;
  Namer namer_;
  const std::vector<std::string> &fn_names_;
  std::vector<const Instr *> def_;  // by value; null for parameters
  std::vector<bool> inline_;        // by value: a constant printed as a literal
};

/// Unique printed names for functions (def instances of one source name get suffixes).
std::vector<std::string> function_names(const Module &m) {
  std::vector<std::string> names;
  std::set<std::string> taken;
  for (const auto &f : m.functions)
    if (is_top_level(f)) taken.insert(f.name);
  for (const auto &f : m.functions) {
    if (is_top_level(f)) {
      names.push_back(f.name);
      continue;
    }
    std::string n = f.name;
    for (int k = 2; taken.count(n); ++k) n = f.name + "_" + std::to_string(k);
    taken.insert(n);
    names.push_back(n);
  }
  return names;
}

template <typename Fn>
void for_each_call(const std::vector<Instr> &body, Fn &&fn) {
  for (const Instr &in : body) {
    if (in.op == OpCode::Call) fn(in.attrs.call().callee);
    for (const Region &r : in.regions) for_each_call(r.body, fn);
  }
}

/// Def instances reachable from shmaps and sharded functions (others are
/// leftovers of specialisation).
std::vector<bool> reachable(const Module &m) {
  std::vector<bool> seen(m.functions.size(), false);
  std::vector<size_t> stack;
  for (size_t i = 0; i < m.functions.size(); ++i)
    if (is_top_level(m.functions[i])) {
      seen[i] = true;
      stack.push_back(i);
    }
  while (!stack.empty()) {
    size_t i = stack.back();
    stack.pop_back();
    for_each_call(m.functions[i].body, [&](int callee) {
      if (!seen[static_cast<size_t>(callee)]) {
        seen[static_cast<size_t>(callee)] = true;
        stack.push_back(static_cast<size_t>(callee));
      }
    });
  }
  return seen;
}

/// Callees before callers: first the top-level functions `i` calls, then its
/// def instances. Reading the text back makes every top-level function a
/// source function in printed order and instantiates defs at their first
/// call, so visiting top-level callees first gives the same order again
/// (printing is idempotent) wherever the transforms appended them.
void post_order(const Module &m, size_t i, std::vector<bool> &done, std::vector<size_t> &out) {
  if (done[i]) return;
  done[i] = true;
  for (bool top_level : {true, false})
    for_each_call(m.functions[i].body, [&](int callee) {
      if (is_top_level(m.functions[static_cast<size_t>(callee)]) == top_level)
        post_order(m, static_cast<size_t>(callee), done, out);
    });
  out.push_back(i);
}

}  // namespace

std::string format_number(double value, DType dtype) {
  if (dtype == DType::Bool) return value != 0 ? "true" : "false";
  if (dtype == DType::I32) return std::to_string(static_cast<int64_t>(value));
  if (std::isinf(value) || std::isnan(value)) {
    // No literal syntax for these: a finite expression that produces them.
    if (std::isnan(value)) return "(0.0 / 0.0)";
    return value > 0 ? "(1.0 / 0.0)" : "(-1.0 / 0.0)";
  }
  char buf[64];
  std::to_chars_result r;
  if (dtype == DType::F32 || dtype == DType::BF16)
    r = std::to_chars(buf, buf + sizeof buf, static_cast<float>(value));
  else
    r = std::to_chars(buf, buf + sizeof buf, value);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

std::string print_function(const Module &module, const Function &function,
                           const PrintOptions &options) {
  auto names = function_names(module);
  return FunctionPrinter(module, function, options, names).print();
}

std::string print_module(const Module &module, const PrintOptions &options) {
  std::ostringstream out;
  bool first = true;
  if (options.include_meshes) {
    for (const auto &m : module.meshes) {
      out << "mesh " << m.name << " = (";
      for (size_t i = 0; i < m.mesh.axes().size(); ++i)
        out << (i ? ", " : "") << m.mesh.axes()[i].name << ": " << m.mesh.axes()[i].size;
      out << ")\n";
      first = false;
    }
  }
  auto names = function_names(module);
  auto live = reachable(module);
  std::vector<bool> done(module.functions.size(), false);
  std::vector<size_t> order;
  for (size_t i = 0; i < module.functions.size(); ++i)
    if (is_top_level(module.functions[i])) post_order(module, i, done, order);
  for (size_t i : order) {
    if (!live[i]) continue;
    if (!first) out << "\n";
    first = false;
    out << FunctionPrinter(module, module.functions[i], options, names).print();
  }
  return out.str();
}

std::string dump_ir(const Module &module) {
  std::ostringstream out;
  for (size_t i = 0; i < module.functions.size(); ++i) {
    const Function &f = module.functions[i];
    const rt::Mesh &mesh = module.mesh_of(f);
    out << "func @" << i << " " << function_keyword(f.kind) << " " << f.name;
    if (f.mesh >= 0) out << " mesh=" << module.meshes[static_cast<size_t>(f.mesh)].name;
    out << " auto_pbroadcast=" << (f.auto_pbroadcast ? "on" : "off") << "\n";
    for (const auto &p : f.params)
      out << "  param %" << p.value << " " << f.values[p.value].name << ": "
          << type_str(f.type(p.value), mesh) << "\n";
    std::function<void(const std::vector<Instr> &, const std::string &)> dump_block =
        [&](const std::vector<Instr> &body, const std::string &indent) {
          for (const auto &in : body) {
            out << indent;
            for (size_t k = 0; k < in.results.size(); ++k)
              out << (k ? ", " : "") << "%" << in.results[k] << ": "
                  << type_str(f.type(in.results[k]), mesh);
            out << " = " << op_spelling(in.op);
            for (ValueId o : in.operands) out << " %" << o;
            const Attrs &a = in.attrs;
            // Each family's fields, read only for the ops that carry it.
            const AttrFamily family = op_attr_family(in.op);
            static const CollectiveAttrs kNoCollective;
            static const EinsumAttrs kNoEinsum;
            const CollectiveAttrs &c =
                family == AttrFamily::Collective ? a.collective() : kNoCollective;
            static const LayoutAttrs kNoLayout;
            const EinsumAttrs &e = family == AttrFamily::Einsum ? a.einsum() : kNoEinsum;
            const LayoutAttrs &l = family == AttrFamily::Layout ? a.layout() : kNoLayout;
            const std::vector<int64_t> &dims =
                family == AttrFamily::Reduce ? a.reduce().dims : l.dims;
            const Shape &shape = family == AttrFamily::Creation ? a.creation().shape : l.shape;
            if (!c.axes.empty()) out << " axes=" << axis_list_str(c.axes, mesh);
            if (!dims.empty()) out << " dims=" << int_tuple(dims);
            if (!shape.empty()) out << " shape=" << shape_tuple(shape);
            if (!l.start.empty()) out << " start=" << int_tuple(l.start);
            if (!l.limit.empty()) out << " limit=" << int_tuple(l.limit);
            if (!l.stride.empty()) out << " stride=" << int_tuple(l.stride);
            if (!e.spec.empty()) out << " spec=\"" << e.spec << "\"";
            if (!c.perm.empty()) {
              out << " perm=[";
              for (size_t k = 0; k < c.perm.size(); ++k)
                out << (k ? "," : "") << c.perm[k].first << "->" << c.perm[k].second;
              out << "]";
            }
            switch (op_kind(in.op)) {
              case OpKind::Creation:
                out << " dtype=" << dtype_name(a.creation().dtype)
                    << " value=" << format_number(a.creation().value, DType::F64);
                if (in.op == OpCode::Iota) out << " dim=" << a.creation().dim;
                break;
              case OpKind::Collective:
                if (in.op != OpCode::AxisIndex && in.op != OpCode::Ppermute &&
                    in.op != OpCode::Psum && in.op != OpCode::Pmax && in.op != OpCode::Pmin &&
                    in.op != OpCode::Pbroadcast)
                  out << " dim=" << c.dim
                      << (in.op == OpCode::AllToAll ? " dim2=" + std::to_string(c.concat_dim) : "")
                      << " tiled=" << (c.tiled ? "true" : "false");
                break;
              case OpKind::Layout:
                if (in.op == OpCode::Concat || in.op == OpCode::DynamicSlice ||
                    in.op == OpCode::DynamicUpdateSlice)
                  out << " dim=" << a.layout().dim;
                if (in.op == OpCode::Take || in.op == OpCode::ScatterAdd)
                  out << " axis=" << a.gather().axis
                      << (a.gather().mode == rt::IndexMode::Fill ? " mode=fill" : "");
                break;
              case OpKind::Call:
                out << " callee=@" << a.call().callee;
                break;
              case OpKind::Control:
                out << " range=" << a.loop().start << ".." << a.loop().stop;
                if (a.loop().step != 1) out << " step=" << a.loop().step;
                if (a.loop().unroll) out << " unroll";
                if (a.loop().remat) out << " remat";
                break;
              case OpKind::Effect:
                out << " format=" << quote_string(a.print().format);
                break;
              default:
                if (in.op == OpCode::Cast) out << " dtype=" << dtype_name(a.cast().dtype);
                break;
            }
            if (in.origin == Origin::AutoPbroadcast) out << " (auto)";
            out << "\n";
            for (const Region &r : in.regions) {
              out << indent << "  region(";
              for (size_t k = 0; k < r.params.size(); ++k)
                out << (k ? ", %" : "%") << r.params[k] << ": "
                    << type_str(f.type(r.params[k]), mesh);
              out << ")\n";
              dump_block(r.body, indent + "    ");
              out << indent << "  yield";
              for (size_t k = 0; k < r.yields.size(); ++k) out << (k ? ", %" : " %") << r.yields[k];
              out << "\n";
            }
          }
        };
    dump_block(f.body, "  ");
    out << "  return";
    for (size_t k = 0; k < f.returns.size(); ++k) out << (k ? ", %" : " %") << f.returns[k];
    out << "\n";
  }
  return out.str();
}

}  // namespace spmd::ir
