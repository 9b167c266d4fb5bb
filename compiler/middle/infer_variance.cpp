// middle/infer_variance.cpp — see infer_variance.h for the algorithm.
#include "middle/infer_variance.h"

#include <algorithm>
#include <map>

#include "ir/builder.h"
#include "ops/variance_rules.h"

namespace spmd {
namespace {

class VarianceInference {
 public:
  VarianceInference(ir::Module &module, DiagnosticEngine &diags)
      : module_(module), diags_(diags), pristine_(module.functions) {}

  void run() {
    size_t n = module_.functions.size();
    for (size_t i = 0; i < n; ++i) {
      if (module_.functions[i].kind != ir::FunctionKind::Shmap) continue;
      ir::Function f = pristine_[i];
      const rt::Mesh &mesh = module_.mesh_of(f);
      std::vector<AxisSet> param_var;
      for (const auto &p : f.params) param_var.push_back(spec_axes(p.spec));
      (void)mesh;
      process(f, param_var, f.auto_pbroadcast);
      module_.functions[i] = std::move(f);
    }
    // Def instances that no shmap reached keep their (invariant) typing.
  }

 private:
  static AxisSet spec_axes(const rt::PartitionSpec &spec) {
    AxisSet s;
    for (const auto &dim : spec) s = s | AxisSet::of_all(dim);
    return s;
  }

  std::string axes_names(AxisSet s, const rt::Mesh &mesh) {
    std::string out;
    auto axes = s.axes();
    for (size_t i = 0; i < axes.size(); ++i) {
      if (i) out += i + 1 == axes.size() ? " and " : ", ";
      out += "`" + mesh.axes()[axes[i]].name + "`";
    }
    return out;
  }

  std::string pbroadcast_text(const std::string &value, AxisSet axes, const rt::Mesh &mesh) {
    return "pbroadcast(" + value + ", " + axis_list_str(axes.axes(), mesh) + ")";
  }

  /// Where `value` got its variance along `axis`: walks back to a parameter or
  /// to the op that introduced it.
  DiagnosticLabel trace_origin(const ir::Function &f, const std::vector<int> &def_of,
                               ir::ValueId value, int axis, const rt::Mesh &mesh) {
    const std::string &axis_name = mesh.axes()[axis].name;
    for (int steps = 0; steps < 10000; ++steps) {
      for (const auto &p : f.params)
        if (p.value == value)
          return {p.span, "`" + f.values[value].name + "` varies along `" + axis_name +
                              "` because of this argument"};
      int idx = def_of[value];
      if (idx < 0) break;
      const ir::Instr &in = f.body[idx];
      bool introduces = in.op == OpCode::Pbroadcast || in.op == OpCode::Pscatter ||
                        in.op == OpCode::AxisIndex;
      if (introduces && std::find(in.attrs.axes.begin(), in.attrs.axes.end(), axis) !=
                            in.attrs.axes.end())
        return {in.span, std::string("`") + std::string(op_spelling(in.op)) +
                             "` makes the value vary along `" + axis_name + "` here"};
      ir::ValueId next = ir::kNoValue;
      for (ir::ValueId o : in.operands)
        if (f.type(o).variance.contains(axis)) {
          next = o;
          break;
        }
      if (next == ir::kNoValue)
        return {in.span, "this value varies along `" + axis_name + "`"};
      value = next;
    }
    return {f.values[value].span, "this value varies along `" + axis_name + "`"};
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
    size_t before = diags_.count();
    process(f, param_var, auto_pb);
    for (size_t k = before; k < diags_.count(); ++k)
      diags_.at(k).notes.push_back({call_span, "in the call of `" + f.name + "` here"});
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
    return index;
  }

  void process(ir::Function &f, const std::vector<AxisSet> &param_var, bool auto_pb) {
    const rt::Mesh &mesh = module_.mesh_of(f);
    for (size_t i = 0; i < f.params.size(); ++i) f.type(f.params[i].value).variance = param_var[i];
    std::vector<ir::Instr> old_body = std::move(f.body);
    f.body.clear();
    ir::Builder builder(module_, f);
    std::map<std::pair<ir::ValueId, uint64_t>, ir::ValueId> lifted;
    std::map<ir::ValueId, ir::ValueId> remap;
    std::vector<int> def_of(f.values.size(), -1);
    auto resolve = [&](ir::ValueId v) {
      auto r = remap.find(v);
      return r == remap.end() ? v : r->second;
    };
    auto note_def = [&](ir::ValueId v, int instr) {
      if (static_cast<size_t>(v) >= def_of.size()) def_of.resize(v + 1, -1);
      def_of[v] = instr;
    };
    // Lifts `v` to vary along `target` (a superset of its variance).
    auto lift = [&](ir::ValueId v, AxisSet target, SourceSpan span) -> ir::ValueId {
      AxisSet missing = target - f.type(v).variance;
      if (missing.empty()) return v;
      auto key = std::make_pair(v, missing.bits());
      auto it = lifted.find(key);
      if (it != lifted.end()) return it->second;
      ir::ValueId r;
      int def_index = static_cast<size_t>(v) < def_of.size() ? def_of[v] : -1;
      if (def_index >= 0 && op_kind(f.body[def_index].op) == OpKind::Creation) {
        // A constant is the same everywhere, so it may be typed with any
        // variance: re-create it with the wanted one instead of a pbroadcast.
        ir::Instr copy = f.body[def_index];
        r = f.add_value(f.type(v).with_variance(target), f.values[v].name, span);
        copy.results = {r};
        copy.origin = ir::Origin::Lowering;
        f.body.push_back(std::move(copy));
      } else {
        r = builder.pbroadcast(v, missing.axes(), span, ir::Origin::AutoPbroadcast);
      }
      note_def(r, static_cast<int>(f.body.size() - 1));
      if (!f.values[v].name.empty()) f.values[r].name = f.values[v].name;
      lifted[key] = r;
      return r;
    };
    // Constants may be re-typed with any variance even when pbroadcast
    // insertion is off: that inserts no op, it only types a literal.
    auto liftable = [&](ir::ValueId v) {
      if (auto_pb) return true;
      int d = static_cast<size_t>(v) < def_of.size() ? def_of[v] : -1;
      return d >= 0 && op_kind(f.body[d].op) == OpKind::Creation;
    };
    auto name_of = [&](ir::ValueId v) {
      return f.values[v].name.empty() ? std::string("the operand") : "`" + f.values[v].name + "`";
    };

    for (ir::Instr &in : old_body) {
      for (auto &o : in.operands) o = resolve(o);
      AxisSet uni;
      for (auto o : in.operands) uni = uni | f.type(o).variance;
      bool bad = false;
      switch (op_kind(in.op)) {
        case OpKind::Call: {
          std::vector<AxisSet> vars;
          for (auto o : in.operands) vars.push_back(f.type(o).variance);
          int callee = specialize(in.attrs.callee, vars, auto_pb, in.span);
          in.attrs.callee = callee;
          const ir::Function &cf = module_.functions[static_cast<size_t>(callee)];
          for (size_t k = 0; k < in.results.size() && k < cf.returns.size(); ++k)
            f.type(in.results[k]).variance = cf.type(cf.returns[k]).variance;
          break;
        }
        case OpKind::Collective: {
          AxisSet axes = AxisSet::of_all(in.attrs.axes);
          AxisRequirement req = operand_requirement(in.op);
          if (req == AxisRequirement::Varying) {
            ir::ValueId x = in.operands[0];
            AxisSet missing = axes - f.type(x).variance;
            if (!missing.empty()) {
              if (auto_pb) {
                in.operands[0] = lift(x, f.type(x).variance | missing, in.span);
              } else {
                diags_
                    .error("invariant-operand", in.span,
                           "`" + std::string(op_spelling(in.op)) + "` needs an operand that varies along " +
                               axes_names(missing, mesh) + ", but " + name_of(x) +
                               " is the same on every device along " +
                               (missing.size() == 1 ? "it" : "them"))
                    .fix = "write `" + std::string(op_spelling(in.op)) + "(" +
                           pbroadcast_text(f.values[x].name.empty() ? "x" : f.values[x].name,
                                           missing, mesh) +
                           ", ...)`, or enable automatic pbroadcast insertion";
                bad = true;
              }
            }
          } else if (req == AxisRequirement::Invariant) {
            ir::ValueId x = in.operands[0];
            AxisSet extra = axes & f.type(x).variance;
            if (!extra.empty()) {
              auto &d = diags_.error(
                  "varying-operand", in.span,
                  "`" + std::string(op_spelling(in.op)) + "` needs an operand that is the same " +
                      "on every device along " + axes_names(extra, mesh) + ", but " + name_of(x) +
                      " varies along " + (extra.size() == 1 ? "it" : "them"));
              d.notes.push_back(trace_origin(f, def_of, x, extra.axes()[0], mesh));
              d.fix = in.op == OpCode::Pbroadcast
                          ? "the value already varies there; remove the pbroadcast"
                          : "use a collective that takes a varying operand (e.g. psum_scatter)";
              bad = true;
            }
          }
          break;
        }
        default: {
          for (auto &o : in.operands) {
            if (f.type(o).variance == uni) continue;
            if (liftable(o)) {
              o = lift(o, uni, in.span);
            } else {
              AxisSet missing = uni - f.type(o).variance;
              diags_
                  .error("variance-mismatch", in.span,
                         "the operands of `" + std::string(op_display_name(in.op)) +
                             "` disagree in variance: " + name_of(o) +
                             (f.type(o).variance.empty()
                                  ? std::string(" is the same on every device")
                                  : " varies only along " +
                                        axes_names(f.type(o).variance, mesh)) +
                             ", but the result varies along " + axes_names(uni, mesh))
                  .fix = "write `" +
                         pbroadcast_text(f.values[o].name.empty() ? "x" : f.values[o].name,
                                         missing, mesh) +
                         "`, or enable automatic pbroadcast insertion";
              bad = true;
            }
          }
          break;
        }
      }
      (void)bad;
      if (in.op != OpCode::Call) {
        AxisSet operand_var;
        for (auto o : in.operands) operand_var = operand_var | f.type(o).variance;
        AxisSet rv = result_variance(in.op, operand_var, in.attrs);
        for (auto r : in.results) f.type(r).variance = rv;
      }
      int idx = static_cast<int>(f.body.size());
      for (auto r : in.results) note_def(r, idx);
      std::vector<ir::ValueId> results = in.results;
      f.body.push_back(std::move(in));
      // Annotations on results.
      for (auto r : results) {
        const ir::Value &info = f.values[r];
        if (!info.declared_variance) continue;
        AxisSet declared = *info.declared_variance, actual = f.type(r).variance;
        if (declared == actual) continue;
        AxisSet extra = actual - declared;
        if (!extra.empty()) {
          auto &d = diags_.error("annotation-mismatch", info.annotation_span,
                                 "`" + info.name + "` is annotated " +
                                     axis_set_str(declared, mesh) + " but it varies along " +
                                     axes_names(extra, mesh));
          d.notes.push_back(trace_origin(f, def_of, r, extra.axes()[0], mesh));
          continue;
        }
        if (liftable(r)) {
          remap[r] = lift(r, declared, info.annotation_span);
        } else {
          diags_
              .error("annotation-mismatch", info.annotation_span,
                     "`" + info.name + "` is annotated " + axis_set_str(declared, mesh) +
                         " but it is invariant along " + axes_names(declared - actual, mesh))
              .fix = "write `" + pbroadcast_text(info.name, declared - actual, mesh) + "`";
        }
      }
    }
    // Returns.
    for (size_t k = 0; k < f.returns.size(); ++k) {
      ir::ValueId v = resolve(f.returns[k]);
      f.returns[k] = v;
      if (f.kind != ir::FunctionKind::Shmap) continue;
      AxisSet want = spec_axes(f.results[k].spec);
      AxisSet have = f.type(v).variance;
      AxisSet extra = have - want;
      if (!extra.empty()) {
        int axis = extra.axes()[0];
        const std::string axis_name = mesh.axes()[axis].name;
        std::string what = f.returns.size() == 1 ? "the result" : "result " + std::to_string(k + 1);
        auto &d = diags_.error(
            "unmapped-output-varies", f.return_span,
            what + " of `" + f.name + "` may differ between devices along " +
                axes_names(extra, mesh) + ", but its out_spec does not mention " +
                (extra.size() == 1 ? "that axis" : "those axes") +
                ", so every device along it must hold the same value");
        d.notes.push_back({f.results[k].span, "the out_spec leaves out `" + axis_name + "` here"});
        d.notes.push_back(trace_origin(f, def_of, v, axis, mesh));
        d.fix = "reduce it with `psum(..., " + axis_list_str(extra.axes(), mesh) +
                ")` (or pmean/all_gather_invariant), or map the output along `" + axis_name +
                "` in its out_spec";
        continue;
      }
      AxisSet missing = want - have;
      if (missing.empty()) continue;
      if (liftable(v)) {
        f.returns[k] = lift(v, want, f.return_span);
      } else {
        diags_
            .error("invariant-output", f.return_span,
                   "the out_spec of result " + std::to_string(k + 1) + " maps it along " +
                       axes_names(missing, mesh) + ", but the value is the same on every device " +
                       "there")
            .fix = "return `" + pbroadcast_text(f.values[v].name.empty() ? "x" : f.values[v].name,
                                                missing, mesh) +
                   "`";
      }
    }
  }

  ir::Module &module_;
  DiagnosticEngine &diags_;
  std::vector<ir::Function> pristine_;
  std::map<std::tuple<int, std::vector<uint64_t>, bool>, int> memo_;
  std::map<int, bool> used_;
};

}  // namespace

void infer_variance(ir::Module &module, DiagnosticEngine &diags) {
  VarianceInference(module, diags).run();
}

}  // namespace spmd
