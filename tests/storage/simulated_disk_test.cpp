// The simulated disk: reads what was written, keeps virtual time, and models exactly what a
// crash keeps (flushed or durable writes) and loses (the volatile cache, in-flight commands),
// with injected failures and torn writes.
#include <catch2/catch_test_macros.hpp>
#include <cstring>

#include "storage/simulated_disk.hpp"

using namespace vigil::storage;
using vigil::errc;

namespace {

constexpr std::size_t kBlock = 4096;

AlignedBuffer filled(std::size_t bytes, std::uint8_t value) {
  AlignedBuffer b(bytes);
  std::memset(b.data(), value, bytes);
  return b;
}

std::uint8_t byte_at(SimulatedDisk& d, std::uint64_t offset) {
  AlignedBuffer b(kBlock);
  REQUIRE(read_sync(d, offset - offset % kBlock, b.span()).has_value());
  return static_cast<std::uint8_t>(b.data()[offset % kBlock]);
}

}  // namespace

TEST_CASE("the simulated disk reads back what was written, in virtual time", "[simdisk]") {
  VirtualClock clock;
  SimulatedDisk d(clock, {.size_bytes = 1 << 20}, std::make_unique<FixedTiming>(std::chrono::microseconds(100), 1.0));
  auto data = filled(2 * kBlock, 0x5A);
  bool done = false;
  REQUIRE(d.submit_write(kBlock, data.span(), false, [&](auto r) { done = r.has_value(); }).has_value());
  CHECK(clock.now() == Nanos(0));  // nothing happens outside poll()
  CHECK(d.in_flight() == 1);
  CHECK(d.poll(1) == 1);
  CHECK(done);
  CHECK(clock.now() == std::chrono::microseconds(100) + Nanos(2 * kBlock));
  CHECK(byte_at(d, kBlock + 17) == 0x5A);
}

TEST_CASE("misaligned or out-of-range commands are refused; the queue is bounded", "[simdisk]") {
  VirtualClock clock;
  SimulatedDisk d(clock, {.size_bytes = 1 << 20, .max_in_flight = 2});
  auto data = filled(kBlock, 1);
  CHECK(d.submit_write(100, data.span(), false, {}).error() == errc::invalid_argument);
  CHECK(d.submit_write(1 << 20, data.span(), false, {}).error() == errc::invalid_argument);
  CHECK(d.submit_write(0, data.span().first(100), false, {}).error() == errc::invalid_argument);
  REQUIRE(d.submit_write(0, data.span(), false, {}).has_value());
  REQUIRE(d.submit_write(kBlock, data.span(), false, {}).has_value());
  CHECK(d.submit_flush({}).error() == errc::unavailable);
  d.poll(2);
  CHECK(d.in_flight() == 0);
}

TEST_CASE("a crash keeps flushed and durable writes and loses the rest", "[simdisk]") {
  VirtualClock clock;
  SimulatedDisk d(clock, {.size_bytes = 1 << 20});
  auto a = filled(kBlock, 0xAA), b = filled(kBlock, 0xBB), c = filled(kBlock, 0xCC), e = filled(kBlock, 0xEE);
  REQUIRE(write_sync(d, 0, a.span(), false).has_value());
  REQUIRE(flush_sync(d).has_value());
  REQUIRE(write_sync(d, kBlock, b.span(), true).has_value());            // durable (FUA)
  REQUIRE(write_sync(d, 2 * kBlock, c.span(), false).has_value());       // cached only
  REQUIRE(d.submit_write(3 * kBlock, e.span(), false, {}).has_value());  // still in flight
  CHECK(byte_at(d, 2 * kBlock) == 0xCC);                                 // visible before the crash
  d.crash();
  CHECK(byte_at(d, 0) == 0xAA);
  CHECK(byte_at(d, kBlock) == 0xBB);
  CHECK(byte_at(d, 2 * kBlock) == 0x00);
  CHECK(byte_at(d, 3 * kBlock) == 0x00);
}

TEST_CASE("an injected failure fails exactly that command and changes nothing", "[simdisk]") {
  VirtualClock clock;
  SimulatedDisk d(clock, {.size_bytes = 1 << 20});
  auto a = filled(kBlock, 0xAA);
  d.fail_io(2, errc::io_error);
  REQUIRE(write_sync(d, 0, a.span(), true).has_value());
  auto r = write_sync(d, kBlock, a.span(), true);
  REQUIRE(r.has_error());
  CHECK(r.error() == errc::io_error);
  CHECK(byte_at(d, kBlock) == 0x00);
  CHECK(write_sync(d, kBlock, a.span(), true).has_value());
}

TEST_CASE("a torn write persists exactly its first k bytes, then the disk is dead until crash()", "[simdisk]") {
  VirtualClock clock;
  SimulatedDisk d(clock, {.size_bytes = 1 << 20});
  auto a = filled(2 * kBlock, 0xAA);
  d.tear_write(1, 5000);
  CHECK(write_sync(d, 0, a.span(), false).has_error());
  CHECK(d.powered_off());
  CHECK(flush_sync(d).has_error());
  d.crash();
  CHECK(byte_at(d, 4999) == 0xAA);
  CHECK(byte_at(d, 5000) == 0x00);
}

TEST_CASE("power fails after n commands; snapshot and restore replay a state", "[simdisk]") {
  VirtualClock clock;
  SimulatedDisk d(clock, {.size_bytes = 1 << 20});
  auto a = filled(kBlock, 0xAA);
  REQUIRE(write_sync(d, 0, a.span(), true).has_value());
  auto snap = d.snapshot();
  d.power_fail_after(1);
  CHECK(write_sync(d, kBlock, a.span(), true).has_value());
  CHECK(write_sync(d, 2 * kBlock, a.span(), true).has_error());
  d.restore(snap);
  CHECK(byte_at(d, 0) == 0xAA);
  CHECK(byte_at(d, kBlock) == 0x00);
  CHECK(d.counters().writes >= 2);
}
