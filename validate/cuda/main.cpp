// SPDX-License-Identifier: Apache-2.0
// stepsim-validate: runs the MLP step stepsim simulates, and the GEMM and collective
// microbenchmarks that calibrate it, on the GPUs of this machine.
//
//   stepsim-validate mlp-step --layers L --hidden D --ffn F --tokens B --bucket-mb X
//       [--first-bucket-mb 1] --grad-accum G --iters N --warmup W [--gpus N]
//       [--gradient-as-bucket-view] [--plan-only] --out MEASURED.json
//       (--plan-only: the bucket plan as JSON, no GPU; written to --out when given, else stdout)
//   stepsim-validate gemm-sweep [--hidden D,...] [--ffn F,...] [--tokens B,...] [--iters N]
//       [--warmup W] [--out FILE.json]
//   stepsim-validate collective-sweep [--ops all_reduce,reduce_scatter,all_gather]
//       [--min-bytes 8] [--max-bytes 1G] [--step-factor 2] [--iters 20] [--warmup 5]
//       [--dtype float|bfloat16] [--gpus N] [--out FILE.log]
//
// Exit status: 0 ok; 2 bad arguments or no CUDA device ("no CUDA device found: <CUDA error>");
// 1 a failed CUDA / NCCL / cuBLAS call (host, rank, file:line, call and library error text).
// Arguments, output paths included, are checked before any device is touched. Standalone: standard library, CUDA
// runtime, NCCL and cuBLAS only, so it builds on a bare GPU machine (tools/validate-on-gpu).
#include "check.cuh"
#include "common.cuh"
#include "mlp_step.hpp"
#include "options.hpp"

#include <cstdio>
#include <string>
#include <vector>

namespace {

const char* kUsage =
    "usage: stepsim-validate mlp-step|gemm-sweep|collective-sweep [options]\n"
    "  mlp-step --layers L --hidden D --ffn F --tokens B --bucket-mb X [--first-bucket-mb 1]\n"
    "           --grad-accum G --iters N --warmup W [--gpus N] [--gradient-as-bucket-view]\n"
    "           [--plan-only] --out MEASURED.json\n"
    "  gemm-sweep [--hidden D,...] [--ffn F,...] [--tokens B,...] [--iters N] [--warmup W] [--out FILE.json]\n"
    "  collective-sweep [--ops all_reduce,reduce_scatter,all_gather] [--min-bytes 8] [--max-bytes 1G]\n"
    "           [--step-factor 2] [--iters 20] [--warmup 5] [--dtype float|bfloat16] [--gpus N] [--out FILE.log]\n";

int run(const std::string& command, const std::vector<std::string>& args) {
  using namespace stepsim::validate;
  if (command == "mlp-step") {
    const MlpStepOptions o = parse_mlp_step(args);
    const BucketPlan plan = make_bucket_plan(o);
    if (o.plan_only) {  // no GPU: the plan to --out when given, else to stdout
      if (o.out.empty()) {
        std::fputs(bucket_plan_json(o, plan).c_str(), stdout);
      } else {
        write_file_atomic(o.out, bucket_plan_json(o, plan));
        std::printf("mlp-step: bucket plan, %zu buckets -> %s\n", plan.buckets.size(), o.out.c_str());
      }
      return 0;
    }
    const int world = probe_devices(o.gpus);
    write_file_atomic(o.out, run_mlp_step(o, world));
    std::printf("mlp-step: %d GPU(s), %zu buckets, %lld recorded steps -> %s\n", world, plan.buckets.size(),
                static_cast<long long>(o.iters), o.out.c_str());
    return 0;
  }
  if (command == "gemm-sweep") {
    const GemmSweepOptions o = parse_gemm_sweep(args);
    probe_devices(1);
    std::string table;
    const std::string json = run_gemm_sweep(o, table);
    std::fputs(table.c_str(), stdout);
    if (!o.out.empty()) write_file_atomic(o.out, json);
    return 0;
  }
  if (command == "collective-sweep") {
    const CollectiveSweepOptions o = parse_collective_sweep(args);
    const int world = probe_devices(o.gpus);
    const std::string text = run_collective_sweep(o, world);
    std::fputs(text.c_str(), stdout);
    if (!o.out.empty()) write_file_atomic(o.out, text);
    return 0;
  }
  if (command == "--help" || command == "-h" || command == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  throw UsageError("unknown subcommand '" + command + "'; expected mlp-step, gemm-sweep or collective-sweep");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace stepsim::validate;
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::vector<std::string> args(argv + 2, argv + argc);
  try {
    return run(argv[1], args);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const NoDeviceError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const DeviceError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
