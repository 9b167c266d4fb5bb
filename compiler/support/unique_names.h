// support/unique_names.h — distinct names for generated text, in constant time each.
//
// The printer names every value of a function and the backend every C++
// variable; both want the source name where it is free and `name_<k>`
// otherwise. Probing k = 1, 2, ... from the start for every name is quadratic
// when many values share a name (a chain of `x = f(x)`, the `_bar` values of a
// derivative), so UniqueNames remembers, per base, the last suffix it gave and
// continues from there. The result is the same as probing from the start:
// names are only ever added, so a suffix found taken stays taken.
//
// The taken names are kept in one vector, indexed by their 64-bit hash in a
// FlatHashMap (support/flat_hash_map.h): a lookup of a free name touches one
// slot, where a std::unordered_set<std::string> of 100k+ names costs a
// bucket, a node and a malloc per name.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "support/flat_hash_map.h"

namespace spmd {

class UniqueNames {
 public:
  /// Suffixes count from `first_suffix` (`x_1` or `x_2` for the second `x`).
  explicit UniqueNames(int first_suffix = 1) : first_suffix_(first_suffix) {}

  /// Marks `name` as used (keywords, axis names, names given elsewhere).
  void reserve(const std::string &name) {
    const uint64_t h = hash(name);
    if (!taken(name, h)) add(name, h);
  }
  bool taken(const std::string &name) const { return taken(name, hash(name)); }
  /// Room for `n` names without rehashing (a function's value count).
  void expect(size_t n) {
    names_.reserve(n);
    next_same_hash_.reserve(n);
    by_hash_.reserve(n);
  }

  /// `base` if it is free, else `base_<k>` for the smallest free k; marks it used.
  std::string claim(const std::string &base) {
    std::string name = base;
    uint64_t h = hash(name);
    if (taken(name, h)) {
      auto [it, fresh] = next_suffix_.try_emplace(base, first_suffix_);
      do {
        name = base + "_" + std::to_string(it->second++);
        h = hash(name);
      } while (taken(name, h));
    }
    add(name, h);
    return name;
  }

 private:
  static uint64_t hash(std::string_view name) { return std::hash<std::string_view>()(name); }
  bool taken(const std::string &name, uint64_t h) const {
    const int32_t *latest = by_hash_.find(h);
    for (int32_t k = latest ? *latest : -1; k >= 0; k = next_same_hash_[static_cast<size_t>(k)])
      if (names_[static_cast<size_t>(k)] == name) return true;
    return false;
  }
  void add(const std::string &name, uint64_t h) {
    const auto index = static_cast<int32_t>(names_.size());
    names_.push_back(name);
    auto [latest, fresh] = by_hash_.try_emplace(h, index);
    next_same_hash_.push_back(fresh ? -1 : *latest);  // (another name with this hash)
    *latest = index;
  }

  int first_suffix_;
  std::vector<std::string> names_;       // every name taken, in order
  std::vector<int32_t> next_same_hash_;  // per name: the previous one with its hash, or -1
  FlatHashMap<int32_t> by_hash_;         // hash -> the latest name with it
  std::unordered_map<std::string, int> next_suffix_;  // base -> next suffix to try
};

}  // namespace spmd
