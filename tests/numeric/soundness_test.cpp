// tests/numeric/soundness_test.cpp — run-time evidence that device variance typing is sound.
//
// A generator writes random well-typed .spmd programs: 1-D and 2-D meshes with
// small axes, random in_specs, chains of elementwise ops, reductions, layout
// ops, matmul/einsum, calls of defs and every collective (psum, pmean, pmax,
// pmin, all_gather, all_gather_invariant, psum_scatter, pscatter, all_to_all,
// ppermute, axis_index, pbroadcast). It tracks each value's variance itself to
// choose out_specs the type checker accepts (a program the compiler rejects is
// a generator or compiler bug and fails the test). Every program runs on random
// inputs with check_replication on: no value the type system calls invariant
// may differ between devices. Negative controls then lie about the variance of
// a sharded input of generated programs and require the checker to object.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

#include "interp/interpreter.h"
#include "pipeline/compile.h"

using namespace spmd;

namespace {

struct Val {
  std::string name;
  uint64_t var;  // bit k: varies along mesh axis k
};

struct GenProgram {
  std::string source;
  std::vector<Shape> param_shapes;
  int num_axes = 0;
  std::vector<int64_t> sizes;
};

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}

  GenProgram generate() {
    GenProgram p;
    const int num_axes = coin() ? 1 : 2;
    static const int64_t kSizes[] = {1, 2, 3, 4};
    for (int k = 0; k < num_axes; ++k) sizes_.push_back(kSizes[pick(4)]);
    if (num_axes == 2 && sizes_[0] * sizes_[1] > 12) sizes_[1] = 2;
    int64_t total = 1;
    for (int64_t s : sizes_) total *= s;
    L_ = std::max<int64_t>(2, total);
    p.num_axes = num_axes;
    p.sizes = sizes_;

    std::string src = "mesh M = (";
    for (int k = 0; k < num_axes; ++k)
      src += (k ? ", " : "") + axis_name(k) + ": " + std::to_string(sizes_[k]);
    src += ")\n";
    src += "def h(x: f32[n, m]) -> f32[n, m] { return tanh(x) * 0.5 + x }\n";
    src += "def hp(x: f32[n, m]) -> f32[n, m] { return pmean(x, a) * 0.5 }\n";

    std::string sig;
    const int num_params = 1 + pick(3);
    for (int k = 0; k < num_params; ++k) {
      uint64_t var = 0;
      std::vector<std::string> dims(2);
      Shape global{L_, L_};
      for (int ax = 0; ax < num_axes; ++ax) {
        if (!coin()) continue;
        int d = pick(2);
        var |= uint64_t{1} << ax;
        global[d] *= sizes_[ax];
        dims[d] += dims[d].empty() ? axis_name(ax) : ", " + axis_name(ax);
      }
      std::string name = "p" + std::to_string(k);
      sig += (k ? ", " : "") + name + ": f32[" + std::to_string(global[0]) + ", " +
             std::to_string(global[1]) + "] @ " + spec(dims);
      p.param_shapes.push_back(global);
      pool_.push_back({name, var});
    }
    const int num_statements = 3 + pick(10);
    for (int s = 0; s < num_statements; ++s) statement();

    std::vector<Val> outs = {pool_.back()};
    if (coin()) outs.push_back(pool_[pick(static_cast<int>(pool_.size()))]);
    std::string ret_types, ret_names;
    for (size_t k = 0; k < outs.size(); ++k) {
      std::vector<std::string> dims(2);
      Shape global{L_, L_};
      for (int ax : shuffled_axes(outs[k].var)) {
        int d = pick(2);
        global[d] *= sizes_[ax];
        dims[d] += dims[d].empty() ? axis_name(ax) : ", " + axis_name(ax);
      }
      ret_types += (k ? ", " : "") + std::string("f32[") + std::to_string(global[0]) + ", " +
                   std::to_string(global[1]) + "] @ " + spec(dims);
      ret_names += (k ? ", " : "") + outs[k].name;
    }
    src += "shmap f(" + sig + ") -> (" + ret_types + ") on M {\n" + body_ + "  return " +
           ret_names + "\n}\n";
    p.source = src;
    return p;
  }

 private:
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  bool coin() { return rng_() & 1; }
  static std::string axis_name(int k) { return k == 0 ? "a" : "b"; }
  int num_axes() const { return static_cast<int>(sizes_.size()); }
  uint64_t all_axes() const { return (uint64_t{1} << num_axes()) - 1; }

  static std::string spec(const std::vector<std::string> &dims) {
    std::string s = "P(";
    for (size_t d = 0; d < dims.size(); ++d) {
      if (d) s += ", ";
      if (dims[d].empty())
        s += "None";
      else if (dims[d].find(',') != std::string::npos)
        s += "(" + dims[d] + ")";
      else
        s += dims[d];
    }
    return s + ")";
  }

  std::vector<int> shuffled_axes(uint64_t mask) {
    std::vector<int> axes;
    for (int k = 0; k < num_axes(); ++k)
      if (mask >> k & 1) axes.push_back(k);
    std::shuffle(axes.begin(), axes.end(), rng_);
    return axes;
  }
  /// A non-empty random subset of `allowed` (0 if `allowed` is empty).
  uint64_t subset(uint64_t allowed) {
    if (!allowed) return 0;
    for (;;) {
      uint64_t m = rng_() & allowed;
      if (m) return m;
    }
  }
  /// `a`, or `(b, a)`: the axes of mask in random order (the order matters for ranks).
  std::string axes_expr(uint64_t mask) {
    std::vector<int> axes = shuffled_axes(mask);
    if (axes.size() == 1) return axis_name(axes[0]);
    std::string s = "(";
    for (size_t k = 0; k < axes.size(); ++k) s += (k ? ", " : "") + axis_name(axes[k]);
    return s + ")";
  }
  int64_t group(uint64_t mask) const {
    int64_t n = 1;
    for (int k = 0; k < num_axes(); ++k)
      if (mask >> k & 1) n *= sizes_[k];
    return n;
  }
  const Val &any() { return pool_[pick(static_cast<int>(pool_.size()))]; }
  std::string block(int dim, int64_t k) {
    std::string r = std::to_string(k * L_) + ":" + std::to_string((k + 1) * L_);
    return dim == 0 ? "[" + r + "]" : "[:, " + r + "]";
  }

  void emit(const std::string &expr, uint64_t var) {
    std::string name = "v" + std::to_string(counter_++);
    body_ += "  " + name + " = " + expr + "\n";
    pool_.push_back({name, var});
  }

  void statement() {
    const Val x = any(), y = any();
    const std::string L = std::to_string(L_);
    const int d = pick(2);
    switch (pick(18)) {
      case 0: {
        static const char *u[] = {"tanh", "sin", "neg", "abs", "sigmoid", "cos"};
        return emit(std::string(u[pick(6)]) + "(" + x.name + ")", x.var);
      }
      case 1: {
        static const char *ops[] = {" + ", " - ", " * "};
        if (coin()) return emit(x.name + ops[pick(3)] + y.name, x.var | y.var);
        return emit(std::string(coin() ? "maximum(" : "minimum(") + x.name + ", " + y.name + ")",
                    x.var | y.var);
      }
      case 2:
        return emit("where(" + x.name + " > " + y.name + ", " + x.name + ", " + y.name + " * 0.5)",
                    x.var | y.var);
      case 3:
        if (coin()) return emit(x.name + " - mean(" + x.name + ", axes=1, keepdims=true)", x.var);
        return emit("broadcast_to(sum(" + x.name + ", axes=0, keepdims=true), (" + L + ", " + L +
                        ")) * 0.25",
                    x.var);
      case 4:
        if (coin()) return emit("transpose(" + x.name + ")", x.var);
        return emit("reshape(reshape(" + x.name + ", (" + std::to_string(L_ * L_) + ",)), (" + L +
                        ", " + L + "))",
                    x.var);
      case 5:
        if (coin())
          return emit("(" + x.name + " @ " + y.name + ") * " + std::to_string(1.0 / L_),
                      x.var | y.var);
        return emit("einsum(\"ij,kj->ik\", " + x.name + ", " + y.name + ") * 0.125", x.var | y.var);
      case 6: {
        static const char *c[] = {"psum", "pmean", "pmax", "pmin"};
        uint64_t a = subset(all_axes());
        return emit(std::string(c[pick(4)]) + "(" + x.name + ", " + axes_expr(a) + ")", x.var & ~a);
      }
      case 7: {
        uint64_t a = subset(all_axes());
        return emit("all_gather(" + x.name + ", " + axes_expr(a) + ", axis=" + std::to_string(d) +
                        ")" + block(d, pick(static_cast<int>(group(a)))),
                    x.var | a);
      }
      case 8: {
        uint64_t a = subset(all_axes());
        return emit("all_gather_invariant(" + x.name + ", " + axes_expr(a) + ", axis=" +
                        std::to_string(d) + ")" + block(d, pick(static_cast<int>(group(a)))),
                    x.var & ~a);
      }
      case 9: {
        uint64_t a = subset(all_axes());
        std::string ax = axes_expr(a);
        return emit("all_gather(psum_scatter(" + x.name + ", " + ax + ", scatter_dimension=" +
                        std::to_string(d) + "), " + ax + ", axis=" + std::to_string(d) + ")",
                    x.var | a);
      }
      case 10: {
        uint64_t a = subset(all_axes() & ~x.var);
        if (!a) return emit("pmin(" + x.name + ", a)", x.var & ~uint64_t{1});
        std::string ax = axes_expr(a);
        bool inv = coin();
        return emit(std::string(inv ? "all_gather_invariant(" : "all_gather(") + "pscatter(" +
                        x.name + ", " + ax + ", axis=" + std::to_string(d) + "), " + ax +
                        ", axis=" + std::to_string(d) + ")",
                    inv ? x.var : x.var | a);
      }
      case 11: {
        uint64_t a = subset(all_axes());
        int s = pick(2), c = pick(2);
        std::string e = "all_to_all(" + x.name + ", " + axes_expr(a) +
                        ", split_axis=" + std::to_string(s) + ", concat_axis=" + std::to_string(c) +
                        ")";
        if (s != c) e = "reshape(" + e + ", (" + L + ", " + L + "))";
        return emit(e, x.var | a);
      }
      case 12: {
        int ax = pick(num_axes());
        int64_t n = sizes_[ax];
        if (coin() || n == 1)
          return emit("ppermute(" + x.name + ", " + axis_name(ax) +
                          ", shift=" + std::to_string(pick(static_cast<int>(n) + 1)) + ")",
                      x.var | uint64_t{1} << ax);
        std::vector<int> dst(n);
        for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<int>(i);
        std::shuffle(dst.begin(), dst.end(), rng_);
        std::string perm = "[";
        int64_t used = 1 + pick(static_cast<int>(n));  // a partial permutation sends zeros
        for (int64_t i = 0; i < used; ++i)
          perm += (i ? ", (" : "(") + std::to_string(i) + ", " + std::to_string(dst[i]) + ")";
        return emit("ppermute(" + x.name + ", " + axis_name(ax) + ", perm=" + perm + "])",
                    x.var | uint64_t{1} << ax);
      }
      case 13: {
        uint64_t a = subset(all_axes());
        return emit(x.name + " + cast(axis_index(" + axes_expr(a) + "), f32) * 0.25", x.var | a);
      }
      case 14: {
        uint64_t a = subset(all_axes() & ~x.var);
        if (!a) return emit("h(" + x.name + ")", x.var);
        return emit("pbroadcast(" + x.name + ", " + axes_expr(a) + ")", x.var | a);
      }
      case 15:
        if (coin()) return emit("h(" + x.name + ")", x.var);
        return emit("hp(" + x.name + ")", x.var & ~uint64_t{1});
      case 16: {  // the NumPy-style ops: local, so variance is the operands' union
        const std::string a = x.name, b = y.name;
        const std::string forms[] = {
            a + " % (abs(" + b + ") + 0.5) + " + a + " // 0.5 * 0.125",
            "erf(" + a + ") + log1p(" + b + " * " + b + ")",
            "clip(" + a + ", -0.5, 0.5) + stop_gradient(" + b + ")",
            "flip(" + a + ", axes=" + std::to_string(d) + ") + " + b + "[::-1, ::-1].T",
            "squeeze(" + a + "[:, None], 1) - var(" + b + ", axes=1, keepdims=true)",
            "stack((" + a + ", " + b + "), axis=" + std::to_string(d) + ")" +
                (d == 0 ? "[1]" : "[:, 0]") + " + cast(argmax(" + a +
                ", axes=1, keepdims=true), f32)",
            "(" + a + ".astype(f64) % 0.3).astype(f32) + expand_dims(" + b + "[0], 0)",
        };
        return emit(forms[pick(static_cast<int>(std::size(forms)))], x.var | y.var);
      }
      default:
        return emit(x.name + " * 2.0 + 1.0", x.var);
    }
  }

  std::mt19937_64 rng_;
  std::vector<int64_t> sizes_;
  int64_t L_ = 2;
  std::vector<Val> pool_;
  std::string body_;
  int counter_ = 0;
};

struct Compiled {
  std::unique_ptr<Compilation> c;
  int index = -1;
};

Compiled compile_program(const GenProgram &p) {
  Compiled out;
  out.c = std::make_unique<Compilation>();
  compile_source(*out.c, "generated.spmd", p.source, CompileOptions{});
  if (!out.c->ok() || !out.c->module) {
    INFO(p.source);
    FAIL("the generated program does not compile:\n"
         << render_diagnostics(out.c->diags, out.c->sources));
  }
  out.index = out.c->module->find_function("f");
  REQUIRE(out.index >= 0);
  return out;
}

std::vector<rt::Tensor> inputs_for(const GenProgram &p, uint64_t seed) {
  std::vector<rt::Tensor> in;
  for (size_t k = 0; k < p.param_shapes.size(); ++k)
    in.push_back(rt::random_tensor(DType::F32, p.param_shapes[k], seed * 1000003 + k));
  return in;
}

}  // namespace

TEST_CASE("random well-typed programs never trip the replication check", "[numeric]") {
  constexpr int kPrograms = 600;
  for (int i = 0; i < kPrograms; ++i) {
    Generator gen(0x5eed0000 + static_cast<uint64_t>(i));
    GenProgram p = gen.generate();
    INFO("program " << i << ":\n" << p.source);
    Compiled c = compile_program(p);
    interp::InterpOptions o;
    o.check_replication = true;
    try {
      auto out = interp::run_shmap(*c.c->module, c.index, inputs_for(p, i), o);
      REQUIRE(!out.empty());
    } catch (const interp::ReplicationError &e) {
      FAIL("replication check failed: " << e.what());
    }
  }
}

TEST_CASE("negative controls: lying about a sharded input is always caught", "[numeric]") {
  int caught = 0;
  for (int i = 0; caught < 25 && i < 400; ++i) {
    Generator gen(0xbad0000 + static_cast<uint64_t>(i));
    GenProgram p = gen.generate();
    Compiled c = compile_program(p);
    ir::Function &f = c.c->module->functions[c.index];
    // A parameter sharded over an axis of size > 1 holds different random blocks.
    int victim = -1;
    for (size_t k = 0; k < f.params.size() && victim < 0; ++k)
      for (int ax : f.type(f.params[k].value).variance.axes())
        if (p.sizes[ax] > 1) victim = static_cast<int>(k);
    if (victim < 0) continue;
    f.type(f.params[victim].value).variance = AxisSet();
    interp::InterpOptions o;
    o.check_replication = true;
    INFO("program " << i << ":\n" << p.source);
    CHECK_THROWS_AS(interp::run_shmap(*c.c->module, c.index, inputs_for(p, i), o),
                    interp::ReplicationError);
    ++caught;
  }
  CHECK(caught == 25);
}
