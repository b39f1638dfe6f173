// SPDX-License-Identifier: Apache-2.0
// `stepsim batch`: the seeds' global-batch arithmetic (seed 000 §6.1, §7.2, §7.5). Which
// sections it prints depends on the flags given:
//   --hardware + --ranks                       the global batch N GPUs need (comm-bound threshold × N)
//   --hardware + --global-batch-tokens          the most GPUs that batch keeps compute-bound
//   --global-batch-* + --seq-len + --micro-batch-size + --ranks   gbs = mbs × grad_accum × dp
#include "tools/commands.hpp"

#include "hardware/hardware_profile_json.hpp"
#include "models/batch.hpp"
#include "sim/support/error.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <numeric>
#include <optional>

namespace stepsim::tools {

namespace {

using ordered = nlohmann::ordered_json;

struct BatchArgs : ClusterFlags {
  std::string global_batch_tokens;
  long long global_batch_samples = 0;
  long long seq_len = 0;
  long long micro_batch_size = 0;
  bool no_round = false;
  std::string format = "text";
};

int cmd_batch(const BatchArgs& a) {
  const double moe = moe_factor(a.moe_experts, a.moe_topk, a.moe_ep);
  if (a.seq_len < 0 || a.seq_len > (1LL << 30))
    throw InputError("--seq-len", "", fmt::format("expected an integer in [1, 2^30], got {}", a.seq_len));
  if (!a.global_batch_tokens.empty() && a.global_batch_samples != 0)
    throw InputError("--global-batch-samples", "", "give --global-batch-tokens or --global-batch-samples, not both");

  // The global batch, in tokens and (when --seq-len is known) in sequences.
  std::optional<double> tokens;
  std::optional<std::int64_t> samples;
  if (!a.global_batch_tokens.empty()) {
    tokens = models::parse_count(a.global_batch_tokens, "--global-batch-tokens");
    if (!(*tokens >= 1) || *tokens > 1e15)
      throw InputError("--global-batch-tokens", "", fmt::format("expected 1 to 1e15 tokens, got '{}'", a.global_batch_tokens));
    if (a.seq_len > 0) samples = models::samples_for_tokens(*tokens, a.seq_len, !a.no_round);
  } else if (a.global_batch_samples != 0) {
    if (a.global_batch_samples < 1 || a.global_batch_samples > (1LL << 40))
      throw InputError("--global-batch-samples", "", fmt::format("expected 1 to 2^40 sequences, got {}", a.global_batch_samples));
    if (a.seq_len < 1) throw InputError("--seq-len", "", "--global-batch-samples needs --seq-len (tokens per sequence)");
    samples = a.global_batch_samples;
    tokens = static_cast<double>(*samples * a.seq_len);
  }

  ordered j;
  j["schema"] = "stepsim.batch/1";
  std::string text;
  bool any = false;
  std::optional<hardware::HardwareProfile> hw;
  if (!a.hardware.empty()) hw = hardware::load_profile(a.hardware, "--hardware");
  if (hw) models::check_flag_ep(*hw, a.ranks, a.moe_ep);

  if (hw && a.ranks != 0) {
    any = true;
    const auto group = flag_group_shape(*hw, a.ranks, a.gpus_per_node, a.axes);
    const auto t = hardware::dp_threshold(*hw, group, moe);
    ordered m;
    m["hardware"] = hw->name;
    m["ranks"] = group.ranks;
    m["tokens_per_gpu"] = t.tokens_per_gpu;
    m["tokens_per_gpu_asymptotic"] = t.tokens_per_gpu_asymptotic;
    m["min_global_batch_tokens"] = t.min_global_batch_tokens;
    m["min_global_batch_tokens_asymptotic"] = t.min_global_batch_tokens_asymptotic;
    m["moe_factor"] = t.moe_factor;
    text += fmt::format("global batch {} x {} needs before pure DP is compute-bound (seed 000 §7.2)\n", group.ranks, hw->name);
    text += fmt::format("  at least        {:.4g} tokens ({:.0f} tokens/GPU; the seeds' C/W form: {:.4g} = {} x {:.0f})\n",
                        t.min_global_batch_tokens, t.tokens_per_gpu, t.min_global_batch_tokens_asymptotic, group.ranks,
                        t.tokens_per_gpu_asymptotic);
    if (tokens) {
      const bool bound = *tokens < t.min_global_batch_tokens;
      m["global_batch_tokens"] = *tokens;
      m["communication_bound"] = bound;
      text += fmt::format("  this batch      {:.4g} tokens = {:.0f} tokens/GPU: {}\n", *tokens, *tokens / group.ranks,
                          bound ? "communication-bound (the gradient AllReduce cannot hide behind backward)"
                                : "compute-bound");
    }
    j["min_global_batch"] = m;
  }

  if (hw && tokens) {
    any = true;
    const int g = a.gpus_per_node > 0 ? static_cast<int>(std::min<long long>(a.gpus_per_node, 1 << 20)) : 0;
    if (a.axes < 0 || a.axes > 3 || (a.axes != 0 && !hw->is_torus()))
      throw InputError("--axes", "", fmt::format("expected 1, 2 or 3 torus axes on a TPU profile, got {}", a.axes));
    auto c = models::max_ranks_for_batch(*hw, *tokens, g, a.axes, moe);
    // Under expert parallelism an EP group is ep of the DP ranks: a multiple of ep (and of whole
    // nodes beyond one), found by a hostile trial answering 40 GPUs for ep 256.
    if (a.moe_ep > 1 && c.ranks % a.moe_ep != 0) {
      const std::int64_t node = g > 0 ? g : hw->gpus_per_node;
      const std::int64_t ep = a.moe_ep;
      const std::int64_t step = ep > node ? std::lcm(ep, node) : ep;
      c.ranks = c.ranks / step * step;
      if (c.ranks > 0) {
        const hardware::GroupShape shape{static_cast<int>(c.ranks), static_cast<int>(std::min<std::int64_t>(node, c.ranks)),
                                         a.axes};
        c.tokens_per_gpu_at_ranks = *tokens / static_cast<double>(c.ranks);
        c.threshold_at_ranks = hardware::dp_threshold(*hw, shape, moe).tokens_per_gpu;
      } else {
        c.tokens_per_gpu_at_ranks = c.threshold_at_ranks = 0;
      }
    }
    ordered m;
    m["hardware"] = hw->name;
    m["global_batch_tokens"] = *tokens;
    m["tokens_per_gpu_asymptotic"] = c.tokens_per_gpu_asymptotic;
    m["ranks_asymptotic"] = c.ranks_asymptotic;
    m["moe_factor"] = moe;
    if (a.moe_ep > 1) m["ep"] = a.moe_ep;
    m["ranks"] = c.ranks;
    m["tokens_per_gpu_at_ranks"] = c.tokens_per_gpu_at_ranks;
    m["threshold_at_ranks"] = c.threshold_at_ranks;
    m["limited_by_pod"] = c.limited_by_pod;
    text += fmt::format("most {} devices a {:.4g}-token batch keeps compute-bound under pure DP (seed 000 §7.5)\n", hw->name, *tokens);
    text += fmt::format("  seeds' form     {:.0f} = {:.4g} / {:.0f} tokens per GPU (C/W)\n", c.ranks_asymptotic, *tokens,
                        c.tokens_per_gpu_asymptotic);
    if (c.ranks > 0)
      text += fmt::format("  exact ring      {} ({:.0f} tokens/GPU vs a threshold of {:.0f} there){}{}\n", c.ranks,
                          c.tokens_per_gpu_at_ranks, c.threshold_at_ranks,
                          c.limited_by_pod ? "; capped at one pod: DP across pods (DCN) is not modelled" : "",
                          a.moe_ep > 1 ? fmt::format("; a multiple of ep {}", a.moe_ep) : std::string());
    else
      text += fmt::format("  exact ring      none: the batch keeps fewer GPUs compute-bound than one EP group of {}\n",
                          a.moe_ep);
    text += "  beyond this, split the model another way (tensor, pipeline parallelism): they do not divide the batch\n";
    j["max_ranks"] = m;
  }

  if (samples && a.micro_batch_size != 0 && a.ranks != 0) {
    any = true;
    const auto b = models::split_global_batch(*samples, a.micro_batch_size, a.ranks);
    ordered m;
    m["global_batch_samples"] = b.global_batch_samples;
    m["seq_len"] = a.seq_len;
    m["global_batch_tokens"] = static_cast<double>(b.global_batch_samples * a.seq_len);
    m["micro_batch_size"] = b.micro_batch_size;
    m["dp"] = b.dp;
    m["grad_accum_exact"] = b.grad_accum_exact;
    m["grad_accum"] = b.grad_accum;
    m["whole"] = b.whole;
    m["too_many_gpus"] = b.too_many_gpus;
    m["global_batch_samples_used"] = b.global_batch_samples_used;
    m["max_dp"] = b.max_dp;
    text += "gbs = micro_batch_size x grad_accum x dp (seed 000 §6.1)\n";
    if (!a.global_batch_tokens.empty())
      text += fmt::format("  gbs             {} sequences of {} tokens ({:.4g} tokens asked; {})\n", b.global_batch_samples,
                          a.seq_len, *tokens, a.no_round ? "nearest integer" : "nearest power of two");
    else
      text += fmt::format("  gbs             {} sequences of {} tokens\n", b.global_batch_samples, a.seq_len);
    text += fmt::format("  grad_accum      {} / ({} x {}) = {:g}\n", b.global_batch_samples, b.micro_batch_size, b.dp,
                        b.grad_accum_exact);
    if (b.too_many_gpus)
      text += fmt::format("  too many GPUs: grad_accum < 1. Use at most {} GPUs at this mbs, a larger gbs, or a smaller "
                          "micro_batch_size (trading per-GPU efficiency for throughput)\n", b.max_dp);
    else if (!b.whole)
      text += fmt::format("  not a whole number: grad_accum {} gives gbs {} sequences (or pick dp dividing {})\n",
                          b.grad_accum, b.global_batch_samples_used, b.max_dp);
    else
      text += fmt::format("  use grad_accum {} (at {} GPUs this gbs needs no accumulation)\n", b.grad_accum, b.max_dp);
    j["split"] = m;
  }

  if (!any)
    throw InputError("stepsim batch", "",
                     "expected one of: --hardware HW --ranks N (batch N GPUs need); --hardware HW "
                     "--global-batch-tokens T (most GPUs for a batch); --global-batch-tokens T|--global-batch-samples S "
                     "--seq-len L --micro-batch-size M --ranks N (grad_accum)");
  print(a.format == "json" ? j.dump(2) + "\n" : text);
  return 0;
}

}  // namespace

void add_batch_command(CLI::App& app, Action& action) {
  auto a = std::make_shared<BatchArgs>();
  auto* batch = app.add_subcommand("batch", "global batch arithmetic: batch N GPUs need, most GPUs a batch can use, grad_accum");
  add_cluster_flags(*batch, *a, false);
  batch->add_option("--global-batch-tokens", a->global_batch_tokens, "global batch in tokens: 16384, 4M (4e6), 8Mi");
  batch->add_option("--global-batch-samples", a->global_batch_samples, "global batch in sequences (gbs)")
      ->check(given_positive());
  batch->add_option("--seq-len", a->seq_len, "tokens per sequence")->check(given_positive());
  batch->add_option("--micro-batch-size", a->micro_batch_size, "sequences per GPU per micro-batch (mbs)")
      ->check(given_positive());
  batch->add_flag("--no-round", a->no_round, "tokens → sequences: nearest integer instead of the nearest power of two");
  batch->add_option("--format", a->format, "output format")->check(CLI::IsMember({"text", "json"}));
  batch->callback([a, &action] { action = [a] { return cmd_batch(*a); }; });
}

}  // namespace stepsim::tools
