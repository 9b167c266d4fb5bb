// Threefry-2x32 (spmdrt/random.h) against the known-answer vectors of the
// Random123 distribution (tests/kat_vectors: "threefry2x32 20 ctr0 ctr1 key0
// key1 out0 out1"), and the draws' layout independence.
#include "rt_test_util.h"

#include "spmdrt/kernels.h"
#include "spmdrt/random.h"

using namespace spmd::rt;

TEST_CASE("threefry2x32 with 20 rounds gives Random123's known answers", "[runtime][random]") {
  struct Kat {
    uint32_t c0, c1, k0, k1, o0, o1;
  };
  const Kat kats[] = {
      {0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x6b200159, 0x99ba4efe},
      {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x1cb996fc, 0xbb002be7},
      {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xc4923a9c, 0x483df7a0},
  };
  for (const Kat &k : kats) {
    const rnd::Pair out = rnd::threefry2x32({k.k0, k.k1}, {k.c0, k.c1});
    CHECK(out.x0 == k.o0);
    CHECK(out.x1 == k.o1);
  }
}

TEST_CASE("a block of a draw equals the same block of the whole draw", "[runtime][random]") {
  const Tensor key = random_key(Tensor::scalar(DType::I32, 42));
  const Shape global{6, 4};
  const Tensor lo = Tensor::scalar(DType::F32, -1), hi = Tensor::scalar(DType::F32, 3);
  const Tensor whole =
      random_draw(RandomOp::Uniform, std::vector<Tensor>{key, lo, hi}, DType::F32, global, {});
  const Tensor block = random_draw(RandomOp::Uniform,
                                   std::vector<Tensor>{key, lo, hi, Tensor::scalar(DType::I32, 3),
                                                       Tensor::scalar(DType::I32, 2)},
                                   DType::F32, {3, 2}, global);
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t c = 0; c < 2; ++c) CHECK(block.get(r * 2 + c) == whole.get((r + 3) * 4 + (c + 2)));
}
