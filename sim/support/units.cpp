// SPDX-License-Identifier: Apache-2.0
// Unit parsing: the one place where unit strings become SI numbers.
#include "sim/support/units.hpp"

#include "sim/support/error.hpp"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>

namespace stepsim {

std::string_view dimension_name(Dimension d) {
  switch (d) {
    case Dimension::Bytes: return "bytes";
    case Dimension::BytesPerSecond: return "a bandwidth";
    case Dimension::Seconds: return "a duration";
    case Dimension::FlopsPerSecond: return "a compute rate";
  }
  return "?";
}

namespace {

struct Unit {
  double scale;
  Dimension dim;
};

// Prefix multiplier at the front of `u`; advances `u` past it. Binary prefixes need an 'i'.
double take_prefix(std::string_view& u) {
  if (u.size() >= 2 && u[1] == 'i') {
    double s = 0;
    switch (u[0]) {
      case 'K': case 'k': s = 1024.0; break;
      case 'M': s = 1024.0 * 1024.0; break;
      case 'G': s = 1024.0 * 1024.0 * 1024.0; break;
      case 'T': s = 1024.0 * 1024.0 * 1024.0 * 1024.0; break;
      default: return 1.0;
    }
    u.remove_prefix(2);
    return s;
  }
  if (u.size() >= 2) {
    double s = 0;
    switch (u[0]) {
      case 'k': case 'K': s = 1e3; break;
      case 'M': s = 1e6; break;
      case 'G': s = 1e9; break;
      case 'T': s = 1e12; break;
      case 'P': s = 1e15; break;
      default: return 1.0;
    }
    u.remove_prefix(1);
    return s;
  }
  return 1.0;
}

std::optional<Unit> parse_unit(std::string_view u) {
  // Time units first: they are not prefix + base.
  if (u == "s") return Unit{1.0, Dimension::Seconds};
  if (u == "ms") return Unit{1e-3, Dimension::Seconds};
  if (u == "us" || u == "\xC2\xB5s") return Unit{1e-6, Dimension::Seconds};
  if (u == "ns") return Unit{1e-9, Dimension::Seconds};
  if (u == "ps") return Unit{1e-12, Dimension::Seconds};
  std::string_view rest = u;
  const double prefix = take_prefix(rest);
  if (rest == "FLOP/s" || rest == "FLOPS" || rest == "flop/s")
    return Unit{prefix, Dimension::FlopsPerSecond};
  bool per_second = false;
  if (rest.size() > 2 && rest.substr(rest.size() - 2) == "/s") {
    per_second = true;
    rest.remove_suffix(2);
  } else if (rest.size() > 2 && rest.substr(rest.size() - 2) == "ps") {
    per_second = true;  // "Gbps", "GBps"
    rest.remove_suffix(2);
  }
  double base = 0;
  if (rest == "B") base = 1.0;
  else if (rest == "b") base = 0.125;
  else return std::nullopt;
  return Unit{prefix * base, per_second ? Dimension::BytesPerSecond : Dimension::Bytes};
}

}  // namespace

namespace {

double check_magnitude(double value, std::string_view text) {
  if (std::fabs(value) > kMaxMagnitude)
    throw UnitError(fmt::format("'{}' = {:.3g} is beyond any quantity stepsim models (expected a magnitude of at most "
                                "{:g})", excerpt(text), value, kMaxMagnitude));
  return value;
}

}  // namespace

double parse_quantity(std::string_view text, Dimension expected) {
  std::string_view t = text;
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
  double value = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (ec != std::errc{} || end == t.data())
    throw UnitError(fmt::format("expected {} such as '25MiB', got '{}'", dimension_name(expected),
                                text));
  std::string_view unit_text(end, static_cast<std::size_t>(t.data() + t.size() - end));
  while (!unit_text.empty() && unit_text.front() == ' ') unit_text.remove_prefix(1);
  if (!std::isfinite(value))
    throw UnitError(fmt::format("expected a finite number, got '{}'", text));
  if (unit_text.empty()) return check_magnitude(value, text);
  const auto unit = parse_unit(unit_text);
  if (!unit)
    throw UnitError(fmt::format("unknown unit '{}' in '{}' (expected {})", unit_text, text,
                                dimension_name(expected)));
  if (expected == Dimension::Bytes && unit_text.back() == 'b')
    throw UnitError(fmt::format("'{}' is in bits; sizes are in bytes (use B, e.g. '{}B')", text,
                                std::string(t.substr(0, t.size() - 1))));
  if (unit->dim != expected)
    throw UnitError(fmt::format("expected {}, got {} '{}'", dimension_name(expected),
                                dimension_name(unit->dim), text));
  const double scaled = value * unit->scale;
  if (!std::isfinite(scaled))
    throw UnitError(fmt::format("'{}' is too large (it overflows a double)", text));
  return check_magnitude(scaled, text);
}

}  // namespace stepsim
