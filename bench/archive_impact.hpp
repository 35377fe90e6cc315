#pragma once
// The archive part of `vigil bench failover` (issue [L]; docs/archive.md): what copying closed
// segments to the S3 tier costs the recording, and how fast it copies. Recording phases
// (bench/recording_phase.*) with the archiver off and on (SeaweedFS on loopback, --archive-after
// 0), R rounds alternating: acknowledgement delays and interactive exports in each, and with the
// archiver on the bytes vigild reports copied per second. Then the archiver's own pace: each off
// phase's recording (uncopied) is copied by a vigild started again on it with the archiver on and
// nothing recording, timed until no closed segment lacks its copy.
// Errors: exceptions (tool layer). Without a SeaweedFS binary the part is skipped, saying so.
#include <filesystem>
#include <string>

#include "bench/recording_phase.hpp"
#include "common/progress.hpp"

namespace vigil::bench {

struct ArchiveImpactParams {
  std::filesystem::path dir;      // scratch base
  std::filesystem::path profile;  // the disk profile vigild admits with
  int cameras = 8;
  double rate_mbps = 2;
  double seconds = 30;  // of recording per phase
  int rounds = 1;       // off/on pairs
};

struct ArchiveImpactResult {
  std::string skipped;  // why the part did not run; empty when it ran
  RecordingPhase off, on;
  // The off phases' recordings copied afterwards by a vigild doing nothing else: the archiver's pace.
  double backlog_segments = 0, backlog_bytes = 0, backlog_seconds = 0;
};

ArchiveImpactResult measure_archive_impact(const ArchiveImpactParams& params, Progress& progress, double p0, double p1);

}  // namespace vigil::bench
