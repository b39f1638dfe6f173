// SPDX-License-Identifier: Apache-2.0
// JSON -> Scenario: parse, default, validate, freeze (style.md §3.6).
#include "models/scenario.hpp"

#include "hardware/hardware_profile_json.hpp"
#include "models/model_spec_json.hpp"
#include "models/strategy/strategy.hpp"
#include "sim/support/error.hpp"
#include "sim/support/json_reader.hpp"

#include <nlohmann/json.hpp>

namespace stepsim::models {

int Scenario::ranks_per_node() const {
  return static_cast<int>(std::min<std::int64_t>(cluster.gpus_per_node, parallelism.dp));
}

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const auto& s : strategy_registry()) names.emplace_back(s.name);
  return names;
}

namespace {

constexpr std::int64_t kMaxRanks = 100'000'000;

// Fields that hold a catalog name, a file path or an inline object.
template <typename T, typename LoadFn, typename ParseFn>
T read_reference(const JsonReader& root, const nlohmann::json& doc, const char* key,
                 std::string& ref, LoadFn load, ParseFn parse) {
  if (!root.has(key)) root.fail(key, "required field is missing");
  if (root.is_string(key)) {
    ref = root.string(key);
    return load(ref, root.source(), root.path(key));
  }
  const nlohmann::json& v = doc.at(key);
  if (!v.is_object())
    root.fail(key, "expected a catalog name, a path to a .json file, or an inline object, got " +
                       json_excerpt(v));
  ref = "inline";
  return parse(v, root.source(), root.path(key));
}

}  // namespace

Scenario parse_scenario(const nlohmann::json& doc, const std::string& source) {
  JsonReader root(doc, source, "");
  Scenario s;
  s.source = source;
  s.name = root.string_or("name", "");
  root.string_or("description", "");
  root.string_or("$schema", "");

  s.model = read_reference<ModelSpec>(root, doc, "model", s.model_ref, load_model, parse_model);
  s.hardware = read_reference<hardware::HardwareProfile>(
      root, doc, "hardware", s.hardware_ref, hardware::load_profile,
      [](const nlohmann::json& j, const std::string& src, const std::string& ptr) {
        return hardware::parse_profile(j, src, ptr);
      });

  // parallelism first: the cluster defaults depend on dp.
  const auto par = root.optional_object("parallelism");
  if (!par) root.fail("parallelism", "required field is missing (at least {\"dp\": N})");
  auto& p = s.parallelism;
  p.strategy = par->choice_or("strategy", "ddp", strategy_names());
  p.dp = par->integer("dp", 1, kMaxRanks);
  p.bucket_cap_mb = par->number_or("bucket_cap_mb", p.bucket_cap_mb, Check::Positive);
  p.first_bucket_mb = par->number_or("first_bucket_mb", p.first_bucket_mb, Check::Positive);
  p.sync_every_micro_batch = par->boolean_or("sync_every_micro_batch", false);
  p.gradient_as_bucket_view = par->boolean_or("gradient_as_bucket_view", false);
  par->finish();

  const auto cluster = root.optional_object("cluster");
  s.cluster.gpus_per_node = s.hardware.gpus_per_node;
  if (cluster) s.cluster.gpus_per_node = static_cast<int>(cluster->integer_or("gpus_per_node", s.hardware.gpus_per_node, 1, 1 << 20));
  const std::int64_t gpn = s.cluster.gpus_per_node;
  const std::int64_t default_nodes = (p.dp + gpn - 1) / gpn;
  s.cluster.nodes = static_cast<int>(cluster ? cluster->integer_or("nodes", default_nodes, 1, kMaxRanks) : default_nodes);
  if (cluster) cluster->finish();
  if (p.dp > gpn && p.dp % gpn != 0)
    throw InputError(source, "/parallelism/dp",
                     fmt::format("dp ({}) must be a multiple of /cluster/gpus_per_node ({}) when the "
                                 "group spans several nodes",
                                 p.dp, gpn));
  if (p.dp > gpn && s.cluster.nodes * gpn != p.dp)
    throw InputError(source, "/cluster/nodes",
                     fmt::format("/cluster/nodes ({}) × /cluster/gpus_per_node ({}) = {} ≠ "
                                 "/parallelism/dp ({}); stepsim simulates pure data parallelism, "
                                 "so the world size must equal dp",
                                 s.cluster.nodes, gpn, s.cluster.nodes * gpn, p.dp));
  if (p.dp <= gpn && s.cluster.nodes != 1)
    throw InputError(source, "/cluster/nodes",
                     fmt::format("dp ({}) fits in one node of {} GPUs, but /cluster/nodes is {}",
                                 p.dp, gpn, s.cluster.nodes));

  const auto batch = root.optional_object("batch");
  if (batch) {
    s.batch.micro_batch_size = batch->integer_or("micro_batch_size", 1, 1, 1 << 30);
    s.batch.seq_len = batch->integer_or("seq_len", s.batch.seq_len, 1, 1 << 30);
    s.batch.grad_accum = batch->integer_or("grad_accum", 1, 1, 1 << 20);
    batch->finish();
  }

  s.optimizer = root.choice_or("optimizer", "adam", {"adam", "none"});

  if (const auto coll = root.optional_object("collectives")) {
    s.cost_model = coll->choice_or("cost_model", "alpha-beta", {"alpha-beta"});
    const std::string algo = coll->choice_or("algorithm", "auto", {"auto", "ring", "hierarchical"});
    s.algorithm = algo == "ring"           ? hardware::CollectiveAlgorithm::Ring
                  : algo == "hierarchical" ? hardware::CollectiveAlgorithm::Hierarchical
                                           : hardware::CollectiveAlgorithm::Auto;
    coll->finish();
  }
  if (const auto simcfg = root.optional_object("sim")) {
    s.rank_mode = simcfg->choice_or("rank_mode", "symmetric", {"symmetric"});
    simcfg->finish();
  }
  root.finish();

  // Echo: the input with defaults filled in, so a report names everything it used.
  nlohmann::json resolved = doc;
  resolved["parallelism"] = {{"strategy", p.strategy},
                             {"dp", p.dp},
                             {"bucket_cap_mb", p.bucket_cap_mb},
                             {"first_bucket_mb", p.first_bucket_mb},
                             {"sync_every_micro_batch", p.sync_every_micro_batch},
                             {"gradient_as_bucket_view", p.gradient_as_bucket_view}};
  resolved["cluster"] = {{"gpus_per_node", s.cluster.gpus_per_node}, {"nodes", s.cluster.nodes}};
  resolved["batch"] = {{"micro_batch_size", s.batch.micro_batch_size},
                       {"seq_len", s.batch.seq_len},
                       {"grad_accum", s.batch.grad_accum}};
  resolved["optimizer"] = s.optimizer;
  resolved["collectives"] = {{"cost_model", s.cost_model},
                             {"algorithm", s.algorithm == hardware::CollectiveAlgorithm::Ring ? "ring"
                                           : s.algorithm == hardware::CollectiveAlgorithm::Hierarchical
                                               ? "hierarchical"
                                               : "auto"}};
  resolved["sim"] = {{"rank_mode", s.rank_mode}};
  s.resolved = std::make_shared<const nlohmann::json>(std::move(resolved));
  return s;
}

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  nlohmann::json doc = read_json_file(path);
  for (const auto& o : overrides) apply_override(doc, o, "--set " + o);
  return parse_scenario(doc, path);
}

}  // namespace stepsim::models
