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

The floor's kernels (issue 34): it reads which kernels numpy's and torch's OpenBLAS run (ctypes on
the libraries in /proc/self/maps), asks the benchmark program whether they are generic on this CPU
(--openblas_decide, the rule of openblas_kernels.hpp) and if so runs itself again with the matching
OPENBLAS_CORETYPE, as the benchmark program does for its own floor; both print the kernels beside
every floor. ATTN_BENCH_FAKE_GENERIC=1 starts both with the generic Prescott kernels.

Training (issues 34 and 43, --part training or all): tests/bench/training_bench times attn's training
step for lesson 9's GRU with additive attention and lesson 12's Transformer, at the lessons' sizes and
4x and 8x their width (the Transformer at d_model 128 and 256, the GRU at u = 64 and 128), both the
lessons' way (one sum, portable products, one thread) and in lanes (attn train's: 8 lanes on
--training-threads threads, fused products), and prints the batches; the same models are trained here
in PyTorch on those batches (float64, sentence by sentence, Adam, clipping; 1 and 2 threads).
Targets, against the best of PyTorch's 1 and 2 threads by wall time: the lessons' way >= 3 x at the
default sizes (issue 34); in lanes >= 2 x for the Transformer at d_model 128 and 256 and the GRU at
u = 128 (issue 43), >= 1 x for the GRU at u = 64.

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


# ---- the floor's kernels (issue 34): generic OpenBLAS kernels are never a floor


def loaded_openblas():
    """[(corename, config, [paths])] of every OpenBLAS loaded in this process (numpy's, torch's)."""
    import ctypes
    paths = set()
    with open("/proc/self/maps", encoding="utf-8") as maps:
        for line in maps:
            words = line.split()
            if len(words) >= 6 and "blas" in os.path.basename(words[5]):
                paths.add(words[5])
    found = {}
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
            lib.openblas_get_corename.restype = ctypes.c_char_p
            lib.openblas_get_config.restype = ctypes.c_char_p
            key = (lib.openblas_get_corename().decode(), lib.openblas_get_config().decode())
        except (OSError, AttributeError):
            continue  # not OpenBLAS
        found.setdefault(key, []).append(path)
    return [(core, config, found[(core, config)]) for core, config in sorted(found)]


def settle_peer_kernels(program):
    """The kernels numpy's and torch's OpenBLAS run, after running this script again with the
    matching OPENBLAS_CORETYPE where they are generic (the benchmark program decides, by the same
    rule as for its own floor: tests/bench/openblas_kernels.hpp). Returns [(corename, config,
    paths, decision)]; may not return (os.execv)."""
    for module in ("numpy", "torch"):
        try:
            __import__(module)
        except ImportError:
            pass
    kernels = []
    for core, config, paths in loaded_openblas():
        proc = subprocess.run([program, "--openblas_decide=" + core], stdout=subprocess.PIPE, text=True, check=False)
        if proc.returncode != 0:
            sys.exit("%s --openblas_decide=%s exited with %d" % (program, core, proc.returncode))
        decision = json.loads(proc.stdout)
        print("compare_peers: numpy's and torch's OpenBLAS: %s" % decision["note"], file=sys.stderr)
        if decision["rerun"]:
            os.environ["OPENBLAS_CORETYPE"] = decision["coretype"]
            os.environ["ATTN_BENCH_OPENBLAS"] = decision["record"]
            sys.stderr.flush()
            os.execv(sys.executable, [sys.executable] + sys.argv)
        kernels.append((core, config, paths, decision))
    return kernels


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
    context = report.get("context", {})
    kernels = {k: context.get("openblas_" + k, "?") for k in ("corename", "config", "floor", "note")}
    medians = {}
    for b in report["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        name = b["run_name"].split("/")[0]
        ms = b["real_time"] * {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b["time_unit"]]
        medians.setdefault(name, []).append(ms)
    # one median per benchmark when repeated; the median of the runs otherwise
    medians = {k: statistics.median(v) for k, v in medians.items()}
    return medians, proc.stdout.lstrip()[end:].strip(), kernels


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


# ---- training (issue 34): lesson 9's GRU with attention and lesson 12's Transformer, tokens per second


def run_training_bench(program, batches, repetitions, scale, threads):
    cmd = [program, "--batches", str(batches), "--repetitions", str(repetitions), "--scale", scale,
           "--threads", str(threads)]
    print("running:", " ".join(cmd), file=sys.stderr)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=False)
    if proc.returncode != 0:
        sys.exit("%s exited with %d:\n%s" % (program, proc.returncode, proc.stderr))
    return json.loads(proc.stdout)


def torch_gru_model(torch, run):
    """Lesson 9's GRU encoder-decoder with additive attention, the shapes of attn's nn::Seq2Seq
    (embedding width = GRU width = the additive score's width = u), weights N(0, 1/fan_in) as
    translation::drawn_model draws them (the values do not change the time), as README's
    lesson9_torch.py computes it: sentence by sentence, Cho et al.'s GRU written out."""
    u, V_src, V_tgt = run["width"], run["V_src"], run["V_tgt"]
    w = {"E_src": torch.randn(V_src, u), "E_tgt": torch.randn(V_tgt, u)}
    for gru, d_in in (("enc_fwd", u), ("enc_bwd", u), ("dec", 3 * u)):
        for gate in "zrh":
            w["%s.W_%s" % (gru, gate)] = torch.randn(u, d_in) / math.sqrt(d_in)
            w["%s.U_%s" % (gru, gate)] = torch.randn(u, u) / math.sqrt(u)
            w["%s.b_%s" % (gru, gate)] = torch.zeros(u)
    w.update({"W_a": torch.randn(u, u) / math.sqrt(u), "U_a": torch.randn(u, 2 * u) / math.sqrt(2 * u),
              "v_a": torch.randn(u) / math.sqrt(u), "W_o": torch.randn(V_tgt, u) / math.sqrt(u),
              "b_o": torch.zeros(V_tgt)})
    for t in w.values():
        t.requires_grad_(True)

    def gru(which, x, h):  # Cho et al. 2014: r scales h before U_h
        def W(name):
            return w[which + "." + name]
        z = torch.sigmoid(W("W_z") @ x + W("U_z") @ h + W("b_z"))
        r = torch.sigmoid(W("W_r") @ x + W("U_r") @ h + W("b_r"))
        candidate = torch.tanh(W("W_h") @ x + W("U_h") @ (r * h) + W("b_h"))
        return z * h + (1 - z) * candidate

    def loss(src, tgt):
        X = w["E_src"][src]
        forward, backward = [torch.zeros(u)], [torch.zeros(u)]
        for x in X:
            forward.append(gru("enc_fwd", x, forward[-1]))
        for x in reversed(X):
            backward.append(gru("enc_bwd", x, backward[-1]))
        H = torch.cat([torch.stack(forward[1:]), torch.stack(backward[:0:-1])], dim=1)
        keys, s = H @ w["U_a"].T, backward[-1]
        total = 0
        for y_prev, y in zip([run["sos"]] + tgt, tgt + [run["eos"]]):
            c = torch.softmax(torch.tanh(w["W_a"] @ s + keys) @ w["v_a"], dim=0) @ H
            s = gru("dec", torch.cat([w["E_tgt"][y_prev], c]), s)
            total = total - torch.log_softmax(w["W_o"] @ s + w["b_o"], dim=0)[y]
        return total

    return w, loss, None


def torch_transformer_model(torch, run):
    """Lesson 12's Transformer in the shapes of attn's nn::EncoderDecoder: pre-LN encoder and
    decoder blocks (multi-head attention X W^Q .. split into heads by columns, causal in the
    decoder's self-attention; cross-attention; ReLU network), final norms, sinusoidal positions,
    embeddings times sqrt(d_model); weights drawn as lesson 12 draws them; sentence by sentence."""
    d, d_ff, h, L = run["d_model"], run["d_ff"], run["heads"], run["layers"]
    V_src, V_tgt = run["V_src"], run["V_tgt"]
    F = torch.nn.functional
    w = {"E_src": torch.randn(V_src, d) / math.sqrt(d), "E_tgt": torch.randn(V_tgt, d) / math.sqrt(d)}

    def norm(name):
        w[name + ".g"], w[name + ".b"] = torch.ones(d), torch.zeros(d)

    def attention(name):
        for m in "QKVO":
            w["%s.W_%s" % (name, m)] = torch.randn(d, d) / math.sqrt(d)

    def network(name):
        w[name + ".W_1"], w[name + ".b_1"] = torch.randn(d_ff, d) / math.sqrt(d), torch.zeros(d_ff)
        w[name + ".W_2"], w[name + ".b_2"] = torch.randn(d, d_ff) / math.sqrt(d_ff), torch.zeros(d)

    for l in range(L):
        norm("enc%d.n1" % l), attention("enc%d.self" % l), norm("enc%d.n2" % l), network("enc%d.ff" % l)
    norm("enc")
    for l in range(L):
        norm("dec%d.n1" % l), attention("dec%d.self" % l), norm("dec%d.n2" % l), attention("dec%d.cross" % l)
        norm("dec%d.n3" % l), network("dec%d.ff" % l)
    norm("dec")
    w["W_o"], w["b_o"] = torch.randn(V_tgt, d) / math.sqrt(d), torch.zeros(V_tgt)
    for t in w.values():
        t.requires_grad_(True)
    positions = torch.arange(64, dtype=torch.float64).unsqueeze(1)
    rates = torch.pow(10000.0, -torch.arange(0, d, 2, dtype=torch.float64) / d)
    PE = torch.zeros(64, d)
    PE[:, 0::2], PE[:, 1::2] = torch.sin(positions * rates), torch.cos(positions * rates)[:, : d // 2]

    def ln(name, x):
        return F.layer_norm(x, (d,), w[name + ".g"], w[name + ".b"], 1e-5)

    def mha(name, Xq, Xkv, mask=None):
        Tq, Tk, dk = Xq.shape[0], Xkv.shape[0], d // h
        Q = (Xq @ w[name + ".W_Q"]).view(Tq, h, dk).transpose(0, 1)
        K = (Xkv @ w[name + ".W_K"]).view(Tk, h, dk).transpose(0, 1)
        V = (Xkv @ w[name + ".W_V"]).view(Tk, h, dk).transpose(0, 1)
        S = Q @ K.transpose(1, 2) / math.sqrt(dk)
        if mask is not None:
            S = S + mask
        return (torch.softmax(S, dim=-1) @ V).transpose(0, 1).reshape(Tq, d) @ w[name + ".W_O"]

    def ffn(name, x):
        return F.relu(x @ w[name + ".W_1"].T + w[name + ".b_1"]) @ w[name + ".W_2"].T + w[name + ".b_2"]

    def loss(src, tgt):
        dec_in, dec_out = [run["sos"]] + tgt, tgt + [run["eos"]]
        x = w["E_src"][src] * math.sqrt(d) + PE[: len(src)]
        for l in range(L):
            a = ln("enc%d.n1" % l, x)
            x = x + mha("enc%d.self" % l, a, a)
            x = x + ffn("enc%d.ff" % l, ln("enc%d.n2" % l, x))
        H = ln("enc", x)
        T = len(dec_in)
        causal = torch.full((T, T), -math.inf).triu(1)
        y = w["E_tgt"][dec_in] * math.sqrt(d) + PE[:T]
        for l in range(L):
            a = ln("dec%d.n1" % l, y)
            y = y + mha("dec%d.self" % l, a, a, causal)
            y = y + mha("dec%d.cross" % l, ln("dec%d.n2" % l, y), H)
            y = y + ffn("dec%d.ff" % l, ln("dec%d.n3" % l, y))
        logits = ln("dec", y) @ w["W_o"].T + w["b_o"]
        return -torch.log_softmax(logits, dim=1)[torch.arange(T), dec_out].sum()

    def padded_mha(name, Xq, Xkv, mask):
        B, Tq, Tk, dk = Xq.shape[0], Xq.shape[1], Xkv.shape[1], d // h
        Q = (Xq @ w[name + ".W_Q"]).view(B, Tq, h, dk).transpose(1, 2)
        K = (Xkv @ w[name + ".W_K"]).view(B, Tk, h, dk).transpose(1, 2)
        V = (Xkv @ w[name + ".W_V"]).view(B, Tk, h, dk).transpose(1, 2)
        S = Q @ K.transpose(2, 3) / math.sqrt(dk) + mask
        return (torch.softmax(S, dim=-1) @ V).transpose(1, 2).reshape(B, Tq, d) @ w[name + ".W_O"]

    def padded_loss(part):
        """The summed loss of a batch of pairs as a PyTorch user trains it: padded to the longest
        sentence, the padding hidden from every key and from the loss."""
        B = len(part)
        dec = [([run["sos"]] + tgt, tgt + [run["eos"]]) for _, tgt in part]
        Tx, Ty = max(len(src) for src, _ in part), max(len(i) for i, _ in dec)
        src_ids, dec_in, dec_out = (torch.zeros(B, T, dtype=torch.long) for T in (Tx, Ty, Ty))
        src_keep, tgt_keep = torch.zeros(B, Tx, dtype=torch.bool), torch.zeros(B, Ty, dtype=torch.bool)
        for b, (src, _) in enumerate(part):
            src_ids[b, :len(src)], src_keep[b, :len(src)] = torch.tensor(src), True
            dec_in[b, :len(dec[b][0])], dec_out[b, :len(dec[b][1])] = torch.tensor(dec[b][0]), torch.tensor(dec[b][1])
            tgt_keep[b, :len(dec[b][0])] = True
        src_mask = torch.zeros(B, 1, 1, Tx).masked_fill(~src_keep[:, None, None, :], -math.inf)
        tgt_mask = (torch.full((Ty, Ty), -math.inf).triu(1)[None, None, :, :] +
                    torch.zeros(B, 1, 1, Ty).masked_fill(~tgt_keep[:, None, None, :], -math.inf))
        x = w["E_src"][src_ids] * math.sqrt(d) + PE[:Tx]
        for l in range(L):
            a = ln("enc%d.n1" % l, x)
            x = x + padded_mha("enc%d.self" % l, a, a, src_mask)
            x = x + ffn("enc%d.ff" % l, ln("enc%d.n2" % l, x))
        H = ln("enc", x)
        y = w["E_tgt"][dec_in] * math.sqrt(d) + PE[:Ty]
        for l in range(L):
            a = ln("dec%d.n1" % l, y)
            y = y + padded_mha("dec%d.self" % l, a, a, tgt_mask)
            y = y + padded_mha("dec%d.cross" % l, ln("dec%d.n2" % l, y), H, src_mask)
            y = y + ffn("dec%d.ff" % l, ln("dec%d.n3" % l, y))
        logits = ln("dec", y) @ w["W_o"].T + w["b_o"]
        nll = -torch.log_softmax(logits, dim=2).gather(2, dec_out.unsqueeze(2)).squeeze(2)
        return nll.masked_fill(~tgt_keep, 0.0).sum()

    return w, loss, padded_loss


def torch_training(torch, run, batch, clip, threads, repetitions, padded=False):
    """Target tokens per second of PyTorch training `run`'s model on `run`'s batches (the median
    pass of `repetitions` after one untimed), by the wall clock and per second of processor time (all
    of the process's threads), after checking that the model has attn's parameter count. padded: each
    batch padded into one tensor (the Transformer only), after checking that its loss is the sum of
    the sentences'; otherwise sentence by sentence. None when the model has no padded form here."""
    torch.set_num_threads(threads)
    torch.manual_seed(9)
    w, sentence_loss, padded_loss = (torch_gru_model if run["model"] == "gru-attention"
                                     else torch_transformer_model)(torch, run)
    if padded and padded_loss is None:
        return None
    count = sum(t.numel() for t in w.values())
    if count != run["parameters"]:
        raise RuntimeError("the PyTorch %s has %d parameters, attn's %d" % (run["model"], count, run["parameters"]))
    pairs = [(list(src), list(tgt)) for src, tgt in run["pairs"]]
    if padded:
        with torch.no_grad():
            one = sum(sentence_loss(src, tgt) for src, tgt in pairs[:batch]).item()
            stacked = padded_loss(pairs[:batch]).item()
        if abs(one - stacked) > (1e-9 if torch.get_default_dtype() == torch.float64 else 1e-4) * abs(one):
            raise RuntimeError("the padded batch's loss %.17g is not the sentences' %.17g" % (stacked, one))

        def loss_of(part):
            return padded_loss(part)
    else:
        def loss_of(part):
            return sum(sentence_loss(src, tgt) for src, tgt in part)
    if run["model"] == "gru-attention":
        lr, beta1, beta2, eps = run["adam"]
        adam = torch.optim.Adam(w.values(), lr=lr, betas=(beta1, beta2), eps=eps)

        def rate(step):
            return lr
    else:  # lesson 12's: Vaswani et al.'s warm-up, beta2 0.98, eps 1e-9
        adam = torch.optim.Adam(w.values(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)

        def rate(step):
            return run["d_model"] ** -0.5 * min(step ** -0.5, step * run["warmup"] ** -1.5)
    step = 0
    times, cpu = [], []
    for r in range(repetitions + 1):
        start, cpu_start = time.perf_counter(), time.process_time()
        for first in range(0, len(pairs), batch):
            step += 1
            for group in adam.param_groups:
                group["lr"] = rate(step)
            part = pairs[first:first + batch]
            adam.zero_grad()
            batch_loss = loss_of(part)
            (batch_loss / sum(len(tgt) + 1 for _, tgt in part)).backward()
            norm = torch.sqrt(sum((p.grad ** 2).sum() for p in w.values()))
            if norm > clip:
                for p in w.values():
                    p.grad *= clip / norm
            adam.step()
        if r > 0:
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - cpu_start)
    tokens = run["tokens_per_pass"]
    return tokens / statistics.median(times), tokens / statistics.median(cpu)


def training_table(program, batches, repetitions, scale="all", threads=2):
    """The rows of the training comparison: [(run, {threads: torch tokens/s})]."""
    report = run_training_bench(program, batches, repetitions, scale, threads)
    try:
        import torch
    except ImportError:
        return report, "not installed (%s cannot import torch)" % sys.executable
    torch.set_default_dtype(torch.float64)
    rows = []
    for run in report["runs"]:
        peer = {}
        for threads in (1, 2):
            peer[threads] = torch_training(torch, run, report["batch"], report["clip"], threads, repetitions)
        padded = [torch_training(torch, run, report["batch"], report["clip"], threads, repetitions, padded=True)
                  for threads in (1, 2)]
        peer["padded"] = None if padded[0] is None else tuple(max(a[k], b[k]) for k in (0, 1) for a, b in [padded])
        if "float32" in run:  # attn train --float32 beside PyTorch in float32, by sentence and padded
            torch.set_default_dtype(torch.float32)
            by_sentence = [torch_training(torch, run, report["batch"], report["clip"], threads, repetitions)
                           for threads in (1, 2)]
            padded = [torch_training(torch, run, report["batch"], report["clip"], threads, repetitions, padded=True)
                      for threads in (1, 2)]
            torch.set_default_dtype(torch.float64)
            peer["float32"] = (max(by_sentence[0][0], by_sentence[1][0]),
                               None if padded[0] is None else max(padded[0][0], padded[1][0]))
        rows.append((run, peer))
    torch.set_num_threads(2)
    return report, rows


def training_target(run):
    """(which attn column the target reads, the factor over the best PyTorch): issue 34's for the lessons'
    way at the default sizes, issue 43's for the lanes at 4x and 8x."""
    if run["scale"] == 1:
        return "lessons", 3.0
    if run["model"] == "gru-attention" and run["scale"] == 4:
        return "lanes", 1.0
    return "lanes", 2.0


def print_training(report, rows, load_before, load_after):
    print("\nTraining, tokens per second (target words and <eos>; forward, backward, clipping and one Adam step "
          "per batch of %d; the median of %d passes over the same %d pairs; float64)" %
          (report["batch"], report["repetitions"], len(report["runs"][0]["pairs"]) if report["runs"] else 0))
    print("load before: %s; after: %s" % (load_before, load_after))
    if isinstance(rows, str):
        print("torch: " + rows)
        return
    print("wall: tokens per second of wall-clock time (the target's measure; on a shared machine it counts "
          "others' work); cpu: per second of processor time, every thread of the process\n")
    lanes = report["runs"][0]["lanes"] if report["runs"] else {"threads": 0, "training": "?"}
    print("attn lessons: one sum, portable products, one thread (every golden file's arithmetic); attn fast: %s, "
          "%d threads (attn train's); torch: sentence by sentence as attn's lessons go (issues 34 and 43 measured "
          "it so), 1 and 2 threads; torch batch: each batch padded into one tensor, as PyTorch users train (the "
          "Transformer; the better of 1 and 2 threads); x: attn fast / torch, x lessons: attn lessons / best torch "
          "by sentence" % (lanes["training"], lanes["threads"]))
    print("step MB: the resident memory a trainer and its first step add at their peak (the model's copy, Adam's "
          "moments, the gradients; training_bench's step_megabytes), the lessons' way / fast\n")
    header = "%-14s %-34s %5s %8s %8s %9s %9s %9s %6s %6s %7s %9s %7s %9s  %s" % (
        "model", "sizes", "clock", "lessons", "fast", "torch 1t", "torch 2t", "torch bat", "x 1t", "x 2t", "x batch",
        "x lessons", "target", "step MB", "")
    print(header)
    print("-" * len(header))
    for run, peer in rows:
        if run["model"] == "gru-attention":
            sizes = "u=%d" % run["width"]
        else:
            sizes = "d_model=%d d_ff=%d h=%d L=%d" % (run["d_model"], run["d_ff"], run["heads"], run["layers"])
        sizes += " (%dx)" % run["scale"] if run["scale"] != 1 else ""
        column, target = training_target(run)
        for clock, k, key in (("wall", 0, "tokens_per_second"), ("cpu", 1, "tokens_per_cpu_second")):
            lessons, fast = run[key], run["lanes"][key]
            best = max(peer[1][k], peer[2][k])
            batched = peer["padded"][k] if peer.get("padded") else math.nan
            reached = (fast if column == "lanes" else lessons) / best
            print("%-14s %-34s %5s %8.0f %8.0f %9.0f %9.0f %9.0f %6.2f %6.2f %7.2f %9.2f %7s %9s  %s" % (
                run["model"] if k == 0 else "", sizes if k == 0 else "", clock, lessons, fast, peer[1][k], peer[2][k],
                batched, fast / peer[1][k], fast / peer[2][k], fast / batched, lessons / best,
                (">= %.0f" % target) if k == 0 else "",
                "%.0f/%.0f" % (run["step_megabytes"], run["lanes"]["step_megabytes"]) if k == 0 else "",
                ("%s %s" % ("fast" if column == "lanes" else column, "met" if reached >= target else "MISSED"))
                if k == 0 else ""))
    single = [(run, peer) for run, peer in rows if "float32" in peer]
    if single:
        print("\nfloat32, tokens per second of wall time: attn train --float32 (%s) beside PyTorch in float32, the "
              "better of 1 and 2 threads, sentence by sentence and padded into one tensor per batch (the "
              "Transformer)\n" % single[0][0]["float32"]["training"])
        header = "%-14s %-34s %9s %9s %10s %9s %7s %7s" % (
            "model", "sizes", "attn f64", "attn f32", "torch f32", "torch bat", "x f32", "x batch")
        print(header)
        print("-" * len(header))
        for run, peer in single:
            sizes = ("u=%d" % run["width"] if run["model"] == "gru-attention" else
                     "d_model=%d d_ff=%d h=%d L=%d" % (run["d_model"], run["d_ff"], run["heads"], run["layers"]))
            attn32, (torch32, batch32) = run["float32"]["tokens_per_second"], peer["float32"]
            print("%-14s %-34s %9.0f %9.0f %10.0f %9.0f %7.2f %7.2f" % (
                run["model"], sizes + (" (%dx)" % run["scale"] if run["scale"] != 1 else ""),
                run["lanes"]["tokens_per_second"], attn32, torch32, batch32 if batch32 else math.nan,
                attn32 / torch32, attn32 / batch32 if batch32 else math.nan))


# ---- the backward pass (issue 34): nn::fast_attention_backward against PyTorch's autograd


def backward_against_torch(program, repetitions, min_time, T=1024, d=64):
    """Prints attn's fast backward (and forward + backward) next to PyTorch autograd through the same
    composed attention (matmul + softmax + matmul, float64, 2 threads; 1.13 has no fused kernel), plain
    and causal: the backward alone (the graph kept, retain_graph=True) and a forward with its backward."""
    names = ["fast_backward_T%d" % T, "fast_backward_T%d_causal" % T, "fast_attention_T%d" % T,
             "fast_attention_T%d_causal" % T]
    attn_ms, _, _ = run_benchmark(program, repetitions, names)
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
    parser.add_argument("--training-program", default=None,
                        help="attn's training benchmark (default: training_bench beside the program)")
    parser.add_argument("--training-batches", type=int, default=4,
                        help="batches of 16 pairs each training pass runs (default: %(default)s)")
    parser.add_argument("--training-scales", choices=("1", "4", "8", "all"), default="all",
                        help="the widths trained: the lessons' (1), 4x or 8x, or all three (default: %(default)s)")
    parser.add_argument("--training-threads", type=int, default=2,
                        help="threads of attn's lanes (default: %(default)s, as many as PyTorch's most)")
    parser.add_argument("--part", choices=("all", "attention", "training"), default="all",
                        help="the attention table, the training table or both (default: %(default)s)")
    args = parser.parse_args()
    if args.repetitions < 1 or args.min_time <= 0 or args.training_batches < 1 or args.training_threads < 1:
        parser.error("--repetitions, --training-batches and --training-threads must be >= 1 and --min-time > 0")
    if not os.access(args.program, os.X_OK):
        sys.exit("%s: no such program; build it with meson compile -C build attention_bench "
                 "(needs libbenchmark-dev, libopenblas-dev, xtensor-blas)" % args.program)
    training_program = args.training_program or os.path.join(os.path.dirname(args.program), "training_bench")
    if args.part != "attention" and not os.access(training_program, os.X_OK):
        sys.exit("%s: no such program; build it with meson compile -C build training_bench" % training_program)

    # ATTN_BENCH_FAKE_GENERIC=1: numpy and torch load OpenBLAS with its generic Prescott kernels, as
    # on a processor it does not know; the decision below must then run this script again.
    if os.environ.get("ATTN_BENCH_FAKE_GENERIC") == "1" and "OPENBLAS_CORETYPE" not in os.environ:
        print("compare_peers: ATTN_BENCH_FAKE_GENERIC=1: first with OPENBLAS_CORETYPE=Prescott, as if OpenBLAS "
              "did not know this CPU", file=sys.stderr)
        os.environ["OPENBLAS_CORETYPE"] = "Prescott"
        os.environ["ATTN_BENCH_OPENBLAS"] = "fake"
    elif os.environ.get("ATTN_BENCH_FAKE_GENERIC") == "1" and "ATTN_BENCH_OPENBLAS" not in os.environ:
        print("compare_peers: ATTN_BENCH_FAKE_GENERIC=1 does nothing: OPENBLAS_CORETYPE is set (unset it first)",
              file=sys.stderr)
    peer_kernels = settle_peer_kernels(args.program)

    if args.part == "training":
        load_before = load()
        report, rows = training_table(training_program, args.training_batches, args.repetitions,
                                      args.training_scales, args.training_threads)
        print_training(report, rows, load_before, load())
        return 0

    load_before = load()
    attn_ms, bench_tables, kernels = run_benchmark(args.program, args.repetitions)
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
    print("attn's floor: %s: %s" % (kernels["config"], kernels["note"]))
    for core, config, paths, decision in peer_kernels:
        print("numpy's and torch's OpenBLAS (%s): %s: %s" % (", ".join(paths), config, decision["note"]))
    floor = kernels["floor"] == "yes"
    print("times in ms (medians); peer/attn above 1 means attn is faster (target >= %.1f); "
          "attn/GEMMs: the op over the same GEMMs in OpenBLAS (the benchmark's floor), with its kernels%s\n"
          % (TARGET, "" if floor else "; NOT the best floor of this CPU (see above)"))

    header = "%-34s %10s  %-15s %10s %10s %8s  %s" % (
        "case", "attn_ms", "peer", "peer_ms", "peer/attn", "target", "attn/GEMMs")
    print(header)
    print("-" * len(header))
    for label, op, floor_op, case in CASES:
        a = attn_ms.get(op, math.nan)
        gemm = ("%.2f %s%s" % (a / attn_ms[floor_op], kernels["corename"], "" if floor else " (no floor)")
                if floor_op and floor_op in attn_ms else "-")
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
    if args.part == "all":
        load_before = load()
        report, rows = training_table(training_program, args.training_batches, args.repetitions,
                                      args.training_scales, args.training_threads)
        print_training(report, rows, load_before, load())
    return 0


if __name__ == "__main__":
    sys.exit(main())
