#pragma once
// HddModel: the timing of a spinning disk, in virtual time, behind SimulatedDisk's TimingModel
// seam (docs/scheduler.md, "The simulated hard disk"). Everything that depends on seeks and
// rotation — the cycle scheduler's C-LOOK order, Semi-preemptible IO's chunking, JIT-seek and
// seek splitting, admission's curves — is tested and benchmarked on it, because the machine's
// own disk is an SSD-like virtio device.
//
// What it models (thesis §3.2–3.4 and §4.2; seed 001 App. A for the HP C2247):
//  - zoned geometry: LBA → (cylinder, head, sector) over zones of constant sectors per track,
//    outer zone first; heads = tracks per cylinder;
//  - the seek curve t(d) = settle + a·√d for d < knee, b + c·d beyond (d in cylinders), 0 for d = 0;
//  - rotation: the platter angle is a function of absolute virtual time (period T_rot), so
//    rotational delay depends on when a command starts — which is what makes JIT-seek work;
//  - track and cylinder switches (head switch / cylinder step times) during long transfers,
//    with skews so that a sequential transfer continues without a lost rotation; a command on
//    another track of the arm's cylinder pays a head switch instead of a seek;
//  - per-command overhead; the host bus rate for transfers served from the disk's cache;
//  - read-ahead cache: after a read the disk keeps reading sequentially into a cache segment
//    (up to segment size); a read that continues it is served from the cache at bus rate for
//    what is already there, and from the media without seek or rotation for the rest;
//  - write buffer: a non-durable write that fits completes when its data is in the buffer; the
//    disk destages it afterwards (seek + rotation + media transfer), and the next command waits
//    for the destage ("external waiting", thesis §4.2.1). A durable (FUA) write completes only
//    when it and everything buffered before it is on the media;
//  - optional jitter: a uniform random extra delay in [0, jitter] per command from a seeded
//    generator, so the same seed gives the same trace.
// Thread: the simulated disk's thread. Errors: none once built (a pure model; out-of-range
// offsets are clamped to the last sector); the constructor throws std::invalid_argument for a
// geometry without zones or heads.
#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "storage/simulated_disk.hpp"

namespace vigil::storage {

struct HddZone {
  std::uint32_t cylinders = 0;
  std::uint32_t sectors_per_track = 0;
};

struct SeekCurve {
  Nanos settle{0};            // t(1) ≈ settle + a
  double sqrt_us = 0;         // a: µs per √cylinder, below the knee
  std::uint32_t knee = 1;     // cylinders
  double linear_base_us = 0;  // b
  double linear_us = 0;       // c: µs per cylinder, from the knee on
};

struct HddGeometry {
  std::string name;
  std::uint32_t sector_bytes = 512;
  std::uint32_t heads = 2;     // tracks per cylinder
  std::vector<HddZone> zones;  // outermost (fastest) first
  Nanos rotation{8'333'333};   // T_rot (7,200 rpm)
  Nanos head_switch{800'000};
  Nanos cylinder_switch{1'000'000};
  SeekCurve seek{};
  Nanos command_overhead{100'000};
  double bus_bytes_per_s = 80e6;  // cache ↔ host
  std::uint32_t cache_segments = 3;
  std::uint32_t cache_segment_sectors = 561;
  std::uint32_t write_buffer_sectors = 561;
  Nanos jitter{0};
  std::uint64_t seed = 1;
};

// Calibrated presets: "st39102lw", "st318437lw", "wd400bb", "hp_c2247", and the seed drives
// "atlas10k" (seeds 000/003) and "st373207lw" (seed 004); docs/scheduler.md lists their sources. Throws std::invalid_argument for an unknown name.
HddGeometry hdd_preset(std::string_view name);
std::vector<std::string> hdd_preset_names();

// Where the heads are: the arm's cylinder and the surface (head) last read or written.
struct HeadPosition {
  std::uint32_t cylinder = 0;
  std::uint32_t head = 0;
  bool operator==(const HeadPosition&) const = default;
};

// Where a media access's time goes, from the moment the disk starts the command: the command
// overhead, the arm's move (a seek to another cylinder, or a head switch within the arm's
// cylinder), the wait on the destination track until the first sector arrives (rotational
// latency: what freeblock scheduling fills, docs/freeblock.md), then the media transfer.
struct Positioning {
  Nanos overhead{0}, seek{0}, head_switch{0}, rotation{0}, transfer{0};
  Nanos positioning() const noexcept { return seek + head_switch + rotation; }
  Nanos transfer_start() const noexcept { return overhead + positioning(); }  // after the command's start
  Nanos total() const noexcept { return transfer_start() + transfer; }
};

// One track: its place, size and first sector (a device sector number, LBA order).
struct HddTrack {
  HeadPosition position;
  std::uint32_t sectors = 0;
  std::uint64_t first_sector = 0;
};

class HddModel final : public TimingModel {
 public:
  explicit HddModel(HddGeometry geometry);

  Nanos service_time(const TimedCommand& cmd) override;

  const HddGeometry& geometry() const noexcept { return g_; }
  std::uint64_t capacity_bytes() const noexcept;
  std::uint32_t cylinders() const noexcept;

  // --- predictions for the scheduler (no state change, no jitter) ---
  std::uint32_t cylinder_of(std::uint64_t offset) const noexcept;
  std::uint64_t offset_of_cylinder(std::uint32_t cylinder) const noexcept;  // first byte of it
  std::uint32_t head_cylinder() const noexcept;                             // where the arm is after the last command
  Nanos seek_time(std::uint32_t distance) const noexcept;
  // Rotational delay a read or write of OFFSET would see if the disk started it at START
  // (after the seek from head_cylinder(), overhead included in the timeline).
  Nanos predicted_rotational_delay(std::uint64_t offset, Nanos start) const noexcept;
  // Overhead + seek + rotational delay for a command at OFFSET started at START.
  Nanos predicted_access(std::uint64_t offset, Nanos start) const noexcept;
  // Media rate of OFFSET's zone, bytes per second: the sustained rate of a long sequential
  // transfer, spt × sector_bytes / (T_rot + the mean head/cylinder switch per track) — what a
  // multi-track read is charged, and what thesis chapter 4 quotes (24.3–41.7 MB/s for the
  // ST318437LW, whose within-track rate spt × sector_bytes / T_rot is 26.9–46.2 MB/s).
  double media_rate(std::uint64_t offset) const noexcept;

  // --- the head's state and exact positioning, for freeblock planning (no state change) ---
  HeadPosition head_position() const noexcept { return {head_cyl_, head_surface_}; }
  HeadPosition position_of(std::uint64_t offset) const noexcept;  // the track OFFSET lies on
  // The arm's move between two tracks: the seek between their cylinders, or a head switch
  // within one cylinder, or nothing.
  Nanos move_time(HeadPosition from, HeadPosition to) const noexcept;
  // A media access of BYTES at OFFSET started at START with the heads at FROM, exactly as
  // service_time charges it when no cache is involved: a read that does not continue the
  // read-ahead, or a durable write, with no write-back pending. Jitter is not predicted.
  Positioning predict(HeadPosition from, std::uint64_t offset, std::size_t bytes, Nanos start) const noexcept;
  // True when a read at OFFSET would continue the read-ahead (served from the cache: predict's
  // figures do not apply).
  bool continues_read_ahead(std::uint64_t offset) const noexcept { return offset == prefetch_from_; }
  // True while buffered writes are still being written to the media at AT (the next command
  // waits for them, which predict does not charge).
  bool write_back_pending(Nanos at) const noexcept { return destage_done_ > at; }
  std::uint64_t tracks() const noexcept { return static_cast<std::uint64_t>(cylinders()) * g_.heads; }
  HddTrack track(HeadPosition position) const noexcept;
  // When sector SECTOR (index within TRACK) next begins to pass under the head, at or after AT.
  Nanos sector_arrival(const HddTrack& track, std::uint32_t sector, Nanos at) const noexcept;
  // The index within TRACK of the first sector that begins to pass under the head at or after AT.
  std::uint32_t next_sector(const HddTrack& track, Nanos at) const noexcept;

 private:
  struct Place {
    std::uint32_t cylinder, head, sector;
    std::uint32_t sectors_per_track;
    std::size_t zone;
  };
  Place locate(std::uint64_t offset) const noexcept;
  // Absolute angle of the sector under the head at time T, in fractions of a rotation [0, 1).
  double angle_at(Nanos t) const noexcept;
  double sector_angle(const Place& p) const noexcept;                            // includes track/cylinder skew
  Nanos media_transfer(std::uint64_t offset, std::size_t bytes) const noexcept;  // incl. switches
  Nanos rotate_to(const Place& p, Nanos at) const noexcept;  // wait until P's sector is under the head
  Nanos next_jitter();
  std::uint32_t distance_to(std::uint32_t cylinder) const noexcept;  // seek distance from the arm
  void move_heads_to(std::uint64_t offset) noexcept;                 // the heads end on OFFSET's track
  Nanos switch_before(std::uint64_t offset) const noexcept;          // head/cylinder switch if OFFSET starts a track
  // The pieces of service_time: each takes the time the disk starts the work (after overhead
  // and any earlier write-back), updates the state and returns when the command completes.
  Nanos access(std::uint64_t offset, Nanos t) const noexcept;  // when OFFSET's transfer can begin
  Nanos access_and_transfer(std::uint64_t offset, std::size_t bytes, Nanos t);
  void destage(std::uint64_t offset, std::size_t bytes, Nanos t);
  Nanos buffer_space_at(Nanos in_buffer) const noexcept;
  Nanos read(std::uint64_t offset, std::size_t bytes, Nanos t);
  Nanos read_ahead(std::uint64_t offset, std::size_t bytes, Nanos t);
  Nanos write(const TimedCommand& cmd, std::size_t bytes, Nanos t);
  Nanos append_to_destage(const TimedCommand& cmd, std::size_t bytes);  // starts at cmd.start

  HddGeometry g_;
  std::vector<std::uint64_t> zone_first_sector_;
  std::vector<std::uint32_t> zone_first_cylinder_;
  std::uint64_t total_sectors_ = 0;
  std::uint32_t head_cyl_ = 0;
  std::uint32_t head_surface_ = 0;  // the head of the last track read or written
  // read-ahead: the one sequential stream the cache is following. Only one segment is modelled
  // (cache_segment_sectors bounds the prefetch; cache_segments is not used): any command other
  // than the read continuing the stream cancels the prefetch.
  std::uint64_t prefetch_from_ = UINT64_MAX;  // byte offset the next sequential read would start at
  Nanos prefetch_since_{0};                   // when prefetching from prefetch_from_ began
  // write buffer: destage of buffered writes in progress
  Nanos destage_start_{0};  // when its media transfer began (after the seek and rotation)
  Nanos destage_done_{0};
  std::uint64_t destage_bytes_ = 0;          // bytes of that write-back run
  std::uint64_t buffered_end_ = UINT64_MAX;  // byte offset after the last buffered write
  std::mt19937_64 rng_;
};

// A timing-only simulated hard disk (no data kept) of GEOMETRY on its own virtual clock: what
// the scheduler's benchmarks, the profiler's `sim:PRESET` and their tests run on.
struct SimulatedHdd {
  explicit SimulatedHdd(HddGeometry geometry, std::uint32_t block_bytes = 512);
  VirtualClock clock;
  HddModel* model = nullptr;   // owned by disk
  std::uint64_t capacity = 0;  // usable bytes (4 KiB multiple)
  std::unique_ptr<SimulatedDisk> disk;
};

}  // namespace vigil::storage
