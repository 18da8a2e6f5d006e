// Which OpenBLAS kernels a floor is measured with (issue 34): OpenBLAS picks its kernels for the
// processor when it is loaded, and on a processor it does not know it falls back to generic ones
// (Debian's 0.3.21 runs its Prescott kernels, SSE3, on a Xeon of family 6, model 207), three times
// slower than the AVX-512 ones: a floor measured on them flatters whatever is compared with it.
// The decision is a pure function of what OpenBLAS says it chose (openblas_get_corename), the
// processor's flags (/proc/cpuinfo) and who set OPENBLAS_CORETYPE, so that a test can check it
// without the library or the processor. The benchmark applies it to itself (it runs itself again
// with the matching OPENBLAS_CORETYPE, since OpenBLAS reads it only when it is loaded) and answers
// compare_peers.py's question for numpy's and torch's OpenBLAS (--openblas_decide=CORENAME).
#pragma once

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace attn::bench {

// The flags of the first processor in the text of /proc/cpuinfo ("flags : fpu vme ... avx2 ...").
inline std::set<std::string> cpu_flags(const std::string& cpuinfo) {
    std::istringstream lines(cpuinfo);
    std::string line;
    while (std::getline(lines, line)) {
        const std::size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        std::string key = line.substr(0, colon);
        key.erase(std::find_if(key.rbegin(), key.rend(), [](unsigned char c) { return !std::isspace(c); }).base(),
                  key.end());
        if (key != "flags") continue;
        std::istringstream words(line.substr(colon + 1));
        std::set<std::string> flags;
        for (std::string w; words >> w;) flags.insert(w);
        return flags;
    }
    return {};
}

// The OPENBLAS_CORETYPE values that fit a processor with these flags, best first: Cooperlake
// (AVX-512 with bfloat16), SkylakeX (AVX-512), Haswell (AVX2 and FMA). Empty: no vector kernels
// to miss (the generic ones are then the right ones). More than one because an OpenBLAS may not
// accept a name it lists (0.3.21 answers "Core not found: Cooperlake" and picks by itself).
inline std::vector<std::string> matching_coretypes(const std::set<std::string>& flags) {
    std::vector<std::string> names;
    const bool fma = flags.count("fma") != 0;
    if (flags.count("avx512f") && fma) {
        if (flags.count("avx512_bf16")) names.push_back("Cooperlake");
        names.push_back("SkylakeX");
    }
    if (flags.count("avx2") && fma) names.push_back("Haswell");
    return names;
}

inline std::string lowercase(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// OpenBLAS's kernel sets with AVX2 and FMA, or AVX-512 (x86-64, as openblas_get_corename spells
// them; case ignored). Every other set (Prescott, Core2, Nehalem, Sandybridge, Barcelona, the
// Bulldozer family, ..., and names a library does not know) is generic on a processor that has
// AVX2 and FMA.
inline bool fma_kernels(const std::string& corename) {
    const std::string c = lowercase(corename);
    return c == "haswell" || c == "zen" || c == "skylakex" || c == "cooperlake" || c == "sapphirerapids";
}

// Who set OPENBLAS_CORETYPE for this run.
enum class CoretypeOrigin {
    unset,         // nobody: OpenBLAS chose by itself
    by_hand,       // the user (kept, whatever it is)
    fake_generic,  // the benchmark, Prescott, because ATTN_BENCH_FAKE_GENERIC=1 asked for generic kernels
    rerun,         // the benchmark, after OpenBLAS had chosen generic kernels (the names tried so far)
};

struct KernelChoice {
    bool generic = false;    // the kernels in use are generic although the processor has better ones
    bool rerun = false;      // run again with OPENBLAS_CORETYPE = coretype
    std::string coretype;    // when rerun
    bool best = true;        // the floor may be printed as this processor's floor
    std::string note;        // one sentence for the reader
};

// corename: what OpenBLAS runs (openblas_get_corename); flags: the processor's; origin: who set
// OPENBLAS_CORETYPE; tried: the names the benchmark has set so far (rerun), in order.
inline KernelChoice choose_kernels(const std::string& corename, const std::set<std::string>& flags,
                                   CoretypeOrigin origin, const std::vector<std::string>& tried = {}) {
    KernelChoice k;
    const std::vector<std::string> fits = matching_coretypes(flags);
    const std::string has = flags.count("avx512f") ? "AVX-512 and FMA" : "AVX2 and FMA";
    k.generic = !fits.empty() && !fma_kernels(corename);
    if (origin == CoretypeOrigin::by_hand) {
        k.best = false;
        k.note = k.generic ? "OPENBLAS_CORETYPE was set by hand and kept: OpenBLAS runs its generic " + corename +
                                 " kernels, so this floor is not the best this CPU can do (it has " + has +
                                 ": OPENBLAS_CORETYPE=" + fits.front() + ", or unset it)"
                           : "OPENBLAS_CORETYPE was set by hand and kept: OpenBLAS runs its " + corename +
                                 " kernels; this floor is not necessarily the best this CPU can do (unset it to "
                                 "let OpenBLAS choose)";
        return k;
    }
    if (!k.generic) {
        k.note = fits.empty() ? "OpenBLAS runs its " + corename + " kernels (this CPU has no AVX2 with FMA)"
                              : "OpenBLAS runs its " + corename + " kernels (this CPU has " + has + ")";
        if (origin == CoretypeOrigin::rerun && !tried.empty())
            k.note += ", with OPENBLAS_CORETYPE=" + tried.back() +
                      " set by the benchmark, since OpenBLAS had chosen generic kernels";
        return k;
    }
    for (const std::string& name : fits)
        if (std::find(tried.begin(), tried.end(), name) == tried.end()) {
            k.rerun = true;
            k.coretype = name;
            k.note = "OpenBLAS chose its generic " + corename + " kernels on a CPU with " + has +
                     (origin == CoretypeOrigin::fake_generic ? " (ATTN_BENCH_FAKE_GENERIC=1 asked for them)" : "") +
                     ": running again with OPENBLAS_CORETYPE=" + name;
            return k;
        }
    // Every fitting name tried, and OpenBLAS still runs generic kernels: no floor to print.
    k.best = false;
    k.note = "OpenBLAS runs its generic " + corename + " kernels on a CPU with " + has +
             " even with OPENBLAS_CORETYPE set to each of the fitting names: the GEMM times are not a floor";
    return k;
}

// The environment's record of who set OPENBLAS_CORETYPE. The benchmark (and compare_peers.py) set
// ATTN_BENCH_OPENBLAS beside every OPENBLAS_CORETYPE they set: "fake" with Prescott for
// ATTN_BENCH_FAKE_GENERIC=1, "tried:NAME,NAME" with the last name tried. A value of
// OPENBLAS_CORETYPE that the record does not account for was set by hand.
struct CoretypeEnv {
    CoretypeOrigin origin = CoretypeOrigin::unset;
    std::vector<std::string> tried;
};

inline CoretypeEnv coretype_origin(const char* coretype, const char* record) {
    CoretypeEnv e;
    if (!coretype) return e;
    const std::string value = coretype, mark = record ? record : "";
    e.origin = CoretypeOrigin::by_hand;
    if (mark == "fake" && value == "Prescott") {
        e.origin = CoretypeOrigin::fake_generic;
    } else if (mark.rfind("tried:", 0) == 0) {
        std::vector<std::string> names;
        std::istringstream list(mark.substr(6));
        for (std::string name; std::getline(list, name, ',');) names.push_back(name);
        if (!names.empty() && names.back() == value) {
            e.origin = CoretypeOrigin::rerun;
            e.tried = names;
        }
    }
    return e;
}

// The record to set beside OPENBLAS_CORETYPE = next, after the names already tried.
inline std::string record_after(const std::vector<std::string>& tried, const std::string& next) {
    std::string r = "tried:";
    for (const std::string& name : tried) r += name + ",";
    return r + next;
}

}  // namespace attn::bench
