// IO buffers locked in memory (storage/memory_lock.hpp): off by default (tools, tests); enabled,
// an AlignedBuffer is mlock'ed while it lives and unlocked when freed or moved-from — or, where
// RLIMIT_MEMLOCK does not allow it, the failure is recorded and the buffer works unlocked.
#include <catch2/catch_test_macros.hpp>

#include <sys/resource.h>

#include "storage/device.hpp"
#include "storage/memory_lock.hpp"

using namespace vigil::storage;

TEST_CASE("IO buffers are locked while they live when enabled, and say so when the limit refuses", "[memory_lock]") {
  const auto before = memory_lock::stats();
  REQUIRE_FALSE(before.enabled);  // nothing outside vigild turns it on
  { AlignedBuffer off(64 * 1024); }
  CHECK(memory_lock::stats().locked_bytes == before.locked_bytes);
  CHECK(memory_lock::describe(memory_lock::stats()) == "off");

  memory_lock::enable(true);
  {
    AlignedBuffer a(64 * 1024);
    const auto s = memory_lock::stats();
    if (s.failed) {
      // Not allowed here (an unprivileged RLIMIT_MEMLOCK below 64 KiB): counted, and the buffer still works.
      CHECK(s.unlocked_bytes >= 64 * 1024);
      CHECK(memory_lock::describe(s).starts_with("partly: mlock failed"));
      a.span()[0] = std::byte{1};
    } else {
      CHECK(s.locked_bytes == before.locked_bytes + 64 * 1024);
      CHECK(memory_lock::describe(s) == "locked");
      AlignedBuffer b(std::move(a));  // the lock moves with the memory
      CHECK(memory_lock::stats().locked_bytes == before.locked_bytes + 64 * 1024);
    }
  }
  // Freed: unlocked, so the allocator's reuse of the pages does not eat the budget.
  CHECK(memory_lock::stats().locked_bytes == before.locked_bytes);
  memory_lock::enable(false);
}

TEST_CASE("a buffer gives its pages back and fills them again, locked or not", "[memory_lock]") {
  for (const bool locked : {false, true}) {
    CAPTURE(locked);
    memory_lock::enable(locked);
    constexpr std::size_t kBytes = 256 * 1024;
    AlignedBuffer b(kBytes);
    CHECK(b.resident_bytes() == kBytes);  // zero-filled on allocation: every page touched
    for (auto& x : b.span()) x = std::byte{0x5a};
    b.release_pages();
    CHECK(b.resident_bytes() == 0);
    // What was there reads as zeros, and writing brings back only the pages written.
    CHECK(b.span()[kBytes / 2] == std::byte{0});
    b.span()[0] = std::byte{1};
    b.span()[kBytes - 1] = std::byte{2};
    CHECK(b.resident_bytes() >= 2 * 4096);
    CHECK(b.resident_bytes() < kBytes);
    CHECK(b.span()[0] == std::byte{1});
    CHECK(b.span()[kBytes - 1] == std::byte{2});
    if (locked && !memory_lock::stats().failed) {
      // Still counted as one locked buffer: unlocked at its free as before.
      CHECK(memory_lock::describe(memory_lock::stats()) == "locked");
    }
  }
  memory_lock::enable(false);
}
