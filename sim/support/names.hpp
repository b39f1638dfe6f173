// SPDX-License-Identifier: Apache-2.0
// Name suggestions ("did you mean") for unknown keys, profiles, models and strategies.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace stepsim {

/// Levenshtein edit distance between two strings (case-sensitive). O(|a|·|b|).
std::size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate closest to `name` when it is close enough to be a plausible typo
/// (distance ≤ max(2, |name|/3)), else "". Ties go to the first candidate.
std::string suggest(std::string_view name, const std::vector<std::string>& candidates);

/// " (did you mean 'x'?)" or "" — ready to append to a message.
std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates);

/// "1 point", "2 points": `n` and `noun`, with an "s" unless n is 1.
std::string count_of(std::size_t n, const std::string& noun);

/// "a, b, c" — for "valid values: ..." lists.
std::string join_names(const std::vector<std::string>& names);

}  // namespace stepsim
