// The fault-injecting device (test plans: EIO on the Nth write, flush or read, for good, torn
// writes, a full device, slow writes) on a real O_DIRECT file, and what vigild puts over every volume's
// device: a failed write retried once with the same bytes, failures in a row counted until the
// device is failing for good. Then a volume whose extent header cannot be written: the allocator
// marks that extent bad and takes the next one, instead of failing every allocation.
#include <catch2/catch_test_macros.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "storage/faulty_device.hpp"
#include "storage/file_device.hpp"
#include "storage/guarded_device.hpp"
#include "storage/volume.hpp"
#include "tests/support/temp_dir.hpp"

using namespace vigil::storage;
using vigil::errc;

namespace {

constexpr std::size_t kBlock = 4096;

AlignedBuffer filled(std::size_t bytes, std::uint8_t value) {
  AlignedBuffer b(bytes);
  std::memset(b.data(), value, bytes);
  return b;
}

std::unique_ptr<Device> file(const vigil::test::TempDir& dir) {
  auto dev = FileDevice::open(dir.path() / "vol", {.create_bytes = 8 << 20, .backend = IoBackend::sync});
  REQUIRE(dev.has_value());
  return std::move(*dev);
}

// The byte at OFFSET as the device holds it.
std::uint8_t byte_at(Device& dev, std::uint64_t offset) {
  AlignedBuffer b(kBlock);
  REQUIRE(read_sync(dev, offset / kBlock * kBlock, b.span()).has_value());
  return static_cast<std::uint8_t>(b.data()[offset % kBlock]);
}

}  // namespace

TEST_CASE("fault plans parse, print back, and refuse what they do not know", "[fault]") {
  auto p = parse_fault_plan("write@3,flush@2+,torn@5,full@40,read@7");
  REQUIRE(p.has_value());
  REQUIRE(p->rules.size() == 5);
  CHECK(p->rules[0].kind == FaultRule::Kind::write_error);
  CHECK(p->rules[0].nth == 3);
  CHECK_FALSE(p->rules[0].for_good);
  CHECK(p->rules[1].for_good);
  CHECK(p->rules[3].for_good);  // a full device stays full
  CHECK(fault_plan_text(*p) == "write@3,flush@2+,torn@5,full@40+,read@7");
  auto spot = parse_fault_plan("write@2!,torn@3!");
  REQUIRE(spot.has_value());
  CHECK(spot->rules[0].bad_spot);
  CHECK(fault_plan_text(*spot) == "write@2!,torn@3!");
  for (const char* bad :
       {"", "write", "write@", "write@0", "write@x", "erase@3", "write@3,", "write@3++", "flush@2!", "write@2+!"}) {
    INFO(bad);
    CHECK_FALSE(parse_fault_plan(bad).has_value());
  }
}

TEST_CASE("a fault plan counts from arm(): the Nth write, flush and read fail, once or for good", "[fault]") {
  vigil::test::TempDir dir;
  FaultyDevice dev(file(dir), *parse_fault_plan("write@2,flush@2+,read@1"));
  auto a = filled(kBlock, 0xAA);
  // Before arm(): nothing counts (a volume's formatting and recovery).
  REQUIRE(write_sync(dev, 0, a.span(), false).has_value());
  REQUIRE(flush_sync(dev).has_value());
  dev.arm();
  CHECK(write_sync(dev, 0, a.span(), false).has_value());                     // write 1
  CHECK(write_sync(dev, kBlock, a.span(), false).error() == errc::io_error);  // write 2
  CHECK(write_sync(dev, kBlock, a.span(), false).has_value());                // write 3: once only
  CHECK(flush_sync(dev).has_value());                                         // flush 1
  CHECK(flush_sync(dev).error() == errc::io_error);                           // flush 2
  CHECK(flush_sync(dev).error() == errc::io_error);                           // and every one after
  AlignedBuffer back(kBlock);
  CHECK(read_sync(dev, 0, back.span()).error() == errc::io_error);  // read 1
  CHECK(read_sync(dev, 0, back.span()).has_value());
  CHECK(dev.injected() == 4);
  CHECK(dev.in_flight() == 0);
}

TEST_CASE("a torn write lands only its first half; a full device lands nothing and says ENOSPC", "[fault]") {
  vigil::test::TempDir dir;
  FaultyDevice dev(file(dir), *parse_fault_plan("torn@1,full@3"));
  auto old = filled(4 * kBlock, 0x11);
  REQUIRE(write_sync(dev, 0, old.span(), true).has_value());
  dev.arm();
  auto fresh = filled(4 * kBlock, 0x22);
  CHECK(write_sync(dev, 0, fresh.span(), true).error() == errc::io_error);
  CHECK(byte_at(dev, 0) == 0x22);
  CHECK(byte_at(dev, 2 * kBlock - 1) == 0x22);
  CHECK(byte_at(dev, 2 * kBlock) == 0x11);                  // the second half never landed
  CHECK(write_sync(dev, 0, old.span(), true).has_value());  // write 2
  auto full = write_sync(dev, 0, fresh.span(), true);       // write 3: the device is full
  REQUIRE_FALSE(full.has_value());
  CHECK(full.error().value() == ENOSPC);
  CHECK(byte_at(dev, 0) == 0x11);
  CHECK_FALSE(write_sync(dev, 8 * kBlock, fresh.span(), true).has_value());  // and stays full
}

TEST_CASE("a slow device holds each write from the Nth before starting it, and the write lands", "[fault]") {
  auto plan = parse_fault_plan("slow@2+");
  REQUIRE(plan.has_value());
  CHECK(plan->rules[0].kind == FaultRule::Kind::slow_write);
  CHECK(fault_plan_text(*plan) == "slow@2+");
  vigil::test::TempDir dir;
  FaultyDevice dev(file(dir), *plan);
  dev.arm();
  auto a = filled(kBlock, 0x44);
  CHECK(write_sync(dev, 0, a.span(), true).has_value());  // write 1: at the device's own pace
  CHECK(dev.injected() == 0);
  for (int i = 0; i < 2; ++i) {
    const auto start = std::chrono::steady_clock::now();
    CHECK(write_sync(dev, kBlock, a.span(), true).has_value());  // writes 2 and 3: held, then landed
    CHECK(std::chrono::steady_clock::now() - start >= kSlowWriteDelay);
  }
  CHECK(dev.injected() == 2);
  CHECK(byte_at(dev, kBlock) == 0x44);
}

TEST_CASE("the guard writes a failed write again with the same bytes, and repairs a torn write", "[fault]") {
  vigil::test::TempDir dir;
  auto faulty = std::make_unique<FaultyDevice>(file(dir), *parse_fault_plan("torn@1,write@3,write@4"));
  FaultyDevice* plan = faulty.get();
  GuardedDevice dev(std::move(faulty));
  plan->arm();
  auto a = filled(4 * kBlock, 0x33);
  CHECK(write_sync(dev, 0, a.span(), true).has_value());  // torn, then written whole by the retry
  CHECK(byte_at(dev, 4 * kBlock - 1) == 0x33);
  CHECK(dev.retried_writes() == 1);
  CHECK(dev.consecutive_failures() == 0);
  // Writes 3 and 4 (the first attempt and its retry) fail: the caller hears of it, once.
  CHECK(write_sync(dev, 0, a.span(), true).error() == errc::io_error);
  CHECK(dev.consecutive_failures() == 1);
  CHECK_FALSE(dev.failing());
  CHECK(write_sync(dev, 0, a.span(), true).has_value());
  CHECK(dev.consecutive_failures() == 0);  // a success resets the count
}

TEST_CASE("a bad spot fails the retry of the same bytes, and every later write touching it", "[fault]") {
  vigil::test::TempDir dir;
  auto faulty = std::make_unique<FaultyDevice>(file(dir), *parse_fault_plan("torn@2!"));
  FaultyDevice* plan = faulty.get();
  GuardedDevice dev(std::move(faulty));
  plan->arm();
  auto a = filled(4 * kBlock, 0x55);
  CHECK(write_sync(dev, 0, a.span(), true).has_value());                         // write 1
  CHECK(write_sync(dev, 8 * kBlock, a.span(), true).error() == errc::io_error);  // torn, and its retry
  CHECK(dev.retried_writes() == 1);
  CHECK(byte_at(dev, 8 * kBlock) == 0x55);                                                      // the torn half landed
  CHECK(byte_at(dev, 11 * kBlock) == 0);                                                        // the rest never did
  CHECK(write_sync(dev, 11 * kBlock, a.span().first(kBlock), true).error() == errc::io_error);  // inside the spot
  CHECK(write_sync(dev, 12 * kBlock, a.span().first(kBlock), true).has_value());                // next to it
}

TEST_CASE("the guard never retries a flush, and K failures in a row make the device failing for good", "[fault]") {
  vigil::test::TempDir dir;
  auto faulty = std::make_unique<FaultyDevice>(file(dir), *parse_fault_plan("flush@1+,write@3+"));
  FaultyDevice* plan = faulty.get();
  GuardedDevice dev(std::move(faulty), 3);
  plan->arm();
  CHECK(flush_sync(dev).error() == errc::io_error);
  CHECK(plan->injected() == 1);  // not retried: a second fsync could succeed without the data
  CHECK(dev.consecutive_failures() == 1);
  auto a = filled(kBlock, 0x44);
  CHECK(write_sync(dev, 0, a.span(), false).has_value());  // write 1 resets
  CHECK(flush_sync(dev).error() == errc::io_error);
  CHECK(write_sync(dev, 0, a.span(), false).has_value());                // write 2
  CHECK(write_sync(dev, 0, a.span(), false).error() == errc::io_error);  // 3 and its retry 4
  CHECK(flush_sync(dev).error() == errc::io_error);
  CHECK_FALSE(dev.failing());
  CHECK(write_sync(dev, 0, a.span(), false).error() == errc::io_error);
  CHECK(dev.consecutive_failures() == 3);
  CHECK(dev.failing());
  // Failing stays: the volume is out of service until restart, whatever comes next.
  CHECK(dev.failing_flag().load());
}

TEST_CASE("an extent whose header cannot be written is marked bad and the next free one is taken", "[fault]") {
  vigil::test::TempDir dir;
  auto faulty = std::make_unique<FaultyDevice>(file(dir), *parse_fault_plan("write@1"));
  FaultyDevice* plan = faulty.get();
  REQUIRE(Volume::format(*faulty, {.extent_bytes = 1 << 20}).has_value());
  auto vol = Volume::open(*faulty);
  REQUIRE(vol.has_value());
  auto& v = **vol;
  const auto free_before = v.free_extent_count();
  plan->arm();
  auto first = v.allocate_extent(7, 1, 0);  // its header write fails on extent 0
  REQUIRE(first.has_value());
  CHECK(*first == 1);
  CHECK(v.bad_extent_count() == 1);
  CHECK(v.free_extent_count() == free_before - 2);
  auto second = v.allocate_extent(8, 1, 0);  // the bad one is skipped for good, not tried again
  REQUIRE(second.has_value());
  CHECK(*second == 2);
  // A bad extent in use goes out of use when its segment is freed, not back to the free set.
  v.mark_bad(*second);
  REQUIRE(v.free_extent(*second).has_value());
  CHECK(v.free_extent_count() == free_before - 3);
  REQUIRE(v.free_extent(*first).has_value());
  CHECK(v.free_extent_count() == free_before - 2);
}

TEST_CASE("allocation gives up after a few bad extents in a row instead of walking the whole volume", "[fault]") {
  vigil::test::TempDir dir;
  auto faulty = std::make_unique<FaultyDevice>(file(dir), *parse_fault_plan("write@1+"));
  FaultyDevice* plan = faulty.get();
  REQUIRE(Volume::format(*faulty, {.extent_bytes = 1 << 20}).has_value());
  auto vol = Volume::open(*faulty);
  REQUIRE(vol.has_value());
  plan->arm();
  auto e = (*vol)->allocate_extent(7, 1, 0);
  REQUIRE_FALSE(e.has_value());
  CHECK(e.error() == errc::io_error);
  CHECK((*vol)->bad_extent_count() == Volume::kAllocateTries);
}
