// SPDX-License-Identifier: Apache-2.0
// stepsim-validate mlp-step: the seed's MLP step (seed 000 §2.3) under PyTorch-DDP-like
// scheduling, one thread and one NCCL communicator per GPU, every kernel and collective timed
// with CUDA events. Task names are those of stepsim's DDP graph (models/strategy/ddp.cpp):
//   [mbK.]fwd.layers.N, [mbK.]bwd.layers.N.w_out, [mbK.]bwd.layers.N.w_in,
//   [mbK.]allreduce.bucketB, [mbK.]ddp.copy_bucket_to_grad | ddp.finalize_backward,
//   optimizer.adam   (the mbK. prefix only when grad_accum > 1)
// Scheduling follows the simulated rules: gradients are copied into their bucket divided by
// the world size in the backward segment that produces them (an in-place div_ with
// --gradient-as-bucket-view); a bucket's AllReduce is enqueued on the communication stream
// after a cudaStreamWaitEvent on the event recorded when its last gradient is ready; buckets
// go in index order; the compute stream waits for the last AllReduce, copies the buckets back
// into .grad (skipped with --gradient-as-bucket-view) and runs the Adam kernel. Under
// gradient accumulation only the last micro-batch communicates (no_sync()).
#include "common.cuh"
#include "json_writer.hpp"
#include "mlp_step.hpp"
#include "options.hpp"

#include <exception>
#include <memory>
#include <thread>

namespace stepsim::validate {

namespace {

using bf16 = __nv_bfloat16;

/// Events of one task: start, then one after each kernel.
struct TaskEvents {
  std::string name, phase, stream;
  cudaStream_t s = nullptr;
  cudaEvent_t start = nullptr;
  std::vector<std::pair<std::string, cudaEvent_t>> kernels;  ///< kernel name, end event
};

/// Per-rank event recorder; events are pooled and reused across iterations.
class Recorder {
 public:
  ~Recorder() {
    for (cudaEvent_t e : pool_) cudaEventDestroy(e);
  }
  void reset() {
    used_ = 0;
    tasks_.clear();
  }
  cudaEvent_t record(cudaStream_t s) {
    if (used_ == pool_.size()) {
      cudaEvent_t e = nullptr;
      CUDA_CHECK(cudaEventCreate(&e));
      pool_.push_back(e);
    }
    cudaEvent_t e = pool_[used_++];
    CUDA_CHECK(cudaEventRecord(e, s));
    return e;
  }
  void begin(const std::string& name, const char* phase, const char* stream, cudaStream_t s) {
    tasks_.push_back({name, phase, stream, s, record(s), {}});
  }
  void kernel(const char* name) { tasks_.back().kernels.emplace_back(name, record(tasks_.back().s)); }
  /// Last recorded event of the current task (its end so far).
  cudaEvent_t last() const { return tasks_.back().kernels.back().second; }
  const std::vector<TaskEvents>& tasks() const { return tasks_; }

 private:
  std::vector<cudaEvent_t> pool_;
  std::size_t used_ = 0;
  std::vector<TaskEvents> tasks_;
};

struct KernelTime {
  std::string name;
  double start_s, end_s;
};
struct TaskTime {
  std::string name, phase, stream;
  double start_s, end_s;
  std::vector<KernelTime> kernels;
};
using RankIteration = std::vector<TaskTime>;

/// Device buffers of one rank.
struct Buffers {
  std::vector<void*> owned;
  template <typename T>
  T* alloc(std::int64_t n) {
    void* p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, static_cast<std::size_t>(n) * sizeof(T)));
    owned.push_back(p);
    return static_cast<T*>(p);
  }
  ~Buffers() {
    for (void* p : owned) cudaFree(p);
  }
};

struct Shared {
  const MlpStepOptions* o = nullptr;
  const BucketPlan* plan = nullptr;
  std::vector<ncclComm_t> comms;
  HostBarrier* barrier = nullptr;
  std::vector<std::vector<RankIteration>> results;  ///< [rank][iteration]
};

void run_rank(Shared& sh, int rank) {
  current_rank() = rank;
  const MlpStepOptions& o = *sh.o;
  const BucketPlan& plan = *sh.plan;
  const int world = static_cast<int>(sh.comms.size());
  CUDA_CHECK(cudaSetDevice(rank));
  cudaStream_t compute = nullptr, comm = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&comm, cudaStreamNonBlocking));
  cublasHandle_t blas = nullptr;
  CUBLAS_CHECK(cublasCreate(&blas));
  CUBLAS_CHECK(cublasSetStream(blas, compute));

  const std::int64_t L = o.layers, D = o.hidden, F = o.ffn, B = o.tokens;
  const std::int64_t per_tensor = D * F;
  const std::int64_t params_n = 2 * L * per_tensor;
  Buffers mem;
  // Parameters: layer l's w_in[D,F] at 2·l·D·F, w_out[F,D] right after.
  bf16* params = mem.alloc<bf16>(params_n);
  bf16* bucket = mem.alloc<bf16>(plan.total_bytes / 2);
  bf16* grads = o.gradient_as_bucket_view ? nullptr : mem.alloc<bf16>(params_n);
  float* master = mem.alloc<float>(params_n);
  float* adam_m = mem.alloc<float>(params_n);
  float* adam_v = mem.alloc<float>(params_n);
  std::vector<bf16*> x(static_cast<std::size_t>(L) + 1), a(static_cast<std::size_t>(L)), h(static_cast<std::size_t>(L));
  for (auto& p : x) p = mem.alloc<bf16>(B * D);
  for (auto& p : a) p = mem.alloc<bf16>(B * F);
  for (auto& p : h) p = mem.alloc<bf16>(B * F);
  bf16* dy = mem.alloc<bf16>(B * D);
  bf16* dx[2] = {mem.alloc<bf16>(B * D), mem.alloc<bf16>(B * D)};
  bf16* dh = mem.alloc<bf16>(B * F);
  bf16* da = mem.alloc<bf16>(B * F);
  const float init = 1.0f / static_cast<float>(std::sqrt(static_cast<double>(D)));
  fill_bf16(params, params_n, init, 1, compute);
  fill_f32(master, params_n, init, 1, compute);
  CUDA_CHECK(cudaMemsetAsync(adam_m, 0, static_cast<std::size_t>(params_n) * sizeof(float), compute));
  CUDA_CHECK(cudaMemsetAsync(adam_v, 0, static_cast<std::size_t>(params_n) * sizeof(float), compute));
  fill_bf16(x[0], B * D, 1.0f, 2, compute);
  fill_bf16(dy, B * D, 1e-3f, 3, compute);
  CUDA_CHECK(cudaStreamSynchronize(compute));

  auto w_in = [&](std::int64_t l) { return params + 2 * l * per_tensor; };
  auto w_out = [&](std::int64_t l) { return params + (2 * l + 1) * per_tensor; };
  // Ready-order index of (layer, tensor): layers reversed, w_out first.
  auto ready_index = [&](std::int64_t l, bool out) { return static_cast<std::size_t>(2 * (L - 1 - l) + (out ? 0 : 1)); };
  auto bucket_slot = [&](std::size_t i) { return bucket + plan.tensors[i].offset_bytes / 2; };
  auto grad_of = [&](std::int64_t l, bool out) {
    return o.gradient_as_bucket_view ? bucket_slot(ready_index(l, out)) : grads + (2 * l + (out ? 1 : 0)) * per_tensor;
  };
  std::vector<std::size_t> bucket_last(plan.buckets.size());
  for (std::size_t b = 0; b < plan.buckets.size(); ++b) bucket_last[b] = plan.buckets[b].first + plan.buckets[b].count - 1;

  Recorder rec;
  const float inv_world = 1.0f / static_cast<float>(world);
  const ncclComm_t nccl = sh.comms[static_cast<std::size_t>(rank)];
  const std::int64_t total_steps = o.warmup + o.iters;
  for (std::int64_t step = 0; step < total_steps; ++step) {
    CUDA_CHECK(cudaDeviceSynchronize());
    sh.barrier->wait();
    rec.reset();
    const cudaEvent_t t0 = rec.record(compute);
    for (std::int64_t mb = 0; mb < o.grad_accum; ++mb) {
      const std::string prefix = o.grad_accum > 1 ? "mb" + std::to_string(mb) + "." : "";
      const bool sync = mb == o.grad_accum - 1;
      const float beta = mb > 0 ? 1.0f : 0.0f;  // .grad accumulates over micro-batches
      for (std::int64_t l = 0; l < L; ++l) {
        rec.begin(prefix + "fwd.layers." + std::to_string(l), "forward", "compute", compute);
        gemm_rm(blas, false, false, B, F, D, x[l], w_in(l), a[l], 0.0f);
        rec.kernel("gemm.w_in");
        gelu_forward(a[l], h[l], B * F, compute);
        rec.kernel("gelu");
        gemm_rm(blas, false, false, B, D, F, h[l], w_out(l), x[l + 1], 0.0f);
        rec.kernel("gemm.w_out");
      }
      const bf16* grad_in = dy;
      for (std::int64_t l = L; l-- > 0;) {
        const std::string layer = prefix + "bwd.layers." + std::to_string(l);
        bf16* grad_out = dx[l % 2];
        for (const bool out : {true, false}) {
          rec.begin(layer + (out ? ".w_out" : ".w_in"), "backward", "compute", compute);
          bf16* g = grad_of(l, out);
          if (out) {
            gemm_rm(blas, false, true, B, F, D, grad_in, w_out(l), dh, 0.0f);  // dH = dY·W_outᵀ
            rec.kernel("dgrad");
            gemm_rm(blas, true, false, F, D, B, h[l], grad_in, g, beta);       // dW_out = Hᵀ·dY
            rec.kernel("wgrad");
          } else {
            gelu_backward(dh, a[l], da, B * F, compute);
            rec.kernel("gelu_backward");
            gemm_rm(blas, false, true, B, D, F, da, w_in(l), grad_out, 0.0f);  // dX = dA·W_inᵀ
            rec.kernel("dgrad");
            gemm_rm(blas, true, false, D, F, B, x[l], da, g, beta);            // dW_in = Xᵀ·dA
            rec.kernel("wgrad");
          }
          if (!sync) continue;
          const std::size_t i = ready_index(l, out);
          // DDP's gradient hook: copy into the bucket divided by the world size (or div_ in place).
          scale_copy(g, bucket_slot(i), inv_world, per_tensor, compute);
          rec.kernel(o.gradient_as_bucket_view ? "div" : "copy_to_bucket");
          for (std::size_t b = 0; b < plan.buckets.size(); ++b) {
            if (bucket_last[b] != i) continue;
            CUDA_CHECK(cudaStreamWaitEvent(comm, rec.last(), 0));
            rec.begin(prefix + "allreduce.bucket" + std::to_string(b), "communication", "comm", comm);
            bf16* base = bucket + plan.buckets[b].offset_bytes / 2;
            NCCL_CHECK(ncclAllReduce(base, base, static_cast<std::size_t>(plan.buckets[b].bytes / 2), ncclBfloat16,
                                     ncclSum, nccl, comm));
            rec.kernel("ncclAllReduce");
            if (b + 1 == plan.buckets.size()) CUDA_CHECK(cudaStreamWaitEvent(compute, rec.last(), 0));
          }
        }
        grad_in = grad_out;
      }
      if (!sync) continue;
      if (o.gradient_as_bucket_view) {
        rec.begin(prefix + "ddp.finalize_backward", "overhead", "compute", compute);
        rec.kernel("wait");
      } else {
        rec.begin(prefix + "ddp.copy_bucket_to_grad", "overhead", "compute", compute);
        for (std::size_t i = 0; i < plan.tensors.size(); ++i)
          scale_copy(bucket_slot(i), grad_of(plan.tensors[i].layer, plan.tensors[i].w_out), 1.0f, per_tensor, compute);
        rec.kernel("copy");
      }
    }
    rec.begin("optimizer.adam", "optimizer", "compute", compute);
    // .grad is contiguous in parameter order unless it views the buckets (ready order);
    // the Adam kernel is elementwise, so one launch over the flat buffer either way.
    adam_step(master, adam_m, adam_v, o.gradient_as_bucket_view ? bucket : grads, params, params_n,
              static_cast<int>(step + 1), compute);
    rec.kernel("adam");
    CUDA_CHECK(cudaDeviceSynchronize());
    if (step < o.warmup) continue;
    RankIteration it;
    for (const TaskEvents& t : rec.tasks()) {
      TaskTime tt{t.name, t.phase, t.stream, elapsed_s(t0, t.start), 0, {}};
      double prev = tt.start_s;
      for (const auto& [kname, ev] : t.kernels) {
        const double end = elapsed_s(t0, ev);
        tt.kernels.push_back({kname, prev, end});
        prev = end;
      }
      tt.end_s = prev;
      it.push_back(std::move(tt));
    }
    sh.results[static_cast<std::size_t>(rank)].push_back(std::move(it));
  }
  CUBLAS_CHECK(cublasDestroy(blas));
  CUDA_CHECK(cudaStreamDestroy(compute));
  CUDA_CHECK(cudaStreamDestroy(comm));
}

std::string measured_json(const MlpStepOptions& o, const BucketPlan& plan, const Shared& sh, int world) {
  JsonWriter w;
  w.begin_object();
  w.field("schema", "stepsim.measured/1").field("generator", "stepsim-validate 0.1").field("command", "mlp-step");
  w.key("environment").begin_object();
  w.field("host", host_name()).field("device", device_name(0));
  for (const auto& [k, v] : runtime_versions()) w.field(k, v);
  w.field("gpus", world);
  w.end_object();
  w.key("config").begin_object();
  w.field("layers", o.layers).field("hidden", o.hidden).field("ffn", o.ffn).field("tokens", o.tokens);
  w.field("dtype", "bf16").field("bucket_cap_mb", o.bucket_mb).field("first_bucket_mb", o.first_bucket_mb);
  w.field("grad_accum", o.grad_accum).field("gradient_as_bucket_view", o.gradient_as_bucket_view);
  w.field("optimizer", "adam").field("ranks", world).field("iters", o.iters).field("warmup", o.warmup);
  w.end_object();
  w.key("buckets").begin_array();
  for (std::size_t b = 0; b < plan.buckets.size(); ++b) {
    std::string names;
    for (std::size_t i = plan.buckets[b].first; i < plan.buckets[b].first + plan.buckets[b].count; ++i)
      names += (names.empty() ? "" : ",") + plan.tensors[i].name;
    w.begin_object().field("index", static_cast<std::int64_t>(b)).field("bytes", plan.buckets[b].bytes);
    w.field("tensors", names).end_object();
  }
  w.end_array();
  w.key("iterations").begin_array();
  for (std::int64_t i = 0; i < o.iters; ++i) {
    w.begin_object().field("iteration", i).key("ranks").begin_array();
    for (int r = 0; r < world; ++r) {
      w.begin_object().field("rank", r).key("tasks").begin_array();
      for (const TaskTime& t : sh.results[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)]) {
        w.begin_object().field("name", t.name).field("phase", t.phase).field("stream", t.stream);
        w.field("start_s", t.start_s).field("end_s", t.end_s).key("kernels").begin_array();
        for (const KernelTime& k : t.kernels)
          w.begin_object().field("name", k.name).field("start_s", k.start_s).field("end_s", k.end_s).end_object();
        w.end_array().end_object();
      }
      w.end_array().end_object();
    }
    w.end_array().end_object();
  }
  w.end_array().end_object();
  return w.str();
}

}  // namespace

std::string run_mlp_step(const MlpStepOptions& o, int world) {
  const BucketPlan plan = make_bucket_plan(o);
  Shared sh;
  sh.o = &o;
  sh.plan = &plan;
  sh.comms = init_all_comms(world);
  HostBarrier barrier(world);
  sh.barrier = &barrier;
  sh.results.resize(static_cast<std::size_t>(world));
  run_on_every_gpu(sh.comms, barrier, [&sh](int r) { run_rank(sh, r); });
  return measured_json(o, plan, sh, world);
}

}  // namespace stepsim::validate
