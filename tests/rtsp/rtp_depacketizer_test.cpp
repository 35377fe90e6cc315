// RTP back into access units (client/rtsp/rtp_depacketizer), from hand-made packets: every
// packetization of RFC 6184 and RFC 7798 we accept, where an access unit ends, timestamps
// across the 32-bit wrap, what a loss drops (up to the next keyframe), and packets that are
// malformed or cut short.
#include "client/rtsp/rtp_depacketizer.hpp"

#include <catch2/catch_test_macros.hpp>
#include <cstdint>
#include <random>
#include <vector>

using namespace vigil::client::rtsp;

namespace {

using Bytes = std::vector<std::uint8_t>;

struct Header {
  std::uint16_t sequence = 0;
  std::uint32_t timestamp = 0;
  bool marker = false;
  int payload_type = 96;
  std::uint32_t ssrc = 0x11223344;
};

Bytes rtp(const Header& h, const Bytes& payload) {
  Bytes p{0x80,
          static_cast<std::uint8_t>((h.marker ? 0x80 : 0) | h.payload_type),
          static_cast<std::uint8_t>(h.sequence >> 8),
          static_cast<std::uint8_t>(h.sequence),
          static_cast<std::uint8_t>(h.timestamp >> 24),
          static_cast<std::uint8_t>(h.timestamp >> 16),
          static_cast<std::uint8_t>(h.timestamp >> 8),
          static_cast<std::uint8_t>(h.timestamp),
          static_cast<std::uint8_t>(h.ssrc >> 24),
          static_cast<std::uint8_t>(h.ssrc >> 16),
          static_cast<std::uint8_t>(h.ssrc >> 8),
          static_cast<std::uint8_t>(h.ssrc)};
  p.insert(p.end(), payload.begin(), payload.end());
  return p;
}

Bytes cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

Bytes annexb(std::initializer_list<Bytes> nals) {
  Bytes out;
  for (const auto& n : nals) {
    out.insert(out.end(), {0, 0, 0, 1});
    out.insert(out.end(), n.begin(), n.end());
  }
  return out;
}

// A NAL unit: HEADER bytes, then BODY_BYTES bytes of a pattern.
Bytes nal(Bytes header, std::size_t body_bytes, std::uint8_t seed = 1) {
  for (std::size_t i = 0; i < body_bytes; ++i) header.push_back(static_cast<std::uint8_t>(seed + i * 7));
  return header;
}

Bytes be16(std::size_t n) { return {static_cast<std::uint8_t>(n >> 8), static_cast<std::uint8_t>(n)}; }

// H.264 NAL units: an IDR slice, a P slice, SPS, PPS.
const Bytes kIdr = nal({0x65}, 40);
const Bytes kP = nal({0x41}, 30, 9);
const Bytes kSps = nal({0x67}, 10, 3);
const Bytes kPps = nal({0x68}, 3, 5);

// Pushes each packet; returns what came out.
std::vector<AccessUnit> run(RtpDepacketizer& d, const std::vector<Bytes>& packets) {
  std::vector<AccessUnit> out;
  for (const auto& p : packets) d.push(p, out);
  return out;
}

// FU-A packets of NAL (H.264), PIECES of them.
std::vector<Bytes> fu_a(const Bytes& n, int pieces) {
  std::vector<Bytes> out;
  const std::size_t body = n.size() - 1;
  std::size_t at = 1;
  for (int i = 0; i < pieces; ++i) {
    const std::size_t len = i + 1 == pieces ? n.size() - at : body / pieces;
    std::uint8_t header = n[0] & 0x1f;
    if (i == 0) header |= 0x80;
    if (i + 1 == pieces) header |= 0x40;
    Bytes p{static_cast<std::uint8_t>((n[0] & 0xe0) | 28), header};
    p.insert(p.end(), n.begin() + static_cast<std::ptrdiff_t>(at), n.begin() + static_cast<std::ptrdiff_t>(at + len));
    out.push_back(p);
    at += len;
  }
  return out;
}

}  // namespace

TEST_CASE("rtp h264: a single NAL unit per packet; the marker bit ends the access unit", "[rtsp][rtp]") {
  RtpDepacketizer d(VideoCodec::h264, 96);
  const auto out = run(d, {rtp({.sequence = 7, .timestamp = 1000}, kSps), rtp({.sequence = 8, .timestamp = 1000}, kPps),
                           rtp({.sequence = 9, .timestamp = 1000, .marker = true}, kIdr),
                           rtp({.sequence = 10, .timestamp = 4600, .marker = true}, kP)});
  REQUIRE(out.size() == 2);
  CHECK(out[0].annexb == annexb({kSps, kPps, kIdr}));
  CHECK(out[0].timestamp == 1000);
  CHECK(out[0].keyframe);
  CHECK(out[1].annexb == annexb({kP}));
  CHECK(out[1].timestamp == 4600);
  CHECK_FALSE(out[1].keyframe);
  CHECK(d.malformed_packets() == 0);
  CHECK(d.lost_packets() == 0);
  CHECK(d.dropped_units() == 0);
}

TEST_CASE("rtp h264: STAP-A carries several NAL units", "[rtsp][rtp]") {
  RtpDepacketizer d(VideoCodec::h264, 96);
  const Bytes stap = cat({{0x78}, be16(kSps.size()), kSps, be16(kPps.size()), kPps, be16(kIdr.size()), kIdr});
  const auto out = run(d, {rtp({.sequence = 1, .timestamp = 5, .marker = true}, stap)});
  REQUIRE(out.size() == 1);
  CHECK(out[0].annexb == annexb({kSps, kPps, kIdr}));
  CHECK(out[0].keyframe);
}

TEST_CASE("rtp h264: FU-A across three packets rebuilds the NAL header", "[rtsp][rtp]") {
  RtpDepacketizer d(VideoCodec::h264, 96);
  const Bytes idr = nal({0x25}, 1000);  // NRI 1, IDR
  const auto fus = fu_a(idr, 3);
  REQUIRE(fus.size() == 3);
  std::vector<AccessUnit> out;
  d.push(rtp({.sequence = 100, .timestamp = 9}, fus[0]), out);
  d.push(rtp({.sequence = 101, .timestamp = 9}, fus[1]), out);
  CHECK(out.empty());
  d.push(rtp({.sequence = 102, .timestamp = 9, .marker = true}, fus[2]), out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].annexb == annexb({idr}));
  CHECK(out[0].keyframe);
}

TEST_CASE("rtp: a timestamp change ends the access unit when the marker bit is missing", "[rtsp][rtp]") {
  RtpDepacketizer d(VideoCodec::h264, 96);
  std::vector<AccessUnit> out;
  d.push(rtp({.sequence = 1, .timestamp = 3000}, kIdr), out);
  d.push(rtp({.sequence = 2, .timestamp = 3000}, kIdr), out);
  CHECK(out.empty());
  d.push(rtp({.sequence = 3, .timestamp = 6600}, kP), out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].annexb == annexb({kIdr, kIdr}));
  CHECK(out[0].timestamp == 3000);
  d.push(rtp({.sequence = 4, .timestamp = 10200}, kP), out);
  REQUIRE(out.size() == 2);
  CHECK(out[1].annexb == annexb({kP}));
  CHECK(out[1].timestamp == 6600);
}

TEST_CASE("rtp: parameter sets ended by the marker bit go with the next picture", "[rtsp][rtp]") {
  RtpDepacketizer d(VideoCodec::h264, 96);
  const Bytes stap = cat({{0x78}, be16(kSps.size()), kSps, be16(kPps.size()), kPps});
  const auto out = run(d, {rtp({.sequence = 1, .timestamp = 0, .marker = true}, stap),
                           rtp({.sequence = 2, .timestamp = 3600, .marker = true}, kIdr)});
  REQUIRE(out.size() == 1);
  CHECK(out[0].annexb == annexb({kSps, kPps, kIdr}));
  CHECK(out[0].timestamp == 3600);
  CHECK(out[0].keyframe);
  CHECK(d.dropped_units() == 0);
}

TEST_CASE("rtp: timestamps unwrap across 32 bits, both ways", "[rtsp][rtp]") {
  RtpDepacketizer d(VideoCodec::h264, 96);
  const auto out = run(d, {rtp({.sequence = 1, .timestamp = 0xffff'f000u, .marker = true}, kIdr),
                           rtp({.sequence = 2, .timestamp = 0x0000'0800u, .marker = true}, kP),
                           rtp({.sequence = 3, .timestamp = 0xffff'ff00u, .marker = true}, kP),  // back (B-frame)
                           rtp({.sequence = 4, .timestamp = 0x0000'4000u, .marker = true}, kP)});
  REQUIRE(out.size() == 4);
  CHECK(out[0].timestamp == 0xffff'f000);
  CHECK(out[1].timestamp == 0x1'0000'0800);
  CHECK(out[2].timestamp == 0xffff'ff00);
  CHECK(out[3].timestamp == 0x1'0000'4000);

  RtpDepacketizer back(VideoCodec::h264, 96);
  const auto below = run(back, {rtp({.sequence = 1, .timestamp = 0x100, .marker = true}, kIdr),
                                rtp({.sequence = 2, .timestamp = 0xffff'ff00u, .marker = true}, kP)});
  REQUIRE(below.size() == 2);
  CHECK(below[1].timestamp == -0x100);
}

TEST_CASE("rtp: a sequence gap drops the access units up to the next keyframe", "[rtsp][rtp]") {
  RtpDepacketizer d(VideoCodec::h264, 96);
  // 1: key, 2: P, 3: P (lost), 4: P, 5: P, 6: key, 7: P
  const auto out = run(d, {rtp({.sequence = 1, .timestamp = 0, .marker = true}, kIdr),
                           rtp({.sequence = 2, .timestamp = 3600, .marker = true}, kP),
                           rtp({.sequence = 4, .timestamp = 10800, .marker = true}, kP),
                           rtp({.sequence = 5, .timestamp = 14400, .marker = true}, kP),
                           rtp({.sequence = 6, .timestamp = 18000, .marker = true}, kIdr),
                           rtp({.sequence = 7, .timestamp = 21600, .marker = true}, kP)});
  REQUIRE(out.size() == 4);
  CHECK(out[0].timestamp == 0);
  CHECK(out[1].timestamp == 3600);
  CHECK(out[2].timestamp == 18000);
  CHECK(out[2].keyframe);
  CHECK(out[3].timestamp == 21600);
  CHECK(d.lost_packets() == 1);
  CHECK(d.dropped_units() == 2);
  CHECK(d.malformed_packets() == 0);
  // The keyframe after the hole says what was dropped before it (4 and 5; 3 was never seen), so
  // the recorder reports exactly that media as lost; the units around it say nothing.
  CHECK(out[0].units_lost_before == 0);
  CHECK(out[1].units_lost_before == 0);
  CHECK(out[2].units_lost_before == 2);
  CHECK(out[3].units_lost_before == 0);
}

TEST_CASE("rtp: a gap inside a keyframe's fragments drops it; the sequence wraps without a gap", "[rtsp][rtp]") {
  RtpDepacketizer d(VideoCodec::h264, 96);
  const auto fus = fu_a(kIdr, 3);
  const auto out =
      run(d, {rtp({.sequence = 65534, .timestamp = 0}, fus[0]), rtp({.sequence = 65535, .timestamp = 0}, fus[1]),
              rtp({.sequence = 0, .timestamp = 0, .marker = true}, fus[2]),  // wraps: no gap
              rtp({.sequence = 1, .timestamp = 3600}, fus[0]),
              // 2 lost
              rtp({.sequence = 3, .timestamp = 3600, .marker = true}, fus[2]),
              rtp({.sequence = 4, .timestamp = 7200, .marker = true}, kP),
              rtp({.sequence = 5, .timestamp = 10800, .marker = true}, kIdr)});
  REQUIRE(out.size() == 2);
  CHECK(out[0].annexb == annexb({kIdr}));
  CHECK(out[1].timestamp == 10800);
  CHECK(d.lost_packets() == 1);
  CHECK(d.dropped_units() == 2);  // the broken keyframe, then the P frame after it
  CHECK(out[1].units_lost_before == 2);
}

TEST_CASE("rtp: a loss at an access unit's end drops it when the next one starts", "[rtsp][rtp]") {
  RtpDepacketizer d(VideoCodec::h264, 96);
  const auto out =
      run(d, {rtp({.sequence = 1, .timestamp = 0, .marker = true}, kIdr), rtp({.sequence = 2, .timestamp = 3600}, kP),
              // 3 (the rest of 3600, with the marker bit) lost
              rtp({.sequence = 4, .timestamp = 7200, .marker = true}, kIdr),
              rtp({.sequence = 5, .timestamp = 10800, .marker = true}, kIdr)});
  // 7200 might have lost its first packets too: only 10800 is whole for sure.
  REQUIRE(out.size() == 2);
  CHECK(out[1].timestamp == 10800);
  CHECK(d.dropped_units() == 2);
}

TEST_CASE("rtp: duplicates and late packets are ignored; a far jump back or a new SSRC is a restart", "[rtsp][rtp]") {
  RtpDepacketizer d(VideoCodec::h264, 96);
  const auto p10 = rtp({.sequence = 10, .timestamp = 0, .marker = true}, kIdr);
  const auto out = run(d, {p10, p10, rtp({.sequence = 11, .timestamp = 3600, .marker = true}, kP),
                           rtp({.sequence = 9, .timestamp = 0, .marker = true}, kP),  // late
                           rtp({.sequence = 12, .timestamp = 7200, .marker = true}, kP)});
  REQUIRE(out.size() == 3);
  CHECK(d.lost_packets() == 0);
  CHECK(d.dropped_units() == 0);
  CHECK(d.malformed_packets() == 0);

  std::vector<AccessUnit> more;
  d.push(rtp({.sequence = 50000, .timestamp = 1, .marker = true}, kIdr), more);  // far back, alone: ignored
  d.push(rtp({.sequence = 13, .timestamp = 10800, .marker = true}, kP), more);
  REQUIRE(more.size() == 1);
  CHECK(more[0].timestamp == 10800);
  CHECK(d.dropped_units() == 0);
  d.push(rtp({.sequence = 60000, .timestamp = 90000, .marker = true}, kP), more);  // far back...
  d.push(rtp({.sequence = 60001, .timestamp = 93600, .marker = true}, kP), more);  // ...and followed: a restart
  d.push(rtp({.sequence = 60002, .timestamp = 97200, .marker = true}, kIdr), more);
  d.push(rtp({.sequence = 60003, .timestamp = 100800, .ssrc = 7}, kP), more);  // new SSRC
  d.push(rtp({.sequence = 60004, .timestamp = 104400, .marker = true, .ssrc = 7}, kIdr), more);
  REQUIRE(more.size() == 3);
  CHECK(more[1].timestamp == 97200);
  CHECK(more[2].timestamp == 104400);
  CHECK(d.lost_packets() == 0);
  CHECK(d.dropped_units() == 2);
}

TEST_CASE("rtp: other payload types are ignored", "[rtsp][rtp]") {
  RtpDepacketizer d(VideoCodec::h264, 96);
  const auto out = run(d, {rtp({.sequence = 1, .timestamp = 0, .marker = true}, kIdr),
                           rtp({.sequence = 900, .timestamp = 77, .marker = true, .payload_type = 97}, kP),
                           rtp({.sequence = 2, .timestamp = 3600, .marker = true}, kP)});
  REQUIRE(out.size() == 2);
  CHECK(d.malformed_packets() == 0);
  CHECK(d.lost_packets() == 0);
}

TEST_CASE("rtp: broken fragments: an end without a start, a start inside another", "[rtsp][rtp]") {
  RtpDepacketizer d(VideoCodec::h264, 96);
  const auto fus = fu_a(kIdr, 3);
  const auto out =
      run(d, {rtp({.sequence = 1, .timestamp = 0}, fus[1]),  // no start
              rtp({.sequence = 2, .timestamp = 0, .marker = true}, fus[2]),
              rtp({.sequence = 3, .timestamp = 3600}, fus[0]),
              rtp({.sequence = 4, .timestamp = 3600}, fus[0]),  // start while open
              rtp({.sequence = 5, .timestamp = 3600, .marker = true}, fus[2]),
              rtp({.sequence = 6, .timestamp = 7200}, fus[0]),
              rtp({.sequence = 7, .timestamp = 7200, .marker = true}, kP),  // fragment unfinished
              rtp({.sequence = 8, .timestamp = 10800}, fus[0]), rtp({.sequence = 9, .timestamp = 10800}, fus[1]),
              rtp({.sequence = 10, .timestamp = 10800, .marker = true}, fus[2])});
  REQUIRE(out.size() == 1);
  CHECK(out[0].timestamp == 10800);
  CHECK(out[0].annexb == annexb({kIdr}));
  CHECK(d.dropped_units() == 3);
  CHECK(d.lost_packets() == 0);
}

TEST_CASE("rtp: header fields: CSRCs, an extension and padding are skipped", "[rtsp][rtp]") {
  RtpDepacketizer d(VideoCodec::h264, 96);
  auto p = rtp({.sequence = 1, .timestamp = 0, .marker = true}, {});
  p[0] = 0x80 | 0x20 | 0x10 | 2;                                  // padding, extension, 2 CSRCs
  p.insert(p.end(), {1, 2, 3, 4, 5, 6, 7, 8});                    // CSRCs
  p.insert(p.end(), {0xbe, 0xde, 0, 2, 9, 9, 9, 9, 9, 9, 9, 9});  // extension: 2 words
  p.insert(p.end(), kIdr.begin(), kIdr.end());
  p.insert(p.end(), {0, 0, 3});  // 3 bytes of padding
  std::vector<AccessUnit> out;
  d.push(p, out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].annexb == annexb({kIdr}));
  CHECK(d.malformed_packets() == 0);
}

TEST_CASE("rtp: malformed packets are counted and skipped", "[rtsp][rtp]") {
  RtpDepacketizer d(VideoCodec::h264, 96);
  std::vector<AccessUnit> out;
  std::uint64_t expected = 0;
  auto bad = [&](Bytes p) {
    d.push(p, out);
    CHECK(d.malformed_packets() == ++expected);
  };
  bad(Bytes(11, 0x80));  // shorter than the header
  auto v1 = rtp({.sequence = 1, .timestamp = 0, .marker = true}, kIdr);
  v1[0] = 0x40;  // version 1
  bad(v1);
  auto csrc = rtp({.sequence = 1, .timestamp = 0, .marker = true}, {0x65});
  csrc[0] = 0x8f;  // 15 CSRCs in 1 byte
  bad(csrc);
  auto ext = rtp({.sequence = 1, .timestamp = 0, .marker = true}, {0xbe, 0xde, 0x00, 0x09, 1, 2, 3, 4});
  ext[0] = 0x90;  // 9 words of extension in 4 bytes
  bad(ext);
  auto pad = rtp({.sequence = 1, .timestamp = 0, .marker = true}, {0x65, 1, 2, 40});
  pad[0] = 0xa0;  // 40 bytes of padding in 4
  bad(pad);
  auto pad0 = rtp({.sequence = 1, .timestamp = 0, .marker = true}, {0x65, 1, 2, 0});
  pad0[0] = 0xa0;  // padding of 0 bytes
  bad(pad0);
  CHECK(out.empty());
  CHECK(d.lost_packets() == 0);

  // A readable header but a bad payload: counted, and its access unit is broken.
  d.push(rtp({.sequence = 1, .timestamp = 0, .marker = true}, kIdr), out);
  REQUIRE(out.size() == 1);
  bad(rtp({.sequence = 2, .timestamp = 3600, .marker = true}, {0x78, 0x00, 0x09, 0x65}));  // STAP-A length past the end
  bad(rtp({.sequence = 3, .timestamp = 7200, .marker = true}, {0x78, 0x00, 0x00}));  // STAP-A with an empty NAL unit
  bad(rtp({.sequence = 4, .timestamp = 10800, .marker = true}, {0x78}));             // STAP-A with nothing
  bad(rtp({.sequence = 5, .timestamp = 14400, .marker = true}, {0x79, 0, 0, 0, 1, 0x65}));  // STAP-B
  bad(rtp({.sequence = 6, .timestamp = 18000, .marker = true}, {0x7c}));                    // FU-A without its header
  bad(rtp({.sequence = 7, .timestamp = 21600, .marker = true}, {0x7d, 0x85, 0, 0, 1}));     // FU-B
  bad(rtp({.sequence = 8, .timestamp = 25200, .marker = true}, {}));                        // empty payload
  CHECK(out.size() == 1);
  CHECK(d.dropped_units() == 6);  // the empty payload held nothing: its unit ends empty
  d.push(rtp({.sequence = 9, .timestamp = 28800, .marker = true}, kIdr), out);
  CHECK(out.size() == 2);
}

TEST_CASE("rtp: every cut of a packet is read within its bounds", "[rtsp][rtp]") {
  // Under ASan (the asan preset), an out-of-bounds read here fails the test.
  for (const auto codec : {VideoCodec::h264, VideoCodec::h265}) {
    const Bytes stap = cat({{0x78}, be16(kSps.size()), kSps, be16(kIdr.size()), kIdr});
    const Bytes ap = cat({{0x60, 0x01}, be16(4), {0x40, 0x01, 7, 7}, be16(3), {0x26, 0x01, 5}});
    for (const Bytes& payload : {stap, ap, fu_a(kIdr, 2)[0], Bytes{0x62, 0x01, 0x93, 1, 2}}) {
      auto full = rtp({.sequence = 1, .timestamp = 0, .marker = true}, payload);
      full[0] = 0xb1;  // padding, extension, a CSRC: every length field in play
      for (std::size_t cut = 0; cut <= full.size(); ++cut) {
        RtpDepacketizer d(codec, 96);
        std::vector<AccessUnit> out;
        d.push(std::span(full.data(), cut), out);
        for (const auto& au : out) CHECK(au.annexb.size() >= 5);
      }
    }
  }
}

TEST_CASE("rtp: an access unit over the bound is dropped and counted", "[rtsp][rtp]") {
  RtpDepacketizer d(VideoCodec::h264, 96);
  std::vector<AccessUnit> out;
  const Bytes body(60000, 0x11);
  std::uint16_t seq = 1;
  auto fragment = [&](std::uint8_t fu_header) {
    Bytes p{0x7c, fu_header};
    p.insert(p.end(), body.begin(), body.end());
    return p;
  };
  d.push(rtp({.sequence = seq++, .timestamp = 0}, fragment(0x85)), out);
  const std::size_t pieces = kMaxAccessUnitBytes / body.size() + 1;
  for (std::size_t i = 0; i < pieces; ++i) d.push(rtp({.sequence = seq++, .timestamp = 0}, fragment(0x05)), out);
  d.push(rtp({.sequence = seq++, .timestamp = 0, .marker = true}, fragment(0x45)), out);
  CHECK(out.empty());
  CHECK(d.dropped_units() == 1);
  d.push(rtp({.sequence = seq++, .timestamp = 3600, .marker = true}, kP), out);  // not a keyframe: dropped
  d.push(rtp({.sequence = seq++, .timestamp = 7200, .marker = true}, kIdr), out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].timestamp == 7200);
  CHECK(d.dropped_units() == 2);
}

TEST_CASE("rtp h265: single NAL units, aggregation packets, fragmentation units", "[rtsp][rtp]") {
  RtpDepacketizer d(VideoCodec::h265, 96);
  const Bytes vps = nal({0x40, 0x01}, 20, 2);
  const Bytes sps = nal({0x42, 0x01}, 30, 3);
  const Bytes pps = nal({0x44, 0x01}, 6, 4);
  const Bytes idr = nal({0x26, 0x01}, 500, 5);   // IDR_W_RADL (19)
  const Bytes cra = nal({0x2b, 0x09}, 10, 6);    // CRA (21), layer id 1, temporal id 1
  const Bytes trail = nal({0x02, 0x01}, 50, 7);  // TRAIL_R (1)
  const Bytes ap = cat({{0x60, 0x01}, be16(vps.size()), vps, be16(sps.size()), sps, be16(pps.size()), pps});
  auto fu = [](const Bytes& n, std::size_t from, std::size_t to, bool start, bool end) {
    // The payload header: type 49, F, layer id and temporal id of the NAL unit.
    Bytes p{static_cast<std::uint8_t>((n[0] & 0x81) | (49 << 1)), n[1],
            static_cast<std::uint8_t>((start ? 0x80 : 0) | (end ? 0x40 : 0) | ((n[0] >> 1) & 0x3f))};
    p.insert(p.end(), n.begin() + static_cast<std::ptrdiff_t>(from), n.begin() + static_cast<std::ptrdiff_t>(to));
    return p;
  };
  const auto out =
      run(d,
          {rtp({.sequence = 1, .timestamp = 0}, ap), rtp({.sequence = 2, .timestamp = 0}, fu(idr, 2, 100, true, false)),
           rtp({.sequence = 3, .timestamp = 0}, fu(idr, 100, 300, false, false)),
           rtp({.sequence = 4, .timestamp = 0, .marker = true}, fu(idr, 300, idr.size(), false, true)),
           rtp({.sequence = 5, .timestamp = 3000, .marker = true}, trail),
           rtp({.sequence = 6, .timestamp = 6000}, fu(cra, 2, 5, true, false)),
           rtp({.sequence = 7, .timestamp = 6000, .marker = true}, fu(cra, 5, cra.size(), false, true))});
  REQUIRE(out.size() == 3);
  CHECK(out[0].annexb == annexb({vps, sps, pps, idr}));
  CHECK(out[0].keyframe);
  CHECK(out[1].annexb == annexb({trail}));
  CHECK_FALSE(out[1].keyframe);
  CHECK(out[2].annexb == annexb({cra}));  // the layer id bit survives the header's rebuild
  CHECK(out[2].keyframe);
  CHECK(d.malformed_packets() == 0);
}

TEST_CASE("rtp h265: PACI and bad aggregation lengths break the access unit", "[rtsp][rtp]") {
  RtpDepacketizer d(VideoCodec::h265, 96);
  const Bytes idr = nal({0x26, 0x01}, 20);
  const auto out =
      run(d, {rtp({.sequence = 1, .timestamp = 0, .marker = true}, idr),
              rtp({.sequence = 2, .timestamp = 3000, .marker = true}, {0x64, 0x01, 0x26, 0x01, 9}),  // PACI
              rtp({.sequence = 3, .timestamp = 6000, .marker = true}, {0x60, 0x01, 0x00, 0x01, 0x26}),
              rtp({.sequence = 4, .timestamp = 9000, .marker = true}, {0x62, 0x01}),  // FU, no header
              rtp({.sequence = 5, .timestamp = 12000, .marker = true}, {0x26}),       // 1 byte
              rtp({.sequence = 6, .timestamp = 15000, .marker = true}, idr)});
  REQUIRE(out.size() == 2);
  CHECK(out[1].timestamp == 15000);
  CHECK(d.malformed_packets() == 4);
  CHECK(d.dropped_units() == 4);
}

TEST_CASE("rtp: random access units through a packetizer come back whole", "[rtsp][rtp]") {
  // A small RFC 6184 packetizer (single NAL, STAP-A for small units, FU-A over the MTU) against
  // the depacketizer, over access units of random NAL units.
  std::mt19937 rng(12345);
  RtpDepacketizer d(VideoCodec::h264, 96);
  std::vector<AccessUnit> out;
  std::vector<Bytes> expected;
  std::uint16_t seq = 65000;  // wraps on the way
  std::uint32_t ts = 0xffff0000u;
  constexpr std::size_t kMtu = 1200;
  for (int unit = 0; unit < 300; ++unit, ts += 3000) {
    std::vector<Bytes> nals;
    const int count = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < count; ++i) {
      const std::uint8_t type = i + 1 == count ? (unit % 30 == 0 ? 5 : 1) : (rng() % 2 ? 6 : 7);
      const std::size_t len = rng() % 3 == 0 ? rng() % 5000 : rng() % 100;
      nals.push_back(nal({static_cast<std::uint8_t>(0x60 | type)}, len, static_cast<std::uint8_t>(rng())));
    }
    Bytes whole;
    for (const auto& n : nals) whole = cat({whole, annexb({n})});
    expected.push_back(whole);
    std::vector<Bytes> payloads;
    for (std::size_t i = 0; i < nals.size();) {
      if (nals[i].size() > kMtu) {
        for (auto& p : fu_a(nals[i], static_cast<int>(nals[i].size() / kMtu + 1))) payloads.push_back(p);
        ++i;
        continue;
      }
      Bytes stap{0x78};
      std::size_t j = i;
      while (j < nals.size() && nals[j].size() <= kMtu && stap.size() + 2 + nals[j].size() <= kMtu) {
        stap = cat({stap, be16(nals[j].size()), nals[j]});
        ++j;
      }
      if (j <= i + 1) {
        payloads.push_back(nals[i]);  // alone (or too big for a STAP-A header): a single NAL unit packet
        i = i + 1;
      } else {
        payloads.push_back(stap);
        i = j;
      }
    }
    for (std::size_t k = 0; k < payloads.size(); ++k) {
      d.push(rtp({.sequence = seq++, .timestamp = ts, .marker = k + 1 == payloads.size()}, payloads[k]), out);
    }
  }
  REQUIRE(out.size() == expected.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    CHECK(out[i].annexb == expected[i]);
    CHECK(out[i].timestamp == std::int64_t{0xffff0000} + static_cast<std::int64_t>(i) * 3000);
    CHECK(out[i].keyframe == (i % 30 == 0));
  }
  CHECK(d.malformed_packets() == 0);
  CHECK(d.dropped_units() == 0);
}
