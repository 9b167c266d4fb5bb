// ops/sharding_rules.cpp — the sharding rule of every op (see sharding_rules.h).
//
// One case per op; the helpers build the common shapes of rules: elementwise
// (factors = the result's dimensions, operands aligned from the right as in
// NumPy broadcasting), reductions, einsum (one factor per index label), and
// layout ops that keep some dimensions intact.
#include "ops/sharding_rules.h"

#include <algorithm>
#include <numeric>

#include "ops/shape_rules.h"

namespace spmd {
namespace {

ShardingRule unsupported(std::string why) {
  ShardingRule r;
  r.family = RuleFamily::Unsupported;
  r.unsupported = std::move(why);
  return r;
}

/// Which operands may carry a partial sum: those the op is linear in (ops.def's
/// Linearity column), one at a time for a product (x1 + x2) * y, together for
/// a sum (a1 + a2) + (b1 + b2).
void set_linear(ShardingRule &r, OpLinearity l) {
  r.linearity = l == OpLinearity::NotLinear ? Linearity::None
                : linear_together(l)        ? Linearity::Together
                                            : Linearity::Any;
  r.linear_operands.assign(r.operand_factors.size(), false);
  for (size_t k = 0; k < r.linear_operands.size(); ++k)
    r.linear_operands[k] = linear_in_operand(l, k);
}

/// Factors = the dimensions of `result`; each operand dimension that is not
/// broadcast (same size as the result's, NumPy alignment from the right) has
/// the result dimension's factor. Operands of rank 0 have no dimensions.
ShardingRule elementwise(const Type &result, std::span<const Type> operands) {
  ShardingRule r;
  r.family = RuleFamily::Elementwise;
  const int64_t rank = result.rank();
  for (int64_t d = 0; d < rank; ++d) {
    r.factor_sizes.push_back(result.shape[d]);
    r.factor_kinds.push_back(FactorKind::Parallel);
  }
  for (const Type &t : operands) {
    std::vector<int> dims;
    const int64_t offset = rank - t.rank();
    for (int64_t d = 0; d < t.rank(); ++d) {
      int64_t rd = d + offset;
      bool same = rd >= 0 && t.shape[d] == result.shape[rd];
      dims.push_back(same ? static_cast<int>(rd) : kNoFactor);
    }
    r.operand_factors.push_back(std::move(dims));
  }
  std::vector<int> out(static_cast<size_t>(rank));
  std::iota(out.begin(), out.end(), 0);
  r.result_factors.push_back(std::move(out));
  return r;
}

/// Factors = the operand's dimensions; dimensions where `keep(d)` is false
/// are not split (kNoFactor in operand and result). Operand and result have
/// the same rank (layout ops that keep every dimension).
template <typename Keep>
ShardingRule same_rank_layout(RuleFamily family, const Type &x, Keep keep) {
  ShardingRule r;
  r.family = family;
  std::vector<int> dims;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (keep(d)) {
      dims.push_back(r.num_factors());
      r.factor_sizes.push_back(x.shape[d]);
      r.factor_kinds.push_back(FactorKind::Parallel);
    } else {
      dims.push_back(kNoFactor);
    }
  }
  r.operand_factors.push_back(dims);
  r.result_factors.push_back(dims);
  return r;
}

ShardingRule reduction(OpCode op, const Type &x, const Attrs &attrs) {
  ShardingRule r;
  r.family = RuleFamily::Reduction;
  FactorKind reduced = op == OpCode::ReduceSum   ? FactorKind::Sum
                       : op == OpCode::ReduceMax ? FactorKind::Max
                                                 : FactorKind::Min;
  // argmax/argmin give a position within the reduced dimensions, which a
  // device holding one block of them cannot know: those are not split.
  const bool positional = op == OpCode::ArgMax || op == OpCode::ArgMin;
  std::vector<int> in, out;
  for (int64_t d = 0; d < x.rank(); ++d) {
    bool is_reduced = std::find(attrs.reduce().dims.begin(), attrs.reduce().dims.end(), d) !=
                      attrs.reduce().dims.end();
    if (is_reduced && positional) {
      in.push_back(kNoFactor);
      continue;
    }
    const int f = r.num_factors();
    in.push_back(f);
    r.factor_sizes.push_back(x.shape[d]);
    r.factor_kinds.push_back(is_reduced ? reduced : FactorKind::Parallel);
    if (!is_reduced) out.push_back(f);
  }
  r.operand_factors.push_back(in);
  r.result_factors.push_back(out);
  return r;
}

ShardingRule contraction(std::span<const Type> operands, const Attrs &attrs) {
  EinsumSpec spec;
  std::string error;
  if (!parse_einsum(attrs.einsum().spec, spec, error))
    return unsupported("einsum spec `" + attrs.einsum().spec + "`: " + error);
  ShardingRule r;
  r.family = RuleFamily::Contraction;
  std::string labels;  // factor k is labels[k]
  auto factor_of = [&](char c, int64_t size) {
    auto pos = labels.find(c);
    if (pos != std::string::npos) return static_cast<int>(pos);
    labels += c;
    r.factor_sizes.push_back(size);
    r.factor_kinds.push_back(spec.output.find(c) != std::string::npos ? FactorKind::Parallel
                                                                      : FactorKind::Sum);
    return static_cast<int>(labels.size() - 1);
  };
  for (size_t k = 0; k < spec.inputs.size() && k < operands.size(); ++k) {
    std::vector<int> dims;
    for (size_t d = 0; d < spec.inputs[k].size(); ++d)
      dims.push_back(factor_of(spec.inputs[k][d], operands[k].shape.at(d)));
    r.operand_factors.push_back(std::move(dims));
  }
  std::vector<int> out;
  for (char c : spec.output) out.push_back(factor_of(c, 0));
  r.result_factors.push_back(std::move(out));
  return r;
}

/// reshape: the dimensions form groups with equal products ([a, b] -> [a*b],
/// [a*b] -> [a, b], [a] -> [a], ...). Splitting the major (first non-unit)
/// dimension of a group into n blocks gives each device the same contiguous
/// range of elements on both sides when n divides both major sizes, so the
/// two major dimensions share a factor of size gcd(major sizes); the other
/// dimensions of the group are not split.
ShardingRule reshape_rule(const Type &x, const Type &y) {
  ShardingRule r;
  r.family = RuleFamily::Reshape;
  std::vector<int> in(static_cast<size_t>(x.rank()), kNoFactor);
  std::vector<int> out(static_cast<size_t>(y.rank()), kNoFactor);
  const bool has_zero = x.numel() == 0;
  size_t i = 0, j = 0;
  const size_t ni = x.shape.size(), no = y.shape.size();
  while (!has_zero && (i < ni || j < no)) {
    size_t i0 = i, j0 = j;
    int64_t pi = 1, pj = 1;
    if (i < ni) pi *= x.shape[i++];
    if (j < no) pj *= y.shape[j++];
    while (pi != pj) {
      if (pi < pj && i < ni) {
        pi *= x.shape[i++];
      } else if (pj < pi && j < no) {
        pj *= y.shape[j++];
      } else {
        break;
      }
    }
    if (pi != pj) break;  // cannot happen for equal element counts
    auto major = [](const Shape &s, size_t b, size_t e) {
      for (size_t k = b; k < e; ++k)
        if (s[k] > 1) return static_cast<int64_t>(k);
      return int64_t{-1};
    };
    int64_t mi = major(x.shape, i0, i), mj = major(y.shape, j0, j);
    if (mi >= 0 && mj >= 0) {
      int f = r.num_factors();
      r.factor_sizes.push_back(std::gcd(x.shape[mi], y.shape[mj]));
      r.factor_kinds.push_back(FactorKind::Parallel);
      in[mi] = f;
      out[mj] = f;
    }
  }
  r.operand_factors.push_back(std::move(in));
  r.result_factors.push_back(std::move(out));
  return r;
}

/// take(x, ids, axis) and scatter_add(x, updates, ids, axis): one factor per
/// dimension of x, shared with the gathered values' copies of those
/// dimensions; take's ids dimensions are factors of their own, shared with
/// its result. The indexed axis may be split (Megatron's vocabulary-parallel
/// embedding): each device looks up only the ids in its block, shifted by the
/// block's offset, and reads zeros for the others (mode "fill"; the sharded
/// program's lowering adds the shift), so take's result is a partial sum over
/// the axis and scatter_add adds into its own block only, a plain split.
/// scatter_add's ids dimensions (shared with the updates' copies of them) are
/// Sum factors: split, each device adds only its share of the updates, so the
/// result is a partial sum over their axes (a data-parallel embedding
/// gradient: one psum, no gathered updates); the lowering keeps x on the
/// devices with index 0 along those axes and zeros elsewhere, so x counts once.
ShardingRule gather_rule(OpCode op, std::span<const Type> operands, const Attrs &attrs) {
  ShardingRule r;
  r.family = RuleFamily::Gather;
  const Type &x = operands[0];
  const Type &ids = op == OpCode::Take ? operands[1] : operands[2];
  const int64_t axis = attrs.gather().axis;
  auto new_factor = [&](int64_t size) {
    r.factor_sizes.push_back(size);
    r.factor_kinds.push_back(FactorKind::Parallel);
    return r.num_factors() - 1;
  };
  std::vector<int> array(static_cast<size_t>(x.rank()), kNoFactor);
  for (int64_t d = 0; d < x.rank(); ++d) array[static_cast<size_t>(d)] = new_factor(x.shape[d]);
  if (op == OpCode::Take) r.factor_kinds[static_cast<size_t>(axis)] = FactorKind::Sum;
  std::vector<int> index(static_cast<size_t>(ids.rank()), kNoFactor);
  for (int64_t d = 0; d < ids.rank(); ++d) {
    index[static_cast<size_t>(d)] = new_factor(ids.shape[d]);
    if (op == OpCode::ScatterAdd) r.factor_kinds.back() = FactorKind::Sum;
  }
  std::vector<int> gathered(array.begin(), array.begin() + axis);
  gathered.insert(gathered.end(), index.begin(), index.end());
  gathered.insert(gathered.end(), array.begin() + axis + 1, array.end());
  if (op == OpCode::Take) {
    r.operand_factors = {array, index};
    r.result_factors = {gathered};
  } else {
    r.operand_factors = {array, gathered, index};
    r.result_factors = {array};
  }
  return r;
}

/// The factors of `op`'s rule (sharding_rule adds which operands are linear).
ShardingRule factors_rule(OpCode op, std::span<const Type> operands, std::span<const Type> results,
                          const Attrs &attrs) {
  const char *collective =
      "a collective communicates between devices; a sharded function works on global arrays";
  switch (op) {
    // Creation: no operands; the result may be split any way (each device
    // makes its own block; iota adds its block's offset).
    case OpCode::Constant:
    case OpCode::Full:
    case OpCode::Iota: {
      ShardingRule r = elementwise(results[0], {});
      r.family = RuleFamily::Creation;
      return r;
    }
    // Elementwise: the rows of spmdrt/unary_math.def and binary_math.def, and
    // cast, stop_gradient and where.
#define UNARY_MATH(Name, spelling, kernel, scalar_fn, Domain, Linearity) case OpCode::Name:
#include "spmdrt/unary_math.def"
#define BINARY_MATH(Name, spelling, kernel, scalar_fn, Kind, symbol, BoolOk, Linearity) \
  case OpCode::Name:
#include "spmdrt/binary_math.def"
    case OpCode::Cast:
    case OpCode::StopGradient:
    case OpCode::Select:
      return elementwise(results[0], operands);
    // Reductions and contractions.
    case OpCode::ReduceSum:
    case OpCode::ReduceMax:
    case OpCode::ReduceMin:
    case OpCode::ArgMax:
    case OpCode::ArgMin:
      return reduction(op, operands[0], attrs);
    case OpCode::Einsum:
      return contraction(operands, attrs);
    // Layout.
    case OpCode::Reshape:
      return reshape_rule(operands[0], results[0]);
    case OpCode::Transpose: {
      ShardingRule r;
      r.family = RuleFamily::Transpose;
      std::vector<int> in, out;
      for (int64_t d = 0; d < operands[0].rank(); ++d) {
        in.push_back(static_cast<int>(d));
        r.factor_sizes.push_back(operands[0].shape[d]);
        r.factor_kinds.push_back(FactorKind::Parallel);
      }
      for (int64_t p : attrs.layout().dims) out.push_back(static_cast<int>(p));
      r.operand_factors.push_back(in);
      r.result_factors.push_back(out);
      return r;
    }
    case OpCode::Reverse: {  // flipping a split dimension would reorder the blocks
      ShardingRule r = same_rank_layout(RuleFamily::Slice, operands[0], [&](int64_t d) {
        return std::find(attrs.layout().dims.begin(), attrs.layout().dims.end(), d) ==
               attrs.layout().dims.end();
      });
      return r;
    }
    case OpCode::BroadcastTo: {
      ShardingRule r = elementwise(results[0], operands);
      r.family = RuleFamily::BroadcastTo;
      return r;
    }
    case OpCode::Slice: {
      const Type &x = operands[0];
      ShardingRule r = same_rank_layout(RuleFamily::Slice, x, [&](int64_t d) {
        return attrs.layout().start[d] == 0 && attrs.layout().limit[d] == x.shape[d] &&
               attrs.layout().stride[d] == 1;
      });
      return r;
    }
    case OpCode::Pad: {
      const Type &x = operands[0];
      ShardingRule r = same_rank_layout(RuleFamily::Slice, x, [&](int64_t d) {
        return attrs.layout().start[d] == 0 && attrs.layout().stride[d] == 1 &&
               attrs.layout().shape[d] == x.shape[d];
      });
      return r;
    }
    case OpCode::Concat: {
      ShardingRule r = same_rank_layout(RuleFamily::Concat, results[0],
                                        [&](int64_t d) { return d != attrs.layout().dim; });
      r.operand_factors.assign(operands.size(), r.result_factors[0]);
      return r;
    }
    case OpCode::DynamicSlice: {
      ShardingRule r = same_rank_layout(RuleFamily::DynamicSlice, operands[0],
                                        [&](int64_t d) { return d != attrs.layout().dim; });
      r.operand_factors.push_back({});  // the index
      return r;
    }
    case OpCode::DynamicUpdateSlice: {
      ShardingRule r = same_rank_layout(RuleFamily::DynamicSlice, operands[0],
                                        [&](int64_t d) { return d != attrs.layout().dim; });
      r.operand_factors.push_back(r.operand_factors[0]);  // the update
      r.operand_factors.push_back({});                    // the index
      return r;
    }
    case OpCode::Take:
    case OpCode::ScatterAdd:
      return gather_rule(op, operands, attrs);
    case OpCode::Constrain: {
      ShardingRule r =
          same_rank_layout(RuleFamily::Identity, operands[0], [](int64_t) { return true; });
      return r;
    }
    // Collectives never appear in sharded functions (lowering rejects them).
    case OpCode::Psum:
    case OpCode::Pmax:
    case OpCode::Pmin:
    case OpCode::Pbroadcast:
    case OpCode::AllGather:
    case OpCode::AllGatherInvariant:
    case OpCode::PsumScatter:
    case OpCode::Pscatter:
    case OpCode::AllToAll:
    case OpCode::Ppermute:
    case OpCode::AxisIndex:
      return unsupported(collective);
    // Random numbers: a draw may be split any way — each device draws its
    // block at its offset, and element i depends on the key and i alone
    // (spmdrt/random.h); key(seed) is elementwise; key_data adds a dimension
    // of 2 words, not split.
    case OpCode::RandomSplit:
    case OpCode::RandomBits:
    case OpCode::RandomUniform:
    case OpCode::RandomNormal:
    case OpCode::RandomInt: {
      ShardingRule r = elementwise(results[0], operands);
      r.family = RuleFamily::Random;
      return r;
    }
    case OpCode::RandomKey:
    case OpCode::RandomFoldIn:
      return elementwise(results[0], operands);
    case OpCode::KeyData: {
      ShardingRule r =
          same_rank_layout(RuleFamily::Elementwise, operands[0], [](int64_t) { return true; });
      r.result_factors[0].push_back(kNoFactor);
      return r;
    }
    case OpCode::Call:
      return unsupported("calls are inlined before sharding");
    case OpCode::For:
      return unsupported("loops are unrolled before sharding");
    case OpCode::DebugPrint: {  // shows whole arrays: each operand gathered (and summed) first
      ShardingRule r;
      r.family = RuleFamily::Print;
      for (const Type &t : operands)
        r.operand_factors.push_back(std::vector<int>(static_cast<size_t>(t.rank()), kNoFactor));
      return r;
    }
  }
  return unsupported("unknown op");
}

}  // namespace

ShardingRule sharding_rule(OpCode op, std::span<const Type> operands, std::span<const Type> results,
                           const Attrs &attrs) {
  ShardingRule r = factors_rule(op, operands, results, attrs);
  if (r.family == RuleFamily::Unsupported) return r;
  // Two ops pass no partial sum although their column says InFirst: a cast
  // (to i32 it is not linear; the column is the float cast the transpose
  // rules invert) and constrain (its spec asks for a complete layout).
  const bool complete_result = op == OpCode::Cast || op == OpCode::Constrain;
  set_linear(r, complete_result ? OpLinearity::NotLinear : op_linearity(op));
  return r;
}

const char *rule_family_name(RuleFamily family) {
  switch (family) {
    case RuleFamily::Creation:
      return "creation";
    case RuleFamily::Elementwise:
      return "elementwise";
    case RuleFamily::Reduction:
      return "reduction";
    case RuleFamily::Contraction:
      return "contraction";
    case RuleFamily::Reshape:
      return "reshape";
    case RuleFamily::Transpose:
      return "transpose";
    case RuleFamily::BroadcastTo:
      return "broadcast";
    case RuleFamily::Slice:
      return "slice";
    case RuleFamily::Concat:
      return "concat";
    case RuleFamily::DynamicSlice:
      return "dynamic slice";
    case RuleFamily::Gather:
      return "gather";
    case RuleFamily::Identity:
      return "constrain";
    case RuleFamily::Random:
      return "random";
    case RuleFamily::Print:
      return "print";
    case RuleFamily::Unsupported:
      return "unsupported";
  }
  return "unsupported";
}

const char *rule_family_requirement(RuleFamily family) {
  switch (family) {
    case RuleFamily::Creation:
      return "a constant can be made in any split";
    case RuleFamily::Elementwise:
      return "elementwise ops need their operands split like the result on every dimension "
             "they do not broadcast, and broadcast dimensions not split";
    case RuleFamily::Reduction:
      return "a reduction keeps the split of the dimensions it keeps; a split reduced "
             "dimension leaves partial results";
    case RuleFamily::Contraction:
      return "a contraction needs each index split the same way in every operand (and in the "
             "result); a split contracted index leaves partial sums";
    case RuleFamily::Reshape:
      return "a reshape can split only the major dimension of each group of dimensions it "
             "merges or splits, by a divisor of both sides";
    case RuleFamily::Transpose:
      return "a transpose moves each dimension's split with the dimension";
    case RuleFamily::BroadcastTo:
      return "broadcast_to keeps the split of the dimensions it does not broadcast";
    case RuleFamily::Slice:
      return "a slice or pad cannot split a dimension it cuts into or pads";
    case RuleFamily::Concat:
      return "concat needs its operands split alike and the concatenation dimension not split";
    case RuleFamily::DynamicSlice:
      return "a dynamic slice cannot split the dimension it indexes";
    case RuleFamily::Gather:
      return "take and scatter_add keep the split of the array's other dimensions and of "
             "take's ids; a split indexed axis leaves take partial sums; split ids leave "
             "scatter_add partial sums";
    case RuleFamily::Identity:
      return "constrain requires exactly the written split";
    case RuleFamily::Random:
      return "a random draw can be made in any split (each device draws its block at its "
             "offset)";
    case RuleFamily::Print:
      return "print shows whole arrays: its operands are gathered first";
    case RuleFamily::Unsupported:
      return "this op cannot be split";
  }
  return "";
}

}  // namespace spmd
