// The small blocks of every program: operator new and delete replaced by a cache of freed blocks per
// thread, for blocks up to 64 KiB (see allocator.hpp).
//
// Training allocates and frees a few hundred thousand tensors a second, most of them between 256 B and
// 8 KiB (rows and matrices of width 32). glibc's own cache takes blocks up to 1032 B only; the others
// went through its bins, which was 15 % of lesson 12's training and 11 % of lesson 9's. Here a freed
// block goes on its thread's list for its size (sizes rounded up to 256 B), and the next request of that
// size takes it back; nothing else changes: no number depends on where a tensor lives.
//
// Not in a build under AddressSanitizer: its own operator new is what finds a use after free or an
// overflow, and a block kept here would hide both.
#include "allocator.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ATTN_ADDRESS_SANITIZER 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define ATTN_ADDRESS_SANITIZER 1
#endif

#if !defined(ATTN_ADDRESS_SANITIZER)

namespace attn {
namespace {

// Every block starts with a header of 16 bytes (so that what follows keeps malloc's 16-byte alignment,
// the alignment operator new promises) holding its size class: 0 for a block malloc serves directly.
constexpr std::size_t header_bytes = 16;
constexpr std::size_t class_bytes = 256;
constexpr std::size_t largest_kept = 64 * 1024;
constexpr std::size_t class_count = largest_kept / class_bytes + 1;
// Freed blocks beyond this many bytes in one thread's lists go back to malloc: a lesson that frees a
// thousand matrices at once keeps at most this much for later.
constexpr std::size_t most_kept_bytes = 64 * 1024 * 1024;

struct FreeBlock {
    FreeBlock* next;
};

// Trivially destructible, so that it can still be read after the thread's lists were handed back (a
// thread_local or static object destroyed later may free memory): `closed` sends every block to free().
struct Lists {
    FreeBlock* head[class_count];
    std::size_t kept_bytes;
    bool closed;
};
thread_local Lists lists{};

// Hands the thread's kept blocks back to malloc when the thread ends (helper threads end after every
// parallel loop).
struct ListsCloser {
    ~ListsCloser() {
        lists.closed = true;
        for (std::size_t c = 1; c < class_count; ++c)
            while (FreeBlock* block = lists.head[c]) {
                lists.head[c] = block->next;
                std::free(reinterpret_cast<unsigned char*>(block) - header_bytes);
            }
        lists.kept_bytes = 0;
    }
};

void* with_header(void* base, std::size_t size_class) {
    *static_cast<std::size_t*>(base) = size_class;
    return static_cast<unsigned char*>(base) + header_bytes;
}

void* malloc_or_throw(std::size_t bytes) {
    for (;;) {
        if (void* base = std::malloc(bytes)) return base;
        const std::new_handler handler = std::get_new_handler();
        if (handler == nullptr) throw std::bad_alloc();
        handler();
    }
}

void* allocate(std::size_t n) {
    if (n > largest_kept) {
        if (n > SIZE_MAX - header_bytes) throw std::bad_alloc();
        return with_header(malloc_or_throw(header_bytes + n), 0);
    }
    const std::size_t size_class = n == 0 ? 1 : (n + class_bytes - 1) / class_bytes;
    if (!lists.closed) {
        // the closer is constructed on the thread's first allocation, so that it runs when the thread ends
        thread_local ListsCloser closer;
        (void)closer;
        if (FreeBlock* block = lists.head[size_class]) {
            lists.head[size_class] = block->next;
            lists.kept_bytes -= size_class * class_bytes;
            return block;
        }
    }
    return with_header(malloc_or_throw(header_bytes + size_class * class_bytes), size_class);
}

void release(void* p) noexcept {
    if (p == nullptr) return;
    unsigned char* base = static_cast<unsigned char*>(p) - header_bytes;
    const std::size_t size_class = *reinterpret_cast<const std::size_t*>(base);
    const std::size_t bytes = size_class * class_bytes;
    if (size_class == 0 || lists.closed || lists.kept_bytes + bytes > most_kept_bytes) {
        std::free(base);
        return;
    }
    FreeBlock* block = static_cast<FreeBlock*>(p);
    block->next = lists.head[size_class];
    lists.head[size_class] = block;
    lists.kept_bytes += bytes;
}

}  // namespace
}  // namespace attn

void* operator new(std::size_t n) { return attn::allocate(n); }
void* operator new[](std::size_t n) { return attn::allocate(n); }
void operator delete(void* p) noexcept { attn::release(p); }
void operator delete[](void* p) noexcept { attn::release(p); }
void operator delete(void* p, std::size_t) noexcept { attn::release(p); }
void operator delete[](void* p, std::size_t) noexcept { attn::release(p); }

#endif
