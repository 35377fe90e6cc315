// The disk health rule of /healthz and vigil_disk_state: an IO thread is stalled once its last
// cycle ended more than ten cycles and at least 10 s ago; failed wins over stalled and full
// (a failed volume stays failed), stalled over full.
#include <catch2/catch_test_macros.hpp>

#include "server/disks/disk_health.hpp"

using namespace vigil::server;
using namespace std::chrono_literals;

TEST_CASE("disk health: stalled after ten cycles and at least 10 s without one", "[health]") {
  CHECK(io_alive(0ms, 200ms));
  CHECK(io_alive(9s, 200ms));  // 45 cycles of 200 ms, but under the 10 s floor
  CHECK(io_alive(10s, 200ms));
  CHECK_FALSE(io_alive(10s + 1ms, 200ms));
  CHECK(io_alive(15s, 1500ms));  // ten cycles of 1.5 s
  CHECK_FALSE(io_alive(15s + 1ms, 1500ms));
}

TEST_CASE("disk health: failed, then stalled, then full, else in service", "[health]") {
  CHECK(disk_state(false, true, false) == DiskState::in_service);
  CHECK(disk_state(false, true, true) == DiskState::full);
  CHECK(disk_state(false, false, true) == DiskState::stalled);
  CHECK(disk_state(true, false, true) == DiskState::failed);
  CHECK(disk_state(true, true, false) == DiskState::failed);
  CHECK(kDiskStates[static_cast<std::size_t>(DiskState::stalled)] == "stalled");
}
