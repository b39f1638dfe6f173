// SPDX-License-Identifier: Apache-2.0
// Accuracy set files and the JSON rendering of `stepsim accuracy` (validate/accuracy.hpp).
#include "validate/accuracy.hpp"

#include "sim/support/error.hpp"
#include "sim/support/json_reader.hpp"

#include <fmt/format.h>

#include <set>

namespace stepsim::validate {

namespace {

std::vector<std::string> strings(const nlohmann::json& doc, const std::string& key, const std::string& origin) {
  std::vector<std::string> out;
  const auto it = doc.find(key);
  if (it == doc.end()) return out;
  if (!it->is_array()) throw InputError(origin, "/" + key, "expected an array of strings, got " + json_excerpt(*it));
  for (std::size_t i = 0; i < it->size(); ++i) {
    if (!(*it)[i].is_string())
      throw InputError(origin, fmt::format("/{}/{}", key, i), "expected a string, got " + json_excerpt((*it)[i]));
    out.push_back((*it)[i].get<std::string>());
  }
  return out;
}

}  // namespace

AccuracySet parse_accuracy_set(const nlohmann::json& doc, const std::string& origin) {
  JsonReader root(doc, origin, "");
  AccuracySet set;
  set.origin = origin;
  set.name = root.string("name");
  set.description = root.string_or("description", "");
  set.sources = strings(doc, "sources", origin);
  (void)root.has("sources");
  (void)root.has("notes");
  strings(doc, "notes", origin);
  std::vector<std::string> names;
  for (AccuracyMetric m : accuracy_metrics()) names.push_back(accuracy_metric_name(m));
  const std::string metric = root.choice_or("metric", "step_time_s", names);
  for (AccuracyMetric m : accuracy_metrics())
    if (metric == accuracy_metric_name(m)) set.metric = m;
  nlohmann::json defaults = nlohmann::json::object();
  if (root.has("defaults")) {
    defaults = doc.at("defaults");
    if (!defaults.is_object()) throw InputError(origin, "/defaults", "expected a scenario object, got " + json_excerpt(defaults));
  }
  std::set<std::string> ids;
  const std::vector<JsonReader> rows = root.objects("rows", true);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const JsonReader& r = rows[i];
    const nlohmann::json& raw = doc.at("rows").at(i);
    AccuracyRow row;
    row.id = r.string("id");
    if (!ids.insert(row.id).second) r.fail("id", fmt::format("'{}' is already the id of an earlier row; expected unique ids", row.id));
    row.source = r.string("source");
    row.measured = r.number("measured", Check::Positive);
    row.unsupported = r.string_or("requires", "");
    row.note = r.string_or("note", "");
    (void)r.has("scenario");
    const auto sc = raw.find("scenario");
    if (sc == raw.end()) r.fail("scenario", "required field is missing (a stepsim scenario object)");
    if (!sc->is_object()) throw InputError(origin, r.path("scenario"), "expected a scenario object, got " + json_excerpt(*sc));
    row.scenario = defaults;
    row.scenario.merge_patch(*sc);
    r.finish();
    set.rows.push_back(std::move(row));
  }
  root.finish();
  return set;
}

AccuracySet load_accuracy_set(const std::string& name) {
  if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0)
    return parse_accuracy_set(read_json_file(name), name);
  for (const auto& f : detail::embedded_accuracy_sets())
    if (name == f.name) {
      const std::string origin = fmt::format("validate/accuracy/{}.json", f.name);
      return parse_accuracy_set(parse_json_text(f.text, origin), origin);
    }
  std::string known;
  for (const auto& n : accuracy_set_names()) known += (known.empty() ? "" : ", ") + n;
  throw InputError("", "", fmt::format("unknown accuracy set '{}'; expected one of {} or a set file ending in .json",
                                       name, known));
}

nlohmann::ordered_json accuracy_json(const std::vector<AccuracySetResult>& sets) {
  nlohmann::ordered_json j;
  j["schema"] = "stepsim.accuracy/1";
  j["error_definition"] = "(predicted_step_time_s - measured_step_time_s) / measured_step_time_s";
  auto& arr = j["sets"] = nlohmann::ordered_json::array();
  for (const auto& s : sets) {
    nlohmann::ordered_json o;
    o["name"] = s.name;
    o["description"] = s.description;
    o["metric"] = s.metric;
    o["sources"] = s.sources;
    o["rows"] = s.rows.size();
    o["simulated"] = s.stats.count;
    const auto stat = [](std::size_t n, double v) { return n > 0 ? nlohmann::ordered_json(v) : nlohmann::ordered_json(); };
    o["median_abs_error"] = stat(s.stats.count, s.stats.median_abs);  // null: no row simulated
    o["mean_abs_error"] = stat(s.stats.count, s.stats.mean_abs);
    o["max_abs_error"] = stat(s.stats.count, s.stats.max_abs);
    o["mean_error"] = stat(s.stats.count, s.stats.mean_signed);
    o["check_rows"] = s.check_stats.count;
    o["check_median_abs_error"] = stat(s.check_stats.count, s.check_stats.median_abs);
    auto& rows = o["rows_detail"] = nlohmann::ordered_json::array();
    for (const auto& r : s.rows) {
      nlohmann::ordered_json x;
      x["id"] = r.id;
      x["source"] = r.source;
      x["split"] = r.fit_split ? "fit" : "check";
      x["measured"] = r.measured;
      x["simulated"] = r.simulated;
      if (r.simulated) {
        x["predicted"] = r.predicted;
        x["measured_step_time_s"] = r.measured_step_s;
        x["predicted_step_time_s"] = r.predicted_step_s;
        x["error"] = r.rel_error;
        x["fits"] = r.fits;
      } else {
        x["requires"] = r.unsupported;
      }
      if (r.override_not_applicable) x["override"] = "not applicable (kept as built)";
      if (!r.note.empty()) x["note"] = r.note;
      rows.push_back(std::move(x));
    }
    arr.push_back(std::move(o));
  }
  return j;
}

nlohmann::json error_bands_json(const std::vector<models::ErrorBand>& bands) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& b : bands)
    out.push_back({{"set", b.set}, {"family", b.kind.family}, {"sharded", b.kind.sharded}, {"math", b.kind.math}, {"runs", b.rows},
                   {"p10_error", b.p10}, {"median_error", b.median}, {"p90_error", b.p90},
                   {"real_over_predicted", {b.real_over_predicted_low(), b.real_over_predicted_high()}}});
  return nlohmann::json{{"schema", "stepsim.error_bands/1"}, {"bands", out}};
}

}  // namespace stepsim::validate
