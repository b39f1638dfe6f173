// SPDX-License-Identifier: Apache-2.0
// vTrain's measured pure-DP iteration times → scenarios → predicted vs measured.
#include "validate/vtrain.hpp"

#include "sim/support/resources.hpp"
#include "validate/stats.hpp"

#include <nlohmann/json.hpp>

#include "models/report.hpp"
#include "sim/support/json_reader.hpp"
#include "sim/support/input_file.hpp"
#include "sim/support/error.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <exception>
#include <map>
#include <sstream>

namespace stepsim::validate {

namespace {

struct Cell {
  std::string text;
  std::size_t column = 0;  // 1-based character column where the field starts
};

// Splits one CSV line (RFC 4180 quotes; "" inside quotes is a quote).
std::vector<Cell> split_line(const std::string& line, const std::string& path, std::size_t line_no) {
  std::vector<Cell> out;
  std::size_t i = 0;
  const std::size_t n = line.size();
  while (true) {
    Cell c;
    c.column = i + 1;
    if (i < n && line[i] == '"') {
      ++i;
      bool closed = false;
      while (i < n) {
        if (line[i] == '"') {
          if (i + 1 < n && line[i + 1] == '"') {
            c.text += '"';
            i += 2;
            continue;
          }
          ++i;
          closed = true;
          break;
        }
        c.text += line[i++];
      }
      if (!closed)
        throw InputError(path, fmt::format("line {}, column {}", line_no, c.column),
                         "unterminated quoted field; expected a closing '\"'");
      if (i < n && line[i] != ',')
        throw InputError(path, fmt::format("line {}, column {}", line_no, i + 1),
                         fmt::format("unexpected '{}' after a quoted field; expected ','", line[i]));
    } else {
      while (i < n && line[i] != ',') c.text += line[i++];
    }
    out.push_back(std::move(c));
    if (i >= n) break;
    ++i;  // the comma
  }
  return out;
}

std::string trim(const std::string& s) {
  std::size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) --e;
  return s.substr(b, e - b);
}

// Column access for one data line, with errors naming line, column and field.
class RowReader {
 public:
  RowReader(const std::string& path, std::size_t line_no, const std::vector<Cell>& cells,
            const std::map<std::string, std::size_t>& index, std::size_t line_length)
      : path_(path), line_(line_no), cells_(cells), index_(index), length_(line_length) {}

  std::string where(const std::string& name) const {
    return fmt::format("line {}, column {} ({})", line_, column(name), name);
  }
  [[noreturn]] void fail(const std::string& name, const std::string& message) const {
    throw InputError(path_, where(name), message);
  }

  bool has(const std::string& name) const { return index_.count(name) > 0; }

  std::string text(const std::string& name) const {
    const auto it = index_.find(name);
    if (it == index_.end() || it->second >= cells_.size()) return "";
    return trim(cells_[it->second].text);
  }

  std::int64_t integer(const std::string& name, std::int64_t lo, std::int64_t hi) const {
    const std::string t = text(name);
    std::int64_t v = 0;
    const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
    if (t.empty() || r.ec != std::errc() || r.ptr != t.data() + t.size() || v < lo || v > hi)
      fail(name, fmt::format("bad value '{}'; expected an integer in [{}, {}]", t, lo, hi));
    return v;
  }

  double positive(const std::string& name) const {
    const std::string t = text(name);
    double v = 0;
    const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
    if (t.empty() || r.ec != std::errc() || r.ptr != t.data() + t.size() || !std::isfinite(v) || v <= 0)
      fail(name, fmt::format("bad value '{}'; expected a positive number", t));
    return v;
  }

 private:
  std::size_t column(const std::string& name) const {
    const auto it = index_.find(name);
    if (it != index_.end() && it->second < cells_.size()) return cells_[it->second].column;
    return length_ + 1;  // a missing trailing field: just past the end of the line
  }
  const std::string& path_;
  std::size_t line_;
  const std::vector<Cell>& cells_;
  const std::map<std::string, std::size_t>& index_;
  std::size_t length_;
};

const std::vector<std::string>& required_columns() {
  static const std::vector<std::string> cols = {
      "set", "num_gpus", "nodes", "gpus_used_per_node", "tp", "pp", "dp", "zero_stage", "precision",
      "global_batch", "micro_batch", "grad_accum_steps_derived", "hidden_size", "num_layers",
      "attention_heads", "seq_len", "activation_checkpointing_vtrain_cfg", "iteration_time_ms"};
  return cols;
}

VtrainRow parse_row(const RowReader& r, std::size_t line_no) {
  constexpr std::int64_t kBig = std::int64_t{1} << 40;
  VtrainRow row;
  row.line = line_no;
  row.set = r.text("set");
  if (row.set != "single" && row.set != "multi")
    r.fail("set", fmt::format("bad value '{}'; expected 'single' or 'multi'", row.set));
  row.source_row = r.text("source_row");
  row.num_gpus = r.integer("num_gpus", 1, 1 << 20);
  row.nodes = r.integer("nodes", 1, 1 << 17);
  row.gpus_per_node = r.integer("gpus_used_per_node", 1, 8);
  if (r.integer("tp", 1, 1 << 20) != 1) r.fail("tp", fmt::format("bad value '{}'; expected 1 (pure data parallelism)", r.text("tp")));
  if (r.integer("pp", 1, 1 << 20) != 1) r.fail("pp", fmt::format("bad value '{}'; expected 1 (pure data parallelism)", r.text("pp")));
  row.dp = r.integer("dp", 1, 1 << 20);
  if (row.dp != row.num_gpus)
    r.fail("dp", fmt::format("bad value '{}'; expected num_gpus = {} (tp = pp = 1)", row.dp, row.num_gpus));
  if (row.nodes * row.gpus_per_node != row.num_gpus)
    r.fail("gpus_used_per_node", fmt::format("bad value '{}'; expected nodes × gpus_used_per_node = num_gpus ({} × {} ≠ {})",
                                             row.gpus_per_node, row.nodes, row.gpus_per_node, row.num_gpus));
  const std::string zs = r.text("zero_stage");
  row.zero_stage = zs.empty() ? -1 : static_cast<int>(r.integer("zero_stage", 0, 3));
  row.precision = r.text("precision");
  if (row.precision.empty()) row.precision = "fp16";
  if (row.precision != "fp16" && row.precision != "bf16" && row.precision != "fp32")
    r.fail("precision", fmt::format("bad value '{}'; expected fp16, bf16, fp32 or blank (fp16)", row.precision));
  row.global_batch = r.integer("global_batch", 1, kBig);
  row.micro_batch = r.integer("micro_batch", 1, 1 << 20);
  row.grad_accum = r.integer("grad_accum_steps_derived", 1, 1 << 20);
  if (row.dp * row.micro_batch * row.grad_accum != row.global_batch)
    r.fail("grad_accum_steps_derived",
           fmt::format("bad value '{}'; expected global_batch / (dp × micro_batch) = {} / ({} × {})", row.grad_accum,
                       row.global_batch, row.dp, row.micro_batch));
  row.hidden = r.integer("hidden_size", 1, 1 << 20);
  row.layers = r.integer("num_layers", 1, 1 << 16);
  row.heads = r.integer("attention_heads", 1, 1 << 16);
  if (row.hidden % row.heads != 0)
    r.fail("attention_heads", fmt::format("bad value '{}'; expected a divisor of hidden_size {}", row.heads, row.hidden));
  row.seq_len = r.integer("seq_len", 1, 1 << 24);
  const std::string ck = r.text("activation_checkpointing_vtrain_cfg");
  if (ck == "true" || ck == "True" || ck == "1" || ck.empty()) row.checkpointing = true;
  else if (ck == "false" || ck == "False" || ck == "0") row.checkpointing = false;
  else r.fail("activation_checkpointing_vtrain_cfg", fmt::format("bad value '{}'; expected true, false or blank (true)", ck));
  row.measured_s = r.positive("iteration_time_ms") / 1e3;
  if (!(row.measured_s >= 1e-6 && row.measured_s <= 1e6))  // no training step is shorter or longer
    r.fail("iteration_time_ms", fmt::format("bad value '{}'; expected an iteration of 1e-3 ms to 1e9 ms", r.text("iteration_time_ms")));
  return row;
}

std::string strategy_of(const VtrainRow& row) {
  switch (row.zero_stage) {
    case 1: return "zero1";
    case 2: return "zero2";
    case 3: return "zero3";
    default: return "ddp";  // blank or 0
  }
}

std::string zero_label(const VtrainRow& row) {
  return row.zero_stage < 0 ? "-" : std::to_string(row.zero_stage);
}

}  // namespace

std::vector<VtrainRow> read_vtrain_csv(const std::string& path) {
  std::istringstream in(read_input_file(path, "a vTrain CSV (vtrain_dp.csv)"));
  std::map<std::string, std::size_t> index;
  std::vector<VtrainRow> rows;
  std::string line;
  std::size_t line_no = 0;
  bool have_header = false;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line_no == 1 && line.size() >= 3 && line.compare(0, 3, "\xEF\xBB\xBF") == 0) line.erase(0, 3);  // BOM
    if (trim(line).empty()) continue;
    const std::vector<Cell> cells = split_line(line, path, line_no);
    if (!have_header) {
      for (std::size_t k = 0; k < cells.size(); ++k) {
        const std::string name = trim(cells[k].text);
        if (!index.emplace(name, k).second)
          throw InputError(path, fmt::format("line {}, column {}", line_no, cells[k].column),
                           fmt::format("duplicate column '{}' in the header", name));
      }
      for (const std::string& c : required_columns())
        if (!index.count(c))
          throw InputError(path, fmt::format("line {}", line_no),
                           fmt::format("header lacks column '{}'; expected the columns of vtrain_dp.csv ({})", c,
                                       fmt::join(required_columns(), ",")));
      have_header = true;
      continue;
    }
    if (cells.size() != index.size())
      throw InputError(path, fmt::format("line {}", line_no),
                       fmt::format("{} fields; expected {} (one per header column)", cells.size(), index.size()));
    const RowReader r(path, line_no, cells, index, line.size());
    rows.push_back(parse_row(r, line_no));
  }
  if (in.bad()) throw InputError(path, "", "read error");
  if (!have_header) throw InputError(path, "", "empty file; expected a header line and data rows");
  if (rows.empty()) throw InputError(path, "", "no data rows after the header; expected at least one measurement");
  return rows;
}

nlohmann::json vtrain_scenario_json(const VtrainRow& row) {
  using nlohmann::json;
  const std::string strategy = strategy_of(row);
  json parallelism = {{"strategy", strategy}, {"dp", row.dp}};
  if (strategy == "ddp") {
    // One bucket holding every gradient: it is ready only when backward ends, so the single
    // AllReduce runs after the last micro-batch's backward, not overlapped (DeepSpeed stage 0
    // buffered_allreduce_fallback / Megatron local DDP allreduce_gradients()).
    parallelism["bucket_cap_mb"] = 1e6;
    parallelism["first_bucket_mb"] = 1e6;
  }
  return json{
      {"name", fmt::format("vtrain-line{}-{}-h{}-l{}-dp{}-mb{}-ga{}", row.line, row.set, row.hidden, row.layers,
                           row.dp, row.micro_batch, row.grad_accum)},
      {"model",
       {{"name", fmt::format("gpt-h{}-l{}", row.hidden, row.layers)},
        {"kind", "transformer"},
        {"hidden", row.hidden},
        {"layers", row.layers},
        {"heads", row.heads},
        {"kv_heads", row.heads},
        {"ffn", 4 * row.hidden},
        {"vocab", kVtrainVocab},
        {"gated_mlp", false},
        {"tied_embeddings", true},
        {"norm", "layernorm"},
        {"linear_bias", true},
        {"max_positions", row.seq_len}}},
      {"hardware", kVtrainHardware},
      {"cluster", {{"gpus_per_node", row.gpus_per_node}, {"nodes", row.nodes}}},
      {"parallelism", parallelism},
      {"batch", {{"micro_batch_size", row.micro_batch}, {"seq_len", row.seq_len}, {"grad_accum", row.grad_accum}}},
      {"precision", {{"param_dtype", row.precision}}},
      {"activations", {{"attention", "eager"}, {"recompute", row.checkpointing ? "full" : "none"}}},
      {"framework", {{"host_op_s", kVtrainHostOpS}}},
      {"optimizer", "adam"}};
}

nlohmann::json with_overrides(nlohmann::json doc, const std::vector<std::string>& overrides) {
  for (const auto& o : overrides) models::apply_scenario_override(doc, o, "--set " + o);
  return doc;
}

std::string overrides_label(const std::vector<std::string>& overrides) {
  std::string out;
  for (const auto& o : overrides) out += (out.empty() ? " (" : " ") + std::string("--set ") + o;
  return out.empty() ? out : out + ")";
}

models::Scenario vtrain_scenario(const VtrainRow& row, const std::string& csv_path,
                                 const std::vector<std::string>& overrides) {
  return models::parse_scenario(with_overrides(vtrain_scenario_json(row), overrides),
                                fmt::format("{} line {}{}", csv_path, row.line, overrides_label(overrides)));
}

ErrorStats error_stats(const std::vector<double>& rel_errors, const std::vector<std::size_t>& lines) {
  ErrorStats s;
  s.count = rel_errors.size();
  if (rel_errors.empty()) return s;
  std::vector<double> abs_err;
  double sum_abs = 0, sum = 0;
  for (std::size_t i = 0; i < rel_errors.size(); ++i) {
    const double a = std::fabs(rel_errors[i]);
    abs_err.push_back(a);
    sum_abs += a;
    sum += rel_errors[i];
    if (s.max_line == 0 || a > s.max_abs) {
      s.max_abs = a;
      s.max_line = lines.at(i);
    }
  }
  s.median_abs = median_of(abs_err);
  s.mean_abs = sum_abs / static_cast<double>(rel_errors.size());
  s.mean_signed = sum / static_cast<double>(rel_errors.size());
  return s;
}

ErrorStats error_stats(const std::vector<VtrainResult>& results) {
  std::vector<double> e;
  std::vector<std::size_t> lines;
  for (const VtrainResult& r : results) {
    e.push_back(r.rel_error);
    lines.push_back(r.row.line);
  }
  return error_stats(e, lines);
}

VtrainAccuracy vtrain_accuracy(const std::string& csv_path, unsigned threads, const std::vector<std::string>& overrides) {
  VtrainAccuracy a;
  a.source = csv_path;
  const std::vector<VtrainRow> rows = read_vtrain_csv(csv_path);
  // Parse every scenario first, in order, so the first bad row is the one reported.
  std::vector<models::Scenario> scenarios;
  scenarios.reserve(rows.size());
  for (const VtrainRow& row : rows) scenarios.push_back(vtrain_scenario(row, csv_path, overrides));

  a.rows.resize(rows.size());
  for_each_row(rows.size(), threads, [&](std::size_t i) {
    const models::Report rep = models::run(scenarios[i]);
    VtrainResult& r = a.rows[i];
    r.row = rows[i];
    r.predicted_s = rep.step_time_s;
    r.rel_error = (rep.step_time_s - rows[i].measured_s) / rows[i].measured_s;
    r.forward_s = rep.forward_time_s;
    r.backward_s = rep.backward_time_s;
    r.optimizer_s = rep.optimizer_time_s;
    r.exposed_comm_s = rep.exposed_comm_s;
    r.fits = rep.memory.fits;
  });

  std::vector<VtrainResult> single, multi;
  for (const VtrainResult& r : a.rows) (r.row.multi_node() ? multi : single).push_back(r);
  a.single_node = error_stats(single);
  a.multi_node = error_stats(multi);
  a.all = error_stats(a.rows);
  return a;
}

namespace {

const char* kAssumptions[] = {
    "model: GPT, ffn = 4*hidden, GeLU MLP (not gated), LayerNorm, biases, learned positions, tied embeddings, vocab 50304 (50257 padded to 128)",
    "hardware: a100-sxm (A100 SXM4 80 GB, NVSwitch, 8 x 200 Gb/s HDR per node), nominal profile (its GEMM curve), no calibration",
    "precision: fp16 where the row is blank; activations: eager attention (a*s^2 score traffic), recompute full (activation checkpointing)",
    "framework: 37 us of CPU per PyTorch op (chosen on the even rows); the CPU launches ahead of the GPU within a layer (Megatron-DeepSpeed eager mode)",
    "zero_stage blank or 0: ddp with one gradient bucket (one AllReduce after the last backward, no overlap); 1/2/3: zero1/zero2/zero3",
    "optimizer: adam; batch: micro_batch, grad_accum and dp from the row",
};

std::string stats_line(const char* label, const ErrorStats& s) {
  if (s.count == 0) return fmt::format("  {:<12} no rows\n", label);
  return fmt::format("  {:<12} {:>4} rows   median |err| {:5.1f} %   mean |err| {:5.1f} %   max |err| {:5.1f} % (line {})   mean signed {:+5.1f} %\n",
                     label, s.count, 100 * s.median_abs, 100 * s.mean_abs, 100 * s.max_abs, s.max_line,
                     100 * s.mean_signed);
}

nlohmann::ordered_json stats_json(const ErrorStats& s) {
  return {{"rows", s.count},
          {"median_abs_rel_error", s.median_abs},
          {"mean_abs_rel_error", s.mean_abs},
          {"max_abs_rel_error", s.max_abs},
          {"max_line", s.max_line},
          {"mean_rel_error", s.mean_signed}};
}

}  // namespace

std::string vtrain_accuracy_text(const VtrainAccuracy& a) {
  std::string out = fmt::format("vTrain pure-DP measurements (Megatron-DeepSpeed, A100): {}\n\n", a.source);
  out += fmt::format("{:>5} {:<6} {:>4} {:>5} {:>6} {:>6} {:>5} {:>3} {:>3} {:>4} {:>11} {:>12} {:>8} {:>9} {:>9} {:>11}\n", "line",
                     "set", "gpus", "nodes", "hidden", "layers", "seq", "mb", "ga", "zero", "measured_ms", "predicted_ms",
                     "error", "fwd_ms", "bwd_ms", "exp_comm_ms");
  for (const VtrainResult& r : a.rows) {
    const VtrainRow& w = r.row;
    out += fmt::format("{:>5} {:<6} {:>4} {:>5} {:>6} {:>6} {:>5} {:>3} {:>3} {:>4} {:>11.1f} {:>12.1f} {:>+7.1f}% {:>9.1f} {:>9.1f} {:>11.1f}{}\n",
                       w.line, w.set, w.num_gpus, w.nodes, w.hidden, w.layers, w.seq_len, w.micro_batch, w.grad_accum,
                       zero_label(w), 1e3 * w.measured_s, 1e3 * r.predicted_s, 100 * r.rel_error, 1e3 * r.forward_s,
                       1e3 * r.backward_s, 1e3 * r.exposed_comm_s, r.fits ? "" : "  (does not fit)");
  }
  out += "\n|relative error| = |predicted - measured| / measured\n";
  out += stats_line("single-node", a.single_node);
  out += stats_line("multi-node", a.multi_node);
  out += stats_line("all", a.all);
  out += "\nassumptions (docs/accuracy.md):\n";
  for (const char* s : kAssumptions) out += fmt::format("  - {}\n", s);
  return out;
}

nlohmann::ordered_json vtrain_accuracy_json(const VtrainAccuracy& a) {
  nlohmann::ordered_json j;
  j["schema"] = "stepsim.accuracy.vtrain/1";
  j["source"] = a.source;
  j["assumptions"] = nlohmann::ordered_json::array();
  for (const char* s : kAssumptions) j["assumptions"].push_back(s);
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const VtrainResult& r : a.rows) {
    const VtrainRow& w = r.row;
    rows.push_back({{"line", w.line},
                    {"set", w.set},
                    {"source_row", w.source_row},
                    {"num_gpus", w.num_gpus},
                    {"nodes", w.nodes},
                    {"hidden", w.hidden},
                    {"layers", w.layers},
                    {"heads", w.heads},
                    {"seq_len", w.seq_len},
                    {"micro_batch", w.micro_batch},
                    {"grad_accum", w.grad_accum},
                    {"zero_stage", w.zero_stage < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(w.zero_stage)},
                    {"precision", w.precision},
                    {"measured_s", w.measured_s},
                    {"predicted_s", r.predicted_s},
                    {"rel_error", r.rel_error},
                    {"forward_s", r.forward_s},
                    {"backward_s", r.backward_s},
                    {"optimizer_s", r.optimizer_s},
                    {"exposed_comm_s", r.exposed_comm_s},
                    {"fits", r.fits}});
  }
  j["rows"] = std::move(rows);
  j["summary"] = {{"single_node", stats_json(a.single_node)},
                  {"multi_node", stats_json(a.multi_node)},
                  {"all", stats_json(a.all)}};
  return j;
}

}  // namespace stepsim::validate
