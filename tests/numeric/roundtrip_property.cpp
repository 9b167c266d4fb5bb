// tests/numeric/roundtrip_property.cpp — every program spmdc prints or derives is source.
//
// Issue 10's property, tested on the text a user would read, not the IR:
//   * corpus: every .spmd under samples/ and tests/ that checks (fail_* files
//     and import-only modules aside), and programs of the random generator
//     (tests/support/program_generator.h: loops whose carries permute, layout
//     ops, every collective, 1-D and 2-D meshes with axes of size 1..8);
//   * print (untyped and --types) -> parse -> check with automatic pbroadcast
//     OFF succeeds; printing that gives the same text; running it gives the
//     same bits as running the original;
//   * transpose, jvp, vjp and grad, printed -> checked strictly -> run: the
//     same bits as the in-memory derived program; `spmdc print` of it is
//     idempotent; derivatives equal central finite differences in f64
//     (relative tolerance 1e-6, see kFdTolerance) and agree with each other
//     (<vjp(ybar), v> = <ybar, jvp(v)>); transposes satisfy the dot-product
//     identity; the transpose of the printed transpose computes the same
//     values as the original and prints the same after renaming
//     (canonical_text: the original as derive() sees it, derivable_form).
//     The exceptions (docs/transposition.md, "Transposing twice"): a sum of
//     three or more terms that comes back associated differently
//     (`p0 + (v1 - v1)` as `(p0 + v1) - v1`, `sum(a - b)` as
//     `sum(a) - sum(b)`), or a factor applied to a sum instead of to each
//     term (`c * a + c * b` as `c * (a + b)`): a different rounding, so no
//     exact rewrite can give one from the other. For those the test asserts
//     exactly that (ValueNumbering::Sums: not equal by the exact identities
//     of sums, equal by their terms) and counts each class;
//   * each derivative of a generated program, called in the language by a
//     shmap (`return grad(f)(x, w)`, `transpose(f, wrt=(a, b))(...)`), prints
//     as the CLI's program and computes the same bits.
// Options (besides Catch's): --seed S (first generator seed, default 1) and
// --programs N (generated programs per flavor, default 200). At the end it
// prints how many programs of each kind were exercised; scripts/roundtrip-sweep.sh
// runs ten thousand.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <numeric>
#include <regex>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "interp/interpreter.h"
#include "ir/printer.h"
#include "ops/variance_rules.h"
#include "pipeline/compile.h"
#include "pipeline/derive.h"
#include "program_generator.h"
#include "transforms/combine_collectives.h"
#include "transforms/explicit_pbroadcast.h"
#include "transforms/inline_calls.h"
#include "transforms/simplify.h"

using namespace spmd;

namespace {

uint64_t g_seed = 1;
int g_programs = 200;
std::map<std::string, int> g_tally;  // what was exercised, for the report

constexpr double kFdTolerance = 1e-6;  // relative, on inner products, in f64

void tally(const std::string &what, int n = 1) { g_tally[what] += n; }
void tally_features(const testgen::GeneratedProgram &p) {
  for (const auto &[feature, n] : p.features) tally("  generated, with " + feature);
}

// ---- compiling and running ---------------------------------------------------

std::unique_ptr<Compilation> compile(const std::string &path, const std::string &text,
                                     bool auto_pb) {
  auto c = std::make_unique<Compilation>();
  CompileOptions o;
  o.auto_pbroadcast = auto_pb;
  compile_source(*c, path, text, o);
  return c;
}

/// Compiles text a command printed: must check with automatic pbroadcast off.
std::unique_ptr<Compilation> compile_printed(const std::string &text) {
  auto c = compile("printed.spmd", text, /*auto_pb=*/false);
  INFO("printed program:\n" << text);
  INFO(render_diagnostics(c->diags, c->sources));
  REQUIRE(c->ok());
  return c;
}

std::vector<int> shmaps(const ir::Module &m) {
  std::vector<int> out;
  for (size_t i = 0; i < m.functions.size(); ++i)
    if (m.functions[i].kind == ir::FunctionKind::Shmap) out.push_back(static_cast<int>(i));
  return out;
}

std::vector<rt::Tensor> random_inputs(const ir::Function &f, uint64_t seed) {
  std::vector<rt::Tensor> in;
  for (size_t k = 0; k < f.params.size(); ++k)
    in.push_back(rt::random_tensor(f.type(f.params[k].value).dtype, f.params[k].global_shape,
                                   seed * 7919 + k));
  return in;
}

/// Runs shmap `name`; an error (e.g. integer division by zero) is a result too.
struct RunResult {
  std::vector<rt::Tensor> outputs;
  std::string error;
};
RunResult run(const ir::Module &m, const std::string &name, const std::vector<rt::Tensor> &in) {
  RunResult r;
  try {
    r.outputs = interp::run_shmap(m, m.find_function(name), in);
  } catch (const std::exception &e) {
    r.error = e.what();
  }
  return r;
}

void require_same_bits(const RunResult &a, const RunResult &b) {
  REQUIRE(a.error == b.error);
  REQUIRE(a.outputs.size() == b.outputs.size());
  for (size_t k = 0; k < a.outputs.size(); ++k) {
    INFO("result " << k);
    CHECK(a.outputs[k].bitwise_equal(b.outputs[k]));
  }
}

double dot(const rt::Tensor &a, const rt::Tensor &b) {
  REQUIRE(a.shape() == b.shape());
  double s = 0;
  for (int64_t i = 0; i < a.numel(); ++i) s += a.get(i) * b.get(i);
  return s;
}

rt::Tensor axpy(double alpha, const rt::Tensor &x, const rt::Tensor &y) {
  rt::Tensor r = y.clone();
  for (int64_t i = 0; i < r.numel(); ++i) r.set(i, y.get(i) + alpha * x.get(i));
  return r;
}

// ---- printing ---------------------------------------------------------------

std::string print(const ir::Module &m, bool types) {
  ir::PrintOptions po;
  po.types = types;
  po.mark_inserted = false;  // re-read, an inserted pbroadcast is a written one
  return ir::print_module(m, po);
}

/// Value numbering across functions: two values get the same number exactly
/// when they are computed by the same ops with the same attributes from the
/// same parameters (by name) — whatever the value names, the instruction order
/// and the operand order of commutative ops. A loop's number covers its body.
class ValueNumbering {
 public:
  /// What else two values with the same number may differ in. Each mode
  /// allows what the one before it does, and more.
  enum class Sums {
    Exact,  // nothing else
    /// the exact identities of `+`, `-` and negation: a + b = b + a,
    /// a - b = a + -b, -(a + b) = -a - b, --a = a, a + 0 = a, and NumPy
    /// broadcasting (an explicit broadcast, or a reshape or sum that adds or
    /// drops leading 1s, read in a sum); a psum over devices of which there
    /// is one is its operand. Same bits, but for the sign of a zero.
    Signed,
    /// the association of a sum: a tree of `+`, `-` and negation is
    /// numbered by its signed terms, and a sum over elements (reduce_sum)
    /// or devices (psum, psum_scatter) of a sum by the sums of its terms
    /// (sum(a - b) = sum(a) - sum(b)). Different rounding: in floating point
    /// a different program, of the same terms.
    Associated,
    /// a factor distributed over a sum: c * (a + b) = c * a + c * b (also a
    /// different rounding, not only a different association).
    Factored,
  };
  ValueNumbering(const ir::Module &m, const ir::Function &f, Sums sums = Sums::Exact)
      : f_(f),
        mesh_(m.mesh_of(f)),
        sums_(sums),
        number_(f.values.size(), -1),
        signed_(f.values.size()),
        terms_(f.values.size()) {}
  std::vector<int> returns() const {
    std::vector<int> out;
    for (auto r : f_.returns) out.push_back(number_[r]);
    return out;
  }

  void number_function() {
    for (const auto &p : f_.params) set(p.value, intern("param " + f_.values[p.value].name));
    number_block(f_.body, 0);
  }
  int operator[](ir::ValueId v) const { return number_[v]; }
  /// Shared by the functions compared, so equal numbers mean equal programs.
  static std::unordered_map<std::string, int> &table() {
    static std::unordered_map<std::string, int> t;
    return t;
  }
  static bool commutative(OpCode op) {
    return op == OpCode::Add || op == OpCode::Mul || op == OpCode::Max || op == OpCode::Min;
  }

  /// The op and its attributes (what the printer shows of them).
  std::string op_key(const ir::Instr &in) const {
    const Attrs &a = in.attrs;
    std::ostringstream key;
    key << op_spelling(in.op) << "|";
    auto list = [&](const std::vector<int64_t> &v) {
      for (auto x : v) key << x << ",";
      key << "|";
    };
    switch (op_attr_family(in.op)) {
      case AttrFamily::None:
      case AttrFamily::Constrain:
      case AttrFamily::Call:
        break;
      case AttrFamily::Creation:
        key << dtype_name(a.creation().dtype) << "|" << a.creation().value << "|"
            << a.creation().dim << "|";
        list(a.creation().shape);
        break;
      case AttrFamily::Cast:
        key << dtype_name(a.cast().dtype);
        break;
      case AttrFamily::Reduce:
        list(a.reduce().dims);
        break;
      case AttrFamily::Layout: {
        const LayoutAttrs &l = a.layout();
        key << l.dim << "|";
        for (auto v : {&l.dims, &l.shape, &l.start, &l.limit, &l.stride}) list(*v);
        break;
      }
      case AttrFamily::Collective: {
        const CollectiveAttrs &c = a.collective();
        key << c.dim << "," << c.concat_dim << "," << c.tiled << "|";
        for (int x : c.axes) key << x << ",";
        for (auto [s, d] : c.perm) key << s << ">" << d << ",";
        break;
      }
      case AttrFamily::Loop:
        key << a.loop().start << "," << a.loop().stop << "," << a.loop().step;
        break;
      case AttrFamily::Einsum:
        key << a.einsum().spec;
        break;
      case AttrFamily::Gather:
        key << a.gather().axis << "," << static_cast<int>(a.gather().mode);
        break;
      case AttrFamily::Random:
        key << dtype_name(a.random().dtype) << "|";
        list(a.random().shape);
        list(a.random().global);
        break;
      case AttrFamily::Print:
        key << a.print().format;
        break;
    }
    if (op_kind(in.op) == OpKind::Creation)  // (a literal prints the same at any variance)
      key << "|" << shape_type_str(a.creation().dtype, f_.type(in.results[0]).shape);
    return key.str();
  }

  void number_block(const std::vector<ir::Instr> &body, int depth) {
    for (const ir::Instr &in : body) {
      note_zero(in);
      std::vector<int> ops;
      for (auto o : in.operands) ops.push_back(number_[o]);
      if (commutative(in.op)) std::sort(ops.begin(), ops.end());
      std::ostringstream key;
      key << op_key(in);
      key << "|";
      const bool combined = in.results.size() > 1 && is_combinable_collective(in.op);
      if (combined) std::sort(ops.begin(), ops.end());  // (result k by its operand, below)
      if (in.op != OpCode::For)                         // (a loop's, below, in no particular order)
        for (int o : ops) key << o << ",";
      // A loop: numbered by its carried values (initial and next value, as
      // a set: their order does not matter). Its body is numbered with each
      // carried value known by its initial value, then (twice, to tell apart
      // values that start equal) by its initial and previous next value.
      if (sums_ == Sums::Signed && number_signed(in)) continue;
      if (sums_ >= Sums::Associated && number_sum(in)) continue;
      std::vector<std::string> carries;
      for (const ir::Region &r : in.regions) {
        number_[r.params[0]] = intern("loop index " + std::to_string(depth));
        for (size_t k = 0; k < in.operands.size(); ++k)
          carries.push_back(std::to_string(number_[in.operands[k]]));
        for (int round = 0; round < 3; ++round) {
          for (size_t k = 0; k < carries.size(); ++k)
            number_[r.params[k + 1]] =
                intern("carried " + std::to_string(depth) + "," + carries[k]);
          number_block(r.body, depth + 1);
          for (size_t k = 0; k < carries.size(); ++k)
            carries[k] = std::to_string(number_[in.operands[k]]) + ">" +
                         std::to_string(number_[r.yields[k]]);
        }
        std::vector<std::string> sorted = carries;
        std::sort(sorted.begin(), sorted.end());
        key << "{";
        for (const auto &c : sorted) key << c << ",";
        key << "}";
      }
      for (size_t k = 0; k < in.results.size(); ++k)
        set(in.results[k], intern(key.str() + "#" +
                                  (!carries.empty() ? carries[k]
                                   : combined ? "of " + std::to_string(number_[in.operands[k]])
                                              : std::to_string(k))));
    }
  }
  /// Numbers `v` as `n` (its value's shape is n's: remembered).
  void set(ir::ValueId v, int n) {
    number_[v] = n;
    shapes().emplace(n, shape_of(v));
  }
  std::string shape_of(ir::ValueId v) const { return rt::shape_str(f_.type(v).shape); }

  /// Whether `in` only relabels its operand for NumPy broadcasting: a
  /// broadcast_to, or a reshape or sum that adds or drops leading 1s.
  bool only_broadcasts(const ir::Instr &in) const {
    if (in.op == OpCode::BroadcastTo) return true;
    if (in.op != OpCode::Reshape && in.op != OpCode::ReduceSum) return false;
    auto strip = [](const Shape &s) {
      return Shape(std::find_if(s.begin(), s.end(), [](int64_t n) { return n != 1; }), s.end());
    };
    return strip(f_.type(in.operands[0]).shape) == strip(f_.type(in.results[0]).shape);
  }
  /// Whether `in` is a psum or psum_scatter over one device (its operand).
  bool one_device_reduce(const ir::Instr &in) const {
    return (in.op == OpCode::Psum || in.op == OpCode::PsumScatter) &&
           mesh_.group_size(in.attrs.collective().axes) == 1;
  }
  bool is_zero(ir::ValueId v) const { return zeros_.count(v) > 0; }
  /// Remembers the zero constants (after numbering `in` as usual).
  void note_zero(const ir::Instr &in) {
    if ((in.op == OpCode::Constant || in.op == OpCode::Full) && in.attrs.creation().value == 0.0)
      zeros_.insert(in.results[0]);
  }

  /// Sums::Signed: `in` as sign * (a number), for the ops of a sum; the
  /// number is the same for values equal by the identities of Sums::Signed.
  /// False for other ops (numbered as usual).
  bool number_signed(const ir::Instr &in) {
    using Signed = std::pair<int, int>;
    auto rep = [&](ir::ValueId v) { return signed_[v] ? *signed_[v] : Signed{1, number_[v]}; };
    if (in.results.size() != 1) {  // a combined psum (psum_scatter) over one device: its operands
      if ((in.op != OpCode::Psum && in.op != OpCode::PsumScatter) ||
          mesh_.group_size(in.attrs.collective().axes) != 1)
        return false;
      for (size_t k = 0; k < in.results.size(); ++k) set_signed(in.results[k], rep(in.operands[k]));
      return true;
    }
    Signed s;
    switch (in.op) {
      case OpCode::Neg:
        s = rep(in.operands[0]);
        s.first = -s.first;
        break;
      case OpCode::Add:
      case OpCode::Sub: {
        Signed x = rep(in.operands[0]), y = rep(in.operands[1]);
        if (in.op == OpCode::Sub) y.first = -y.first;
        if (is_zero(in.operands[1])) {
          s = x;
        } else if (is_zero(in.operands[0])) {
          s = y;
        } else {
          if (y < x) std::swap(x, y);
          // The sum with its first term positive, times sign; at any shape
          // (broadcasting a sum is summing the broadcast terms).
          const int sign = x.first;
          s = {sign, intern("signed sum:" + std::to_string(x.first * sign) + "*" +
                            std::to_string(x.second) + "," + std::to_string(y.first * sign) + "*" +
                            std::to_string(y.second))};
        }
        break;
      }
      default:
        if (!only_broadcasts(in) && !one_device_reduce(in)) return false;
        s = rep(in.operands[0]);
        break;
    }
    set_signed(in.results[0], s);
    return true;
  }

  void set_signed(ir::ValueId v, std::pair<int, int> s) {
    signed_[v] = s;
    // Read by other ops, the value by its number (and shape, for a sum, or
    // when the sign or a broadcast makes it differ from the number's value).
    const std::string shape = shape_of(v);
    auto known = shapes().find(s.second);
    set(v, s.first > 0 && known != shapes().end() && known->second == shape
               ? s.second
               : intern("signed " + shape + (s.first > 0 ? "+" : "-") + std::to_string(s.second)));
  }

  /// Sums::Associated and Sums::Factored: numbers `in` as a sum of signed
  /// terms, whatever its association: a tree of `+`, `-` and negation by
  /// its terms (zeros left out, broadcasts as in Sums::Signed), a sum over
  /// elements or devices of a sum by the sums of its terms, and (Factored) a
  /// product with a factor that is not a sum by the products of its terms.
  /// False for the other ops (numbered as usual).
  bool number_sum(const ir::Instr &in) {
    using Terms = std::vector<std::pair<int, int>>;
    auto terms = [&](ir::ValueId v) { return terms_[v] ? *terms_[v] : Terms{{1, number_[v]}}; };
    auto append = [](Terms &to, const Terms &t, int sign = 1) {
      for (auto [s, n] : t) to.emplace_back(s * sign, n);
    };
    // A sum over elements or devices of each term (the key says the
    // operand's shape: a term is broadcast to it).
    auto sum_of = [&](const std::string &op, ir::ValueId operand, ir::ValueId result) {
      Terms out;
      const std::string key =
          op + " from " + shape_of(operand) + " to " + shape_of(result) + " of ";
      for (auto [sign, n] : terms(operand))
        out.emplace_back(sign, intern(key + std::to_string(n), shape_of(result)));
      return out;
    };
    if (in.results.size() > 1) {  // a combined psum or psum_scatter: one per operand
      if (in.op != OpCode::Psum && in.op != OpCode::PsumScatter) return false;
      for (size_t k = 0; k < in.results.size(); ++k)
        set_sum(in.results[k], mesh_.group_size(in.attrs.collective().axes) == 1
                                   ? terms(in.operands[k])
                                   : sum_of(op_key(in), in.operands[k], in.results[k]));
      return true;
    }
    Terms t;
    switch (in.op) {
      case OpCode::Add:
      case OpCode::Sub:
        if (!is_zero(in.operands[0])) append(t, terms(in.operands[0]));
        if (!is_zero(in.operands[1]))
          append(t, terms(in.operands[1]), in.op == OpCode::Sub ? -1 : 1);
        break;
      case OpCode::Neg:
        append(t, terms(in.operands[0]), -1);
        break;
      case OpCode::ReduceSum:
      case OpCode::Psum:
      case OpCode::PsumScatter:
        if (only_broadcasts(in) || one_device_reduce(in))
          t = terms(in.operands[0]);
        else
          t = sum_of(op_key(in), in.operands[0], in.results[0]);
        break;
      case OpCode::Mul:
      case OpCode::Div: {  // each term by a factor (that is not a sum itself)
        if (sums_ != Sums::Factored) return false;
        auto sum_like = [&](ir::ValueId v) {
          return terms_[v] && !(terms_[v]->size() == 1 && (*terms_[v])[0].first == 1);
        };
        size_t k = 0;  // the operand distributed over
        if (in.op == OpCode::Mul && !sum_like(in.operands[0]) && sum_like(in.operands[1])) k = 1;
        const int factor = number_[in.operands[1 - k]];
        const std::string key = std::string(op_spelling(in.op)) + " " + shape_of(in.results[0]) +
                                " from " + shape_of(in.operands[k]) + " ";
        for (auto [sign, n] : terms(in.operands[k])) {
          const int a = in.op == OpCode::Mul ? std::min(n, factor) : n;
          const int b = in.op == OpCode::Mul ? std::max(n, factor) : factor;
          t.emplace_back(sign, intern(key + std::to_string(a) + "," + std::to_string(b),
                                      shape_of(in.results[0])));
        }
        break;
      }
      default:
        if (!only_broadcasts(in)) return false;
        t = terms(in.operands[0]);
        break;
    }
    set_sum(in.results[0], std::move(t));
    return true;
  }

  void set_sum(ir::ValueId v, std::vector<std::pair<int, int>> t) {
    std::sort(t.begin(), t.end());
    const std::string shape = shape_of(v);
    std::ostringstream key;
    key << "sum of terms " << shape << ":";
    for (auto [sign, n] : t) key << (sign > 0 ? "+" : "-") << n;
    // (one term as itself, when it has the value's shape)
    const bool itself = t.size() == 1 && t[0].first == 1 && shapes().at(t[0].second) == shape;
    set(v, itself ? t[0].second : intern(key.str()));
    terms_[v] = std::move(t);
  }

  /// The order of a loop's carried values by their numbers, for printing.
  std::vector<size_t> carry_order(const ir::Instr &loop) const {
    std::vector<size_t> order(loop.results.size());
    std::iota(order.begin(), order.end(), 0);
    const ir::Region &r = loop.regions.at(0);
    auto key = [&](size_t k) { return std::pair(number_[loop.operands[k]], number_[r.yields[k]]); };
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return key(a) < key(b); });
    return order;
  }

 private:
  static int intern(const std::string &key) {
    return table().emplace(key, static_cast<int>(table().size())).first->second;
  }
  /// A number that stands for a value of `shape`.
  static int intern(const std::string &key, const std::string &shape) {
    const int n = intern(key);
    shapes().emplace(n, shape);
    return n;
  }
  /// The shape of the value each number stands for.
  static std::unordered_map<int, std::string> &shapes() {
    static std::unordered_map<int, std::string> s;
    return s;
  }
  const ir::Function &f_;
  const rt::Mesh &mesh_;
  Sums sums_;
  std::vector<int> number_;
  std::vector<std::optional<std::pair<int, int>>> signed_;  // Sums::Signed: sign, number
  std::vector<std::optional<std::vector<std::pair<int, int>>>> terms_;  // signed terms
  std::unordered_set<ir::ValueId> zeros_;
};

/// `f` printed after renaming: parameters sorted by name, results unnamed,
/// every other value named v0, v1, ... in the order it first appears,
/// instructions in a canonical order (depth first from the returns, operands
/// in order, those of commutative ops by value number) and the comment and
/// attributes dropped. Two functions print the same exactly when they are the
/// same program whatever their names, instruction order and the operand
/// order of commutative ops.
std::string canonical_text(const ir::Module &m, const ir::Function &f) {
  ValueNumbering numbering(m, f);
  numbering.number_function();
  ir::Function c = f;
  c.comment.clear();
  c.auto_pbroadcast = false;
  std::sort(c.params.begin(), c.params.end(), [&](const ir::Param &a, const ir::Param &b) {
    return f.values[a.value].name < f.values[b.value].name;
  });
  for (auto &r : c.results) r.name.clear();
  std::vector<bool> is_param(f.values.size(), false);
  for (const auto &p : f.params) is_param[p.value] = true;
  for (size_t v = 0; v < c.values.size(); ++v)
    if (!is_param[v]) c.values[v].name.clear();
  // The defining instruction of each value, and the canonical schedule.
  std::unordered_map<ir::ValueId, ir::Instr *> def;
  std::function<void(std::vector<ir::Instr> &)> index = [&](std::vector<ir::Instr> &body) {
    for (ir::Instr &in : body) {
      if (ValueNumbering::commutative(in.op) &&
          numbering[in.operands[1]] < numbering[in.operands[0]])
        std::swap(in.operands[0], in.operands[1]);
      if (in.op == OpCode::For) {  // carried values in order of their numbers
        const auto order = numbering.carry_order(in);
        ir::Instr sorted = in;
        ir::Region &r = sorted.regions[0];
        for (size_t j = 0; j < order.size(); ++j) {
          sorted.operands[j] = in.operands[order[j]];
          sorted.results[j] = in.results[order[j]];
          r.params[j + 1] = in.regions[0].params[order[j] + 1];
          r.yields[j] = in.regions[0].yields[order[j]];
        }
        in = std::move(sorted);
      }
      if (in.results.size() > 1 && is_combinable_collective(in.op)) {  // operands by number
        std::vector<size_t> order(in.operands.size());
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
          return numbering[in.operands[a]] < numbering[in.operands[b]];
        });
        const ir::Instr copy = in;
        for (size_t j = 0; j < order.size(); ++j) {
          in.operands[j] = copy.operands[order[j]];
          in.results[j] = copy.results[order[j]];
        }
      }
      for (auto r : in.results) def[r] = &in;
      for (auto &r : in.regions) index(r.body);
    }
  };
  index(c.body);
  std::unordered_set<const ir::Instr *> done;
  int named = 0;
  // Schedules the instructions that `v` needs into `out`; those outside
  // `block` (values a loop body reads from outside) into `outer`.
  std::function<void(ir::ValueId, const std::unordered_set<const ir::Instr *> &,
                     std::vector<ir::Instr> &, const std::function<void(ir::ValueId)> &)>
      visit = [&](ir::ValueId v, const std::unordered_set<const ir::Instr *> &block,
                  std::vector<ir::Instr> &out, const std::function<void(ir::ValueId)> &outer) {
        auto it = def.find(v);
        if (it == def.end()) return;  // a parameter
        ir::Instr *in = it->second;
        if (!block.count(in)) return outer(v);
        if (!done.insert(in).second) return;
        for (auto o : in->operands) visit(o, block, out, outer);
        for (ir::Region &r : in->regions) {
          std::unordered_set<const ir::Instr *> inner;
          for (const ir::Instr &i : r.body) inner.insert(&i);
          std::vector<ir::Instr> body;
          std::function<void(ir::ValueId)> up = [&](ir::ValueId o) { visit(o, block, out, outer); };
          for (auto y : r.yields) visit(y, inner, body, up);
          r.body = std::move(body);
        }
        for (ir::Region &r : in->regions)
          for (auto p : r.params) c.values[p].name = "z" + std::to_string(named++);
        for (auto r : in->results) c.values[r].name = "z" + std::to_string(named++);
        out.push_back(std::move(*in));
      };
  std::unordered_set<const ir::Instr *> top;
  for (const ir::Instr &i : c.body) top.insert(&i);
  std::vector<ir::Instr> body;
  std::function<void(ir::ValueId)> none = [](ir::ValueId) {};
  for (auto r : c.returns) visit(r, top, body, none);
  c.body = std::move(body);
  ir::Module alone;
  alone.meshes = m.meshes;
  alone.functions.push_back(std::move(c));
  // Names in the order they first appear in the text (a value printed as a
  // literal has a name that does not show).
  const std::string text = ir::print_module(alone);
  static const std::regex name(R"(\bz[0-9]+\b)");
  std::map<std::string, std::string> renamed;
  std::string out;
  auto last = text.cbegin();
  for (auto it = std::sregex_iterator(text.begin(), text.end(), name); it != std::sregex_iterator();
       ++it) {
    out.append(last, (*it)[0].first);
    auto [at, fresh] = renamed.emplace(it->str(), "v" + std::to_string(renamed.size()));
    out += at->second;
    last = (*it)[0].second;
  }
  out.append(last, text.cend());
  return out;
}

// ---- the properties -----------------------------------------------------------

/// print -> check strictly -> print again is the same text -> run the same bits,
/// untyped and typed. Returns the untyped printed program, compiled.
std::unique_ptr<Compilation> check_print_round_trip(const Compilation &c, uint64_t seed) {
  std::unique_ptr<Compilation> untyped;
  for (bool types : {false, true}) {
    std::string text = print(c.printable(), types);
    INFO((types ? "typed" : "untyped") << " print:\n" << text);
    auto again = compile_printed(text);
    // Printing it again (with the default options, as `spmdc print` would;
    // checked strictly, every shmap would print `[[no_auto_pbroadcast]]`).
    auto reread = compile("printed.spmd", text, /*auto_pb=*/true);
    REQUIRE(reread->ok());
    CHECK(print(reread->printable(), types) == text);
    for (int index : shmaps(*c.module)) {
      const ir::Function &f = c.module->functions[static_cast<size_t>(index)];
      auto in = random_inputs(f, seed);
      require_same_bits(run(*c.module, f.name, in), run(*again->module, f.name, in));
    }
    tally(types ? "print --types round trips" : "print round trips");
    if (!types) untyped = std::move(again);
  }
  return untyped;
}

struct Derived {
  ir::Module module;  // in memory
  std::unique_ptr<Compilation> printed;
  std::string name;
};

/// Derives, prints, re-checks strictly, re-prints (same text) and runs both
/// (same bits). Returns nothing when the transform refuses (not linear, ...).
std::optional<Derived> derive_as_source(const Compilation &c, const std::string &fn,
                                        DeriveKind kind, std::vector<std::string> wrt,
                                        uint64_t seed) {
  DeriveRequest r;
  r.kind = kind;
  r.function = fn;
  r.wrt = std::move(wrt);
  Derived d;
  try {
    d.module = derive(*c.module, r);
  } catch (const TransformError &e) {
    tally(std::string(derive_kind_name(kind)) + " refused (" + e.code + ")");
    return std::nullopt;
  }
  d.name = d.module.functions.at(0).name;
  std::string text = ir::print_module(d.module);
  INFO(derive_kind_name(kind) << " of `" << fn << "`:\n" << text);
  d.printed = compile_printed(text);
  // `spmdc print` of the derived program is idempotent. (It need not give the
  // derived text itself: reading places a constant typed varying at its use.)
  std::string reprinted = ir::print_module(d.printed->printable());
  CHECK(ir::print_module(compile_printed(reprinted)->printable()) == reprinted);
  auto in = random_inputs(d.module.functions.at(0), seed);
  require_same_bits(run(d.module, d.name, in), run(*d.printed->module, d.name, in));
  tally(std::string(derive_kind_name(kind)) + " as source");
  return d;
}

/// The text of shmap `name` in printed `text`: from `shmap name(` to its
/// closing brace (the comment above it is left out).
std::string shmap_text(const std::string &text, const std::string &name) {
  size_t at = text.find("shmap " + name + "(");
  if (at == std::string::npos) return "";
  return text.substr(at, text.find("\n}\n", at) + 3 - at);
}

/// The derivative called in the language: a shmap with the CLI's derived
/// signature whose body is `return grad(f)(its parameters)` (or jvp, vjp,
/// transpose, with `wrt`) must print the CLI's program as its callee, compute
/// the same bits, and print as source that re-checks strictly.
void check_called_in_language(const Compilation &c, const std::string &source,
                              const std::string &fn, DeriveKind kind,
                              const std::vector<std::string> &wrt, uint64_t seed) {
  DeriveRequest r;
  r.kind = kind;
  r.function = fn;
  r.wrt = wrt;
  ir::Module cli;
  try {
    cli = derive(*c.module, r);
  } catch (const TransformError &) {
    return;  // refused the same way in the language (the goldens test that)
  }
  const ir::Function &d = cli.functions.at(0);
  const std::string derived = shmap_text(ir::print_module(cli), d.name);
  std::string option;
  for (const auto &w : wrt) option += (option.empty() ? "" : ", ") + w;
  if (!option.empty()) option = ", wrt=(" + option + ")";
  std::string args;  // as printed (in memory, two parameters may share a name)
  auto cli_printed = compile_printed(ir::print_module(cli));
  const ir::Function &printed_d = cli_printed->module->functions.at(0);
  for (const auto &p : printed_d.params)
    args += (args.empty() ? "" : ", ") + printed_d.values[p.value].name;
  const std::string caller = "called_" + d.name;
  const std::string text =
      source + "\nshmap " + caller +
      derived.substr(6 + d.name.size(), derived.find(" {\n") - 6 - d.name.size()) +
      " {\n  return " + derive_kind_name(kind) + "(" + fn + option + ")(" + args + ")\n}\n";
  INFO("calling " << derive_kind_name(kind) << " in the language:\n" << text);
  auto s = compile("in_language.spmd", text, true);
  INFO(render_diagnostics(s->diags, s->sources));
  REQUIRE(s->ok());
  CHECK(shmap_text(print(s->printable(), false), d.name) == derived);
  auto in = random_inputs(d, seed);
  require_same_bits(run(*s->module, caller, in), run(cli, d.name, in));
  // The printed program re-checks strictly and runs the same bits; printing
  // that is idempotent. (As for the CLI's output, the first print need not be
  // a fixed point: reading places a constant typed varying at its use.)
  const std::string printed = print(s->printable(), false);
  auto again = compile_printed(printed);
  require_same_bits(run(*again->module, caller, in), run(cli, d.name, in));
  const std::string reprinted = print(again->printable(), false);
  CHECK(print(compile_printed(reprinted)->printable(), false) == reprinted);
  tally(std::string(derive_kind_name(kind)) + " called in the language");
}

/// The float parameters of `f` (what jvp/vjp/grad differentiate by default).
std::vector<size_t> float_params(const ir::Function &f) {
  std::vector<size_t> out;
  for (size_t k = 0; k < f.params.size(); ++k)
    if (rt::is_float(f.type(f.params[k].value).dtype)) out.push_back(k);
  return out;
}

bool close(double a, double b) {
  return std::abs(a - b) <= kFdTolerance * std::max({1.0, std::abs(a), std::abs(b)});
}

/// f(x + h v) - f(x - h v) over 2h, for each result; tries smaller steps
/// when the first disagrees with `expected` (a kink of abs/max/where crossed).
std::vector<rt::Tensor> central_difference(const Compilation &c, const std::string &fn,
                                           const std::vector<rt::Tensor> &x,
                                           const std::vector<rt::Tensor> &v, double h) {
  std::vector<rt::Tensor> plus = x, minus = x;
  for (size_t k = 0; k < x.size(); ++k)
    if (v[k].defined()) {
      plus[k] = axpy(h, v[k], x[k]);
      minus[k] = axpy(-h, v[k], x[k]);
    }
  auto a = run(*c.module, fn, plus), b = run(*c.module, fn, minus);
  REQUIRE(a.error.empty());
  REQUIRE(b.error.empty());
  std::vector<rt::Tensor> out;
  for (size_t k = 0; k < a.outputs.size(); ++k) {
    rt::Tensor d = a.outputs[k].clone();
    for (int64_t i = 0; i < d.numel(); ++i)
      d.set(i, (a.outputs[k].get(i) - b.outputs[k].get(i)) / (2 * h));
    out.push_back(d);
  }
  return out;
}

/// <w, J v> by central differences, for result weights w (undefined = 0),
/// against the derivative's `expected`: it matches at one of three steps;
/// or the differences do not converge (no two steps agree: the line x + t v
/// crosses a kink or jump of abs, max, where, ... within the steps, as when
/// `where(pmean(p, a) > p, ...)` compares values equal up to rounding), and
/// the derivative does not exist there: counted, not compared; or it is a
/// mismatch.
bool matches_fd(const Compilation &c, const std::string &fn, const std::vector<rt::Tensor> &x,
                const std::vector<rt::Tensor> &v, const std::vector<rt::Tensor> &w,
                double expected) {
  std::vector<double> got;
  for (double h : {1e-6, 1e-7, 1e-5}) {
    auto fd = central_difference(c, fn, x, v, h);
    double g = 0;
    for (size_t k = 0; k < w.size(); ++k)
      if (w[k].defined()) g += dot(w[k], fd[k]);
    if (close(g, expected)) return true;
    got.push_back(g);
  }
  if (!close(got[0], got[1]) && !close(got[0], got[2]) && !close(got[1], got[2])) {
    tally("derivatives not compared: finite differences do not converge (a kink)");
    return true;
  }
  UNSCOPED_INFO("finite differences give " << got[0] << " (steps 1e-6; " << got[1] << " at 1e-7, "
                                           << got[2] << " at 1e-5), the derivative " << expected);
  return false;
}

/// jvp, vjp and grad of an f64 program, printed and re-read, against finite
/// differences (and each other, by the dot-product identity).
void check_derivatives(const Compilation &c, const std::string &fn, uint64_t seed) {
  const ir::Function &f = c.module->functions[static_cast<size_t>(c.module->find_function(fn))];
  auto wrt = float_params(f);
  if (wrt.empty()) return;
  auto x = random_inputs(f, seed);
  std::vector<rt::Tensor> v(x.size());
  for (size_t k : wrt) v[k] = rt::random_tensor(x[k].dtype(), x[k].shape(), seed * 31 + k);
  auto y = run(*c.module, fn, x);
  if (!y.error.empty()) return;
  const size_t nr = y.outputs.size();
  std::vector<rt::Tensor> ybar(nr);
  for (size_t k = 0; k < nr; ++k)
    if (rt::is_float(y.outputs[k].dtype()))
      ybar[k] = rt::random_tensor(y.outputs[k].dtype(), y.outputs[k].shape(), seed * 37 + k);

  if (auto jvp = derive_as_source(c, fn, DeriveKind::Jvp, {}, seed)) {
    std::vector<rt::Tensor> in = x;
    for (size_t k : wrt) in.push_back(v[k]);
    auto out = run(*jvp->printed->module, jvp->name, in);
    INFO(out.error);
    REQUIRE(out.error.empty());
    REQUIRE(out.outputs.size() == 2 * nr);
    double expected = 0;
    for (size_t k = 0; k < nr; ++k)
      if (ybar[k].defined()) expected += dot(ybar[k], out.outputs[nr + k]);
    CHECK(matches_fd(c, fn, x, v, ybar, expected));
    tally("jvp checked against finite differences");
  }
  if (auto vjp = derive_as_source(c, fn, DeriveKind::Vjp, {}, seed)) {
    std::vector<rt::Tensor> in = x;
    for (size_t k = 0; k < nr; ++k)
      if (ybar[k].defined()) in.push_back(ybar[k]);
    auto out = run(*vjp->printed->module, vjp->name, in);
    INFO(out.error);
    REQUIRE(out.error.empty());
    REQUIRE(out.outputs.size() == nr + wrt.size());
    double expected = 0;  // <xbar, v> = <ybar, J v>
    for (size_t j = 0; j < wrt.size(); ++j) expected += dot(out.outputs[nr + j], v[wrt[j]]);
    CHECK(matches_fd(c, fn, x, v, ybar, expected));
    tally("vjp checked against finite differences");
  }
  if (nr > 0 && y.outputs[0].rank() == 0 && rt::is_float(y.outputs[0].dtype())) {
    if (auto grad = derive_as_source(c, fn, DeriveKind::Grad, {}, seed)) {
      auto out = run(*grad->printed->module, grad->name, x);
      INFO(out.error);
      REQUIRE(out.error.empty());
      REQUIRE(out.outputs.size() == nr + wrt.size());
      double expected = 0;
      for (size_t j = 0; j < wrt.size(); ++j) expected += dot(out.outputs[nr + j], v[wrt[j]]);
      std::vector<rt::Tensor> w(nr);
      w[0] = rt::Tensor::full(y.outputs[0].dtype(), {}, 1.0);
      CHECK(matches_fd(c, fn, x, v, w, expected));
      tally("grad checked against finite differences");
    }
  }
}

/// The transpose in `linear` (printed, re-read) satisfies <ct, f(x)> = <f^T(ct), x>,
/// and transposing the printed transpose gives the original program back.
/// True when it came back as the same text (after renaming), not only as the
/// same sums associated differently.
bool check_transpose(const Compilation &c, const std::string &fn,
                     const std::vector<std::string> &linear, uint64_t seed) {
  auto t = derive_as_source(c, fn, DeriveKind::Transpose, linear, seed);
  if (!t) return false;
  const ir::Function &f = c.module->functions[static_cast<size_t>(c.module->find_function(fn))];
  std::vector<bool> is_linear(f.params.size(), linear.empty());
  for (size_t k = 0; k < f.params.size(); ++k)
    for (const auto &n : linear)
      is_linear[k] = is_linear[k] || f.values[f.params[k].value].name == n;
  auto x = random_inputs(f, seed);
  auto fx = run(*c.module, fn, x);
  REQUIRE(fx.error.empty());
  std::vector<rt::Tensor> in;
  for (size_t k = 0; k < f.params.size(); ++k)
    if (!is_linear[k]) in.push_back(x[k]);
  double lhs = 0, scale = 0;
  for (size_t k = 0; k < fx.outputs.size(); ++k) {
    auto ct = rt::random_tensor(fx.outputs[k].dtype(), fx.outputs[k].shape(), seed * 41 + k);
    lhs += dot(ct, fx.outputs[k]);
    scale += std::sqrt(dot(ct, ct) * dot(fx.outputs[k], fx.outputs[k]));
    in.push_back(ct);
  }
  auto xt = run(*t->printed->module, t->name, in);
  REQUIRE(xt.error.empty());
  double rhs = 0;
  size_t j = 0;
  for (size_t k = 0; k < f.params.size(); ++k)
    if (is_linear[k]) rhs += dot(x[k], xt.outputs[j++]);
  INFO("<ct, f(x)> = " << lhs << ", <f^T(ct), x> = " << rhs);
  CHECK(std::abs(lhs - rhs) <= 1e-9 * std::max(1.0, scale));
  tally("transpose checked by the dot-product identity");

  // Transposing the printed transpose in its cotangent inputs gives f back.
  std::vector<std::string> cotangents;
  const ir::Function &ft = t->printed->module->functions.at(0);
  for (size_t k = in.size() - fx.outputs.size(); k < ft.params.size(); ++k)
    cotangents.push_back(ft.values[ft.params[k].value].name);
  auto tt = derive_as_source(*t->printed, t->name, DeriveKind::Transpose, cotangents, seed);
  REQUIRE(tt);
  bool same_text = false;
  // The same program, printed after renaming: the original as derive() sees
  // it (derivable_form: inlined, combined collectives split, simplified,
  // peepholes rewritten) and the printed transpose of the printed transpose
  // with its combined collectives split too. (Which independent collectives
  // derive combines is a greedy choice in instruction order, not part of
  // transposing: seed 2003032 combines two all_gathers in the original and,
  // transposed twice, two psums, where a dependency allows only one pair.)
  // The exceptions
  // (docs/transposition.md, "Transposing twice"): a sum of three or more
  // terms associated differently, or a factor applied to a sum rather than
  // to each term: a different rounding, so no exact rewrite gives one from
  // the other. Anything an exact identity of sums would make equal
  // (ValueNumbering::Sums::Signed) is a missed rewrite, and fails.
  ir::Function flat = derivable_form(*c.module, f);
  make_pbroadcasts_explicit(*c.module, flat, ir::Origin::Transform);
  ir::Function ftt = tt->module.functions.at(0);
  split_collectives(ftt);
  const std::string original = canonical_text(*c.module, flat);
  const std::string twice = canonical_text(tt->module, ftt);
  if (original == twice) {
    tally("transpose twice: the same program (printed text, after renaming)");
    same_text = true;
  } else {
    INFO("the original:\n" << original << "transposed twice:\n" << twice);
    auto same = [&](ValueNumbering::Sums mode) {
      ValueNumbering a(*c.module, flat, mode), b(tt->module, ftt, mode);
      a.number_function();
      b.number_function();
      return a.returns() == b.returns();
    };
    INFO("equal but for exact identities of sums (a rewrite is missing): "
         << same(ValueNumbering::Sums::Signed));
    CHECK_FALSE(same(ValueNumbering::Sums::Signed));
    if (same(ValueNumbering::Sums::Associated)) {
      tally("transpose twice: the same terms, a sum of three or more associated differently");
    } else {
      CHECK(same(ValueNumbering::Sums::Factored));
      tally("transpose twice: the same terms, a factor applied to their sum, not to each");
    }
    if (std::getenv("DUMP_TT"))
      std::cerr << "=====DIFF (seed " << seed << ")\n" << original << "-----\n" << twice << "\n";
  }
  std::vector<rt::Tensor> tt_in;  // f^T^T takes the constant parameters first
  for (size_t k = 0; k < f.params.size(); ++k)
    if (!is_linear[k]) tt_in.push_back(x[k]);
  for (size_t k = 0; k < f.params.size(); ++k)
    if (is_linear[k]) tt_in.push_back(x[k]);
  auto again = run(*tt->printed->module, tt->name, tt_in);
  REQUIRE(again.error.empty());
  REQUIRE(again.outputs.size() == fx.outputs.size());
  for (size_t k = 0; k < again.outputs.size(); ++k)
    for (int64_t i = 0; i < again.outputs[k].numel(); ++i)
      CHECK(again.outputs[k].get(i) == Approx(fx.outputs[k].get(i)).epsilon(1e-9).margin(1e-12));
  tally("transpose twice: same values");
  return same_text;
}

/// Generator options for programs of `flavor` in f64 (derivatives are compared in f64).
testgen::GeneratorOptions f64_programs(testgen::Flavor flavor) {
  testgen::GeneratorOptions o;
  o.flavor = flavor;
  o.f64 = true;
  return o;
}

std::string f32_to_f64(std::string text) {
  for (size_t p = 0; (p = text.find("f32", p)) != std::string::npos; p += 3)
    text.replace(p, 3, "f64");
  return text;
}

std::vector<std::filesystem::path> corpus() {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (const char *dir : {"samples", "tests"})
    for (const auto &e : fs::recursive_directory_iterator(fs::path(SPMDC_SOURCE_DIR) / dir)) {
      const fs::path &p = e.path();
      if (p.extension() != ".spmd" || p.filename().string().rfind("fail_", 0) == 0) continue;
      if (p.string().find("/modules/") != std::string::npos) continue;
      files.push_back(p);
    }
  std::sort(files.begin(), files.end());
  return files;
}

std::string read(const std::filesystem::path &p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("samples and test programs print as source that re-checks strictly and runs the same",
          "[roundtrip][corpus]") {
  for (const auto &path : corpus()) {
    INFO(path.string());
    auto c = std::make_unique<Compilation>();
    compile_file(*c, path.string(), CompileOptions{});
    if (!c->ok() || !c->module) continue;  // e.g. a test of `run` errors
    tally("corpus files");
    check_print_round_trip(*c, 3);
    for (int index : shmaps(*c->module)) {
      const std::string fn = c->module->functions[static_cast<size_t>(index)].name;
      tally("corpus shmaps");
      for (DeriveKind k :
           {DeriveKind::Transpose, DeriveKind::Jvp, DeriveKind::Vjp, DeriveKind::Grad})
        derive_as_source(*c, fn, k, {}, 5);
    }
    // Derivatives against finite differences, in f64 where the program allows it.
    const std::string text64 = f32_to_f64(read(path));
    if (text64.find("bf16") != std::string::npos) continue;  // rounds: no f64 derivative
    auto c64 = compile(path.string(), text64, true);
    if (!c64->ok() || !c64->module) continue;
    tally("corpus files also checked in f64");
    for (int index : shmaps(*c64->module)) {
      const std::string fn = c64->module->functions[static_cast<size_t>(index)].name;
      check_derivatives(*c64, fn, 7);
      check_transpose(*c64, fn, {}, 9);
    }
  }
}

TEST_CASE("generated programs print as source that re-checks strictly and runs the same",
          "[roundtrip][generated]") {
  for (int i = 0; i < g_programs; ++i) {
    const uint64_t seed = g_seed + static_cast<uint64_t>(i);
    auto p = testgen::generate_program(seed);
    INFO("generated program (seed " << seed << "):\n" << p.source);
    auto c = compile("generated.spmd", p.source, true);
    INFO(render_diagnostics(c->diags, c->sources));
    REQUIRE(c->ok());
    check_print_round_trip(*c, seed);
    // Derived programs are source too (most of these programs are not
    // linear, many have an op with no derivative: refusals are counted).
    for (DeriveKind k : {DeriveKind::Transpose, DeriveKind::Jvp, DeriveKind::Vjp, DeriveKind::Grad})
      derive_as_source(*c, "f", k, {}, seed);
    tally("generated programs");
    tally_features(p);
  }
}

TEST_CASE("derivatives of generated programs are source and match finite differences",
          "[roundtrip][generated]") {
  const testgen::GeneratorOptions o = f64_programs(testgen::Flavor::Differentiable);
  for (int i = 0; i < g_programs; ++i) {
    const uint64_t seed = g_seed + 1000000 + static_cast<uint64_t>(i);
    auto p = testgen::generate_program(seed, o);
    INFO("generated program (seed " << seed << ", differentiable):\n" << p.source);
    auto c = compile("generated.spmd", p.source, true);
    INFO(render_diagnostics(c->diags, c->sources));
    REQUIRE(c->ok());
    check_print_round_trip(*c, seed);
    check_derivatives(*c, "f", seed);
    for (DeriveKind kind : {DeriveKind::Jvp, DeriveKind::Vjp, DeriveKind::Grad})
      check_called_in_language(*c, p.source, "f", kind, {}, seed);
    tally("generated differentiable programs");
    tally_features(p);
  }
}

TEST_CASE("finite differences across a kink are recognised, not compared",
          "[roundtrip][generated]") {
  // Seeds the 10,000-program sweep flagged: `where(v1 > p2, ...)` with
  // v1 = pmean(p2, a), or `where(v1 > v2, ...)` with v1 and v2 psum_scatters of
  // p0 and of pmean(p0, a), compare values equal up to rounding, so every step
  // of the finite differences flips the comparison (a jump). The derivatives are still
  // printed, re-checked and run; only the comparison with finite differences
  // is skipped, and counted.
  const testgen::GeneratorOptions o = f64_programs(testgen::Flavor::Differentiable);
  for (uint64_t seed : {1000467, 1005285}) {
    auto p = testgen::generate_program(seed, o);
    INFO("generated program (seed " << seed << ", differentiable):\n" << p.source);
    REQUIRE(p.source.find("where(") != std::string::npos);
    auto c = compile("generated.spmd", p.source, true);
    REQUIRE(c->ok());
    const int before =
        g_tally["derivatives not compared: finite differences do not converge (a kink)"];
    check_derivatives(*c, "f", seed);
    CHECK(g_tally["derivatives not compared: finite differences do not converge (a kink)"] >
          before);
  }
}

TEST_CASE("transposes of generated linear programs are source and transpose back",
          "[roundtrip][generated]") {
  const testgen::GeneratorOptions o = f64_programs(testgen::Flavor::Linear);
  for (int i = 0; i < g_programs; ++i) {
    const uint64_t seed = g_seed + 2000000 + static_cast<uint64_t>(i);
    auto p = testgen::generate_program(seed, o);
    INFO("generated program (seed " << seed << ", linear in " << p.linear_params.size()
                                    << " parameters):\n"
                                    << p.source);
    auto c = compile("generated.spmd", p.source, true);
    INFO(render_diagnostics(c->diags, c->sources));
    REQUIRE(c->ok());
    check_print_round_trip(*c, seed);
    check_transpose(*c, "f", p.linear_params, seed);
    check_called_in_language(*c, p.source, "f", DeriveKind::Transpose, p.linear_params, seed);
    tally("generated linear programs");
    tally_features(p);
  }
}

TEST_CASE("linear programs the sweep found transposing back differently now transpose back",
          "[roundtrip][generated]") {
  // Seeds of the 10,000-program sweep whose transpose of the transpose was
  // neither the same text nor the same sums: 2007008, a loop adding a
  // broadcast slice of p0 to a carry that starts from p0 * 2 (transposed,
  // the loop adds a hoisted sum to a carry from zeros; transposed back, it
  // started from zeros and added p0 * 2 after the loop); 2008814,
  // `dynamic_update_slice(u, b, i) + v` (transposed back, v's block and the
  // rest were added in separately). And seeds that came back the same but
  // for exact identities (docs/transposition.md, "Transposing twice"):
  // 2000925, a constant index moved out of a loop and written again after it
  // (simplify); 2001598, `-p2 - p2` as `-(p2 + p2)`; 2000227, `(p0 - m)[:, 8:]`
  // as `p0[:, 8:] + (-m)[:, 8:]`; 2001370, `where(c, -p, u) - v` as
  // `(where(c, 0, u) - v) + where(c, -p, 0)`; 2005120, `concat(a, b) - p` as
  // `(pad(b) - p) + pad(a)`; 2007259, a broadcast_to a peephole made equal
  // to another; 2006910, `v0 + broadcast_to(v0, (4, 4))` for a [1, 4] v0 as
  // `broadcast_to(sum(v0, axes=0) + reshape(v0, (4,)), (4, 4))`
  // (hoist_broadcasts); 2003032, two all_gathers combined in the original,
  // two psums transposed twice (compared with combined collectives split).
  // All now come back as the same text.
  const testgen::GeneratorOptions o = f64_programs(testgen::Flavor::Linear);
  for (uint64_t seed :
       {2007008, 2008814, 2000925, 2001598, 2000227, 2001370, 2005120, 2007259, 2006910, 2003032}) {
    auto p = testgen::generate_program(seed, o);
    INFO("generated program (seed " << seed << ", linear):\n" << p.source);
    auto c = compile("generated.spmd", p.source, true);
    REQUIRE(c->ok());
    CHECK(check_transpose(*c, "f", p.linear_params, seed));
  }
}

int main(int argc, char *argv[]) {
  Catch::Session session;
  using Catch::clara::Opt;
  auto cli = session.cli() |
             Opt(g_seed, "seed")["--seed"]("first seed of the program generator (default 1)") |
             Opt(g_programs, "count")["--programs"](
                 "generated programs per flavor: general, differentiable, linear (default 200)");
  session.cli(cli);
  if (int rc = session.applyCommandLine(argc, argv)) return rc;
  int result = session.run();
  std::cout << "\nexercised (seed " << g_seed << ", " << g_programs
            << " generated programs per flavor):\n";
  for (const auto &[what, n] : g_tally) std::cout << "  " << n << "  " << what << "\n";
  return result;
}
