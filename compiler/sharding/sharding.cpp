// sharding/sharding.cpp — see sharding.h.
#include "sharding/sharding.h"

#include <algorithm>

#include "sharding/budget.h"
#include "support/text_scanner.h"

namespace spmd::sharding {

AxisSet Sharding::split_axes() const {
  AxisSet s;
  for (const auto &d : dims) s = s | AxisSet::of_all(d);
  return s;
}

bool Sharding::operator<(const Sharding &o) const {
  if (dims != o.dims) return dims < o.dims;
  return partial.bits() < o.partial.bits();
}

Sharding replicated(size_t rank) { return Sharding{rt::PartitionSpec(rank), {}}; }

Sharding from_spec(const rt::PartitionSpec &spec, size_t rank) {
  Sharding s = replicated(rank);
  for (size_t d = 0; d < spec.size() && d < rank; ++d) s.dims[d] = spec[d];
  return s;
}

std::string to_string(const Sharding &s, const rt::Mesh &mesh) {
  size_t n = s.dims.size();
  while (n > 0 && s.dims[n - 1].empty()) --n;
  std::string out = "P(";
  for (size_t d = 0; d < n; ++d) {
    out += d ? ", " : "";
    out += s.dims[d].empty() ? "None" : axis_list_str(s.dims[d], mesh);
  }
  if (!s.partial.empty())
    out += std::string(n ? ", " : "") + "partial=" + axis_list_str(s.partial.axes(), mesh);
  return out + ")";
}

std::optional<Sharding> parse_sharding(const std::string &text, const rt::Mesh &mesh, size_t rank,
                                       std::string &error) {
  TextScanner in(text);
  Sharding s = replicated(rank);
  AxisSet seen;
  auto axis = [&](const std::string &name) -> int {
    int a = mesh.find_axis(name);
    if (a < 0) {
      error = "`" + name + "` is not an axis of the mesh";
      return -1;
    }
    if (seen.contains(a)) {
      error = "axis `" + name + "` is used twice";
      return -1;
    }
    seen = seen | AxisSet::of(a);
    return a;
  };
  /// `x` or `(x, y)`; appends to `out`.
  auto axes = [&](std::vector<int> &out) -> bool {
    if (in.eat('(')) {
      do {
        int a = axis(in.word());
        if (a < 0) return false;
        out.push_back(a);
      } while (in.eat(','));
      if (!in.eat(')')) {
        error = "expected `)` after the axes";
        return false;
      }
      return true;
    }
    int a = axis(in.word());
    if (a < 0) return false;
    out.push_back(a);
    return true;
  };
  if (in.word() != "P" || !in.eat('(')) {
    error = "a sharding is written `P(...)`, e.g. `P(x, None)` or `P(x, partial=y)`";
    return std::nullopt;
  }
  size_t d = 0;
  if (!in.eat(')')) {
    do {
      if (in.eat('(')) {  // a tuple of axes for one dimension
        if (d >= rank) {
          error = "the spec has more entries than the array has dimensions (" +
                  std::to_string(rank) + ")";
          return std::nullopt;
        }
        do {
          int a = axis(in.word());
          if (a < 0) return std::nullopt;
          s.dims[d].push_back(a);
        } while (in.eat(','));
        if (!in.eat(')')) {
          error = "expected `)` after the axes";
          return std::nullopt;
        }
        ++d;
        continue;
      }
      std::string word = in.word();
      if (word == "partial" && in.eat('=')) {
        std::vector<int> p;
        if (!axes(p)) return std::nullopt;
        s.partial = AxisSet::of_all(p);
        break;
      }
      if (d >= rank) {
        error = "the spec has more entries than the array has dimensions (" + std::to_string(rank) +
                ")";
        return std::nullopt;
      }
      if (word != "None") {
        int a = axis(word);
        if (a < 0) return std::nullopt;
        s.dims[d].push_back(a);
      }
      ++d;
    } while (in.eat(','));
    if (!in.eat(')')) {
      error = "expected `,` or `)` in the spec";
      return std::nullopt;
    }
  }
  if (!in.at_end()) {
    error = "unexpected text after the spec";
    return std::nullopt;
  }
  return s;
}

bool fits(const rt::Mesh &mesh, const Shape &global, const Sharding &s) {
  if (s.dims.size() != global.size()) return false;
  AxisSet seen = s.partial;
  for (size_t d = 0; d < global.size(); ++d) {
    int64_t n = 1;
    for (int a : s.dims[d]) {
      if (seen.contains(a)) return false;
      seen = seen | AxisSet::of(a);
      n *= mesh.axis_size(a);
    }
    if (global[d] % n != 0) return false;
  }
  return true;
}

Shape local_shape(const rt::Mesh &mesh, const Shape &global, const Sharding &s) {
  return rt::local_shape(mesh, global, s.dims);
}

double local_bytes(const rt::Mesh &mesh, const Shape &global, DType dtype, const Sharding &s) {
  return static_cast<double>(rt::num_elements(local_shape(mesh, global, s))) *
         static_cast<double>(rt::dtype_size(dtype));
}

bool exhaustive_mesh(const rt::Mesh &mesh) {
  // Axes of size 1 count: they move data nowhere, but they multiply the layouts.
  return mesh.axes().size() <= static_cast<size_t>(kExhaustiveReshardAxes);
}

std::vector<std::vector<int>> nonempty_subsets(const std::vector<int> &axes) {
  std::vector<std::vector<int>> out;
  size_t n = std::min<size_t>(axes.size(), 16);
  for (uint32_t mask = 1; mask < (1u << n); ++mask) {
    std::vector<int> s;
    for (size_t i = 0; i < n; ++i)
      if (mask & (1u << i)) s.push_back(axes[i]);
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<std::vector<std::vector<int>>> axis_assignments(const rt::Mesh &mesh,
                                                            const std::vector<int64_t> &slot_sizes,
                                                            bool all_orders, size_t max) {
  std::vector<int> axes;  // the axes worth splitting over
  for (int a = 0; a < static_cast<int>(mesh.axes().size()); ++a)
    if (mesh.axis_size(a) > 1) axes.push_back(a);
  std::vector<std::vector<std::vector<int>>> out;
  std::vector<std::vector<int>> current(slot_sizes.size());
  std::vector<int64_t> product(slot_sizes.size(), 1);
  // At a leaf every axis has a slot (or none); each slot's axes are then
  // listed in every order.
  auto orders = [&](auto &&self, size_t slot, std::vector<std::vector<int>> &assignment) -> void {
    if (out.size() >= max) return;
    if (slot == assignment.size()) {
      out.push_back(assignment);
      return;
    }
    std::vector<int> &list = assignment[slot];
    std::sort(list.begin(), list.end());
    do {
      self(self, slot + 1, assignment);
    } while (all_orders && std::next_permutation(list.begin(), list.end()));
  };
  auto choose = [&](auto &&self, size_t k) -> void {
    if (out.size() >= max) return;  // (slots + 1)^axes leaves: stop at the cap
    if (k == axes.size()) {
      std::vector<std::vector<int>> assignment = current;
      orders(orders, 0, assignment);
      return;
    }
    int a = axes[k];
    self(self, k + 1);  // axis a splits nothing
    for (size_t s = 0; s < slot_sizes.size(); ++s) {
      int64_t p = product[s] * mesh.axis_size(a);
      if (slot_sizes[s] % p != 0) continue;
      product[s] = p;
      current[s].push_back(a);
      self(self, k + 1);
      current[s].pop_back();
      product[s] /= mesh.axis_size(a);
    }
  };
  choose(choose, 0);
  return out;
}

std::vector<Sharding> all_layouts(const rt::Mesh &mesh, const Shape &global, bool all_orders,
                                  size_t max) {
  std::vector<Sharding> out;
  for (auto &assignment : axis_assignments(mesh, global, all_orders, max))
    out.push_back(Sharding{std::move(assignment), {}});
  return out;
}

}  // namespace spmd::sharding
