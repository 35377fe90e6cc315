// The wire framing: every message survives a round trip, frames may arrive in any pieces,
// and hostile input (oversize, truncated, unknown type, garbage) is rejected with a clean
// error, never a crash (these tests also run under ASan+UBSan).
#include <google/protobuf/util/message_differencer.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <random>

#include "proto/frame_codec.hpp"

using namespace vigil;
using namespace vigil::proto;
using google::protobuf::util::MessageDifferencer;

namespace {

std::span<const std::byte> bytes_of(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

CodecParameters sample_codec() {
  CodecParameters c;
  c.set_codec_name("h264");
  c.set_codec_id(27);
  c.set_width(1280);
  c.set_height(720);
  c.set_time_base_num(1);
  c.set_time_base_den(90000);
  c.set_extradata(std::string("\x01\x64\x00\x1f\xff\xe1", 6));
  c.set_bit_rate(2'000'000);
  return c;
}

// One envelope of every message type, every field set.
std::vector<Envelope> every_message() {
  std::vector<Envelope> all;
  auto add = [&](auto fill) {
    Envelope e;
    fill(e);
    all.push_back(std::move(e));
  };
  add([](Envelope& e) {
    auto* m = e.mutable_hello();
    m->set_client_name("cam-client");
    m->set_client_version("0.1.0");
    m->set_protocol_version(kProtocolVersion);
    m->set_auth_token("secret");
  });
  add([](Envelope& e) {
    auto* m = e.mutable_hello_reply();
    m->set_server_version("0.1.0");
    m->set_protocol_version(1);
    m->set_max_frame_bytes(16 << 20);
    m->set_session_id(77);
  });
  add([](Envelope& e) {
    auto* m = e.mutable_open_record();
    m->set_stream_name("lobby");
    *m->mutable_codec() = sample_codec();
    m->set_declared_average_rate_bps(2'000'000);
    m->set_declared_peak_rate_bps(4'000'000);
  });
  add([](Envelope& e) {
    auto* m = e.mutable_admit();
    m->set_stream_id(5);
    m->set_admitted_rate_bps(4'000'000);
    m->set_cycle_us(1'000'000);
    m->set_buffer_bytes(500'000);
    m->set_chunk_bytes(262'144);
  });
  add([](Envelope& e) {
    auto* m = e.mutable_refuse();
    m->set_reason("disk 0 is full for this cycle");
    m->set_reason_code(REFUSE_REASON_DISK_FULL_LOAD);
    m->set_largest_rate_bps(1'500'000);
  });
  add([](Envelope& e) {
    auto* m = e.mutable_media_packet();
    m->set_stream_id(5);
    m->set_sequence(1234);
    m->set_pts(-90000);
    m->set_dts(-93600);
    m->set_has_pts(true);
    m->set_has_dts(true);
    m->set_duration(3600);
    m->set_keyframe(true);
  });
  add([](Envelope& e) {
    auto* m = e.mutable_durable_ack();
    m->set_stream_id(5);
    m->set_last_sequence(1234);
    m->set_durable_until_pts(180000);
  });
  add([](Envelope& e) {
    auto* m = e.mutable_open_playback();
    m->set_stream_name("lobby");
    m->set_start_us(1'700'000'000'000'000);
    m->set_end_us(1'700'000'060'000'000);
    m->set_live(true);
    m->set_rate(4.0);
    m->set_keyframes_only(true);
    m->set_direction(DIRECTION_REVERSE);
  });
  add([](Envelope& e) {
    auto* m = e.mutable_playback_started();
    m->set_stream_id(9);
    *m->mutable_codec() = sample_codec();
    m->set_admitted_rate_bps(8'000'000);
  });
  add([](Envelope& e) {
    auto* m = e.mutable_control();
    m->set_stream_id(9);
    m->set_op(CONTROL_OP_SEEK);
    m->set_seek_to_us(1'700'000'030'000'000);
    m->set_rate(0.5);
  });
  add([](Envelope& e) {
    auto* m = e.mutable_query_request();
    m->set_request_id(3);
    m->set_kind(QUERY_KIND_EVENTS);
    m->add_stream_names("lobby");
    m->add_stream_names("gate");
    m->set_from_us(1);
    m->set_to_us(2);
    m->set_event_type("line-crossing");
    m->set_object_class("vehicle");
    m->set_limit(100);
    m->mutable_zone()->set_x1(0.5);
    m->mutable_after()->set_start_us(5);
    m->set_min_confidence(0.25);
  });
  add([](Envelope& e) {
    auto* m = e.mutable_query_response();
    m->set_request_id(3);
    auto* t = m->add_timelines();
    t->set_stream_name("lobby");
    auto* r = t->add_runs();
    r->set_from_us(10);
    r->set_to_us(20);
    auto* g = t->add_gaps();
    g->set_from_us(20);
    g->set_to_us(30);
    g->set_reason("crash");
    auto* ev = m->add_events();
    ev->set_id(7);
    ev->set_confidence(0.5);
    ev->mutable_location()->set_x1(0.5);
    m->add_stream_names("lobby");
    m->set_truncated(true);
    m->mutable_next()->set_id(7);
  });
  add([](Envelope& e) {
    auto* m = e.mutable_error();
    m->set_code(ERROR_CODE_RATE_EXCEEDED);
    m->set_message("above admitted rate");
    m->set_related_sequence(99);
  });
  add([](Envelope& e) { e.mutable_ping()->set_nonce(42); });
  add([](Envelope& e) { e.mutable_pong()->set_nonce(42); });
  add([](Envelope& e) {
    auto* m = e.mutable_playback_end();
    m->set_stream_id(9);
    m->set_packets(250);
    m->set_reason("end of range");
    auto* g = m->add_gaps();
    g->set_from_us(1);
    g->set_to_us(2);
    g->set_reason("corruption");
  });
  add([](Envelope& e) { e.mutable_end_record()->set_stream_id(9); });
  add([](Envelope& e) {
    auto* m = e.mutable_media_loss();
    m->set_stream_id(9);
    m->set_reason(MEDIA_LOSS_REASON_RATE_EXCEEDED);
    m->set_payload_bytes(51'200);
    m->set_from_pts(90'000);
    m->set_to_pts(180'000);
    m->set_packets(25);
  });
  return all;
}

Frame expect_frame(FrameDecoder& d) {
  auto r = d.next();
  REQUIRE(r.has_value());
  REQUIRE(r->has_value());
  return std::move(**r);
}

errc expect_error(FrameDecoder& d) {
  auto r = d.next();
  REQUIRE(r.has_error());
  return static_cast<errc>(r.error().value());
}

}  // namespace

TEST_CASE("every message type survives a round trip", "[proto]") {
  auto all = every_message();
  REQUIRE(static_cast<int>(all.size()) == Envelope::GetDescriptor()->oneof_decl(0)->field_count());
  for (const auto& msg : all) {
    FrameDecoder d;
    d.feed(bytes_of(encode_frame(msg)));
    auto f = expect_frame(d);
    INFO(msg.ShortDebugString());
    CHECK(MessageDifferencer::Equals(f.msg, msg));
    CHECK(f.payload.empty());
    CHECK(d.buffered_bytes() == 0);
    CHECK(d.finish().has_value());
  }
}

TEST_CASE("a media packet's payload travels after the header, byte for byte", "[proto]") {
  std::vector<std::byte> payload(100'000);
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = std::byte(i * 7 + 3);
  Envelope msg;
  msg.mutable_media_packet()->set_sequence(1);
  msg.mutable_media_packet()->set_payload_bytes(static_cast<std::uint32_t>(payload.size()));
  auto wire = encode_frame(msg, payload);
  FrameDecoder d;
  d.feed(bytes_of(wire));
  auto f = expect_frame(d);
  CHECK(f.msg.media_packet().sequence() == 1);
  REQUIRE(f.payload.size() == payload.size());
  CHECK(std::equal(f.payload.begin(), f.payload.end(), payload.begin()));
}

TEST_CASE("a drained receive buffer costs no memory; one filling costs what arrived", "[proto]") {
  // A keyframe's burst (300 kB) grows the buffer; once it is consumed, its pages go back, and a
  // small frame after it brings back a page or two, not the burst's size.
  std::vector<std::byte> big(300'000, std::byte{9}), small(1'000, std::byte{5});
  Envelope msg;
  msg.mutable_media_packet()->set_sequence(1);
  msg.mutable_media_packet()->set_payload_bytes(static_cast<std::uint32_t>(big.size()));
  FrameDecoder d;
  d.feed(bytes_of(encode_frame(msg, big)));
  CHECK(d.resident_bytes() >= big.size());
  auto f = expect_frame(d);
  REQUIRE(f.payload.size() == big.size());
  CHECK(f.payload[123'456] == std::byte{9});
  CHECK_FALSE(d.next().value().has_value());  // consumed: nothing more
  msg.mutable_media_packet()->set_sequence(2);
  msg.mutable_media_packet()->set_payload_bytes(static_cast<std::uint32_t>(small.size()));
  d.feed(bytes_of(encode_frame(msg, small)));
  CHECK(d.resident_bytes() <= 64 * 1024 + 4096);  // the kept first 64 KiB at most, not the burst's
  auto g = expect_frame(d);
  CHECK(g.msg.media_packet().sequence() == 2);
  REQUIRE(g.payload.size() == small.size());
  CHECK(std::all_of(g.payload.begin(), g.payload.end(), [](std::byte b) { return b == std::byte{5}; }));
}

TEST_CASE("encoding refuses a payload that does not match payload_bytes", "[proto]") {
  std::vector<std::byte> payload(10);
  Envelope media;
  media.mutable_media_packet()->set_payload_bytes(9);
  CHECK_THROWS_AS(encode_frame(media, payload), std::invalid_argument);
  Envelope ping;
  ping.mutable_ping();
  CHECK_THROWS_AS(encode_frame(ping, payload), std::invalid_argument);
}

TEST_CASE("frames decode identically whatever pieces the bytes arrive in", "[proto]") {
  std::string wire;
  auto all = every_message();
  std::vector<std::byte> payload(3000, std::byte{0xAB});
  for (auto& msg : all) {
    if (msg.has_media_packet()) {
      msg.mutable_media_packet()->set_payload_bytes(static_cast<std::uint32_t>(payload.size()));
      append_frame(wire, msg, payload);
    } else {
      append_frame(wire, msg);
    }
  }
  const std::size_t piece = GENERATE(1, 2, 3, 7, 64, 1000, 1 << 20);
  FrameDecoder d;
  std::vector<Envelope> got;
  std::size_t payload_seen = 0;
  for (std::size_t off = 0; off < wire.size(); off += piece) {
    d.feed(bytes_of(wire.substr(off, piece)));
    for (;;) {
      auto r = d.next();
      REQUIRE(r.has_value());
      if (!*r) break;
      got.push_back((*r)->msg);
      payload_seen += (*r)->payload.size();
      for (auto b : (*r)->payload) REQUIRE(b == std::byte{0xAB});
    }
  }
  REQUIRE(got.size() == all.size());
  for (std::size_t i = 0; i < all.size(); ++i) CHECK(MessageDifferencer::Equals(got[i], all[i]));
  CHECK(payload_seen == payload.size());
  CHECK(d.finish().has_value());
}

TEST_CASE("a header length above the limit is refused before any allocation", "[proto]") {
  FrameDecoder d;
  SECTION("declared length just above 64 KiB") {
    std::string wire;
    wire.push_back(static_cast<char>(0x81));  // 65537 as varint: 0x81 0x80 0x04
    wire.push_back(static_cast<char>(0x80));
    wire.push_back(static_cast<char>(0x04));
    d.feed(bytes_of(wire));
  }
  SECTION("a varint that can only be huge, with nothing after it yet") {
    d.feed(bytes_of(std::string("\xff\xff\xff", 3)));
  }
  CHECK(expect_error(d) == errc::frame_too_large);
  CHECK(d.buffered_bytes() < 16);
  // The error sticks: the connection is to be closed.
  d.feed(bytes_of(encode_frame(every_message().front())));
  CHECK(expect_error(d) == errc::frame_too_large);
}

TEST_CASE("a media payload above the configured limit is refused", "[proto]") {
  FrameDecoder d(FrameLimits{.max_payload_bytes = 1024});
  Envelope msg;
  msg.mutable_media_packet()->set_payload_bytes(1025);
  std::vector<std::byte> payload(1025);
  d.feed(bytes_of(encode_frame(msg, payload).substr(0, 20)));  // the header alone decides
  CHECK(expect_error(d) == errc::frame_too_large);
}

TEST_CASE("new limits apply to the frames after them (the session's, once hello is answered)", "[proto]") {
  // Before hello: at most kMaxPreHelloPayloadBytes; the header alone decides, nothing is buffered.
  FrameDecoder before(FrameLimits{.max_payload_bytes = kMaxPreHelloPayloadBytes});
  Envelope big;
  big.mutable_media_packet()->set_payload_bytes(kMaxPreHelloPayloadBytes + 1);
  std::string head;
  append_frame_header(head, big);
  before.feed(bytes_of(head));
  CHECK(expect_error(before) == errc::frame_too_large);
  // After: the same frame is taken whole.
  FrameDecoder after(FrameLimits{.max_payload_bytes = kMaxPreHelloPayloadBytes});
  after.set_limits(FrameLimits{.max_payload_bytes = 16u << 20});
  std::vector<std::byte> payload(kMaxPreHelloPayloadBytes + 1, std::byte{7});
  after.feed(bytes_of(encode_frame(big, payload)));
  CHECK(expect_frame(after).payload.size() == kMaxPreHelloPayloadBytes + 1);
}

TEST_CASE("a frame cut short is reported as truncated at end of stream", "[proto]") {
  Envelope msg;
  msg.mutable_media_packet()->set_payload_bytes(500);
  std::vector<std::byte> payload(500);
  auto wire = encode_frame(msg, payload);
  const std::size_t cut = GENERATE(1, 2, 5, 400);
  FrameDecoder d;
  d.feed(bytes_of(wire.substr(0, cut)));
  auto r = d.next();
  REQUIRE(r.has_value());
  CHECK_FALSE(r->has_value());
  auto fin = d.finish();
  REQUIRE(fin.has_error());
  CHECK(fin.error() == errc::truncated_frame);
}

TEST_CASE("an envelope with no known message type is refused as unknown", "[proto]") {
  // Field 99 (a message from a newer client), length-delimited, 2 bytes: tag = 99<<3|2 = 794 = 0x9a 0x06.
  std::string header("\x9a\x06\x02\x08\x01", 5);
  std::string wire;
  wire.push_back(static_cast<char>(header.size()));
  wire += header;
  FrameDecoder d;
  d.feed(bytes_of(wire));
  CHECK(expect_error(d) == errc::unknown_message);
}

TEST_CASE("an empty envelope is refused as unknown", "[proto]") {
  FrameDecoder d;
  d.feed(bytes_of(std::string("\x00", 1)));
  CHECK(expect_error(d) == errc::unknown_message);
}

TEST_CASE("bytes that are not a protobuf are refused as malformed", "[proto]") {
  // A length of 4 followed by an invalid wire type (7) in the first tag.
  std::string wire("\x04\x0f\x00\x00\x00", 5);
  FrameDecoder d;
  d.feed(bytes_of(wire));
  CHECK(expect_error(d) == errc::malformed_frame);
}

TEST_CASE("random garbage never crashes the decoder", "[proto][fuzz]") {
  vigil::proto::route_protobuf_logs_to_debug();  // invalid UTF-8 complaints are expected here
  std::mt19937_64 rng(20261122);
  int frames = 0, errors = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string junk(rng() % 64, '\0');
    for (auto& c : junk) c = static_cast<char>(rng());
    // Half the time, start from a valid frame and flip some bytes: nearer misses.
    if (iter % 2) {
      junk = encode_frame(every_message()[rng() % every_message().size()]);
      for (int k = 0; k < 3; ++k) junk[rng() % junk.size()] = static_cast<char>(rng());
    }
    FrameDecoder d(FrameLimits{.max_payload_bytes = 4096});
    d.feed(bytes_of(junk));
    for (int guard = 0; guard < 100; ++guard) {
      auto r = d.next();
      if (r.has_error()) {
        auto code = static_cast<errc>(r.error().value());
        REQUIRE((code == errc::malformed_frame || code == errc::frame_too_large || code == errc::unknown_message));
        ++errors;
        break;
      }
      if (!*r) break;
      ++frames;
    }
  }
  // Both outcomes must occur, or the generator is not exercising the decoder.
  CHECK(frames > 0);
  CHECK(errors > 0);
}

TEST_CASE("vigil error codes map to wire error codes", "[proto]") {
  auto e = make_error(errc::frame_too_large, "too big");
  REQUIRE(e.has_error());
  CHECK(e.error().code() == ERROR_CODE_FRAME_TOO_LARGE);
  CHECK(e.error().message() == "too big");
  CHECK(to_wire(errc::unauthenticated) == ERROR_CODE_UNAUTHENTICATED);
  CHECK(to_wire(errc::truncated_frame) == ERROR_CODE_TRUNCATED_FRAME);
  CHECK(to_wire(errc::unknown_message) == ERROR_CODE_UNKNOWN_MESSAGE);
  CHECK(to_wire(errc::rate_exceeded) == ERROR_CODE_RATE_EXCEEDED);
  CHECK(to_wire(errc::malformed_frame) == ERROR_CODE_MALFORMED_FRAME);
  CHECK(to_wire(errc::corruption) == ERROR_CODE_INTERNAL);
}

TEST_CASE("a frame header followed by its payload decodes as one media frame", "[proto]") {
  Envelope e;
  auto* m = e.mutable_media_packet();
  m->set_stream_id(1);
  m->set_sequence(1);
  const std::string payload = "payload sent from the read buffer itself";
  m->set_payload_bytes(static_cast<std::uint32_t>(payload.size()));
  std::string wire;
  append_frame_header(wire, e);
  CHECK(wire + payload == encode_frame(e, bytes_of(payload)));
  FrameDecoder d;
  d.feed(bytes_of(wire + payload));
  auto f = expect_frame(d);
  CHECK(std::string(reinterpret_cast<const char*>(f.payload.data()), f.payload.size()) == payload);
}
