// SPDX-License-Identifier: Apache-2.0
// Name suggestions: edit distance, adjacent swaps counting as one edit for suggestions.
#include "sim/support/names.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <numeric>

namespace stepsim {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), std::size_t{0});
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

namespace {

// Optimal string alignment distance (Damerau 1964, without repeated edits of a substring): the
// edit distance with a swap of two adjacent characters as one edit, the commonest typo
// ("fdsp" is one edit from "fsdp", two from "ddp"). For suggestions only.
std::size_t typo_distance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i)
    for (std::size_t j = 1; j <= m; ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}
}  // namespace

std::string suggest(std::string_view name, const std::vector<std::string>& candidates) {
  // A case-insensitive match or the shortest candidate that extends the name ("h100" ->
  // "h100-sxm", not "h100-hbm2e-500w"; the first of equals) wins.
  const std::string lname = lower(name);
  for (const auto& c : candidates)
    if (lower(c) == lname) return c;
  if (lname.size() >= 2) {
    const std::string* shortest = nullptr;
    for (const auto& c : candidates)
      if (lower(c).rfind(lname, 0) == 0 && (!shortest || c.size() < shortest->size())) shortest = &c;
    if (shortest) return *shortest;
  }
  const std::size_t limit = std::max<std::size_t>(2, name.size() / 3);
  std::string best;
  std::size_t best_d = limit + 1;
  for (const auto& c : candidates) {
    const std::size_t d = typo_distance(name, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates) {
  const std::string s = suggest(name, candidates);
  return s.empty() ? std::string{} : " (did you mean '" + s + "'?)";
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

std::string count_of(std::size_t n, const std::string& noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

}  // namespace stepsim
