#pragma once
// Buffers that cost what they hold: the whole pages inside a buffer, given back to the kernel
// when it is drained (they read as zeros and come back as they are written), and how much of it
// is in memory now. Used by the streams' buffer halves (storage/device.hpp) and the wire
// protocol's receive buffer (proto/frame_codec.hpp).
// Thread: any. Errors: none thrown; a refused madvise leaves the pages as they were.
#include <cstddef>
#include <cstdint>
#include <utility>

namespace vigil::page_memory {

// [first, last) of the whole pages inside [P, P + BYTES): what madvise and mincore may be given
// (the allocator's own bytes around a buffer are never touched). first == last: none.
std::pair<std::uintptr_t, std::uintptr_t> whole_pages(const void* p, std::size_t bytes) noexcept;

// Gives the whole pages inside [P, P + BYTES) back (MADV_DONTNEED). False if refused (locked pages).
bool drop(void* p, std::size_t bytes) noexcept;

// Bytes of [P, P + BYTES) in memory now (mincore); the partial pages at its ends count as in memory.
std::size_t resident_bytes(const void* p, std::size_t bytes) noexcept;

// For a process that allocates and frees media frames all day (vigild, the ingest workers), keyframes
// of hundreds of kB among them: glibc's threshold for giving a large block its own mapping rises with
// every such block freed, until they all live in the arenas, whose free pages are kept (trimmed only
// at the top). Fixed at 128 KiB (mmap and trim thresholds), a large frame's pages go back when it is
// freed. Call once at start, before threads.
void return_large_blocks() noexcept;

}  // namespace vigil::page_memory
