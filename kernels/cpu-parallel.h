/* When a CPU kernel's loop wakes the OpenMP team: one rule for every kernel
 * of kernels/, so that the thresholds are set, and measured, in one place.
 *
 * halo-train's threads wait passively (programs/cli-env.c): a parallel
 * region wakes each of them with a futex, 3-6 µs on the development VM
 * when the team has just slept and 20-50 µs when its cores have gone idle
 * (docs/benchmarks.md, "Small graphs: the team's wake and the scalar
 * loops").  A loop joins the team only when its work on one thread is
 * well above that:
 *
 * - HALO_PARALLEL_STREAM, for loops that stream their values once with a
 *   few operations each (ReLU, a bias, a scale, a row copy, an SGD or Adam
 *   update): 2^18 values, about 1-2 MB and 20-60 µs on one thread; below
 *   it, two threads on the VM were never faster than one (bench/
 *   parallel-min.c);
 * - HALO_PARALLEL_HEAVY, for loops with a hash, an exponential or a
 *   gathered row per value (dropout, softmax, ELU and GELU, GAT, SAGE's
 *   max): 2^14 values, 2-10 ns each.
 *
 * An `omp parallel for simd` takes its threshold as `if (parallel : ...)`:
 * a bare `if` applies to the simd part as well (OpenMP 5.0), and GCC then
 * runs the loop below the threshold one scalar value at a time, with a
 * branch each: ReLU over Cora's 2708 × 16 took 100 µs instead of 5. */
#ifndef HALO_CPU_PARALLEL_H
#define HALO_CPU_PARALLEL_H

#include <stdint.h>

#define HALO_PARALLEL_STREAM ((int64_t)1 << 18)
#define HALO_PARALLEL_HEAVY ((int64_t)1 << 14)

#endif
