// support/unique_names.h — distinct names for generated text, in constant time each.
//
// The printer names every value of a function and the backend every C++
// variable; both want the source name where it is free and `name_<k>`
// otherwise. Probing k = 1, 2, ... from the start for every name is quadratic
// when many values share a name (a chain of `x = f(x)`, the `_bar` values of a
// derivative), so UniqueNames remembers, per base, the last suffix it gave and
// continues from there. The result is the same as probing from the start:
// names are only ever added, so a suffix found taken stays taken.
#pragma once

#include <string>
#include <unordered_map>
#include <unordered_set>

namespace spmd {

class UniqueNames {
 public:
  /// Suffixes count from `first_suffix` (`x_1` or `x_2` for the second `x`).
  explicit UniqueNames(int first_suffix = 1) : first_suffix_(first_suffix) {}

  /// Marks `name` as used (keywords, axis names, names given elsewhere).
  void reserve(const std::string &name) { taken_.insert(name); }
  /// Room for `n` names without rehashing (a function's value count).
  void expect(size_t n) { taken_.reserve(n); }
  bool taken(const std::string &name) const { return taken_.count(name) > 0; }

  /// `base` if it is free, else `base_<k>` for the smallest free k; marks it used.
  std::string claim(const std::string &base) {
    std::string name = base;
    if (taken(name)) {
      auto [it, fresh] = next_suffix_.try_emplace(base, first_suffix_);
      do name = base + "_" + std::to_string(it->second++);
      while (taken(name));
    }
    taken_.insert(name);
    return name;
  }

 private:
  int first_suffix_;
  std::unordered_set<std::string> taken_;
  std::unordered_map<std::string, int> next_suffix_;  // base -> next suffix to try
};

}  // namespace spmd
