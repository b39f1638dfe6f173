// SPDX-License-Identifier: Apache-2.0
// The scenario's field table (issue 15 Part 1 item 2, DESIGN.md "Scenario"): every field of
// every scenario object declared once — path, type, unit, default, range, doc, the strategies
// it applies to — and the hooks that read, check and echo it. parse_scenario reads through it,
// unknown keys are refused against it, the echo is written from it and `stepsim list fields`
// and docs/fields.md are generated from it.
#pragma once

#include "sim/support/json_reader.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace stepsim::models {

struct Scenario;

/// What a field holds in JSON.
enum class FieldType {
  Boolean,
  Integer,
  Number,     ///< a double; with a dimension, also a string with units ("25MiB", "20us")
  Choice,     ///< a string from a list
  String,
  Reference,  ///< a catalog name, a path to a JSON file or an inline object
  Object,     ///< a nested object with its own fields
  ObjectList, ///< an array of objects with their own fields
  Variant,    ///< one of several JSON types (documented in the field's doc)
};

/// A field's value as the table moves it between JSON and the Scenario.
using FieldValue = std::variant<bool, std::int64_t, double, std::string>;

/// One field of one scenario object. Declared with designated initializers, in this order;
/// every hook is optional.
///
/// Reading (read_fields): `read` when given, else the generic reader of `type` with the range
/// below and, when the key is absent, `fallback(s)` or else `get(s)` (the Scenario's default,
/// so a struct default is written once); the result goes through `set`. Then `rule` checks it
/// against what was read before. A `knob` applies to the strategies whose StrategyEntry::knobs
/// name it and is refused under the others.
///
/// Echo (echo_fields): `echo_json` when given, else `echo(s)` (nullopt: not echoed), else
/// `get(s)`. Root fields that are not echoed keep the value the user gave (model, hardware).
struct ScenarioField {
  const char* object;  ///< "" for the root, "parallelism", "sim.jitter", "sim.slow_ranks[]"
  const char* key;
  FieldType type = FieldType::String;
  const char* doc = "";
  const char* unit = "";          ///< the unit of a bare number ("MiB", "s", "elements")
  const char* default_doc = nullptr;  ///< when the default depends on other fields; else get() of a default Scenario
  bool required = false;
  std::int64_t min = 0, max = 0;  ///< Integer: the range
  std::int64_t (*max_of)(const Scenario&) = nullptr;  ///< Integer: a range that depends on other fields
  const char* range_doc = nullptr;  ///< how max_of reads in the reference ("dp − 1")
  Check check = Check::Any;         ///< Number: the range
  std::optional<Dimension> dimension = std::nullopt;  ///< Number: strings with these units are accepted
  std::vector<std::string> (*choices)() = nullptr;  ///< Choice: the valid values
  bool knob = false;  ///< a strategy knob of `parallelism` (StrategyEntry::knobs says who takes it)
  const char* applies_doc = nullptr;  ///< a field outside `parallelism` that some strategies only take (its rule refuses the others)
  FieldValue (*get)(const Scenario&) = nullptr;
  void (*set)(Scenario&, const FieldValue&) = nullptr;
  FieldValue (*fallback)(const Scenario&) = nullptr;
  void (*read)(const JsonReader&, Scenario&) = nullptr;
  void (*rule)(const JsonReader&, Scenario&) = nullptr;
  std::optional<FieldValue> (*echo)(const Scenario&) = nullptr;
  void (*echo_json)(const Scenario&, nlohmann::json& object) = nullptr;

  /// "parallelism.bucket_cap_mb" (the dotted path `--set` takes).
  std::string path() const;
};

/// `.get` and `.set` of a table row that stores the field in Scenario member `member` as a
/// FieldValue alternative `T`: STEPSIM_FIELD_ACCESS(std::int64_t, batch.seq_len).
#define STEPSIM_FIELD_ACCESS(T, member)                                                               \
  .get = [](const ::stepsim::models::Scenario& s) -> ::stepsim::models::FieldValue {                 \
    return static_cast<T>(s.member);                                                                 \
  },                                                                                                 \
  .set = [](::stepsim::models::Scenario& s, const ::stepsim::models::FieldValue& v) {                \
    s.member = static_cast<decltype(s.member)>(std::get<T>(v));                                      \
  }

/// An `.echo` for fields the echo leaves as the user gave them (the root's model, hardware, name).
std::optional<FieldValue> not_echoed(const Scenario&);

/// Every field of a scenario, object by object in the order parse_scenario reads them: the
/// root's, then parallelism (its strategy knobs from each family's file, see
/// strategy_knob_fields), cluster, batch, precision, activations, framework, collectives, sim
/// and sim's nested objects.
const std::vector<ScenarioField>& scenario_fields();

/// The strategy knobs of `parallelism` each family declares in its own file (ddp.cpp,
/// zero.cpp, fsdp.cpp), collected by the registry in family order.
const std::vector<ScenarioField>& strategy_knob_fields();
const std::vector<ScenarioField>& ddp_knob_fields();
const std::vector<ScenarioField>& zero_knob_fields();
const std::vector<ScenarioField>& fsdp_knob_fields();

/// Reads every field of `object` from `reader` in table order (see ScenarioField), then
/// refuses any key the table does not declare ("did you mean").
/// @throws InputError naming the field, its bad value and what was expected.
void read_fields(const JsonReader& reader, const std::string& object, Scenario& s);

/// Reads one field of `reader` as the generic reader of its type does (range, units, choices),
/// with `fallback` when absent; for fields read by hand (list elements).
FieldValue read_value(const JsonReader& reader, const ScenarioField& field, const Scenario& s,
                      const FieldValue& fallback);

/// The field `path` ("sim.slow_ranks[].rank"). @throws InternalError when none.
const ScenarioField& field_at(const std::string& path);

/// Writes the echo of `object`'s fields (see ScenarioField) into `out`.
void echo_fields(const Scenario& s, const std::string& object, nlohmann::json& out);

/// The field reference: an array with one object per field in table order — path, type,
/// required, unit, default, range, values (a Choice's), applies_to (strategy names), doc — the
/// items `stepsim list fields --format json` prints (schema stepsim.list/1).
nlohmann::ordered_json field_reference_json();

/// The same as Markdown: docs/fields.md, checked current by CTest (docs.fields_current).
std::string field_reference_markdown();

}  // namespace stepsim::models
