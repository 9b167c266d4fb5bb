// test_transpose.cpp — transposition: the dot-product identity <f(x), y> = <x, f^T(y)>
// for every linear op and collective (f64, several meshes), the communication
// the design note promises for its five examples, and double transposition.
#include <array>

#include "ir/loops.h"
#include "random_loops.h"
#include "transform_test_util.h"

namespace spmd::test {
namespace {

/// f32 -> f64 so the identity can be checked to 1e-10.
std::string to_f64(std::string text) {
  for (size_t p = 0; (p = text.find("f32", p)) != std::string::npos; p += 3)
    text.replace(p, 3, "f64");
  return text;
}

/// Checks <f(x), y> = <x, f^T(y)> on random inputs; `linear` lists the
/// parameters f is linear in (the others are constants passed to both).
void check_dot_product(const std::string &text, std::vector<std::string> linear = {},
                       uint64_t seed = 1, bool remat = false) {
  INFO(text);
  auto c = compile_ok(text);
  auto t = derive_ok(*c, DeriveKind::Transpose, "", linear, {}, remat);
  const ir::Function &f = shmap_of(*c);
  const ir::Function &ft = shmap_of(*t);
  auto x = random_inputs(*c, seed);
  auto fx = run(*c, x);
  // Random cotangents, one per output.
  std::vector<rt::Tensor> y;
  for (size_t k = 0; k < fx.size(); ++k)
    y.push_back(rt::random_tensor(fx[k].dtype(), fx[k].shape(), seed * 31 + k + 100));
  // f^T's inputs: the constant params (in order), then the cotangents.
  std::vector<bool> is_linear(f.params.size(), linear.empty());
  for (size_t k = 0; k < f.params.size(); ++k)
    for (const auto &n : linear)
      is_linear[k] = is_linear[k] || f.values[f.params[k].value].name == n;
  std::vector<rt::Tensor> tin;
  for (size_t k = 0; k < f.params.size(); ++k)
    if (!is_linear[k]) tin.push_back(x[k]);
  for (auto &v : y) tin.push_back(v);
  REQUIRE(tin.size() == ft.params.size());
  auto xt = run(*t, tin);
  double lhs = 0, rhs = 0, scale = 0;
  for (size_t k = 0; k < fx.size(); ++k) {
    lhs += dot(fx[k], y[k]);
    scale += std::sqrt(dot(fx[k], fx[k]) * dot(y[k], y[k]));
  }
  size_t j = 0;
  for (size_t k = 0; k < f.params.size(); ++k)
    if (is_linear[k]) rhs += dot(x[k], xt[j++]);
  INFO("lhs=" << lhs << " rhs=" << rhs);
  CHECK(std::abs(lhs - rhs) <= 1e-10 * std::max(1.0, scale));
}

/// f and t(t(f)) compute the same values on random inputs.
void check_same_values(const Compilation &c, const Compilation &tt) {
  auto x = random_inputs(c, 5);
  auto a = run(c, x), b = run(tt, x);
  REQUIRE(a.size() == b.size());
  for (size_t k = 0; k < a.size(); ++k)
    for (int64_t e = 0; e < a[k].numel(); ++e)
      CHECK(a[k].get(e) == Approx(b[k].get(e)).epsilon(1e-12));
}

TEST_CASE("transpose: dot-product identity for each linear op", "[transpose]") {
  const std::string m = "mesh M = (i: 4)\n";
  SECTION("neg, add, sub, scale") {
    check_dot_product(
        m +
        "shmap f(x: f64[8, 3] @ P(i), z: f64[8, 3] @ P(i)) -> f64[8, 3] @ P(i) on M {\n"
        "  return -x + 2.0 * z - x / 4.0\n}\n");
  }
  SECTION("mul and div by a constant parameter, broadcasting") {
    check_dot_product(
        m + "shmap f(x: f64[8, 3] @ P(i), w: f64[3] @ P()) -> f64[8, 3] @ P(i) on M {\n"
            "  return x * w + x / (w * w + 1.0)\n}\n",
        {"x"});
  }
  SECTION("broadcasting a linear operand") {
    check_dot_product(m +
                      "shmap f(b: f64[3] @ P(), x: f64[8, 3] @ P(i)) -> f64[8, 3] @ P(i) on M {\n"
                      "  return x + b\n}\n");
  }
  SECTION("reductions, reshape, transpose, broadcast_to") {
    check_dot_product(m +
                      "shmap f(x: f64[8, 6] @ P(i)) -> (f64[4, 6] @ P(i), f64[8] @ P(i), f64[4, 2, "
                      "3] @ P(i)) on M {\n"
                      "  a = transpose(reshape(x, (2, 2, 3)), (1, 0, 2))\n"
                      "  b = sum(a, axes=(0,))\n"
                      "  c = sum(x, axes=1)\n"
                      "  d = broadcast_to(b, (1, 2, 3))\n"
                      "  return reshape(b, (1, 6)), c, d\n}\n");
  }
  SECTION("slicing with steps, pad, concat") {
    check_dot_product(
        m +
        "shmap f(x: f64[8, 6] @ P(i)) -> (f64[16, 3] @ P(i), f64[8, 6] @ P(i)) on M {\n"
        "  a = x[:, 1:6:2]\n"
        "  b = pad(a, (2, 7), start=(0, 1), stride=(1, 2))\n"
        "  return concat((a, x[:, 0:3]), axis=0), b[:, 0:6] + x\n}\n");
  }
  SECTION("einsum and matmul with a constant operand") {
    check_dot_product(m + "shmap f(x: f64[8, 3] @ P(i), w: f64[3, 5] @ P(), v: f64[3] @ P()) -> "
                          "(f64[8, 5] @ P(i), f64[8] @ P(i), f64[8, 3, 5] @ P(i)) on M {\n"
                          "  return x @ w, x @ v, einsum(\"bi,ij->bij\", x, w)\n}\n",
                      {"x"});
  }
  SECTION("where with a constant condition, dynamic_slice") {
    check_dot_product(m + "shmap f(x: f64[8, 3] @ P(i), c: f64[8, 3] @ P(i)) -> (f64[8, 3] @ P(i), "
                          "f64[4, 3] @ P(i)) on M {\n"
                          "  k = axis_index(i)\n"
                          "  return where(c > 0.0, x, 0.0), dynamic_slice(x, k - k, size=1)\n}\n",
                      {"x"});
  }
}

TEST_CASE("transpose: dot-product identity for take and scatter_add", "[transpose]") {
  // Repeated ids (0 and 3 twice on device 0), a replicated table looked up by
  // each device's own ids (its transpose sums over the devices), axis 1.
  check_dot_product(
      "mesh M = (i: 4)\n"
      "shmap f(t: f64[8, 3] @ P(), u: f64[40, 3] @ P(i), x: f64[8, 5] @ P(i)) -> (f64[40, 3] @ "
      "P(i), f64[32, 3] @ P(i), f64[8, 2, 2] @ P(i)) on M {\n"
      "  ids = (iota((10,), dtype=i32) * 3 + axis_index(i)) % 8\n"
      "  cols = reshape((iota((4,), dtype=i32) * 3) % 5, (2, 2))\n"
      "  return take(t, ids), scatter_add(t, u, ids), take(x, cols, axis=1)\n}\n");
  // Only the updates linear, into zeros, and mode="fill" dropping ids 8 and 9.
  check_dot_product(
      "mesh M = (i: 2)\n"
      "shmap f(t: f64[8, 3] @ P(), u: f64[20, 3] @ P(i)) -> (f64[16, 3] @ P(i), f64[20, 3] @ "
      "P(i)) on M {\n"
      "  ids = iota((10,), dtype=i32)\n"
      "  s = scatter_add(zeros((8, 3), f64), u, ids, mode=\"fill\")\n"
      "  return s, take(s * t, ids, mode=\"fill\")\n}\n",
      {"u"});
}

TEST_CASE("transpose: dot-product identity for the NumPy-style ops", "[transpose]") {
  const std::string m = "mesh M = (i: 4)\n";
  SECTION("flip, negative steps, None subscripts, .T, stack, squeeze, expand_dims") {
    check_dot_product(
        m +
        "shmap f(x: f64[8, 6] @ P(i), z: f64[8, 6] @ P(i)) -> (f64[8, 6] @ P(i), f64[8, 3] @ "
        "P(i), f64[6, 8] @ P(None, i), f64[8, 2, 6] @ P(i), f64[8, 1, 6] @ P(i)) on M {\n"
        "  a = flip(x) + flip(z, axes=1)\n"
        "  b = x[::-1, 5:0:-2] + z[:, ::2]\n"
        "  c = (x + z).T\n"
        "  d = stack((x, squeeze(expand_dims(z, 0))), axis=1)\n"
        "  return a, b, c, d, x[:, None] + z[:, None, :]\n}\n");
  }
  SECTION("batched matmul with broadcast batch dimensions, in each operand") {
    check_dot_product(m + "shmap f(a: f64[8, 1, 3, 4] @ P(i), b: f64[5, 4, 2] @ P()) -> "
                          "f64[8, 5, 3, 2] @ P(i) on M {\n"
                          "  return a @ b\n}\n",
                      {"a"});
    check_dot_product(m + "shmap f(a: f64[8, 1, 3, 4] @ P(i), b: f64[5, 4, 2] @ P()) -> "
                          "f64[8, 5, 3, 2] @ P(i) on M {\n"
                          "  return a @ b\n}\n",
                      {"b"});
  }
}

TEST_CASE("transpose: dot-product identity for each collective", "[transpose]") {
  SECTION("psum to an unmapped output, pbroadcast") {
    check_dot_product(
        "mesh M = (i: 4)\nshmap f(x: f64[8] @ P(i), z: f64[2] @ P()) -> (f64[2] @ P(), f64[8] @ "
        "P(i)) on M {\n"
        "  return psum(x, i), pbroadcast(z, i)\n}\n");
  }
  SECTION("all_gather tiled along dim 1 and untiled, psum_scatter") {
    check_dot_product(
        "mesh M = (i: 4)\nshmap f(x: f64[4, 8] @ P(None, i), y: f64[16, 3] @ P(i)) -> (f64[4, 32] "
        "@ P(None, i), f64[4, 3] @ P(i), f64[16, 4, 3] @ P(i)) on M {\n"
        "  return all_gather(x, i, axis=1), psum_scatter(y, i), all_gather(y, i, "
        "tiled=false)\n}\n");
  }
  SECTION("all_gather_invariant and pscatter") {
    check_dot_product(
        "mesh M = (i: 4)\nshmap f(x: f64[8, 2] @ P(i), z: f64[8] @ P()) -> (f64[8, 2] @ P(), "
        "f64[8] @ P(i)) on M {\n"
        "  return all_gather_invariant(x, i), pscatter(z, i)\n}\n");
  }
  SECTION("all_to_all and ppermute") {
    check_dot_product(
        "mesh M = (i: 4)\nshmap f(x: f64[16, 8] @ P(i)) -> (f64[16, 8] @ P(i), f64[16, 8] @ P(i), "
        "f64[16, 8] @ P(i)) on M {\n"
        "  a = all_to_all(x, i, split_axis=1, concat_axis=0)\n"
        "  return reshape(a, (4, 8)), ppermute(x, i, shift=1), ppermute(x, i, perm=[(0, 2), (1, "
        "0)])\n}\n");
  }
  SECTION("2-D mesh: collectives over one axis and over both") {
    check_dot_product(
        "mesh M = (data: 2, model: 4)\nshmap f(x: f64[8, 8] @ P(data, model)) -> (f64[4, 8] @ "
        "P(None, model), f64[2, 2] @ P(), f64[8, 32] @ P(data, model)) on M {\n"
        "  a = psum(x, data)\n"
        "  b = psum(x, (data, model))\n"
        "  c = all_gather(x, model, axis=1)\n"
        "  return a, b[0:2, 0:2], c\n}\n");
  }
  SECTION("2-D mesh: ppermute over both axes (flattened ranks) transposes to the inverse") {
    check_dot_product(
        "mesh M = (data: 2, model: 3)\nshmap f(x: f64[12, 2] @ P((data, model))) -> (f64[12, 2] "
        "@ P((data, model)), f64[12, 2] @ P((model, data))) on M {\n"
        "  return ppermute(x, (data, model), perm=[(0, 3), (3, 5), (5, 1), (1, 0), (2, 4)]), "
        "ppermute(x, (model, data), shift=2)\n}\n");
    auto c = compile_ok(
        "mesh M = (data: 2, model: 3)\nshmap f(x: f32[6] @ P((data, model))) -> f32[6] @ "
        "P((data, model)) on M {\n  return ppermute(x, (data, model), perm=[(0, 3), (3, 5)])\n}\n");
    auto t = derive_ok(*c, DeriveKind::Transpose, "");
    const ir::Instr &p = shmap_of(*t).body.back();
    REQUIRE(p.op == OpCode::Ppermute);
    CHECK(p.attrs.collective().axes == std::vector<int>{0, 1});
    CHECK(p.attrs.collective().perm == std::vector<std::pair<int64_t, int64_t>>{{3, 0}, {5, 3}});
  }
  SECTION("1-device mesh") {
    check_dot_product(
        "mesh M = (i: 1)\nshmap f(x: f64[4] @ P(i)) -> f64[4] @ P(i) on M {\n"
        "  return psum(x, i) + all_gather(x, i)\n}\n");
  }
}

TEST_CASE("transpose: the design note's examples communicate only what they must", "[transpose]") {
  SECTION("example 1: a pbroadcast, no psum") {
    auto c = compile_ok(sample("seed/example1.spmd"));
    auto t = derive_ok(*c, DeriveKind::Transpose, "f1");
    CHECK(count_op(*t, "pbroadcast") == 1);
    CHECK(count_op(*t, "psum") == 0);
    CHECK(collective_stats(*t->module, shmap_of(*t)).total_moved_bytes() == 0);
    check_dot_product(to_f64(sample("seed/example1.spmd")));
  }
  SECTION("example 2: one psum stays") {
    auto c = compile_ok(sample("seed/example2.spmd"));
    auto t = derive_ok(*c, DeriveKind::Transpose, "f2", {"x"});
    CHECK(count_op(*t, "psum") == 1);
    check_dot_product(to_f64(sample("seed/example2.spmd")), {"x"});
  }
  SECTION("example 3: the cursed identity transposes to itself, with an empty body") {
    auto c = compile_ok(sample("seed/example3.spmd"));
    auto t = derive_ok(*c, DeriveKind::Transpose, "cursed_identity");
    CHECK(shmap_of(*t).body.empty());
    auto tt = derive_ok(*t, DeriveKind::Transpose, "");
    CHECK(shmap_of(*tt).body.empty());
    auto ttt = derive_ok(*tt, DeriveKind::Transpose, "");
    CHECK(shmap_of(*ttt).body.empty());
    CHECK(shmap_of(*ttt).params[0].spec == shmap_of(*c).params[0].spec);
  }
  SECTION("example 4: a pscatter, no communication at all") {
    auto c = compile_ok(sample("seed/example4.spmd"));
    auto t = derive_ok(*c, DeriveKind::Transpose, "f4");
    CHECK(count_op(*t, "pscatter") == 1);
    CHECK(collective_stats(*t->module, shmap_of(*t)).total_moved_bytes() == 0);
    check_dot_product(to_f64(sample("seed/example4.spmd")));
  }
  SECTION("example 5: psum_scatter") {
    auto c = compile_ok(sample("seed/example5.spmd"));
    auto t = derive_ok(*c, DeriveKind::Transpose, "f5", {"x"});
    CHECK(count_op(*t, "psum_scatter") == 1);
    CHECK(count_op(*t, "psum") == 0);
    check_dot_product(to_f64(sample("seed/example5.spmd")), {"x"});
  }
}

TEST_CASE("transpose: transposing twice gives back the program", "[transpose]") {
  for (const char *name : {"seed/example1.spmd", "seed/example3.spmd", "seed/example4.spmd"}) {
    INFO(name);
    auto c = compile_ok(to_f64(sample(name)));
    auto t = derive_ok(*c, DeriveKind::Transpose, "");
    auto tt = derive_ok(*t, DeriveKind::Transpose, "");
    const ir::Function &f = shmap_of(*c), &g = shmap_of(*tt);
    CHECK(g.name == f.name);
    REQUIRE(g.params.size() == f.params.size());
    for (size_t k = 0; k < f.params.size(); ++k) {
      CHECK(g.params[k].spec == f.params[k].spec);
      CHECK(g.params[k].global_shape == f.params[k].global_shape);
    }
    // Same collectives, same numbers.
    auto sf = collective_stats(*c->module, f), sg = collective_stats(*tt->module, g);
    CHECK(sf.by_op.size() == sg.by_op.size());
    for (auto &[op, st] : sf.by_op) CHECK(sg.by_op[op].count == st.count);
    check_same_values(*c, *tt);
  }
}

TEST_CASE("transpose: loops run backwards and satisfy the dot-product identity",
          "[transpose][loops]") {
  SECTION("a linear recurrence with collectives, stacked and recomputed") {
    const std::string text =
        "mesh M = (i: 4)\n"
        "shmap f(xs: f64[5, 8] @ P(None, i), a: f64[8] @ P(i), w: f64[2] @ P()) -> (f64[8] @ "
        "P(i), f64[2] @ P(), f64[5, 8] @ P(None, i)) on M {\n"
        "  s = a\n"
        "  z = zeros((2,), f64)\n"
        "  ys = zeros((5, 2), f64)\n"
        "  for t in range(5) {\n"
        "    s = s * (w * w) + xs[t] + 0.5 * ppermute(s, i, shift=1)\n"
        "    z = z * w + psum(s, i)\n"
        "    ys = dynamic_update_slice(ys, reshape(s * cos(w), (1, 2)), t, axis=0)\n"
        "  }\n"
        "  return s, z, ys\n"
        "}\n";
    check_dot_product(text, {"xs", "a"});
    check_dot_product(text, {"xs", "a"}, 2, /*remat=*/true);
  }
  SECTION("carries that swap, a negative step, all_gather and psum_scatter inside") {
    check_dot_product(
        "mesh M = (i: 2)\n"
        "shmap f(p: f64[4, 2] @ P(i), q: f64[4, 2] @ P(i), c: f64[2] @ P()) -> (f64[4, 2] @ "
        "P(i), f64[4, 2] @ P(i)) on M {\n"
        "  for k in range(9, 0, -4) {\n"
        "    old = p\n"
        "    p = psum_scatter(all_gather(q, i) * c, i) * 0.5\n"
        "    q = old + p * cast(k, f64)\n"
        "  }\n"
        "  return p, q\n"
        "}\n",
        {"p", "q"});
  }
  SECTION("zero and one iterations, nested loops") {
    check_dot_product(
        "mesh M = (i: 2)\n"
        "shmap f(x: f64[4] @ P(i), w: f64[2] @ P()) -> (f64[4] @ P(i), f64[4] @ P(i)) on M {\n"
        "  y = x\n"
        "  for k in range(0) { y = y * 2.0 }\n"
        "  for k in range(1) { y = y * w[0:1] }\n"
        "  for k in range(3) {\n"
        "    u = y * sin(w[1:2])\n"
        "    for j in range(2) { u = u + ppermute(u, i, shift=1) * cast(j + k, f64) }\n"
        "    y = y + u\n"
        "  }\n"
        "  return y, x\n"
        "}\n",
        {"x"});
  }
}

TEST_CASE("transpose: random linear loop programs satisfy the dot-product identity",
          "[transpose][loops][random]") {
  // SPMDC_LOOP_SEED / SPMDC_LOOP_COUNT choose the programs (a sweep: a larger count).
  const uint64_t first = env_or("SPMDC_LOOP_SEED", 1), count = env_or("SPMDC_LOOP_COUNT", 40);
  for (uint64_t seed = first; seed < first + count; ++seed) {
    INFO("SPMDC_LOOP_SEED=" << seed);
    check_dot_product(LoopProgramGenerator(seed, true).program(), {"xs", "a", "b"}, seed,
                      seed % 2 == 1);
  }
}

TEST_CASE("transpose: transposing a loop twice gives back the loop", "[transpose][loops]") {
  const std::string text =
      "mesh M = (i: 4)\n"
      "shmap f(xs: f64[5, 8] @ P(None, i), a: f64[8] @ P(i)) -> (f64[8] @ P(i), f64[2] @ P()) on "
      "M {\n"
      "  s = a\n"
      "  z = zeros((2,), f64)\n"
      "  for t in range(1, 10, 2) {\n"
      "    s = s * 0.5 + xs[(t - 1) / 2] + 0.25 * ppermute(s, i, shift=1)\n"
      "    z = z + psum(s, i)\n"
      "  }\n"
      "  return s, z\n"
      "}\n";
  auto c = compile_ok(text);
  auto t = derive_ok(*c, DeriveKind::Transpose, "");
  auto tt = derive_ok(*t, DeriveKind::Transpose, "");
  const ir::Function &f = shmap_of(*c), &g = shmap_of(*tt);
  // One loop each way (start, iterations, step): the backward loop's range
  // reversed twice is the forward one.
  const auto loops = [](const ir::Function &fn) {
    std::vector<std::array<int64_t, 3>> r;
    for (const ir::Instr &in : fn.body)
      if (in.op == OpCode::For)
        r.push_back({in.attrs.loop().start, ir::trip_count(in.attrs), in.attrs.loop().step});
    return r;
  };
  CHECK(loops(shmap_of(*t)) == std::vector<std::array<int64_t, 3>>{{9, 5, -2}});
  CHECK(loops(g) == loops(f));
  // The same collectives, or fewer: the transpose's pbroadcast of z's
  // cotangent does not depend on the loop and runs once before it, so the
  // psum it transposes back to runs once after the loop instead of per iteration.
  auto sf = collective_stats(*c->module, f), sg = collective_stats(*tt->module, g);
  CHECK(sf.by_op["psum"].count == 5);
  CHECK(sg.by_op["psum"].count == 1);
  CHECK(sg.by_op["ppermute"].count == sf.by_op["ppermute"].count);
  check_same_values(*c, *tt);
}

TEST_CASE("transpose: a non-linear function is rejected at its first non-linear op",
          "[transpose]") {
  auto c = compile_ok(
      "mesh M = (i: 4)\nshmap f(x: f32[8] @ P(i)) -> f32[8] @ P(i) on M {\n"
      "  a = x * 2.0\n  b = exp(a)\n  return b + x\n}\n");
  DeriveRequest r;
  r.kind = DeriveKind::Transpose;
  try {
    derive(*c->module, r);
    FAIL("expected a TransformError");
  } catch (const TransformError &e) {
    CHECK(e.code == "not-linear");
    auto loc = c->sources.location(e.span);
    CHECK(loc.line == 4);
    CHECK(std::string(e.what()).find("`exp` is not linear") != std::string::npos);
  }
}

TEST_CASE("transpose: an affine function is rejected", "[transpose]") {
  auto c = compile_ok(
      "mesh M = (i: 4)\nshmap f(x: f32[8] @ P(i)) -> f32[8] @ P(i) on M {\n"
      "  return x + 1.0\n}\n");
  DeriveRequest r;
  CHECK_THROWS_AS(derive(*c->module, r), TransformError);
}

}  // namespace
}  // namespace spmd::test
