// The stream description a segment header carries (docs/format.md, "Stream description"): round
// trips, and bytes that are not one (empty, truncated, garbage, damaged) decode to an error,
// never to something read outside the input (the asan preset runs this file).
#include <catch2/catch_test_macros.hpp>
#include <cstring>
#include <random>
#include <vector>

#include "storage/endian.hpp"
#include "storage/stream_description.hpp"
#include "storage/volume_layout.hpp"

using namespace vigil::storage;
using vigil::errc;

namespace {

StreamDescription sample() {
  StreamDescription d;
  d.camera = "front-door.1";
  d.role = "main";
  d.media_kind = "video";
  d.codec = "h264";
  for (int i = 0; i < 40; ++i) d.extradata.push_back(std::byte(0x60 + i));
  d.width = 1920;
  d.height = 1080;
  d.time_base_num = 1;
  d.time_base_den = 90'000;
  d.declared_rate_bps = 4'000'000;
  d.admitted_rate_bps = 4'500'000;
  d.started_at_us = 1'790'000'000'123'456;
  return d;
}

}  // namespace

TEST_CASE("a stream description round trips field for field") {
  const auto d = sample();
  const auto bytes = encode_stream_description(d);
  auto back = decode_stream_description(bytes);
  REQUIRE(back.has_value());
  CHECK(*back == d);
  CHECK(back->extradata.size() == 40);
}

TEST_CASE("an audio stream's sample rate and channels round trip; a video's description does not carry them") {
  auto audio = sample();
  audio.media_kind = "audio";
  audio.codec = "aac";
  audio.extradata = {std::byte{0x14}, std::byte{0x10}};  // AAC-LC, 16 kHz, stereo
  audio.width = audio.height = 0;
  audio.sample_rate_hz = 16'000;
  audio.channels = 2;
  auto back = decode_stream_description(encode_stream_description(audio));
  REQUIRE(back.has_value());
  CHECK(*back == audio);
  CHECK(back->sample_rate_hz == 16'000);
  CHECK(back->channels == 2);
  // A video stream (no rate, no channels) encodes as it did before these fields: 12 fields.
  const auto video = encode_stream_description(sample());
  CHECK(le::get<std::uint16_t>(std::span<const std::byte>(video), 6) == 12);
  CHECK(encode_stream_description(audio).size() == encode_stream_description([&] {
                                                     auto a = audio;
                                                     a.sample_rate_hz = a.channels = 0;
                                                     return a;
                                                   }())
                                                           .size() +
                                                       2 * (6 + 8));
}

TEST_CASE("an empty codec-parameters field (segments written before descriptions) is not a description") {
  auto r = decode_stream_description({});
  REQUIRE(r.has_error());
  CHECK(r.error() == errc::corruption);
}

TEST_CASE("every truncation of a description is refused") {
  const auto bytes = encode_stream_description(sample());
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    INFO("first " << n << " of " << bytes.size() << " bytes");
    CHECK(decode_stream_description(std::span<const std::byte>(bytes).first(n)).has_error());
  }
}

TEST_CASE("trailing bytes after the counted fields are refused") {
  auto bytes = encode_stream_description(sample());
  bytes.push_back(std::byte{0});
  CHECK(decode_stream_description(bytes).has_error());
}

TEST_CASE("damaged descriptions never decode out of bounds") {
  // Every single-byte change: either refused, or a description (a changed name byte is still a
  // name); the sanitizers see any read outside the buffer.
  const auto bytes = encode_stream_description(sample());
  std::size_t refused = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    for (int v : {0x00, 0xff, 0x7f}) {
      auto damaged = bytes;
      damaged[i] = std::byte(v);
      if (damaged == bytes) continue;
      if (decode_stream_description(damaged).has_error()) ++refused;
    }
  }
  CHECK(refused > 0);
  // A length that points past the end: refused.
  auto lying = bytes;
  le::put<std::uint32_t>(std::span<std::byte>(lying), 8 + 2, 0xfffffff0u);
  CHECK(decode_stream_description(lying).has_error());
}

TEST_CASE("random bytes are refused") {
  std::mt19937 rng(19);
  for (int i = 0; i < 2000; ++i) {
    std::vector<std::byte> junk(rng() % 300);
    for (auto& b : junk) b = std::byte(static_cast<unsigned char>(rng()));
    // Half of them with the right magic and version, so the field walk is exercised too.
    if (i % 2 == 0 && junk.size() >= 8) {
      std::memcpy(junk.data(), "VGSD", 4);
      le::put<std::uint16_t>(std::span<std::byte>(junk), 4, 1);
    }
    CHECK(decode_stream_description(junk).has_error());
  }
}

TEST_CASE("a newer version is unsupported; unknown fields of this version are skipped") {
  auto bytes = encode_stream_description(sample());
  auto newer = bytes;
  le::put<std::uint16_t>(std::span<std::byte>(newer), 4, kStreamDescriptionVersion + 1);
  auto r = decode_stream_description(newer);
  REQUIRE(r.has_error());
  CHECK(r.error() == errc::unsupported);

  // A field with tag 200 appended (a later minor addition), and the field count raised.
  auto extended = bytes;
  const std::byte extra[] = {std::byte{200}, std::byte{0}, std::byte{3}, std::byte{0}, std::byte{0},
                             std::byte{0},   std::byte{1}, std::byte{2}, std::byte{3}};
  extended.insert(extended.end(), std::begin(extra), std::end(extra));
  std::span<std::byte> s(extended);
  le::put<std::uint16_t>(s, 6, static_cast<std::uint16_t>(le::get<std::uint16_t>(s, 6) + 1));
  auto back = decode_stream_description(extended);
  REQUIRE(back.has_value());
  CHECK(*back == sample());
}

TEST_CASE("a repeated field or a missing camera or codec is refused") {
  auto d = sample();
  d.camera.clear();
  CHECK(decode_stream_description(encode_stream_description(d)).has_error());
  d = sample();
  d.codec.clear();
  CHECK(decode_stream_description(encode_stream_description(d)).has_error());

  // The camera field (first after the preamble) twice.
  auto bytes = encode_stream_description(sample());
  const std::size_t camera_field = 6 + sample().camera.size();
  std::vector<std::byte> twice(bytes.begin(), bytes.begin() + 8);
  twice.insert(twice.end(), bytes.begin() + 8, bytes.begin() + 8 + camera_field);
  twice.insert(twice.end(), bytes.begin() + 8, bytes.end());
  std::span<std::byte> s(twice);
  le::put<std::uint16_t>(s, 6, static_cast<std::uint16_t>(le::get<std::uint16_t>(s, 6) + 1));
  CHECK(decode_stream_description(twice).has_error());
}

TEST_CASE("extradata too large for a segment header is left out, the rest still describes the stream") {
  auto d = sample();
  d.extradata.assign(kMaxCodecParametersBytes, std::byte{7});
  const auto bytes = encode_stream_description(d);
  REQUIRE(bytes.size() <= kMaxCodecParametersBytes);
  auto back = decode_stream_description(bytes);
  REQUIRE(back.has_value());
  CHECK(back->extradata.empty());
  CHECK(back->camera == d.camera);
  CHECK(back->width == 1920);
}

TEST_CASE("a negative sample rate or channel count is refused: the encoder never writes one") {
  auto audio = sample();
  audio.media_kind = "audio";
  audio.codec = "aac";
  audio.sample_rate_hz = 16'000;
  audio.channels = 2;
  for (const std::uint16_t tag : {std::uint16_t{13}, std::uint16_t{14}}) {  // sample rate, channels
    auto bytes = encode_stream_description(audio);
    // Each field is tag (2 bytes), length (4), value: find the field and make its value negative.
    bool patched = false;
    for (std::size_t at = 8; at + 6 + 8 <= bytes.size(); ++at) {
      const std::span<const std::byte> view(bytes);
      if (le::get<std::uint16_t>(view, at) == tag && le::get<std::uint32_t>(view, at + 2) == 8) {
        const std::int64_t negative = -16'000;
        std::memcpy(bytes.data() + at + 6, &negative, sizeof negative);
        patched = true;
        break;
      }
    }
    REQUIRE(patched);
    CHECK(decode_stream_description(bytes).error() == vigil::errc::corruption);
  }
}
