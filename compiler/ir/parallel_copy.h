// ir/parallel_copy.h — writing a parallel copy as a sequence of plain copies.
//
// A loop's carried values are updated all at once at the end of each
// iteration: `(a, b) = (2.0 * b, a)` reads every source before it writes any
// destination. Source text and C++ have only sequential assignment, so every
// writer that turns the IR back into code (the printer; the backends once
// loops reach them) orders the copies with sequentialize_parallel_copy:
//   1. copies whose destination is also their source are dropped;
//   2. of the copies whose destination no pending copy still reads, the first
//      (in input order) is emitted; that may free its source's location for
//      the copy that writes it; repeat;
//   3. when only cycles are left (a swap `a, b = b, a`), the destination of
//      the first pending copy is saved in a fresh temporary, its reader reads
//      the temporary instead, and step 2 unwinds the rest of that cycle.
// The result performs the parallel copy exactly, with one temporary per cycle,
// in O(n log n) time. It is stable: given the copies in the order in which the
// result writes their destinations, it returns the same sequence again. The
// printer relies on that (printing a printed loop gives the same text, though
// reading it back orders the carried values by their first assignment).
#pragma once

#include <functional>
#include <queue>
#include <unordered_map>
#include <utility>
#include <vector>

namespace spmd::ir {

template <typename Location>
struct Copy {
  Location destination;
  Location source;
  bool operator==(const Copy &) const = default;
};

/// `copies` is a parallel copy: the destinations are distinct. `new_temporary`
/// returns a location that no copy mentions (called once per cycle).
template <typename Location, typename Hash = std::hash<Location>>
std::vector<Copy<Location>> sequentialize_parallel_copy(
    const std::vector<Copy<Location>> &copies, const std::function<Location()> &new_temporary) {
  std::vector<Copy<Location>> pending;                // step 1
  std::unordered_map<Location, size_t, Hash> writer;  // destination -> index in pending
  // location -> the pending copies that read it, and how many of them are not done
  std::unordered_map<Location, std::pair<std::vector<size_t>, size_t>, Hash> readers;
  for (const auto &c : copies) {
    if (c.destination == c.source) continue;
    writer.emplace(c.destination, pending.size());
    auto &r = readers[c.source];
    r.first.push_back(pending.size());
    ++r.second;
    pending.push_back(c);
  }
  std::vector<bool> done(pending.size(), false);
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;  // first index on top
  for (size_t i = 0; i < pending.size(); ++i)
    if (!readers.count(pending[i].destination)) ready.push(i);
  std::vector<Copy<Location>> out;
  out.reserve(pending.size() + 2);
  size_t first_pending = 0;
  for (;;) {
    while (!ready.empty()) {  // step 2
      size_t i = ready.top();
      ready.pop();
      out.push_back(pending[i]);
      done[i] = true;
      // The source has one reader fewer; if nobody reads it any more and a
      // pending copy writes it, that copy may go now.
      auto r = readers.find(pending[i].source);
      if (--r->second.second == 0) {
        auto w = writer.find(pending[i].source);
        if (w != writer.end() && !done[w->second]) ready.push(w->second);
      }
    }
    while (first_pending < pending.size() && done[first_pending]) ++first_pending;
    if (first_pending == pending.size()) break;
    // Step 3: every pending destination is still read by a pending copy, so
    // the pending copies form cycles and exactly one of them reads this
    // destination. Save it in a temporary and let that copy read the temporary.
    const Location saved = pending[first_pending].destination;
    const Location temp = new_temporary();
    out.push_back({temp, saved});
    auto &r = readers.at(saved);
    size_t reader = pending.size();
    for (size_t i : r.first)
      if (!done[i]) reader = i;
    r.second = 0;
    pending[reader].source = temp;
    readers[temp] = {{reader}, 1};
    ready.push(first_pending);
  }
  return out;
}

}  // namespace spmd::ir
