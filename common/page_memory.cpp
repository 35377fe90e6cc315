#include "common/page_memory.hpp"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

namespace vigil::page_memory {
namespace {
std::uintptr_t page_bytes() noexcept {
  static const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  return page;
}
}  // namespace

std::pair<std::uintptr_t, std::uintptr_t> whole_pages(const void* p, std::size_t bytes) noexcept {
  const auto page = page_bytes();
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  const auto first = (at + page - 1) / page * page;
  const auto last = (at + bytes) / page * page;
  return {first, std::max(first, last)};
}

bool drop(void* p, std::size_t bytes) noexcept {
  const auto [first, last] = whole_pages(p, bytes);
  if (first == last) return true;
  return madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED) == 0;
}

std::size_t resident_bytes(const void* p, std::size_t bytes) noexcept {
  if (p == nullptr || bytes == 0) return 0;
  const auto [first, last] = whole_pages(p, bytes);
  const auto page = page_bytes();
  std::vector<unsigned char> in_core((last - first) / page);
  std::size_t resident = bytes - (last - first);
  if (in_core.empty()) return resident;
  if (mincore(reinterpret_cast<void*>(first), last - first, in_core.data()) != 0) return bytes;
  for (const auto c : in_core) resident += (c & 1) ? page : 0;
  return resident;
}

void return_large_blocks() noexcept {
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  mallopt(M_TRIM_THRESHOLD, 128 * 1024);
}

}  // namespace vigil::page_memory
