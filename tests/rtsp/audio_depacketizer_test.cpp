// The audio depacketizers (client/rtsp/audio_depacketizer): RTP packets built by hand, byte by
// byte from the RFCs' layouts — RFC 3550 §5.1 (the header), RFC 3640 §3.2 (AAC-hbr: a 16-bit
// AU-headers-length in bits, then 16-bit AU headers of a 13-bit size and a 3-bit index, then the
// AUs), RFC 3551 §4.5.14 (G.711: the samples), RFC 7587 §4.2 (one Opus packet per payload).
#include "client/rtsp/audio_depacketizer.hpp"

#include <catch2/catch_test_macros.hpp>
#include <cstdint>
#include <vector>

using namespace vigil::client::rtsp;

namespace {

struct Rtp {
  int payload_type = 97;
  bool marker = true;
  std::uint16_t sequence = 1;
  std::uint32_t timestamp = 1000;
  std::uint32_t ssrc = 0x11223344;
  std::vector<std::uint8_t> payload;
  std::uint8_t padding = 0;  // bytes of RTP padding (RFC 3550 §5.1 P bit)

  std::vector<std::uint8_t> bytes() const {
    std::vector<std::uint8_t> b{
        static_cast<std::uint8_t>(0x80 | (padding ? 0x20 : 0)),
        static_cast<std::uint8_t>((marker ? 0x80 : 0) | payload_type),
        static_cast<std::uint8_t>(sequence >> 8),
        static_cast<std::uint8_t>(sequence),
        static_cast<std::uint8_t>(timestamp >> 24),
        static_cast<std::uint8_t>(timestamp >> 16),
        static_cast<std::uint8_t>(timestamp >> 8),
        static_cast<std::uint8_t>(timestamp),
        static_cast<std::uint8_t>(ssrc >> 24),
        static_cast<std::uint8_t>(ssrc >> 16),
        static_cast<std::uint8_t>(ssrc >> 8),
        static_cast<std::uint8_t>(ssrc),
    };
    for (const auto byte : payload) b.push_back(byte);  // (insert() trips GCC 12's -Warray-bounds)
    for (int i = 1; i < padding; ++i) b.push_back(0);
    if (padding) b.push_back(padding);
    return b;
  }
};

std::vector<AudioFrame> push(AudioDepacketizer& d, const Rtp& p) {
  std::vector<AudioFrame> out;
  d.push(p.bytes(), out);
  return out;
}

}  // namespace

TEST_CASE("AAC-hbr: one AU per packet, timestamps and sizes from the AU header", "[rtsp][audio]") {
  AudioDepacketizer d(AudioCodec::aac, 97);
  // AU-headers-length 16 bits; AU header: size 5 (5 << 3 = 0x0028), index 0; then the AU.
  auto out = push(d, {.payload = {0x00, 0x10, 0x00, 0x28, 0x21, 0x1b, 0x3c, 0x4d, 0x5e}});
  REQUIRE(out.size() == 1);
  CHECK(out[0].data == std::vector<std::uint8_t>{0x21, 0x1b, 0x3c, 0x4d, 0x5e});
  CHECK(out[0].timestamp == 1000);
  CHECK(out[0].duration == 1024);
  CHECK(out[0].frames_lost_before == 0);
  out = push(d, {.sequence = 2, .timestamp = 2024, .payload = {0x00, 0x10, 0x00, 0x08, 0x77}});
  REQUIRE(out.size() == 1);
  CHECK(out[0].data == std::vector<std::uint8_t>{0x77});
  CHECK(out[0].timestamp == 2024);
  CHECK(d.malformed_packets() == 0);
}

TEST_CASE("AAC-hbr: several AUs in one packet are 1024 samples apart", "[rtsp][audio]") {
  AudioDepacketizer d(AudioCodec::aac, 97);
  // 32 bits of headers: size 3 (0x0018) and size 4 (0x0020, index delta 0); then 3 + 4 bytes.
  auto out = push(d, {.payload = {0x00, 0x20, 0x00, 0x18, 0x00, 0x20, 1, 2, 3, 4, 5, 6, 7}});
  REQUIRE(out.size() == 2);
  CHECK(out[0].data == std::vector<std::uint8_t>{1, 2, 3});
  CHECK(out[0].timestamp == 1000);
  CHECK(out[1].data == std::vector<std::uint8_t>{4, 5, 6, 7});
  CHECK(out[1].timestamp == 1000 + 1024);
}

TEST_CASE("AAC-hbr: a fragmented AU is reassembled up to the marker bit", "[rtsp][audio]") {
  AudioDepacketizer d(AudioCodec::aac, 97);
  // The whole AU's size (6 = 0x0030) in each fragment's header.
  CHECK(push(d, {.marker = false, .payload = {0x00, 0x10, 0x00, 0x30, 1, 2, 3, 4}}).empty());
  auto out = push(d, {.marker = true, .sequence = 2, .payload = {0x00, 0x10, 0x00, 0x30, 5, 6}});
  REQUIRE(out.size() == 1);
  CHECK(out[0].data == std::vector<std::uint8_t>{1, 2, 3, 4, 5, 6});
  CHECK(out[0].timestamp == 1000);

  SECTION("a fragment lost: the AU is dropped and the next frame says a packet went") {
    CHECK(push(d, {.marker = false, .sequence = 3, .timestamp = 2024, .payload = {0x00, 0x10, 0x00, 0x30, 1, 2, 3, 4}})
              .empty());
    // sequence 4, the AU's end, never comes.
    CHECK(push(d, {.sequence = 5, .timestamp = 3048, .payload = {0x00, 0x10, 0x00, 0x08, 9}}).size() == 1);
    CHECK(d.lost_packets() == 1);
  }
}

TEST_CASE("AAC-hbr: AU headers that claim more than the packet holds are malformed", "[rtsp][audio]") {
  AudioDepacketizer d(AudioCodec::aac, 97);
  // Two headers of 4 bytes each, 5 bytes of data: not a fragment (two AUs), too short.
  CHECK(push(d, {.payload = {0x00, 0x20, 0x00, 0x20, 0x00, 0x20, 1, 2, 3, 4, 5}}).empty());
  // AU-headers-length not a whole number of 16-bit headers.
  CHECK(push(d, {.sequence = 2, .payload = {0x00, 0x0f, 0x00, 0x20, 1}}).empty());
  CHECK(d.malformed_packets() == 2);
}

TEST_CASE("G.711: each packet is one frame of its samples; a gap is counted on the next frame", "[rtsp][audio]") {
  AudioDepacketizer d(AudioCodec::pcm_mulaw, 0);
  std::vector<std::uint8_t> samples(160);
  for (std::size_t i = 0; i < samples.size(); ++i) samples[i] = static_cast<std::uint8_t>(i);
  auto out = push(d, {.payload_type = 0, .sequence = 10, .timestamp = 8000, .payload = samples});
  REQUIRE(out.size() == 1);
  CHECK(out[0].data == samples);
  CHECK(out[0].duration == 160);
  // 11 and 12 lost.
  out = push(d, {.payload_type = 0, .sequence = 13, .timestamp = 8480, .payload = samples});
  REQUIRE(out.size() == 1);
  CHECK(out[0].timestamp == 8480);
  CHECK(out[0].frames_lost_before == 2);
  CHECK(d.lost_packets() == 2);
  // A duplicate and a late packet are ignored; another payload type is not ours.
  CHECK(push(d, {.payload_type = 0, .sequence = 13, .timestamp = 8480, .payload = samples}).empty());
  CHECK(push(d, {.payload_type = 0, .sequence = 12, .timestamp = 8320, .payload = samples}).empty());
  CHECK(push(d, {.payload_type = 8, .sequence = 14, .timestamp = 8640, .payload = samples}).empty());
  out = push(d, {.payload_type = 0, .sequence = 14, .timestamp = 8640, .payload = samples});
  REQUIRE(out.size() == 1);
  CHECK(out[0].frames_lost_before == 0);
}

TEST_CASE("G.711 A-law: stereo samples last half as long; padding is not audio", "[rtsp][audio]") {
  AudioDepacketizer d(AudioCodec::pcm_alaw, 8, 2);
  auto out = push(d, {.payload_type = 8, .payload = {1, 2, 3, 4, 5, 6, 7, 8}, .padding = 4});
  REQUIRE(out.size() == 1);
  CHECK(out[0].data == std::vector<std::uint8_t>{1, 2, 3, 4, 5, 6, 7, 8});
  CHECK(out[0].duration == 4);
}

TEST_CASE("RTP timestamps are unwrapped past 2^32", "[rtsp][audio]") {
  AudioDepacketizer d(AudioCodec::pcm_mulaw, 0);
  std::vector<std::uint8_t> samples(160, 0xff);
  auto out = push(d, {.payload_type = 0, .sequence = 65535, .timestamp = 0xffffff60u, .payload = samples});
  REQUIRE(out.size() == 1);
  const auto first = out[0].timestamp;
  out = push(d, {.payload_type = 0, .sequence = 0, .timestamp = 0, .payload = samples});
  REQUIRE(out.size() == 1);
  CHECK(out[0].timestamp == first + 160);
  CHECK(out[0].frames_lost_before == 0);
}

TEST_CASE("Opus: one packet per payload, its duration from the TOC byte", "[rtsp][audio]") {
  AudioDepacketizer d(AudioCodec::opus, 111);
  // TOC 0xf8: config 31 (CELT fullband, 20 ms = 960 samples at 48 kHz), code 0 (one frame).
  auto out = push(d, {.payload_type = 111, .timestamp = 48000, .payload = {0xf8, 0xff, 0xfe}});
  REQUIRE(out.size() == 1);
  CHECK(out[0].data == std::vector<std::uint8_t>{0xf8, 0xff, 0xfe});
  CHECK(out[0].timestamp == 48000);
  CHECK(out[0].duration == 960);
  // TOC 0x0b: config 1 (SILK 20 ms), code 3, then frame count 3: 60 ms.
  CHECK(opus_packet_samples(std::vector<std::uint8_t>{0x0b, 0x03, 0x00}) == 2880);
  // TOC 0x79: config 15 (hybrid 20 ms), code 1 (two frames): 40 ms.
  CHECK(opus_packet_samples(std::vector<std::uint8_t>{0x79, 0x00}) == 1920);
}

TEST_CASE("Packets whose RTP header cannot be read are counted and skipped", "[rtsp][audio]") {
  AudioDepacketizer d(AudioCodec::pcm_mulaw, 0);
  std::vector<AudioFrame> out;
  const std::vector<std::uint8_t> short_packet{0x80, 0x00, 0x00};
  d.push(short_packet, out);
  auto bad_version = Rtp{.payload_type = 0, .payload = {1}}.bytes();
  bad_version[0] = 0x40;
  d.push(bad_version, out);
  auto bad_padding = Rtp{.payload_type = 0, .payload = {1}}.bytes();
  bad_padding[0] |= 0x20;
  bad_padding.back() = 200;  // more padding than the packet
  d.push(bad_padding, out);
  CHECK(out.empty());
  CHECK(d.malformed_packets() == 3);
}

TEST_CASE("Frames never go back: a sender whose clock starts over goes on from the last frame's end", "[rtsp][audio]") {
  AudioDepacketizer d(AudioCodec::pcm_mulaw, 0);
  const std::vector<std::uint8_t> samples(160, 0x55);
  REQUIRE(push(d, {.payload_type = 0, .sequence = 1, .timestamp = 8000, .payload = samples}).size() == 1);
  // The next packet in sequence with an earlier timestamp: the encoder restarted.
  auto out = push(d, {.payload_type = 0, .sequence = 2, .timestamp = 100, .payload = samples});
  REQUIRE(out.size() == 1);
  CHECK(out[0].timestamp == 8160);
  out = push(d, {.payload_type = 0, .sequence = 3, .timestamp = 260, .payload = samples});
  REQUIRE(out.size() == 1);
  CHECK(out[0].timestamp == 8320);
  // Another SSRC, its own clock: the same.
  out = push(d, {.payload_type = 0, .sequence = 900, .timestamp = 1, .ssrc = 7, .payload = samples});
  REQUIRE(out.size() == 1);
  CHECK(out[0].timestamp == 8480);
  out = push(d, {.payload_type = 0, .sequence = 901, .timestamp = 161, .ssrc = 7, .payload = samples});
  REQUIRE(out.size() == 1);
  CHECK(out[0].timestamp == 8640);
  // Several AAC AUs whose 1024-sample steps the next packet's time does not reach: that packet's
  // frame would not go forward, and is dropped.
  AudioDepacketizer aac(AudioCodec::aac, 97);
  REQUIRE(push(aac, {.sequence = 1, .timestamp = 0, .payload = {0x00, 0x20, 0x00, 0x08, 0x00, 0x08, 1, 2}}).size() ==
          2);
  CHECK(push(aac, {.sequence = 2, .timestamp = 1024, .payload = {0x00, 0x10, 0x00, 0x08, 3}}).empty());
  CHECK(aac.malformed_packets() == 1);
}
