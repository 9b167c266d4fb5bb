// runtime/cpu/kernels_linalg.cpp — matmul and einsum.
//
// Every product goes to detail::gemm (kernels_gemm.cpp: spmdrt's own loops for narrow
// and short f32/f64 products and for i32, BLAS for the rest); a batched left operand
// against an unbatched right operand is folded into a single gemm. bf16 is computed
// in f32 (operands widened exactly) and each output element is rounded to bf16 once.
// einsum reduces indices private to one operand, then maps the contraction onto
// batched gemms: an operand is transposed (copied) only when its letters are in
// neither the order the gemm reads nor that order with the last two groups swapped,
// and the product only when its letters are not in the output's order. The spec is
// parsed, checked and planned once per (spec, operand shapes) on each thread
// (EinsumPlanCache): a tiny einsum called again costs its allocations and its gemm.
#include <algorithm>
#include <cctype>
#include <map>
#include <string>

#include "internal.h"
#include "spmdrt/kernels.h"
#include "spmdrt/parallel.h"

namespace spmd::rt {

using detail::fail;

namespace {

/// Products of a batch per chunk of the pool: enough for about 2^16 multiply-adds. A
/// product inside a chunk runs on its chunk's thread (nested parallel_for calls do not
/// split), with the tiles it has anywhere, so the bits do not depend on the split.
int64_t batch_grain(int64_t m, int64_t n, int64_t k) {
  const int64_t work = std::max<int64_t>(1, m * n * k);
  return std::max<int64_t>(1, (int64_t{1} << 16) / work);
}

/// matmul on operands of rank >= 2 with dtype f32, f64 or i32.
Tensor matmul_batched(const Tensor &a, const Tensor &b) {
  const int64_t ra = a.rank(), rb = b.rank();
  const int64_t m = a.shape()[ra - 2], k = a.shape()[ra - 1];
  const int64_t kb = b.shape()[rb - 2], n = b.shape()[rb - 1];
  if (k != kb) {
    fail("matmul: contracting dimensions differ: " + shape_str(a.shape()) + " x " +
         shape_str(b.shape()));
  }
  const Shape batch_a(a.shape().begin(), a.shape().end() - 2);
  const Shape batch_b(b.shape().begin(), b.shape().end() - 2);
  Shape batch;
  try {
    batch = broadcast_shapes(batch_a, batch_b);
  } catch (const RuntimeError &) {
    fail("matmul: batch dimensions do not broadcast: " + shape_str(a.shape()) + " x " +
         shape_str(b.shape()));
  }
  Shape out_shape = batch;
  out_shape.push_back(m);
  out_shape.push_back(n);
  if (k == 0) return Tensor::zeros(a.dtype(), out_shape);
  Tensor out = Tensor::empty(a.dtype(), out_shape);  // every gemm writes all of it
  if (out.numel() == 0) return out;
  const auto esize = static_cast<int64_t>(dtype_size(a.dtype()));
  const int64_t batch_count = num_elements(batch);
  if (num_elements(batch_b) == 1 && num_elements(batch_a) == batch_count) {
    // [B.., m, k] x [k, n]: one gemm with B*m rows.
    detail::gemm(a.dtype(), false, false, batch_count * m, n, k, a.raw(), b.raw(), out.raw());
    return out;
  }
  // Matrix strides (in whole matrices) of each operand over the broadcast batch.
  const std::vector<int64_t> stride_a = detail::broadcast_strides(batch_a, batch);
  const std::vector<int64_t> stride_b = detail::broadcast_strides(batch_b, batch);
  parallel_for(batch_count, batch_grain(m, n, k), [&](int64_t lo, int64_t hi) {
    for (int64_t flat = lo; flat < hi; ++flat) {
      int64_t ia = 0, ib = 0;
      for (int64_t d = static_cast<int64_t>(batch.size()) - 1, rest = flat; d >= 0; --d) {
        const int64_t i = rest % batch[d];
        rest /= batch[d];
        ia += i * stride_a[d];
        ib += i * stride_b[d];
      }
      detail::gemm(a.dtype(), false, false, m, n, k, a.raw() + ia * m * k * esize,
                   b.raw() + ib * k * n * esize, out.raw() + flat * m * n * esize);
    }
  });
  return out;
}

// ---- einsum ---------------------------------------------------------------------

struct EinsumSpec {
  std::vector<std::string> inputs;
  std::string output;
};

EinsumSpec parse_einsum(std::string_view spec_text, size_t operand_count) {
  std::string spec;
  for (char c : spec_text) {
    if (c != ' ') spec += c;
  }
  const std::string where = "einsum \"" + std::string(spec_text) + "\": ";
  EinsumSpec parsed;
  size_t arrow = spec.find("->");
  std::string lhs = spec.substr(0, arrow);
  size_t start = 0;
  while (true) {
    size_t comma = lhs.find(',', start);
    parsed.inputs.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (parsed.inputs.size() != operand_count) {
    fail(where + "expects " + std::to_string(parsed.inputs.size()) + " operands, got " +
         std::to_string(operand_count));
  }
  if (operand_count < 1 || operand_count > 2) fail(where + "only 1 or 2 operands are supported");
  std::map<char, int> counts;
  for (const std::string &term : parsed.inputs) {
    for (char c : term) {
      if (!std::isalpha(static_cast<unsigned char>(c))) {
        fail(where + "invalid character '" + std::string(1, c) + "'");
      }
      if (std::count(term.begin(), term.end(), c) > 1) {
        fail(where + "repeated index '" + std::string(1, c) +
             "' within one operand is not supported");
      }
      ++counts[c];
    }
  }
  if (arrow != std::string::npos) {
    parsed.output = spec.substr(arrow + 2);
    for (char c : parsed.output) {
      if (!counts.count(c)) fail(where + "output index '" + std::string(1, c) + "' not in inputs");
      if (std::count(parsed.output.begin(), parsed.output.end(), c) > 1) {
        fail(where + "repeated output index '" + std::string(1, c) + "'");
      }
    }
  } else {
    for (auto [c, count] : counts) {  // NumPy implicit mode: once-used indices, sorted
      if (count == 1) parsed.output += c;
    }
  }
  return parsed;
}

std::vector<int64_t> positions(const std::string &from, const std::string &order) {
  std::vector<int64_t> perm;
  for (char c : order) perm.push_back(static_cast<int64_t>(from.find(c)));
  return perm;
}

/// How einsum_compute maps a two-operand contraction onto batched gemms,
/// from the operands' shapes alone (einsum_scratch_bytes prices the same
/// plan): the terms left after summing out private indices, the gemm's
/// sizes, which operands are multiplied transposed where they lie and which
/// are copied into gemm order first, and the product's index order.
struct ContractionPlan {
  std::string ta, tb;  // the operands' terms after sum_out
  bool reduce_a = false, reduce_b = false;
  std::string batch, free_a, free_b, contract;
  std::string a_order, b_order;
  bool trans_a = false, trans_b = false;
  int64_t nb = 1, m = 1, k = 1, n = 1;
  std::string product_term;
  // What einsum copies: an operand into gemm order (neither in it nor transposable
  // in place), the product into the output's order.
  bool copy_a = false, copy_b = false, permute_product = false;
};

std::string kept_letters(const std::string &term, const std::string &keep) {
  std::string remaining;
  for (char c : term)
    if (keep.find(c) != std::string::npos) remaining += c;
  return remaining;
}

ContractionPlan plan_contraction(const EinsumSpec &spec, const Shape &shape_a,
                                 const Shape &shape_b) {
  ContractionPlan c;
  const std::string &in_a = spec.inputs[0], &in_b = spec.inputs[1];
  c.ta = kept_letters(in_a, in_b + spec.output);
  c.tb = kept_letters(in_b, in_a + spec.output);
  c.reduce_a = c.ta != in_a;
  c.reduce_b = c.tb != in_b;
  for (char ch : spec.output) {
    bool a = c.ta.find(ch) != std::string::npos, b = c.tb.find(ch) != std::string::npos;
    (a && b ? c.batch : a ? c.free_a : c.free_b) += ch;
  }
  for (char ch : c.ta)
    if (c.tb.find(ch) != std::string::npos && spec.output.find(ch) == std::string::npos)
      c.contract += ch;
  auto size_of = [](const Shape &shape, const std::string &term, const std::string &letters) {
    int64_t size = 1;
    for (char ch : letters) size *= shape[term.find(ch)];
    return size;
  };
  c.nb = size_of(shape_a, in_a, c.batch);
  c.m = size_of(shape_a, in_a, c.free_a);
  c.k = size_of(shape_a, in_a, c.contract);
  c.n = size_of(shape_b, in_b, c.free_b);
  // An operand whose letters already run batch, free, contract (a) or batch, contract, free
  // (b) is multiplied transposed where it lies (a gemm flag) instead of copied first.
  c.a_order = c.batch + c.free_a + c.contract;
  c.b_order = c.batch + c.contract + c.free_b;
  const std::string a_swapped = c.batch + c.contract + c.free_a;
  const std::string b_swapped = c.batch + c.free_b + c.contract;
  c.trans_a = c.ta != c.a_order && c.ta == a_swapped;
  c.trans_b = c.tb != c.b_order && c.tb == b_swapped;
  c.product_term = c.batch + c.free_a + c.free_b;
  c.copy_a = !c.trans_a && c.ta != c.a_order;
  c.copy_b = !c.trans_b && c.tb != c.b_order;
  c.permute_product = c.product_term != spec.output;
  return c;
}

/// Everything einsum works out from the spec and the operands' shapes alone, as
/// index lists (no letters): what each operand sums out, how it is permuted into
/// gemm order (empty: used where it lies), the gemm's sizes, and how the product
/// is permuted into the output's order (empty: already in it). Built once per
/// (spec, shapes) and cached (EinsumPlanCache), so a small einsum called again
/// parses, validates and plans nothing.
struct EinsumPlan {
  size_t operands = 0;
  std::vector<int64_t> sum_a, sum_b;    // axes of each operand summed out first
  std::vector<int64_t> perm_a, perm_b;  // into gemm order; empty: none
  bool trans_a = false, trans_b = false;
  int64_t nb = 1, m = 1, k = 1, n = 1;
  Shape product_shape;            // the product, its letters batch, free a, free b
  std::vector<int64_t> out_perm;  // product -> output; empty: none
};

std::vector<int64_t> summed_axes(const std::string &term, const std::string &keep) {
  std::vector<int64_t> axes;
  for (size_t i = 0; i < term.size(); ++i)
    if (keep.find(term[i]) == std::string::npos) axes.push_back(static_cast<int64_t>(i));
  return axes;
}

/// positions(from, order), or empty when that is the identity.
std::vector<int64_t> permutation_or_none(const std::string &from, const std::string &order) {
  std::vector<int64_t> perm = positions(from, order);
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return perm;
  return {};
}

/// Parses and validates `spec_text` against the operands' shapes (throwing what
/// einsum reports) and plans the computation.
EinsumPlan make_einsum_plan(std::string_view spec_text, std::span<const Tensor> operands) {
  const EinsumSpec spec = parse_einsum(spec_text, operands.size());
  std::map<char, int64_t> sizes;
  for (size_t i = 0; i < operands.size(); ++i) {
    const std::string &term = spec.inputs[i];
    if (static_cast<int64_t>(term.size()) != operands[i].rank()) {
      fail("einsum \"" + std::string(spec_text) + "\": operand " + std::to_string(i) +
           " has shape " + shape_str(operands[i].shape()) + " but the spec names " +
           std::to_string(term.size()) + " indices");
    }
    for (size_t d = 0; d < term.size(); ++d) {
      auto [it, inserted] = sizes.emplace(term[d], operands[i].shape()[d]);
      if (!inserted && it->second != operands[i].shape()[d]) {
        fail("einsum \"" + std::string(spec_text) + "\": index '" + std::string(1, term[d]) +
             "' has sizes " + std::to_string(it->second) + " and " +
             std::to_string(operands[i].shape()[d]));
      }
    }
  }
  EinsumPlan plan;
  plan.operands = operands.size();
  if (operands.size() == 1) {
    const std::string &term = spec.inputs[0];
    plan.sum_a = summed_axes(term, spec.output);
    plan.out_perm = permutation_or_none(kept_letters(term, spec.output), spec.output);
    return plan;
  }
  const ContractionPlan c = plan_contraction(spec, operands[0].shape(), operands[1].shape());
  const std::string &in_a = spec.inputs[0], &in_b = spec.inputs[1];
  plan.sum_a = summed_axes(in_a, in_b + spec.output);
  plan.sum_b = summed_axes(in_b, in_a + spec.output);
  if (c.copy_a) plan.perm_a = positions(c.ta, c.a_order);
  if (c.copy_b) plan.perm_b = positions(c.tb, c.b_order);
  plan.trans_a = c.trans_a;
  plan.trans_b = c.trans_b;
  plan.nb = c.nb;
  plan.m = c.m;
  plan.k = c.k;
  plan.n = c.n;
  for (char ch : c.product_term) plan.product_shape.push_back(sizes.at(ch));
  if (c.permute_product) plan.out_perm = positions(c.product_term, spec.output);
  return plan;
}

/// The plans this thread used last, keyed by spec text and operand shapes (a
/// plan does not depend on the dtype). A hit compares the spec and the shapes,
/// allocating nothing; a miss plans and replaces the oldest entry. Each device
/// thread has its own: no locks, and which plans are cached never changes a
/// result (a plan is a function of its key).
class EinsumPlanCache {
 public:
  /// The plan for these operands, valid until this thread's next einsum.
  const EinsumPlan &get(std::string_view spec, std::span<const Tensor> operands) {
    for (size_t i = 0; i < entries_.size(); ++i) {
      const Entry &e = entries_[i];
      if (e.shapes.size() == operands.size() && e.spec == spec && matches(e.shapes, operands))
        return e.plan;
    }
    Entry fresh{std::string(spec), {}, make_einsum_plan(spec, operands)};
    for (const Tensor &t : operands) fresh.shapes.push_back(t.shape());
    if (entries_.size() < kEntries) {
      entries_.push_back(std::move(fresh));
      return entries_.back().plan;
    }
    Entry &slot = entries_[next_];
    next_ = (next_ + 1) % kEntries;
    slot = std::move(fresh);
    return slot.plan;
  }

 private:
  static constexpr size_t kEntries = 32;
  struct Entry {
    std::string spec;
    std::vector<Shape> shapes;
    EinsumPlan plan;
  };
  static bool matches(const std::vector<Shape> &shapes, std::span<const Tensor> operands) {
    for (size_t i = 0; i < shapes.size(); ++i)
      if (shapes[i] != operands[i].shape()) return false;
    return true;
  }
  std::vector<Entry> entries_;
  size_t next_ = 0;
};

const EinsumPlan &einsum_plan(std::string_view spec, std::span<const Tensor> operands) {
  thread_local EinsumPlanCache cache;
  return cache.get(spec, operands);
}

/// x with `axes` summed out, in `scratch` when there are any (else x itself: no copy).
const Tensor &summed(const Tensor &x, const std::vector<int64_t> &axes, Tensor &scratch) {
  if (axes.empty()) return x;
  return scratch = reduce(ReduceOp::Sum, x, axes);
}

/// x permuted by `perm`, in `scratch` when it is one (else x itself: no copy).
const Tensor &permuted(const Tensor &x, const std::vector<int64_t> &perm, Tensor &scratch) {
  if (perm.empty()) return x;
  return scratch = transpose(x, perm);
}

/// The same temporaries as einsum_scratch_bytes prices: the summed operands, their
/// copies in gemm order, the product and (when out of order) its transpose.
Tensor einsum_compute(const EinsumPlan &plan, std::span<const Tensor> operands) {
  Tensor sum_a, perm_a;
  if (plan.operands == 1)
    return permuted(summed(operands[0], plan.sum_a, sum_a), plan.out_perm, perm_a);
  Tensor sum_b, perm_b;
  const Tensor &a3 = permuted(summed(operands[0], plan.sum_a, sum_a), plan.perm_a, perm_a);
  const Tensor &b3 = permuted(summed(operands[1], plan.sum_b, sum_b), plan.perm_b, perm_b);
  const DType dtype = a3.dtype();
  Tensor product = Tensor::empty(dtype, plan.product_shape);  // every gemm writes all of it
  const auto esize = static_cast<int64_t>(dtype_size(dtype));
  const int64_t m = plan.m, n = plan.n, k = plan.k;
  if (plan.nb == 1) {
    detail::gemm(dtype, plan.trans_a, plan.trans_b, m, n, k, a3.raw(), b3.raw(), product.raw());
  } else {
    parallel_for(plan.nb, batch_grain(m, n, k), [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i)
        detail::gemm(dtype, plan.trans_a, plan.trans_b, m, n, k, a3.raw() + i * m * k * esize,
                     b3.raw() + i * k * n * esize, product.raw() + i * m * n * esize);
    });
  }
  if (plan.out_perm.empty()) return product;
  return transpose(product, plan.out_perm);
}

}  // namespace

Tensor matmul(const Tensor &a, const Tensor &b) {
  if (a.dtype() != b.dtype()) {
    fail(std::string("matmul: operand dtypes differ (") + dtype_name(a.dtype()) + " vs " +
         dtype_name(b.dtype()) + ")");
  }
  if (a.rank() < 1 || b.rank() < 1) fail("matmul: operands must have rank >= 1");
  if (a.dtype() == DType::Bool) fail("matmul does not accept bool operands");
  if (a.dtype() == DType::BF16) {
    return cast(matmul(cast(a, DType::F32), cast(b, DType::F32)), DType::BF16);
  }
  const bool promote_a = a.rank() == 1, promote_b = b.rank() == 1;
  Tensor a2 = promote_a ? a.reshaped({1, a.shape()[0]}) : a;
  Tensor b2 = promote_b ? b.reshaped({b.shape()[0], 1}) : b;
  Tensor out = matmul_batched(a2, b2);
  if (!promote_a && !promote_b) return out;
  Shape shape = out.shape();
  if (promote_b) shape.erase(shape.end() - 1);
  if (promote_a) shape.erase(shape.end() - 1 - (promote_b ? 0 : 1));
  return out.reshaped(shape);
}

Tensor einsum(std::string_view spec_text, std::span<const Tensor> operands) {
  const EinsumPlan &plan = einsum_plan(spec_text, operands);  // parses and validates once
  if (operands.size() == 2 && operands[0].dtype() != operands[1].dtype()) {
    fail("einsum: operand dtypes differ");
  }
  const DType dtype = operands[0].dtype();
  if (dtype == DType::Bool) fail("einsum does not accept bool operands");
  if (dtype == DType::BF16) {  // compute in f32, round once at the end
    std::vector<Tensor> wide;
    for (const Tensor &t : operands) wide.push_back(cast(t, DType::F32));
    return cast(einsum_compute(plan, wide), DType::BF16);
  }
  return einsum_compute(plan, operands);
}

int64_t einsum_scratch_bytes(std::string_view spec_text, std::span<const Shape> shapes,
                             DType dtype) {
  const EinsumSpec spec = parse_einsum(spec_text, shapes.size());
  // Every element count below is of a shape einsum() accepted: no overflow.
  auto elements = [](const Shape &shape, const std::string &term, const std::string &letters) {
    int64_t size = 1;
    for (char ch : letters) size *= shape[term.find(ch)];
    return size;
  };
  const bool bf16 = dtype == DType::BF16;  // computed in f32: widened copies, an f32 result
  const auto esize = static_cast<int64_t>(dtype_size(bf16 ? DType::F32 : dtype));
  int64_t widened = 0;
  if (bf16)
    for (size_t i = 0; i < shapes.size(); ++i) widened += num_elements(shapes[i]) * esize;
  int64_t out = esize;  // the result's bytes: each output letter's size, from its operand
  for (char ch : spec.output)
    for (size_t i = 0; i < shapes.size(); ++i)
      if (spec.inputs[i].find(ch) != std::string::npos) {
        out *= shapes[i][spec.inputs[i].find(ch)];
        break;
      }
  int64_t scratch = 0;  // beyond the (f32) result, at the kernel's peak
  if (shapes.size() == 1) {
    const std::string kept = kept_letters(spec.inputs[0], spec.output);
    const bool reduces = kept != spec.inputs[0], permutes = kept != spec.output;
    if (reduces && permutes) scratch = out;  // the reduced operand, then its transpose
  } else {
    const ContractionPlan c = plan_contraction(spec, shapes[0], shapes[1]);
    const int64_t a = elements(shapes[0], spec.inputs[0], c.ta) * esize;
    const int64_t b = elements(shapes[1], spec.inputs[1], c.tb) * esize;
    if (c.reduce_a) scratch += a;
    if (c.reduce_b) scratch += b;
    if (c.copy_a) scratch += a;  // copied into gemm order
    if (c.copy_b) scratch += b;
    if (c.permute_product) scratch += out;  // the product, then its transpose
  }
  if (!bf16) return scratch;
  // Computed on f32 copies of the operands; the peak is either inside that
  // computation or when its f32 result is cast to the bf16 one.
  const int64_t result = out / 2;
  return std::max(widened + scratch + out, widened + out + result) - result;
}

GemmShape einsum_gemm_shape(std::string_view spec_text, std::span<const Shape> shapes) {
  const EinsumSpec spec = parse_einsum(spec_text, shapes.size());
  GemmShape g;
  if (shapes.size() != 2 || shapes[0].size() != spec.inputs[0].size() ||
      shapes[1].size() != spec.inputs[1].size())
    return g;
  const ContractionPlan c = plan_contraction(spec, shapes[0], shapes[1]);
  g.batch = c.nb;
  g.m = c.m;
  g.k = c.k;
  g.n = c.n;
  g.trans_a = c.trans_a;
  g.trans_b = c.trans_b;
  // What einsum_compute copies (einsum_scratch_bytes' temporaries): each operand
  // summed over its private indices (counted by the elements it reads), copied
  // into gemm order, the product permuted into the output's order.
  if (c.reduce_a) g.copied_elements += num_elements(shapes[0]);
  if (c.reduce_b) g.copied_elements += num_elements(shapes[1]);
  if (c.copy_a) g.copied_elements += c.nb * c.m * c.k;
  if (c.copy_b) g.copied_elements += c.nb * c.k * c.n;
  if (c.permute_product) g.copied_elements += c.nb * c.m * c.n;
  return g;
}

}  // namespace spmd::rt
