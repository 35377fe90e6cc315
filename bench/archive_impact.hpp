#pragma once
// The archive part of `vigil bench failover` (issue [L]; docs/archive.md): what copying closed
// segments to the S3 tier costs the recording, and how fast it copies. K wire cameras record in
// real time (bench/replay.*) into a vigild with short segments, once with the archiver off and once
// on (SeaweedFS on loopback, --archive-after 0), R rounds alternating so the host's drift hits both
// phases alike. Per phase: every durable acknowledgement's delay (ack arrival − the newest
// acknowledged frame's send time: how long recording takes to make a frame durable), and, with the
// archiver on, the bytes and segments vigild reports copied (/metrics) per second. Then the
// archiver's own pace: each off phase's recording (uncopied) is copied by a vigild started again on
// it with the archiver on and nothing recording, timed until no closed segment lacks its copy.
// Errors: exceptions (tool layer). Without a SeaweedFS binary the part is skipped, saying so.
#include <filesystem>
#include <string>
#include <vector>

#include "common/progress.hpp"

namespace vigil::bench {

struct ArchiveImpactParams {
  std::filesystem::path dir;      // scratch base
  std::filesystem::path profile;  // the disk profile vigild admits with
  int cameras = 8;
  double rate_mbps = 2;
  double seconds = 30;  // of recording per phase
  int rounds = 1;       // off/on pairs
  int segment_max_s = 2;
};

struct ArchivePhase {
  std::vector<double> ack_delay_ms;
  std::uint64_t sent = 0, acked = 0;  // packets, over all cameras
  double recorded_bytes = 0;          // bytes the cameras sent
  double archived_bytes = 0, archived_segments = 0, failures = 0;
  double seconds = 0;  // wall time the cameras recorded
};

struct ArchiveImpactResult {
  std::string skipped;  // why the part did not run; empty when it ran
  ArchivePhase off, on;
  double lag_s_at_end = 0;  // vigil_archive_lag_seconds when the last on-phase ended
  // The off phases' recordings copied afterwards by a vigild doing nothing else: the archiver's pace.
  double backlog_segments = 0, backlog_bytes = 0, backlog_seconds = 0;
};

ArchiveImpactResult measure_archive_impact(const ArchiveImpactParams& params, Progress& progress, double p0, double p1);

}  // namespace vigil::bench
