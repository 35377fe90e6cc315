#include "storage/hdd_model.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace vigil::storage {
namespace {

using namespace std::chrono_literals;

Nanos from_us(double us) { return Nanos(static_cast<std::int64_t>(std::llround(us * 1000.0))); }
double to_s(Nanos t) { return static_cast<double>(t.count()) / 1e9; }
Nanos from_s(double s) { return Nanos(static_cast<std::int64_t>(std::llround(s * 1e9))); }

// Zones from cylinder ranges [first, last] and track sizes, outer zone first.
std::vector<HddZone> zones_from_ranges(std::initializer_list<std::array<std::uint32_t, 3>> rows) {
  std::vector<HddZone> out;
  for (const auto& r : rows) out.push_back({r[1] - r[0] + 1, r[2]});
  return out;
}

// Equal-width zones with track sizes falling linearly from OUTER to INNER sectors.
std::vector<HddZone> linear_zones(std::uint32_t zones, std::uint32_t cylinders, std::uint32_t outer,
                                  std::uint32_t inner) {
  std::vector<HddZone> out;
  for (std::uint32_t z = 0; z < zones; ++z) {
    const double f = zones == 1 ? 0 : static_cast<double>(z) / (zones - 1);
    const double spt = outer + (static_cast<double>(inner) - outer) * f;
    out.push_back({cylinders / zones, static_cast<std::uint32_t>(std::lround(spt))});
  }
  out.back().cylinders += cylinders % zones;  // the remainder, so the disk has CYLINDERS in all
  return out;
}

}  // namespace

HddGeometry hdd_preset(std::string_view name) {
  HddGeometry g;
  g.name = std::string(name);
  if (name == "st318437lw") {
    // Seagate Barracuda 36ES, 18.4 GB, 7,200 rpm: the disk of thesis chapter 4. Zones: Table 3.3
    // (29,851 cylinders × 2 heads, 750 → 437 sectors per track; sustained 42.1 → 24.5 MB/s
    // against chapter 4's 41.7 → 24.3). T_rot: Table 3.1. Head switch ≈ H (~650 µs), cylinder
    // switch ≈ γ(1) (~980 µs), Table 3.3. Seek: linear piece through §4.1.1's points
    // (10,000 cylinders = 9 ms, 20,000 = 14 ms), √ piece from γ(1) = 0.98 ms to meet it at an
    // assumed knee of 2,000 cylinders; full stroke 18.9 ms ("up to ~20 ms"). Cache 16 × 204
    // blocks (§8.4 digest), write buffer one segment; 100 µs overhead and an 80 MB/s bus assumed.
    g.heads = 2;
    g.zones = zones_from_ranges({{0, 4553, 750},
                                 {4554, 6582, 687},
                                 {6583, 8247, 678},
                                 {8248, 11554, 666},
                                 {11555, 14597, 625},
                                 {14598, 17370, 600},
                                 {17371, 19908, 583},
                                 {19909, 22226, 550},
                                 {22227, 26338, 500},
                                 {26339, 28170, 458},
                                 {28171, 29850, 437}});
    g.rotation = from_us(8305.83);
    g.head_switch = 650us;
    g.cylinder_switch = 980us;
    g.seek = {.settle = from_us(888), .sqrt_us = 91.9, .knee = 2000, .linear_base_us = 4000, .linear_us = 0.5};
    g.command_overhead = 100us;
    g.bus_bytes_per_s = 80e6;
    g.cache_segments = 16;
    g.cache_segment_sectors = 204;
    g.write_buffer_sectors = 204;
  } else if (name == "st39102lw") {
    // Seagate Cheetah 9LP, 9.1 GB, 10,000 rpm, 12 heads. Zones: Table 3.2. T_rot: Table 3.1.
    // Switches: Table 3.4 skew steps (head: 755/840 µs alternating, 800 µs = their mean; cylinder
    // 1062 µs), giving 19.1 MB/s in zone 1 against 18.85 measured (Table 3.2). Seek: γ(1) ≈ 1.1 ms
    // and "max seek < 2 × T_rot" (11.5 ms full stroke; knee and shape assumed). Cache 3 × 561
    // blocks, write buffer one segment. 100 µs overhead and an 80 MB/s bus (Ultra2 SCSI) assumed.
    g.heads = 12;
    g.zones = zones_from_ranges({{0, 847, 254},
                                 {848, 1644, 245},
                                 {1645, 2393, 238},
                                 {2394, 3097, 227},
                                 {3098, 3758, 217},
                                 {3759, 4380, 209},
                                 {4381, 4965, 201},
                                 {4966, 5515, 189},
                                 {5516, 6031, 181},
                                 {6032, 6517, 174},
                                 {6518, 6961, 167}});
    g.rotation = from_us(5972.56);
    g.head_switch = 800us;
    g.cylinder_switch = 1062us;
    g.seek = {.settle = from_us(978), .sqrt_us = 129.7, .knee = 1500, .linear_base_us = 4490, .linear_us = 1.007};
    g.command_overhead = 100us;
    g.bus_bytes_per_s = 80e6;
    g.cache_segments = 3;
    g.cache_segment_sectors = 561;
    g.write_buffer_sectors = 561;
  } else if (name == "wd400bb") {
    // WD400BB-like IDE disk, 40 GB, 7,200 rpm (thesis §3.4.11: 31 MB/s outer, 21 MB/s inner).
    // Assumed: 2 heads × 81,550 cylinders, 10 equal zones from 571 to 387 sectors per track
    // (31 → 21 MB/s with the switch times); 1.0/1.2 ms head/cylinder switches (close together,
    // as Fig. 3.15 found track skew ≈ cylinder skew); 2 ms track-to-track and 21 ms full-stroke
    // seeks; 300 µs command overhead (IDE), 100 MB/s bus (ATA/100), the 2 MB cache as
    // 8 × 512-sector segments and a 1 MB write buffer.
    g.heads = 2;
    g.zones = linear_zones(10, 81550, 571, 387);
    g.rotation = from_us(8333.33);
    g.head_switch = 1000us;
    g.cylinder_switch = 1200us;
    g.seek = {.settle = from_us(1939), .sqrt_us = 60.6, .knee = 10000, .linear_base_us = 6183, .linear_us = 0.1817};
    g.command_overhead = 300us;
    g.bus_bytes_per_s = 100e6;
    g.cache_segments = 8;
    g.cache_segment_sectors = 512;
    g.write_buffer_sectors = 2048;
  } else if (name == "hp_c2247") {
    // HP C2247 (seed 001, Table 4.1 and Appendix A): 5,400 rpm, 13 surfaces, zones of Table A.2.
    // Its 914 reserved and spare tracks are not modelled (HddZone has whole cylinders only), so
    // the capacity is 2,132,208 sectors, 3.8 % above the 2,054,864 usable ones. Within-track
    // rates 4.42 → 2.58 MB/s as in the source; media_rate() is lower (3.81 → 2.23) because the
    // switch times are zone 1's skews (14 and 32 sectors of 96), which a sequential transfer
    // loses at each track. Seek: Table A.3's 3.81 + 0.33·√D ms up to 300 cylinders and
    // 7.75 + 0.0059·D beyond; its irregular 1–10-cylinder region is not modelled (1 cylinder
    // costs 4.14 ms here, 2.69 ms in the table). 256 KB cache as 2 × 256 sectors; 700 µs
    // overhead and a 10 MB/s SCSI-2 bus are assumed; the host's 3.01/2.74 MB/s cap is the
    // host's, not the disk's, and is not modelled.
    g.heads = 13;
    g.zones = zones_from_ranges({{0, 558, 96},
                                 {559, 760, 92},
                                 {761, 901, 88},
                                 {902, 1051, 84},
                                 {1052, 1193, 80},
                                 {1194, 1519, 72},
                                 {1520, 1793, 64},
                                 {1794, 2050, 56}});
    g.rotation = from_us(11111.1);
    g.head_switch = from_us(11111.1 * 14 / 96);
    g.cylinder_switch = from_us(11111.1 * 32 / 96);
    g.seek = {.settle = from_us(3810), .sqrt_us = 330, .knee = 300, .linear_base_us = 7750, .linear_us = 5.9};
    g.command_overhead = from_us(700);
    g.bus_bytes_per_s = 10e6;
    g.cache_segments = 2;
    g.cache_segment_sectors = 256;
    g.write_buffer_sectors = 256;
  } else if (name == "atlas10k") {
    // Quantum Atlas 10K, 9 GB (seeds 000 and 003): 10,025 rpm, 10,042 cylinders, 6 heads,
    // 334 → 229 sectors per track, 5.0 ms average seek (seed 003 Table 2); 0.8 ms head switch
    // (seed 000 Table 1). The zones are 24 equal bands falling linearly (the count of DiskSim's
    // Atlas 10K model; its per-zone table is not in the seeds). Seek: γ(1) = 1.0 ms and a
    // 10.8 ms full stroke assumed, √ piece meeting the linear one at 1,500 cylinders, fitted so
    // that the mean over random sector pairs is 5.0 ms. Cylinder switch 1.0 ms (≈ γ(1)),
    // 2 MB cache as 8 × 512 sectors, 100 µs overhead and an 80 MB/s Ultra2 bus assumed.
    g.heads = 6;
    g.zones = linear_zones(24, 10042, 334, 229);
    g.rotation = from_us(60e6 / 10025);
    g.head_switch = 800us;
    g.cylinder_switch = 1000us;
    g.seek = {.settle = from_us(933.5), .sqrt_us = 66.51, .knee = 1500, .linear_base_us = 2229, .linear_us = 0.8536};
    g.command_overhead = 100us;
    g.bus_bytes_per_s = 80e6;
    g.cache_segments = 8;
    g.cache_segment_sectors = 512;
    g.write_buffer_sectors = 1024;
  } else if (name == "st373207lw") {
    // Seagate Cheetah 10K.7 ST373207LW, 73 GB (seed 004 Table I): 10,000 rpm, 4.9 ms average
    // seek. Not in the seed, assumed: 4 heads × 50,000 cylinders in 16 equal zones falling
    // linearly from 940 to 500 sectors per track (73.7 GB; within-track 80 → 43 MB/s);
    // γ(1) = 0.6 ms, 10.0 ms full stroke, knee at 15,000 cylinders, fitted so that the mean
    // over random sector pairs is 4.9 ms; 0.5/0.6 ms head/cylinder switches; 8 MB cache as
    // 16 × 1,024 sectors; 100 µs overhead; a 320 MB/s Ultra320 bus.
    g.heads = 4;
    g.zones = linear_zones(16, 50000, 940, 500);
    g.rotation = from_us(6000);
    g.head_switch = 500us;
    g.cylinder_switch = 600us;
    g.seek = {.settle = from_us(564.5), .sqrt_us = 35.54, .knee = 15000, .linear_base_us = 2739, .linear_us = 0.14523};
    g.command_overhead = 100us;
    g.bus_bytes_per_s = 320e6;
    g.cache_segments = 16;
    g.cache_segment_sectors = 1024;
    g.write_buffer_sectors = 2048;
  } else {
    throw std::invalid_argument("unknown disk preset '" + std::string(name) +
                                "' (st318437lw, st39102lw, wd400bb, hp_c2247, atlas10k, st373207lw)");
  }
  return g;
}

std::vector<std::string> hdd_preset_names() {
  return {"atlas10k", "hp_c2247", "st318437lw", "st373207lw", "st39102lw", "wd400bb"};
}

HddModel::HddModel(HddGeometry geometry) : g_(std::move(geometry)), rng_(g_.seed) {
  if (g_.zones.empty() || g_.heads == 0) throw std::invalid_argument("HddModel: no zones");
  std::uint64_t sector = 0;
  std::uint32_t cyl = 0;
  for (const auto& z : g_.zones) {
    zone_first_sector_.push_back(sector);
    zone_first_cylinder_.push_back(cyl);
    sector += static_cast<std::uint64_t>(z.cylinders) * g_.heads * z.sectors_per_track;
    cyl += z.cylinders;
  }
  total_sectors_ = sector;
}

std::uint64_t HddModel::capacity_bytes() const noexcept { return total_sectors_ * g_.sector_bytes; }

std::uint32_t HddModel::cylinders() const noexcept { return zone_first_cylinder_.back() + g_.zones.back().cylinders; }

HddModel::Place HddModel::locate(std::uint64_t offset) const noexcept {
  const std::uint64_t sector = std::min(offset / g_.sector_bytes, total_sectors_ - 1);
  const auto it = std::upper_bound(zone_first_sector_.begin(), zone_first_sector_.end(), sector);
  const std::size_t z = static_cast<std::size_t>(it - zone_first_sector_.begin()) - 1;
  const std::uint32_t spt = g_.zones[z].sectors_per_track;
  const std::uint64_t rel = sector - zone_first_sector_[z];
  const std::uint64_t per_cyl = static_cast<std::uint64_t>(spt) * g_.heads;
  const auto cyl = static_cast<std::uint32_t>(zone_first_cylinder_[z] + rel / per_cyl);
  const std::uint64_t in_cyl = rel % per_cyl;
  return {cyl, static_cast<std::uint32_t>(in_cyl / spt), static_cast<std::uint32_t>(in_cyl % spt), spt, z};
}

std::uint32_t HddModel::cylinder_of(std::uint64_t offset) const noexcept { return locate(offset).cylinder; }

std::uint64_t HddModel::offset_of_cylinder(std::uint32_t cylinder) const noexcept {
  cylinder = std::min(cylinder, cylinders() - 1);
  const auto it = std::upper_bound(zone_first_cylinder_.begin(), zone_first_cylinder_.end(), cylinder);
  const std::size_t z = static_cast<std::size_t>(it - zone_first_cylinder_.begin()) - 1;
  const std::uint64_t per_cyl = static_cast<std::uint64_t>(g_.zones[z].sectors_per_track) * g_.heads;
  return (zone_first_sector_[z] + (cylinder - zone_first_cylinder_[z]) * per_cyl) * g_.sector_bytes;
}

std::uint32_t HddModel::head_cylinder() const noexcept { return head_cyl_; }

Nanos HddModel::seek_time(std::uint32_t d) const noexcept {
  if (d == 0) return Nanos(0);
  if (d < g_.seek.knee) return g_.seek.settle + from_us(g_.seek.sqrt_us * std::sqrt(static_cast<double>(d)));
  return from_us(g_.seek.linear_base_us + g_.seek.linear_us * d);
}

double HddModel::angle_at(Nanos t) const noexcept {
  return static_cast<double>(t.count() % g_.rotation.count()) / static_cast<double>(g_.rotation.count());
}

// Each track starts where the head is when the switch onto it ends, so a sequential transfer
// crosses a track boundary losing only the switch time (track and cylinder skew).
double HddModel::sector_angle(const Place& p) const noexcept {
  const double cyl = p.cylinder, tracks_before = static_cast<double>(p.cylinder) * g_.heads + p.head;
  const double skew_ns = cyl * static_cast<double>(g_.cylinder_switch.count()) +
                         (tracks_before - cyl) * static_cast<double>(g_.head_switch.count());
  const double a =
      skew_ns / static_cast<double>(g_.rotation.count()) + static_cast<double>(p.sector) / p.sectors_per_track;
  return a - std::floor(a);
}

Nanos HddModel::rotate_to(const Place& p, Nanos at) const noexcept {
  double d = sector_angle(p) - angle_at(at);
  if (d < 0) d += 1;
  return Nanos(static_cast<std::int64_t>(d * static_cast<double>(g_.rotation.count())));
}

Nanos HddModel::media_transfer(std::uint64_t offset, std::size_t bytes) const noexcept {
  // Track by track: a full track is one rotation, a partial one its share; between tracks a
  // head or cylinder switch.
  Nanos t{0};
  std::uint64_t sector = offset / g_.sector_bytes;
  std::uint64_t left = (bytes + g_.sector_bytes - 1) / g_.sector_bytes;
  bool first = true;
  while (left > 0) {
    const Place p = locate(sector * g_.sector_bytes);
    if (!first) t += p.head == 0 ? g_.cylinder_switch : g_.head_switch;
    first = false;
    const std::uint64_t here = std::min<std::uint64_t>(left, p.sectors_per_track - p.sector);
    t += Nanos(static_cast<std::int64_t>(static_cast<double>(g_.rotation.count()) * static_cast<double>(here) /
                                         p.sectors_per_track));
    left -= here;
    sector += here;
    if (sector >= total_sectors_) break;
  }
  return t;
}

double HddModel::media_rate(std::uint64_t offset) const noexcept {
  const Place p = locate(offset);
  // Per track, on average: heads − 1 head switches and one cylinder switch per cylinder.
  const double avg_switch =
      (static_cast<double>(g_.heads - 1) * to_s(g_.head_switch) + to_s(g_.cylinder_switch)) / g_.heads;
  return static_cast<double>(p.sectors_per_track) * g_.sector_bytes / (to_s(g_.rotation) + avg_switch);
}

Nanos HddModel::predicted_rotational_delay(std::uint64_t offset, Nanos start) const noexcept {
  return predict(head_position(), offset, g_.sector_bytes, start).rotation;
}

Nanos HddModel::predicted_access(std::uint64_t offset, Nanos start) const noexcept {
  return predict(head_position(), offset, g_.sector_bytes, start).transfer_start();
}

HeadPosition HddModel::position_of(std::uint64_t offset) const noexcept {
  const Place p = locate(offset);
  return {p.cylinder, p.head};
}

Nanos HddModel::move_time(HeadPosition from, HeadPosition to) const noexcept {
  if (from.cylinder != to.cylinder) {
    return seek_time(static_cast<std::uint32_t>(std::abs(static_cast<std::int64_t>(to.cylinder) - from.cylinder)));
  }
  return from.head == to.head ? Nanos(0) : g_.head_switch;
}

Positioning HddModel::predict(HeadPosition from, std::uint64_t offset, std::size_t bytes, Nanos start) const noexcept {
  const Place p = locate(offset);
  Positioning out;
  out.overhead = g_.command_overhead;
  const Nanos move = move_time(from, {p.cylinder, p.head});
  (from.cylinder != p.cylinder ? out.seek : out.head_switch) = move;
  out.rotation = rotate_to(p, start + out.overhead + move);
  out.transfer = media_transfer(offset, std::max<std::size_t>(bytes, g_.sector_bytes));
  return out;
}

HddTrack HddModel::track(HeadPosition position) const noexcept {
  const std::uint64_t first = offset_of_cylinder(position.cylinder) / g_.sector_bytes;
  const Place p = locate(first * g_.sector_bytes);
  return {position, p.sectors_per_track, first + static_cast<std::uint64_t>(position.head) * p.sectors_per_track};
}

Nanos HddModel::sector_arrival(const HddTrack& track, std::uint32_t sector, Nanos at) const noexcept {
  const Place p = locate((track.first_sector + sector) * g_.sector_bytes);
  return at + rotate_to(p, at);
}

std::uint32_t HddModel::next_sector(const HddTrack& track, Nanos at) const noexcept {
  const Place first = locate(track.first_sector * g_.sector_bytes);
  double pos = angle_at(at) - sector_angle(first);  // sectors of the track passed since sector 0, in rotations
  if (pos < 0) pos += 1;
  auto s = static_cast<std::uint32_t>(std::ceil(pos * track.sectors)) % track.sectors;
  // Rounding may name a sector that began a hair before AT: take the one after it.
  if (sector_arrival(track, s, at) - at > g_.rotation - g_.rotation / (2 * track.sectors)) s = (s + 1) % track.sectors;
  return s;
}

Nanos HddModel::next_jitter() {
  if (g_.jitter.count() <= 0) return Nanos(0);
  std::uniform_int_distribution<std::int64_t> d(0, g_.jitter.count());
  return Nanos(d(rng_));
}

std::uint32_t HddModel::distance_to(std::uint32_t cylinder) const noexcept {
  return static_cast<std::uint32_t>(std::abs(static_cast<std::int64_t>(cylinder) - head_cyl_));
}

void HddModel::move_heads_to(std::uint64_t offset) noexcept {
  const Place p = locate(offset);
  head_cyl_ = p.cylinder;
  head_surface_ = p.head;
}

// The head or cylinder switch in front of OFFSET when a transfer runs into it from the
// sector before (none inside a track).
Nanos HddModel::switch_before(std::uint64_t offset) const noexcept {
  const Place p = locate(offset);
  if (p.sector != 0 || offset < g_.sector_bytes) return Nanos(0);
  return p.head == 0 ? g_.cylinder_switch : g_.head_switch;
}

// Seek + rotational delay from the arm's current place, starting at T: when the transfer of
// OFFSET can begin.
Nanos HddModel::access(std::uint64_t offset, Nanos t) const noexcept {
  const Place p = locate(offset);
  t += move_time(head_position(), {p.cylinder, p.head});
  return t + rotate_to(p, t);
}

// Positioning + media transfer, starting at T; moves the arm.
Nanos HddModel::access_and_transfer(std::uint64_t offset, std::size_t bytes, Nanos t) {
  t = access(offset, t) + media_transfer(offset, bytes);
  move_heads_to(offset + bytes - 1);
  return t;
}

// The media write of buffered data, starting at T (the disk does it on its own).
void HddModel::destage(std::uint64_t offset, std::size_t bytes, Nanos t) {
  destage_start_ = access(offset, t);
  destage_done_ = access_and_transfer(offset, bytes, t);
  destage_bytes_ = bytes;
}

// When a non-durable write whose data is in the buffer at IN_BUFFER completes: at once if the
// write-back run in progress (destage_bytes_, written from destage_start_ to destage_done_)
// fits the buffer, else once only a buffer's worth of it is left to write (thesis §4.2.1,
// footnote 4), reckoning the run's progress in proportion to its time, switches included.
Nanos HddModel::buffer_space_at(Nanos in_buffer) const noexcept {
  const double buffer = static_cast<double>(g_.write_buffer_sectors) * g_.sector_bytes;
  const auto run_bytes = static_cast<double>(destage_bytes_);
  if (run_bytes <= buffer) return in_buffer;
  const auto run = static_cast<double>((destage_done_ - destage_start_).count());
  return std::max(in_buffer, destage_done_ - Nanos(static_cast<std::int64_t>(run * buffer / run_bytes)));
}

// A write that continues the buffered data while the disk is still writing it back joins that
// write-back: no new seek or rotation (the head is writing towards it), only the switch if it
// starts a new track, and buffer space to wait for. Returns the completion time.
Nanos HddModel::append_to_destage(const TimedCommand& cmd, std::size_t bytes) {
  destage_done_ += switch_before(cmd.offset) + media_transfer(cmd.offset, bytes);
  destage_bytes_ += bytes;
  buffered_end_ = cmd.offset + bytes;
  move_heads_to(cmd.offset + bytes - 1);
  prefetch_from_ = UINT64_MAX;
  const Nanos in_buffer = cmd.start + g_.command_overhead + from_s(static_cast<double>(bytes) / g_.bus_bytes_per_s);
  if (cmd.durable) return std::max(in_buffer, destage_done_);  // FUA: it and all before it on the media
  return buffer_space_at(in_buffer);
}

// Read-ahead hit: since the last read ended (at prefetch_since_) the disk has kept reading
// from prefetch_from_, up to one cache segment ahead. What is there comes at bus speed; the
// rest as the media delivers it, without a new seek or rotation. T is after the overhead.
Nanos HddModel::read_ahead(std::uint64_t offset, std::size_t bytes, Nanos t) {
  const double rate = media_rate(offset), want = static_cast<double>(bytes);
  const double segment = static_cast<double>(g_.cache_segment_sectors) * g_.sector_bytes;
  const double ahead = std::min(segment, to_s(t - prefetch_since_) * rate);
  const double hit = std::min(want, ahead);
  Nanos done = t + from_s(hit / g_.bus_bytes_per_s);
  if (hit < want) {
    const Nanos media_ready = ahead >= segment ? t + from_s((want - hit) / rate)  // had stopped: resumes now
                                               : prefetch_since_ + from_s(want / rate);
    done = std::max(done, media_ready);
  }
  move_heads_to(offset + bytes - 1);
  return done;
}

Nanos HddModel::read(std::uint64_t offset, std::size_t bytes, Nanos t) {
  t = offset == prefetch_from_ ? read_ahead(offset, bytes, t) : access_and_transfer(offset, bytes, t);
  prefetch_from_ = offset + bytes;
  prefetch_since_ = t;
  return t;
}

// T is after the overhead (and after any earlier write-back). Returns the completion time.
Nanos HddModel::write(const TimedCommand& cmd, std::size_t bytes, Nanos t) {
  prefetch_from_ = UINT64_MAX;
  buffered_end_ = cmd.offset + bytes;
  const std::uint64_t buffer_bytes = static_cast<std::uint64_t>(g_.write_buffer_sectors) * g_.sector_bytes;
  if (cmd.durable) {
    destage(cmd.offset, bytes, t);  // FUA: straight to the media, done when it is there
    return destage_done_;
  }
  const Nanos in_buffer = t + from_s(static_cast<double>(bytes) / g_.bus_bytes_per_s);
  // Write-back: the media write starts once the data is in the buffer. A write larger than the
  // buffer streams to the media while the host still sends it, so it starts at once.
  destage(cmd.offset, bytes, bytes <= buffer_bytes ? in_buffer : t);
  return buffer_space_at(in_buffer);
}

Nanos HddModel::service_time(const TimedCommand& cmd) {
  const std::size_t bytes = std::max<std::size_t>(cmd.bytes, g_.sector_bytes);
  const bool destaging = destage_done_ > cmd.start;
  if (cmd.kind == IoKind::write && destaging && cmd.offset == buffered_end_) {
    return (append_to_destage(cmd, bytes) - cmd.start) + next_jitter();
  }
  // Everything else waits for the write-back first (thesis §4.2.1: external waiting).
  Nanos t = std::max(cmd.start, destage_done_) + g_.command_overhead;
  switch (cmd.kind) {
    case IoKind::flush: prefetch_from_ = UINT64_MAX; break;
    case IoKind::seek: {
      t += seek_time(distance_to(locate(cmd.offset).cylinder));
      move_heads_to(cmd.offset);
      prefetch_from_ = UINT64_MAX;
      break;
    }
    case IoKind::read: t = read(cmd.offset, bytes, t); break;
    case IoKind::write: t = write(cmd, bytes, t); break;
  }
  return (t - cmd.start) + next_jitter();
}

SimulatedHdd::SimulatedHdd(HddGeometry geometry, std::uint32_t block_bytes) {
  auto m = std::make_unique<HddModel>(std::move(geometry));
  model = m.get();
  capacity = m->capacity_bytes() / 4096 * 4096;
  disk = std::make_unique<SimulatedDisk>(
      clock,
      SimulatedDiskOptions{.size_bytes = capacity, .block_bytes = block_bytes, .max_in_flight = 8, .store_data = false},
      std::move(m));
}

}  // namespace vigil::storage
