// SPDX-License-Identifier: Apache-2.0
// PyTorch profiler (Kineto) traces (issue 18): every trace of ../shared/data/kineto read and
// counted against figures computed independently from the JSON with Python (the one-liners are
// in the comments), kernel names classified, and every malformed-input rule refused.
#include "tests/support/catch.hpp"
#include "tests/support/input_error.hpp"
#include "tests/support/shared_data.hpp"

#include "models/scenario.hpp"
#include "sim/support/error.hpp"
#include "hardware/calibration_json.hpp"
#include "hardware/hardware_profile_json.hpp"
#include "validate/compare.hpp"
#include "validate/fit.hpp"
#include "validate/kineto.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace stepsim::validate {
namespace {

std::string trace(const std::string& name) { return test::shared_data("kineto/" + name); }

/// Expected figures, computed with Python 3 from each file:
///   d = json.load(gzip.open(f)); ev = d['traceEvents']
///   steps = sorted((e['ts'], e['dur'], e['name']) for e in ev if e.get('ph') == 'X' and
///                  e.get('cat') in ('user_annotation', 'cpu_op') and e['name'].startswith('ProfilerStep#'))
///   gpu = [e for e in ev if e.get('ph') == 'X' and e.get('cat') in ('kernel', 'gpu_memcpy', 'gpu_memset')]
///   nccl = Counter(re.match(r'nccl(?:Dev)?Kernel_([A-Za-z]+)', e['name']).group(1)
///                  for e in gpu if e['name'].startswith('nccl'))
///   sized = sum('In msg nelems' in e['args'] for e in gpu if e['name'].startswith('nccl'))
///   rt = {e['args']['correlation']: e['ts'] for e in ev if e.get('ph') == 'X' and
///         e.get('cat') in ('cuda_runtime', 'cuda_driver') and 'correlation' in e.get('args', {})}
///   per-step launched = Counter(name of the step with ts <= rt[c] <= ts + dur, for each GPU
///                       event whose args.correlation c is in rt)
struct Expected {
  const char* file;
  std::vector<std::int64_t> steps;
  std::size_t gpu_events, kernels;
  std::map<std::string, std::int64_t> nccl;
  std::int64_t sized;
  std::int64_t launched_per_step;  ///< the same in every step of these traces
  std::int64_t rank, world_size;
  const char* device;
};

const std::vector<Expected>& expected() {
  static const std::vector<Expected> rows = {
      {"amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz", {1, 2}, 16, 14, {}, 0, -1, -1, -1, "AMD Radeon Graphics"},
      {"df_index_resolver__df_index_resolver.json.gz", {2, 3, 4, 5, 6}, 22290, 19370, {{"AllReduce", 2020}}, 0, 4458, 1, 2,
       "Tesla V100-SXM2-32GB"},
      {"nccl_parser_config__nccl_data.json.gz", {4, 5, 6}, 3774, 2700, {{"AllReduce", 15}, {"Broadcast", 6}}, 21, 1258, 0, 2,
       "NVIDIA A100-PG509-200"},
      {"negative_queue_length_values_check__rank0.json.gz", {550, 551, 552, 553, 554}, 7747, 6080, {{"SendRecv", 80}}, 0,
       1375, 0, 16, "NVIDIA A100-SXM4-80GB"},
      {"ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", {101, 102, 103, 104, 105}, 6095, 4350, {}, 0,
       1219, 0, 1, "Tesla V100-SXM2-32GB"},
      {"trace_diff__control__control.json.gz", {1009, 1010, 1011, 1012, 1013, 1014}, 9450, 8568,
       {{"AllReduce", 18}, {"SendRecv", 42}}, 0, 1575, 3, 8, "NVIDIA A100-PG509-200"},
      {"trace_diff__test__test.json.gz", {1009, 1010, 1011, 1012, 1013, 1014}, 15632, 9876,
       {{"AllReduce", 21}, {"SendRecv", 43}}, 0, 2503, 1, 2, "Tesla V100-SXM2-16GB"},
  };
  return rows;
}

TEST_CASE("kineto: every shared trace is read with its steps, GPU events and NCCL calls", "[kineto]") {
  for (const Expected& e : expected()) {
    const std::string path = trace(e.file);
    if (!test::require_data(path)) return;
    INFO(e.file);
    const KinetoTrace t = read_kineto_trace(path);
    CHECK(t.gzipped);
    CHECK(t.sha256.size() == 64);
    std::vector<std::int64_t> steps;
    for (const KinetoStep& s : t.steps) steps.push_back(s.number);
    CHECK(steps == e.steps);
    CHECK(t.kernels.size() == e.gpu_events);
    std::size_t kernels = 0;
    std::map<std::string, std::int64_t> nccl;
    std::int64_t sized = 0;
    std::map<std::int32_t, std::int64_t> launched;
    for (const KinetoKernel& k : t.kernels) {
      kernels += k.cls != KernelClass::Memcpy && k.cls != KernelClass::Memset;
      if (k.cls == KernelClass::Nccl) {
        const KinetoCollective& c = t.collectives.at(static_cast<std::size_t>(k.collective));
        ++nccl[c.op];
        sized += c.args_from_kernel && c.in_nelems >= 0;
      }
      if (k.launched && k.step >= 0) ++launched[k.step];
    }
    CHECK(kernels == e.kernels);
    CHECK(nccl == e.nccl);
    CHECK(sized == e.sized);
    if (e.launched_per_step >= 0) {
      REQUIRE(launched.size() == e.steps.size());
      for (const auto& [step, n] : launched) CHECK(n == e.launched_per_step);
    }
    CHECK(t.rank == e.rank);
    CHECK(t.world_size == e.world_size);
    REQUIRE_FALSE(t.devices.empty());
    bool found = false;
    for (const KinetoDevice& d : t.devices) found = found || (d.id == t.device && d.name == e.device);
    CHECK(found);
    // Every GPU event is classified; only names no rule knows are 'unknown', and those are listed.
    std::int64_t unknown = 0;
    for (const KinetoKernel& k : t.kernels) unknown += k.cls == KernelClass::Unknown;
    std::int64_t listed = 0;
    for (const auto& [name, n] : t.unknown_kernels) listed += n;
    CHECK(unknown == listed);
  }
}

TEST_CASE("kineto: AMD trace without distributedInfo, launched only in its first step", "[kineto]") {
  // The MI250 trace's 16 GPU events (14 kernels, 2 memcpy) are all launched inside
  // ProfilerStep#1 (Python above); ProfilerStep#2 has none.
  const std::string path = trace("amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz");
  if (!test::require_data(path)) return;
  const KinetoTrace t = read_kineto_trace(path);
  const auto s = summarize_steps(t);
  REQUIRE(s.size() == 2);
  std::int64_t first = 0, second = 0;
  for (std::int64_t n : s[0].class_count) first += n;
  for (std::int64_t n : s[1].class_count) second += n;
  CHECK(first == 16);
  CHECK(second == 0);
  CHECK(s[1].gpu_span_s == 0);
}

TEST_CASE("kineto: NCCL sizes from the kernel's args, and per-step NCCL time", "[kineto]") {
  const std::string path = trace("nccl_parser_config__nccl_data.json.gz");
  if (!test::require_data(path)) return;
  const KinetoTrace t = read_kineto_trace(path);
  CHECK(t.nccl_version == "2.17.1");
  REQUIRE(t.process_groups.size() == 1);
  CHECK(t.process_groups[0].ranks == std::vector<std::int64_t>{0, 1});
  // The first AllReduce kernel of the file: In msg nelems 6637568, Group size 2, dtype Float,
  // RING / LL from its name ncclKernel_AllReduce_RING_LL_Sum_float.
  bool seen = false;
  for (const KinetoCollective& c : t.collectives)
    if (c.in_nelems == 6637568) {
      seen = true;
      CHECK(c.op == "AllReduce");
      CHECK(c.name == "allreduce");
      CHECK(c.group_size == 2);
      CHECK(c.dtype == "Float");
      CHECK(c.algorithm == "RING");
      CHECK(c.protocol == "LL");
    }
  CHECK(seen);
  // NCCL kernel time per step, launched in the step (Python: Σ e['dur'] of nccl* kernels whose
  // launch falls in the step): 11989.021, 12300.029, 22587.443 µs; median 12300.029 µs.
  const auto steps = summarize_steps(t);
  REQUIRE(steps.size() == 3);
  const auto nccl = static_cast<std::size_t>(KernelClass::Nccl);
  CHECK(steps[0].class_s[nccl] == Approx(11989.021e-6).epsilon(1e-9));
  CHECK(steps[1].class_s[nccl] == Approx(12300.029e-6).epsilon(1e-9));
  CHECK(steps[2].class_s[nccl] == Approx(22587.443e-6).epsilon(1e-9));
  // The measured timeline's communication tasks: the same per-step sums.
  const MeasuredTimeline m = measured_timeline_from_traces({t});
  REQUIRE(m.iterations.size() == 3);
  double comm = 0;
  for (const MeasuredTask& task : m.iterations[1].ranks[0].tasks)
    if (task.phase == MeasuredPhase::Communication) comm += task.end_s - task.start_s;
  CHECK(comm == Approx(12300.029e-6).epsilon(1e-9));
}

TEST_CASE("kineto: compare a scenario with a trace per phase and kernel class", "[kineto]") {
  // The V100 trace of a torchvision ResNet test job (one rank): compared with ResNet-50 at 32
  // images. What the rows must satisfy whatever the model: the measured NCCL row is 0 (no
  // NCCL kernel), the phases come from the same kernels as the classes, and the DP degree that
  // differs from the trace's world size is warned about.
  const std::string path = trace("ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz");
  if (!test::require_data(path)) return;
  const models::Scenario s = models::load_scenario(std::string(STEPSIM_SOURCE_DIR) + "/configs/examples/resnet50-ddp-16xv100.json", {});
  const Comparison c = compare(s, measured_timeline_from_traces(read_kineto_traces({path})));
  REQUIRE(c.kernel_classes.size() == 5);
  CHECK(c.kernel_classes[3].measured_s == 0);
  CHECK(c.kernel_classes[0].measured_s > 0.03);  // cuDNN convolutions and GEMMs: ~60 ms per step
  CHECK(c.tasks.empty());
  CHECK(c.iterations == 5);
  REQUIRE(c.warnings.size() == 1);
  CHECK(c.warnings[0].find("parallelism.dp: scenario 16, profiled job 1") != std::string::npos);
  const std::string text = comparison_text(c, false);
  CHECK(text.find("matmul (gemm, conv)") != std::string::npos);
}

TEST_CASE("kineto: kernel names classified", "[kineto]") {
  const std::vector<std::pair<const char*, KernelClass>> cases = {
      {"ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", KernelClass::Nccl},
      {"ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", KernelClass::Nccl},
      {"void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4>(cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4::Params)",
       KernelClass::Gemm},
      {"volta_sgemm_128x64_nn", KernelClass::Gemm},
      {"nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT", KernelClass::Gemm},
      {"Cijk_Alik_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1", KernelClass::Gemm},
      {"void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>, true>(Flash_fwd_params)",
       KernelClass::Attention},
      {"fmha_cutlassF_bf16_aligned_64x128_rf_sm80", KernelClass::Attention},
      {"void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 32, true, 1>(float, float)", KernelClass::Norm},
      {"volta_scudnn_128x64_relu_interior_nn_v1", KernelClass::Conv},
      {"void cudnn::detail::implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, true, false, true>(int, int)",
       KernelClass::Conv},
      {"sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw", KernelClass::Conv},
      {"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<2>, "
       "at::native::(anonymous namespace)::BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::plus<float>, float>(int)",
       KernelClass::Optimizer},
      // "lambda" in a pointwise kernel's template arguments is not LAMB
      {"void at::native::vectorized_elementwise_kernel<4, at::native::neg_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::"
       "operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int)",
       KernelClass::Elementwise},
      {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
       "at::native::sum_functor<float, float, float> > > >(at::native::ReduceOp<float>)",
       KernelClass::Reduction},
      {"void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float>(float*, float const*, int)",
       KernelClass::Reduction},
      {"triton_poi_fused_add_mul_0", KernelClass::Elementwise},
      {"triton_red_fused__to_copy_mean_pow_1", KernelClass::Reduction},
      {"triton_tem_fused_mm_2", KernelClass::Gemm},
      {"void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel<float, float>(long, long)", KernelClass::Norm},
      {"some_custom_kernel_v2", KernelClass::Unknown},
      // "gemm" inside a library's name is not a GEMM
      {"void fbgemm_gpu::permute_2D_lengths_kernel<int>(int, int, int const*, int*)", KernelClass::Elementwise},
      {"sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_stage3_warpsize2x4x1_tensor16x8x16_kernel",
       KernelClass::Gemm},
  };
  for (const auto& [name, cls] : cases) {
    INFO(name);
    CHECK(kernel_class_name(classify_kernel(name)) == kernel_class_name(cls));
  }
}

TEST_CASE("kineto: NCCL kernel names read apart", "[kineto]") {
  auto p = parse_nccl_kernel_name("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)");
  CHECK(p.op == "AllReduce");
  CHECK(p.algorithm == "RING");
  CHECK(p.protocol == "LL");
  p = parse_nccl_kernel_name("ncclDevKernel_ReduceScatter_Sum_bf16_NVLS_TREE_SIMPLE(ncclDevKernelArgsStorage<4096ul>)");
  CHECK(p.op == "ReduceScatter");
  CHECK(p.algorithm == "NVLS_TREE");
  CHECK(p.protocol == "SIMPLE");
  p = parse_nccl_kernel_name("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)");
  CHECK(p.op == "SendRecv");
  p = parse_nccl_kernel_name("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)");
  CHECK(p.op == "Generic");
  CHECK(p.algorithm.empty());
  CHECK(parse_nccl_kernel_name("volta_sgemm_128x64_nn").op.empty());
}

// ---- malformed input: one line each, naming the file, the JSON path and the expectation ----

struct TempDir {
  std::filesystem::path dir;
  TempDir() {
    dir = std::filesystem::temp_directory_path() / ("stepsim_kineto_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::string write(const std::string& name, const std::string& bytes) const {
    const auto p = dir / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p.string();
  }
};

std::string refusal(const std::string& path) {
  return test::input_error_of([&] { read_kineto_trace(path); });
}

/// A well-formed minimal trace: one step, one kernel launched inside it.
std::string minimal(const std::string& kernel_extra = "", const std::string& top_extra = "") {
  return R"({"schemaVersion": 1, )" + top_extra + R"("traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 1, "tid": 1, "ts": 1000, "dur": 500},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1100, "dur": 5, "args": {"correlation": 9}},
    {"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": 1200.0005, "dur": 10.25,
     "args": {"device": 0, "stream": 7, "correlation": 9)" + kernel_extra + R"(}}
  ]})";
}

TEST_CASE("kineto: a minimal trace, times kept to the nanosecond", "[kineto]") {
  const TempDir d;
  const KinetoTrace t = read_kineto_trace(d.write("ok.json", minimal()));
  REQUIRE(t.kernels.size() == 1);
  CHECK(t.origin_us == 1000);
  CHECK(t.kernels[0].start_ns == 200001);  // 1200.0005 µs - 1000 µs, rounded half up to 1 ns
  CHECK(t.kernels[0].dur_ns == 10250);
  CHECK(t.kernels[0].step == 0);
  CHECK(t.kernels[0].launched);
  CHECK(t.kernels[0].phase == MeasuredPhase::Forward);
  CHECK_FALSE(t.gzipped);
  CHECK(looks_like_kineto_trace(d.write("ok2.json", minimal())));
  CHECK_FALSE(looks_like_kineto_trace(d.write("m.json", R"({"schema": "stepsim.measured/1"})")));
}

TEST_CASE("kineto: malformed traces are refused with one line", "[kineto][errors]") {
  const TempDir d;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not json at all", "is not valid JSON at byte"},
      {R"({"traceEvents": [ {"ph": "X", )", "is not valid JSON at byte"},
      {R"([{"ph": "X"}])", "a JSON object with traceEvents, got array"},
      {R"({"schemaVersion": 1})", "/traceEvents: required field is missing"},
      {R"({"schema": "stepsim.measured/1", "iterations": []})", "a stepsim.measured/1 timeline?"},
      {R"({"traceEvents": {"a": 1}})", "/traceEvents: expected an array of events, got object"},
      {R"({"traceEvents": [1]})", "/traceEvents/0: expected an event object, got number"},
      {R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "dur": 1}]})", "/traceEvents/0/ts: required field is missing"},
      {R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": "1", "dur": 1}]})", "/traceEvents/0/ts: expected a number"},
      {R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": -2}]})", "/traceEvents/0/dur: expected a duration ≥ 0"},
      {R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1}]})", "/traceEvents/0/dur: required field is missing"},
      {R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": [1]}]})", "/traceEvents/0/args"},
      {R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": {"correlation": "x"}}]})",
       "/traceEvents/0/args/correlation"},
      {R"({"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#x", "ts": 1, "dur": 1}]})",
       "/traceEvents/0/name: expected ProfilerStep#N with N an integer"},
      {R"({"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "ts": 1, "dur": 1},
                           {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "ts": 5, "dur": 1}]})",
       "/traceEvents/1/name: expected each ProfilerStep number once"},
      {R"({"deviceProperties": {"id": 0}, "traceEvents": []})", "/deviceProperties: expected an array of devices"},
      {R"({"deviceProperties": [3], "traceEvents": []})", "/deviceProperties/0: expected a device object"},
      {R"({"distributedInfo": [], "traceEvents": []})", "/distributedInfo: expected an object"},
      {R"({"distributedInfo": {"rank": 4, "world_size": 2}, "traceEvents": []})", "/distributedInfo/rank: expected a rank below"},
      {R"({"distributedInfo": {"rank": "one"}, "traceEvents": []})", "/distributedInfo/rank"},
      {"{\"traceEvents\": [" + std::string(70, '[') + std::string(70, ']') + "]}", "nests JSON deeper than 64 levels"},
      {R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "dur": 2}]})",
       "/traceEvents/0: duplicate key 'dur' in one JSON object"},
      {R"({"traceEvents": [{"ph": 5, "cat": "kernel", "name": "k", "ts": 1, "dur": 1}]})", "/traceEvents/0/ph: expected the event's phase"},
      {R"({"traceEvents": [{"ph": "X", "cat": 1, "name": "k", "ts": 1, "dur": 1}]})", "/traceEvents/0/cat: expected the event's category"},
      {R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": 5, "ts": 1, "dur": 1}]})", "/traceEvents/0/name: expected the event's name as a string"},
      {R"({"traceEvents": [{"ph": "X", "cat": "cuda_runtime", "name": ["cudaDeviceSynchronize"], "ts": 1, "dur": 1}]})",
       "/traceEvents/0/name: expected the event's name as a string"},
      {R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 8.99e15}]})", "/traceEvents/0/dur: expected a duration under 24 h"},
      {R"({"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 1000, "dur": 1000},
                           {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "ts": 1200, "dur": 10}]})",
       "/traceEvents/1/ts: expected ProfilerStep annotations one after the other"},
      {"{\"traceEvents\": [], \"pad\": " + std::string((16 << 20) + 10, '1') + "}", "of whitespace or one number in a row"},
      {"{\"traceEvents\": [], \"pad\": \"" + std::string((16 << 20) + 10, 'a') + "\"}", "holds a JSON string longer than 16 MiB"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto& [text, expect] = cases[i];
    INFO(text.substr(0, 120));
    const std::string path = d.write("bad" + std::to_string(i) + ".json", text);
    const std::string msg = refusal(path);
    CHECK(msg.find(expect) != std::string::npos);
    CHECK(msg.find(path) == 0);
    CHECK(msg.find('\n') == std::string::npos);
  }
  CHECK(refusal((d.dir / "missing.json").string()).find("no such file") != std::string::npos);
  CHECK(refusal(d.dir.string()).find("is a directory") != std::string::npos);
}

TEST_CASE("kineto: a corrupt or truncated gzip trace is refused", "[kineto][errors]") {
  const std::string path = trace("nccl_parser_config__nccl_data.json.gz");
  if (!test::require_data(path)) return;
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const TempDir d;
  const std::string cut = d.write("cut.json.gz", bytes.substr(0, bytes.size() / 2));
  CHECK(refusal(cut).find("gzip data ends early") != std::string::npos);
  std::string bad = bytes;
  for (std::size_t i = 100; i < 400; ++i) bad[i] = static_cast<char>(bad[i] ^ 0x5a);
  const std::string flipped = refusal(d.write("flipped.json.gz", bad));
  CHECK((flipped.find("is not valid gzip data") != std::string::npos || flipped.find("is not valid JSON") != std::string::npos));
}

TEST_CASE("kineto: several traces: one per rank, one world size, common steps", "[kineto][errors]") {
  const TempDir d;
  const std::string a = d.write("a.json", minimal("", R"("distributedInfo": {"rank": 0, "world_size": 2}, )"));
  const std::string b = d.write("b.json", minimal("", R"("traceName": "b", "distributedInfo": {"rank": 0, "world_size": 2}, )"));
  const std::string c = d.write("c.json", minimal("", R"("distributedInfo": {"rank": 1, "world_size": 4}, )"));
  auto message = [](const std::vector<std::string>& paths) {
    return test::input_error_of([&] { measured_timeline_from_traces(read_kineto_traces(paths)); });
  };
  CHECK(message({a, b}).find("expected one trace per rank of one job, got rank 0 again") != std::string::npos);
  CHECK(message({a, c}).find("expected the ranks of one job") != std::string::npos);
  CHECK(message({a, a}).find("is the same trace as") != std::string::npos);
  const std::string e = d.write("e.json", R"({"distributedInfo": {"rank": 1, "world_size": 2}, "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#8", "pid": 1, "tid": 1, "ts": 1000, "dur": 500}]})");
  CHECK(message({a, e}).find("share no ProfilerStep number") != std::string::npos);
  const std::string f = d.write("f.json", R"({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 1, "tid": 1, "ts": 1000, "dur": 500}]})");
  CHECK(message({f}).find("no ProfilerStep has GPU events on every trace") != std::string::npos);
  std::filesystem::create_directories(d.dir / "empty");
  CHECK(message({(d.dir / "empty").string()}).find("folder without *.json") != std::string::npos);
  // Two ranks of the same job, in a folder: ordered by rank.
  std::filesystem::create_directories(d.dir / "job");
  d.write("job/r1.json", minimal("", R"("distributedInfo": {"rank": 1, "world_size": 2}, )"));
  d.write("job/r0.json", minimal("", R"("distributedInfo": {"rank": 0, "world_size": 2}, )"));
  const auto traces = read_kineto_traces({(d.dir / "job").string()});
  REQUIRE(traces.size() == 2);
  CHECK(traces[0].rank == 0);
  CHECK(measured_timeline_from_traces(traces).iterations.at(0).ranks.size() == 2);
}

}  // namespace
}  // namespace stepsim::validate

namespace stepsim::validate {
namespace {

TEST_CASE("kineto: NCCL calls of a trace as nccl-tests tables, fitted", "[kineto][calibrate]") {
  // Python over the file: per (Collective name, In msg nelems × 4, Group size) of the nccl*
  // kernels, count and median dur: allreduce 8196000 / 9724160 / 26255360 / 26550272 / 31502336 B,
  // 3 calls each, medians 3306.963 / 2028.293 / 2621.533 / 2417.184 / 2673.916 µs; broadcast 212
  // and 212480 B, 3 calls each.
  const std::string path = trace("nccl_parser_config__nccl_data.json.gz");
  if (!test::require_data(path)) return;
  const auto traces = read_kineto_traces({path});
  const auto logs = collective_logs_from_traces(traces);
  REQUIRE(logs.size() == 1);
  CHECK(logs[0].format == "torch.profiler");
  CHECK(logs[0].sha256 == traces[0].sha256);
  std::map<std::string, std::size_t> rows;
  for (const NcclTestsRun& run : logs[0].runs) {
    rows[run.op] += run.rows.size();
    CHECK(run.ranks == 2);
    CHECK(run.gpu == "NVIDIA A100-PG509-200");
    CHECK(run.nccl_version == "2.17.1");
  }
  CHECK(rows == std::map<std::string, std::size_t>{{"all_reduce", 15}, {"broadcast", 6}});
  const auto hw = hardware::load_profile("a100-sxm", "--hardware");
  const CalibrationResult r = calibrate(logs, hw, {}, "overlay.json");
  REQUIRE(r.tables.size() == 1);  // broadcast has no model: skipped with a warning
  const TableReport& t = r.tables[0];
  CHECK(t.op == "all_reduce");
  const std::map<double, double> medians = {
      {8196000, 3306.963e-6}, {9724160, 2028.293e-6}, {26255360, 2621.533e-6}, {26550272, 2417.184e-6}, {31502336, 2673.916e-6}};
  REQUIRE(t.rows.size() == medians.size());
  for (const RowComparison& row : t.rows) CHECK(row.measured_s == Approx(medians.at(row.bytes)).epsilon(1e-9));
  REQUIRE(r.overlay.sources.size() == 1);
  CHECK(r.overlay.sources[0].format == "torch.profiler");
}

TEST_CASE("kineto: a trace without sized NCCL calls gives no table, and says why", "[kineto][calibrate]") {
  // df_index_resolver's 2020 AllReduce kernels carry no size args, nor do its record_param_comms ops.
  const std::string path = trace("df_index_resolver__df_index_resolver.json.gz");
  if (!test::require_data(path)) return;
  std::map<std::string, std::int64_t> skipped;
  const auto logs = collective_logs_from_traces(read_kineto_traces({path}), &skipped);
  REQUIRE(logs.size() == 1);
  CHECK(logs[0].runs.empty());
  CHECK(skipped == std::map<std::string, std::int64_t>{{"all_reduce calls without a recorded size or group size", 2020}});
}

}  // namespace
}  // namespace stepsim::validate

namespace stepsim::validate {
namespace {

TEST_CASE("kineto: GEMM shapes of a trace recover the curve that timed them", "[kineto][calibrate]") {
  // A synthetic trace: aten::mm ops with BF16 Input Dims, each launching one GEMM kernel whose
  // duration is the h100-sxm GEMM curve's time with e_max 0.70, 6 us overhead, 128x128 tiles
  // (written to the ns, as PyTorch 2.x traces are). gemm_points_from_traces + fit_gemm must
  // return that curve; shapes under 20 us are left out (kMinTraceGemmS).
  const auto hw = hardware::load_profile("h100-sxm", "--hardware");
  hardware::GemmCurve truth;
  truth.max_efficiency = 0.70;
  truth.overhead_s = 6e-6;
  truth.tile_m = truth.tile_n = 128;
  truth.sms = hw.sm_count;
  std::string events = R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 10000000})";
  int id = 0, kept = 0;
  for (double m : {1024.0, 4096.0, 8192.0})
    for (double n : {1024.0, 3072.0, 8192.0, 14336.0})
      for (double k : {1024.0, 4096.0}) {
        ++id;
        hardware::GemmShape g;
        g.m = m, g.n = n, g.k = k;
        const double t_us = hardware::gemm_time_s(hw, truth, g) * 1e6;
        kept += t_us >= 20;
        const double ts = 1000.0 * id;
        events += fmt::format(
            R"(, {{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": {}, "dur": 900, )"
            R"("args": {{"Input Dims": [[{}, {}], [{}, {}]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}}}})"
            R"(, {{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": {}, "dur": 5, "args": {{"correlation": {}}}}})"
            R"(, {{"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", "pid": 0, "tid": 7, "ts": {}, "dur": {:.3f}, )"
            R"("args": {{"device": 0, "stream": 7, "correlation": {}}}}})",
            ts, m, k, k, n, ts + 10, id, ts + 20, t_us, id);
      }
  const KinetoTrace t = parse_kineto_trace(R"({"deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "numSms": 132}], "traceEvents": [)" +
                                               events + "]}",
                                           "synthetic.json");
  std::vector<std::string> notes;
  const GemmMeasurements gm = gemm_points_from_traces({t}, &notes);
  REQUIRE(kept >= 4);
  CHECK(gm.points.size() == static_cast<std::size_t>(kept));
  CHECK(gm.format == "torch.profiler");
  CHECK(gm.device == "NVIDIA H100 80GB HBM3");
  for (const GemmPoint& p : gm.points) CHECK(p.shape.math == hardware::GemmMath::Tensor16);
  if (static_cast<std::size_t>(kept) < 24) {
    REQUIRE(notes.size() == 1);
    CHECK(notes[0].find("under 20 us left out") != std::string::npos);
  }
  const GemmFitResult r = fit_gemm(gm, hw, hw.sm_count, kGemmFitTilesWithSmall);
  CHECK(r.gemm.curve.tile_m == 128);
  CHECK(r.gemm.curve.tile_n == 128);
  CHECK(r.gemm.curve.max_efficiency == Approx(0.70).epsilon(0.005));
  CHECK(r.gemm.curve.overhead_s == Approx(6e-6).epsilon(0.02));
  CHECK(r.fitted.max < 0.001);
}

TEST_CASE("kineto: FP32 GEMMs of a trace fit the FP32 efficiency only", "[kineto][calibrate]") {
  // The same with float operands and a CUDA-core SGEMM kernel name on a100-sxm: the FP32
  // efficiency is fitted against the FP32 peak; BF16's stays the profile's.
  const auto hw = hardware::load_profile("a100-sxm", "--hardware");
  hardware::GemmCurve truth = hw.gemm_curve;
  truth.fp32_max_efficiency = 0.80;
  truth.overhead_s = 5e-6;
  truth.tile_m = truth.tile_n = 128;
  std::string events = R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100000000})";
  int id = 0;
  for (double m : {1024.0, 2048.0, 4096.0})
    for (double n : {1024.0, 4096.0}) {
      ++id;
      hardware::GemmShape g;
      g.m = m, g.n = n, g.k = 2048, g.math = hardware::GemmMath::Fp32;
      const double ts = 100000.0 * id;
      events += fmt::format(
          R"(, {{"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 1, "tid": 1, "ts": {}, "dur": 900, )"
          R"("args": {{"Input Dims": [[{}], [{}, 2048], [2048, {}]], "Input type": ["float", "float", "float"]}}}})"
          R"(, {{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": {}, "dur": 5, "args": {{"correlation": {}}}}})"
          R"(, {{"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x128_nn", "pid": 0, "tid": 7, "ts": {}, "dur": {:.3f}, )"
          R"("args": {{"device": 0, "stream": 7, "correlation": {}}}}})",
          ts, n, m, n, ts + 10, id, ts + 20, hardware::gemm_time_s(hw, truth, g) * 1e6, id);
    }
  const KinetoTrace t = parse_kineto_trace(R"({"traceEvents": [)" + events + "]}", "synthetic-fp32.json");
  const GemmMeasurements gm = gemm_points_from_traces({t});
  REQUIRE(gm.points.size() == 6);
  for (const GemmPoint& p : gm.points) CHECK(p.shape.math == hardware::GemmMath::Fp32);
  const GemmFitResult r = fit_gemm(gm, hw, hw.sm_count, kGemmFitTilesWithSmall);
  CHECK(r.gemm.curve.fp32_max_efficiency == Approx(0.80).epsilon(0.005));
  CHECK(r.gemm.curve.max_efficiency == hw.gemm_curve.max_efficiency);
}

}  // namespace
}  // namespace stepsim::validate

namespace stepsim::validate {
namespace {

TEST_CASE("kineto: memory-bound kernels of a trace recover the HBM efficiency that timed them", "[kineto][calibrate]") {
  // A synthetic trace on a100-sxm (2.039 TB/s): pointwise ops with their Input Dims, each
  // launching one elementwise kernel timed at 0.70 of the HBM bandwidth for the bytes the op
  // must move: add of two [n] fp32 tensors 3 × 4n B, mul by a scalar 2 × 4n, fill_ 4n, copy_ of
  // bf16 into fp32 4n + 2n. A broadcasting add and a small kernel are left out.
  const auto hw = hardware::load_profile("a100-sxm", "--hardware");
  const double bw = hw.hbm_bandwidth_bytes_per_s * 0.70;
  std::string events = R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100000000})";
  int id = 0;
  const auto add = [&](const std::string& op, const std::string& dims, const std::string& types, double bytes) {
    ++id;
    const double ts = 10000.0 * id;
    events += fmt::format(
        R"(, {{"ph": "X", "cat": "cpu_op", "name": "{}", "pid": 1, "tid": 1, "ts": {}, "dur": 900, )"
        R"("args": {{"Input Dims": {}, "Input type": {}}}}})"
        R"(, {{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": {}, "dur": 5, "args": {{"correlation": {}}}}})"
        R"(, {{"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel<4>", "pid": 0, "tid": 7, "ts": {}, "dur": {:.3f}, )"
        R"("args": {{"device": 0, "stream": 7, "correlation": {}}}}})",
        op, ts, dims, types, ts + 10, id, ts + 20, bytes / bw * 1e6, id);
  };
  for (double n : {8e6, 16e6, 64e6}) {
    add("aten::add", fmt::format("[[{0}], [{0}], []]", n), R"(["float", "float", "Scalar"])", 12 * n);
    add("aten::mul", fmt::format("[[{0}], []]", n), R"(["float", "Scalar"])", 8 * n);
    add("aten::fill_", fmt::format("[[{0}], []]", n), R"(["float", "Scalar"])", 4 * n);
    add("aten::copy_", fmt::format("[[{0}], [{0}], []]", n), R"(["float", "c10::BFloat16", "Scalar"])", 6 * n);
  }
  add("aten::add", "[[4096, 4096], [4096], []]", R"(["float", "float", "Scalar"])", 2 * 4 * 4096.0 * 4096);  // broadcast
  add("aten::mul", "[[1024], []]", R"(["float", "Scalar"])", 8 * 1024.0);  // 8 KiB: launch-bound
  const KinetoTrace t = parse_kineto_trace(R"({"traceEvents": [)" + events + "]}", "synthetic-stream.json");
  std::vector<std::string> notes;
  const auto points = memory_points_from_traces({t}, &notes);
  REQUIRE(points.size() == 12);
  CHECK(points[0].bytes == Approx(12 * 8e6));
  REQUIRE(notes.size() == 2);
  CHECK(notes[0].find("1 memory-bound kernel under 8 MiB") != std::string::npos);
  CHECK(notes[1].find("1 broadcasting pointwise kernel") != std::string::npos);
  const MemoryFitResult r = fit_memory_bound(points, hw, {"synthetic-stream.json", "", "torch.profiler", "", 0, 0, ""});
  CHECK(r.memory.hbm_efficiency == Approx(0.70).margin(0.001));
  CHECK(r.memory.points == 12);
  CHECK(r.memory.max_residual < 0.002);
  CHECK(r.cross_median_residual < 0.002);
  CHECK(r.profile_efficiency == 0.85);
  CHECK(r.nominal_median_residual == Approx(1 - 0.70 / 0.85).epsilon(1e-4));  // times written to the ns
  // Too few points, or kernels faster than the HBM, are refused.
  CHECK_THROWS_WITH(fit_memory_bound({points.begin(), points.begin() + 4}, hw, {}), Catch::Contains("fewer than the 5"));
  std::vector<MemoryPoint> fast = points;
  for (auto& p : fast) p.measured_s *= 0.5;
  CHECK_THROWS_WITH(fit_memory_bound(fast, hw, {}), Catch::Contains("faster than the HBM can"));
}

TEST_CASE("kineto: the shared A100 traces measure memory-bound kernels near the profiles' 0.85", "[kineto][calibrate]") {
  // negative_queue_length_values_check (A100-SXM4-80GB, 2.039 TB/s): 108 pointwise kernels of 8 MiB
  // and 20 us or more with known traffic (50 fill_, 33 mul, 15 copy_, 10 add). A Python pass over
  // the file with a simpler rule (fill_ writes, copy_ / add / mul read their inputs and write the
  // largest; broadcasts left out; median of the achieved fractions) gives 0.833 on 75 of them;
  // the fit's least-median efficiency is 0.849, against the profile's assumed 0.85.
  const std::string path = trace("negative_queue_length_values_check__rank0.json.gz");
  if (!test::require_data(path)) return;
  const auto traces = read_kineto_traces({path});
  const auto hw = hardware::load_profile("a100-sxm", "--hardware");
  const TraceCalibration tc = calibrate_traces(traces, hw, {}, "overlay.json");
  REQUIRE(tc.memory.has_value());
  CHECK(tc.memory->memory.points == 108);
  CHECK(tc.memory->ops == std::map<std::string, std::size_t>{{"aten::add", 10}, {"aten::copy_", 15}, {"aten::fill_", 50},
                                                              {"aten::mul", 33}});
  CHECK(tc.memory->memory.hbm_efficiency == Approx(0.849).margin(0.0005));
  CHECK(tc.memory->memory.median_residual < 0.03);
  CHECK(tc.memory->cross_median_residual < 0.03);
  REQUIRE(tc.collectives.overlay.memory.has_value());
  CHECK(tc.collectives.overlay.memory->source.gpu == "NVIDIA A100-SXM4-80GB");
}

}  // namespace
}  // namespace stepsim::validate

namespace stepsim::validate {
namespace {

/// A synthetic trace of `steps` steps, each 10 ms from 10,000 µs × (step − 1). Every launch
/// call takes 5 µs and its kernel runs 2 µs from 10 µs after it, except as noted. Per step:
///   main thread (tid 1):     launches at +100, 130, 160, 190, 220 (4 intervals of 30 µs);
///   autograd thread (tid 2): +300, 320, 340, 360 (3 intervals of 20 µs);
///   main thread again:       +500 (after the hand-off: left out), +530 whose call blocks 205 µs
///                            (a full launch queue: the 200 µs beyond the typical 5 taken out,
///                            so 30 µs), +760, a cudaStreamSynchronize 800–900 (the interval
///                            760→950 left out), +950, and a cudaGraphLaunch at +980 whose 3
///                            kernels count as one launch (30 µs).
/// Kept per step: 7 × 30 + 3 × 20 = 270 µs over 10 intervals, 27 µs per launch. The GPU waits
/// for each launch after its previous kernel ended: (980 − 100) − 13 × 2 = 854 µs per step.
std::string host_trace(int steps) {
  std::string ev;
  int corr = 0;
  const auto launch = [&](int tid, double ts, double dur, int kernels, const char* call) {
    ++corr;
    ev += fmt::format(R"(, {{"ph": "X", "cat": "cuda_runtime", "name": "{}", "pid": 1, "tid": {}, "ts": {}, "dur": {}, )"
                      R"("args": {{"correlation": {}}}}})", call, tid, ts, dur, corr);
    for (int k = 0; k < kernels; ++k)
      ev += fmt::format(R"(, {{"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel<4>", )"
                        R"("pid": 0, "tid": 7, "ts": {}, "dur": 2, "args": {{"device": 0, "stream": 7, "correlation": {}}}}})",
                        ts + 10 + 3 * k, corr);
  };
  for (int s = 0; s < steps; ++s) {
    const double t0 = 10000.0 * s;
    ev += fmt::format(R"(, {{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{}", "pid": 1, "tid": 1, "ts": {}, )"
                      R"("dur": 10000}})", s + 1, t0);
    for (double t : {100, 130, 160, 190, 220}) launch(1, t0 + t, 5, 1, "cudaLaunchKernel");
    for (double t : {300, 320, 340, 360}) launch(2, t0 + t, 5, 1, "cudaLaunchKernel");
    launch(1, t0 + 500, 5, 1, "cudaLaunchKernel");
    launch(1, t0 + 530, 205, 1, "cudaLaunchKernel");
    launch(1, t0 + 760, 5, 1, "cudaLaunchKernel");
    ev += fmt::format(R"(, {{"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 1, "tid": 1, )"
                      R"("ts": {}, "dur": 100, "args": {{"correlation": {}}}}})", t0 + 800, ++corr);
    launch(1, t0 + 950, 5, 1, "cudaLaunchKernel");
    launch(1, t0 + 980, 5, 3, "cudaGraphLaunch");
  }
  return R"({"traceEvents": [{"ph": "i", "name": "start"})" + ev + "]}";
}

TEST_CASE("kineto: host time per launch from the CPU's launch intervals, its waits taken out", "[kineto][calibrate]") {
  const KinetoTrace t = parse_kineto_trace(host_trace(10), "synthetic-host.json");
  REQUIRE(t.kernels.size() == 10 * 16);
  CHECK(t.kernels[0].launch_ns == 100000);
  CHECK(t.kernels[0].launch_dur_ns == 5000);
  CHECK(t.kernels[0].launch_thread >= 0);
  REQUIRE(t.blocking_calls.size() == 10);
  CHECK(t.blocking_calls[0].dur_ns == 100000);
  const std::vector<HostStep> steps = host_steps_from_traces({t});
  REQUIRE(steps.size() == 10);
  for (const HostStep& h : steps) {
    CHECK(h.launches == 14);  // 16 kernels, the graph's 3 one launch
    CHECK(h.intervals == 10);
    CHECK(h.handoffs == 1);
    CHECK(h.blocked == 1);
    CHECK(h.host_s == Approx(270e-6).epsilon(1e-9));
    CHECK(h.median_interval_s == Approx(30e-6));
    CHECK(h.gpu_waited_s == Approx(854e-6).epsilon(1e-9));
    CHECK(h.step_s == Approx(0.01));
  }
  const HostFitResult r = fit_host_time(steps, {"synthetic-host.json", "", "torch.profiler", "", 0, 0, ""});
  CHECK(r.host.host_op_s == Approx(27e-6).epsilon(1e-9));
  CHECK(r.host.points == 100);
  CHECK(r.host.steps == 10);
  CHECK(r.host.median_residual < 1e-9);
  CHECK(r.cross_median_residual < 1e-9);
  CHECK(r.gpu_waited_fraction == Approx(0.0854).epsilon(1e-9));
  CHECK(r.blocked == 10);
  CHECK(r.handoffs == 10);
  // Fewer than 100 intervals, or no launch events at all, are refused.
  CHECK_THROWS_WITH(fit_host_time(host_steps_from_traces({parse_kineto_trace(host_trace(9), "nine.json")}), {"nine.json", "", "", "", 0, 0, ""}),
                    Catch::Contains("nine.json: 90 intervals between launches of GPU work, fewer than the 100"));
  const auto one = host_steps_from_traces({parse_kineto_trace(minimal(), "x.json")});  // one launch: no interval
  REQUIRE(one.size() == 1);
  CHECK(one[0].launches == 1);
  CHECK(one[0].intervals == 0);
  // Launches present but every interval left out: the refusal says where they went.
  std::vector<HostStep> all_out = steps;
  for (HostStep& h : all_out) h.intervals = 0, h.host_s = 0;
  CHECK_THROWS_WITH(fit_host_time(all_out, {"b.json", "", "", "", 0, 0, ""}),
                    Catch::Contains("0 intervals between launches of GPU work, fewer than the 100 a host time is measured "
                                    "on (140 launches in 10 steps; left out: 10 around a blocking call, 10 at a hand-off "
                                    "between threads, 0 steps with one launch)"));
  // Steps whose host rates disagree by more than 25 % are refused.
  std::vector<HostStep> uneven = steps;
  for (std::size_t i = 0; i < uneven.size(); i += 2) uneven[i].host_s *= 2;
  CHECK_THROWS_WITH(fit_host_time(uneven, {}), Catch::Contains("the steps do not share one host rate"));
}

TEST_CASE("kineto: blocking runtime calls", "[kineto]") {
  for (const char* name : {"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "hipDeviceSynchronize",
                           "cudaMemcpy", "cudaMemcpy2D", "hipMemcpyWithStream", "cudaFree", "hipFree"})
    CHECK(blocking_call(name));
  for (const char* name : {"cuMemcpyDtoH_v2", "cuMemcpy", "cuMemFree_v2", "cuCtxSynchronize"}) CHECK(blocking_call(name));
  for (const char* name : {"cudaMemcpyAsync", "cudaLaunchKernel", "cudaStreamWaitEvent", "cudaEventQuery", "cudaFreeHost",
                           "cudaMalloc", "hipLaunchKernel", "cuMemcpyDtoHAsync_v2", "cuMemFreeAsync", "cuLaunchKernel", ""})
    CHECK_FALSE(blocking_call(name));
}

TEST_CASE("kineto: host time per launch of the shared traces", "[kineto][calibrate]") {
  // Computed independently with Python 3 from each file (same rules as host_steps_from_traces):
  //   ev = [e for e in d['traceEvents'] if e.get('ph') == 'X']
  //   rt = {correlation: e} of cuda_runtime / cuda_driver events; blk = (tid, ts, ts + dur) of those whose
  //        name matches 'Synchronize|^(cuda|hip)(Memcpy|Memcpy2D|MemcpyWithStream|Free)$'
  //   L = {(r['ts'], r['tid'], r['dur']) for each kernel / gpu_memcpy / gpu_memset whose args.correlation
  //        is in rt}; per step: sorted(l for l in L if step_ts <= l[0] <= step_ts + step_dur)
  //   typ = sorted durations of all of them [n // 2]; for each launch y with an earlier launch x of its
  //        tid (the latest) and no other tid's launch in between, and no blk of that tid with
  //        s < y.ts and e > x.ts: n += 1, c += max(0, y.ts − x.ts − max(0, x.dur − typ))
  //   host_op_s = c / n
  struct Row {
    const char* file;
    int points;
    double host_us;
  };
  for (const Row& row : {Row{"df_index_resolver__df_index_resolver.json.gz", 22275, 74.91},
                         Row{"nccl_parser_config__nccl_data.json.gz", 3765, 166.22},
                         Row{"negative_queue_length_values_check__rank0.json.gz", 6510, 29.63},
                         Row{"ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", 6080, 23.77},
                         Row{"trace_diff__control__control.json.gz", 9372, 36.39},
                         Row{"trace_diff__test__test.json.gz", 9906, 35.47}}) {
    const std::string path = trace(row.file);
    if (!test::require_data(path)) return;
    INFO(row.file);
    const auto r = fit_host_time(host_steps_from_traces(read_kineto_traces({path})), {path, "", "torch.profiler", "", 0, 0, ""});
    CHECK(r.host.points == row.points);
    CHECK(r.host.host_op_s * 1e6 == Approx(row.host_us).margin(0.005));
    CHECK(r.host.median_residual < 0.05);  // one rate per trace: steps within 5 %
  }
  // The AMD trace launches 11 times: too few, and calibrate says why in its one line.
  const std::string amd = trace("amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz");
  if (!test::require_data(amd)) return;
  const auto hw = hardware::load_profile("mi300x", "--hardware");
  CHECK_THROWS_WITH(calibrate_traces(read_kineto_traces({amd}), hw, {}, "o.json"),
                    Catch::Contains("no host time (11 intervals between launches of GPU work, fewer than the 100"));
}

TEST_CASE("kineto: calibrate trace writes the host time, and a trace without shapes is enough", "[kineto][calibrate]") {
  // df_index_resolver: no shapes, no sized NCCL calls; its host time alone makes the overlay.
  const std::string path = trace("df_index_resolver__df_index_resolver.json.gz");
  if (!test::require_data(path)) return;
  const auto hw = hardware::load_profile("v100-sxm2", "--hardware");
  const TraceCalibration tc = calibrate_traces(read_kineto_traces({path}), hw, {}, "v100-host.json");
  REQUIRE(tc.host.has_value());
  REQUIRE(tc.collectives.overlay.host.has_value());
  CHECK(tc.collectives.overlay.tables.empty());
  CHECK_FALSE(tc.collectives.overlay.gemm.has_value());
  const hardware::HostCalibration& h = *tc.collectives.overlay.host;
  CHECK(h.host_op_s * 1e6 == Approx(74.91).margin(0.005));
  CHECK(h.steps == 5);
  CHECK(h.source.gpu == "Tesla V100-SXM2-32GB");
  CHECK(tc.host->gpu_waited_fraction > 0.3);  // launch-bound: the GPU idles 40 % of its steps
  // Written and read back as the overlay a run takes.
  const hardware::CalibrationOverlay back =
      hardware::parse_calibration(nlohmann::json::parse(hardware::calibration_json(tc.collectives.overlay)), "back.json");
  REQUIRE(back.host.has_value());
  CHECK(back.host->host_op_s == h.host_op_s);
  CHECK(back.host->points == 22275);
  CHECK(back.host->steps == 5);
  CHECK(back.host->max_residual == h.max_residual);
  CHECK(back.host->source.sha256 == h.source.sha256);
  // Fitted over another GPU's profile: said.
  const TraceCalibration other = calibrate_traces(read_kineto_traces({path}), hardware::load_profile("a100-sxm", "--hardware"), {}, "o.json");
  bool said = false;
  for (const auto& w : other.collectives.warnings) said = said || w.find("measured on V100") != std::string::npos;
  CHECK(said);
}

}  // namespace
}  // namespace stepsim::validate
