#pragma once
// One phase of "recording with background work X on / off" (the archive part of `vigil bench
// failover`, the real-device part of `vigil bench freeblock`): a fresh vigild in DIR (this disk's
// profile, short segments, the phase's own flags), K wire cameras recording H.264 in real time
// (bench/replay.*), and, while they record, an interactive reader exporting camera 0's last seconds
// (open segment included) over HTTP. Measured: every durable acknowledgement's delay (arrival −
// the capture time of the newest frame it makes durable), every export's time, and the change of
// the named /metrics counters (summed over disks). Phases of one comparison run back to back, so
// the host's drift hits both alike. Errors: exceptions (tool layer).
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "bench/replay.hpp"

namespace vigil::bench {

struct RecordingPhaseSpec {
  std::filesystem::path dir;      // created; vigild's data and volume go under it
  std::filesystem::path profile;  // the disk profile vigild admits with
  int cameras = 4;
  double seconds = 10;  // of recording
  int segment_max_s = 2;
  std::vector<std::string> vigild_flags;  // what the phase turns on or off
  std::vector<std::string> metrics;       // counters read at the start and the end
};

struct RecordingPhase {
  std::vector<double> ack_delay_ms;    // every durable acknowledgement, all cameras
  std::vector<double> interactive_ms;  // every export that succeeded (request → last byte)
  int interactive_failed = 0;
  std::uint64_t sent = 0, acked = 0;  // packets over all cameras
  double recorded_bytes = 0;          // bytes the cameras sent
  double seconds = 0;                 // wall time the cameras recorded
  std::map<std::string, double> metric_delta, metric_end;
  // Another round of the same phase: samples and totals added up.
  void add(const RecordingPhase& other);
};

RecordingPhase run_recording_phase(const RecordingPhaseSpec& spec, const ReplayClip& clip);

// The sum of every series of metric NAME in Prometheus text BODY (one per disk).
double metric_sum(const std::string& body, const std::string& name);

}  // namespace vigil::bench
