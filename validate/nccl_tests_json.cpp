// SPDX-License-Identifier: Apache-2.0
// read_nccl_tests_file(): file I/O and the provenance sidecar of the normalized CSVs
// (../shared/data/nccl/<id>.json: gpu, nodes, total_ranks, nccl_version). The only file in
// validate/ that sees JSON.
#include "validate/nccl_tests.hpp"
#include "sim/support/input_file.hpp"

#include "sim/support/error.hpp"
#include "sim/support/json_reader.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>

namespace stepsim::validate {

namespace {

// Fills what the CSV cannot say from the sidecar. The sidecar is someone else's format: read
// leniently (unknown keys ignored), but a present field of the wrong type is an error.
void apply_sidecar(NcclTestsLog& log, const std::string& sidecar) {
  const nlohmann::json doc = read_json_file(sidecar);
  if (!doc.is_object()) throw InputError(sidecar, "", "expected a JSON object (dataset provenance)");
  auto integer = [&](const char* key) -> int {
    const auto it = doc.find(key);
    if (it == doc.end() || it->is_null()) return 0;
    if (!it->is_number_integer() || it->get<long long>() < 1 || it->get<long long>() > (1 << 24))
      throw InputError(sidecar, std::string("/") + key, "expected a positive integer, got " + json_excerpt(*it));
    return static_cast<int>(it->get<long long>());
  };
  auto text = [&](const char* key) -> std::string {
    const auto it = doc.find(key);
    if (it == doc.end() || !it->is_string()) return "";
    return it->get<std::string>();
  };
  const int ranks = integer("total_ranks");
  const int nodes = integer("nodes");
  // gpus_per_node, when given, must agree with the other two (a sidecar that contradicts
  // itself would price the log on the wrong node shape).
  if (const int gpn = integer("gpus_per_node"); gpn > 0 && ranks > 0 && nodes > 0 &&
                                                static_cast<long long>(gpn) * nodes != ranks)
    throw InputError(sidecar, "/gpus_per_node",
                     fmt::format("{} GPUs per node on {} nodes is {} ranks, but total_ranks says {}", gpn, nodes,
                                 static_cast<long long>(gpn) * nodes, ranks));
  if (const auto it = doc.find("gpu"); it != doc.end() && !it->is_string() && !it->is_null())
    throw InputError(sidecar, "/gpu", "expected the device name as a string, got " + json_excerpt(*it));
  const std::string gpu = text("gpu");
  std::string version = text("nccl_version");
  // Only a version number is a version ("not stated ..." is not).
  if (version.empty() || !(version[0] >= '0' && version[0] <= '9')) version.clear();
  version = version.substr(0, version.find_first_of("+ "));
  for (auto& run : log.runs) {
    if (ranks > 0) run.ranks = ranks;
    if (nodes > 0) run.nodes = nodes;
    if (run.gpu.empty()) run.gpu = gpu;
    if (run.nccl_version.empty()) run.nccl_version = version;
  }
}

}  // namespace

NcclTestsLog read_nccl_tests_file(const std::string& path) {
  const std::string text = read_input_file(path, "an nccl-tests log or CSV");
  if (text.empty()) throw InputError(path, "", "file is empty (expected nccl-tests output)");
  const bool csv = text.rfind("op,", 0) == 0 || text.rfind("size_bytes,", 0) == 0;
  NcclTestsLog log = csv ? parse_nccl_tests_csv(text, path) : parse_nccl_tests(text, path);
  if (csv) {
    const std::filesystem::path sidecar = std::filesystem::path(path).replace_extension(".json");
    if (std::error_code ec; std::filesystem::is_regular_file(sidecar, ec)) apply_sidecar(log, sidecar.string());
  }
  if (log.runs.empty()) {
    std::string why = "no nccl-tests table found (expected rows under a '#  size  count  type ...' header)";
    if (!log.unreadable.empty())
      why += fmt::format("; line {}: {}", log.unreadable.front().line, log.unreadable.front().reason);
    throw InputError(path, "", why);
  }
  return log;
}

}  // namespace stepsim::validate
