// The benchmark's choice of OpenBLAS kernels for its floor (tests/bench/openblas_kernels.hpp, issue
// 34): which flags a processor has, which kernels are generic on it, when the benchmark runs itself
// again and with what, and who set OPENBLAS_CORETYPE. Pure functions: no OpenBLAS, no timing.
#include "bench/openblas_kernels.hpp"

#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <vector>

namespace test_bench_kernels {

using namespace attn::bench;

// Abridged /proc/cpuinfo of the Xeon of issue 34 (family 6, model 207): AVX-512 with bfloat16.
const std::string xeon =
    "processor\t: 0\n"
    "vendor_id\t: GenuineIntel\n"
    "cpu family\t: 6\n"
    "model\t\t: 207\n"
    "flags\t\t: fpu sse2 ssse3 fma avx avx2 avx512f avx512dq avx512bw avx512vl avx512_bf16\n"
    "vmx flags\t: vnmi preemption_timer\n"
    "bugs\t\t: spectre_v1\n"
    "\n"
    "processor\t: 1\n"
    "flags\t\t: fpu sse2\n";

const std::set<std::string> haswell_cpu{"sse2", "avx", "avx2", "fma"};
const std::set<std::string> skylake_cpu{"sse2", "avx", "avx2", "fma", "avx512f"};
const std::set<std::string> old_cpu{"sse2", "ssse3", "avx"};

TEST_CASE("the flags are the first processor's flags line, not vmx flags", "[bench_kernels]") {
    const std::set<std::string> f = cpu_flags(xeon);
    CHECK(f.count("avx512_bf16") == 1);
    CHECK(f.count("fma") == 1);
    CHECK(f.count("preemption_timer") == 0);  // "vmx flags" is another line
    CHECK(f.size() == 11);
    CHECK(cpu_flags("processor : 0\nmodel name : x\n").empty());
}

TEST_CASE("the coretypes that fit a processor, best first", "[bench_kernels]") {
    CHECK(matching_coretypes(cpu_flags(xeon)) == std::vector<std::string>{"Cooperlake", "SkylakeX", "Haswell"});
    CHECK(matching_coretypes(skylake_cpu) == std::vector<std::string>{"SkylakeX", "Haswell"});
    CHECK(matching_coretypes(haswell_cpu) == std::vector<std::string>{"Haswell"});
    CHECK(matching_coretypes({"avx2", "avx512f"}).empty());  // no FMA: nothing to miss
    CHECK(matching_coretypes(old_cpu).empty());
}

TEST_CASE("generic kernels on a processor with AVX-512: the benchmark runs again, one name at a time",
          "[bench_kernels]") {
    const std::set<std::string> f = cpu_flags(xeon);
    for (const char* generic : {"Prescott", "Core2", "Nehalem", "Sandybridge", "Barcelona", "Unknown"}) {
        const KernelChoice k = choose_kernels(generic, f, CoretypeOrigin::unset);
        CHECK(k.generic);
        CHECK(k.rerun);
        CHECK(k.coretype == "Cooperlake");
    }
    // ATTN_BENCH_FAKE_GENERIC's Prescott is treated as OpenBLAS's own choice
    const KernelChoice fake = choose_kernels("Prescott", f, CoretypeOrigin::fake_generic);
    CHECK(fake.rerun);
    CHECK(fake.coretype == "Cooperlake");
    CHECK(fake.note.find("ATTN_BENCH_FAKE_GENERIC") != std::string::npos);
    // an OpenBLAS that does not accept Cooperlake: the next name, then none left and no floor
    const KernelChoice second = choose_kernels("Prescott", f, CoretypeOrigin::rerun, {"Cooperlake"});
    CHECK(second.rerun);
    CHECK(second.coretype == "SkylakeX");
    const KernelChoice none =
        choose_kernels("Prescott", f, CoretypeOrigin::rerun, {"Cooperlake", "SkylakeX", "Haswell"});
    CHECK_FALSE(none.rerun);
    CHECK(none.generic);
    CHECK_FALSE(none.best);
    // AVX2 with FMA only: Haswell
    const KernelChoice hsw = choose_kernels("Nehalem", haswell_cpu, CoretypeOrigin::unset);
    CHECK(hsw.rerun);
    CHECK(hsw.coretype == "Haswell");
}

TEST_CASE("kernels with FMA are kept, and generic ones where nothing better runs", "[bench_kernels]") {
    for (const char* good : {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids", "HASWELL"}) {
        const KernelChoice k = choose_kernels(good, cpu_flags(xeon), CoretypeOrigin::unset);
        CHECK_FALSE(k.generic);
        CHECK_FALSE(k.rerun);
        CHECK(k.best);
    }
    const KernelChoice after = choose_kernels("SkylakeX", skylake_cpu, CoretypeOrigin::rerun, {"SkylakeX"});
    CHECK_FALSE(after.rerun);
    CHECK(after.best);
    CHECK(after.note.find("set by the benchmark") != std::string::npos);
    const KernelChoice old = choose_kernels("Sandybridge", old_cpu, CoretypeOrigin::unset);
    CHECK_FALSE(old.generic);
    CHECK_FALSE(old.rerun);
    CHECK(old.best);
}

TEST_CASE("OPENBLAS_CORETYPE set by hand is kept, and the floor is said not to be the best", "[bench_kernels]") {
    const KernelChoice generic = choose_kernels("Prescott", skylake_cpu, CoretypeOrigin::by_hand);
    CHECK_FALSE(generic.rerun);
    CHECK(generic.generic);
    CHECK_FALSE(generic.best);
    CHECK(generic.note.find("not the best this CPU can do") != std::string::npos);
    CHECK(generic.note.find("SkylakeX") != std::string::npos);
    const KernelChoice vector = choose_kernels("Haswell", skylake_cpu, CoretypeOrigin::by_hand);
    CHECK_FALSE(vector.rerun);
    CHECK_FALSE(vector.generic);
    CHECK_FALSE(vector.best);
    CHECK(vector.note.find("set by hand") != std::string::npos);
}

TEST_CASE("who set OPENBLAS_CORETYPE, from the benchmark's record beside it", "[bench_kernels]") {
    CHECK(coretype_origin(nullptr, "fake").origin == CoretypeOrigin::unset);
    CHECK(coretype_origin("Prescott", "fake").origin == CoretypeOrigin::fake_generic);
    CHECK(coretype_origin("Haswell", "fake").origin == CoretypeOrigin::by_hand);
    CHECK(coretype_origin("Prescott", nullptr).origin == CoretypeOrigin::by_hand);
    CHECK(coretype_origin("Haswell", "tried:Cooperlake").origin == CoretypeOrigin::by_hand);
    const CoretypeEnv e = coretype_origin("SkylakeX", "tried:Cooperlake,SkylakeX");
    CHECK(e.origin == CoretypeOrigin::rerun);
    CHECK(e.tried == std::vector<std::string>{"Cooperlake", "SkylakeX"});
    CHECK(record_after({}, "Cooperlake") == "tried:Cooperlake");
    CHECK(record_after({"Cooperlake"}, "SkylakeX") == "tried:Cooperlake,SkylakeX");
    // the record it writes reads back as the benchmark's own
    CHECK(coretype_origin("SkylakeX", record_after({"Cooperlake"}, "SkylakeX").c_str()).tried.size() == 2);
}

}  // namespace test_bench_kernels
