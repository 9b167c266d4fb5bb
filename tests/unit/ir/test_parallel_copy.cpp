// test_parallel_copy.cpp — sequentialize_parallel_copy performs the parallel
// copy exactly (checked by running both on random register files), uses one
// temporary per cycle, and is stable (the printer's idempotence needs that).
#include <catch2/catch.hpp>
#include <map>
#include <random>

#include "ir/parallel_copy.h"

namespace spmd::ir {
namespace {

using Copies = std::vector<Copy<int>>;

/// Runs `copies` one after the other on `registers`.
std::map<int, int> run_sequentially(std::map<int, int> registers, const Copies &copies) {
  for (const auto &c : copies) registers[c.destination] = registers.at(c.source);
  return registers;
}

/// The meaning of a parallel copy: every source is read before any write.
std::map<int, int> run_in_parallel(std::map<int, int> registers, const Copies &copies) {
  std::map<int, int> before = registers;
  for (const auto &c : copies) registers[c.destination] = before.at(c.source);
  return registers;
}

Copies sequentialize(const Copies &copies, int &temporaries) {
  int next = 1000;
  temporaries = 0;
  return sequentialize_parallel_copy<int>(copies, [&] {
    ++temporaries;
    return next++;
  });
}

TEST_CASE("a swap needs one temporary", "[parallel-copy]") {
  int temps = 0;
  Copies swap = {{1, 2}, {2, 1}};
  Copies seq = sequentialize(swap, temps);
  CHECK(temps == 1);
  CHECK(seq == Copies{{1000, 1}, {1, 2}, {2, 1000}});
}

TEST_CASE("a chain needs no temporary and is written from its end", "[parallel-copy]") {
  int temps = 0;
  // (a, b, c) = (b, c, d): a must be written before b, b before c.
  Copies seq = sequentialize({{1, 2}, {2, 3}, {3, 4}}, temps);
  CHECK(temps == 0);
  CHECK(seq == Copies{{1, 2}, {2, 3}, {3, 4}});
  seq = sequentialize({{3, 4}, {2, 3}, {1, 2}}, temps);
  CHECK(seq == Copies{{1, 2}, {2, 3}, {3, 4}});
}

TEST_CASE("self copies are dropped", "[parallel-copy]") {
  int temps = 0;
  CHECK(sequentialize({{1, 1}, {2, 2}}, temps).empty());
  CHECK(temps == 0);
}

TEST_CASE("random parallel copies are performed exactly", "[parallel-copy]") {
  std::mt19937 rng(17);
  int with_cycles = 0;
  for (int round = 0; round < 2000; ++round) {
    const int n = 1 + static_cast<int>(rng() % 9);
    // Destinations: distinct locations 0..n-1 in random order; sources: any of
    // 0..n+2 (some are read-only), often a permutation to make cycles.
    std::vector<int> destinations(n);
    for (int i = 0; i < n; ++i) destinations[i] = i;
    std::shuffle(destinations.begin(), destinations.end(), rng);
    const int count = 1 + static_cast<int>(rng() % n);
    std::vector<int> perm = destinations;
    std::shuffle(perm.begin(), perm.end(), rng);
    Copies copies;
    for (int i = 0; i < count; ++i) {
      int source = rng() % 3 ? perm[i] : n + static_cast<int>(rng() % 3);
      copies.push_back({destinations[i], source});
    }
    std::map<int, int> registers;
    for (int i = 0; i < n + 3; ++i) registers[i] = 100 + i;
    int temps = 0;
    Copies seq = sequentialize(copies, temps);
    INFO("round " << round);
    auto got = run_sequentially(registers, seq);
    for (auto it = got.begin(); it != got.end();)  // temporaries are scratch
      it = it->first >= 1000 ? got.erase(it) : std::next(it);
    CHECK(got == run_in_parallel(registers, copies));
    // Cycles: count them independently (follow destination -> source links).
    std::map<int, int> source_of;
    for (const auto &c : copies)
      if (c.destination != c.source) source_of[c.destination] = c.source;
    int cycles = 0;
    std::map<int, int> state;  // 0 unseen, 1 on the current path, 2 finished
    for (const auto &[start, unused] : source_of) {
      int v = start;
      while (source_of.count(v) && state[v] == 0) {
        state[v] = 1;
        v = source_of[v];
      }
      if (source_of.count(v) && state[v] == 1) ++cycles;
      for (v = start; source_of.count(v) && state[v] == 1; v = source_of[v]) state[v] = 2;
    }
    CHECK(temps == cycles);
    with_cycles += cycles > 0;
    // Stable: the copies in the order the sequence writes them give it back.
    Copies reordered;
    for (const auto &step : seq)
      for (const auto &c : copies)
        if (c.destination == step.destination && c.destination != c.source) reordered.push_back(c);
    int temps2 = 0;
    CHECK(sequentialize(reordered, temps2) == seq);
  }
  CHECK(with_cycles > 200);
}

}  // namespace
}  // namespace spmd::ir
