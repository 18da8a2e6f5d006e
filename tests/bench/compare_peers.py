#!/usr/bin/env python3
"""attn against its peers (issue 19): the benchmark program's medians next to PyTorch and numpy.

Runs tests/bench/attention_bench (Google Benchmark, JSON, repeated, medians) for the cases

  attention          softmax(Q K^T / sqrt(d)) V, T = 1024, d = 64 (nn::scaled_dot_product_attention)
  causal attention   the same with the causal mask
  multi-head         T = 512, d_model = 512, h = 8, no heads' weights kept (nn::multi_head_attention)
  fast attention     the output-only tiled nn::fast_attention, T = 1024 and 4096, plain and causal
  fast multi-head    nn::fast_multi_head_attention on the multi-head shapes (the fast path per head)
                     (both with Arithmetic::native: fused multiply-add where the processor has it)

then times the same shapes, float64, on the CPU in

  PyTorch   torch.set_num_threads(2); matmul + softmax + matmul composed (1.13 has no fused
            scaled_dot_product_attention), causal by masked_fill; multi-head by
            torch.nn.MultiheadAttention (need_weights=False, inference mode) and composed with
            the heads batched (one reshape, batched matmuls)
  numpy     the three lines S = Q K^T / sqrt(d); E = exp(S - max); O = (E / sum E) V

each the median of several repetitions after a warm-up (a repetition is the mean of as many calls
as fill --min-time seconds). It prints one table: the case, attn's median, each peer's median,
peer / attn (above 1: attn is faster; the issue's target is >= 1.3 on every case) and, for the
cases that have a GEMM floor in the benchmark, attn / GEMMs from the same medians.

A benchmark, not a test: it reports and always exits 0 unless its own arguments are wrong or the
benchmark program cannot be run. A peer that cannot be imported is reported as "not installed"
(Debian's python3-torch and python3-numpy live in /usr/bin/python3, not in a pyenv or venv
interpreter).

  /usr/bin/python3 tests/bench/compare_peers.py [build/tests/bench/attention_bench]
"""

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time

# numpy's OpenBLAS reads its thread count when it is loaded: two threads, as attn and torch get.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")

# (label, attn's benchmark, its GEMM floor or None, peer case)
CASES = [
    ("attention T=1024 d=64", "attention", "attention_gemms", ("attention", 1024, 64, False)),
    ("causal attention T=1024 d=64", "causal_attention", "attention_gemms", ("attention", 1024, 64, True)),
    ("multi-head T=512 d_model=512 h=8", "multi_head", "multi_head_gemms", ("multi_head", 512, 512, 8)),
    ("fast attention T=1024", "fast_attention_T1024", "attention_gemms", ("attention", 1024, 64, False)),
    ("fast attention T=1024 causal", "fast_attention_T1024_causal", "attention_gemms",
     ("attention", 1024, 64, True)),
    ("fast multi-head T=512 d_model=512 h=8", "fast_multi_head", "multi_head_gemms", ("multi_head", 512, 512, 8)),
    ("fast attention T=4096", "fast_attention_T4096", None, ("attention", 4096, 64, False)),
    ("fast attention T=4096 causal", "fast_attention_T4096_causal", None, ("attention", 4096, 64, True)),
]
TARGET = 1.3  # the issue's: attn at least 1.3 x faster than PyTorch on each case


def load():
    return "load average %.2f %.2f %.2f" % os.getloadavg()


# ---- attn: the benchmark program


def run_benchmark(program, repetitions, names=None):
    names = names or sorted({c[1] for c in CASES} | {c[2] for c in CASES if c[2]})
    cmd = [program, "--benchmark_format=json", "--benchmark_repetitions=%d" % repetitions,
           "--benchmark_report_aggregates_only=true", "--benchmark_enable_random_interleaving=true",
           "--benchmark_filter=^(%s)/" % "|".join(names)]
    print("running:", " ".join(cmd), file=sys.stderr)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=False)
    if proc.returncode != 0:
        sys.exit("%s exited with %d:\n%s" % (program, proc.returncode, proc.stderr))
    # The JSON comes first; the program's own ratio and memory tables follow it on stdout.
    report, end = json.JSONDecoder().raw_decode(proc.stdout.lstrip())
    medians = {}
    for b in report["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        name = b["run_name"].split("/")[0]
        ms = b["real_time"] * {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b["time_unit"]]
        medians.setdefault(name, []).append(ms)
    # one median per benchmark when repeated; the median of the runs otherwise
    medians = {k: statistics.median(v) for k, v in medians.items()}
    return medians, proc.stdout.lstrip()[end:].strip()


# ---- the peers: time a call, median of repetitions after a warm-up


def time_call(call, repetitions, min_time):
    call()  # warm-up: first-touch allocations, thread pools, kernels picked
    start = time.perf_counter()
    call()
    once = time.perf_counter() - start
    calls = max(1, int(math.ceil(min_time / max(once, 1e-9))))
    times = []
    for _ in range(repetitions):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        times.append((time.perf_counter() - start) / calls * 1e3)
    return statistics.median(times)


def inputs(rng_shape_list, seed):
    import numpy as np
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in rng_shape_list]


def torch_peers(repetitions, min_time):
    """{peer case: {variant: ms}}, or a string saying why there is none."""
    try:
        import torch
    except ImportError:
        return "not installed (%s cannot import torch)" % sys.executable
    torch.set_num_threads(2)
    results = {}
    with torch.inference_mode():
        for case in sorted({c[3] for c in CASES}):
            if case[0] == "attention":
                _, T, d, causal = case
                Q, K, V = (torch.from_numpy(a) for a in inputs([(T, d)] * 3, 19))
                scale = 1.0 / math.sqrt(d)
                if causal:
                    mask = torch.ones(T, T, dtype=torch.bool).triu(1)

                    def call(Q=Q, K=K, V=V, mask=mask, scale=scale):
                        S = torch.matmul(Q, K.t()).mul_(scale).masked_fill_(mask, -math.inf)
                        return torch.matmul(torch.softmax(S, dim=-1), V)
                else:
                    def call(Q=Q, K=K, V=V, scale=scale):
                        S = torch.matmul(Q, K.t()).mul_(scale)
                        return torch.matmul(torch.softmax(S, dim=-1), V)
                results[case] = {"torch": time_call(call, repetitions, min_time)}
            else:
                _, T, d_model, h = case
                d_k = d_model // h
                X, W_Q, W_K, W_V, W_O = (torch.from_numpy(a) for a in inputs(
                    [(T, d_model)] + [(d_model, d_model)] * 4, 11))
                for W in (W_Q, W_K, W_V, W_O):
                    W /= math.sqrt(d_model)
                # bias=True with zero biases: 1.13's fast path (eval, inference mode) refuses bias=False
                # (TypeError: _native_multi_head_attention(): argument 'qkv_bias' must be Tensor)
                mha = torch.nn.MultiheadAttention(d_model, h, bias=True, batch_first=True, dtype=torch.float64)
                mha.eval()
                mha.in_proj_bias.zero_()
                mha.out_proj.bias.zero_()
                # torch computes x W^T: its weights are the transposes of attn's X W convention
                mha.in_proj_weight.copy_(torch.cat([W_Q.t(), W_K.t(), W_V.t()]))
                mha.out_proj.weight.copy_(W_O.t())
                Xb = X.unsqueeze(0)

                def module(mha=mha, Xb=Xb):
                    return mha(Xb, Xb, Xb, need_weights=False)[0]

                def composed(X=X, W_Q=W_Q, W_K=W_K, W_V=W_V, W_O=W_O, T=T, h=h, d_k=d_k):
                    # T x d_model -> h x T x d_k, every head's products in one batched matmul
                    Qh, Kh, Vh = ((X @ W).view(T, h, d_k).transpose(0, 1) for W in (W_Q, W_K, W_V))
                    S = torch.matmul(Qh, Kh.transpose(1, 2)).mul_(1.0 / math.sqrt(d_k))
                    heads = torch.matmul(torch.softmax(S, dim=-1), Vh)
                    return heads.transpose(0, 1).reshape(T, d_model) @ W_O

                agree = torch.allclose(module()[0], composed(), rtol=1e-10, atol=1e-12)
                results[case] = {"torch MHA": time_call(module, repetitions, min_time),
                                 "torch composed": time_call(composed, repetitions, min_time)}
                if not agree:
                    results[case]["note"] = "torch MHA and composed disagree"
    return results


def numpy_peers(repetitions, min_time):
    try:
        import numpy as np
    except ImportError:
        return "not installed (%s cannot import numpy)" % sys.executable
    results = {}
    for case in sorted({c[3] for c in CASES if c[3][0] == "attention"}):
        _, T, d, causal = case
        Q, K, V = inputs([(T, d)] * 3, 19)
        scale = 1.0 / math.sqrt(d)
        if causal:
            mask = np.triu(np.ones((T, T), dtype=bool), 1)

            def call(Q=Q, K=K, V=V, mask=mask, scale=scale):
                S = np.where(mask, -np.inf, Q @ K.T * scale)
                E = np.exp(S - S.max(axis=1, keepdims=True))
                return (E / E.sum(axis=1, keepdims=True)) @ V
        else:
            def call(Q=Q, K=K, V=V, scale=scale):
                S = Q @ K.T * scale
                E = np.exp(S - S.max(axis=1, keepdims=True))
                return (E / E.sum(axis=1, keepdims=True)) @ V
        results[case] = {"numpy": time_call(call, repetitions, min_time)}
    return results


# ---- the backward pass (issue 34): nn::fast_attention_backward against PyTorch's autograd


def backward_against_torch(program, repetitions, min_time, T=1024, d=64):
    """Prints attn's fast backward (and forward + backward) next to PyTorch autograd through the same
    composed attention (matmul + softmax + matmul, float64, 2 threads; 1.13 has no fused kernel), plain
    and causal: the backward alone (the graph kept, retain_graph=True) and a forward with its backward."""
    names = ["fast_backward_T%d" % T, "fast_backward_T%d_causal" % T, "fast_attention_T%d" % T,
             "fast_attention_T%d_causal" % T]
    attn_ms, _ = run_benchmark(program, repetitions, names)
    try:
        import torch
    except ImportError:
        print("\nbackward: torch not installed (%s cannot import torch)" % sys.executable)
        return
    torch.set_num_threads(2)
    print("\nbackward pass, T=%d d=%d, ms (medians); torch/attn above 1 means attn is faster (target > 1); "
          "%s" % (T, d, load()))
    print("%-26s %10s %10s %10s" % ("case", "attn_ms", "torch_ms", "torch/attn"))
    for causal in (False, True):
        Q, K, V, dO = (torch.from_numpy(a) for a in inputs([(T, d)] * 4, 19))
        for x in (Q, K, V):
            x.requires_grad_()
        mask = torch.ones(T, T, dtype=torch.bool).triu(1)

        def forward(Q=Q, K=K, V=V, mask=mask, causal=causal):
            S = torch.matmul(Q, K.t()) / math.sqrt(d)
            return torch.matmul(torch.softmax(S.masked_fill(mask, -math.inf) if causal else S, dim=-1), V)

        def forward_backward(forward=forward, dO=dO, Q=Q, K=K, V=V):
            Q.grad = K.grad = V.grad = None
            forward().backward(dO)

        out = forward()

        def backward(out=out, dO=dO, Q=Q, K=K, V=V):
            Q.grad = K.grad = V.grad = None
            out.backward(dO, retain_graph=True)

        suffix = "_causal" if causal else ""
        bwd = attn_ms.get("fast_backward_T%d%s" % (T, suffix), math.nan)
        fwd = attn_ms.get("fast_attention_T%d%s" % (T, suffix), math.nan)
        for label, a, call in (("backward" + suffix.replace("_", " "), bwd, backward),
                               ("forward + backward" + suffix.replace("_", " "), fwd + bwd, forward_backward)):
            ms = time_call(call, repetitions, min_time)
            print("%-26s %10.2f %10.2f %10.2f" % (label, a, ms, ms / a))


# ---- the table


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("program", nargs="?", default="build/tests/bench/attention_bench",
                        help="the benchmark program (default: %(default)s)")
    parser.add_argument("--repetitions", type=int, default=5,
                        help="repetitions for the benchmark and the peers, medians taken (default: %(default)s)")
    parser.add_argument("--min-time", type=float, default=0.3,
                        help="seconds each peer repetition lasts at least (default: %(default)s)")
    args = parser.parse_args()
    if args.repetitions < 1 or args.min_time <= 0:
        parser.error("--repetitions must be >= 1 and --min-time > 0")
    if not os.access(args.program, os.X_OK):
        sys.exit("%s: no such program; build it with meson compile -C build attention_bench "
                 "(needs libbenchmark-dev, libopenblas-dev, xtensor-blas)" % args.program)

    load_before = load()
    attn_ms, bench_tables = run_benchmark(args.program, args.repetitions)
    load_between = load()
    peers = {}
    for name, timer in (("torch", torch_peers), ("numpy", numpy_peers)):
        try:
            peers[name] = timer(args.repetitions, args.min_time)
        except Exception as e:  # a peer that breaks is reported, never fails the run
            peers[name] = "failed: %s: %s" % (type(e).__name__, e)
    load_after = load()

    print("attn: %s (Google Benchmark, median of %d)" % (args.program, args.repetitions))
    for name, got in peers.items():
        if isinstance(got, str):
            print("%s: %s" % (name, got))
    try:
        import torch
        print("torch %s, %d threads; " % (torch.__version__, torch.get_num_threads()), end="")
    except ImportError:
        pass
    try:
        import numpy
        print("numpy %s; " % numpy.__version__, end="")
    except ImportError:
        pass
    print("python %s (%s), %s" % (platform.python_version(), sys.executable, platform.machine()))
    print("load before the benchmark: %s; between: %s; after the peers: %s" % (load_before, load_between, load_after))
    print("times in ms (medians); peer/attn above 1 means attn is faster (target >= %.1f); "
          "attn/GEMMs: the op over the same GEMMs in OpenBLAS (the benchmark's floor)\n" % TARGET)

    header = "%-34s %10s  %-15s %10s %10s %8s  %s" % (
        "case", "attn_ms", "peer", "peer_ms", "peer/attn", "target", "attn/GEMMs")
    print(header)
    print("-" * len(header))
    for label, op, floor, case in CASES:
        a = attn_ms.get(op, math.nan)
        gemm = "%.2f" % (a / attn_ms[floor]) if floor and floor in attn_ms else "-"
        rows = []
        for name, got in peers.items():
            if isinstance(got, str):
                continue
            for variant, ms in got.get(case, {}).items():
                if variant == "note":
                    continue
                ratio = ms / a
                rows.append((variant, ms, ratio, "met" if ratio >= TARGET else "MISSED"))
        if not rows:
            rows = [("-", math.nan, math.nan, "")]
        for i, (variant, ms, ratio, verdict) in enumerate(rows):
            print("%-34s %10s  %-15s %10.2f %10.2f %8s  %s" % (
                label if i == 0 else "", "%.2f" % a if i == 0 else "", variant, ms, ratio, verdict,
                gemm if i == 0 else ""))
    for name, got in peers.items():
        if not isinstance(got, str):
            for case, r in got.items():
                if "note" in r:
                    print("note: %s %s" % (case, r["note"]))
    print("\nThe benchmark program's own tables (the same medians):\n" + bench_tables)
    backward_against_torch(args.program, args.repetitions, args.min_time)
    return 0


if __name__ == "__main__":
    sys.exit(main())
