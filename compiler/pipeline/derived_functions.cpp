// pipeline/derived_functions.cpp — see derived_functions.h.
#include "pipeline/derived_functions.h"

#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <tuple>

#include "ir/loops.h"
#include "pipeline/derive.h"
#include "spmdrt/checked.h"
#include "support/limits.h"
#include "transforms/explicit_pbroadcast.h"

namespace spmd {
namespace {

void retarget_calls(std::vector<ir::Instr> &body, const std::map<int, int> &index) {
  for (ir::Instr &in : body) {
    if (in.op == OpCode::Call) in.attrs.call().callee = index.at(in.attrs.call().callee);
    for (ir::Region &r : in.regions) retarget_calls(r.body, index);
  }
}

template <typename Fn>
void for_each_call(std::vector<ir::Instr> &body, Fn &&fn) {
  for (ir::Instr &in : body) {
    if (in.op == OpCode::Call) fn(in);
    for (ir::Region &r : in.regions) for_each_call(r.body, fn);
  }
}

template <typename Fn>
void for_each_callee(const std::vector<ir::Instr> &body, Fn &&fn) {
  for (const ir::Instr &in : body) {
    if (in.op == OpCode::Call) fn(in.attrs.call().callee);
    for (const ir::Region &r : in.regions) for_each_callee(r.body, fn);
  }
}

/// `root` and the functions it calls, transitively, `root` first.
std::vector<int> reachable(const ir::Module &module, int root) {
  std::map<int, int> index;
  std::vector<int> order{root};
  index[root] = 0;
  for (size_t k = 0; k < order.size(); ++k)
    for_each_callee(module.functions[static_cast<size_t>(order[k])].body, [&](int callee) {
      if (index.emplace(callee, static_cast<int>(order.size())).second) order.push_back(callee);
    });
  return order;
}

/// A module holding `order` (module.functions[order[0]] and the functions it
/// calls), renumbered.
ir::Module extract(const ir::Module &module, const std::vector<int> &order) {
  std::map<int, int> index;
  for (size_t k = 0; k < order.size(); ++k) index[order[k]] = static_cast<int>(k);
  ir::Module out;
  out.meshes = module.meshes;
  for (int i : order) {
    out.functions.push_back(module.functions[static_cast<size_t>(i)]);
    retarget_calls(out.functions.back().body, index);
  }
  return out;
}

/// Instructions of `body` with each call counted as its callee's whole size
/// (loops kept; ir::unrolled_size), memoised in `sizes`.
int64_t inlined_size(const ir::Module &module, const std::vector<ir::Instr> &body,
                     std::map<int, int64_t> &sizes) {
  return ir::unrolled_size(
      body, [](const ir::Instr &) { return false; },
      [&](int callee) -> int64_t {
        if (callee < 0 || static_cast<size_t>(callee) >= module.functions.size()) return 1;
        if (auto it = sizes.find(callee); it != sizes.end()) return it->second;
        sizes[callee] = 1;  // (recursion was rejected when lowering)
        const int64_t n =
            inlined_size(module, module.functions[static_cast<size_t>(callee)].body, sizes);
        sizes[callee] = n;
        return n;
      });
}

bool same_types(const ir::Function &a, const ir::Function &b) {
  if (a.params.size() != b.params.size() || a.returns.size() != b.returns.size()) return false;
  for (size_t k = 0; k < a.params.size(); ++k)
    if (!(a.type(a.params[k].value) == b.type(b.params[k].value))) return false;
  for (size_t k = 0; k < a.returns.size(); ++k)
    if (!(a.type(a.returns[k]) == b.type(b.returns[k]))) return false;
  return true;
}

class Builder {
 public:
  Builder(ir::Module &module, DiagnosticEngine &diags) : module_(module), diags_(diags) {}

  /// Derivative `step` of function `base` (which calls no unbuilt derivative)
  /// as it goes into the module, named `name`; TransformError when it cannot
  /// be taken.
  ir::Function build(int base, const ir::DeriveStep &step, const std::string &name) {
    // Each derivative multiplies the size (grad of grad of ... grows about
    // 6.5 times a level): refuse before deriving what would pass the limit.
    std::map<int, int64_t> sizes;
    const int64_t size =
        inlined_size(module_, module_.functions[static_cast<size_t>(base)].body, sizes);
    if (rt::saturating_mul(size, kMaxDerivativeGrowth) > kMaxUnrolledInstructions)
      throw TransformError(
          "program-too-large", {},
          "the function derived has " + std::to_string(size) +
              " instructions with its calls inlined, and its derivative may have up to " +
              std::to_string(kMaxDerivativeGrowth) + " times as many: it " +
              too_many_instructions(rt::saturating_mul(size, kMaxDerivativeGrowth)));
    ir::Module scratch = extract(module_, reachable(module_, base));
    make_pbroadcasts_explicit(scratch, ir::Origin::AutoPbroadcast);
    ir::Function derived = derive_function(scratch, scratch.functions[0], step);
    derived.entry = false;
    derived.name = name;
    if (derived.kind == ir::FunctionKind::Def) derived.source_name = name;
    if (const int64_t n = inlined_size(module_, derived.body, sizes); n > kMaxUnrolledInstructions)
      throw TransformError("program-too-large", {}, "the derivative " + too_many_instructions(n));
    return derived;
  }

  /// Builds the declared derivatives in order; a derivative that cannot be
  /// taken is reported at each call of it.
  void build_declared(const DerivedCalls &calls) {
    std::vector<std::optional<TransformError>> errors(calls.pending.size());
    std::set<int> unbuilt;
    for (const PendingDerivative &p : calls.pending) unbuilt.insert(p.index);
    for (size_t k = 0; k < calls.pending.size(); ++k) {
      const PendingDerivative &p = calls.pending[k];
      // A derivative of a function that calls (or is) one that could not be
      // built is not built either; the error is reported for that one.
      bool ready = true;
      for (int f : reachable(module_, p.base)) ready &= unbuilt.count(f) == 0;
      if (!ready) continue;
      ir::Function &declared = module_.functions[static_cast<size_t>(p.index)];
      try {
        ir::Function derived = build(p.base, p.step, declared.name);
        if (!same_types(derived, declared))
          throw std::logic_error("the derivative `" + declared.name +
                                 "` has other types than its signature");
        declared = std::move(derived);
        unbuilt.erase(p.index);
      } catch (const TransformError &e) {
        errors[k] = e;
      }
    }
    for (const DerivedCallSite &site : calls.sites)
      for (size_t k : site.chain)
        if (errors[k]) {
          report(*errors[k], site.span, site.text, site.notes);
          break;
        }
  }

  /// The calls of derivatives no shmap reached (in sharded functions and the
  /// defs only they call): each built from the def instance lowering typed.
  void build_remaining() {
    for (size_t i = 0; i < module_.functions.size(); ++i) resolve(static_cast<int>(i));
  }

 private:
  void resolve(int function) {
    if (!resolved_.insert(function).second) return;
    // (The body is re-read after each build: building appends functions.)
    std::vector<ir::Instr> body = std::move(module_.functions[static_cast<size_t>(function)].body);
    for_each_call(body, [&](ir::Instr &in) {
      if (in.attrs.call().derived < 0) {
        if (in.attrs.call().callee >= 0) resolve(in.attrs.call().callee);
        return;
      }
      const ir::DerivedCallee callee =
          module_.derived_callees.at(static_cast<size_t>(in.attrs.call().derived));
      int fn = callee.base;
      resolve(fn);
      for (const ir::DeriveStep &step : callee.steps) {
        auto key = std::make_tuple(fn, static_cast<int>(step.kind), step.wrt, step.of);
        auto it = built_.find(key);
        if (it == built_.end()) {
          try {
            const ir::Function &b = module_.functions[static_cast<size_t>(fn)];
            ir::Function derived = build(fn, step, derived_name(b.name, step.kind));
            module_.functions.push_back(std::move(derived));
            it = built_.emplace(key, static_cast<int>(module_.functions.size() - 1)).first;
            resolved_.insert(it->second);
          } catch (const TransformError &e) {
            report(e, in.span, callee.text, {});
            return;
          }
        }
        fn = it->second;
      }
      in.attrs.call().callee = fn;
      in.attrs.call().derived = -1;
    });
    module_.functions[static_cast<size_t>(function)].body = std::move(body);
  }

  void report(const TransformError &e, SourceSpan at, const std::string &text,
              const std::vector<DiagnosticLabel> &notes) {
    Diagnostic &d = diags_.error(e.code, at, "cannot take `" + text + "`: " + e.what());
    if (e.span.valid()) d.notes.push_back({e.span, "here"});
    d.notes.insert(d.notes.end(), notes.begin(), notes.end());
  }

  ir::Module &module_;
  DiagnosticEngine &diags_;
  std::set<int> resolved_;
  std::map<std::tuple<int, int, std::vector<bool>, std::vector<bool>>, int> built_;
};

}  // namespace

void build_derived_functions(ir::Module &module, const DerivedCalls &calls,
                             DiagnosticEngine &diags) {
  Builder builder(module, diags);
  builder.build_declared(calls);
  if (diags.has_errors()) return;
  builder.build_remaining();
}

}  // namespace spmd
