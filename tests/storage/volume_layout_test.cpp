// Superblock, extent header and segment header: round trips, and any single flipped bit is
// detected (decode reports corruption, never a different valid structure).
#include <catch2/catch_test_macros.hpp>
#include <vector>

#include "storage/volume_layout.hpp"

using namespace vigil::storage;
using vigil::errc;

namespace {

constexpr std::size_t kBlock = 4096;

VolumeUuid sample_uuid() {
  VolumeUuid u;
  for (std::size_t i = 0; i < u.size(); ++i) u[i] = std::byte(0xA0 + i);
  return u;
}

// Flips each bit of the first BYTES bytes in turn and expects DECODE to fail every time.
template <class Decode>
void expect_every_bit_flip_detected(std::vector<std::byte> encoded, std::size_t bytes, Decode decode) {
  for (std::size_t bit = 0; bit < bytes * 8; ++bit) {
    auto damaged = encoded;
    damaged[bit / 8] ^= std::byte(1u << (bit % 8));
    auto r = decode(std::span<const std::byte>(damaged));
    INFO("bit " << bit);
    REQUIRE(r.has_error());
  }
}

}  // namespace

TEST_CASE("the superblock round-trips and detects every flipped bit", "[format][volume]") {
  Superblock sb;
  sb.volume_uuid = sample_uuid();
  sb.extent_bytes = 64 << 20;
  sb.extent_count = 123;
  sb.first_extent_offset = 1 << 20;
  sb.created_us = 1'790'000'000'000'000;
  std::vector<std::byte> block(kBlock);
  REQUIRE(encode_superblock(block, sb).has_value());
  auto back = decode_superblock(block);
  REQUIRE(back.has_value());
  CHECK(back->volume_uuid == sb.volume_uuid);
  CHECK(back->extent_bytes == sb.extent_bytes);
  CHECK(back->extent_count == 123);
  CHECK(back->first_extent_offset == sb.first_extent_offset);
  CHECK(back->created_us == sb.created_us);
  CHECK(back->extent_offset(2) == (1u << 20) + 2 * (64u << 20));
  expect_every_bit_flip_detected(block, 68, [](auto b) { return decode_superblock(b); });
}

TEST_CASE("an inconsistent superblock geometry is refused when encoding", "[format][volume]") {
  std::vector<std::byte> block(kBlock);
  Superblock sb;
  sb.extent_bytes = 1000;  // not a block multiple
  sb.first_extent_offset = kBlock;
  CHECK(encode_superblock(block, sb).error() == errc::invalid_argument);
  sb.extent_bytes = kBlock;
  sb.first_extent_offset = 0;  // would overlap the superblock
  CHECK(encode_superblock(block, sb).error() == errc::invalid_argument);
  CHECK(decode_superblock(std::vector<std::byte>(kBlock)).error() == errc::corruption);
}

TEST_CASE("extent headers round-trip, detect flipped bits, and a zero block reads as free", "[format][volume]") {
  ExtentHeader h;
  h.state = ExtentState::in_use;
  h.ordinal = 3;
  h.volume_uuid = sample_uuid();
  h.segment_id = 77;
  h.stream_id = 9;
  h.generation = 1234;
  std::vector<std::byte> block(kBlock);
  encode_extent_header(block, h);
  auto back = decode_extent_header(block);
  REQUIRE(back.has_value());
  CHECK(back->state == ExtentState::in_use);
  CHECK(back->ordinal == 3);
  CHECK(back->volume_uuid == h.volume_uuid);
  CHECK(back->segment_id == 77);
  CHECK(back->stream_id == 9);
  CHECK(back->generation == 1234);
  expect_every_bit_flip_detected(block, 60, [](auto b) { return decode_extent_header(b); });

  auto zero = decode_extent_header(std::vector<std::byte>(kBlock));
  REQUIRE(zero.has_value());
  CHECK(zero->state == ExtentState::free);
}

TEST_CASE("segment headers carry codec parameters and detect flipped bits", "[format][volume]") {
  SegmentHeader h;
  h.segment_id = 5;
  h.stream_id = 6;
  h.first_sequence = 1001;
  h.start_us = 1'790'000'000'000'000;
  for (int i = 0; i < 300; ++i) h.codec_parameters.push_back(std::byte(i));
  std::vector<std::byte> buf(segment_header_blocks(300, kBlock) * kBlock);
  REQUIRE(encode_segment_header(buf, h, kBlock).has_value());
  auto back = decode_segment_header(buf);
  REQUIRE(back.has_value());
  CHECK(back->segment_id == 5);
  CHECK(back->stream_id == 6);
  CHECK(back->first_sequence == 1001);
  CHECK(back->start_us == h.start_us);
  CHECK(back->codec_parameters == h.codec_parameters);
  expect_every_bit_flip_detected(buf, 44 + 300 + 4, [](auto b) { return decode_segment_header(b); });
}

TEST_CASE("large codec parameters take more header blocks; oversized ones are refused", "[format][volume]") {
  CHECK(segment_header_blocks(0, kBlock) == 1);
  CHECK(segment_header_blocks(kBlock, kBlock) == 2);
  SegmentHeader h;
  h.codec_parameters.resize(kMaxCodecParametersBytes + 1);
  std::vector<std::byte> buf(32 * kBlock);
  CHECK(encode_segment_header(buf, h, kBlock).error() == errc::invalid_argument);
}
