// sharding/strategy.cpp — see strategy.h.
#include "sharding/strategy.h"

#include "analysis/stats.h"
#include "ops/shape_rules.h"

namespace spmd::sharding {
namespace {

Sharding layout(const std::vector<int> &factors, const std::vector<std::vector<int>> &axes) {
  Sharding s;
  for (int f : factors)
    s.dims.push_back(f == kNoFactor ? std::vector<int>{} : axes[static_cast<size_t>(f)]);
  return s;
}

}  // namespace

std::optional<Strategy> make_strategy(const OpSignature &sig, const rt::Mesh &mesh,
                                      const HardwareProfile &profile,
                                      std::vector<std::vector<int>> factor_axes, AxisSet carried,
                                      const std::vector<bool> &carriers) {
  const ShardingRule &rule = sig.rule;
  if (rule.family == RuleFamily::Unsupported) return std::nullopt;
  if (factor_axes.size() != rule.factor_sizes.size()) return std::nullopt;
  AxisSet used;
  for (size_t f = 0; f < factor_axes.size(); ++f) {
    int64_t n = 1;
    for (int a : factor_axes[f]) {
      if (a < 0 || a >= static_cast<int>(mesh.axes().size()) || used.contains(a))
        return std::nullopt;
      used = used | AxisSet::of(a);
      n *= mesh.axis_size(a);
    }
    if (rule.factor_sizes[f] % n != 0) return std::nullopt;
  }
  if (!(carried & used).empty()) return std::nullopt;
  // Linearity: who may carry the partial sums.
  size_t num_carriers = 0;
  for (size_t k = 0; k < sig.operands.size(); ++k) {
    bool c = k < carriers.size() && carriers[k];
    if (!c) continue;
    ++num_carriers;
    if (k >= rule.linear_operands.size() || !rule.linear_operands[k]) return std::nullopt;
  }
  if (carried.empty() != (num_carriers == 0)) return std::nullopt;
  if (!carried.empty()) {
    if (rule.linearity == Linearity::None) return std::nullopt;
    if (rule.linearity == Linearity::Any && num_carriers != 1) return std::nullopt;
    if (rule.linearity == Linearity::Together)
      for (size_t k = 0; k < rule.linear_operands.size(); ++k)
        if (rule.linear_operands[k] && !(k < carriers.size() && carriers[k])) return std::nullopt;
  }

  Strategy s;
  s.factor_axes = std::move(factor_axes);
  s.carried = carried;
  AxisSet sums;
  for (size_t f = 0; f < s.factor_axes.size(); ++f) {
    const std::vector<int> &axes = s.factor_axes[f];
    if (axes.empty()) continue;
    switch (rule.factor_kinds[f]) {
      case FactorKind::Parallel:
        break;
      case FactorKind::Sum:
        sums = sums | AxisSet::of_all(axes);
        break;
      case FactorKind::Max:
      case FactorKind::Min: {
        OpCode op = rule.factor_kinds[f] == FactorKind::Max ? OpCode::Pmax : OpCode::Pmin;
        if (!s.finish.empty() && s.finish.back().op == op) {
          s.finish.back().axes.insert(s.finish.back().axes.end(), axes.begin(), axes.end());
        } else {
          s.finish.push_back({op, axes});
        }
        break;
      }
    }
  }
  for (size_t k = 0; k < sig.operands.size(); ++k) {
    Sharding o = layout(rule.operand_factors.at(k), s.factor_axes);
    if (k < carriers.size() && carriers[k]) o.partial = carried;
    s.operands.push_back(std::move(o));
  }
  for (size_t r = 0; r < sig.results.size(); ++r) {
    Sharding o = layout(rule.result_factors.at(r), s.factor_axes);
    o.partial = carried | sums;
    s.results.push_back(std::move(o));
  }

  // Costs: the local op's flops, then the finishing collectives on its result.
  std::vector<Type> local_operands, local_results;
  for (size_t k = 0; k < sig.operands.size(); ++k)
    local_operands.push_back(
        {sig.operands[k].dtype, local_shape(mesh, sig.operands[k].shape, s.operands[k]), {}});
  for (size_t r = 0; r < sig.results.size(); ++r)
    local_results.push_back(
        {sig.results[r].dtype, local_shape(mesh, sig.results[r].shape, s.results[r]), {}});
  s.flops = op_flops(sig.op, local_operands, local_results, sig.attrs);
  auto in_memory = [](const std::vector<bool> &fused, size_t k) {
    return k >= fused.size() || !fused[k];
  };
  double bytes = 0;
  for (size_t k = 0; k < local_operands.size(); ++k)
    if (in_memory(sig.fused_operands, k))
      bytes += static_cast<double>(local_operands[k].numel()) *
               static_cast<double>(rt::dtype_size(local_operands[k].dtype));
  for (size_t r = 0; r < local_results.size(); ++r)
    if (in_memory(sig.fused_results, r))
      bytes += static_cast<double>(local_results[r].numel()) *
               static_cast<double>(rt::dtype_size(local_results[r].dtype));
  const Contraction product = op_kind(sig.op) == OpKind::Contraction
                                  ? contraction_of(local_operands, sig.attrs.einsum().spec)
                                  : Contraction{};
  s.compute_s =
      op_seconds(s.flops, bytes, profile, product, transcendental_elements(sig.op, local_results));
  for (const FinishStep &fs : s.finish) {
    double bytes = local_results.empty()
                       ? 0
                       : static_cast<double>(local_results[0].numel()) *
                             static_cast<double>(rt::dtype_size(local_results[0].dtype));
    double n = static_cast<double>(axes_size(mesh, fs.axes));
    s.finish_s += collective_seconds(fs.op, collective_traffic(fs.op, n, bytes, bytes).moved_bytes,
                                     profile, mesh, fs.axes);
  }
  return s;
}

std::vector<Strategy> enumerate_strategies(const OpSignature &sig, const rt::Mesh &mesh,
                                           const HardwareProfile &profile,
                                           const StrategyOptions &options) {
  std::vector<Strategy> out;
  const ShardingRule &rule = sig.rule;
  if (rule.family == RuleFamily::Unsupported) return out;
  const std::vector<bool> none(sig.operands.size(), false);
  std::vector<std::vector<bool>> carrier_sets;
  if (options.carry_partials && rule.linearity != Linearity::None) {
    if (rule.linearity == Linearity::Any) {
      for (size_t k = 0; k < rule.linear_operands.size(); ++k)
        if (rule.linear_operands[k]) {
          std::vector<bool> c(sig.operands.size(), false);
          c[k] = true;
          carrier_sets.push_back(std::move(c));
        }
    } else {
      std::vector<bool> c(sig.operands.size(), false);
      for (size_t k = 0; k < rule.linear_operands.size(); ++k) c[k] = rule.linear_operands[k];
      carrier_sets.push_back(std::move(c));
    }
  }
  const size_t max = options.max_candidates;
  for (auto &assignment : axis_assignments(mesh, rule.factor_sizes, options.all_axis_orders, max)) {
    if (out.size() >= max) break;
    options.deadline.check();
    AxisSet used;
    for (const auto &axes : assignment) used = used | AxisSet::of_all(axes);
    if (auto s = make_strategy(sig, mesh, profile, assignment, {}, none)) out.push_back(*s);
    if (carrier_sets.empty()) continue;
    std::vector<int> free;
    for (int a = 0; a < static_cast<int>(mesh.axes().size()); ++a)
      if (mesh.axis_size(a) > 1 && !used.contains(a)) free.push_back(a);
    // 2^free subsets: listed lazily, up to the cap.
    const size_t n = std::min<size_t>(free.size(), 16);
    for (uint32_t mask = 1; mask < (1u << n) && out.size() < max; ++mask) {
      AxisSet subset;
      for (size_t b = 0; b < n; ++b)
        if (mask & (1u << b)) subset = subset | AxisSet::of(free[b]);
      for (const auto &carriers : carrier_sets)
        if (auto s = make_strategy(sig, mesh, profile, assignment, subset, carriers))
          out.push_back(*s);
    }
  }
  return out;
}

std::string strategy_str(const Strategy &s, const OpSignature &sig, const rt::Mesh &mesh) {
  std::string labels;
  if (sig.rule.family == RuleFamily::Contraction) {
    EinsumSpec spec;
    std::string error;
    if (parse_einsum(sig.attrs.einsum().spec, spec, error)) {
      for (const auto &in : spec.inputs)
        for (char c : in)
          if (labels.find(c) == std::string::npos) labels += c;
    }
  }
  std::string out;
  for (size_t f = 0; f < s.factor_axes.size(); ++f) {
    if (s.factor_axes[f].empty()) continue;
    // Einsum factors are its index labels; others are the dimensions they split.
    std::string name = f < labels.size() ? std::string(1, labels[f]) : "d" + std::to_string(f);
    out += (out.empty() ? "" : ", ") + name + "->" + axis_list_str(s.factor_axes[f], mesh);
    FactorKind k = sig.rule.factor_kinds[f];
    if (k == FactorKind::Sum) out += " (partial sum)";
    if (k == FactorKind::Max) out += " (pmax)";
    if (k == FactorKind::Min) out += " (pmin)";
  }
  if (!s.carried.empty())
    out += (out.empty() ? "" : ", ") + std::string("carries partial ") +
           axis_list_str(s.carried.axes(), mesh);
  return out.empty() ? "unsplit" : out;
}

}  // namespace spmd::sharding
