// support/suggest.cpp — edit distance and the closest known name (see suggest.h).
#include "support/suggest.h"

#include <algorithm>
#include <cctype>

namespace spmd {

int edit_distance(std::string_view a, std::string_view b) {
  // Optimal string alignment distance with costs in half-steps.
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<int>> d(n + 1, std::vector<int>(m + 1, 0));
  for (size_t i = 0; i <= n; ++i) d[i][0] = static_cast<int>(2 * i);
  for (size_t j = 0; j <= m; ++j) d[0][j] = static_cast<int>(2 * j);
  auto lower = [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  };
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      int sub = a[i - 1] == b[j - 1] ? 0 : lower(a[i - 1]) == lower(b[j - 1]) ? 1 : 2;
      int best = std::min({d[i - 1][j] + 2, d[i][j - 1] + 2, d[i - 1][j - 1] + sub});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        best = std::min(best, d[i - 2][j - 2] + 2);
      d[i][j] = best;
    }
  }
  return d[n][m];
}

std::optional<std::string> closest_match(std::string_view name,
                                         const std::vector<std::string> &candidates) {
  if (name.empty() || name.size() > 64) return std::nullopt;
  // Budget in half-steps: one edit for names up to 5 characters, then a third
  // of the length, plus one change of case; never enough to replace the
  // whole name.
  const int budget = 2 * std::max<int>(1, static_cast<int>(name.size()) / 3) + 1;
  std::optional<std::string> best;
  int best_distance = budget + 1;
  for (const std::string &c : candidates) {
    if (c == name || c.empty()) continue;
    int limit = 2 * static_cast<int>(std::max(c.size(), name.size())) - 1;
    int dist = edit_distance(name, c);
    if (dist < best_distance && dist < limit) {
      best = c;
      best_distance = dist;
    }
  }
  return best;
}

}  // namespace spmd
