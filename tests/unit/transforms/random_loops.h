// random_loops.h — random programs with loops for the derivative tests.
//
// random_loop_program(seed, linear) writes a shmap on mesh (i: 2) with f64
// carries `a`, `b` (varying) and `c` (invariant), rows `xs` and a constant
// `w`, and one or two loops (random ranges with steps, sometimes nested,
// sometimes [[remat]]) whose bodies are random statements: elementwise math,
// ppermute, psum, all_gather + psum_scatter, rows xs[k], carries that swap.
// With `linear`, every statement is linear in (a, b, c, xs) — for the
// dot-product identity of the transpose — otherwise nonlinear ops join in.
// The seed and the number of programs are options of the tests that use it
// (SPMDC_LOOP_SEED, SPMDC_LOOP_COUNT).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>

namespace spmd::test {

inline uint64_t env_or(const char *name, uint64_t fallback) {
  const char *v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 0) : fallback;
}

class LoopProgramGenerator {
 public:
  LoopProgramGenerator(uint64_t seed, bool linear)
      : state_(seed * 2654435761u + 1), linear_(linear) {}

  std::string program() {
    std::string s =
        "mesh M = (i: 2)\n"
        "shmap f(xs: f64[6, 8] @ P(None, i), a: f64[8] @ P(i), b: f64[8] @ P(i), w: f64[2] @ "
        "P()) -> " +
        std::string(linear_ ? "(f64[8] @ P(i), f64[8] @ P(i), f64[2] @ P())" : "f64[] @ P()") +
        " on M {\n  c = zeros((2,), f64)\n";
    const int loops = 1 + static_cast<int>(below(2));
    for (int l = 0; l < loops; ++l) s += loop("  ", "k" + std::to_string(l), 0);
    if (linear_)
      s += "  return a, b, c\n}\n";
    else
      s += "  return psum(sum(a * b) + sum(a), i) + sum(c * c)\n}\n";
    return s;
  }

 private:
  uint64_t below(uint64_t n) {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return state_ % n;
  }

  /// A loop whose index stays in [0, 6) (so `xs[k]` is in range).
  std::string loop(const std::string &indent, const std::string &k, int depth) {
    int64_t start, stop, step;
    switch (below(4)) {
      case 0:
        start = 0, stop = static_cast<int64_t>(below(7)), step = 1;
        break;
      case 1:
        start = 1, stop = 6, step = 2;
        break;
      case 2:
        start = 5, stop = -1, step = -2;
        break;
      default:
        start = 5, stop = static_cast<int64_t>(below(3)) - 1, step = -1;
        break;
    }
    std::string s = indent + (below(3) == 0 ? "[[remat]] " : "") + "for " + k + " in range(" +
                    std::to_string(start) + ", " + std::to_string(stop) + ", " +
                    std::to_string(step) + ") {\n";
    const int n = 1 + static_cast<int>(below(4));
    for (int j = 0; j < n; ++j) {
      if (depth == 0 && below(5) == 0)
        s += loop(indent + "  ", k + "n", depth + 1);
      else
        s += indent + "  " + statement(k) + "\n";
    }
    return s + indent + "}\n";
  }

  std::string statement(const std::string &k) {
    if (linear_) {
      switch (below(7)) {
        case 0:
          return "a = a * 0.5 + ppermute(b, i, shift=1)";
        case 1:
          return "b = b * cos(w[0:1]) + xs[" + k + "]";
        case 2:
          return "t = a\n    a = b\n    b = t";
        case 3:
          return "c = c * w + psum(a[0:2], i)";
        case 4:
          return "a = a + psum_scatter(all_gather(b, i), i) * 0.25";
        case 5:
          return "b = b - a * cast(" + k + ", f64)";
        default:
          return "a = where(w[1:2] > 0.0, a, b)";
      }
    }
    // Bounded steps (tanh, sigmoid, contractions), so long chains stay finite.
    switch (below(8)) {
      case 0:
        return "a = tanh(a * b + xs[" + k + "])";
      case 1:
        return "b = b * 0.9 + 0.1 * ppermute(sin(a), i, shift=1)";
      case 2:
        return "t = a\n    a = b\n    b = t";
      case 3:
        return "c = c * 0.5 + 0.1 * psum(tanh(a[0:2] * b[2:4]), i)";
      case 4:
        return "a = 0.5 * a + psum_scatter(all_gather(tanh(b), i), i) * 0.1";
      case 5:
        return "b = sigmoid(b * w[0:1]) + 0.1 * a * cast(" + k + ", f64)";
      case 6:
        return "a = a * tanh(c[0:1]) + exp(-b * b)";
      default:
        return "b = b + sum(xs[" + k + "] * a) * 0.01";
    }
  }

  uint64_t state_;
  bool linear_;
};

}  // namespace spmd::test
