// Fuzz target: recovery of a segment from the volume alone (storage/segment_recovery) and the
// read path over what it recovered (storage/segment_reader), on a small in-memory volume
// (SimulatedDisk). The volume holds one real segment (a stream description, GOPs over three
// 16 KiB extents), written once; each input rewrites its extents' bytes with record_ops.hpp
// (valid records with any sequence, stream and timestamps, garbage, torn headers) starting
// from those pristine bytes. Checked: every frame visited is whole and in sequence order, the
// recovered summary agrees with what was visited and with the extents it has, and every GOP
// and range the reader serves is inside the recovered segment.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "storage/clock.hpp"
#include "storage/segment_reader.hpp"
#include "storage/segment_recovery.hpp"
#include "storage/segment_writer.hpp"
#include "storage/simulated_disk.hpp"
#include "storage/stream_description.hpp"
#include "storage/volume.hpp"
#include "tests/fuzz/record_ops.hpp"

namespace vs = vigil::storage;

namespace {

constexpr std::uint64_t kStream = 9;
constexpr std::uint64_t kSegment = 1;
constexpr std::uint64_t kExtentBytes = 16 * 1024;

void check(bool ok) {
  if (!ok) std::abort();
}

struct World {
  vs::VirtualClock clock;
  std::unique_ptr<vs::SimulatedDisk> disk;
  std::vector<std::byte> pristine;       // the durable image after the segment was written
  std::vector<std::uint64_t> extent_at;  // device offset of the segment's extents, by ordinal

  World() {
    disk = std::make_unique<vs::SimulatedDisk>(clock, vs::SimulatedDiskOptions{.size_bytes = 256 * 1024});
    check(vs::Volume::format(*disk, {.extent_bytes = kExtentBytes}).has_value());
    auto vol = vs::Volume::open(*disk);
    check(vol.has_value());
    vs::StreamDescription d{.camera = "gate", .codec = "h264", .width = 64, .height = 48};
    d.extradata.assign(40, std::byte{0x17});
    const auto params = vs::encode_stream_description(d);
    vs::SegmentWriter w(**vol, kStream, {.buffer_bytes = 4096});
    check(w.open_segment(kSegment, params, 1, 1'000'000).has_value());
    for (std::uint64_t seq = 1; seq <= 40; ++seq) {
      vs::RecordHeader h{.stream_id = kStream,
                         .sequence = seq,
                         .pts = 1'000'000 + static_cast<std::int64_t>(seq) * 40'000,
                         .dts = 1'000'000 + static_cast<std::int64_t>(seq) * 40'000,
                         .duration = 40'000,
                         .flags = (seq % 8 == 1) ? vs::kRecordKeyframe : 0u};
      std::vector<std::byte> payload(seq % 8 == 1 ? 2500 : 700, static_cast<std::byte>(seq));
      h.payload_bytes = static_cast<std::uint32_t>(payload.size());
      if (!w.append(h, payload)) {
        check(w.write_cycle().has_value());
        check(w.append(h, payload).has_value());
      }
    }
    check(w.write_cycle().has_value());
    check(vs::flush_sync(*disk).has_value());
    w.mark_durable();
    const auto summary = w.close_segment();
    for (auto e : summary.extents) extent_at.push_back((*vol)->extent_offset(e));
    check(extent_at.size() >= 3);
    pristine = disk->snapshot();
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static World world;
  // The segment's extents, one after another, as the input's program sees them.
  std::vector<std::byte> logical(world.extent_at.size() * kExtentBytes);
  for (std::size_t i = 0; i < world.extent_at.size(); ++i) {
    std::memcpy(logical.data() + i * kExtentBytes, world.pristine.data() + world.extent_at[i], kExtentBytes);
  }
  vigil::fuzz::Input in(data, size);
  std::uint64_t seq = 1;
  std::int64_t pts = 1'000'000;
  vigil::fuzz::apply_record_ops(in, logical, 4096, kStream, seq, pts);
  auto image = world.pristine;
  for (std::size_t i = 0; i < world.extent_at.size(); ++i) {
    std::memcpy(image.data() + world.extent_at[i], logical.data() + i * kExtentBytes, kExtentBytes);
  }
  world.disk->restore(image);

  auto vol = vs::Volume::open(*world.disk);
  if (!vol) return 0;
  for (const auto& [id, uses] : (*vol)->segments()) {
    std::uint64_t visited = 0;
    std::optional<std::uint64_t> last;
    auto rec = vs::recover_segment(**vol, id, [&](const vs::ScannedRecord& r) {
      check(r.payload.size() == r.header.payload_bytes && !r.header.padding());
      check(!last || r.header.sequence > *last);
      last = r.header.sequence;
      ++visited;
    });
    if (!rec) continue;
    const auto& s = rec->summary;
    check(s.frame_count == visited);
    check(s.end_offset <= s.extents.size() * (*vol)->extent_bytes());
    (void)vs::decode_stream_description(rec->header.codec_parameters);

    vs::SegmentReader reader(**vol, s);
    for (std::size_t i = 0; i < reader.gop_count(); ++i) {
      if (auto gop = reader.read_gop(i)) check(!gop->frames.empty());
    }
    for (int mode = 0; mode < 3; ++mode) {
      const vs::ReadRange range{.from_pts = 0,
                                .to_pts = 100'000'000'000'000'000,
                                .keyframes_only = mode == 1,
                                .direction = mode == 2 ? vs::ReadDirection::reverse : vs::ReadDirection::forward};
      std::uint64_t served = 0;
      (void)reader.read_range(
          range, [&](const vs::ScannedRecord& r) { check(r.payload.size() == r.header.payload_bytes), ++served; },
          [](const vs::ReadGap&) {});
      check(served <= visited);
    }
  }
  return 0;
}
