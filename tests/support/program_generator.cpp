// tests/support/program_generator.cpp — see program_generator.h.
#include "program_generator.h"

#include <algorithm>
#include <functional>
#include <random>

#include "spmdrt/kernels.h"

namespace spmd::testgen {
namespace {

struct Val {
  std::string name;
  uint64_t var;  // bit k: varies along mesh axis k
  bool lin;      // Linear flavor: depends on a linear parameter
};

class Generator {
 public:
  Generator(uint64_t seed, const GeneratorOptions &o)
      : rng_(seed), o_(o), dt_(o.f64 ? "f64" : "f32") {}

  GeneratedProgram generate() {
    GeneratedProgram p;
    choose_mesh();
    p.mesh_sizes = sizes_;
    p.dtype = o_.f64 ? DType::F64 : DType::F32;
    std::string src = "mesh M = (";
    for (int k = 0; k < num_axes(); ++k)
      src += (k ? ", " : "") + axis_name(k) + ": " + std::to_string(sizes_[k]);
    src += ")\n";
    src += "def h(x: " + dt_ + "[n, m]) -> " + dt_ + "[n, m] { return tanh(x) * 0.5 + x }\n";
    src += "def hp(x: " + dt_ + "[n, m]) -> " + dt_ + "[n, m] { return pmean(x, a) * 0.5 }\n";

    std::string sig;
    const int num_params = 1 + pick(3);
    for (int k = 0; k < num_params; ++k) {
      uint64_t var = 0;
      std::vector<std::string> dims(2);
      Shape global{L_, L_};
      for (int ax = 0; ax < num_axes(); ++ax) {
        if (!coin()) continue;
        int d = pick(2);
        var |= uint64_t{1} << ax;
        global[d] *= sizes_[ax];
        dims[d] += dims[d].empty() ? axis_name(ax) : ", " + axis_name(ax);
      }
      std::string name = "p" + std::to_string(k);
      bool lin = linear() && (k == 0 || coin());
      if (lin) p.linear_params.push_back(name);
      sig += (k ? ", " : "") + name + ": " + dt_ + "[" + std::to_string(global[0]) + ", " +
             std::to_string(global[1]) + "] @ " + spec(dims);
      p.param_shapes.push_back(global);
      pool_.push_back({name, var, lin});
    }
    const int num_statements = o_.min_statements + pick(o_.max_statements - o_.min_statements + 1);
    for (int s = 0; s < num_statements; ++s) statement();

    std::vector<Val> outs = {last_output_candidate()};
    std::vector<bool> scalar = {false};
    if (coin()) {
      outs.push_back(output_candidate());
      scalar.push_back(false);
    }
    if (o_.flavor == Flavor::Differentiable) {
      // Result 0: a scalar loss (grad differentiates it).
      const Val x = outs[0];
      emit("psum(sum(" + x.name + " * " + x.name + ") * 0.01, " + axes_expr(all_axes()) + ")", 0,
           false);
      outs.insert(outs.begin(), pool_.back());
      scalar.insert(scalar.begin(), true);
      feature("scalar_loss");
    }
    std::string ret_types, ret_names;
    for (size_t k = 0; k < outs.size(); ++k) {
      std::vector<std::string> dims(2);
      Shape global{L_, L_};
      for (int ax : shuffled_axes(outs[k].var)) {
        int d = pick(2);
        global[d] *= sizes_[ax];
        dims[d] += dims[d].empty() ? axis_name(ax) : ", " + axis_name(ax);
      }
      ret_types += k ? ", " : "";
      if (scalar[k])
        ret_types += dt_ + "[] @ P()";
      else
        ret_types += dt_ + "[" + std::to_string(global[0]) + ", " + std::to_string(global[1]) +
                     "] @ " + spec(dims);
      ret_names += (k ? ", " : "") + outs[k].name;
    }
    src += "shmap f(" + sig + ") -> (" + ret_types + ") on M {\n" + body_ + "  return " +
           ret_names + "\n}\n";
    p.source = src;
    p.features = std::move(features_);
    return p;
  }

 private:
  // ---- randomness and bookkeeping ------------------------------------------

  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  bool coin() { return rng_() & 1; }
  bool linear() const { return o_.flavor == Flavor::Linear; }
  void feature(const std::string &name) { ++features_[name]; }

  void choose_mesh() {
    const int n = coin() ? 1 : 2;
    for (int k = 0; k < n; ++k) sizes_.push_back(1 + pick(o_.max_axis_size));
    for (;;) {
      int64_t total = 1;
      for (int64_t s : sizes_) total *= s;
      if (total <= o_.max_devices) break;
      int64_t &big = sizes_[sizes_[0] >= sizes_.back() ? 0 : sizes_.size() - 1];
      big = std::max<int64_t>(1, big / 2);
    }
    int64_t total = 1;
    for (int64_t s : sizes_) total *= s;
    L_ = std::max<int64_t>(2, total);
    feature(n == 1 ? "mesh_1d" : "mesh_2d");
    feature("devices_" + std::to_string(total));
  }

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
  std::string block(int dim, int64_t k) {
    std::string r = std::to_string(k * L_) + ":" + std::to_string((k + 1) * L_);
    return dim == 0 ? "[" + r + "]" : "[:, " + r + "]";
  }
  std::string L() const { return std::to_string(L_); }
  std::string LL() const { return "(" + L() + ", " + L() + ")"; }

  const Val &any() { return pool_[pick(static_cast<int>(pool_.size()))]; }
  /// A value with the same linearity as `x` (x itself at worst).
  Val same_lin(const Val &x) {
    for (int tries = 0; tries < 8; ++tries) {
      const Val &y = any();
      if (y.lin == x.lin) return y;
    }
    return x;
  }
  /// A value that does not depend on the linear parameters, if there is one.
  const Val *constant_value() {
    for (int tries = 0; tries < 8; ++tries) {
      const Val &y = any();
      if (!y.lin) return &y;
    }
    return nullptr;
  }
  Val output_candidate() {
    if (!linear()) return any();
    for (int tries = 0; tries < 16; ++tries) {
      const Val &y = any();
      if (y.lin) return y;
    }
    return pool_.front();  // p0 is linear
  }
  Val last_output_candidate() {
    for (auto it = pool_.rbegin(); it != pool_.rend(); ++it)
      if (!linear() || it->lin) return *it;
    return pool_.front();
  }

  void emit(const std::string &expr, uint64_t var, bool lin) {
    std::string name = "v" + std::to_string(counter_++);
    body_ += indent_ + name + " = " + expr + "\n";
    pool_.push_back({name, var, lin});
  }

  // ---- statements ------------------------------------------------------------

  void statement() {
    const Val x = any();
    const Val y = linear() ? same_lin(x) : any();
    const int d = pick(2);
    switch (pick(20)) {
      case 0: {
        static const char *u[] = {"tanh", "sin", "abs", "sigmoid", "cos"};
        if (linear() && x.lin) return emit("-" + x.name, x.var, true);
        feature("unary");
        return emit(std::string(u[pick(5)]) + "(" + x.name + ")", x.var, x.lin);
      }
      case 1: {
        static const char *ops[] = {" + ", " - "};
        feature("binary");
        if (coin()) return emit(x.name + ops[pick(2)] + y.name, x.var | y.var, x.lin);
        if (!linear() || (!x.lin && !y.lin))
          return emit(std::string(coin() ? "maximum(" : "minimum(") + x.name + ", " + y.name + ")",
                      x.var | y.var, false);
        const Val *c = constant_value();
        if (!c) return emit(x.name + " * 0.75", x.var, x.lin);
        return emit(x.name + " * " + c->name, x.var | c->var, x.lin);
      }
      case 2: {
        feature("where");
        if (!linear())
          return emit(
              "where(" + x.name + " > " + y.name + ", " + x.name + ", " + y.name + " * 0.5)",
              x.var | y.var, false);
        const Val *c = constant_value();
        if (!c) return emit(x.name + " * 0.5", x.var, x.lin);
        return emit("where(" + c->name + " > 0.0, " + x.name + ", " + y.name + " * 0.5)",
                    c->var | x.var | y.var, x.lin);
      }
      case 3:
        feature("reduce");
        if (coin())
          return emit(x.name + " - mean(" + x.name + ", axes=1, keepdims=true)", x.var, x.lin);
        return emit("broadcast_to(sum(" + x.name + ", axes=0, keepdims=true), " + LL() + ") * 0.25",
                    x.var, x.lin);
      case 4:
        feature("transpose_reshape");
        if (coin()) return emit("transpose(" + x.name + ")", x.var, x.lin);
        return emit(
            "reshape(reshape(" + x.name + ", (" + std::to_string(L_ * L_) + ",)), " + LL() + ")",
            x.var, x.lin);
      case 5: {
        feature("matmul");
        Val w = any();
        if (linear() && x.lin && w.lin) {
          const Val *c = constant_value();
          if (!c) return emit("transpose(" + x.name + ")", x.var, x.lin);
          w = *c;
        }
        if (coin())
          return emit("(" + x.name + " @ " + w.name + ") * " + std::to_string(1.0 / L_),
                      x.var | w.var, x.lin || w.lin);
        return emit("einsum(\"ij,kj->ik\", " + x.name + ", " + w.name + ") * 0.125", x.var | w.var,
                    x.lin || w.lin);
      }
      case 6: {
        static const char *c[] = {"psum", "pmean", "pmax", "pmin"};
        uint64_t a = subset(all_axes());
        int which = o_.flavor == Flavor::General ? pick(4) : pick(2);
        feature(c[which]);
        return emit(std::string(c[which]) + "(" + x.name + ", " + axes_expr(a) + ")", x.var & ~a,
                    x.lin);
      }
      case 7: {
        uint64_t a = subset(all_axes());
        feature("all_gather");
        return emit("all_gather(" + x.name + ", " + axes_expr(a) + ", axis=" + std::to_string(d) +
                        ")" + block(d, pick(static_cast<int>(group(a)))),
                    x.var | a, x.lin);
      }
      case 8: {
        uint64_t a = subset(all_axes());
        feature("all_gather_invariant");
        return emit("all_gather_invariant(" + x.name + ", " + axes_expr(a) + ", axis=" +
                        std::to_string(d) + ")" + block(d, pick(static_cast<int>(group(a)))),
                    x.var & ~a, x.lin);
      }
      case 9: {
        uint64_t a = subset(all_axes());
        std::string ax = axes_expr(a);
        feature("psum_scatter");
        return emit("all_gather(psum_scatter(" + x.name + ", " + ax + ", scatter_dimension=" +
                        std::to_string(d) + "), " + ax + ", axis=" + std::to_string(d) + ")",
                    x.var | a, x.lin);
      }
      case 10: {
        uint64_t a = subset(all_axes() & ~x.var);
        if (!a) return emit("psum(" + x.name + ", a)", x.var & ~uint64_t{1}, x.lin);
        std::string ax = axes_expr(a);
        bool inv = coin();
        feature("pscatter");
        return emit(std::string(inv ? "all_gather_invariant(" : "all_gather(") + "pscatter(" +
                        x.name + ", " + ax + ", axis=" + std::to_string(d) + "), " + ax +
                        ", axis=" + std::to_string(d) + ")",
                    inv ? x.var : x.var | a, x.lin);
      }
      case 11: {
        uint64_t a = subset(all_axes());
        int s = pick(2), c = pick(2);
        std::string e = "all_to_all(" + x.name + ", " + axes_expr(a) +
                        ", split_axis=" + std::to_string(s) + ", concat_axis=" + std::to_string(c) +
                        ")";
        if (s != c) e = "reshape(" + e + ", " + LL() + ")";
        feature("all_to_all");
        return emit(e, x.var | a, x.lin);
      }
      case 12: {
        std::string e = ppermute(x.name);
        return emit(e, x.var | last_axes_, x.lin);
      }
      case 13: {
        uint64_t a = subset(all_axes());
        feature("axis_index");
        std::string index = "cast(axis_index(" + axes_expr(a) + "), " + dt_ + ") * 0.25";
        if (linear()) return emit(x.name + " * (" + index + " + 1.0)", x.var | a, x.lin);
        return emit(x.name + " + " + index, x.var | a, x.lin);
      }
      case 14: {
        uint64_t a = subset(all_axes() & ~x.var);
        if (!a) return emit("hp(" + x.name + ")", x.var & ~uint64_t{1}, x.lin);
        feature("pbroadcast");
        return emit("pbroadcast(" + x.name + ", " + axes_expr(a) + ")", x.var | a, x.lin);
      }
      case 15:
        feature("call");
        if (coin() && !(linear() && x.lin)) return emit("h(" + x.name + ")", x.var, x.lin);
        return emit("hp(" + x.name + ")", x.var & ~uint64_t{1}, x.lin);
      case 16:
        if (linear()) return emit(x.name + " * 2.0", x.var, x.lin);
        if (coin()) return numpy_habit(x, y, d);
        return emit(x.name + " * 2.0 + 1.0", x.var, x.lin);
      case 17:
      case 18:
        return layout(x, y, d);
      default:
        return loop();
    }
  }

  /// One of the NumPy-style ops students bring (`%`, `//`, erf, flip, `[:, None]`, `.T`,
  /// astype, stack, ...): all local, so the result varies along the operands' union. The
  /// Differentiable flavor gets only the smooth ones: `%`, `//`, clip, argmax and
  /// stop_gradient have kinks, jumps or (by design) derivatives that finite differences do
  /// not see.
  void numpy_habit(const Val &x, const Val &y, int d) {
    feature("numpy_habits");
    const std::string a = x.name, b = y.name, D = std::to_string(d);
    const std::string smooth[] = {
        "erf(" + a + ") + log1p(" + b + " * " + b + ")",
        "flip(" + a + ", axes=" + D + ") + " + b + "[::-1, ::-1].T",
        "squeeze(" + a + "[:, None], 1) - var(" + b + ", axes=1, keepdims=true)",
        "stack((" + a + ", " + b + "), axis=" + D + ")" + (d == 0 ? "[1]" : "[:, 0]") +
            " + expand_dims(" + b + "[0], 0)",
        "(" + a + ".astype(f64) * 0.3).astype(" + dt_ + ") - zeros_like(" + b + ")",
    };
    const std::string kinked[] = {
        a + " % (abs(" + b + ") + 0.5) + " + a + " // 0.5 * 0.125",
        "clip(" + a + ", -0.5, 0.5) + stop_gradient(" + b + ")",
        a + " + cast(argmax(" + b + ", axes=1, keepdims=true), " + dt_ + ")",
        "(" + a + ".astype(f64) % 0.3).astype(" + dt_ + ")",
    };
    if (o_.flavor != Flavor::General || coin())
      return emit(smooth[pick(static_cast<int>(std::size(smooth)))], x.var | y.var, false);
    emit(kinked[pick(static_cast<int>(std::size(kinked)))], x.var | y.var, false);
  }

  /// `ppermute(x, axes, ...)` over one axis or (on a 2-D mesh) both; sets
  /// last_axes_ to the axes it names.
  std::string ppermute(const std::string &x) {
    uint64_t a = num_axes() == 2 && pick(3) == 0 ? all_axes() : uint64_t{1} << pick(num_axes());
    last_axes_ = a;
    const int64_t n = group(a);
    feature(a == all_axes() && num_axes() == 2 ? "ppermute_axes2" : "ppermute");
    std::string ax = axes_expr(a);
    if (coin() || n == 1)
      return "ppermute(" + x + ", " + ax +
             ", shift=" + std::to_string(pick(static_cast<int>(n) + 1)) + ")";
    std::vector<int> dst(n);
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<int>(i);
    std::shuffle(dst.begin(), dst.end(), rng_);
    std::string perm = "[";
    int64_t used = 1 + pick(static_cast<int>(n));  // a partial permutation sends zeros
    for (int64_t i = 0; i < used; ++i)
      perm += (i ? ", (" : "(") + std::to_string(i) + ", " + std::to_string(dst[i]) + ")";
    return "ppermute(" + x + ", " + ax + ", perm=" + perm + "])";
  }

  void layout(const Val &x, const Val &y, int d) {
    const int64_t half = std::max<int64_t>(1, L_ / 2);
    switch (pick(6)) {
      case 0:  // shift the rows down by one, zeros on top
        feature("slice_pad");
        return emit(
            "pad(" + x.name + "[0:" + std::to_string(L_ - 1) + ", :], " + LL() + ", start=(1, 0))",
            x.var, x.lin);
      case 1:  // every other column, spread back out
        feature("strided_slice_pad");
        return emit("pad(" + x.name + "[:, ::2], " + LL() + ", start=(0, 0), stride=(1, 2))", x.var,
                    x.lin);
      case 2:
        feature("concat");
        return emit("concat((" + x.name + "[:, 0:" + std::to_string(half) + "], " + y.name +
                        "[:, " + std::to_string(half) + ":" + L() + "]), axis=1)",
                    x.var | y.var, x.lin);
      case 3:
        feature("broadcast_to");
        {
          const int64_t row = pick(static_cast<int>(L_));
          return emit("broadcast_to(" + x.name + "[" + std::to_string(row) + ":" +
                          std::to_string(row + 1) + ", :], " + LL() + ")",
                      x.var, x.lin);
        }
      case 4: {  // block `index` of two stacked values
        feature("dynamic_slice");
        auto [index, ivar] = small_index(2);
        return emit("dynamic_slice(concat((" + x.name + ", " + y.name +
                        "), axis=" + std::to_string(d) + "), " + index + ", size=" + L() +
                        ", axis=" + std::to_string(d) + ")",
                    x.var | y.var | ivar, x.lin);
      }
      default: {  // overwrite one row of x with a row of y
        feature("dynamic_update_slice");
        auto [index, ivar] = small_index(L_);
        return emit(
            "dynamic_update_slice(" + x.name + ", " + y.name + "[0:1, :], " + index + ", axis=0)",
            x.var | y.var | ivar, x.lin);
      }
    }
  }

  /// An i32 index in [0, n): a literal, the loop counter, or an axis_index.
  std::pair<std::string, uint64_t> small_index(int64_t n) {
    if (!loop_counter_.empty() && loop_trips_ <= n && coin()) return {loop_counter_, 0};
    for (int k = 0; k < num_axes(); ++k)
      if (sizes_[k] <= n && coin()) return {"axis_index(" + axis_name(k) + ")", uint64_t{1} << k};
    return {std::to_string(pick(static_cast<int>(n))), 0};
  }

  /// A loop whose carried values permute: carry i takes op_i(carry perm[i]).
  void loop() {
    if (!loop_counter_.empty()) return statement();  // no nested loops
    const int m = 2 + pick(2);
    const int trips = 1 + pick(3);
    std::vector<Val> carries;
    const Val first = any();
    for (int i = 0; i < m; ++i) {
      Val init = i == 0 ? first : linear() ? same_lin(first) : any();
      std::string name = "c" + std::to_string(counter_++);
      body_ += indent_ + name + " = " + init.name + "\n";
      carries.push_back({name, init.var, init.lin});
    }
    std::vector<int> perm(m);
    const int shift = 1 + pick(m - 1);
    for (int i = 0; i < m; ++i) perm[i] = (i + shift) % m;
    if (m == 3 && coin()) std::swap(perm[0], perm[1]);  // a swap and a fixed point, or a rotation
    feature("loop");
    bool fixed_point = false;
    for (int i = 0; i < m; ++i) fixed_point = fixed_point || perm[i] == i;
    feature(m == 2 ? "loop_swap" : fixed_point ? "loop_swap_and_fixed" : "loop_rotate3");
    loop_counter_ = "k";
    loop_trips_ = trips;
    body_ += indent_ + "for k in range(" + std::to_string(trips) + ") {\n";
    indent_ = "    ";
    // Each next value as text and as a function of the carried variance.
    std::vector<std::string> next(m);
    std::vector<std::function<uint64_t(const std::vector<uint64_t> &)>> rule(m);
    for (int i = 0; i < m; ++i) {
      const Val &src = carries[perm[i]];
      const int j = perm[i];
      std::string tmp = "n" + std::to_string(counter_++);
      switch (pick(6)) {
        case 0:
        case 1:  // a plain copy: the carries form a cycle
          next[i] = src.name;
          rule[i] = [j](const std::vector<uint64_t> &c) { return c[j]; };
          break;
        case 2:
          next[i] = src.name + " * 0.5";
          rule[i] = [j](const std::vector<uint64_t> &c) { return c[j]; };
          break;
        case 3: {
          next[i] = ppermute(src.name);
          uint64_t a = last_axes_;
          rule[i] = [j, a](const std::vector<uint64_t> &c) { return c[j] | a; };
          break;
        }
        case 4:
          next[i] = "psum(" + src.name + ", a)";
          rule[i] = [j](const std::vector<uint64_t> &c) { return c[j] & ~uint64_t{1}; };
          break;
        default: {  // a value from before the loop (of the same linearity)
          const Val o = linear() ? same_lin(src) : any();
          next[i] = src.name + " + " + o.name;
          uint64_t ov = o.var;
          rule[i] = [j, ov](const std::vector<uint64_t> &c) { return c[j] | ov; };
          break;
        }
      }
      body_ += indent_ + tmp + " = " + next[i] + "\n";
      next[i] = tmp;
    }
    if (coin()) {  // a statement of the body that reads the counter
      feature("loop_counter_index");
      auto [index, ivar] = small_index(2);
      const Val &c0 = carries[0];
      std::string e = "dynamic_slice(concat((" + c0.name + ", " + c0.name + "), axis=0), " + index +
                      ", size=" + L() + ", axis=0)";
      body_ += indent_ + next[0] + " = " + next[0] + " + " + e + "\n";
      auto inner = rule[0];
      rule[0] = [inner, ivar](const std::vector<uint64_t> &c) { return inner(c) | c[0] | ivar; };
    }
    for (int i = 0; i < m; ++i) body_ += indent_ + carries[i].name + " = " + next[i] + "\n";
    indent_ = "  ";
    body_ += indent_ + "}\n";
    loop_counter_.clear();
    // The carried variance: the least fixpoint from the initial values.
    std::vector<uint64_t> c;
    for (const Val &v : carries) c.push_back(v.var);
    for (bool changed = true; changed;) {
      changed = false;
      std::vector<uint64_t> n = c;
      for (int i = 0; i < m; ++i) n[i] |= rule[i](c);
      changed = n != c;
      c = n;
    }
    for (int i = 0; i < m; ++i) pool_.push_back({carries[i].name, c[i], carries[i].lin});
  }

  std::mt19937_64 rng_;
  GeneratorOptions o_;
  std::string dt_;
  std::vector<int64_t> sizes_;
  int64_t L_ = 2;
  std::vector<Val> pool_;
  std::string body_;
  std::string indent_ = "  ";
  std::string loop_counter_;
  int64_t loop_trips_ = 0;
  uint64_t last_axes_ = 0;
  int counter_ = 0;
  std::map<std::string, int> features_;
};

}  // namespace

GeneratedProgram generate_program(uint64_t seed, const GeneratorOptions &options) {
  return Generator(seed, options).generate();
}

std::vector<rt::Tensor> random_inputs(const GeneratedProgram &program, uint64_t seed) {
  std::vector<rt::Tensor> in;
  for (size_t k = 0; k < program.param_shapes.size(); ++k)
    in.push_back(rt::random_tensor(program.dtype, program.param_shapes[k], seed * 1000003 + k));
  return in;
}

}  // namespace spmd::testgen
