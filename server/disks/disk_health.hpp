#pragma once
// A disk's health as /healthz and vigil_disk_state report it (docs/metrics.md, "Health"): in service,
// full, failed or stalled, read from the DiskSet's flags and the IO thread's atomics only — never
// a lock the IO thread holds, never the device — so a health check answers at once whatever the
// disk does. Thread: any. Errors: none.
#include <chrono>
#include <cstdint>
#include <string>

#include "server/disks/disk_set.hpp"

namespace vigil::server {

struct DiskHealth {
  DiskState state = DiskState::in_service;
  double last_cycle_age_s = 0;  // since the IO thread last ended a cycle
  std::uint64_t cycles = 0;     // cycles run since start
  bool io_alive = true;         // its cycles advance (a failed volume's IO thread still cycles)
  std::string detail;           // why, when not in service
  bool can_record() const noexcept { return state == DiskState::in_service; }
};

// The IO thread counts as stalled once its last cycle ended this many cycles (and at least
// kStalledMin) ago: a cycle overruns by a fraction of T under load, never by ten of them.
inline constexpr int kStalledCycles = 10;
inline constexpr std::chrono::seconds kStalledMin{10};

DiskHealth disk_health(const Disk& disk, std::chrono::steady_clock::time_point now);

// The rule itself, for disk_health and its tests: an IO thread whose last cycle ended
// SINCE_LAST_CYCLE ago, with cycles of CYCLE, is alive; a disk's state from its flags.
bool io_alive(std::chrono::steady_clock::duration since_last_cycle, std::chrono::milliseconds cycle) noexcept;
DiskState disk_state(bool volume_failed, bool io_alive, bool no_room) noexcept;

}  // namespace vigil::server
