/* Binary search in a sorted array of int64 ids, which the partitioner, the
 * shard checks and the distributed partitioner all do, and the one qsort
 * comparator of int64 values that sorts them. */
#ifndef HALO_SEARCH_H
#define HALO_SEARCH_H

#include <stdint.h>

/* The first index i in [0, n) with a[i] >= x (n when there is none), for
 * a[0..n) in ascending order. Local; pure. */
static inline int64_t halo_lower_bound(const int64_t *a, int64_t n, int64_t x) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (a[mid] < x)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* 1 when ascending a[0..n) holds x. Local; pure. */
static inline int halo_sorted_has(const int64_t *a, int64_t n, int64_t x) {
  const int64_t i = halo_lower_bound(a, n, x);
  return i < n && a[i] == x;
}

/* qsort's comparator of two int64_t: ascending order. Local; pure. */
static inline int halo_compare_i64(const void *a, const void *b) {
  const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

#endif /* HALO_SEARCH_H */
