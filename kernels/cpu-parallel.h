/* When a CPU kernel's loop wakes the OpenMP team: one rule for every kernel
 * of kernels/, so that the thresholds are set, and measured, in one place.
 *
 * halo-train's threads wait passively (programs/cli-env.c): a parallel
 * region wakes each of them with a futex.  On the 2-vCPU development VM (a
 * Firecracker guest) bench/parallel-min measured that wake at 60-90 µs
 * after 20 or 200 µs of work on the calling thread alone, where a team
 * of two broke even at about 2^19 streamed values and 2^16 heavy ones;
 * inside an epoch, where regions follow each other closely, the wakes
 * cost less, and Cora's epochs (GCN at hidden 16 and 128, SAGE, GIN, GAT,
 * --deterministic) ran as fast or faster with the lower thresholds below
 * than with those (docs/benchmarks.md, "Small graphs: the team's wake and
 * the scalar loops").  On a bare-metal node a futex wake takes a few µs.
 *
 * - HALO_PARALLEL_STREAM, for loops that stream their values once with a
 *   few operations each (ReLU, a bias, a scale, a row copy, an SGD or Adam
 *   update): 2^18 values, 1-2 MB, about 40 µs on one thread;
 * - HALO_PARALLEL_HEAVY, for loops with a hash, an exponential or a
 *   gathered row per value (dropout, softmax, ELU and GELU, GAT, SAGE's
 *   max): 2^14 values, about 3 ns each, 45 µs.
 *
 * An `omp parallel for simd` takes its threshold as `if (parallel : ...)`:
 * a bare `if` applies to the simd part as well (OpenMP 5.0), and GCC then
 * runs the loop below the threshold one scalar value at a time, with a
 * branch each: ReLU over 32,768 values of random sign took 126 µs instead
 * of 3 on the VM. */
#ifndef HALO_CPU_PARALLEL_H
#define HALO_CPU_PARALLEL_H

#include <stdint.h>

#define HALO_PARALLEL_STREAM ((int64_t)1 << 18)
#define HALO_PARALLEL_HEAVY ((int64_t)1 << 14)

#endif
