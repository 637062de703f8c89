#!/usr/bin/env python3
"""The Chebyshev coefficients of kernels/cpu-activation.c's erfcx.

erfcx(u) = e^(u^2) erfc(u) for u >= 0, as a series in t = (u - K)/(u + K),
which maps [0, inf) onto [-1, 1): f(t) = erfcx(K (1 + t) / (1 - t)) is
smooth there, and its first N Chebyshev coefficients (from 80 nodes of the
first kind) hold it to about 3e-13 relative on u in [0, 27] for K = 3,
N = 22 (the script prints the worst error it finds).  The values come from
Python's math.erfc (glibc's, double precision); past u = 25, where e^(u^2)
overflows, from erfcx's asymptotic series, which is exact to double there.

    scripts/fit-erfcx.py          prints the C array and the measured error
"""
import math

K = 3.0
N = 22
NODES = 80


def erfcx(u):
    if u < 25.0:
        return math.erfc(u) * math.exp(u * u)
    s, term = 1.0, 1.0
    for k in range(1, 12):
        term *= -(2 * k - 1) / (2 * u * u)
        s += term
    return s / (u * math.sqrt(math.pi))


def coefficients():
    ts = [math.cos(math.pi * (j + 0.5) / NODES) for j in range(NODES)]
    fs = [erfcx(K * (1 + t) / (1 - t)) for t in ts]
    c = [2.0 / NODES * sum(fs[j] * math.cos(math.pi * k * (j + 0.5) / NODES) for j in range(NODES))
         for k in range(N)]
    c[0] /= 2
    return c


def clenshaw(c, t):
    b1 = b2 = 0.0
    for k in range(len(c) - 1, 0, -1):
        b1, b2 = c[k] + 2 * t * b1 - b2, b1
    return c[0] + t * b1 - b2


def main():
    c = coefficients()
    worst = 0.0
    for i in range(27001):
        u = i / 1000.0
        worst = max(worst, abs(clenshaw(c, (u - K) / (u + K)) / erfcx(u) - 1))
    print("/* K = %g, %d terms; worst relative error on [0, 27]: %.2g */" % (K, N, worst))
    print("static const double ERFCX_CHEB[%d] = {" % N)
    for k in range(0, N, 3):
        print("    " + " ".join("%.17g," % x for x in c[k:k + 3]))
    print("};")


if __name__ == "__main__":
    main()
