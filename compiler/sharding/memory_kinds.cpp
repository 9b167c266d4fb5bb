// sharding/memory_kinds.cpp — see memory_kinds.h.
//
// 1. Mark the backward instructions (and the carries of backward loops).
// 2. One pass in program order marks the gradient-derived values.
// 3. Per state, one pass spreads a taint through the non-backward
//    instructions: whether it reaches the backward pass, and whether its next
//    value (or a result) is computed from it, decide its kind.
// 4. The remaining values by their producer and readers.
#include "sharding/memory_kinds.h"

namespace spmd::sharding {

static_assert(kNumMemoryKinds == std::tuple_size_v<decltype(PlanCost{}.peak_by_kind)>);

std::string_view memory_kind_name(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::Parameters:
      return "parameters";
    case MemoryKind::OptimizerState:
      return "optimizer state";
    case MemoryKind::Gradients:
      return "gradients";
    case MemoryKind::Activations:
      return "saved activations";
    case MemoryKind::Inputs:
      return "inputs";
    case MemoryKind::Temporaries:
      return "temporaries";
  }
  return "?";
}

namespace {

// Above this many (state x instruction) steps the states are not told apart
// (all inputs): the taint passes would cost more than the search.
constexpr double kMaxTaintSteps = 2e8;

class Classifier {
 public:
  explicit Classifier(const Problem &p)
      : p_(p), n_(p.flat.body.size()), kinds_(p.flat.values.size(), MemoryKind::Temporaries) {}

  std::vector<MemoryKind> run() {
    mark_backward();
    mark_gradient_derived();
    classify_states();
    classify_rest();
    return std::move(kinds_);
  }

 private:
  // A carry instruction's loop, or null (also null for the loop index).
  const ProblemLoop *carry_of(size_t i) const {
    const ProblemLoop *loop = p_.carry_loop(static_cast<int>(i));
    return loop && static_cast<int>(i) >= loop->first_carry ? loop : nullptr;
  }

  void mark_backward() {
    backward_instr_.assign(n_, false);
    backward_value_.assign(p_.flat.values.size(), false);
    for (size_t i = 0; i < n_; ++i) {
      const ir::Instr &in = p_.flat.body[i];
      const ProblemLoop *loop = carry_of(i);
      const bool b =
          loop ? loop->loop.origin == ir::Origin::Backward : in.origin == ir::Origin::Backward;
      if (!b) continue;
      backward_instr_[i] = true;
      for (ir::ValueId r : in.results) backward_value_[static_cast<size_t>(r)] = true;
    }
  }

  void mark_gradient_derived() {
    derived_.assign(p_.flat.values.size(), false);
    for (size_t i = 0; i < n_; ++i) {
      if (backward_instr_[i] || p_.carry_loop(static_cast<int>(i))) continue;  // carries: states
      const ir::Instr &in = p_.flat.body[i];
      bool any = false;
      for (ir::ValueId o : in.operands) any = any || after_backward(o);
      if (any)
        for (ir::ValueId r : in.results) derived_[static_cast<size_t>(r)] = true;
    }
  }

  bool after_backward(ir::ValueId v) const {
    return backward_value_[static_cast<size_t>(v)] || derived_[static_cast<size_t>(v)];
  }

  void classify_states() {
    struct State {
      ir::ValueId value;              // the input, or the carry's body parameter
      ir::ValueId also;               // the loop's result (kNoValue for an input)
      std::vector<ir::ValueId> next;  // the next value, or the function's results
    };
    std::vector<State> states;
    for (const ir::Param &param : p_.flat.params)
      states.push_back(
          {param.value, ir::kNoValue, {p_.flat.returns.begin(), p_.flat.returns.end()}});
    for (size_t i = 0; i < n_; ++i) {
      if (!carry_of(i) || backward_instr_[i]) continue;
      const ir::Instr &carry = p_.flat.body[i];
      states.push_back({carry.results[0], carry.results[1], {carry.operands[1]}});
    }
    const bool affordable =
        static_cast<double>(states.size()) * static_cast<double>(n_) <= kMaxTaintSteps;
    std::vector<bool> taint(p_.flat.values.size());
    for (const State &s : states) {
      MemoryKind kind = MemoryKind::Inputs;
      if (affordable) {
        std::fill(taint.begin(), taint.end(), false);
        taint[static_cast<size_t>(s.value)] = true;
        bool reaches_backward = false;
        for (size_t i = 0; i < n_; ++i) {
          const ir::Instr &in = p_.flat.body[i];
          bool reads = false;
          for (ir::ValueId o : in.operands) reads = reads || taint[static_cast<size_t>(o)];
          if (!reads) continue;
          if (backward_instr_[i]) {
            reaches_backward = true;
          } else if (!carry_of(i)) {  // the next iteration is not this step
            for (ir::ValueId r : in.results) taint[static_cast<size_t>(r)] = true;
          }
        }
        bool updated = false;
        for (ir::ValueId v : s.next)
          updated = updated || (taint[static_cast<size_t>(v)] && derived_[static_cast<size_t>(v)]);
        if (updated) kind = reaches_backward ? MemoryKind::Parameters : MemoryKind::OptimizerState;
      }
      kinds_[static_cast<size_t>(s.value)] = kind;
      if (s.also != ir::kNoValue) kinds_[static_cast<size_t>(s.also)] = kind;
      state_.push_back(s.value);
      if (s.also != ir::kNoValue) state_.push_back(s.also);
    }
  }

  void classify_rest() {
    std::vector<bool> is_state(p_.flat.values.size(), false);
    for (ir::ValueId v : state_) is_state[static_cast<size_t>(v)] = true;
    for (size_t i = 0; i < n_; ++i) {
      for (ir::ValueId r : p_.flat.body[i].results) {
        const auto v = static_cast<size_t>(r);
        if (is_state[v]) continue;
        bool read_by_backward = false, read_after = false;
        for (const Use &u : p_.uses[v]) {
          const bool b = u.instr != Use::kReturn && backward_instr_[static_cast<size_t>(u.instr)];
          read_by_backward = read_by_backward || b;
          read_after = read_after || !b;
        }
        if (backward_value_[v])
          kinds_[v] = read_after ? MemoryKind::Gradients : MemoryKind::Temporaries;
        else if (!derived_[v] && read_by_backward)
          kinds_[v] = MemoryKind::Activations;
        else
          kinds_[v] = MemoryKind::Temporaries;
      }
    }
  }

  const Problem &p_;
  size_t n_;
  std::vector<MemoryKind> kinds_;
  std::vector<bool> backward_instr_, backward_value_, derived_;
  std::vector<ir::ValueId> state_;
};

}  // namespace

std::vector<MemoryKind> classify_values(const Problem &p) { return Classifier(p).run(); }

}  // namespace spmd::sharding
