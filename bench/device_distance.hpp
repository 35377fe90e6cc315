#pragma once
// Seed 004's first question asked of THIS machine's device (research note §6, B6; docs/latency-map.md,
// "The real device"): does a small read's service time depend on its LBN distance from the last one
// at all? On a rotating disk it does (seed 004 Fig. 3: coefficient of linearity 0.57 SCSI, 0.42 SAS,
// non-monotonic); on an SSD or a virtio disk the research note expects no positional effect, and
// then a latency map can only learn noise. Two measurements, both O_DIRECT, one request in flight:
//   - distance: 4 KiB read at A (untimed), then a timed 4 KiB read at B = A ± d, d log-uniform from
//     4 KiB to the whole region; Pearson r of service time against |d|, and the time per distance
//     decade;
//   - what a map buys: a map learned over P positions (every ordered pair once, the bench's own
//     learning rule), then a queue of Q synchronous readers served FCFS and FSATF-MAP in
//     alternating rounds (so the device's drift hits both): the ops/s ratio.
// The region is a scratch file written in full first (an unwritten extent is answered by the file
// system without touching the device) or a block device read as it is.
// Errors: exceptions (tool layer), with the path and errno's text.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace vigil::bench {

struct DeviceDistanceParams {
  std::filesystem::path path;  // a block device or a file; a file is created and written if too small
  std::uint64_t region_bytes = 0;
  int distance_samples = 0;
  int map_positions = 0;      // P: the map is filled with P × P pair reads
  int queue_depth = 16;       // Q synchronous readers
  int order_completions = 0;  // per policy, split into alternating rounds
};

struct DistanceDecade {
  std::uint64_t from_bytes = 0;  // |d| in [from, 10 × from)
  int samples = 0;
  double median_us = 0;
  double p99_us = 0;
};

struct DeviceDistanceResult {
  double pearson_r = 0;  // service time against |d|
  double median_us = 0;  // all distance samples
  std::vector<DistanceDecade> decades;
  double fcfs_ops_per_s = 0;
  double fsatf_map_ops_per_s = 0;
  std::size_t map_cells = 0;
  double prefill_mb_per_s = 0;  // 0 for a block device (nothing written)
};

DeviceDistanceResult measure_device_distance(const DeviceDistanceParams& params);

}  // namespace vigil::bench
