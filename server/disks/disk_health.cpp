#include "server/disks/disk_health.hpp"

#include <algorithm>

namespace vigil::server {

bool io_alive(std::chrono::steady_clock::duration since_last_cycle, std::chrono::milliseconds cycle) noexcept {
  return since_last_cycle <= std::max<std::chrono::steady_clock::duration>(kStalledMin, cycle * kStalledCycles);
}

// Failed first: a failed volume's IO thread still cycles, and its state does not come back.
DiskState disk_state(bool volume_failed, bool io_alive, bool no_room) noexcept {
  if (volume_failed) return DiskState::failed;
  if (!io_alive) return DiskState::stalled;
  if (no_room) return DiskState::full;
  return DiskState::in_service;
}

DiskHealth disk_health(const Disk& disk, std::chrono::steady_clock::time_point now) {
  DiskHealth h;
  if (!disk.io) return h;
  h.cycles = disk.io->cycles();
  const auto since = now - disk.io->last_cycle_at();
  h.last_cycle_age_s = std::max(0.0, std::chrono::duration<double>(since).count());
  h.io_alive = io_alive(since, disk.io->cycle_length());
  h.state = disk_state(disk.io->volume_failed(), h.io_alive, disk.no_room.load(std::memory_order_relaxed));
  switch (h.state) {
    case DiskState::failed: h.detail = disk.io->failure_reason(); break;
    case DiskState::stalled:
      h.detail = "the IO thread has not ended a cycle for " +
                 std::to_string(static_cast<long long>(h.last_cycle_age_s)) + " s";
      break;
    case DiskState::full:
      h.detail = "short of its reserve with nothing retention may reclaim: new recordings are refused";
      break;
    case DiskState::in_service: break;
  }
  return h;
}

}  // namespace vigil::server
