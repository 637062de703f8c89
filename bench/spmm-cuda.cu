/* spmm-cuda: how close the planned cuSPARSE SpMM comes to the GPU's memory
 * bandwidth, measured against a device-to-device copy in the same run.
 *
 * The graph is a stochastic block model built here, in memory, from the
 * same parameters as the loaders' spec
 * `sbm:nodes=N,classes=C,avg-degree=D,homophily=H,seed=S`: node v belongs to
 * class v mod C, and each of its about D neighbours is drawn from its own
 * class with probability H and from the whole graph otherwise.  Values
 * are 1/deg(row) (mean aggregation), so the values array is real traffic.
 * A class is spread over the whole node range, so the gathers of X rows
 * miss the cache: the hard case, before any locality-improving reordering.
 *
 * Bandwidth is counted with the model of bench/spmm-stream.c, so the CPU
 * and GPU ratios compare like with like: every byte moved once,
 *   bytes = I·(rows+1) + I·nnz + 4·nnz + 4·rows·ncols + 4·nnz·ncols
 * (I = 4 or 8: the plan's index width; the last term gathers one X row per
 * nonzero).  The copy moves 2·size bytes (read and write).  Both are timed
 * with CUDA events; the median of --reps runs after warm-up is reported.
 * Three methods run at each width: the planned cuSPARSE product
 * (halo_spmm_cuda_run, all rows; CSR_ALG2 unless --alg says otherwise, as
 * the trainer plans it), the same split into its interior rows
 * (the first 80%) and its boundary rows, as the trainer runs it around the
 * halo exchange, and halo's own row kernel (halo_spmm_cuda_run_rows).
 * A sample of rows is checked against a double-precision product on the
 * host, so that a fast wrong answer cannot pass.
 *
 *   spmm-cuda [--nodes N] [--avg-degree D] [--classes C] [--homophily H]
 *             [--ncols 128,256,16] [--reps R] [--copy-mib M] [--seed S]
 *             [--alg default|csr1|csr2]
 */
#include <cuda_runtime.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <algorithm>
#include <vector>

#include "halo-rng.h"
#include "halo-spmm-cuda.h"

namespace {

constexpr int kMaxWidths = 8;

struct options {
  int64_t nodes = 2000000;
  int64_t avg_degree = 50;
  int64_t classes = 16;
  double homophily = 0.8;
  int64_t ncols[kMaxWidths] = {128, 256, 16};
  int nwidths = 3;
  int reps = 20;
  int64_t copy_mib = 4096;
  uint64_t seed = 1;
  halo_spmm_cuda_alg alg = HALO_SPMM_CUDA_ALG_CSR2; /* what halo-train plans */
};

/* Prints one line naming the call and returns 1 when a CUDA call failed. */
int cuda_failed(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return 0;
  fprintf(stderr, "spmm-cuda: error: %s: %s\n", what, cudaGetErrorString(e));
  return 1;
}

int parse_int(const char *flag, const char *text, int64_t lo, int64_t hi, int64_t *out) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (errno || end == text || *end != '\0' || v < lo || v > hi) {
    fprintf(stderr, "spmm-cuda: error: %s %s: expected an integer in [%lld, %lld]\n", flag, text,
            (long long)lo, (long long)hi);
    return -1;
  }
  *out = v;
  return 0;
}

const char kUsage[] =
    "usage: spmm-cuda [--nodes N] [--avg-degree D] [--classes C] [--homophily H]\n"
    "                 [--ncols 128,256,16] [--reps R] [--copy-mib M] [--seed S]\n"
    "                 [--alg default|csr1|csr2]\n"
    "The planned cuSPARSE SpMM (all rows; interior then boundary rows; halo's row\n"
    "kernel) on an in-memory sbm graph, against a device-to-device copy of M MiB.\n"
    "Defaults: 2000000 nodes, degree 50, 16 classes, homophily 0.8, widths\n"
    "128,256,16, 20 timed runs, a 4096 MiB copy, seed 1, --alg csr2 (cuSPARSE's\n"
    "CSR_ALG2, as halo-train plans its products).  Exit 77 without a GPU.\n";

/* Returns 1 after --help, -1 on a bad flag (one line on stderr), else 0. */
int parse_args(int argc, char **argv, options *opt) {
  for (int i = 1; i < argc; i++) {
    const char *flag = argv[i];
    if (!strcmp(flag, "--help") || !strcmp(flag, "-h")) {
      fputs(kUsage, stdout);
      return 1;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "spmm-cuda: error: %s needs a value\n", flag);
      return -1;
    }
    const char *val = argv[++i];
    int64_t v = 0;
    if (!strcmp(flag, "--nodes")) {
      /* Columns are int32 in halo_csr, so at most INT32_MAX nodes. */
      if (parse_int(flag, val, 1, INT32_MAX, &opt->nodes)) return -1;
    } else if (!strcmp(flag, "--avg-degree")) {
      if (parse_int(flag, val, 1, 100000, &opt->avg_degree)) return -1;
    } else if (!strcmp(flag, "--classes")) {
      if (parse_int(flag, val, 1, 1 << 20, &opt->classes)) return -1;
    } else if (!strcmp(flag, "--homophily")) {
      char *end = NULL;
      opt->homophily = strtod(val, &end);
      if (end == val || *end || !(opt->homophily >= 0.0 && opt->homophily <= 1.0)) {
        fprintf(stderr, "spmm-cuda: error: --homophily %s: expected a number in [0, 1]\n", val);
        return -1;
      }
    } else if (!strcmp(flag, "--ncols")) {
      char buf[256];
      snprintf(buf, sizeof buf, "%s", val);
      opt->nwidths = 0;
      for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (opt->nwidths == kMaxWidths) {
          fprintf(stderr, "spmm-cuda: error: --ncols: at most %d widths\n", kMaxWidths);
          return -1;
        }
        if (parse_int(flag, tok, 1, 4096, &opt->ncols[opt->nwidths++])) return -1;
      }
      if (opt->nwidths == 0) return parse_int(flag, val, 1, 4096, &v);
    } else if (!strcmp(flag, "--reps")) {
      if (parse_int(flag, val, 1, 10000, &v)) return -1;
      opt->reps = (int)v;
    } else if (!strcmp(flag, "--copy-mib")) {
      if (parse_int(flag, val, 1, 1 << 20, &opt->copy_mib)) return -1;
    } else if (!strcmp(flag, "--seed")) {
      if (parse_int(flag, val, 0, INT64_MAX, &v)) return -1;
      opt->seed = (uint64_t)v;
    } else if (!strcmp(flag, "--alg")) {
      if (!strcmp(val, "default"))
        opt->alg = HALO_SPMM_CUDA_ALG_DEFAULT;
      else if (!strcmp(val, "csr1"))
        opt->alg = HALO_SPMM_CUDA_ALG_CSR1;
      else if (!strcmp(val, "csr2"))
        opt->alg = HALO_SPMM_CUDA_ALG_CSR2;
      else {
        fprintf(stderr, "spmm-cuda: error: --alg %s: expected default, csr1 or csr2\n", val);
        return -1;
      }
    } else {
      fprintf(stderr, "spmm-cuda: error: unknown flag %s\n", flag);
      return -1;
    }
  }
  return 0;
}

/* The SBM graph as a CSR with 1/deg values.  Degrees are uniform in
 * [D/2, 3D/2], so the mean is D. */
int build_sbm(const options *opt, halo_csr *a) {
  const uint64_t key = halo_rng_key(opt->seed, HALO_RNG_GRAPH, 0, 0);
  const int64_t n = opt->nodes, c = opt->classes;
  *a = halo_csr{};
  a->rows = a->cols = n;
  a->indptr = (int64_t *)malloc((size_t)(n + 1) * sizeof(int64_t));
  if (!a->indptr) return -1;
  a->indptr[0] = 0;
  const int64_t lo = opt->avg_degree / 2, span = opt->avg_degree + 1;
  for (int64_t v = 0; v < n; v++)
    a->indptr[v + 1] =
        a->indptr[v] + lo + (int64_t)(halo_rng_bits(key, (uint64_t)v, 0) % (uint64_t)span);
  a->nnz = a->indptr[n];
  a->indices = (int32_t *)malloc((size_t)a->nnz * sizeof(int32_t));
  a->values = (float *)malloc((size_t)a->nnz * sizeof(float));
  if (!a->indices || !a->values) return -1;
  for (int64_t v = 0; v < n; v++) {
    /* Class v mod C holds the nodes cls, cls + C, cls + 2C, ... */
    const int64_t cls = v % c;
    const int64_t size = (n - cls + c - 1) / c;
    const int64_t k0 = a->indptr[v], deg = a->indptr[v + 1] - k0;
    const float value = 1.0f / (float)deg;
    for (int64_t s = 0; s < deg; s++) {
      const uint64_t bits = halo_rng_bits(key, (uint64_t)v, (uint64_t)(s + 1));
      const double u = (double)(bits >> 11) * (1.0 / 9007199254740992.0);
      const uint64_t pick = halo_rng_mix(bits);
      const int64_t nbr = u < opt->homophily ? cls + c * (int64_t)(pick % (uint64_t)size)
                                             : (int64_t)(pick % (uint64_t)n);
      a->indices[k0 + s] = (int32_t)nbr;
      a->values[k0 + s] = value;
    }
  }
  return 0;
}

__global__ void fill_kernel(float *x, int64_t n, uint64_t key) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    x[i] = halo_rng_uniform(key, (uint64_t)i, 0) * 2.0f - 1.0f;
}

double median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

double seconds_since(const timespec &t0) {
  timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
}

}  // namespace

int main(int argc, char **argv) {
  options opt;
  halo_csr a = {};
  halo_spmm_cuda_plan *plan = NULL;
  float *x = NULL, *y = NULL, *copy_src = NULL, *copy_dst = NULL;
  cudaEvent_t start = NULL, stop = NULL;
  int rc = 1;
  int64_t maxw = 0;
  double copy_gbs = 0.0;
  std::vector<halo_spmm_cuda_shape> shapes;
  std::vector<float> host_y, host_x;
  timespec t0;

  switch (parse_args(argc, argv, &opt)) {
    case 1:
      return 0;
    case -1:
      return 2;
  }
  if (const char *problem = halo_cuda_device_problem()) {
    printf("spmm-cuda: skipped: no CUDA device (%s)\n", problem);
    return 77;
  }
  cudaDeviceProp prop;
  if (cuda_failed(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties")) return 1;
  printf("spmm-cuda: device %s, %d SMs, %.1f GiB\n", prop.name, prop.multiProcessorCount,
         (double)prop.totalGlobalMem / (1 << 30));

  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (build_sbm(&opt, &a)) {
    fprintf(stderr, "spmm-cuda: error: out of host memory building the graph\n");
    goto done;
  }
  printf(
      "spmm-cuda: sbm:nodes=%lld,classes=%lld,avg-degree=%lld,homophily=%.2f,seed=%llu: "
      "%lld nonzeros, built in %.1f s\n",
      (long long)opt.nodes, (long long)opt.classes, (long long)opt.avg_degree, opt.homophily,
      (unsigned long long)opt.seed, (long long)a.nnz, seconds_since(t0));

  for (int i = 0; i < opt.nwidths; i++) {
    shapes.push_back({opt.ncols[i], opt.ncols[i], opt.ncols[i]});
    maxw = std::max(maxw, opt.ncols[i]);
  }
  {
    clock_gettime(CLOCK_MONOTONIC, &t0);
    const halo_spmm_cuda_options popt = {opt.alg, 0};
    /* Interior rows [0, 0.8·rows): the "split" method runs the two parts. */
    if (halo_spmm_cuda_plan_create(&a, a.rows / 5 * 4, shapes.data(), (int)shapes.size(), &popt,
                                   NULL, &plan) != HALO_OK)
      goto done;
    static const char *const algs[] = {"ALG_DEFAULT", "CSR_ALG1", "CSR_ALG2"};
    printf("spmm-cuda: plan (%s) in %.1f s, %.2f GiB on the device, %s indices\n", algs[opt.alg],
           seconds_since(t0), (double)halo_spmm_cuda_plan_bytes(plan) / (1 << 30),
           halo_spmm_cuda_plan_index64(plan) ? "int64" : "int32");
  }

  if (cuda_failed(cudaMalloc(&x, (size_t)(a.cols * maxw) * 4), "cudaMalloc X") ||
      cuda_failed(cudaMalloc(&y, (size_t)(a.rows * maxw) * 4), "cudaMalloc Y") ||
      cuda_failed(cudaEventCreate(&start), "cudaEventCreate") ||
      cuda_failed(cudaEventCreate(&stop), "cudaEventCreate"))
    goto done;
  fill_kernel<<<4096, 256>>>(x, a.cols * maxw, halo_rng_key(opt.seed, HALO_RNG_FEATURES, 0, 0));
  if (cuda_failed(cudaGetLastError(), "fill X")) goto done;

  /* The ceiling: a device-to-device copy, bytes read plus bytes written. */
  {
    const size_t bytes = (size_t)opt.copy_mib << 20;
    std::vector<float> ms;
    if (cuda_failed(cudaMalloc(&copy_src, bytes), "cudaMalloc copy source") ||
        cuda_failed(cudaMalloc(&copy_dst, bytes), "cudaMalloc copy target") ||
        cuda_failed(cudaMemset(copy_src, 0x3c, bytes), "cudaMemset"))
      goto done;
    for (int r = -3; r < opt.reps; r++) {
      float t = 0.0f;
      cudaEventRecord(start);
      cudaMemcpyAsync(copy_dst, copy_src, bytes, cudaMemcpyDeviceToDevice);
      cudaEventRecord(stop);
      if (cuda_failed(cudaEventSynchronize(stop), "copy") ||
          cuda_failed(cudaEventElapsedTime(&t, start, stop), "cudaEventElapsedTime"))
        goto done;
      if (r >= 0) ms.push_back(t);
    }
    copy_gbs = 2.0 * (double)bytes / (median(ms) * 1e-3) / 1e9;
    printf("spmm-cuda: device-to-device copy of %lld MiB: %.3f ms, %.0f GB/s (read + write)\n",
           (long long)opt.copy_mib, median(ms), copy_gbs);
    cudaFree(copy_src);
    cudaFree(copy_dst);
    copy_src = copy_dst = NULL;
  }

  host_x.resize((size_t)(a.cols * maxw));
  if (cuda_failed(cudaMemcpy(host_x.data(), x, host_x.size() * 4, cudaMemcpyDeviceToHost),
                  "download X"))
    goto done;

  printf("\n%-6s %-8s %10s %10s %8s %8s %8s %6s\n", "ncols", "method", "median_ms", "model_GB",
         "GB/s", "vs_copy", "GFLOP/s", "check");
  for (int i = 0; i < opt.nwidths; i++) {
    const int64_t w = opt.ncols[i];
    const double isz = halo_spmm_cuda_plan_index64(plan) ? 8.0 : 4.0;
    const double bytes = isz * (double)(a.rows + 1) + isz * (double)a.nnz + 4.0 * (double)a.nnz +
                         4.0 * (double)(a.rows * w) + 4.0 * (double)a.nnz * (double)w;
    /* method 0: the planned cuSPARSE product; 1: the same as an interior and
     * a boundary product, as the trainer runs it around the exchange; 2:
     * halo's row kernel. */
    static const char *const names[] = {"cusparse", "split", "rows"};
    for (int method = 0; method < 3; method++) {
      std::vector<float> ms;
      if (cuda_failed(cudaMemset(y, 0xff, (size_t)(a.rows * w) * 4), "poison Y")) goto done;
      for (int r = -3; r < opt.reps; r++) {
        float t = 0.0f;
        halo_status st = HALO_OK;
        cudaEventRecord(start);
        if (method == 0) {
          st = halo_spmm_cuda_run(plan, HALO_SPMM_ALL, x, w, w, 0.0f, y, w, NULL);
        } else if (method == 1) {
          st = halo_spmm_cuda_run(plan, HALO_SPMM_INTERIOR, x, w, w, 0.0f, y, w, NULL);
          if (st == HALO_OK)
            st = halo_spmm_cuda_run(plan, HALO_SPMM_BOUNDARY, x, w, w, 0.0f, y, w, NULL);
        } else {
          st = halo_spmm_cuda_run_rows(plan, x, w, w, 0.0f, y, w, NULL, a.rows, NULL);
        }
        cudaEventRecord(stop);
        if (st != HALO_OK || cuda_failed(cudaEventSynchronize(stop), "SpMM") ||
            cuda_failed(cudaEventElapsedTime(&t, start, stop), "cudaEventElapsedTime"))
          goto done;
        if (r >= 0) ms.push_back(t);
      }
      const double med = median(ms);
      const double gbs = bytes / (med * 1e-3) / 1e9;

      /* Check 2000 sampled rows against a double-precision product. */
      host_y.resize((size_t)(a.rows * w));
      if (cuda_failed(cudaMemcpy(host_y.data(), y, host_y.size() * 4, cudaMemcpyDeviceToHost),
                      "download Y"))
        goto done;
      double num = 0.0, den = 0.0;
      for (int s = 0; s < 2000; s++) {
        const int64_t r = (int64_t)(halo_rng_bits(opt.seed, 77, (uint64_t)s) % (uint64_t)a.rows);
        for (int64_t j = 0; j < w; j++) {
          double ref = 0.0;
          for (int64_t k = a.indptr[r]; k < a.indptr[r + 1]; k++)
            ref += (double)a.values[k] * host_x[(size_t)(a.indices[k] * w + j)];
          const double d = host_y[(size_t)(r * w + j)] - ref;
          num += d * d;
          den += ref * ref;
        }
      }
      const double err = sqrt(num / (den > 0 ? den : 1.0));
      printf("%-6lld %-8s %10.3f %10.2f %8.0f %8.2f %8.0f %6s\n", (long long)w, names[method], med,
             bytes / 1e9, gbs, gbs / copy_gbs, 2.0 * (double)a.nnz * (double)w / (med * 1e-3) / 1e9,
             err < 1e-5 ? "ok" : "WRONG");
      fflush(stdout);
      if (!(err < 1e-5)) {
        fprintf(stderr, "spmm-cuda: error: ncols %lld: relative error %g against the host\n",
                (long long)w, err);
        goto done;
      }
    }
  }
  rc = 0;
done:
  if (start) cudaEventDestroy(start);
  if (stop) cudaEventDestroy(stop);
  cudaFree(copy_src);
  cudaFree(copy_dst);
  cudaFree(x);
  cudaFree(y);
  halo_spmm_cuda_plan_destroy(&plan);
  free(a.indptr);
  free(a.indices);
  free(a.values);
  return rc;
}
