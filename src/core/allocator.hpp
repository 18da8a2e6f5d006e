// How the program's memory is obtained from the system: glibc malloc tuned for large tensors, and
// small blocks (up to 64 KiB) kept per thread for the next request of their size (small_blocks.cpp,
// which replaces operator new and delete in every program of a build without AddressSanitizer).
#pragma once

namespace attn {

// Keeps freed large blocks (a 1024 x 1024 matrix of doubles is 8 MiB) in the heap for the next
// tensor of the same size, instead of returning them to the system at every free. Call once, at the
// start of main, before anything is allocated. Does nothing where malloc is not glibc's.
void tune_allocator_for_tensors();

}  // namespace attn
