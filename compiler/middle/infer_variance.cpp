// middle/infer_variance.cpp — see infer_variance.h for the algorithm.
//
// The pass walks each body block by block. A `for` loop is typed by a
// fixpoint: the carried values start with their initial values' variance;
// the body is typed with that assumption, and every carried value whose next
// value varies along more axes gets them added; this repeats until nothing
// changes (at most one round per mesh axis). Then the initial values are
// lifted to the joined variance and the body is typed for good.
#include "middle/infer_variance.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>

#include "ir/builder.h"
#include "ops/variance_rules.h"
#include "transforms/dce.h"
#include "transforms/derived_signature.h"

namespace spmd {
namespace {

/// What the origin tracer needs to know about the instruction defining a value.
/// Its operands and axes are ranges of FunctionState::def_operands / def_axes.
struct DefInfo {
  bool known = false;  // false: no instruction of the function defines it (yet)
  OpCode op = OpCode::Constant;
  uint32_t operands_at = 0, operands_size = 0;
  uint32_t axes_at = 0, axes_size = 0;
  SourceSpan span;
};

class VarianceInference {
 public:
  VarianceInference(ir::Module &module, DiagnosticEngine &diags)
      : module_(module),
        diags_(&diags),
        top_diags_(&diags),
        pristine_(pristine_copies(module.functions)) {}

  void run() {
    shmap_state_.assign(pristine_.size(), ShmapState::Pending);
    for (size_t i = 0; i < pristine_.size(); ++i)
      if (pristine_[i].kind == ir::FunctionKind::Shmap) process_shmap(i);
    // Def instances that no shmap reached keep their (invariant) typing.
  }
  DerivedCalls take_derived_calls() { return std::move(calls_); }

 private:
  enum class ShmapState : uint8_t { Pending, InProgress, Ok, Failed };

  /// Types shmap `i` (once; a derivative of it may need it before its turn).
  /// False when it has errors. Its diagnostics are never muted: its typing
  /// does not depend on the caller's.
  bool process_shmap(size_t i) {
    if (shmap_state_[i] == ShmapState::InProgress) return false;  // a cycle, reported by lowering
    if (shmap_state_[i] != ShmapState::Pending) return shmap_state_[i] == ShmapState::Ok;
    shmap_state_[i] = ShmapState::InProgress;
    DiagnosticEngine *caller_diags = diags_;
    diags_ = top_diags_;
    const int caller_muted = muted_;
    muted_ = 0;
    std::vector<DiagnosticLabel> caller_notes = std::move(call_notes_);
    call_notes_.clear();
    int errors_before = diags_->num_errors();
    // A shmap is typed once, so it is taken from the module, which holds its
    // signature meanwhile and gets the typed function back below.
    ir::Function f = std::move(module_.functions[i]);
    module_.functions[i] = pristine_[i];
    std::vector<AxisSet> param_var;
    for (const auto &p : f.params) param_var.push_back(spec_axes(p.spec));
    const ir::Function *caller_shmap = shmap_;
    shmap_ = &f;
    process_function(f, param_var, f.auto_pbroadcast);
    shmap_ = caller_shmap;
    module_.functions[i] = std::move(f);
    bool ok = diags_->num_errors() == errors_before;
    diags_ = caller_diags;
    muted_ = caller_muted;
    call_notes_ = std::move(caller_notes);
    shmap_state_[i] = ok ? ShmapState::Ok : ShmapState::Failed;
    return ok;
  }
  /// The functions as lowered, for typing: a def's body is typed anew for each
  /// variance of its arguments; of a shmap (typed once, by process_shmap, and
  /// only its kind read here) just the signature.
  static std::vector<ir::Function> pristine_copies(const std::vector<ir::Function> &functions) {
    std::vector<ir::Function> out;
    out.reserve(functions.size());
    for (const ir::Function &f : functions)
      out.push_back(f.kind == ir::FunctionKind::Shmap ? f.without_body() : f);
    return out;
  }

  static AxisSet spec_axes(const rt::PartitionSpec &spec) {
    AxisSet s;
    for (const auto &dim : spec) s = s | AxisSet::of_all(dim);
    return s;
  }

  static std::string axes_names(AxisSet s, const rt::Mesh &mesh) {
    std::string out;
    auto axes = s.axes();
    for (size_t i = 0; i < axes.size(); ++i) {
      if (i) out += i + 1 == axes.size() ? " and " : ", ";
      out += "`" + mesh.axes()[axes[i]].name + "`";
    }
    return out;
  }

  static std::string pbroadcast_text(const std::string &value, AxisSet axes, const rt::Mesh &mesh) {
    return "pbroadcast(" + (value.empty() ? std::string("x") : value) + ", " +
           axis_list_str(axes.axes(), mesh) + ")";
  }

  // ------------------------------------------------------------ per function

  /// State while typing one function. The per-value tables are indexed by
  /// ValueId and grow with the function's values.
  struct FunctionState {
    ir::Function &f;
    const rt::Mesh &mesh;
    bool auto_pb;
    std::vector<DefInfo> defs;
    std::vector<ir::ValueId> def_operands;
    std::vector<int> def_axes;
    std::vector<ir::ValueId> remap;  // kNoValue: not renamed
    /// Lifted copies, one map per open block (inner blocks see outer lifts).
    std::vector<std::map<std::pair<ir::ValueId, uint64_t>, ir::ValueId>> lifted;
    std::vector<int32_t> creation_of;  // index into `creations`, or -1
    std::vector<ir::Instr> creations;  // creation instructions
  };

  template <typename T>
  static T &entry(std::vector<T> &table, ir::ValueId v, const T &fill) {
    size_t i = static_cast<size_t>(v);
    if (i >= table.size()) table.resize(std::max(i + 1, table.size() + table.size() / 2), fill);
    return table[i];
  }
  static void set_def(FunctionState &st, ir::ValueId v, OpCode op,
                      std::span<const ir::ValueId> operands, std::span<const int> axes,
                      SourceSpan span) {
    DefInfo info{true,
                 op,
                 static_cast<uint32_t>(st.def_operands.size()),
                 static_cast<uint32_t>(operands.size()),
                 static_cast<uint32_t>(st.def_axes.size()),
                 static_cast<uint32_t>(axes.size()),
                 span};
    st.def_operands.insert(st.def_operands.end(), operands.begin(), operands.end());
    st.def_axes.insert(st.def_axes.end(), axes.begin(), axes.end());
    entry(st.defs, v, DefInfo{}) = info;
  }
  static const DefInfo *def_of(const FunctionState &st, ir::ValueId v) {
    size_t i = static_cast<size_t>(v);
    return i < st.defs.size() && st.defs[i].known ? &st.defs[i] : nullptr;
  }
  static void set_creation(FunctionState &st, ir::ValueId v, ir::Instr in) {
    entry(st.creation_of, v, -1) = static_cast<int32_t>(st.creations.size());
    st.creations.push_back(std::move(in));
  }

  void process_function(ir::Function &f, const std::vector<AxisSet> &param_var, bool auto_pb) {
    FunctionState st{f, module_.mesh_of(f), auto_pb, {}, {}, {}, {}, {}, {}, {}};
    st.defs.resize(f.values.size());
    st.remap.resize(f.values.size(), ir::kNoValue);
    st.creation_of.resize(f.values.size(), -1);
    for (size_t i = 0; i < f.params.size(); ++i) f.type(f.params[i].value).variance = param_var[i];
    std::vector<ir::Instr> old_body = std::move(f.body);
    f.body.clear();
    f.body.reserve(old_body.size() + old_body.size() / 8 + 8);  // room for a few lifts
    st.lifted.emplace_back();
    process_block(st, old_body, f.body);
    for (size_t k = 0; k < f.returns.size(); ++k) f.returns[k] = resolve(st, f.returns[k]);
    if (f.kind == ir::FunctionKind::Shmap) check_returns(st, f.body);
    st.lifted.pop_back();
    eliminate_dead_code(f);  // constants re-typed with another variance leave copies behind
  }

  static ir::ValueId resolve(const FunctionState &st, ir::ValueId v) {
    for (int i = 0; i < 10000; ++i) {
      size_t k = static_cast<size_t>(v);
      if (k >= st.remap.size() || st.remap[k] == ir::kNoValue) return v;
      v = st.remap[k];
    }
    return v;
  }

  static bool defined_by_creation(const FunctionState &st, ir::ValueId v) {
    const DefInfo *d = def_of(st, v);
    return d != nullptr && op_kind(d->op) == OpKind::Creation;
  }

  /// Constants may be re-typed with any variance even when pbroadcast
  /// insertion is off: that inserts no op, it only types a literal.
  static bool liftable(const FunctionState &st, ir::ValueId v) {
    return st.auto_pb || defined_by_creation(st, v);
  }

  static std::string name_of(const FunctionState &st, ir::ValueId v) {
    const std::string &n = st.f.values[v].name;
    return n.empty() ? std::string("the operand") : "`" + n + "`";
  }

  /// Lifts `v` to vary along `target` (a superset), appending to `body`.
  ir::ValueId lift(FunctionState &st, std::vector<ir::Instr> &body, ir::ValueId v, AxisSet target,
                   SourceSpan span) {
    ir::Function &f = st.f;
    AxisSet missing = target - f.type(v).variance;
    if (missing.empty()) return v;
    auto key = std::make_pair(v, missing.bits());
    for (auto it = st.lifted.rbegin(); it != st.lifted.rend(); ++it) {
      auto found = it->find(key);
      if (found != it->end()) return found->second;
    }
    ir::ValueId r;
    if (defined_by_creation(st, v)) {
      // A constant is the same everywhere, so it may be typed with any
      // variance: re-create it with the wanted one instead of a pbroadcast.
      ir::Instr copy =
          st.creations.at(static_cast<size_t>(st.creation_of.at(static_cast<size_t>(v))));
      r = f.add_value(f.type(v).with_variance(target), f.values[v].name, span);
      copy.results = {r};
      copy.origin = ir::Origin::Lowering;
      set_creation(st, r, copy);
      body.push_back(std::move(copy));
    } else {
      ir::Builder builder(module_, f, body);
      r = builder.pbroadcast(v, missing.axes(), span, ir::Origin::AutoPbroadcast);
    }
    set_def(st, r, body.back().op, body.back().operands,
            collective_axes(body.back().op, body.back().attrs), span);
    if (!f.values[v].name.empty()) f.values[r].name = f.values[v].name;
    st.lifted.back()[key] = r;
    return r;
  }

  /// Where `value` got its variance along `axis`: walks back to a parameter or
  /// to the op that introduced it, and notes on the way the first `if`/`where`
  /// whose condition varies (the predicate makes the chosen value vary).
  void add_origin_notes(Diagnostic &diag, const FunctionState &st, ir::ValueId value, int axis) {
    const ir::Function &f = st.f;
    const std::string &axis_name = st.mesh.axes()[axis].name;
    bool predicate_noted = false;
    for (int steps = 0; steps < 10000; ++steps) {
      for (const auto &p : f.params)
        if (p.value == value) {
          diag.note(p.span, "`" + f.values[value].name + "` varies along `" + axis_name +
                                "` because of this argument");
          return;
        }
      const DefInfo *def = def_of(st, value);
      if (def == nullptr) break;
      const DefInfo &d = *def;
      std::span<const ir::ValueId> operands(st.def_operands.data() + d.operands_at,
                                            d.operands_size);
      std::span<const int> axes(st.def_axes.data() + d.axes_at, d.axes_size);
      bool introduces =
          d.op == OpCode::Pbroadcast || d.op == OpCode::Pscatter || d.op == OpCode::AxisIndex;
      if (introduces && std::find(axes.begin(), axes.end(), axis) != axes.end()) {
        diag.note(d.span, std::string("`") + std::string(op_spelling(d.op)) +
                              "` makes the value vary along `" + axis_name + "` here");
        return;
      }
      if (d.op == OpCode::Select && !predicate_noted &&
          f.type(operands[0]).variance.contains(axis)) {
        std::string who = f.values[value].name.empty() ? std::string("the value")
                                                       : "`" + f.values[value].name + "`";
        diag.note(d.span, "this condition varies along `" + axis_name + "`, so the devices along " +
                              "it may choose differently and " + who + " varies too");
        predicate_noted = true;
      }
      ir::ValueId next = ir::kNoValue;
      for (ir::ValueId o : operands)
        if (f.type(o).variance.contains(axis)) {
          next = o;
          break;
        }
      if (next == ir::kNoValue) {
        diag.note(d.span, "this value varies along `" + axis_name + "`");
        return;
      }
      value = next;
    }
    diag.note(f.values[value].span, "this value varies along `" + axis_name + "`");
  }

  /// The end of a help line for code that needs a pbroadcast while automatic
  /// insertion is off: how to turn it back on.
  std::string enable_auto_text() const {
    if (shmap_ && shmap_->no_auto_pbroadcast_span.valid())
      return "or remove `[[no_auto_pbroadcast]]` from `" + shmap_->name +
             "` to let spmdc insert it";
    return "or run without --no-auto-pbroadcast to let spmdc insert it";
  }
  /// Points at the attribute that turned automatic insertion off, if any.
  void note_no_auto(Diagnostic &d) const {
    if (shmap_ && shmap_->no_auto_pbroadcast_span.valid())
      d.note(shmap_->no_auto_pbroadcast_span,
             "automatic pbroadcast insertion is off for `" + shmap_->name + "` here");
  }

  // ------------------------------------------------------------ blocks

  void process_block(FunctionState &st, std::vector<ir::Instr> &old_body,
                     std::vector<ir::Instr> &body) {
    for (ir::Instr &in : old_body) process_instr(st, std::move(in), body);
  }

  void process_instr(FunctionState &st, ir::Instr in, std::vector<ir::Instr> &body) {
    ir::Function &f = st.f;
    const rt::Mesh &mesh = st.mesh;
    for (auto &o : in.operands) o = resolve(st, o);
    AxisSet uni;
    for (auto o : in.operands) uni = uni | f.type(o).variance;
    switch (op_kind(in.op)) {
      case OpKind::Control:
        process_for(st, std::move(in), body);
        return;
      case OpKind::Effect:
        break;  // print: each operand keeps its own variance (it prints once per device it varies on)
      case OpKind::Call: {
        if (in.attrs.call().derived >= 0 && !resolve_derived_call(st, in)) {
          for (auto r : in.results) f.type(r).variance = AxisSet();  // errors reported
          body.push_back(std::move(in));
          return;
        }
        if (module_.functions[static_cast<size_t>(in.attrs.call().callee)].kind ==
            ir::FunctionKind::Shmap) {
          type_shmap_call(st, in, body);
          break;
        }
        if (static_cast<size_t>(in.attrs.call().callee) >= pristine_.size()) {
          type_derived_def_call(st, in, body);
          break;
        }
        std::vector<AxisSet> vars;
        for (auto o : in.operands) vars.push_back(f.type(o).variance);
        int callee = specialize(in.attrs.call().callee, vars, st.auto_pb, in.span);
        in.attrs.call().callee = callee;
        const ir::Function &cf = module_.functions[static_cast<size_t>(callee)];
        for (size_t k = 0; k < in.results.size() && k < cf.returns.size(); ++k)
          f.type(in.results[k]).variance = cf.type(cf.returns[k]).variance;
        break;
      }
      case OpKind::Collective: {
        AxisSet axes = AxisSet::of_all(in.attrs.collective().axes);
        AxisRequirement req = operand_requirement(in.op);
        std::string op(op_spelling(in.op));
        if (req == AxisRequirement::Varying) {
          for (ir::ValueId &operand : in.operands) {  // several for psum((a, b), axes)
            ir::ValueId x = operand;
            AxisSet missing = axes - f.type(x).variance;
            if (!missing.empty()) {
              if (st.auto_pb) {
                operand = lift(st, body, x, f.type(x).variance | missing, in.span);
              } else {
                Diagnostic &d =
                    diags_
                        ->error("invariant-operand", in.span,
                                "`" + op + "` needs an operand that varies along " +
                                    axes_names(missing, mesh) + ", but " + name_of(st, x) +
                                    " is the same on every device along " +
                                    (missing.size() == 1 ? "it" : "them"))
                        .help("write `" + op + "(" +
                              pbroadcast_text(f.values[x].name, missing, mesh) + ", ...)`, " +
                              enable_auto_text());
                note_no_auto(d);
              }
            }
          }
        } else if (req == AxisRequirement::Invariant) {
          ir::ValueId x = in.operands[0];
          AxisSet extra = axes & f.type(x).variance;
          if (!extra.empty()) {
            auto &d = diags_->error("varying-operand", in.span,
                                    "`" + op + "` needs an operand that is the same on every " +
                                        "device along " + axes_names(extra, mesh) + ", but " +
                                        name_of(st, x) + " varies along " +
                                        (extra.size() == 1 ? "it" : "them"));
            add_origin_notes(d, st, x, extra.axes()[0]);
            d.fix = in.op == OpCode::Pbroadcast
                        ? "the value already varies there; remove the pbroadcast"
                        : "use a collective that takes a varying operand (e.g. psum_scatter)";
          }
        }
        break;
      }
      default: {
        for (auto &o : in.operands) {
          if (f.type(o).variance == uni) continue;
          if (liftable(st, o)) {
            o = lift(st, body, o, uni, in.span);
          } else {
            AxisSet missing = uni - f.type(o).variance;
            Diagnostic &d =
                diags_
                    ->error(
                        "variance-mismatch", in.span,
                        "the operands of `" + std::string(op_display_name(in.op)) +
                            "` disagree in variance: " + name_of(st, o) +
                            (f.type(o).variance.empty()
                                 ? std::string(" is the same on every device")
                                 : " varies only along " + axes_names(f.type(o).variance, mesh)) +
                            ", but the result varies along " + axes_names(uni, mesh))
                    .help("write `" + pbroadcast_text(f.values[o].name, missing, mesh) + "`, " +
                          enable_auto_text());
            note_no_auto(d);
          }
        }
        break;
      }
    }
    if (in.op != OpCode::Call) {
      SmallVector<AxisSet, 4> operand_vars;
      for (auto o : in.operands) operand_vars.push_back(f.type(o).variance);
      const auto rvs = result_variances(in.op, operand_vars, in.results.size(), in.attrs);
      for (size_t k = 0; k < in.results.size(); ++k) f.type(in.results[k]).variance = rvs[k];
    }
    for (auto r : in.results)
      set_def(st, r, in.op, in.operands, collective_axes(in.op, in.attrs), in.span);
    if (op_kind(in.op) == OpKind::Creation && !in.results.empty())
      set_creation(st, in.results[0], in);
    std::vector<ir::ValueId> results = in.results;
    body.push_back(std::move(in));
    check_annotations(st, results, body);
  }

  // ------------------------------------------------------------ derivatives

  /// Types a call like `grad(f, wrt=w)(w, x)` from the signature of the
  /// function it names: the function derived is checked first (a def
  /// instance typed for the variance the arguments give its parameters), then
  /// each derivative is declared in turn (declare_derivative) and the call
  /// points at the last declaration. The functions themselves are built by
  /// the check script's next step (pipeline/derived_functions.h). False when
  /// the function derived has errors (reported).
  bool resolve_derived_call(FunctionState &st, ir::Instr &in) {
    const ir::DerivedCallee callee =
        module_.derived_callees.at(static_cast<size_t>(in.attrs.call().derived));
    int fn = callee.base;
    if (pristine_[static_cast<size_t>(fn)].kind == ir::FunctionKind::Shmap) {
      if (!process_shmap(static_cast<size_t>(fn))) return false;
    } else {
      fn = specialize(fn, base_variance(st, callee, in.operands), st.auto_pb, in.span);
      if (broken_.count(fn)) return false;
    }
    DerivedCallSite site;
    site.span = in.span;
    site.text = callee.text;
    site.notes.assign(call_notes_.rbegin(), call_notes_.rend());
    for (const ir::DeriveStep &step : callee.steps) {
      auto key = std::make_tuple(fn, static_cast<int>(step.kind), step.wrt, step.of);
      auto it = derived_.find(key);
      if (it == derived_.end()) it = derived_.emplace(key, declare_derivative(fn, step)).first;
      site.chain.push_back(it->second);
      fn = calls_.pending[it->second].index;
    }
    // A loop's trial rounds type its body again; the final round records it.
    if (muted_ == 0) calls_.sites.push_back(std::move(site));
    in.attrs.call().callee = fn;
    in.attrs.call().derived = -1;
    return true;
  }

  /// Declares derivative `step` of function `base` (checked, or declared
  /// itself): appends a function holding only its signature, typed by
  /// derived_signature (every entry of a derived function has the type of the
  /// entry it derives from, variance included), under the name it will have:
  /// the name derive_function gives it, made unique among shmaps (shmaps
  /// print under their own names). Returns its index in calls_.pending.
  size_t declare_derivative(int base, const ir::DeriveStep &step) {
    const ir::Function &b = module_.functions[static_cast<size_t>(base)];
    const FunctionSignature sig = derived_signature(signature_of(b), step);
    ir::Function d;
    d.kind = b.kind;
    d.mesh = b.mesh;
    d.entry = false;
    d.auto_pbroadcast = false;
    d.span = b.span;
    std::string name = sig.name;
    for (int k = 2;; ++k) {
      bool taken = false;
      for (const ir::Function &f : module_.functions)
        taken |= f.kind == ir::FunctionKind::Shmap && f.name == name;
      if (!taken || d.kind != ir::FunctionKind::Shmap) break;
      name = sig.name + "_" + std::to_string(k);
    }
    d.name = name;
    if (d.kind == ir::FunctionKind::Def) d.source_name = name;
    for (const SignatureEntry &e : sig.params) {
      ir::Param p;
      p.value = d.add_value(e.type, e.name, e.span);
      p.global_shape = e.global_shape;
      p.spec = e.spec;
      p.span = e.span;
      d.params.push_back(std::move(p));
    }
    for (const SignatureEntry &e : sig.results) {
      ir::Result r;
      r.name = e.name;
      r.global_shape = e.global_shape;
      r.spec = e.spec;
      r.span = e.span;
      d.results.push_back(std::move(r));
      d.returns.push_back(d.add_value(e.type, e.name, e.span));
    }
    module_.functions.push_back(std::move(d));
    calls_.pending.push_back({static_cast<int>(module_.functions.size() - 1), base, step});
    return calls_.pending.size() - 1;
  }

  /// The variance a def's parameters get when a derivative of it is called:
  /// the join of the arguments that stand for each parameter (its value, its
  /// tangent); a parameter no argument stands for (one a transpose is taken
  /// in) gets the join of all the arguments.
  std::vector<AxisSet> base_variance(const FunctionState &st, const ir::DerivedCallee &callee,
                                     const std::vector<ir::ValueId> &args) {
    FunctionSignature sig = signature_of(pristine_[static_cast<size_t>(callee.base)]);
    for (const ir::DeriveStep &step : callee.steps) sig = derived_signature(sig, step);
    std::vector<AxisSet> var(pristine_[static_cast<size_t>(callee.base)].params.size());
    std::vector<bool> given(var.size(), false);
    AxisSet all;
    for (size_t k = 0; k < args.size() && k < sig.params.size(); ++k) {
      AxisSet v = st.f.type(args[k]).variance;
      all = all | v;
      if (sig.params[k].from_result) continue;
      var[sig.params[k].origin] = var[sig.params[k].origin] | v;
      given[sig.params[k].origin] = true;
    }
    for (size_t k = 0; k < var.size(); ++k)
      if (!given[k]) var[k] = all;
    return var;
  }

  /// A call of a derived def: its parameters are typed already, so each
  /// argument is lifted to its parameter's variance (varying along more is
  /// an error) and each result varies as the function returns it.
  void type_derived_def_call(FunctionState &st, ir::Instr &in, std::vector<ir::Instr> &body) {
    ir::Function &f = st.f;
    const ir::Function &g = module_.functions[static_cast<size_t>(in.attrs.call().callee)];
    std::vector<AxisSet> want, out;
    std::vector<std::string> names;
    for (const auto &p : g.params) {
      want.push_back(g.type(p.value).variance);
      names.push_back(g.values[p.value].name);
    }
    for (auto r : g.returns) out.push_back(g.type(r).variance);
    const std::string callee = g.name;
    for (size_t k = 0; k < in.operands.size(); ++k) {
      ir::ValueId x = in.operands[k];
      AxisSet extra = f.type(x).variance - want[k];
      if (!extra.empty()) {
        auto &d = diags_->error("argument-varies", in.span,
                                "argument " + std::to_string(k + 1) + " of `" + callee + "` (`" +
                                    names[k] + "`) may differ between devices along " +
                                    axes_names(extra, st.mesh) +
                                    ", but the derivative was taken for a `" + names[k] +
                                    "` that is the same on " + "every device there");
        add_origin_notes(d, st, x, extra.axes()[0]);
        d.fix = "make the argument the same along " + axes_names(extra, st.mesh) +
                " first, or pass values to the primal parameters that vary as much";
        continue;
      }
      AxisSet missing = want[k] - f.type(x).variance;
      if (missing.empty()) continue;
      if (liftable(st, x)) {
        in.operands[k] = lift(st, body, x, want[k], in.span);
      } else {
        diags_
            ->error("invariant-operand", in.span,
                    "`" + callee + "` takes a `" + names[k] + "` that varies along " +
                        axes_names(missing, st.mesh) + ", but " + name_of(st, x) +
                        " is the same on every device there")
            .fix = "pass `" + pbroadcast_text(f.values[x].name, missing, st.mesh) +
                   "`, or enable automatic pbroadcast insertion";
      }
    }
    for (size_t k = 0; k < in.results.size() && k < out.size(); ++k)
      f.type(in.results[k]).variance = out[k];
  }

  /// A call of a shmap from a body: each argument is lifted to vary along
  /// exactly the axes its in_spec maps (varying along an axis it leaves out is
  /// an error), and each result varies along the axes of its out_spec.
  void type_shmap_call(FunctionState &st, ir::Instr &in, std::vector<ir::Instr> &body) {
    ir::Function &f = st.f;
    const ir::Function &g = module_.functions[static_cast<size_t>(in.attrs.call().callee)];
    std::vector<AxisSet> in_axes, out_axes;
    for (const auto &p : g.params) in_axes.push_back(spec_axes(p.spec));
    for (const auto &r : g.results) out_axes.push_back(spec_axes(r.spec));
    const std::string callee = g.name;
    struct ParamInfo {
      SourceSpan span;
      std::string name, spec;
    };
    std::vector<ParamInfo> params;
    for (const auto &p : g.params)
      params.push_back({p.span, g.values[p.value].name, spec_str(p.spec, st.mesh)});
    for (size_t k = 0; k < in.operands.size(); ++k) {
      ir::ValueId x = in.operands[k];
      AxisSet extra = f.type(x).variance - in_axes[k];
      if (!extra.empty()) {
        int axis = extra.axes()[0];
        const std::string axis_name = st.mesh.axes()[axis].name;
        auto &d = diags_->error(
            "unmapped-input-varies", in.span,
            "argument " + std::to_string(k + 1) + " of `" + callee + "` may differ between " +
                "devices along " + axes_names(extra, st.mesh) + ", but the in_spec " +
                params[k].spec + " of `" + params[k].name + "` does not mention " +
                (extra.size() == 1 ? "that axis" : "those axes") + ", so `" + callee +
                "` needs the same value on every device along " +
                (extra.size() == 1 ? "it" : "them"));
        d.notes.push_back({params[k].span, "the in_spec leaves out `" + axis_name + "` here"});
        add_origin_notes(d, st, x, axis);
        d.fix = "make the argument the same along `" + axis_name +
                "` first (psum, pmean, all_gather_invariant, ...), or map `" + params[k].name +
                "` along `" + axis_name + "` in the in_spec of `" + callee + "`";
        continue;
      }
      AxisSet missing = in_axes[k] - f.type(x).variance;
      if (missing.empty()) continue;
      if (liftable(st, x)) {
        in.operands[k] = lift(st, body, x, in_axes[k], in.span);
      } else {
        diags_
            ->error("invariant-operand", in.span,
                    "the in_spec " + params[k].spec + " of `" + params[k].name +
                        "` maps it along " + axes_names(missing, st.mesh) + ", so `" + callee +
                        "` needs an argument that varies there, but " + name_of(st, x) +
                        " is the same on every device along " +
                        (missing.size() == 1 ? "it" : "them"))
            .fix = "pass `" + pbroadcast_text(f.values[x].name, missing, st.mesh) +
                   "`, or enable automatic pbroadcast insertion";
      }
    }
    for (size_t k = 0; k < in.results.size() && k < out_axes.size(); ++k)
      f.type(in.results[k]).variance = out_axes[k];
  }

  void check_annotations(FunctionState &st, const std::vector<ir::ValueId> &results,
                         std::vector<ir::Instr> &body) {
    ir::Function &f = st.f;
    for (auto r : results) {
      if (!f.values[r].declared_variance) continue;
      const ir::Value info = f.values[r];  // a copy: lifting adds values
      AxisSet declared = *info.declared_variance, actual = f.type(r).variance;
      if (declared == actual) continue;
      AxisSet extra = actual - declared;
      if (!extra.empty()) {
        auto &d =
            diags_->error("annotation-mismatch", info.annotation_span,
                          "`" + info.name + "` is annotated " + axis_set_str(declared, st.mesh) +
                              " but it varies along " + axes_names(extra, st.mesh));
        add_origin_notes(d, st, r, extra.axes()[0]);
        continue;
      }
      if (liftable(st, r)) {
        ir::ValueId lifted = lift(st, body, r, declared, info.annotation_span);
        entry(st.remap, r, ir::kNoValue) = lifted;
      } else {
        diags_
            ->error("annotation-mismatch", info.annotation_span,
                    "`" + info.name + "` is annotated " + axis_set_str(declared, st.mesh) +
                        " but it is invariant along " + axes_names(declared - actual, st.mesh))
            .help("write `" + pbroadcast_text(info.name, declared - actual, st.mesh) + "`, " +
                  enable_auto_text());
      }
    }
  }

  /// Types one iteration of a loop body for carried variance `carried`;
  /// returns the yields' variance. The region is typed in place.
  std::vector<AxisSet> type_region(FunctionState &st, ir::Region &region,
                                   const std::vector<ir::Instr> &pristine_body,
                                   const std::vector<AxisSet> &carried) {
    ir::Function &f = st.f;
    f.type(region.params[0]).variance = AxisSet();  // the loop counter
    for (size_t k = 0; k < carried.size(); ++k) f.type(region.params[k + 1]).variance = carried[k];
    std::vector<ir::Instr> old_body = pristine_body;
    region.body.clear();
    st.lifted.emplace_back();
    process_block(st, old_body, region.body);
    std::vector<AxisSet> out;
    for (auto &y : region.yields) {
      y = resolve(st, y);
      out.push_back(f.type(y).variance);
    }
    st.lifted.pop_back();
    return out;
  }

  void process_for(FunctionState &st, ir::Instr in, std::vector<ir::Instr> &body) {
    ir::Function &f = st.f;
    ir::Region &region = in.regions.at(0);
    const std::vector<ir::Instr> pristine_body = region.body;
    const std::vector<ir::ValueId> pristine_yields = region.yields;
    std::vector<AxisSet> carried;
    for (auto o : in.operands) carried.push_back(f.type(o).variance);
    // 1. Fixpoint, with diagnostics muted (the final round reports them).
    DiagnosticEngine scratch;
    DiagnosticEngine *real = diags_;
    diags_ = &scratch;
    ++muted_;
    for (int round = 0; round < 70; ++round) {
      region.yields = pristine_yields;
      auto next = type_region(st, region, pristine_body, carried);
      bool changed = false;
      for (size_t k = 0; k < carried.size(); ++k) {
        AxisSet joined = carried[k] | next[k];
        changed |= !(joined == carried[k]);
        carried[k] = joined;
      }
      if (!changed) break;
    }
    --muted_;
    diags_ = real;
    // 2. Lift the initial values to the joined variance.
    for (size_t k = 0; k < in.operands.size(); ++k) {
      ir::ValueId init = in.operands[k];
      if (f.type(init).variance == carried[k]) continue;
      if (liftable(st, init)) {
        in.operands[k] = lift(st, body, init, carried[k], in.span);
      } else {
        AxisSet missing = carried[k] - f.type(init).variance;
        const std::string &name = f.values[region.params[k + 1]].name;
        diags_
            ->error("loop-variance", in.span,
                    "loop-carried `" + name + "` starts out the same on every device but the " +
                        "loop makes it vary along " + axes_names(missing, st.mesh))
            .help("initialise it with `" + pbroadcast_text(name, missing, st.mesh) + "`, " +
                  enable_auto_text());
      }
    }
    // 3. Type the body for good and lift the yields that vary less.
    region.yields = pristine_yields;
    type_region(st, region, pristine_body, carried);
    st.lifted.emplace_back();
    for (size_t k = 0; k < region.yields.size(); ++k) {
      ir::ValueId y = region.yields[k];
      if (f.type(y).variance == carried[k]) continue;
      if (liftable(st, y)) {
        region.yields[k] = lift(st, region.body, y, carried[k], in.span);
      } else {
        const std::string &name = f.values[region.params[k + 1]].name;
        diags_
            ->error("loop-variance", in.span,
                    "loop-carried `" + name + "` varies along " + axes_names(carried[k], st.mesh) +
                        " in some iterations but its next " + "value does not")
            .help("assign `" + pbroadcast_text(name, carried[k] - f.type(y).variance, st.mesh) +
                  "` at the end of the loop body, " + enable_auto_text());
      }
    }
    st.lifted.pop_back();
    for (size_t k = 0; k < in.results.size(); ++k) {
      f.type(in.results[k]).variance = carried[k];
      set_def(st, in.results[k], in.op, std::span(&in.operands[k], 1), {}, in.span);
    }
    body.push_back(std::move(in));
  }

  void check_returns(FunctionState &st, std::vector<ir::Instr> &body) {
    ir::Function &f = st.f;
    const rt::Mesh &mesh = st.mesh;
    for (size_t k = 0; k < f.returns.size(); ++k) {
      ir::ValueId v = f.returns[k];
      AxisSet want = spec_axes(f.results[k].spec);
      AxisSet have = f.type(v).variance;
      AxisSet extra = have - want;
      if (!extra.empty()) {
        int axis = extra.axes()[0];
        const std::string axis_name = mesh.axes()[axis].name;
        auto &d =
            diags_->error("unmapped-output-varies", f.return_span,
                          ir::describe_result(f, k) + " may differ between devices along " +
                              axes_names(extra, mesh) + ", but its out_spec does not mention " +
                              (extra.size() == 1 ? "that axis" : "those axes") +
                              ", so every device along it must hold the same value");
        d.notes.push_back({f.results[k].span, "the out_spec leaves out `" + axis_name + "` here"});
        add_origin_notes(d, st, v, axis);
        d.fix = "reduce it with `psum(..., " + axis_list_str(extra.axes(), mesh) +
                ")` (or pmean/all_gather_invariant), or map the output along `" + axis_name +
                "` in its out_spec";
        continue;
      }
      AxisSet missing = want - have;
      if (missing.empty()) continue;
      if (liftable(st, v)) {
        f.returns[k] = lift(st, body, v, want, f.return_span);
      } else {
        diags_
            ->error("invariant-output", f.return_span,
                    "the out_spec of " + ir::describe_result(f, k) + " maps it along " +
                        axes_names(missing, mesh) +
                        ", but the value is the same on every device there")
            .help("return `" + pbroadcast_text(f.values[v].name, missing, mesh) + "`, " +
                  enable_auto_text());
      }
    }
  }

  /// Returns the index of a def instance typed for `param_var`.
  int specialize(int callee, const std::vector<AxisSet> &param_var, bool auto_pb,
                 SourceSpan call_span) {
    std::vector<uint64_t> key_bits;
    for (auto v : param_var) key_bits.push_back(v.bits());
    auto key = std::make_tuple(callee, key_bits, auto_pb);
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    ir::Function f = pristine_[static_cast<size_t>(callee)];
    size_t before = diags_->count();
    int errors_before = diags_->num_errors();
    call_notes_.push_back({call_span, "in the call of `" + f.name + "` here"});
    process_function(f, param_var, auto_pb);
    call_notes_.pop_back();
    bool broken = diags_->num_errors() != errors_before;
    for (size_t k = before; k < diags_->count(); ++k)
      diags_->at(k).notes.push_back({call_span, "in the call of `" + f.name + "` here"});
    int index;
    if (!used_[callee]) {
      used_[callee] = true;
      index = callee;
      module_.functions[static_cast<size_t>(callee)] = std::move(f);
    } else {
      index = static_cast<int>(module_.functions.size());
      module_.functions.push_back(std::move(f));
    }
    memo_[key] = index;
    if (broken) broken_.insert(index);
    return index;
  }

  ir::Module &module_;
  const ir::Function *shmap_ = nullptr;  // the shmap being typed (defs follow its settings)
  DiagnosticEngine *diags_;
  DiagnosticEngine *const top_diags_;
  std::vector<ir::Function> pristine_;
  std::vector<ShmapState> shmap_state_;
  std::map<std::tuple<int, std::vector<uint64_t>, bool>, int> memo_;
  std::map<int, bool> used_;
  std::set<int> broken_;  // def instances typed with errors
  /// Derivatives declared, by (function, kind, wrt, of): index into calls_.pending.
  std::map<std::tuple<int, int, std::vector<bool>, std::vector<bool>>, size_t> derived_;
  DerivedCalls calls_;
  /// > 0 while a loop's trial rounds type its body (diagnostics muted).
  int muted_ = 0;
  /// The calls of defs being specialized, outermost first (the notes their
  /// diagnostics get).
  std::vector<DiagnosticLabel> call_notes_;
};

}  // namespace

DerivedCalls infer_variance(ir::Module &module, DiagnosticEngine &diags) {
  VarianceInference inference(module, diags);
  inference.run();
  return inference.take_derived_calls();
}

}  // namespace spmd
