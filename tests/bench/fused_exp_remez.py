#!/usr/bin/python3
"""The coefficients of the fused exp's polynomial (fused_exp_of_clamped in src/nn/kernels.cpp).

The polynomial p of degree n (default 11) that minimises max |p(r) / exp(r) - 1| over
|r| <= ln2 / 2, by the Remez exchange algorithm in 60-digit arithmetic (mpmath), printed as the
doubles the kernel uses; then the relative error of that polynomial with its coefficients rounded to
doubles, on 20001 points of the interval. Usage: fused_exp_remez.py [degree].
"""
import sys

import mpmath as mp

mp.mp.dps = 60


def remez(n, grid_points=8000, rounds=40):
    a, b = -mp.log(2) / 2, mp.log(2) / 2
    N = n + 2  # n + 1 coefficients and the levelled error E
    # first reference: the extrema of the Chebyshev polynomial of degree N - 1
    xs = [(a + b) / 2 - (b - a) / 2 * mp.cos(mp.pi * i / (N - 1)) for i in range(N)]
    grid = [a + (b - a) * i / grid_points for i in range(grid_points + 1)]
    for _ in range(rounds):
        # p(x_i) - exp(x_i) = (-1)^i E exp(x_i) at the reference points
        A, rhs = mp.matrix(N, N), mp.matrix(N, 1)
        for i, x in enumerate(xs):
            for j in range(n + 1):
                A[i, j] = x**j
            A[i, n + 1] = (-1) ** i * mp.exp(x)
            rhs[i] = mp.exp(x)
        sol = mp.lu_solve(A, rhs)
        c, E = [sol[j] for j in range(n + 1)], sol[n + 1]
        vals = [mp.polyval(c[::-1], x) / mp.exp(x) - 1 for x in grid]
        # the new reference: the largest error of each run of one sign, N of them
        turns = [0] + [i for i in range(1, grid_points) if (vals[i] - vals[i - 1]) * (vals[i + 1] - vals[i]) <= 0]
        runs = []
        for i in turns + [grid_points]:
            if runs and mp.sign(vals[i]) == mp.sign(vals[runs[-1]]):
                if abs(vals[i]) > abs(vals[runs[-1]]):
                    runs[-1] = i
            else:
                runs.append(i)
        while len(runs) > N:
            runs.pop(0 if abs(vals[runs[0]]) < abs(vals[runs[-1]]) else -1)
        xs = [grid[i] for i in runs]
        if abs(max(abs(vals[i]) for i in runs) - abs(E)) < abs(E) * mp.mpf("1e-4"):
            break
    return c, abs(E)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 11
    c, E = remez(n)
    doubles = [float(x) for x in c]
    a = -mp.log(2) / 2
    points = [a - 2 * a * i / 20000 for i in range(20001)]
    rounded = max(abs(mp.polyval([mp.mpf(x) for x in doubles[::-1]], r) / mp.exp(r) - 1) for r in points)
    print(f"degree {n}: relative error {mp.nstr(E, 3)} (coefficients rounded to doubles: {mp.nstr(rounded, 3)})")
    for j, x in enumerate(doubles):
        print(f"  r^{j}: {x!r}")


if __name__ == "__main__":
    main()
