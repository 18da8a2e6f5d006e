// The small blocks' cache (src/core/small_blocks.cpp), which replaces operator new and delete in every
// program of an unsanitized build: what it hands out is aligned and whole, a freed block is handed out
// again for a request of its size, blocks may be freed by another thread than the one that took them,
// and a thread that ends gives its blocks back. Under AddressSanitizer the cache is not compiled (its
// own operator new finds uses after free), and the test of reuse says so and checks the rest.
#include "support.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <new>
#include <thread>
#include <vector>

namespace test_allocator {

namespace {

bool aligned(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % alignof(std::max_align_t) == 0; }

}  // namespace

TEST_CASE("operator new gives aligned blocks of every size, whole", "[allocator]") {
    // sizes either side of every boundary: the size classes (256 B), the largest kept block (64 KiB), and 0
    std::vector<std::size_t> sizes = {0, 1, 15, 16, 17, 255, 256, 257, 511, 512, 4095, 4096, 4097,
                                      65535, 65536, 65537, 100000, 1 << 20};
    std::vector<unsigned char*> blocks;
    for (std::size_t n : sizes) {
        auto* p = static_cast<unsigned char*>(::operator new(n));
        INFO("size " << n);
        CHECK(aligned(p));
        std::memset(p, static_cast<int>(n % 251), n);  // the whole block is ours to write
        blocks.push_back(p);
    }
    // no block overlaps another: each still holds what was written into it
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        INFO("size " << sizes[i]);
        for (std::size_t k = 0; k < sizes[i]; ++k)
            if (blocks[i][k] != static_cast<unsigned char>(sizes[i] % 251)) FAIL("byte " << k << " was overwritten");
    }
    for (unsigned char* p : blocks) ::operator delete(p);
    // and the array forms, sized deletes and nothrow new reach the same blocks
    auto* a = new double[1000];
    a[999] = 1.0;
    delete[] a;
    auto* b = new (std::nothrow) double[3];
    REQUIRE(b != nullptr);
    delete[] b;
}

TEST_CASE("a freed small block is handed out again for a request of its size class", "[allocator]") {
    if (!attn::test::sanitizers().empty()) {
        WARN("reuse not checked: under the sanitizers (" << attn::test::sanitizers()
                                                      << ") operator new is AddressSanitizer's, not the cache");
        return;
    }
    // a block of 2817 bytes, then a neighbour (so that it does not border the free top of malloc's heap);
    // freed, it comes back for 3072 bytes, the top of its class, where malloc itself could not fit that in it
    void* first = ::operator new(2817);
    void* neighbour = ::operator new(2817);
    ::operator delete(first);
    void* again = ::operator new(3072);
    CHECK(again == first);
    void* other = ::operator new(3073);  // the next class: another block
    CHECK(other != first);
    ::operator delete(again);
    ::operator delete(other);
    ::operator delete(neighbour);
    // a block above 64 KiB is malloc's, not kept: no promise, only that it works
    void* large = ::operator new(70000);
    ::operator delete(large);
}

TEST_CASE("blocks move between threads, and a thread that ends gives its blocks back", "[allocator]") {
    // taken here, freed there; taken there, freed here; each thread frees many blocks and ends
    std::vector<double*> made_here;
    for (int i = 0; i < 1000; ++i) made_here.push_back(new double[static_cast<std::size_t>(1 + i % 700)]);
    std::vector<double*> made_there;
    std::thread worker([&] {
        for (double* p : made_here) delete[] p;
        for (int i = 0; i < 1000; ++i) {
            double* p = new double[static_cast<std::size_t>(1 + i % 700)];
            p[0] = i;
            made_there.push_back(p);
        }
    });
    worker.join();
    double sum = 0.0;
    for (double* p : made_there) {
        sum += p[0];
        delete[] p;
    }
    CHECK(sum == 999.0 * 1000.0 / 2.0);
    // many short threads, as the parallel loops start them, each keeping and then giving back blocks
    for (int t = 0; t < 50; ++t) {
        std::thread brief([] {
            std::vector<std::vector<double>> rows(100, std::vector<double>(500, 1.0));
            rows.clear();
        });
        brief.join();
    }
    SUCCEED("no crash, no double free (glibc aborts on one)");
}

}  // namespace test_allocator
