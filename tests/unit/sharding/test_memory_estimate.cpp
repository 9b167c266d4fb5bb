// The memory estimate of a plan (evaluate()'s peak_bytes, docs/sharding.md,
// "Memory") on small programs, against hand counts of what the CPU
// executable holds. Each figure below was also measured: `spmdc shard` of the
// program, `spmdc build --target cpu`, `--report-memory` (the same bytes, or 4
// more where the executable converts a scalar).
#include "sharding/memory_kinds.h"
#include "sharding_test_util.h"

using namespace spmd;

namespace {

sharding::PlanCost cost_of(const std::string &text) {
  auto c = test::compile_text(text);
  sharding::PlanCost cost;
  test::shard_text(*c, "f", /*automatic=*/false, nullptr, std::nullopt, &cost);
  return cost;
}

}  // namespace

TEST_CASE("memory estimate: elementwise ops fuse by block shape, as the backends fuse them",
          "[sharding][memory]") {
  // Every block is f32[4, 4] (64 bytes): the parameters 256. w1 - t0 and
  // w2 - t2 have global shapes [4, 16] and [16, 4] but the same block, so the
  // CPU backend computes both in one loop after both transposes: t0, t2 and
  // both results live at once, 256 + 4 * 64 = 512 (measured: 512). The
  // search's rows fuse by global shape (they hold for every plan): the first
  // difference is made before the second transpose, t0 dies, 448.
  const sharding::PlanCost cost = cost_of(R"(mesh M = (m: 4)
sharded f(w1: f32[4, 16] @ P(None, m), w2: f32[16, 4] @ P(m), a: f32[4, 16] @ P(None, m),
          b: f32[16, 4] @ P(m)) -> (f32[4, 16] @ P(None, m), f32[16, 4] @ P(m)) on M {
  return w1 - transpose(b, (1, 0)), w2 - transpose(a, (1, 0))
}
)");
  CHECK(cost.param_bytes == 256);
  CHECK(cost.peak_bytes == 512);
  CHECK(cost.row_bytes == 448);
}

TEST_CASE("memory estimate: an array constant is a buffer of the block its use needs",
          "[sharding][memory]") {
  // x's block f32[4, 4] (64 bytes), the iota made in the same layout (64),
  // the product (64): 192 (measured: 196, the 4-byte scalar of the iota's
  // offset along m).
  const sharding::PlanCost cost = cost_of(R"(mesh M = (m: 4)
sharded f(x: f32[16, 4] @ P(m)) -> f32[16, 4] @ P(m) on M {
  return x * iota((16, 4), dim=0, dtype=f32)
}
)");
  CHECK(cost.param_bytes == 64);
  CHECK(cost.peak_bytes == 192);
  CHECK(cost.peak_by_kind[static_cast<size_t>(sharding::MemoryKind::Temporaries)] == 128);
}

TEST_CASE("memory estimate: an einsum's scratch, as the runtime allocates it",
          "[sharding][memory]") {
  // Blocks: a f32[1, 8, 2] (64 bytes), b f32[8, 6] (192). The runtime copies
  // a into i,k,j order for the gemm (64) and makes the product in i,k,l order
  // (48) before transposing it into the result's i,l,k (48): 256 + 160 = 416
  // (measured: 416).
  const sharding::PlanCost cost = cost_of(R"(mesh M = (m: 4)
sharded f(a: f32[4, 8, 2] @ P(m), b: f32[8, 6] @ P()) -> f32[4, 6, 2] @ P(m) on M {
  return einsum("ijk,jl->ilk", a, b)
}
)");
  CHECK(cost.param_bytes == 256);
  CHECK(cost.peak_bytes == 416);
}

TEST_CASE("memory estimate: a value is resharded after the instruction that last reads it",
          "[sharding][memory]") {
  // Blocks: x f32[4, 8] (128 bytes), w f32[8, 8] (256). y = tanh(x) (128)
  // dies at the product (128); the product is gathered for the result
  // (f32[16, 8], 512) after that, beside the product only: 384 + 128 + 512 =
  // 1024 (measured: 1024), not 1152 with y still counted.
  const sharding::PlanCost cost = cost_of(R"(mesh M = (m: 4)
sharded f(x: f32[16, 8] @ P(m), w: f32[8, 8] @ P()) -> f32[16, 8] @ P() on M {
  y = tanh(x)
  return y @ w
}
)");
  CHECK(cost.param_bytes == 384);
  CHECK(cost.peak_bytes == 1024);
}
