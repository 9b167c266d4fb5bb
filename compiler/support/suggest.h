// support/suggest.h — "did you mean ...?" by edit distance.
//
// closest_match picks, among known names, the one a misspelling most likely
// meant: the smallest Damerau-Levenshtein distance (insertions, deletions,
// substitutions and swaps of neighbours each cost 1), case differences
// counting half, within a budget that grows with the name's length (one edit
// for short names, a third of the length for long ones, plus a case change). Ties go to the earlier
// candidate, so callers list the likeliest kinds of names first.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spmd {

/// Edit distance in half-steps: a case-only change of a letter costs 1, any
/// other edit 2 (so "True" -> "true" is closer than "tree" -> "true").
int edit_distance(std::string_view a, std::string_view b);

/// The candidate closest to `name`, if one is close enough to be a typo.
std::optional<std::string> closest_match(std::string_view name,
                                         const std::vector<std::string> &candidates);

}  // namespace spmd
