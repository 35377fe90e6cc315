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
