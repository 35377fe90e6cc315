// Start-up does not grow with what is recorded (docs/durability.md, "Fast restart"): on a 1 TiB
// sparse file volume with many closed segments in the catalog and one segment left open by a
// crash, recovery reads the superblock, every extent header (in batches, several reads in
// flight at once) and the open segment's extents — not one byte of a closed segment's records.
// `vigil fsck --repair`'s full scan still reads everything. Reads are counted through a
// Device wrapper, not timed: the test says the same on any machine.
#include <catch2/catch_test_macros.hpp>
#include <filesystem>
#include <fstream>
#include <pqxx/pqxx>
#include <set>

#include "catalog/migrator.hpp"
#include "catalog/recording_rows.hpp"
#include "catalog/volume_reconcile.hpp"
#include "storage/file_device.hpp"
#include "tests/support/segment_fixture.hpp"
#include "tests/support/temp_cluster.hpp"
#include "tests/support/temp_dir.hpp"

using namespace vigil;
using namespace vigil::storage;

namespace {

// Forwards to INNER and remembers every read (offset, bytes) and the most reads in flight.
class CountingDevice final : public Device {
 public:
  struct Read {
    std::uint64_t offset = 0, bytes = 0;
  };
  explicit CountingDevice(Device& inner) : inner_(inner) {}
  const DeviceInfo& info() const noexcept override { return inner_.info(); }
  Result<void> submit_read(std::uint64_t offset, std::span<std::byte> buf, IoCallback done) noexcept override {
    auto r = inner_.submit_read(offset, buf, [this, done = std::move(done)](Result<std::size_t> res) {
      --reading_;
      done(std::move(res));
    });
    if (r) {
      reads.push_back({offset, buf.size()});
      peak_reads_in_flight = std::max(peak_reads_in_flight, ++reading_);
    }
    return r;
  }
  Result<void> submit_write(std::uint64_t offset, std::span<const std::byte> buf, bool durable,
                            IoCallback done) noexcept override {
    return inner_.submit_write(offset, buf, durable, std::move(done));
  }
  Result<void> submit_flush(IoCallback done) noexcept override { return inner_.submit_flush(std::move(done)); }
  std::size_t poll(std::size_t min_complete) noexcept override { return inner_.poll(min_complete); }
  std::size_t in_flight() const noexcept override { return inner_.in_flight(); }
  std::size_t max_in_flight() const noexcept override { return inner_.max_in_flight(); }

  std::vector<Read> reads;
  std::size_t peak_reads_in_flight = 0;

 private:
  Device& inner_;
  std::size_t reading_ = 0;
};

constexpr std::uint64_t kVolumeBytes = 1ull << 40;   // 1 TiB, sparse
constexpr std::uint64_t kExtentBytes = 64ull << 20;  // 16383 extents, as vigild formats by default
constexpr std::uint64_t kClosed = 40;                // closed segments in the catalog
constexpr std::uint64_t kOpen = 1000;                // the segment a crash left open

// Bytes of READS that fall in the data of EXTENT (past its header block).
std::uint64_t data_bytes_read(const std::vector<CountingDevice::Read>& reads, const Volume& vol, std::uint64_t extent) {
  const std::uint64_t begin = vol.extent_offset(extent) + vol.block_bytes(), end = vol.extent_offset(extent + 1);
  std::uint64_t n = 0;
  for (const auto& r : reads) {
    const std::uint64_t lo = std::max(begin, r.offset), hi = std::min(end, r.offset + r.bytes);
    if (hi > lo) n += hi - lo;
  }
  return n;
}

}  // namespace

TEST_CASE("start-up reads extent headers in batches and only the segments open at the crash",
          "[recovery][catalog][fast_restart]") {
  pqxx::connection conn(test::shared_cluster().create_database("fast_restart"));
  catalog::migrate(conn);
  std::int64_t stream = 0;
  {
    pqxx::work tx(conn);
    auto cam = tx.exec1("INSERT INTO cameras (name) VALUES ('hall') RETURNING id")[0].as<std::int64_t>();
    stream = tx.exec_params1(
                   "INSERT INTO streams (camera_id, codec, declared_rate_bps) VALUES ($1, 'h264', 4000000) "
                   "RETURNING id",
                   cam)[0]
                 .as<std::int64_t>();
    tx.commit();
  }
  test::TempDir dir;
  const auto path = dir.path() / "vol";
  std::ofstream(path).close();
  std::filesystem::resize_file(path, kVolumeBytes);  // a hole: nothing is allocated

  std::int64_t volume_id = 0;
  std::set<std::uint64_t> closed_extents, open_extents;
  {
    auto dev = *FileDevice::open(path);
    REQUIRE(Volume::format(*dev, {.extent_bytes = kExtentBytes}).has_value());
    auto vol = *Volume::open(*dev);
    REQUIRE(vol->extent_count() == (kVolumeBytes - (1 << 20)) / kExtentBytes);
    pqxx::work tx(conn);
    volume_id = catalog::register_volume(tx, *vol, path.string());
    for (std::uint64_t id = 1; id <= kClosed; ++id) {
      const auto s = test::write_script_segment(*vol, id, static_cast<std::uint64_t>(stream), 12);
      std::vector<std::uint64_t> offsets;
      for (auto e : s.extents) {
        offsets.push_back(vol->extent_offset(e));
        closed_extents.insert(e);
      }
      catalog::record_closed_segment(tx, volume_id, s, offsets, kExtentBytes, 1);
    }
    tx.commit();
    // The crash: a segment still open, its records on the volume, nothing in the catalog.
    const auto open = test::write_script_segment(*vol, kOpen, static_cast<std::uint64_t>(stream), 30, 16 * 1024,
                                                 /*close=*/false);
    open_extents.insert(open.extents.begin(), open.extents.end());
  }

  // The restart.
  auto file = *FileDevice::open(path);
  CountingDevice dev(*file);
  auto vol = *Volume::open(dev);
  const std::size_t header_reads = dev.reads.size();
  CHECK(header_reads == 1 + vol->extent_count());  // the superblock and each extent header, once
  CHECK(dev.peak_reads_in_flight > 1);             // batches in flight, not one read at a time
  auto r = catalog::reconcile_volume(conn, *vol, volume_id, 10'000'000);
  CHECK(r.trusted == kClosed);
  CHECK(r.scanned == 1);
  REQUIRE(r.plan.adopt.size() == 1);
  CHECK(r.plan.adopt[0].segment_id == kOpen);
  CHECK(r.plan.adopt[0].frame_count == 30);
  CHECK(r.plan.refresh.empty());
  CHECK(r.plan.lost.empty());
  // Not one byte of a closed segment's data was read; the open one's was.
  std::uint64_t closed_read = 0;
  for (auto e : closed_extents) closed_read += data_bytes_read(dev.reads, *vol, e);
  CHECK(closed_read == 0);
  std::uint64_t open_read = 0;
  for (auto e : open_extents) open_read += data_bytes_read(dev.reads, *vol, e);
  CHECK(open_read > 0);

  // The next start trusts the adopted segment too: nothing but headers is read.
  {
    auto again = *Volume::open(dev);
    dev.reads.clear();
    auto second = catalog::reconcile_volume(conn, *again, volume_id, 20'000'000);
    CHECK(second.trusted == kClosed + 1);
    CHECK(second.scanned == 0);
    CHECK(dev.reads.empty());
  }

  // fsck's full scan still reads every segment's records (so the count above can see reads).
  dev.reads.clear();
  auto full = catalog::reconcile_volume(conn, *vol, volume_id, 30'000'000, {.full_scan = true});
  CHECK(full.scanned == kClosed + 1);
  CHECK(full.trusted == 0);
  closed_read = 0;
  for (auto e : closed_extents) closed_read += data_bytes_read(dev.reads, *vol, e);
  CHECK(closed_read > 0);
  CHECK(full.plan.refresh.empty());  // and finds the catalog right
}
