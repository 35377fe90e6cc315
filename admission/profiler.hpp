#pragma once
// The disk profiler (Diskbench, thesis §3.3): measures a Device and returns its DiskProfile.
// Works on any Device: a FileDevice (real time, SteadyClock) or a SimulatedDisk with the HDD
// model (virtual time), so the same code profiles the machine's disk and `sim:PRESET`.
// It writes only inside [region_offset, region_offset + region_bytes) of the device.
// Thread: the caller's (it owns the device while it runs). Errors: throws std::runtime_error
// naming the failed command.
#include <functional>
#include <string>

#include "admission/profile.hpp"
#include "storage/device.hpp"

namespace vigil::admission {

struct ProfileOptions {
  bool quick = false;  // < 1 minute on this machine's disk: fewer sizes and repetitions
  bool full = false;   // add the sustained-write run (write-cache cliffs)
  double sustained_seconds = 60;
  std::uint64_t region_offset = 0;
  std::uint64_t region_bytes = 0;  // 0: from region_offset to the end of the device
  std::uint64_t seed = 1;
  double cycle_s = 1.0;  // the admission curve is measured as sweeps of one cycle's IOs
  // Write the whole region once first: reads of never-written blocks of a fresh (fallocated)
  // file are answered by the filesystem without touching the device.
  bool prefill = false;
};

// FRACTION in [0, 1] and the phase being measured.
using ProfileProgress = std::function<void(double fraction, const std::string& phase)>;

DiskProfile profile_device(storage::Device& device, const storage::Clock& clock, const ProfileOptions& options,
                           const ProfileProgress& progress = {});

}  // namespace vigil::admission
