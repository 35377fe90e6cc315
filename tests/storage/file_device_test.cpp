// FileDevice on a real file with O_DIRECT, through both backends (io_uring and the
// pread/pwrite fallback): round trips, durability across reopen, the in-flight bound,
// alignment and range checks, and short transfers surfacing as errors.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <cstring>

#include "storage/file_device.hpp"
#include "storage/segment_recovery.hpp"
#include "storage/segment_writer.hpp"
#include "storage/volume.hpp"
#include "tests/support/temp_dir.hpp"

using namespace vigil::storage;
using vigil::errc;

namespace {

AlignedBuffer pattern(std::size_t bytes, std::uint8_t seed) {
  AlignedBuffer b(bytes);
  for (std::size_t i = 0; i < bytes; ++i) b.data()[i] = std::byte(static_cast<std::uint8_t>(seed + i * 31));
  return b;
}

}  // namespace

TEST_CASE("FileDevice writes and reads back at many offsets, with many commands in flight", "[file_device]") {
  const auto backend = GENERATE(IoBackend::io_uring, IoBackend::sync);
  vigil::test::TempDir dir;
  auto dev = FileDevice::open(dir.path() / "vol", {.create_bytes = 8 << 20, .max_in_flight = 4, .backend = backend});
  REQUIRE(dev.has_value());
  auto& d = **dev;
  CHECK(d.backend() == backend);
  CHECK(d.info().size_bytes == 8u << 20);
  CHECK(d.info().logical_block_bytes == 4096);

  std::vector<AlignedBuffer> data;
  int done = 0;
  for (int i = 0; i < 4; ++i) {
    data.push_back(pattern(64 * 1024, static_cast<std::uint8_t>(i)));
    REQUIRE(d.submit_write(static_cast<std::uint64_t>(i) * (1 << 20), data.back().span(), false, [&](auto r) {
               done += r.has_value() && *r == 64 * 1024;
             }).has_value());
  }
  CHECK(d.in_flight() == 4);
  auto extra = pattern(4096, 9);
  CHECK(d.submit_write(0, extra.span(), false, {}).error() == errc::unavailable);
  while (d.in_flight() > 0) d.poll(1);
  CHECK(done == 4);
  REQUIRE(flush_sync(d).has_value());
  for (int i = 0; i < 4; ++i) {
    AlignedBuffer back(64 * 1024);
    REQUIRE(read_sync(d, static_cast<std::uint64_t>(i) * (1 << 20), back.span()).has_value());
    CHECK(std::memcmp(back.data(), data[i].data(), back.size()) == 0);
  }
}

TEST_CASE("a durable write survives closing and reopening the device", "[file_device]") {
  const auto backend = GENERATE(IoBackend::io_uring, IoBackend::sync);
  vigil::test::TempDir dir;
  auto data = pattern(8192, 77);
  {
    auto dev = FileDevice::open(dir.path() / "vol", {.create_bytes = 1 << 20, .backend = backend});
    REQUIRE(dev.has_value());
    REQUIRE(write_sync(**dev, 4096, data.span(), true).has_value());
  }
  auto dev = FileDevice::open(dir.path() / "vol", {.backend = backend});
  REQUIRE(dev.has_value());
  AlignedBuffer back(8192);
  REQUIRE(read_sync(**dev, 4096, back.span()).has_value());
  CHECK(std::memcmp(back.data(), data.data(), 8192) == 0);
}

TEST_CASE("misaligned and out-of-range commands are refused without touching the disk", "[file_device]") {
  vigil::test::TempDir dir;
  auto dev = FileDevice::open(dir.path() / "vol", {.create_bytes = 1 << 20});
  REQUIRE(dev.has_value());
  auto& d = **dev;
  AlignedBuffer buf(8192);
  CHECK(d.submit_read(100, buf.span().first(4096), {}).error() == errc::invalid_argument);
  CHECK(d.submit_read(0, buf.span().first(1000), {}).error() == errc::invalid_argument);
  CHECK(d.submit_read(0, buf.span().subspan(8, 4096), {}).error() == errc::invalid_argument);
  CHECK(d.submit_read(1 << 20, buf.span().first(4096), {}).error() == errc::invalid_argument);
  CHECK(d.submit_write((1 << 20) - 4096, buf.span(), false, {}).error() == errc::invalid_argument);
  CHECK(d.in_flight() == 0);
}

TEST_CASE("opening a missing device without create fails with not_found", "[file_device]") {
  vigil::test::TempDir dir;
  auto dev = FileDevice::open(dir.path() / "nope");
  REQUIRE(dev.has_error());
  CHECK(dev.error() == errc::not_found);
}

TEST_CASE("an exclusive open is refused while another holder has the volume, and allowed after", "[file_device]") {
  vigil::test::TempDir dir;
  auto first = FileDevice::open(dir.path() / "vol", {.create_bytes = 1 << 20, .exclusive = true});
  REQUIRE(first.has_value());
  auto second = FileDevice::open(dir.path() / "vol", {.exclusive = true});
  REQUIRE(second.has_error());
  CHECK(second.error() == errc::busy);
  first->reset();
  CHECK(FileDevice::open(dir.path() / "vol", {.exclusive = true}).has_value());
}

TEST_CASE("a short read (the file shrank behind the device's back) is an error, not success", "[file_device]") {
  const auto backend = GENERATE(IoBackend::io_uring, IoBackend::sync);
  vigil::test::TempDir dir;
  auto dev = FileDevice::open(dir.path() / "vol", {.create_bytes = 1 << 20, .backend = backend});
  REQUIRE(dev.has_value());
  REQUIRE(::truncate((dir.path() / "vol").c_str(), 64 * 1024) == 0);
  AlignedBuffer buf(8192);
  auto r = read_sync(**dev, 60 * 1024, buf.span());  // 4 KiB exist, 8 KiB asked
  REQUIRE(r.has_error());
  CHECK(r.error() == errc::io_error);
}

TEST_CASE("the storage engine runs unchanged on a real O_DIRECT file", "[file_device]") {
  vigil::test::TempDir dir;
  auto dev = FileDevice::open(dir.path() / "vol", {.create_bytes = 32 << 20});
  REQUIRE(dev.has_value());
  REQUIRE(Volume::format(**dev, {.extent_bytes = 1 << 20}).has_value());
  std::uint64_t segment = 0;
  {
    auto vol = Volume::open(**dev);
    REQUIRE(vol.has_value());
    SegmentWriter w(**vol, 5, {.buffer_bytes = 256 * 1024});
    REQUIRE(w.open_segment(1, {}, 1, 0).has_value());
    std::vector<std::byte> payload(20'000, std::byte{0x33});
    for (std::uint64_t seq = 1; seq <= 100; ++seq) {
      RecordHeader h;
      h.sequence = seq;
      h.pts = static_cast<std::int64_t>(seq) * 3600;
      h.flags = seq % 25 == 1 ? kRecordKeyframe : 0;
      if (!w.append(h, payload)) {
        REQUIRE(w.write_cycle().has_value());
        REQUIRE(w.append(h, payload).has_value());
      }
    }
    REQUIRE(w.write_cycle().has_value());
    REQUIRE(flush_sync(**dev).has_value());
    REQUIRE(w.mark_durable() == 100u);
    segment = w.close_segment().segment_id;
  }
  auto vol = Volume::open(**dev);
  REQUIRE(vol.has_value());
  auto rec = recover_segment(**vol, segment);
  REQUIRE(rec.has_value());
  CHECK(rec->clean());
  CHECK(rec->summary.frame_count == 100);
  CHECK(rec->summary.gop_index.size() == 4);
}

TEST_CASE("wake() may end a poll early but never loses or invents a completion", "[file_device]") {
  vigil::test::TempDir dir;
  auto dev = FileDevice::open(dir.path() / "vol", {.create_bytes = 1 << 20, .max_in_flight = 4});
  REQUIRE(dev.has_value());
  auto& d = **dev;
  const auto data = pattern(64 * 1024, 7);
  REQUIRE(write_sync(d, 0, data.span(), true).has_value());
  for (int round = 0; round < 50; ++round) {
    std::vector<AlignedBuffer> bufs;
    int done = 0, ok = 0;
    for (int i = 0; i < 4; ++i) {
      bufs.emplace_back(64 * 1024);
      REQUIRE(d.submit_read(0, bufs.back().span(), [&](vigil::Result<std::size_t> r) {
                 ++done;
                 if (r && *r == 64 * 1024) ++ok;
               }).has_value());
    }
    d.wake();  // before the poll: the next blocking poll may return having run nothing
    std::size_t polls = 0;
    while (d.in_flight() > 0) {
      d.poll(1);
      REQUIRE(++polls < 100);
      if (polls % 2) d.wake();
    }
    CHECK(done == 4);
    CHECK(ok == 4);
    for (const auto& b : bufs) CHECK(std::memcmp(b.data(), data.data(), data.size()) == 0);
  }
}
