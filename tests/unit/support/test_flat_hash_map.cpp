// test_flat_hash_map.cpp — FlatHashMap behaves as std::map on random inserts,
// lookups and erases, including keys that share a home slot (erase shifts the
// entries after a hole back, so every key must stay reachable).
#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <vector>

#include "support/flat_hash_map.h"

namespace spmd {
namespace {

/// Every key of `reference` is found with its value, and a few absent ones are not.
void require_same(const FlatHashMap<int> &map, const std::map<uint64_t, int> &reference,
                  uint64_t key_range) {
  REQUIRE(map.size() == reference.size());
  for (uint64_t k = 0; k < key_range; ++k) {
    auto it = reference.find(k);
    const int *found = map.find(k);
    if (it == reference.end()) {
      REQUIRE(found == nullptr);
    } else {
      REQUIRE(found != nullptr);
      REQUIRE(*found == it->second);
    }
  }
}

TEST_CASE("FlatHashMap matches std::map under random inserts and erases", "[support]") {
  // Few distinct keys (many collisions in a small table) and many (growth).
  for (uint64_t key_range : {uint64_t{20}, uint64_t{3000}}) {
    std::mt19937_64 rng(key_range);
    FlatHashMap<int> map;
    std::map<uint64_t, int> reference;
    for (int step = 0; step < 20000; ++step) {
      const uint64_t k = rng() % key_range;
      const int value = static_cast<int>(rng() % 1000);
      switch (rng() % 3) {
        case 0:
        case 1: {
          auto [entry, fresh] = map.try_emplace(k, value);
          auto [it, ref_fresh] = reference.try_emplace(k, value);
          REQUIRE(fresh == ref_fresh);
          REQUIRE(*entry == it->second);
          if (step % 7 == 0) *entry = it->second = value + 1;  // entries are writable
          break;
        }
        case 2:
          map.erase(k);
          reference.erase(k);
          break;
      }
      if (step % 997 == 0) require_same(map, reference, key_range);
    }
    require_same(map, reference, key_range);
    // Empty it again: nothing left behind.
    for (uint64_t k = 0; k < key_range; ++k) map.erase(k);
    REQUIRE(map.empty());
    require_same(map, {}, key_range);
  }
}

TEST_CASE("FlatHashMap keeps colliding keys reachable after erasing the first", "[support]") {
  // Keys with the same home slot in the map's first table (16 slots, the top
  // 4 bits of key * 0x9E3779B97F4A7C15): they sit in a run, and erasing one
  // must shift the others back, not cut the run.
  std::vector<uint64_t> same_home;
  for (uint64_t k = 0; same_home.size() < 5; ++k)
    if (((k * 0x9E3779B97F4A7C15ull) >> 60) == 7) same_home.push_back(k);
  FlatHashMap<int> map;
  std::map<uint64_t, int> reference;
  for (size_t i = 0; i < same_home.size(); ++i) {
    map.try_emplace(same_home[i], static_cast<int>(i));
    reference[same_home[i]] = static_cast<int>(i);
  }
  for (size_t i : {size_t{0}, size_t{2}, size_t{4}}) {
    map.erase(same_home[i]);
    reference.erase(same_home[i]);
    for (const auto &[k, v] : reference) {
      const int *found = map.find(k);
      REQUIRE(found != nullptr);
      REQUIRE(*found == v);
    }
    REQUIRE(map.find(same_home[i]) == nullptr);
    REQUIRE(map.size() == reference.size());
  }
}

}  // namespace
}  // namespace spmd
