// SPDX-License-Identifier: Apache-2.0
// stepsim-validate collective-sweep: AllReduce, ReduceScatter and AllGather over a range of
// sizes on one communicator per GPU (one thread each), printed in nccl-tests' table layout
// (≥ 2.10: size count type redop root | time algbw busbw #wrong, out-of-place then in-place)
// so that `stepsim calibrate nccl-tests` reads it. Sizes follow nccl-tests: S is the total
// buffer (the gathered size for AllGather and ReduceScatter). Times are averages over --iters
// back-to-back launches timed with CUDA events, the maximum over ranks. Results are not
// checked (#wrong prints N/A, as nccl-tests -c 0 does).
#include "common.cuh"
#include "mlp_step.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <thread>

namespace stepsim::validate {

namespace {

struct Row {
  std::int64_t bytes = 0;
  double oop_s = 0, ip_s = 0;
};

struct SweepShared {
  const CollectiveSweepOptions* o = nullptr;
  std::vector<ncclComm_t> comms;
  HostBarrier* barrier = nullptr;
  std::vector<std::int64_t> sizes;
  std::vector<std::vector<std::vector<Row>>> rows;  ///< [rank][op][size]
};

std::size_t elt_size(const std::string& dtype) { return dtype == "float" ? 4 : 2; }
ncclDataType_t nccl_type(const std::string& dtype) { return dtype == "float" ? ncclFloat : ncclBfloat16; }

void launch(const std::string& op, const char* send, char* recv, std::size_t count, int world, int rank,
            const std::string& dtype, ncclComm_t comm, cudaStream_t s, bool in_place) {
  const std::size_t esz = elt_size(dtype);
  const ncclDataType_t t = nccl_type(dtype);
  if (op == "all_reduce") {
    NCCL_CHECK(ncclAllReduce(in_place ? recv : send, recv, count, t, ncclSum, comm, s));
  } else if (op == "reduce_scatter") {  // count = elements per rank
    NCCL_CHECK(ncclReduceScatter(in_place ? recv : send, in_place ? recv + static_cast<std::size_t>(rank) * count * esz : recv,
                                 count, t, ncclSum, comm, s));
  } else {  // all_gather, count per rank
    NCCL_CHECK(ncclAllGather(in_place ? recv + static_cast<std::size_t>(rank) * count * esz : send, recv, count, t, comm, s));
  }
  (void)world;
}

void sweep_rank(SweepShared& sh, int rank) {
  current_rank() = rank;
  const CollectiveSweepOptions& o = *sh.o;
  const int world = static_cast<int>(sh.comms.size());
  CUDA_CHECK(cudaSetDevice(rank));
  cudaStream_t s = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const std::size_t max_bytes = static_cast<std::size_t>(sh.sizes.back());
  char *send = nullptr, *recv = nullptr;
  CUDA_CHECK(cudaMalloc(&send, max_bytes));
  CUDA_CHECK(cudaMalloc(&recv, max_bytes));
  CUDA_CHECK(cudaMemset(send, 0, max_bytes));
  CUDA_CHECK(cudaMemset(recv, 0, max_bytes));
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  CUDA_CHECK(cudaEventCreate(&e0));
  CUDA_CHECK(cudaEventCreate(&e1));
  const std::size_t esz = elt_size(o.dtype);
  auto& mine = sh.rows[static_cast<std::size_t>(rank)];
  for (const std::string& op : o.ops) {
    mine.emplace_back();
    for (const std::int64_t bytes : sh.sizes) {
      std::size_t count = static_cast<std::size_t>(bytes) / esz;
      if (op != "all_reduce") count /= static_cast<std::size_t>(world);
      Row row{bytes, 0, 0};
      for (const bool in_place : {false, true}) {
        CUDA_CHECK(cudaStreamSynchronize(s));
        sh.barrier->wait();
        for (std::int64_t i = 0; i < o.warmup; ++i) launch(op, send, recv, count, world, rank, o.dtype, sh.comms[static_cast<std::size_t>(rank)], s, in_place);
        CUDA_CHECK(cudaEventRecord(e0, s));
        for (std::int64_t i = 0; i < o.iters; ++i) launch(op, send, recv, count, world, rank, o.dtype, sh.comms[static_cast<std::size_t>(rank)], s, in_place);
        CUDA_CHECK(cudaEventRecord(e1, s));
        CUDA_CHECK(cudaEventSynchronize(e1));
        (in_place ? row.ip_s : row.oop_s) = elapsed_s(e0, e1) / static_cast<double>(o.iters);
      }
      mine.back().push_back(row);
    }
  }
  CUDA_CHECK(cudaEventDestroy(e0));
  CUDA_CHECK(cudaEventDestroy(e1));
  CUDA_CHECK(cudaFree(send));
  CUDA_CHECK(cudaFree(recv));
  CUDA_CHECK(cudaStreamDestroy(s));
}

std::string format_time(double us) {
  char buf[32];
  if (us >= 10000.0) std::snprintf(buf, sizeof buf, "%7.0f", us);
  else if (us >= 100.0) std::snprintf(buf, sizeof buf, "%7.1f", us);
  else std::snprintf(buf, sizeof buf, "%7.2f", us);
  return buf;
}

}  // namespace

std::string run_collective_sweep(const CollectiveSweepOptions& o, int world) {
  SweepShared sh;
  sh.o = &o;
  const std::size_t esz = elt_size(o.dtype);
  const std::int64_t quantum = static_cast<std::int64_t>(esz) * world;  // every rank gets whole elements
  for (std::int64_t b = o.min_bytes; b <= o.max_bytes; b *= o.step_factor) {
    const std::int64_t rounded = std::max(quantum, b / quantum * quantum);
    if (sh.sizes.empty() || sh.sizes.back() != rounded) sh.sizes.push_back(rounded);
    if (b > o.max_bytes / o.step_factor) break;
  }
  sh.comms = init_all_comms(world);
  HostBarrier barrier(world);
  sh.barrier = &barrier;
  sh.rows.resize(static_cast<std::size_t>(world));
  run_on_every_gpu(sh.comms, barrier, [&sh](int r) { sweep_rank(sh, r); });

  int nccl_version = 0;
  NCCL_CHECK(ncclGetVersion(&nccl_version));
  const std::string host = host_name();
  std::string text;
  char line[512];
  for (std::size_t k = 0; k < o.ops.size(); ++k) {
    const std::string& op = o.ops[k];
    std::snprintf(line, sizeof line,
                  "# nccl-tests-format output of stepsim-validate 0.1 nccl-headers=%d nccl-library=%d\n"
                  "# Collective test starting: %s_perf\n"
                  "# nThread 1 nGpus %d minBytes %lld maxBytes %lld step: %lld(factor) warmup iters: %lld iters: %lld "
                  "agg iters: 1 validation: 0 graph: 0\n#\n# Using devices\n",
                  NCCL_VERSION_CODE, nccl_version, op.c_str(), world, static_cast<long long>(o.min_bytes),
                  static_cast<long long>(o.max_bytes), static_cast<long long>(o.step_factor),
                  static_cast<long long>(o.warmup), static_cast<long long>(o.iters));
    text += line;
    for (int r = 0; r < world; ++r) {
      cudaDeviceProp p{};
      CUDA_CHECK(cudaGetDeviceProperties(&p, r));
      std::snprintf(line, sizeof line, "#  Rank %2d Group  0 Pid %6d on %10s device %2d [%04x:%02x:%02x] %s\n", r,
                    static_cast<int>(getpid()), host.c_str(), r, p.pciDomainID, p.pciBusID, p.pciDeviceID, p.name);
      text += line;
    }
    text += "#                                                              out-of-place                       in-place          \n";
    text += "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n";
    text += "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       \n";
    const double n = world;
    const double factor = op == "all_reduce" ? 2.0 * (n - 1) / n : (n - 1) / n;
    double busbw_sum = 0;
    for (std::size_t i = 0; i < sh.sizes.size(); ++i) {
      Row row = sh.rows[0][k][i];
      for (int r = 1; r < world; ++r) {
        row.oop_s = std::max(row.oop_s, sh.rows[static_cast<std::size_t>(r)][k][i].oop_s);
        row.ip_s = std::max(row.ip_s, sh.rows[static_cast<std::size_t>(r)][k][i].ip_s);
      }
      const double bytes = static_cast<double>(row.bytes);
      std::int64_t count = row.bytes / static_cast<std::int64_t>(esz);
      if (op != "all_reduce") count /= world;
      const double oop_alg = bytes / row.oop_s / 1e9, ip_alg = bytes / row.ip_s / 1e9;
      busbw_sum += oop_alg * factor;
      std::snprintf(line, sizeof line, "%12lld  %12lld  %8s  %6s  %6d  %s  %6.2f  %6.2f  %6s  %s  %6.2f  %6.2f  %6s\n",
                    static_cast<long long>(row.bytes), static_cast<long long>(count), o.dtype.c_str(),
                    op == "all_gather" ? "none" : "sum", -1, format_time(row.oop_s * 1e6).c_str(), oop_alg,
                    oop_alg * factor, "N/A", format_time(row.ip_s * 1e6).c_str(), ip_alg, ip_alg * factor, "N/A");
      text += line;
    }
    std::snprintf(line, sizeof line, "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : %g \n#\n",
                  busbw_sum / static_cast<double>(sh.sizes.size()));
    text += line;
  }
  return text;
}

}  // namespace stepsim::validate
