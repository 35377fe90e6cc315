// Writes through the background broker, and a segment's extents freed through them
// (Volume::prepare_free / commit_free, as server/disks/segment_reclaim.cpp does): the tombstones
// go to the disk in the cycles' slack beside streams that never miss, each durable before the
// extents are free; a volume opened again finds the segment gone. A crash before the writes leaves
// the segment whole; a failed write leaves it in use. Simulated disk, virtual time.
#include <catch2/catch_test_macros.hpp>

#include <cstring>
#include <memory>
#include <vector>

#include "storage/background_broker.hpp"
#include "storage/cycle_scheduler.hpp"
#include "storage/segment_writer.hpp"
#include "storage/simulated_disk.hpp"
#include "storage/volume.hpp"
#include "tests/support/script_frames.hpp"

using namespace vigil::storage;
using namespace std::chrono_literals;

namespace {

class SyntheticStream final : public CycleStream {
 public:
  SyntheticStream(std::uint64_t offset, std::size_t bytes) : offset_(offset), buf_(bytes) {}
  StreamIo prepare(std::uint64_t) override { return {.write = true, .pieces = {{offset_, buf_.span()}}}; }
  void finished(std::uint64_t, vigil::Result<void>) override {}

 private:
  std::uint64_t offset_;
  AlignedBuffer buf_;
};

struct Rig {
  Rig()
      : disk(clock, {.size_bytes = 8 << 20, .block_bytes = 4096}, std::make_unique<FixedTiming>(100us, 0.2)),
        model(Nanos(2ms), 200e6) {}
  VirtualClock clock;
  SimulatedDisk disk;
  LinearServiceModel model;
};

std::shared_ptr<AlignedBuffer> block_of(std::byte value) {
  auto b = std::make_shared<AlignedBuffer>(4096, 4096);
  std::memset(b->data(), static_cast<int>(value), b->size());
  return b;
}

// A volume on RIG's disk with one closed segment of three extents; returns its id.
std::uint64_t volume_with_segment(Rig& rig) {
  REQUIRE(Volume::format(rig.disk, {.extent_bytes = 64 * 1024}).has_value());
  auto vol = *Volume::open(rig.disk);
  SegmentWriter w(*vol, 1, SegmentWriterOptions{.buffer_bytes = 16 * 1024, .max_segment_bytes = 180 * 1024});
  REQUIRE(w.open_segment(7, {}, 1, 0).has_value());
  for (std::uint64_t seq = 1; !w.segment_full(); ++seq) {
    auto f = vigil::test::script_frame(seq, 1);
    REQUIRE(w.append(f.header, f.payload));
    REQUIRE(w.write_cycle().has_value());
    REQUIRE(flush_sync(rig.disk).has_value());
    w.mark_durable();
  }
  w.close_segment();
  REQUIRE(flush_sync(rig.disk).has_value());
  return 7;
}

}  // namespace

TEST_CASE("broker writes go in the slack, in order, each durable; misaligned blocks are refused", "[broker]") {
  Rig rig;
  CycleScheduler sched(rig.disk, rig.clock, rig.model, {.cycle = 100ms, .chunk_bytes = 64 * 1024}, &rig.clock);
  std::vector<std::unique_ptr<SyntheticStream>> streams;
  for (int i = 0; i < 4; ++i) {
    streams.push_back(std::make_unique<SyntheticStream>((4 + i) * (1 << 20), 256 * 1024));
    sched.add_stream(static_cast<std::uint64_t>(i) + 1, *streams.back(), rig.clock.now());
  }
  BackgroundBroker broker(sched, 64 * 1024, 4096);
  std::vector<BrokerWrite> blocks{{0, block_of(std::byte{1})},
                                  {8192, block_of(std::byte{2})},
                                  {4096, block_of(std::byte{3})}};
  std::optional<vigil::Result<void>> done;
  REQUIRE(broker.register_write(blocks, [&](vigil::Result<void> r) { done = r; }).has_value());
  CHECK(broker.register_write({{100, block_of(std::byte{9})}}, [](vigil::Result<void>) {}).error() ==
        vigil::errc::invalid_argument);
  for (int c = 0; c < 5 && !done; ++c) sched.run_cycle();
  REQUIRE(done);
  CHECK(done->has_value());
  CHECK(broker.bytes_written() == 3 * 4096);
  // Durable: the disk's durable image has every block, without a flush.
  const auto image = rig.disk.durable_image();
  CHECK(image[0] == std::byte{1});
  CHECK(image[4096] == std::byte{3});
  CHECK(image[8192] == std::byte{2});
  CHECK(sched.totals().misses == 0);
  CHECK(sched.totals().background_chunks == 3);
}

TEST_CASE("a segment freed through broker writes: extents free once the tombstones are durable",
          "[broker][retention]") {
  Rig rig;
  const std::uint64_t id = volume_with_segment(rig);
  auto vol = *Volume::open(rig.disk);
  REQUIRE(vol->segments().contains(id));
  const auto extents = vol->segments().at(id).size();
  REQUIRE(extents >= 2);
  const auto free_before = vol->free_extent_count();

  std::vector<std::uint64_t> freeing;
  std::vector<BrokerWrite> blocks;
  for (const auto& use : vol->segments().at(id)) {
    auto t = vol->prepare_free(use.extent);
    REQUIRE(t.has_value());
    CHECK(vol->prepare_free(use.extent).error() == vigil::errc::busy);  // once
    CHECK(vol->free_extent(use.extent).error() == vigil::errc::busy);
    freeing.push_back(t->extent);
    blocks.push_back({t->offset, t->block});
  }
  CHECK(vol->free_extent_count() == free_before);  // nothing free before the writes

  SECTION("written and committed: free now and after a reopen") {
    CycleScheduler sched(rig.disk, rig.clock, rig.model, {.cycle = 100ms, .chunk_bytes = 64 * 1024}, &rig.clock);
    BackgroundBroker broker(sched, 64 * 1024, 4096);
    bool done = false;
    REQUIRE(broker
                .register_write(blocks,
                                [&](vigil::Result<void> r) {
                                  REQUIRE(r.has_value());
                                  for (auto e : freeing) vol->commit_free(e);
                                  done = true;
                                })
                .has_value());
    for (int c = 0; c < 5 && !done; ++c) sched.run_cycle();
    REQUIRE(done);
    CHECK(!vol->segments().contains(id));
    CHECK(vol->free_extent_count() == free_before + extents);
    rig.disk.crash();  // what survives: the durable image
    auto reopened = Volume::open(rig.disk);
    REQUIRE(reopened.has_value());
    CHECK(!(*reopened)->segments().contains(id));
    CHECK((*reopened)->free_extent_count() == free_before + extents);
  }
  SECTION("a crash before the writes: the segment is whole") {
    rig.disk.crash();
    auto reopened = Volume::open(rig.disk);
    REQUIRE(reopened.has_value());
    REQUIRE((*reopened)->segments().contains(id));
    CHECK((*reopened)->segments().at(id).size() == extents);
  }
  SECTION("a failed write: abandoned, the extents stay in use and can be freed later") {
    CycleScheduler sched(rig.disk, rig.clock, rig.model, {.cycle = 100ms, .chunk_bytes = 64 * 1024}, &rig.clock);
    BackgroundBroker broker(sched, 64 * 1024, 4096);
    rig.disk.fail_io(1, vigil::errc::io_error);
    std::optional<vigil::Result<void>> done;
    REQUIRE(broker.register_write(blocks, [&](vigil::Result<void> r) { done = r; }).has_value());
    for (int c = 0; c < 5 && !done; ++c) sched.run_cycle();
    REQUIRE(done);
    CHECK(done->has_error());
    for (auto e : freeing) vol->abandon_free(e);
    CHECK(vol->segments().at(id).size() == extents);
    CHECK(vol->free_extent_count() == free_before);
    for (auto e : freeing) CHECK(vol->free_extent(e).has_value());  // the synchronous path still works
    CHECK(!vol->segments().contains(id));
  }
}
